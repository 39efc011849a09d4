/**
 * The analytics answers as JSON Schema, each the one declaration of its shape: api.ts
 * declares the operations with them and the computing code (report.ts, program.ts,
 * capture-metrics.ts) takes its types from them (`Static<typeof X>`).
 */
import { answer, extend, NodeId, object, s, type Static } from '../../kernel/operation.js';
import { PHASES, ProgramProgress, type Phase } from '../core/public.js';

const nullableString = s.stringOrNull();
const nullableNumber = s.nullable(s.number());
/** a count map: key -> number */
export const counts = s.record(s.number());
const phase = s.enum(PHASES);

// ---------------------------------------------------------------- inputs

/**
 * A clamped bound: an integer (or, from a tool, its digits as a string, as the tool always
 * accepted). Out-of-range values are clamped by the operation, not rejected (docs/spec.md Limits).
 */
export const ClampedInt = (description: string) =>
  s.raw<number | string>({ type: ['integer', 'string'], pattern: '^-?\\d+$', description });
const format = s.enum(['json', 'text'], 'json (default) or text (a human report)');

export const AnalyticsInput = object({
  project: s.string('project slug, proj-<slug> or repo-<slug>', { pattern: '^([a-z0-9][a-z0-9-]*)?$', maxLength: 200 }),
  type: s.raw<string | string[]>({
    type: ['array', 'string'],
    items: { type: 'string' },
    description: 'node types, comma-separated or a list (default: the queueable types)',
  }),
  weeks: ClampedInt('weeks in the window, 1-52 (clamped)'),
  top: ClampedInt('entries in the ranked lists, 1-100 (clamped)'),
  aging: ClampedInt('days in an active status before work counts as aging, 1-365 (clamped)'),
  format,
});

export const GetProgramInput = object(
  {
    id: NodeId,
    depth: ClampedInt('levels of blockers below the root, 1-50 (clamped)'),
    max_nodes: ClampedInt('tree entries at most, 1-2000 (clamped)'),
    format: s.enum(['json', 'text'], 'json (default) or text'),
  },
  ['id'],
);

export const GetCaptureMetricsInput = object({
  since: s.string('first day of the window, YYYY-MM-DD (default: 30 days ago)', { pattern: '^(\\d{4}-\\d{2}-\\d{2})?$' }),
});

// ---------------------------------------------------------------- answers

export const Stats = answer({
  count: s.integer(),
  mean: nullableNumber,
  median: nullableNumber,
  p85: nullableNumber,
  min: nullableNumber,
  max: nullableNumber,
});
export type Stats = Static<typeof Stats>;

const PhaseCounts = { done: s.integer(), active: s.integer(), blocked: s.integer(), open: s.integer() };

const WeekEntry = answer({ week: s.string(), start: s.string(), created: s.integer(), completed: s.integer() });
export type WeekEntry = Static<typeof WeekEntry>;
const WipEntry = answer({
  id: s.string(),
  title: s.string(),
  type: s.string(),
  status: s.string(),
  project: nullableString,
  since: s.string(),
  age_days: s.number(),
  assigned: s.array(s.string()),
});
export type WipEntry = Static<typeof WipEntry>;
const BottleneckEntry = answer({
  id: s.string(),
  title: s.string(),
  type: s.string(),
  status: s.string(),
  phase,
  project: nullableString,
  blocks: s.integer(),
  blocks_transitive: s.integer(),
  age_days: s.number(),
  in_scope: s.boolean(),
});
export type BottleneckEntry = Static<typeof BottleneckEntry>;

export const AnalyticsPayload = answer(
  {
    window: answer({ weeks: s.integer(), from: s.string(), to: s.string(), week_start: s.string(), timezone: s.string() }),
    weekly: s.array(WeekEntry),
    totals: answer({
      nodes: s.integer(),
      ...PhaseCounts,
      by_type: s.record(answer({ nodes: s.integer(), ...PhaseCounts })),
      by_status: counts,
    }),
    throughput: answer({ completed: s.integer(), weekly_mean: s.number(), by_type: counts, by_status: counts }),
    cycleTimeDays: extend(
      Stats,
      // the median over the items that were started (never-started ones measure from when they were opened)
      { started: s.integer(), never_started: s.integer(), started_median: nullableNumber },
      ['started', 'never_started'],
    ),
    leadTimeDays: Stats,
    wip: answer({
      count: s.integer(),
      by_status: counts,
      mean_age_days: nullableNumber,
      aging_days: s.integer(),
      aging_count: s.integer(),
      aging: s.array(WipEntry),
    }),
    bottlenecks: s.array(BottleneckEntry),
    coverage: answer({
      open: s.integer(),
      prioritized: s.integer(),
      prioritized_pct: s.number(),
      assigned: s.integer(),
      assigned_pct: s.number(),
      completed: s.integer(),
      with_commits: s.integer(),
      with_commits_pct: s.number(),
    }),
    project_warning: s.string(),
    scope: answer({
      project: nullableString,
      project_values: s.array(s.string()),
      types: s.array(s.string()),
      top: s.integer(),
      aging: s.integer(),
      nodes: s.integer(),
    }),
    generated_at: s.string(),
  },
  ['window', 'weekly', 'totals', 'throughput', 'cycleTimeDays', 'leadTimeDays', 'wip', 'bottlenecks', 'coverage', 'scope', 'generated_at'],
);
export type AnalyticsPayload = Static<typeof AnalyticsPayload>;

/** The progress counts of a program (GET /v1/program) and of each program in explore_graph's overview. */
export type { ProgramProgress };

export const ProgramBounds = answer({ depth: s.integer(), max_nodes: s.integer() });
export type ProgramBounds = Static<typeof ProgramBounds>;

/**
 * One node of the gating tree. The tree is recursive (`blockers` holds more of these), which
 * these builders cannot state without `$ref`; the schema declares the entries as objects and
 * this type, kept next to it, is the one declaration of an entry's keys.
 */
export interface ProgramNode {
  id: string;
  title: string;
  type: string;
  status: string;
  phase: Phase;
  project: string | null;
  /** attributes of the `blocks` edge to the parent (e.g. `needed_by`) */
  edge?: Record<string, string>;
  /** this node blocks more than one node in the tree; the other places are `repeat` leaves */
  shared?: boolean;
  /** a second occurrence, rendered as a leaf; its subtree is shown at the first one */
  repeat?: boolean;
  /** the repeat is one of its own ancestors */
  cycle?: boolean;
  /** on a repeat: the node under which this one is expanded (absent when it is the root) */
  expanded_under?: string;
  blockers?: ProgramNode[];
  /** blockers not listed here because a bound was hit */
  more?: number;
  /** which bound cut this node's blockers */
  cut?: 'depth' | 'max_nodes';
}

export const ProgramPayload = answer(
  {
    id: s.string(),
    title: s.string(),
    type: s.string(),
    status: s.string(),
    phase,
    project: nullableString,
    progress: ProgramProgress,
    blockers: s.raw<ProgramNode[]>({ type: 'array', items: { type: 'object' } }),
    more: s.integer(),
    cut: s.enum(['depth', 'max_nodes']),
    truncated: s.array(answer({ id: s.string(), reason: s.enum(['depth', 'max_nodes']), skipped: s.integer() })),
    bounds: ProgramBounds,
    entries: s.integer(),
  },
  ['id', 'title', 'type', 'status', 'phase', 'project', 'progress', 'blockers', 'truncated', 'bounds', 'entries'],
);
export type ProgramPayload = Static<typeof ProgramPayload>;

const ClosureEdge = s.enum(['status', 'resolves', 'answers', 'supersedes']);
export type ClosureEdge = Static<typeof ClosureEdge>;

export const CaptureMetrics = answer({
  since: s.string(),
  until: s.string(),
  capture_enabled: s.boolean(),
  captures: answer({
    total: s.integer(),
    created: s.integer(),
    pending: s.integer(),
    unavailable: s.integer(),
    nodes_created: s.integer(),
    bounced: s.integer(),
    with_blocks: s.integer(),
    by_via: counts,
    by_source: counts,
    by_ingester: counts,
    by_type: counts,
  }),
  rates: answer({
    created_rate: s.number(),
    pending_rate: s.number(),
    unavailable_rate: s.number(),
    bounce_rate: s.number(),
    distill_share: s.number(),
    agent_share: s.number(),
    nodes_per_capture: s.number(),
    captures_per_day: s.number(),
  }),
  distill: answer({
    reports: s.integer(),
    facts: s.integer(),
    captured: s.integer(),
    spooled: s.integer(),
    rejected: s.integer(),
    capture_rate: s.number(),
  }),
  authors: answer({
    count: s.integer(),
    entries: s.array(
      answer({ author: s.string(), captures: s.integer(), created: s.integer(), pending: s.integer(), distill_reports: s.integer() }),
    ),
  }),
  closure: answer({
    tracked: s.integer(),
    closed: s.integer(),
    rate: s.number(),
    by_edge: counts,
    latency_days: Stats,
    entries: s.array(answer({ edge: ClosureEdge, latency_days: s.number() })),
  }),
});
export type CaptureMetrics = Static<typeof CaptureMetrics>;
