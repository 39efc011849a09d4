/**
 * The `core` plugin (always on): status, identity echo, schema, node reads and the node
 * write endpoints, with their MCP tool twins.
 */
import type {
  RESOURCE_MIME_TYPE as EXT_APPS_MIME_TYPE,
  RESOURCE_URI_META_KEY as EXT_APPS_URI_META_KEY,
} from '@modelcontextprotocol/ext-apps/server';
import { answer, defineOperation, object, s } from '../../kernel/operation.js';
import { definePlugin, type OpContext } from '../../kernel/plugin.js';
import { coreAccess } from './access.js';
import * as api from './api.js';

import { nodeResource } from './resources.js';

const HELLO_URI = 'ui://workgraph/hello.html';
// The ext-apps constants as literals, type-checked against the package's declarations: importing
// the package at run time loads ext-apps and the SDK's McpServer at every start (~0.4 s alone,
// ~30 ms on top of the SDK modules kernel/mcp.ts loads; docs/performance.md).
const RESOURCE_MIME_TYPE: typeof EXT_APPS_MIME_TYPE = 'text/html;profile=mcp-app';
const RESOURCE_URI_META_KEY: typeof EXT_APPS_URI_META_KEY = 'ui/resourceUri';

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

const helloMcpApp = defineOperation({
  name: 'hello_mcp_app',
  summary: 'Connectivity probe widget',
  description: 'Connectivity probe: shows a small widget confirming the connection to the work graph.',
  input: object({}),
  output: answer({
    ok: s.boolean(),
    message: s.string(),
    org: s.string(),
    person: s.stringOrNull(),
    node_count: s.integer(),
    head: s.stringOrNull(),
  }),
  run: async (ctx: OpContext) => ({
    ok: true,
    message: `connected to the ${ctx.tenant.org} work graph`,
    org: ctx.tenant.org,
    person: ctx.actor.bound ? ctx.actor.personId : null,
    node_count: ctx.tenant.index.size,
    head: ctx.tenant.head,
  }),
});

export const corePlugin = definePlugin({
  name: 'core',
  description: 'Nodes, edges, statuses and the schema: the work graph itself (always on).',
  access: coreAccess,
  version: '1.0.0',
  dependsOn: [],
  routes: [
    { method: 'GET', path: '/v1/status', operation: api.getStatus },
    { method: 'GET', path: '/v1/me', operation: api.me },
    { method: 'GET', path: '/v1/me/org-choices', operation: api.getOrgChoices },
    { method: 'GET', path: '/v1/schema', operation: api.schema },
    { method: 'POST', path: '/v1/schema/dry-run', operation: api.dryRunSchema },
    // the hottest read: answered by the kernel's direct read lane when the request is ordinary
    { method: 'GET', path: '/v1/nodes/:id', operation: api.getNode, direct: true },
    { method: 'POST', path: '/v1/nodes', operation: api.putNode },
    { method: 'PATCH', path: '/v1/nodes/:id', operation: api.patchNode },
    { method: 'POST', path: '/v1/nodes/:id/edges', operation: api.addEdge },
    { method: 'DELETE', path: '/v1/nodes/:id/edges', operation: api.removeEdge },
    { method: 'POST', path: '/v1/nodes/:id/status', operation: api.setStatus },
    { method: 'POST', path: '/v1/nodes/:id/priority', operation: api.setPriority },
    { method: 'POST', path: '/v1/nodes/:id/readiness', operation: api.setReadiness },
    { method: 'POST', path: '/v1/nodes/:id/commits', operation: api.linkCommit },
    { method: 'POST', path: '/v1/edges', operation: api.addEdges },
    { method: 'DELETE', path: '/v1/edges', operation: api.removeEdges },
    { method: 'POST', path: '/v1/priorities', operation: api.setPriorities },
    { method: 'GET', path: '/v1/tenant/plugins', operation: api.listTenantPlugins },
    { method: 'POST', path: '/v1/tenant/plugins/:name', operation: api.setTenantPlugin },
  ],
  instructions: [
    'Every node needs a standalone `summary` (at most 500 characters); ids carry their type prefix (task-, issue-, dec-, spec-, ...). The `schema` tool lists the types, their statuses and the edge vocabulary.',
    'Limits: body 8192 bytes, 40 edges per node, 1 MB per request (413 too_large); node ids and names at most 200 characters, types, statuses and revisions 100, other ids and keys at most 300, none empty; lists at least one item (tool schemas leave these bounds out: a 422 names the one broken). Edges in frontmatter are a YAML list: `edges: [{type: blocks, to: task-release}, {type: relates-to, to: spec-x, kind: note}]`. The server stamps author, authored_via, created and updated (sent values are ignored with a warning); priority and readiness have their own tools (set_priority, set_readiness; batch: set_priorities, add_edges).',
    'Errors are {error: {code, message, details}}: 404 not_found names the nearest ids, 409 conflict / transition_denied / lease_lost say who holds what, 422 validation_failed names the first reason and the allowed values. me tells who your token acts for. Batch tools (add_edges, remove_edges, set_priorities; items 1-100) run each item as the single tool, one commit each, and answer {ok, status, results, failed: [{index, id, code, message}]}, an error only when none landed; put_node answers each entry in results (a failed one with its error) and the failed count.',
    'get_node returns the node with its `revision`. To change a node, echo that revision: patch_node {id, revision, set?, unset?, add_edges?, remove_edges?, body?, append_body?} changes only what it names; put_node {nodes: [{node, if_exists: "update", revision}]} replaces the whole node (what you do not repeat is removed, and listed in warnings). A stale revision is a 409 conflict carrying the current one, never a silent overwrite; read again and retry.',
    'Finish work with set_status (task: done; issue: resolved), or write the node that resolves it with a `resolves` edge. add_edge links nodes (blocks, part-of, relates-to, ...).',
  ],
  tools: [
    {
      description: 'Read a node: frontmatter, body, revision (echo it to update). include_markdown: the raw file too.',
      operation: api.getNode,
      annotations: { readOnlyHint: true },
    },
    {
      description:
        'Create or update nodes. nodes (1-500): markdown (--- YAML frontmatter --- body) or {node, if_exists, revision}. Frontmatter: id with type prefix, summary (<=500 chars), edges: [{type, to, ...attrs}] (<=40); body <=8192 bytes. if_exists: error, skip, update (needs the read revision, else 409). author, created, updated, priority, readiness: ignored.',
      operation: api.putNode,
    },
    {
      description:
        'Change only what is named: {id, revision, set?, unset?, add_edges?, remove_edges?, body?, append_body?}; null in set removes a field. Stale revision: 409. 403: person nodes, force without admin.',
      operation: api.patchNode,
    },
    {
      description:
        'Add edge id -type-> to. type: canonical, alias or inverse (schema tool); attrs: flat tokens. 404 unknown node, 422 unknown type.',
      operation: api.addEdge,
    },
    {
      description: 'Remove edge id -type-> to; an absent edge is skipped.',
      operation: api.removeEdge,
      annotations: { idempotentHint: true },
    },
    {
      description: 'Move a node to a status of its type (schema tool); in-progress also claims it. 409 transition_denied.',
      operation: api.setStatus,
    },
    { description: 'priority: p1 (highest), p2, p3, or null to clear.', operation: api.setPriority },
    { description: 'readiness: agent (agents may pick it up) or null; human is derived.', operation: api.setReadiness },
    {
      description: 'Batch add_edge: items [{id, type, to, attrs?}].',
      operation: api.addEdges,
    },
    {
      description: 'Batch remove_edge: items [{id, type, to}].',
      operation: api.removeEdges,
      annotations: { idempotentHint: true },
    },
    {
      description: 'Batch set_priority: items [{id, priority}].',
      operation: api.setPriorities,
    },
    {
      description: 'Node types (prefix, statuses, transitions), edge types (aliases, inverses). code: hook sources too.',
      operation: api.schema,
      annotations: { readOnlyHint: true },
    },
    {
      description:
        "Run a schema's hooks (schema_id or draft markdown) on up to 10 nodes in the sandbox; verdicts, CPU, heap. Writes nothing.",
      operation: api.dryRunSchema,
      annotations: { readOnlyHint: true },
    },
    {
      description: "The tenant's plugins: enabled, dependencies (admin).",
      operation: api.listTenantPlugins,
      annotations: { readOnlyHint: true },
    },
    {
      description: 'Enable (with its dependencies) or disable a plugin for the tenant, live; app needs confirm (admin).',
      operation: api.setTenantPlugin,
    },
    {
      description: 'Who this token acts for: person, org, is_admin, agent, session.',
      operation: api.me,
      annotations: { readOnlyHint: true },
    },
    {
      description: 'Connectivity probe: a small widget.',
      operation: helloMcpApp,
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
  resourceTemplates: [nodeResource],
});
