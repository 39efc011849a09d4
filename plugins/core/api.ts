/**
 * The core plugin's operations, each declared once: input and answer schemas, error
 * statuses, and the function that runs it (operations.ts). Routes, tools and the OpenAPI
 * document all read these.
 */
import { answer, defineOperation, NodeId, object, s, WriteResult, type JsonSchema } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
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
  required: ['id', 'type', 'markdown', 'frontmatter', 'body', 'revision'],
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
  description: 'Read one node: raw markdown, parsed frontmatter, body, revision, and resolution/findings/supersession when they apply.',
  input: object({ id: NodeId }, ['id']),
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
  // 403: an identity edge (stewards to proj-root, owned-by) is written only by the identity operations
  errors: [403],
  example: { type: 'blocks', to: 'task-release' },
  run: ops.addEdge,
});

export const removeEdge = defineOperation({
  name: 'remove_edge',
  summary: 'Remove a typed edge',
  description: 'Remove a typed edge; a missing edge is skipped.',
  input: object({ id: NodeId, type: EdgeType, to: { ...NodeId, description: 'target node id' } }, ['id', 'type', 'to']),
  output: WriteResult,
  errors: [403],
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
