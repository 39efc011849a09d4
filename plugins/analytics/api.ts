/**
 * The analytics plugin's operations, each declared once: input and answer schemas, error
 * statuses, and the function that runs it (operations.ts). Routes, tools and the OpenAPI
 * document all read these.
 */
import { answer, defineOperation, NodeId, object, s, type JsonSchema } from '../../kernel/operation-legacy.js';
import type { OpContext } from '../../kernel/plugin.js';
import * as ops from './operations.js';

/**
 * A clamped bound: an integer (or, from a tool, its digits as a string, as the tool always
 * accepted). Out-of-range values are clamped by the operation, not rejected (docs/spec.md Limits).
 */
const ClampedInt = (description: string): JsonSchema => ({ type: ['integer', 'string'], pattern: '^-?\\d+$', description });
const nullableString = s.stringOrNull();
const counts: JsonSchema = { type: 'object', additionalProperties: { type: 'number' } };
const Stats: JsonSchema = answer({ count: s.integer(), mean: { type: ['number', 'null'] }, median: { type: ['number', 'null'] }, p85: { type: ['number', 'null'] }, min: { type: ['number', 'null'] }, max: { type: ['number', 'null'] } });
const Text = ['application/json', 'text/plain'];

const AnalyticsPayload = answer(
  {
    window: answer({ weeks: s.integer(), from: s.string(), to: s.string(), week_start: s.string(), timezone: s.string() }),
    weekly: s.array(s.object()),
    totals: answer({ nodes: s.integer(), by_type: s.object(), by_status: counts }, ['nodes']),
    throughput: answer({ completed: s.integer(), weekly_mean: s.number(), by_type: counts, by_status: counts }),
    cycleTimeDays: Stats,
    leadTimeDays: Stats,
    wip: answer({ count: s.integer(), by_status: counts, mean_age_days: { type: ['number', 'null'] }, aging_days: s.integer(), aging_count: s.integer(), aging: s.array(s.object()) }),
    bottlenecks: s.array(s.object()),
    coverage: answer({ open: s.integer(), prioritized: s.integer(), prioritized_pct: s.number(), assigned: s.integer(), assigned_pct: s.number(), completed: s.integer(), with_commits: s.integer(), with_commits_pct: s.number() }),
    project_warning: s.string(),
    scope: answer({ project: nullableString, project_values: s.array(s.string()), types: s.array(s.string()), top: s.integer(), aging: s.integer(), nodes: s.integer() }),
    generated_at: s.string(),
  },
  ['window', 'weekly', 'totals', 'throughput', 'cycleTimeDays', 'wip', 'bottlenecks', 'coverage'],
);

export const analytics = defineOperation({
  name: 'analytics',
  summary: 'Flow analytics over whole ISO weeks',
  description:
    'Flow analytics over a window of whole ISO weeks: weekly created/completed, totals by phase (done, active, blocked, open), throughput, cycle and lead time in days, work in progress with aging items, bottlenecks (open work holding up the most open work) and coverage. Completion time is when a node entered its final terminal status. `project` scopes (bare slug, proj-<slug>, repo-<slug>); `type` is a comma list or array (default: the queueable types); `weeks` 1-52 (default 12), `top` 1-100 (default 10), `aging` 1-365 days (default 14); `format` json (default) or text (a human report). Same payload as GET /v1/analytics.',
  input: object({
    project: s.string('project slug, proj-<slug> or repo-<slug>', { pattern: '^([a-z0-9][a-z0-9-]*)?$', maxLength: 200 }),
    type: { type: ['array', 'string'], items: { type: 'string' }, description: 'node types, comma-separated or a list (default: the queueable types)' },
    weeks: ClampedInt('weeks in the window, 1-52 (clamped)'),
    top: ClampedInt('entries in the ranked lists, 1-100 (clamped)'),
    aging: ClampedInt('days in an active status before work counts as aging, 1-365 (clamped)'),
    format: s.enum(['json', 'text'], 'json (default) or text (a human report)'),
  }),
  output: AnalyticsPayload,
  produces: Text,
  errors: [503],
  run: ops.analytics,
});

const ProgramNode: JsonSchema = answer({ id: s.string(), title: s.string(), type: s.string(), status: s.string(), phase: s.string(), project: nullableString }, ['id', 'type', 'status']);
const ProgramPayload: JsonSchema = answer(
  {
    ...(ProgramNode.properties as Record<string, JsonSchema>),
    progress: answer({ total: s.integer(), done: s.integer(), active: s.integer(), blocked: s.integer(), open: s.integer(), pct: s.number(), statuses: counts }),
    blockers: s.array(s.object()),
    truncated: s.array(answer({ id: s.string(), reason: s.enum(['depth', 'max_nodes']), skipped: s.integer() })),
    bounds: s.object(),
    entries: s.integer(),
  },
  ['id', 'type', 'status', 'progress', 'blockers', 'truncated', 'bounds', 'entries'],
);

export const program = defineOperation({
  name: 'get_program',
  summary: 'Program progress over the gating tree of a node',
  description:
    'The gating tree of a node: everything that blocks it, recursively (blocks edges), with progress {total, done, active, blocked, open, pct, statuses} counted once per node. A blocker shared by several branches is shown once and repeated as a marked leaf. `depth` 1-50 (default 8) and `max_nodes` 1-2000 (default 200) bound the tree (clamped); cut branches are listed in `truncated`. JSON by default, `format=text` for the text rendering.',
  input: object(
    {
      id: NodeId,
      depth: ClampedInt('levels of blockers below the root, 1-50 (clamped)'),
      max_nodes: ClampedInt('tree entries at most, 1-2000 (clamped)'),
      format: s.enum(['json', 'text'], 'json (default) or text'),
    },
    ['id'],
  ),
  output: ProgramPayload,
  produces: Text,
  run: ops.program,
});

export const renderProgram = defineOperation({
  name: 'render_program',
  summary: 'Program progress over the gating tree of a node, as text',
  description:
    'The gating tree of a node: everything that blocks it, recursively (blocks edges), with progress {total, done, active, blocked, open, pct, statuses} counted once per node. A blocker shared by several branches is shown once and repeated as a marked leaf. Text by default (the same bytes as GET /v1/program/{id}?format=text); format json gives the JSON tree. `max_depth` 1-50 (default 8) and `max_nodes` 1-2000 (default 200) bound the tree; cut branches are listed.',
  input: object(
    {
      id: { ...NodeId, description: 'root node id, e.g. task-launch' },
      max_depth: ClampedInt('levels of blockers below the root, 1-50 (clamped)'),
      max_nodes: ClampedInt('tree entries at most, 1-2000 (clamped)'),
      format: s.enum(['text', 'json']),
    },
    ['id'],
  ),
  output: ProgramPayload,
  produces: Text,
  run: (ctx: OpContext, input: { id: string; max_depth?: number | string; max_nodes?: number | string; format?: 'text' | 'json' }) =>
    ops.program(ctx, { id: input.id, depth: input.max_depth, max_nodes: input.max_nodes, format: input.format ?? 'text' }),
});

export const captureMetrics = defineOperation({
  name: 'get_capture_metrics',
  summary: 'Redacted capture metrics (administrators; when the deployment enables them)',
  description: 'Capture counts and rates since a date (default: the last 30 days), with pseudonymous actors. Administrators only (403 otherwise); the route answers 404 unless the deployment exports capture metrics (SVC_CAPTURE_METRICS=1).',
  input: object({ since: s.string('first day of the window, YYYY-MM-DD (default: 30 days ago)', { pattern: '^(\\d{4}-\\d{2}-\\d{2})?$' }) }),
  output: answer({ since: s.string(), until: s.string(), capture_enabled: s.boolean(), captures: s.object(), rates: s.object() }),
  errors: [403, 503],
  run: ops.captureMetrics,
});
