/**
 * The `core` plugin (always on): status, identity echo, schema, node reads and the node
 * write endpoints, with their MCP tool twins.
 */
import type { RESOURCE_MIME_TYPE as EXT_APPS_MIME_TYPE, RESOURCE_URI_META_KEY as EXT_APPS_URI_META_KEY } from '@modelcontextprotocol/ext-apps/server';
import { definePlugin, type OpContext, type RouteRequest } from '../../kernel/plugin.js';
import { objectSchema as obj, stringArg as str } from '../../kernel/tool-schema.js';
import { queryString } from '../../kernel/validate.js';
import { getNodeCached } from './node-read-cache.js';
import * as ops from './operations.js';
import { orgChoices } from './org-choices.js';

const idArg = str('node id, e.g. task-fix-login');

const bodyWithId = (req: RouteRequest) => ({ ...((req.body as Record<string, unknown> | undefined) ?? {}), id: req.params.id });
const flag = (v: string | string[] | undefined) => queryString(v) === '1' || queryString(v) === 'true';

const HELLO_URI = 'ui://workgraph/hello.html';
// The ext-apps constants as literals, type-checked against the package's declarations: importing
// the package at run time loads ext-apps and the SDK's McpServer at every start (~0.4 s alone,
// ~30 ms on top of the SDK modules kernel/mcp.ts loads; docs/performance.md).
const RESOURCE_MIME_TYPE: typeof EXT_APPS_MIME_TYPE = 'text/html;profile=mcp-app';
const RESOURCE_URI_META_KEY: typeof EXT_APPS_URI_META_KEY = 'ui/resourceUri';

async function hello(ctx: OpContext) {
  return {
    ok: true,
    message: `connected to the ${ctx.tenant.org} work graph`,
    org: ctx.tenant.org,
    person: ctx.actor.bound ? ctx.actor.personId : null,
    node_count: ctx.tenant.index.size,
    head: ctx.tenant.head,
  };
}

const helloHtml = `<!doctype html>
<html><head><meta charset="utf-8"><title>Work graph</title>
<style>body{font:14px system-ui,sans-serif;margin:1rem;color:#222}code{background:#f3f3f3;padding:0 .2rem}</style></head>
<body><h1>Work graph connected</h1><p id="status">Waiting for the tool result…</p>
<script type="module">
  // MCP App: the host sends the tool result as a ui/notifications/tool-result message.
  window.addEventListener('message', (event) => {
    const msg = event.data;
    if (!msg || msg.method !== 'ui/notifications/tool-result') return;
    const text = msg.params?.content?.find((c) => c.type === 'text')?.text;
    try {
      const data = JSON.parse(text);
      document.getElementById('status').textContent = data.message + ' (' + data.node_count + ' nodes)';
    } catch { document.getElementById('status').textContent = text || 'connected'; }
  });
</script></body></html>
`;

export const corePlugin = definePlugin({
  name: 'core',
  version: '1.0.0',
  dependsOn: [],
  routes: [
    { method: 'GET', path: '/v1/status', operation: ops.getStatus, input: (r) => ({ titles: flag(r.query.titles) }) },
    { method: 'GET', path: '/v1/me', operation: ops.getMe },
    { method: 'GET', path: '/v1/me/org-choices', operation: orgChoices },
    { method: 'GET', path: '/v1/schema', operation: ops.getSchema, input: (r) => ({ code: flag(r.query.code) }) },
    { method: 'GET', path: '/v1/nodes/:id', operation: getNodeCached, input: (r) => ({ id: r.params.id }) },
    { method: 'POST', path: '/v1/nodes', operation: ops.putNodes },
    { method: 'POST', path: '/v1/nodes/:id/edges', operation: ops.addEdge, input: bodyWithId },
    { method: 'DELETE', path: '/v1/nodes/:id/edges', operation: ops.removeEdge, input: bodyWithId },
    { method: 'POST', path: '/v1/nodes/:id/status', operation: ops.setStatus, input: bodyWithId },
    { method: 'POST', path: '/v1/nodes/:id/priority', operation: ops.setPriority, input: bodyWithId },
    { method: 'POST', path: '/v1/nodes/:id/readiness', operation: ops.setReadiness, input: bodyWithId },
    { method: 'POST', path: '/v1/nodes/:id/commits', operation: ops.addCommit, input: bodyWithId },
  ],
  instructions: [
    'Every node needs a standalone `summary` (at most 500 characters); ids carry their type prefix (task-, issue-, dec-, spec-, ...). The `schema` tool lists the types, their statuses and the edge vocabulary.',
    'get_node returns the node with its `revision`. To change a node, echo that revision: put_node {nodes: [{node, if_exists: "update", revision}]}. A stale revision is a 409 conflict carrying the current one, never a silent overwrite; read again and retry.',
    'Finish work with set_status (task: done; issue: resolved), or write the node that resolves it with a `resolves` edge. add_edge links nodes (blocks, part-of, relates-to, ...).',
  ],
  tools: [
    {
      name: 'get_node',
      description: 'Read one node: raw markdown, parsed frontmatter, body, revision, and resolution/findings/supersession when they apply.',
      inputSchema: obj({ id: idArg }, ['id']),
      operation: getNodeCached,
      annotations: { readOnlyHint: true },
    },
    {
      name: 'put_node',
      description:
        'Create or update nodes. `nodes` holds markdown strings (YAML frontmatter + body) or {node, if_exists, revision}. Required frontmatter: id (with its type prefix, e.g. task-fix-login) and summary (standalone, at most 500 characters); type and status default from the id. if_exists: error (default), skip, update (needs the revision you read, else 409). priority, readiness and author are not set here (their own tools; author comes from your token): the answer warns about every field it ignored. Entries apply in order; read `failed`.',
      inputSchema: obj(
        {
          nodes: { type: 'array', minItems: 1, items: { anyOf: [{ type: 'string' }, { type: 'object' }] } },
          if_exists: { enum: ['skip', 'error', 'update'] },
        },
        ['nodes'],
      ),
      operation: ops.putNodes,
    },
    {
      name: 'add_edge',
      description: 'Add a typed edge from a node (canonical, alias or inverse form; inverse forms are written on the target). attrs are flat tokens.',
      inputSchema: obj({ id: idArg, type: str('edge type'), to: str('target node id'), attrs: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } } }, ['id', 'type', 'to']),
      operation: ops.addEdge,
    },
    {
      name: 'remove_edge',
      description: 'Remove a typed edge; a missing edge is skipped.',
      inputSchema: obj({ id: idArg, type: str('edge type'), to: str('target node id') }, ['id', 'type', 'to']),
      operation: ops.removeEdge,
      annotations: { idempotentHint: true },
    },
    {
      name: 'set_status',
      description: "Move a node to a status through the schema's transition gate. Moving a work node to in-progress also claims it (lease).",
      inputSchema: obj({ id: idArg, status: str('target status') }, ['id', 'status']),
      operation: ops.setStatus,
    },
    {
      name: 'set_priority',
      description: 'Set priority p1 (highest), p2 or p3; none/clear/""/p0 clears it.',
      inputSchema: obj({ id: idArg, priority: { type: ['string', 'null'] } }, ['id', 'priority']),
      operation: ops.setPriority,
    },
    {
      name: 'schema',
      description: 'The schema registry: node types, statuses, transitions, edge vocabulary with weights, inverse labels and aliases.',
      inputSchema: obj({ code: { type: 'boolean', description: 'embed hook sources' } }),
      operation: ops.getSchema,
      annotations: { readOnlyHint: true },
    },
    {
      name: 'hello_mcp_app',
      description: 'Connectivity probe: shows a small widget confirming the connection to the work graph.',
      inputSchema: obj({}),
      operation: hello,
      annotations: { readOnlyHint: true },
      _meta: { ui: { resourceUri: HELLO_URI }, [RESOURCE_URI_META_KEY]: HELLO_URI },
    },
  ],
  resources: [
    {
      uri: HELLO_URI,
      name: 'hello',
      description: 'Connectivity probe widget',
      mimeType: RESOURCE_MIME_TYPE,
      read: () => helloHtml,
    },
  ],
});
