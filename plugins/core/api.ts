/**
 * The core plugin's operations, each declared once: input and answer schemas, error
 * statuses, and the function that runs it (operations.ts). Routes, tools and the OpenAPI
 * document all read these.
 */
import { isSvcError } from '../../kernel/errors.js';
import { writeActorOf } from '../../kernel/tenants.js';
import { Type } from '@sinclair/typebox';
import {
  answer,
  defineOperation,
  extend,
  invoke,
  NodeId,
  object,
  s,
  WriteResult,
  type OperationDef,
  type Static,
} from '../../kernel/operation.js';
import { RawResponse, StatusPayload, type OpContext } from '../../kernel/plugin.js';
import * as readCache from './node-read-cache.js';
import * as ops from './operations.js';
import * as orgChoices from './org-choices.js';
import * as patch from './patch.js';
import * as put from './put.js';

/** An edge as stored: type and target, plus flat string attributes (additionalProperties, which the builders do not cover). */
const Edge = s.raw<{ type: string; to: string; [attr: string]: string }>({
  type: 'object',
  properties: { type: { type: 'string' }, to: { type: 'string' } },
  required: ['type', 'to'],
  additionalProperties: { type: 'string' },
});

/** GET /v1/nodes/{id}: the raw markdown, the parsed frontmatter and the revision, plus schema-attached keys. */
export const NodeRead = answer(
  {
    id: s.string(),
    type: s.string(),
    markdown: s.string(),
    // TypeBox's Object: no `required` key where nothing is required (answer() writes `required: []`)
    frontmatter: Type.Object({ id: Type.Optional(s.string()), summary: Type.Optional(s.string()), edges: Type.Optional(s.array(Edge)) }),
    body: s.string(),
    revision: s.string(),
    resolution: s.object(),
    open_findings: s.raw<unknown[]>({ type: 'array' }),
    superseded_by: s.any(),
  },
  ['id', 'type', 'frontmatter', 'body', 'revision'],
);

/** Admins only: write to a work node someone else holds under `leases: strict` (the holder is told). */
const Force = s.boolean(
  "admins only: write although another person holds the node's lease (needed under the tenant setting leases: strict; the holder is told); 403 for non-admins",
);

/** Limits and formats every node-writing tool states (docs/spec.md "Limits"). */
const NODE_LIMITS =
  'Limits: summary at most 500 characters, body at most 8 KB, at most 40 edges and 40 commits per node, request at most 1 MB (413 too_large).';
const EDGES_FORMAT =
  'Edges in frontmatter: `edges:` is a list of {type, to} maps with optional flat [A-Za-z0-9_-] attributes, e.g. `edges: [{type: blocks, to: task-release, needed_by: 2026-01-31}]`; types are canonical or alias forms (GET /v1/schema).';
const LEASE_NOTE =
  'A write to a work node someone else holds (a live lease) warns naming the holder, who is told; under the tenant setting leases: strict it is 409 lease_held unless you hold the lease or are an admin passing force.';

const EdgeType = s.string('edge type: canonical, alias or inverse form (GET /v1/schema lists them)', { minLength: 1, maxLength: 100 });

export const GetStatusInput = object({ titles: s.boolean('also return the title index of every node') });
export const GetStatusOutput = answer(
  {
    node_count: s.integer(),
    projects: s.array(s.string()),
    head: s.stringOrNull(),
    uptime: s.integer(),
    metrics: s.object(),
    titles: s.array(answer({ id: s.string(), type: s.string(), project: s.any(), title: s.string() }, ['id', 'type', 'title'])),
  },
  ['node_count', 'projects', 'head', 'uptime', 'metrics'],
);

export const getStatus = defineOperation({
  name: 'get_status',
  summary: 'Graph status: node count, projects, head commit, uptime and metrics',
  input: GetStatusInput,
  output: GetStatusOutput,
  run: ops.getStatus,
});

export const me = defineOperation({
  name: 'me',
  summary: 'Identity echo: the person and tenant the token acts for',
  input: object({}),
  output: answer(
    {
      person: s.stringOrNull(),
      name: s.stringOrNull(),
      email: s.stringOrNull(),
      bound: s.boolean(),
      is_admin: s.boolean(),
      org: s.string(),
      agent: s.string(),
      session: s.stringOrNull(),
    },
    ['person', 'name', 'email', 'bound', 'is_admin', 'org'],
  ),
  run: ops.me,
});

export const getOrgChoices = defineOperation({
  name: 'get_org_choices',
  summary: 'The organizations (tenants) this identity may choose from',
  input: object({}),
  output: orgChoices.OrgChoices,
  errors: [502],
  run: orgChoices.getOrgChoices,
});

/** POST /v1/schema/dry-run: declared beside its run (plugins/core/dry-run.ts). */
export { dryRunSchema } from './dry-run.js';

export const SchemaInput = object({ code: s.boolean('embed hook sources') });

export const schema = defineOperation({
  name: 'schema',
  summary: 'The schema registry: node types, statuses, transitions and the edge vocabulary',
  description: 'The schema registry: node types, statuses, transitions, edge vocabulary with weights, inverse labels and aliases.',
  input: SchemaInput,
  output: answer({
    default_edge_weight: s.number(),
    node_types: s.array(s.object()),
    edge_types: s.array(s.object()),
    queue_policy: s.object(),
    policies: s.any(),
    registers: s.any(),
    stale_overrides: s.any(),
    alias_collisions: s.any(),
  }),
  run: ops.schema,
});

export const GetNodeInput = object(
  { id: NodeId, include_markdown: s.boolean('also return the raw markdown file (REST default true, tool default false)') },
  ['id'],
);

export const getNode = defineOperation({
  name: 'get_node',
  summary: 'Read one node',
  description:
    'Read one node: frontmatter (edges: a list of {type, to, ...attrs}), body, revision (echo it to update), and resolution/findings/supersession when they apply. include_markdown adds the raw file (default: yes over REST, no for the tool). 404 names the nearest ids.',
  input: GetNodeInput,
  output: NodeRead,
  example: { id: 'proj-root' },
  run: readCache.getNode,
});

const PutResult = answer(
  {
    index: s.integer(),
    status: s.enum(['created', 'updated', 'skipped', 'failed']),
    id: s.stringOrNull(),
    revision: s.stringOrNull(),
    warnings: s.array(s.string()),
    error: answer({ code: s.string(), message: s.string(), details: s.object() }),
    http_status: s.integer(),
  },
  ['index', 'status', 'id'],
);

export const PutNodeInput = object(
  {
    nodes: s.array(
      s.union([
        s.string('a markdown document: YAML frontmatter between --- lines, then the body'),
        s.object('{node, if_exists?, revision?}, or the frontmatter as an object with an optional `body`'),
      ]),
      'the entries, applied in order (each fully validated before the next)',
      { minItems: 1, maxItems: 500 },
    ),
    if_exists: s.enum(['skip', 'error', 'update'], 'what a collision with an existing node does (default error)'),
    force: Force,
  },
  ['nodes'],
);
export const PutNodeOutput = answer({ results: s.array(PutResult), count: s.integer(), failed: s.integer() });

export const putNode = defineOperation({
  name: 'put_node',
  summary: 'Create or update nodes (a batch of markdown documents)',
  description:
    'Create or update nodes. `nodes` holds markdown strings (YAML frontmatter + body) or {node, if_exists, revision}. Required frontmatter: id (with its type prefix, e.g. task-fix-login) and summary (standalone, at most 500 characters); type and status default from the id. if_exists: error (default), skip, update (needs the revision you read, else 409). priority, readiness and author are not set here (their own tools; author comes from your token): the answer warns about every field it ignored. Entries apply in order; read `failed`. An update is a full replace: every field, edge or body you do not repeat is removed, and each removal is listed in `warnings` (removed edge blocks -> task-x, removed field project (was web)); to change only some fields use patch_node. ' +
    `${EDGES_FORMAT} ${NODE_LIMITS} ${LEASE_NOTE} ` +
    'Per-entry errors (in results[].error, HTTP 207): 409 conflict (exists, or stale revision: carries current_revision), 409 transition_denied (status move refused by the schema), 409 lease_held, 403 forbidden (person nodes), 422 validation_failed.',
  input: PutNodeInput,
  output: PutNodeOutput,
  alsoSucceedsWith: [207],
  example: { nodes: ['---\nid: task-write-the-docs\nsummary: Write the getting-started guide\n---\nSteps a newcomer follows.\n'] },
  run: put.putNode,
});

const TargetId = { ...NodeId, description: 'target node id' };

export const AddEdgeInput = object(
  {
    id: NodeId,
    type: EdgeType,
    to: TargetId,
    // the description before additionalProperties, as this schema has always been written
    attrs: s.raw<Record<string, string | number | boolean>>({
      type: 'object',
      description: 'flat attributes: [A-Za-z0-9_-] tokens',
      additionalProperties: { type: ['string', 'number', 'boolean'] },
    }),
    force: Force,
  },
  ['id', 'type', 'to'],
);

export const RemoveEdgeInput = object({ id: NodeId, type: EdgeType, to: TargetId, force: Force }, ['id', 'type', 'to']);

/** A write that may move a status: the write answer plus what the status effects add (leases: a move to in-progress takes the lease). */
export const StatusWriteResult = extend(WriteResult, { lease: s.object('the lease taken by a move to in-progress'), edge: s.any() });

export const addEdge = defineOperation({
  name: 'add_edge',
  summary: 'Add a typed edge from a node',
  description:
    'Add a typed edge from a node (canonical, alias or inverse form; inverse forms are written on the target). attrs are flat tokens. At most 40 edges per node. ' +
    `${LEASE_NOTE} Errors: 404 unknown node or target, 409 lease_held, 422 unknown edge type, bad attribute or over 40 edges.`,
  input: AddEdgeInput,
  output: WriteResult,
  // 403: an identity edge (stewards to proj-root, owned-by) is written only by the identity operations
  errors: [403, 409],
  example: { type: 'blocks', to: 'task-release' },
  run: ops.addEdge,
});

export const removeEdge = defineOperation({
  name: 'remove_edge',
  summary: 'Remove a typed edge',
  description: `Remove a typed edge; a missing edge is skipped. ${LEASE_NOTE} Errors: 404 unknown node, 409 lease_held, 422 unknown edge type.`,
  input: RemoveEdgeInput,
  output: WriteResult,
  errors: [403, 409],
  run: ops.removeEdge,
});

export const SetStatusInput = object(
  {
    id: NodeId,
    status: s.string("target status (GET /v1/schema lists each type's statuses)", { minLength: 1, maxLength: 100 }),
    revision: s.string('optional: the revision you read; stale is 409 conflict', { minLength: 1, maxLength: 100 }),
    force: Force,
  },
  ['id', 'status'],
);

export const setStatus = defineOperation({
  name: 'set_status',
  summary: "Move a node to a status through the schema's transition gate",
  description:
    "Move a node to a status through the schema's transition gate. Moving a work node to in-progress also claims it (lease). Finish work with done (task) or resolved (issue). A terminal status (done, cancelled, resolved, ...) releases the node's lease and keeps the assigned edge as the record of who carried it. " +
    `${LEASE_NOTE} Errors: 409 transition_denied (the move is not allowed; the reason lists the allowed ones), 409 conflict (moving to in-progress while someone else holds it), 409 lease_held, 404 unknown node.`,
  input: SetStatusInput,
  output: StatusWriteResult,
  errors: [409],
  example: { status: 'done' },
  run: ops.setStatus,
});

export const SetPriorityInput = object(
  { id: NodeId, priority: s.stringOrNull('p1, p2, p3, or none/clear/""/p0/null to clear'), force: Force },
  ['id', 'priority'],
);

export const setPriority = defineOperation({
  name: 'set_priority',
  summary: 'Set or clear the priority of a node',
  description: `Set priority p1 (highest), p2 or p3; none/clear/""/p0 clears it. ${LEASE_NOTE} Errors: 404 unknown node, 409 lease_held, 422 invalid_node (unknown value; allowed values in details).`,
  input: SetPriorityInput,
  output: WriteResult,
  errors: [409],
  example: { priority: 'p1' },
  run: ops.setPriority,
});

export const SetReadinessInput = object(
  { id: NodeId, readiness: s.stringOrNull("'agent', or none/clear/\"\"/null to clear ('human' is only derived)"), force: Force },
  ['id', 'readiness'],
);

export const setReadiness = defineOperation({
  name: 'set_readiness',
  summary: 'Mark a node ready for an agent, or clear it',
  input: SetReadinessInput,
  output: WriteResult,
  errors: [409],
  example: { readiness: 'agent' },
  run: ops.setReadiness,
});

export const LinkCommitInput = object(
  {
    id: NodeId,
    repo: { ...NodeId, description: 'repository slug (kebab-case)' },
    sha: s.string('commit sha, 7-40 lowercase hex', { pattern: '^[0-9a-f]{7,40}$' }),
    force: Force,
  },
  ['id', 'repo', 'sha'],
);

export const linkCommit = defineOperation({
  name: 'link_commit',
  summary: 'Link a code commit (repo@sha) to a node',
  input: LinkCommitInput,
  output: WriteResult,
  errors: [409],
  example: { repo: 'web-app', sha: '3f2a9c1' },
  run: ops.linkCommit,
});

/** An edge to add: type and target plus flat attributes (additionalProperties, which the builders do not cover). */
const PatchEdge = s.raw<{ type: string; to: string; [attr: string]: string | number | boolean }>({
  type: 'object',
  properties: { type: EdgeType, to: { ...NodeId, description: 'target node id (must exist)' } },
  required: ['type', 'to'],
  additionalProperties: { type: ['string', 'number', 'boolean'], description: 'flat attribute: a [A-Za-z0-9_-] token' },
});

export const PatchNodeInput = object(
  {
    id: NodeId,
    revision: s.string('the revision you read (get_node), required', { minLength: 1, maxLength: 100 }),
    set: s.raw<Record<string, unknown>>({
      type: 'object',
      description: 'frontmatter fields to set; a null value removes the field',
      maxProperties: 100,
    }),
    unset: s.array(s.string(undefined, { minLength: 1, maxLength: 100 }), 'frontmatter fields to remove', { maxItems: 100 }),
    add_edges: s.array(PatchEdge, 'edges to add: {type, to, ...flat attributes}', { maxItems: 40 }),
    remove_edges: s.array(object({ type: EdgeType, to: TargetId }, ['type', 'to']), 'edges to remove: {type, to}', { maxItems: 40 }),
    body: s.string('the new markdown body (replaces it; at most 8 KB)'),
    append_body: s.string('markdown appended to the body (on a new line)'),
    force: Force,
  },
  ['id', 'revision'],
);

export const patchNode = defineOperation({
  name: 'patch_node',
  summary: 'Change named fields, edges or the body of a node (revision echo)',
  description:
    'Change only what you name; everything else stays as stored. Send the `revision` you read (get_node): a stale one is 409 conflict carrying current_revision (read again and retry). ' +
    '`set` {key: value} sets frontmatter fields (summary, title, status, project, any field); null removes an optional field, as does listing it in `unset`. ' +
    'add_edges [{type, to, ...attrs}] adds edges (an existing one is kept, different attributes replace its set); remove_edges [{type, to}] removes them. ' +
    '`body` replaces the markdown body, `append_body` appends to it. A status in `set` passes the transition gate and the lease rules like set_status (in-progress claims the node). ' +
    'id, type, author stamps, created/updated, priority and readiness cannot be patched (their own tools). ' +
    `${NODE_LIMITS} ${LEASE_NOTE} ` +
    'Errors: 404 unknown node or edge target, 409 conflict (stale revision), 409 transition_denied, 409 conflict (in-progress held by another), 409 lease_held, 403 forbidden (person nodes; force without admin), 422 validation_failed (bad field, limit exceeded, inverse edge form: use add_edge).',
  input: PatchNodeInput,
  output: StatusWriteResult,
  errors: [403, 409],
  example: {
    revision: '<revision from get_node>',
    set: { summary: 'Ship the card API behind a flag' },
    add_edges: [{ type: 'blocks', to: 'task-release' }],
  },
  run: patch.patchNode,
});

// ---------------------------------------------------------------- batch forms (tools: add_edges, remove_edges, set_priorities)

export const MAX_BATCH_ITEMS = 100;

const BatchFailure = answer({ index: s.integer(), id: s.stringOrNull(), code: s.string(), message: s.string(), details: s.object() });
const BatchAnswer = answer({
  ok: s.boolean('true when every item landed'),
  status: s.enum(['applied', 'partial', 'refused']),
  count: s.integer('items that landed (created, updated or skipped)'),
  results: s.array(extend(WriteResult, { index: s.integer() })),
  failed: s.array(BatchFailure),
});

/**
 * The batch form of a single-node write: each item runs through the singular operation (its
 * validation, rules and commit), in order, and never rolls back; a failing item lands in
 * `failed` with its error and the rest still land. 200 when all landed, 207 otherwise (the
 * tool result is an error only when none landed), like put_node.
 */
function batchOf(
  single: OperationDef<never, Static<typeof WriteResult>>,
  name: string,
  summary: string,
  itemShape: string,
  example: Record<string, unknown>,
) {
  return defineOperation({
    name,
    summary,
    description: `${summary}. items: 1-${MAX_BATCH_ITEMS} objects ${itemShape}, each applied in order as ${single.name} (own commit, never rolled back). Answer {ok, status: applied|partial|refused, results, failed: [{index, id, code, message}]}; a bad item lands in failed, the rest still land.`,
    // items are objects here and validated one by one by the singular operation, so a malformed item fails alone
    input: object({ items: s.array(s.object(), undefined, { minItems: 1, maxItems: MAX_BATCH_ITEMS }) }, ['items']),
    output: BatchAnswer,
    alsoSucceedsWith: [207],
    example: { items: [example] },
    run: async (ctx: OpContext, input) => {
      writeActorOf(ctx.actor); // a token without a person cannot write: 403 for the batch, not per item
      const results: Array<Static<typeof WriteResult> & { index: number }> = [];
      const failed: Array<Static<typeof BatchFailure>> = [];
      for (const [index, item] of input.items.entries()) {
        try {
          const r = await invoke(single, ctx, item);
          // the singular writes answer their write result as is (never 207 or a raw response)
          if (r instanceof StatusPayload || r instanceof RawResponse)
            throw new Error(`${single.name} answered a status or raw response inside ${name}`);
          results.push({ index, ...r });
        } catch (err) {
          if (!isSvcError(err)) throw err;
          failed.push({
            index,
            id: typeof item.id === 'string' ? item.id : null,
            code: err.code,
            message: err.message,
            details: err.details,
          });
        }
      }
      const status: Static<typeof BatchAnswer>['status'] = failed.length === 0 ? 'applied' : results.length === 0 ? 'refused' : 'partial';
      const payload = { ok: failed.length === 0, status, count: results.length, results, failed };
      return failed.length === 0 ? payload : new StatusPayload(207, payload, results.length === 0);
    },
  });
}

export const addEdges = batchOf(addEdge, 'add_edges', 'Add several typed edges', '{id, type, to, attrs?}', {
  id: 'task-fix-login',
  type: 'blocks',
  to: 'task-release',
});
export const removeEdges = batchOf(removeEdge, 'remove_edges', 'Remove several typed edges', '{id, type, to}', {
  id: 'task-fix-login',
  type: 'blocks',
  to: 'task-release',
});
export const setPriorities = batchOf(setPriority, 'set_priorities', 'Set or clear the priority of several nodes', '{id, priority}', {
  id: 'task-fix-login',
  priority: 'p1',
});

/** The tenant's plugins as an admin switches them (the operator console; tenant-plugins.ts). */
export { listTenantPlugins, setTenantPlugin } from './tenant-plugins.js';
