/**
 * GET /v1/analytics: flow metrics over a scope of nodes (a project scope and/or node
 * types) and a window of whole ISO weeks (Monday 00:00 UTC) ending with the current one.
 *
 * Cost: O(scope nodes) per request plus a bounded downstream walk per bottleneck
 * candidate; the scope comes from the index's by-project and by-type sets, the times from
 * the in-memory timelines. Nothing here reads git.
 */
import type { CommitEvent, NodeRecord } from '../../kernel/graph-index.js';
import type { Registry } from '../../kernel/registry.js';
import type { Tenant } from '../../kernel/tenant.js';
import { resolveProject, scopeValues } from '../history/public.js';
import { blockedBy, blockersOf, isDone, phaseOf, type Phase } from '../core/public.js';
import type { AnalyticsPayload, BottleneckEntry, Stats, WeekEntry, WipEntry } from './schemas.js';
import type { NodeTimes, Timelines } from './timeline.js';

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

const emptyPhases = (): PhaseCounts => ({ done: 0, active: 0, blocked: 0, open: 0 });
const bump = (map: Record<string, number>, key: string, by = 1) => {
  map[key] = (map[key] ?? 0) + by;
};
/** A count map with keys in code-point order, so equal state gives equal bytes. */
const sortedCounts = (map: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.entries(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/** The nodes in scope: the project scope's `project` values intersected with the types. */
function scopeIds(tenant: Tenant, params: AnalyticsParams): { ids: string[]; values: string[] } {
  const types = new Set(params.types);
  const ids = new Set<string>();
  let values: string[] = [];
  if (params.project) {
    values = [...scopeValues(tenant, params.project)].sort();
    for (const v of values) {
      for (const id of tenant.index.idsInProject(v)) if (types.has(tenant.index.get(id)!.type)) ids.add(id);
    }
  } else {
    for (const t of params.types) for (const id of tenant.index.idsOfType(t)) ids.add(id);
  }
  // no sort: every list in the payload is sorted on its own, and counts do not depend on order
  return { ids: [...ids], values };
}

function assignedTo(record: NodeRecord): string[] {
  if (record.edges.length === 0) return [];
  return [...new Set(record.edges.filter((e) => e.type === 'assigned').map((e) => e.to))].sort();
}

/** A node's phase and times: functions of the graph at one head (and the registry), not of the clock. */
interface NodeFacts {
  phase: Phase;
  times: NodeTimes;
}

interface FactsCache {
  registry: Registry;
  timelines: Timelines;
  facts: Map<string, NodeFacts>;
  unsubscribe: () => void;
}

/**
 * Phases and times per node, kept across reads and commits: a commit drops only the facts it
 * can have changed, so the first read after a write costs what a repeated read does (at
 * 100,000 nodes a full recomputation was most of a request). The clock-dependent parts (week
 * buckets, ages) are still computed per request. A registry change starts afresh.
 */
const factsCaches = new WeakMap<Tenant, FactsCache>();

function addNeighbours(tenant: Tenant, id: string, records: Array<NodeRecord | null | undefined>, out: Set<string>): void {
  for (const r of records) if (r) for (const e of r.edges) out.add(e.to);
  for (const { from } of tenant.index.inboundOf(id)) out.add(from);
}

/**
 * The nodes whose facts a commit can change: a node's phase reads its own edges, the nodes
 * linked to it (resolvers, blockers) and whether its blockers are done (their resolvers), so
 * everything within two links of a changed node, either direction, before or after.
 */
function invalidate(tenant: Tenant, facts: Map<string, NodeFacts>, event: CommitEvent): void {
  const near = new Set<string>();
  for (const c of event.changes) {
    near.add(c.id);
    addNeighbours(tenant, c.id, [c.before, c.after], near);
  }
  const reach = new Set(near);
  for (const id of near) addNeighbours(tenant, id, [tenant.index.get(id)], reach);
  for (const id of reach) facts.delete(id);
}

function factsFor(tenant: Tenant, timelines: Timelines): (record: NodeRecord) => NodeFacts {
  let cache = factsCaches.get(tenant);
  if (!cache || cache.registry !== tenant.registry || cache.timelines !== timelines) {
    cache?.unsubscribe();
    const facts = new Map<string, NodeFacts>();
    const unsubscribe = tenant.index.subscribe((event) => {
      try {
        invalidate(tenant, facts, event);
      } catch {
        facts.clear(); // never fail a commit; recompute everything on the next read
      }
    });
    cache = { registry: tenant.registry, timelines, facts, unsubscribe };
    factsCaches.set(tenant, cache);
  }
  const { facts } = cache;
  return (record) => {
    let f = facts.get(record.id);
    if (!f) facts.set(record.id, (f = { phase: phaseOf(tenant, record), times: timelines.timesOf(record) }));
    return f;
  };
}

function hasCommits(record: NodeRecord): boolean {
  return Array.isArray(record.frontmatter.commits) && record.frontmatter.commits.length > 0;
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

  const { ids, values } = scopeIds(tenant, params);
  const totals: AnalyticsPayload['totals'] = { nodes: 0, ...emptyPhases(), by_type: {}, by_status: {} };
  const throughput: AnalyticsPayload['throughput'] = { completed: 0, weekly_mean: 0, by_type: {}, by_status: {} };
  const cycle: number[] = [];
  const startedCycle: number[] = [];
  const lead: number[] = [];
  let started = 0;
  const wipEntries: WipEntry[] = [];
  const wipByStatus: Record<string, number> = {};
  const openInScope = new Set<string>();
  const times = new Map<string, NodeTimes>();
  const factsOf = factsFor(tenant, timelines);
  const coverage = { open: 0, prioritized: 0, assigned: 0, completed: 0, with_commits: 0 };

  for (const id of ids) {
    const record = tenant.index.get(id)!;
    const { phase, times: t } = factsOf(record);
    times.set(id, t);
    totals.nodes++;
    totals[phase]++;
    const byType = (totals.by_type[record.type] ??= { nodes: 0, ...emptyPhases() });
    byType.nodes++;
    byType[phase]++;
    bump(totals.by_status, record.status);

    const createdWeek = bucketOf(t.createdAt);
    if (createdWeek >= 0) weekly[createdWeek]!.created++;
    const doneWeek = phase === 'done' ? bucketOf(t.completedAt) : -1;
    if (doneWeek >= 0) {
      weekly[doneWeek]!.completed++;
      throughput.completed++;
      bump(throughput.by_type, record.type);
      bump(throughput.by_status, record.status);
      const completedAt = t.completedAt!;
      if (t.startedAt !== null) {
        started++;
        startedCycle.push(Math.max(0, completedAt - t.startedAt) / DAY_MS);
      }
      cycle.push(Math.max(0, completedAt - (t.startedAt ?? t.openedAt)) / DAY_MS);
      lead.push(Math.max(0, completedAt - t.createdAt) / DAY_MS);
      coverage.completed++;
      if (hasCommits(record)) coverage.with_commits++;
    }
    if (phase !== 'done') {
      openInScope.add(id);
      coverage.open++;
      if (typeof record.frontmatter.priority === 'string') coverage.prioritized++;
      if (assignedTo(record).length > 0) coverage.assigned++;
    }
    if (phase === 'active') {
      bump(wipByStatus, record.status);
      const since = t.activeSince ?? t.statusSince;
      wipEntries.push({
        id,
        title: record.title,
        type: record.type,
        status: record.status,
        project: record.project,
        since: new Date(since).toISOString(),
        age_days: days(Math.max(0, now - since)),
        assigned: assignedTo(record),
      });
    }
  }
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
    bottlenecks: bottlenecks(tenant, factsOf, openInScope, times, params.top, now),
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
      nodes: ids.length,
    },
    generated_at: new Date(now).toISOString(),
  };
  if (ids.length === 0) payload.project_warning = scopeWarning(tenant, params);
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
  factsOf: (record: NodeRecord) => NodeFacts,
  openInScope: Set<string>,
  times: Map<string, NodeTimes>,
  top: number,
  now: number,
): BottleneckEntry[] {
  const live = (id: string) => {
    const r = tenant.index.get(id);
    return r !== undefined && !isDone(tenant, r);
  };
  const candidates = new Set<string>();
  for (const id of openInScope) {
    // only a node with edges (its own or inbound) can have a blocker
    const record = tenant.index.get(id);
    if (record && record.edges.length === 0 && !tenant.index.hasInbound(id)) continue;
    for (const b of blockersOf(tenant, id)) if (live(b)) candidates.add(b);
  }
  const entries: BottleneckEntry[] = [];
  for (const id of candidates) {
    const record = tenant.index.get(id)!;
    const direct = blockedBy(tenant, id).filter((x) => openInScope.has(x)).length;
    const seen = new Set<string>([id]);
    const queue = [id];
    let transitive = 0;
    while (queue.length > 0 && seen.size < BOTTLENECK_WALK_CAP) {
      const next = queue.shift()!;
      for (const x of blockedBy(tenant, next)) {
        if (seen.has(x) || !live(x)) continue;
        seen.add(x);
        if (openInScope.has(x)) transitive++;
        queue.push(x);
      }
    }
    const t = times.get(id) ?? factsOf(record).times;
    entries.push({
      id,
      title: record.title,
      type: record.type,
      status: record.status,
      phase: factsOf(record).phase,
      project: record.project,
      blocks: direct,
      blocks_transitive: transitive,
      age_days: days(Math.max(0, now - t.createdAt)),
      in_scope: openInScope.has(id),
    });
  }
  entries.sort(
    (a, b) => b.blocks_transitive - a.blocks_transitive || b.blocks - a.blocks || b.age_days - a.age_days || (a.id < b.id ? -1 : 1),
  );
  return entries.slice(0, top);
}
