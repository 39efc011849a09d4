/**
 * The core plugin's operations, each declared once: input and answer schemas, error
 * statuses, and the function that runs it (operations.ts). Routes, tools and the OpenAPI
 * document all read these.
 */
import { isSvcError } from '../../kernel/errors.js';
import { answer, defineOperation, invoke, NodeId, object, s, WriteResult, type JsonSchema, type OperationDef } from '../../kernel/operation.js';
import { StatusPayload, type OpContext } from '../../kernel/plugin.js';
import { getNodeCached } from './node-read-cache.js';
import * as ops from './operations.js';
import { orgChoices as orgChoicesRun } from './org-choices.js';

const Edge: JsonSchema = {
  type: 'object',
  properties: { type: { type: 'string' }, to: { type: 'string' } },
  required: ['type', 'to'],
  additionalProperties: { type: 'string' },
};

/** GET /v1/nodes/{id}: the raw markdown, the parsed frontmatter and the revision, plus schema-attached keys. */
export const NodeRead: JsonSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    type: { type: 'string' },
    markdown: { type: 'string' },
    frontmatter: { type: 'object', properties: { id: { type: 'string' }, summary: { type: 'string' }, edges: { type: 'array', items: Edge } } },
    body: { type: 'string' },
    revision: { type: 'string' },
    resolution: { type: 'object' },
    open_findings: { type: 'array' },
    superseded_by: {},
  },
  required: ['id', 'type', 'frontmatter', 'body', 'revision'],
};

const EdgeType = s.string('edge type: canonical, alias or inverse form (GET /v1/schema lists them)', { minLength: 1, maxLength: 100 });

export const getStatus = defineOperation({
  name: 'get_status',
  summary: 'Graph status: node count, projects, head commit, uptime and metrics',
  input: object({ titles: s.boolean('also return the title index of every node') }),
  output: answer(
    {
      node_count: s.integer(),
      projects: s.array(s.string()),
      head: s.stringOrNull(),
      uptime: s.integer(),
      metrics: s.object(),
      titles: s.array(answer({ id: s.string(), type: s.string(), project: {}, title: s.string() }, ['id', 'type', 'title'])),
    },
    ['node_count', 'projects', 'head', 'uptime', 'metrics'],
  ),
  run: ops.getStatus,
});

export const getMe = defineOperation({
  name: 'get_me',
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
  run: ops.getMe,
});

export const orgChoices = defineOperation({
  name: 'get_org_choices',
  summary: 'The organizations (tenants) this identity may choose from',
  input: object({}),
  output: answer({
    org_choices: s.array(answer({ slug: s.string(), label: s.string(), default: s.boolean() }, ['slug', 'label'])),
    source: s.enum(['idp', 'bound']),
  }),
  errors: [502],
  run: (ctx: OpContext) => orgChoicesRun(ctx),
});

export const getSchema = defineOperation({
  name: 'schema',
  summary: 'The schema registry: node types, statuses, transitions and the edge vocabulary',
  description: 'The schema registry: node types, statuses, transitions, edge vocabulary with weights, inverse labels and aliases.',
  input: object({ code: s.boolean('embed hook sources') }),
  output: answer({
    default_edge_weight: s.number(),
    node_types: s.array(s.object()),
    edge_types: s.array(s.object()),
    queue_policy: s.object(),
    policies: {},
    registers: {},
    stale_overrides: {},
    alias_collisions: {},
  }),
  run: ops.getSchema,
});

export const getNode = defineOperation({
  name: 'get_node',
  summary: 'Read one node',
  description:
    'Read one node: frontmatter (edges: a list of {type, to, ...attrs}), body, revision (echo it to update), and resolution/findings/supersession when they apply. include_markdown adds the raw file (default: yes over REST, no for the tool). 404 names the nearest ids.',
  input: object({ id: NodeId, include_markdown: s.boolean('also return the raw markdown file (REST default true, tool default false)') }, ['id']),
  output: NodeRead,
  example: { id: 'proj-root' },
  run: getNodeCached,
});

const PutResult: JsonSchema = {
  type: 'object',
  properties: {
    index: s.integer(),
    status: s.enum(['created', 'updated', 'skipped', 'failed']),
    id: s.stringOrNull(),
    revision: s.stringOrNull(),
    warnings: s.array(s.string()),
    error: answer({ code: s.string(), message: s.string(), details: s.object() }),
    http_status: s.integer(),
  },
  required: ['index', 'status', 'id'],
};

export const putNodes = defineOperation({
  name: 'put_node',
  summary: 'Create or update nodes (a batch of markdown documents)',
  description:
    'Create or update nodes. `nodes` holds markdown strings (YAML frontmatter + body) or {node, if_exists, revision}. Required frontmatter: id (with its type prefix, e.g. task-fix-login) and summary (standalone, at most 500 characters); type and status default from the id. if_exists: error (default), skip, update (needs the revision you read, else 409). priority, readiness and author are not set here (their own tools; author comes from your token): the answer warns about every field it ignored. Entries apply in order; read `failed`.',
  input: object(
    {
      nodes: s.array(
        {
          anyOf: [
            s.string('a markdown document: YAML frontmatter between --- lines, then the body'),
            {
              type: 'object',
              description: '{node, if_exists?, revision?}, or the frontmatter as an object with an optional `body`',
            },
          ],
        },
        'the entries, applied in order (each fully validated before the next)',
        { minItems: 1, maxItems: 500 },
      ),
      if_exists: s.enum(['skip', 'error', 'update'], 'what a collision with an existing node does (default error)'),
    },
    ['nodes'],
  ),
  output: answer({ results: s.array(PutResult), count: s.integer(), failed: s.integer() }),
  alsoSucceedsWith: [207],
  example: { nodes: ['---\nid: task-write-the-docs\nsummary: Write the getting-started guide\n---\nSteps a newcomer follows.\n'] },
  run: ops.putNodes,
});

const edgeInput = object(
  {
    id: NodeId,
    type: EdgeType,
    to: { ...NodeId, description: 'target node id' },
    attrs: { type: 'object', description: 'flat attributes: [A-Za-z0-9_-] tokens', additionalProperties: { type: ['string', 'number', 'boolean'] } },
  },
  ['id', 'type', 'to'],
);

export const addEdge = defineOperation({
  name: 'add_edge',
  summary: 'Add a typed edge from a node',
  description: 'Add a typed edge from a node (canonical, alias or inverse form; inverse forms are written on the target). attrs are flat tokens.',
  input: edgeInput,
  output: WriteResult,
  example: { type: 'blocks', to: 'task-release' },
  run: ops.addEdge,
});

export const removeEdge = defineOperation({
  name: 'remove_edge',
  summary: 'Remove a typed edge',
  description: 'Remove a typed edge; a missing edge is skipped.',
  input: object({ id: NodeId, type: EdgeType, to: { ...NodeId, description: 'target node id' } }, ['id', 'type', 'to']),
  output: WriteResult,
  run: ops.removeEdge,
});

export const setStatus = defineOperation({
  name: 'set_status',
  summary: "Move a node to a status through the schema's transition gate",
  description: "Move a node to a status through the schema's transition gate. Moving a work node to in-progress also claims it (lease). Finish work with done (task) or resolved (issue).",
  input: object({ id: NodeId, status: s.string('target status (GET /v1/schema lists each type\'s statuses)', { minLength: 1, maxLength: 100 }) }, ['id', 'status']),
  output: { ...WriteResult, properties: { ...(WriteResult.properties as object), lease: s.object('the lease taken by a move to in-progress'), edge: {} } },
  errors: [409],
  example: { status: 'done' },
  run: ops.setStatus,
});

export const setPriority = defineOperation({
  name: 'set_priority',
  summary: 'Set or clear the priority of a node',
  description: 'Set priority p1 (highest), p2 or p3; none/clear/""/p0 clears it.',
  input: object({ id: NodeId, priority: { type: ['string', 'null'], description: 'p1, p2, p3, or none/clear/""/p0/null to clear' } }, ['id', 'priority']),
  output: WriteResult,
  example: { priority: 'p1' },
  run: ops.setPriority,
});

export const setReadiness = defineOperation({
  name: 'set_readiness',
  summary: 'Mark a node ready for an agent, or clear it',
  input: object({ id: NodeId, readiness: { type: ['string', 'null'], description: "'agent', or none/clear/\"\"/null to clear ('human' is only derived)" } }, ['id', 'readiness']),
  output: WriteResult,
  example: { readiness: 'agent' },
  run: ops.setReadiness,
});

export const addCommit = defineOperation({
  name: 'link_commit',
  summary: 'Link a code commit (repo@sha) to a node',
  input: object(
    {
      id: NodeId,
      repo: { ...NodeId, description: 'repository slug (kebab-case)' },
      sha: s.string('commit sha, 7-40 lowercase hex', { pattern: '^[0-9a-f]{7,40}$' }),
    },
    ['id', 'repo', 'sha'],
  ),
  output: WriteResult,
  example: { repo: 'web-app', sha: '3f2a9c1' },
  run: ops.addCommit,
});

// ---------------------------------------------------------------- batch forms (tools: add_edges, remove_edges, set_priorities)

export const MAX_BATCH_ITEMS = 100;

const BatchFailure: JsonSchema = answer({ index: s.integer(), id: s.stringOrNull(), code: s.string(), message: s.string(), details: s.object() });
const BatchAnswer: JsonSchema = answer({
  ok: s.boolean('true when every item landed'),
  status: s.enum(['applied', 'partial', 'refused']),
  count: s.integer('items that landed (created, updated or skipped)'),
  results: s.array({ ...WriteResult, properties: { ...(WriteResult.properties as object), index: s.integer() } }),
  failed: s.array(BatchFailure),
});

/**
 * The batch form of a single-node write: each item runs through the singular operation (its
 * validation, rules and commit), in order, and never rolls back; a failing item lands in
 * `failed` with its error and the rest still land. 200 when all landed, 207 otherwise (the
 * tool result is an error only when none landed), like put_node.
 */
function batchOf(single: OperationDef, name: string, summary: string, itemShape: string, example: Record<string, unknown>) {
  return defineOperation({
    name,
    summary,
    description: `${summary}. items: 1-${MAX_BATCH_ITEMS} objects ${itemShape}, each applied in order as ${single.name} (own commit, never rolled back). Answer {ok, status: applied|partial|refused, results, failed: [{index, id, code, message}]}; a bad item lands in failed, the rest still land.`,
    // items are objects here and validated one by one by the singular operation, so a malformed item fails alone
    input: object({ items: s.array({ type: 'object' }, undefined, { minItems: 1, maxItems: MAX_BATCH_ITEMS }) }, ['items']),
    output: BatchAnswer,
    alsoSucceedsWith: [207],
    example: { items: [example] },
    run: async (ctx: OpContext, input: { items: Array<Record<string, unknown>> }) => {
      const results: Array<Record<string, unknown>> = [];
      const failed: Array<Record<string, unknown>> = [];
      for (const [index, item] of input.items.entries()) {
        try {
          const r = (await invoke(single, ctx, item)) as Record<string, unknown>;
          results.push({ index, ...r });
        } catch (err) {
          if (!isSvcError(err)) throw err;
          failed.push({ index, id: typeof item.id === 'string' ? item.id : null, code: err.code, message: err.message, details: err.details });
        }
      }
      const status = failed.length === 0 ? 'applied' : results.length === 0 ? 'refused' : 'partial';
      const payload = { ok: failed.length === 0, status, count: results.length, results, failed };
      return failed.length === 0 ? payload : new StatusPayload(207, payload, results.length === 0);
    },
  });
}

export const addEdges = batchOf(addEdge, 'add_edges', 'Add several typed edges', '{id, type, to, attrs?}', { id: 'task-fix-login', type: 'blocks', to: 'task-release' });
export const removeEdges = batchOf(removeEdge, 'remove_edges', 'Remove several typed edges', '{id, type, to}', { id: 'task-fix-login', type: 'blocks', to: 'task-release' });
export const setPriorities = batchOf(setPriority, 'set_priorities', 'Set or clear the priority of several nodes', '{id, priority}', { id: 'task-fix-login', priority: 'p1' });
