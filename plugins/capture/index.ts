/**
 * The `capture` plugin: raw-text capture (built-in or external ingester), distill reports,
 * corrections and the digest, with their MCP tools `capture`, `propose_correction`,
 * `query_graph` and `explore_graph`.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { captureAccess } from './access.js';
import * as api from './api.js';
import { searchOf } from './search.js';

export const capturePlugin = definePlugin({
  name: 'capture',
  description: 'Raw-text capture into typed nodes, distill reports, corrections, search and the digest.',
  access: captureAccess,
  version: '1.0.0',
  dependsOn: ['core'],
  routes: [
    { method: 'POST', path: '/v1/capture', operation: api.captureText },
    { method: 'POST', path: '/v1/distill/report', operation: api.reportDistill },
    { method: 'POST', path: '/v1/corrections', operation: api.proposeCorrection, status: 201 },
    { method: 'POST', path: '/v1/digest', operation: api.compileDigest },
  ],
  instructions: [
    'capture turns free text (lines like "task: summary") into draft nodes; query_graph and explore_graph find what already exists before you create more.',
  ],
  tools: [
    {
      description:
        "Text to draft nodes: a '<type>: <summary>' line (task, issue, dec, spec, question) starts one, lines below are its body; the rest is pending. text <=8 KB; project; during/blocks: node id; needed_by YYYY-MM-DD.",
      operation: api.capture,
    },
    {
      description: 'Correct digests: target a node id, project:<slug> or global; pin/exclude node ids (<=40); guidance <=4 KB.',
      operation: api.proposeCorrection,
    },
    {
      description:
        "Digest for a question: full-text matches (min_sim 0-1, 0.3) or root_id's neighborhood; mode full adds bodies. found false is normal.",
      operation: api.queryGraph,
      annotations: { readOnlyHint: true },
    },
    {
      description: 'root_id (+depth 1-2): its neighborhood; query: matches; nothing: programs with progress. include_text: a text copy.',
      operation: api.exploreGraph,
      annotations: { readOnlyHint: true },
    },
  ],
  tenantOpen(tenant) {
    // Subscribe to commit events from the start; the search index itself is built on first use.
    searchOf(tenant);
  },
});
