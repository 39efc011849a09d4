/**
 * The analytics plugin's operations, each declared once: input and answer schemas, error
 * statuses, and the function that runs it (operations.ts). Routes, tools and the OpenAPI
 * document all read these.
 */
import { defineOperation, NodeId, object, s } from '../../kernel/operation.js';
import * as ops from './operations.js';
import {
  AnalyticsInput,
  AnalyticsPayload,
  CaptureMetrics,
  ClampedInt,
  GetCaptureMetricsInput,
  GetProgramInput,
  ProgramPayload,
} from './schemas.js';

const Text = ['application/json', 'text/plain'];

export const analytics = defineOperation({
  name: 'analytics',
  summary: 'Flow analytics over whole ISO weeks',
  description:
    'Flow analytics over a window of whole ISO weeks: weekly created/completed, totals by phase (done, active, blocked, open), throughput, cycle and lead time in days, work in progress with aging items, bottlenecks (open work holding up the most open work) and coverage. Completion time is when a node entered its final terminal status. `project` scopes (bare slug, proj-<slug>, repo-<slug>); `type` is a comma list or array (default: the queueable types); `weeks` 1-52 (default 12), `top` 1-100 (default 10), `aging` 1-365 days (default 14); `format` json (default) or text (a human report). Same payload as GET /v1/analytics.',
  input: AnalyticsInput,
  output: AnalyticsPayload,
  produces: Text,
  errors: [503],
  run: ops.analytics,
});

export const getProgram = defineOperation({
  name: 'get_program',
  summary: 'Program progress over the gating tree of a node',
  description:
    'The gating tree of a node: everything that blocks it, recursively (blocks edges), with progress {total, done, active, blocked, open, pct, statuses} counted once per node. A blocker shared by several branches is shown once and repeated as a marked leaf. `depth` 1-50 (default 8) and `max_nodes` 1-2000 (default 200) bound the tree (clamped); cut branches are listed in `truncated`. JSON by default, `format=text` for the text rendering.',
  input: GetProgramInput,
  output: ProgramPayload,
  produces: Text,
  run: ops.getProgram,
});

export const renderProgram = defineOperation({
  name: 'render_program',
  summary: 'Program progress over the gating tree of a node, as text',
  description:
    'The gating tree of a node: everything that blocks it, recursively (blocks edges), with progress {total, done, active, blocked, open, pct, statuses} counted once per node. A blocker shared by several branches is shown once and repeated as a marked leaf. Text by default (the same bytes as GET /v1/program/{id}?format=text); format json gives the JSON tree. `max_depth` 1-50 (default 8) and `max_nodes` 1-2000 (default 200) bound the tree; cut branches are listed.',
  input: object(
    {
      id: s.string('root node id, e.g. task-launch', { pattern: NodeId.pattern, maxLength: NodeId.maxLength }),
      max_depth: ClampedInt('levels of blockers below the root, 1-50 (clamped)'),
      max_nodes: ClampedInt('tree entries at most, 1-2000 (clamped)'),
      format: s.enum(['text', 'json']),
    },
    ['id'],
  ),
  output: ProgramPayload,
  produces: Text,
  run: (ctx, input) =>
    ops.getProgram(ctx, { id: input.id, depth: input.max_depth, max_nodes: input.max_nodes, format: input.format ?? 'text' }),
});

export const getCaptureMetrics = defineOperation({
  name: 'get_capture_metrics',
  summary: 'Redacted capture metrics (administrators; when the deployment enables them)',
  description:
    'Capture counts and rates since a date (default: the last 30 days), with pseudonymous actors. Administrators only (403 otherwise); the route answers 404 unless the deployment exports capture metrics (SVC_CAPTURE_METRICS=1).',
  input: GetCaptureMetricsInput,
  output: CaptureMetrics,
  errors: [403, 503],
  run: ops.getCaptureMetrics,
});
