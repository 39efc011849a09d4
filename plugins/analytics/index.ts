/**
 * The `analytics` plugin: flow analytics (GET /v1/analytics, tool `analytics`), program
 * progress over the gating tree (GET /v1/program/{id}, tool `render_program`) and redacted
 * capture metrics (GET /v1/metrics/capture). Depends on `history`, whose commit index
 * seeds the per-node status timelines when a tenant opens.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { analyticsAccess } from './access.js';
import * as api from './api.js';
import { aggregatesOf } from './aggregates.js';
import { timelinesOf } from './timeline.js';

export const analyticsPlugin = definePlugin({
  name: 'analytics',
  description: 'Flow analytics (throughput, cycle time, WIP) and program progress over the gating tree.',
  access: analyticsAccess,
  version: '1.0.0',
  dependsOn: ['core', 'history'],
  optionalDependsOn: ['capture'],
  // The timelines replay the history once, in the background; analytics reads wait for it.
  tenantOpen(tenant, services) {
    // the timelines and the kept aggregates loaded ahead once the server is up, not while the
    // tenant opens (kernel/warm.ts): the first analytics read after a restart is as fast as the next
    services.warm('analytics', async () => {
      const timelines = timelinesOf(tenant);
      await timelines.ready();
      aggregatesOf(tenant, timelines);
    });
  },
  routes: [
    { method: 'GET', path: '/v1/analytics', operation: api.analytics },
    { method: 'GET', path: '/v1/program/:id', operation: api.getProgram },
    { method: 'GET', path: '/v1/metrics/capture', operation: api.getCaptureMetrics },
  ],
  tools: [
    {
      description:
        'Flow by ISO week: created/completed, throughput, cycle/lead time, aging WIP, bottlenecks. project, type, weeks 1-52 (12), top 1-100, aging 1-365 d, format.',
      operation: api.analytics,
      annotations: { title: 'Analytics', readOnlyHint: true },
    },
    {
      description: 'What blocks a node, recursively, with progress. Text unless format json; max_depth 1-50 (8), max_nodes 1-2000 (200).',
      operation: api.renderProgram,
      annotations: { title: 'Program progress', readOnlyHint: true },
    },
  ],
});
