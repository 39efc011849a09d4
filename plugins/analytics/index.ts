/**
 * The `analytics` plugin: flow analytics (GET /v1/analytics, tool `analytics`), program
 * progress over the gating tree (GET /v1/program/{id}, tool `render_program`) and redacted
 * capture metrics (GET /v1/metrics/capture). Depends on `history`, whose commit index
 * seeds the per-node status timelines when a tenant opens.
 */
import { definePlugin, type RouteRequest } from '../../kernel/plugin.js';
import * as ops from './operations.js';
import { timelinesOf } from './timeline.js';
import { objectSchema as obj } from '../../kernel/tool-schema.js';


/** Tool arguments arrive typed; the cores read query-string values. */
const asQuery = (v: unknown): string | undefined => (v === undefined || v === null ? undefined : String(v));
const asQueryList = (v: unknown): string | string[] | undefined => (Array.isArray(v) ? v.map(String) : asQuery(v));
const intArg = (description: string) => ({ type: ['integer', 'string'], description });

export const analyticsPlugin = definePlugin({
  name: 'analytics',
  version: '1.0.0',
  dependsOn: ['core', 'history'],
  // The timelines replay the history once, in the background; analytics reads wait for it.
  tenantOpen(tenant) {
    timelinesOf(tenant)
      .ready()
      .catch(() => undefined);
  },
  routes: [
    {
      method: 'GET',
      path: '/v1/analytics',
      operation: ops.analytics,
      input: (r: RouteRequest) => ({ project: r.query.project, type: r.query.type, weeks: r.query.weeks, top: r.query.top, aging: r.query.aging, format: r.query.format }),
    },
    {
      method: 'GET',
      path: '/v1/program/:id',
      operation: ops.program,
      input: (r: RouteRequest) => ({ id: r.params.id, depth: r.query.depth, max_nodes: r.query.max_nodes, format: r.query.format }),
    },
    {
      method: 'GET',
      path: '/v1/metrics/capture',
      operation: ops.captureMetrics,
      input: (r: RouteRequest) => ({ since: r.query.since }),
    },
  ],
  tools: [
    {
      name: 'analytics',
      description:
        'Flow analytics over a window of whole ISO weeks: weekly created/completed, totals by phase (done, active, blocked, open), throughput, cycle and lead time in days, work in progress with aging items, bottlenecks (open work holding up the most open work) and coverage. Completion time is when a node entered its final terminal status. `project` scopes (bare slug, proj-<slug>, repo-<slug>); `type` is a comma list or array (default: the queueable types); `weeks` 1-52 (default 12), `top` 1-100 (default 10), `aging` 1-365 days (default 14); `format` json (default) or text (a human report). Same payload as GET /v1/analytics.',
      inputSchema: obj({
        project: { type: 'string', description: 'project slug, proj-<slug> or repo-<slug>' },
        type: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }], description: 'node types, comma-separated or a list' },
        weeks: intArg('weeks in the window, 1-52 (clamped)'),
        top: intArg('entries in the ranked lists, 1-100 (clamped)'),
        aging: intArg('days in an active status before work counts as aging, 1-365 (clamped)'),
        format: { enum: ['json', 'text'] },
      }),
      operation: ops.analytics,
      input: (args) => ({
        project: asQuery(args.project),
        type: asQueryList(args.type),
        weeks: asQuery(args.weeks),
        top: asQuery(args.top),
        aging: asQuery(args.aging),
        format: asQuery(args.format),
      }),
      annotations: { title: 'Analytics', readOnlyHint: true },
    },
    {
      name: 'render_program',
      description:
        'The gating tree of a node: everything that blocks it, recursively (blocks edges), with progress {total, done, active, blocked, open, pct, statuses} counted once per node. A blocker shared by several branches is shown once and repeated as a marked leaf. Text by default (the same bytes as GET /v1/program/{id}?format=text); format json gives the JSON tree. `max_depth` 1-50 (default 8) and `max_nodes` 1-2000 (default 200) bound the tree; cut branches are listed.',
      inputSchema: obj(
        {
          id: { type: 'string', description: 'root node id, e.g. task-launch' },
          max_depth: intArg('levels of blockers below the root, 1-50 (clamped)'),
          max_nodes: intArg('tree entries at most, 1-2000 (clamped)'),
          format: { enum: ['text', 'json'] },
        },
        ['id'],
      ),
      operation: ops.program,
      input: (args) => ({ id: args.id, depth: asQuery(args.max_depth), max_nodes: asQuery(args.max_nodes), format: asQuery(args.format) ?? 'text' }),
      annotations: { title: 'Program progress', readOnlyHint: true },
    },
  ],
});
