/**
 * GET /v1/analytics: flow metrics over a scope of nodes (a project scope and/or node
 * types) and a window of whole ISO weeks (Monday 00:00 UTC) ending with the current one.
 *
 * Cost per request: O(groups in scope x weeks x log n) for the counts, plus what the payload
 * lists (the window's completions, WIP) and a bounded downstream walk per bottleneck
 * candidate. The counts come from aggregates kept per commit (aggregates.ts: per (type,
 * project) group), the times from the in-memory timelines. Nothing here reads git.
 */
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Tenant } from '../../kernel/tenant.js';
import { resolveProject, scopeValues } from '../history/public.js';
import type { Phase } from '../core/public.js';
import type { AnalyticsPayload, BottleneckEntry, Stats, WeekEntry, WipEntry } from './schemas.js';
import type { Timelines } from './timeline.js';
import {
  aggregatesOf,
  completedFrom,
  countBetween,
  type AnalyticsAggregates,
  type BottleneckRow,
  type Entry,
  type Group,
} from './aggregates.js';

export const DAY_MS = 24 * 60 * 60 * 1000;
const WEEK_MS = 7 * DAY_MS;
/** downstream nodes one bottleneck walk may visit */
const BOTTLENECK_WALK_CAP = 200;

export interface AnalyticsParams {
  project: string | null;
  types: string[];
  weeks: number;
  top: number;
  aging: number;
}

type PhaseCounts = Record<Phase, number>;

const round2 = (n: number) => Math.round(n * 100) / 100;
const days = (ms: number) => round2(ms / DAY_MS);
const pct = (part: number, whole: number) => (whole === 0 ? 0 : Math.round((part / whole) * 100));
const isoDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export function stats(values: number[]): Stats {
  if (values.length === 0) return { count: 0, mean: null, median: null, p85: null, min: null, max: null };
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  const median = n % 2 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
  // nearest-rank percentile
  const p85 = sorted[Math.max(0, Math.ceil(0.85 * n) - 1)]!;
  return {
    count: n,
    mean: round2(sorted.reduce((a, b) => a + b, 0) / n),
    median: round2(median),
    p85: round2(p85),
    min: round2(sorted[0]!),
    max: round2(sorted[n - 1]!),
  };
}

/** ISO 8601 week label of the week starting on the Monday `mondayMs`. */
export function isoWeek(mondayMs: number): string {
  const thursday = new Date(mondayMs + 3 * DAY_MS);
  const year = thursday.getUTCFullYear();
  const week = Math.floor((thursday.getTime() - Date.UTC(year, 0, 1)) / WEEK_MS) + 1;
  return `${year}-W${String(week).padStart(2, '0')}`;
}

/** Monday 00:00 UTC of the week holding `ms`. */
export function weekStart(ms: number): number {
  const d = new Date(ms);
  const midnight = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  return midnight - ((d.getUTCDay() + 6) % 7) * DAY_MS;
}

const PHASES: readonly Phase[] = ['done', 'active', 'blocked', 'open'];
const emptyPhases = (): PhaseCounts => ({ done: 0, active: 0, blocked: 0, open: 0 });
const bump = (map: Record<string, number>, key: string, by = 1) => {
  map[key] = (map[key] ?? 0) + by;
};
/** A count map with keys in code-point order, so equal state gives equal bytes. */
const sortedCounts = (map: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.entries(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

function assignedTo(record: NodeRecord): string[] {
  if (record.edges.length === 0) return [];
  return [...new Set(record.edges.filter((e) => e.type === 'assigned').map((e) => e.to))].sort();
}

/**
 * The groups in scope: the project scope's `project` values (sorted) intersected with the
 * types, or the types alone. `rank` orders the scope's nodes as the index's by-project or
 * by-type sets would list them (value or type first, then put order), which fixes the order
 * of the one float sum that depends on it (the WIP mean age).
 */
function scopeGroups(
  tenant: Tenant,
  agg: AnalyticsAggregates,
  params: AnalyticsParams,
): { groups: Group[]; values: string[]; inScope: (e: Entry) => boolean; rank: (e: Entry) => number } {
  const types = new Set(params.types);
  const groups: Group[] = [];
  if (params.project) {
    const values = [...scopeValues(tenant, params.project)].sort();
    const valueSet = new Set(values);
    for (const t of types)
      for (const [project, g] of agg.groups.get(t) ?? []) if (project !== null && valueSet.has(project)) groups.push(g);
    return {
      groups,
      values,
      inScope: (e) => types.has(e.record.type) && e.record.project !== null && valueSet.has(e.record.project),
      rank: (e) => values.indexOf(e.record.project!),
    };
  }
  for (const t of types) for (const g of agg.groups.get(t)?.values() ?? []) groups.push(g);
  return { groups, values: [], inScope: (e) => types.has(e.record.type), rank: (e) => params.types.indexOf(e.record.type) };
}

export function computeAnalytics(tenant: Tenant, timelines: Timelines, params: AnalyticsParams, now: number): AnalyticsPayload {
  const from = weekStart(now) - (params.weeks - 1) * WEEK_MS;
  const bucketOf = (ms: number | null): number => {
    if (ms === null || ms < from) return -1;
    const i = Math.floor((ms - from) / WEEK_MS);
    return i < params.weeks ? i : -1;
  };
  const weekly: WeekEntry[] = [];
  for (let i = 0; i < params.weeks; i++) {
    const start = from + i * WEEK_MS;
    weekly.push({ week: isoWeek(start), start: isoDate(start), created: 0, completed: 0 });
  }

  const agg = aggregatesOf(tenant, timelines);
  const { groups, values, inScope, rank } = scopeGroups(tenant, agg, params);
  const totals: AnalyticsPayload['totals'] = { nodes: 0, ...emptyPhases(), by_type: {}, by_status: {} };
  const throughput: AnalyticsPayload['throughput'] = { completed: 0, weekly_mean: 0, by_type: {}, by_status: {} };
  const cycle: number[] = [];
  const startedCycle: number[] = [];
  const lead: number[] = [];
  let started = 0;
  const active: Entry[] = [];
  const wipByStatus: Record<string, number> = {};
  const coverage = { open: 0, prioritized: 0, assigned: 0, completed: 0, with_commits: 0 };

  for (const g of groups) {
    totals.nodes += g.nodes;
    const byType = (totals.by_type[g.type] ??= { nodes: 0, ...emptyPhases() });
    byType.nodes += g.nodes;
    for (const phase of PHASES) {
      totals[phase] += g.phases[phase];
      byType[phase] += g.phases[phase];
    }
    for (const [status, n] of g.byStatus) bump(totals.by_status, status, n);
    coverage.open += g.open;
    coverage.prioritized += g.prioritized;
    coverage.assigned += g.assigned;
    for (let i = 0; i < params.weeks; i++) weekly[i]!.created += countBetween(g.created, from + i * WEEK_MS, from + (i + 1) * WEEK_MS);
    for (let k = completedFrom(g, from); k < g.completed.length; k++) {
      const e = g.completed[k]!;
      const t = e.times;
      const doneWeek = bucketOf(t.completedAt);
      if (doneWeek < 0) break; // completed after the window (the list ascends)
      weekly[doneWeek]!.completed++;
      throughput.completed++;
      bump(throughput.by_type, e.record.type);
      bump(throughput.by_status, e.record.status);
      const completedAt = t.completedAt!;
      if (t.startedAt !== null) {
        started++;
        startedCycle.push(Math.max(0, completedAt - t.startedAt) / DAY_MS);
      }
      cycle.push(Math.max(0, completedAt - (t.startedAt ?? t.openedAt)) / DAY_MS);
      lead.push(Math.max(0, completedAt - t.createdAt) / DAY_MS);
      coverage.completed++;
      if (e.withCommits) coverage.with_commits++;
    }
    for (const e of g.active) active.push(e);
  }
  // the scope's order (the mean age below is a float sum)
  active.sort((a, b) => rank(a) - rank(b) || a.seq - b.seq);
  const wipEntries: WipEntry[] = active.map(({ id, record, times: t }) => {
    bump(wipByStatus, record.status);
    const since = t.activeSince ?? t.statusSince;
    return {
      id,
      title: record.title,
      type: record.type,
      status: record.status,
      project: record.project,
      since: new Date(since).toISOString(),
      age_days: days(Math.max(0, now - since)),
      assigned: assignedTo(record),
    };
  });
  throughput.weekly_mean = round2(throughput.completed / params.weeks);
  throughput.by_type = sortedCounts(throughput.by_type);
  throughput.by_status = sortedCounts(throughput.by_status);
  totals.by_status = sortedCounts(totals.by_status);
  totals.by_type = Object.fromEntries(Object.entries(totals.by_type).sort(([a], [b]) => (a < b ? -1 : 1)));

  const aging = wipEntries.filter((e) => e.age_days >= params.aging).sort((a, b) => b.age_days - a.age_days || (a.id < b.id ? -1 : 1));

  const payload: AnalyticsPayload = {
    window: {
      weeks: params.weeks,
      from: new Date(from).toISOString(),
      to: new Date(now).toISOString(),
      week_start: 'monday',
      timezone: 'UTC',
    },
    weekly,
    totals,
    throughput,
    cycleTimeDays: { ...stats(cycle), started, never_started: cycle.length - started, started_median: stats(startedCycle).median },
    wip: {
      count: wipEntries.length,
      by_status: sortedCounts(wipByStatus),
      mean_age_days: wipEntries.length ? round2(wipEntries.reduce((a, e) => a + e.age_days, 0) / wipEntries.length) : null,
      aging_days: params.aging,
      aging_count: aging.length,
      aging: aging.slice(0, params.top),
    },
    bottlenecks: bottlenecks(
      tenant,
      agg,
      groups,
      `${params.project ? `in:${values.join(',')}` : '*'}|${params.types.join(',')}`,
      inScope,
      params.top,
      now,
    ),
    coverage: {
      open: coverage.open,
      prioritized: coverage.prioritized,
      prioritized_pct: pct(coverage.prioritized, coverage.open),
      assigned: coverage.assigned,
      assigned_pct: pct(coverage.assigned, coverage.open),
      completed: coverage.completed,
      with_commits: coverage.with_commits,
      with_commits_pct: pct(coverage.with_commits, coverage.completed),
    },
    leadTimeDays: stats(lead),
    scope: {
      project: params.project,
      project_values: values,
      types: params.types,
      top: params.top,
      aging: params.aging,
      nodes: totals.nodes,
    },
    generated_at: new Date(now).toISOString(),
  };
  if (totals.nodes === 0) payload.project_warning = scopeWarning(tenant, params);
  return payload;
}

function scopeWarning(tenant: Tenant, params: AnalyticsParams): string {
  const types = params.types.join(', ');
  if (!params.project) return `no nodes of type ${types} in the graph`;
  const known = resolveProject(tenant, params.project);
  return known
    ? `project '${params.project}' (${known.node.id}) has no nodes of type ${types}`
    : `project '${params.project}' matches no project node and no node of type ${types} carries it`;
}

/**
 * Not-done nodes that hold up not-done work in scope, ranked by how much in-scope work
 * they hold up downstream (walk bounded per candidate), then directly, then by age.
 */
function bottlenecks(
  tenant: Tenant,
  agg: AnalyticsAggregates,
  groups: Group[],
  scopeKey: string,
  inScope: (e: Entry) => boolean,
  top: number,
  now: number,
): BottleneckEntry[] {
  const openInScope = {
    has(id: string): boolean {
      const e = agg.entries.get(id);
      return e !== undefined && e.phase !== 'done' && inScope(e);
    },
  };
  let cached = agg.bottleneckRows.get(scopeKey);
  if (!cached || cached.epoch !== agg.blockingEpoch) {
    if (agg.bottleneckRows.size >= 32) agg.bottleneckRows.clear();
    cached = { epoch: agg.blockingEpoch, rows: bottleneckRows(agg, groups, openInScope) };
    agg.bottleneckRows.set(scopeKey, cached);
  }
  // ranked by transitive, then direct, then age (oldest first), then id; only the best `top` become entries
  type Row = { id: string; direct: number; transitive: number; age: number };
  const worse = (a: Row, b: Row) => b.transitive - a.transitive || b.direct - a.direct || b.age - a.age || (a.id < b.id ? -1 : 1);
  const best: Row[] = [];
  for (const { id, direct, transitive, createdAt } of cached.rows) {
    const row = { id, direct, transitive, age: days(Math.max(0, now - createdAt)) };
    if (best.length >= top && worse(row, best[best.length - 1]!) >= 0) continue;
    let at = best.length;
    while (at > 0 && worse(row, best[at - 1]!) < 0) at--;
    best.splice(at, 0, row);
    if (best.length > top) best.pop();
  }
  return best.map(({ id, direct, transitive, age }) => {
    const record = tenant.index.get(id)!;
    return {
      id,
      title: record.title,
      type: record.type,
      status: record.status,
      phase: agg.entries.get(id)!.phase,
      project: record.project,
      blocks: direct,
      blocks_transitive: transitive,
      age_days: age,
      in_scope: openInScope.has(id),
    };
  });
}

/**
 * Not-done nodes that hold up not-done work in scope: each with how much in-scope work it holds
 * up directly and downstream (walk bounded per candidate). Reads only what `blockingEpoch` covers.
 */
function bottleneckRows(agg: AnalyticsAggregates, groups: Group[], openInScope: { has(id: string): boolean }): BottleneckRow[] {
  // every node has a fresh entry (aggregatesOf refreshed them): done-ness is its phase
  const live = (id: string) => {
    const e = agg.entries.get(id);
    return e !== undefined && e.phase !== 'done';
  };
  const blocksOf = (id: string) => agg.entries.get(id)?.blocks ?? [];
  const candidates = new Set<string>();
  // blockers are kept per entry (a commit re-files what it links to, so they stay current)
  for (const g of groups) for (const e of g.blockedOpen) for (const b of e.blockers) if (live(b)) candidates.add(b);
  const rows: BottleneckRow[] = [];
  const seen = new Set<string>();
  const queue: string[] = [];
  for (const id of candidates) {
    const direct = blocksOf(id).filter((x) => openInScope.has(x)).length;
    seen.clear();
    seen.add(id);
    queue.length = 0;
    queue.push(id);
    let transitive = 0;
    for (let head = 0; head < queue.length && seen.size < BOTTLENECK_WALK_CAP; head++) {
      for (const x of blocksOf(queue[head]!)) {
        if (seen.has(x) || !live(x)) continue;
        seen.add(x);
        if (openInScope.has(x)) transitive++;
        queue.push(x);
      }
    }
    rows.push({ id, direct, transitive, createdAt: agg.entries.get(id)!.times.createdAt });
  }
  return rows;
}
