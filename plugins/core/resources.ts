/**
 * Each node as an MCP resource `workgraph://nodes/{id}` (a template: resources/list never
 * enumerates the graph). A read answers what GET /v1/nodes/{id} answers, through the same
 * operation and its gates; a subscription is notified when an event names the node
 * (kernel/mcp-subscriptions.ts).
 */
import { invoke } from '../../kernel/operation.js';
import { RawResponse, serialize, type ResourceTemplateDef } from '../../kernel/plugin.js';
import * as api from './api.js';

const NODE_URI = /^workgraph:\/\/nodes\/([^/?#]+)$/;

export const nodeResource: ResourceTemplateDef = {
  uriTemplate: 'workgraph://nodes/{id}',
  name: 'node',
  description: 'One node as get_node reads it; subscribe to hear of its changes',
  mimeType: 'application/json',
  match(uri) {
    const m = NODE_URI.exec(uri);
    if (!m?.[1]) return null;
    try {
      return { id: decodeURIComponent(m[1]) };
    } catch {
      return null; // a malformed escape names no node
    }
  },
  async read(ctx, params) {
    // the REST body: include_markdown as GET /v1/nodes/{id} answers by default
    const answer = await invoke(api.getNode, ctx, { id: params.id, include_markdown: true });
    return answer instanceof RawResponse && typeof answer.body === 'string' ? answer.body : serialize(answer);
  },
  // a bulk commit's one summary event names only its first nodes (kernel/events/derive.ts): when
  // it says it left some out, every node subscriber re-reads rather than miss a change
  affectedBy: (event, params) =>
    event.nodes.includes(params.id ?? '') || (event.type.startsWith('graph.') && event.payload.truncated === true),
};
