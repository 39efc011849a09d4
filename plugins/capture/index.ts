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
  access: captureAccess,
  version: '1.0.0',
  dependsOn: ['core'],
  routes: [
    { method: 'POST', path: '/v1/capture', operation: api.captureText },
    { method: 'POST', path: '/v1/distill/report', operation: api.distillReport },
    { method: 'POST', path: '/v1/corrections', operation: api.proposeCorrection, status: 201 },
    { method: 'POST', path: '/v1/digest', operation: api.digest },
  ],
  instructions: [
    'capture turns free text (lines like "task: summary") into draft nodes; query_graph and explore_graph find what already exists before you create more.',
  ],
  tools: [
    { operation: api.capture },
    { operation: api.proposeCorrection },
    { operation: api.queryGraph, annotations: { readOnlyHint: true } },
    { operation: api.exploreGraph, annotations: { readOnlyHint: true } },
  ],
  tenantOpen(tenant) {
    // Subscribe to commit events from the start; the search index itself is built on first use.
    searchOf(tenant);
  },
});
