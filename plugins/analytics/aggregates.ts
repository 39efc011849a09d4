/**
 * The analytics aggregates, kept per tenant from the graph index's commit events (issue 27
 * item 5), so GET /v1/analytics does work proportional to its groups and to what it lists,
 * not a pass over every node in scope:
 *
 * - one entry per node: its phase and times (functions of the graph at one head, never of the
 *   clock) and the few flags the report counts;
 * - the entries grouped by (type, project), each group holding its counts (nodes, phases,
 *   statuses, coverage of open work), its created instants sorted (weekly `created` by
 *   binary search), its done entries sorted by completion (the window's completions are a
 *   suffix), its active entries (WIP) and its open entries with blockers (whose live blockers
 *   are the bottleneck candidates).
 *
 * A commit marks dirty every node within two links of a node it changed (either direction,
 * before and after: everything a phase can read; docs/decisions.md "Analytics keeps per-node
 * facts across commits"); the next read re-files only those. A registry or timeline change,
 * or an index that moved without an event, rebuilds everything once.
 */
import type { CommitEvent, NodeRecord } from '../../kernel/graph-index.js';
import type { Registry } from '../../kernel/registry.js';
import type { Tenant } from '../../kernel/tenant.js';
import { blockedBy, blockersOf, phaseOf, type Phase } from '../core/public.js';
import type { NodeTimes, Timelines } from './timeline.js';

export interface Entry {
  id: string;
  record: NodeRecord;
  /** the node's place in the index's put order (idsOfType/idsInProject iterate in it) */
  seq: number;
  phase: Phase;
  times: NodeTimes;
  prioritized: boolean;
  assigned: boolean;
  withCommits: boolean;
  /** the nodes blocking this one (core's `blockersOf`), for not-done entries; empty otherwise */
  blockers: string[];
  /** the nodes this one blocks (core's `blockedBy`), for the bottleneck walks */
  blocks: string[];
}

/** A bottleneck candidate's figures that do not depend on the clock (report.ts ranks them). */
export interface BottleneckRow {
  id: string;
  direct: number;
  transitive: number;
  createdAt: number;
}

export interface Group {
  type: string;
  project: string | null;
  nodes: number;
  phases: Record<Phase, number>;
  byStatus: Map<string, number>;
  /** coverage of not-done work */
  open: number;
  prioritized: number;
  assigned: number;
  /** createdAt of every entry, ascending (NaN left out: it falls in no week) */
  created: number[];
  /** done entries with a completion instant, ascending by it */
  completed: Entry[];
  active: Set<Entry>;
  /** not-done entries with blockers (bottleneck candidates are their live blockers) */
  blockedOpen: Set<Entry>;
}

/** one shared empty list: most nodes block nothing and wait on nothing (100,000 entries) */
const NONE: string[] = [];
const orNone = (ids: string[]) => (ids.length === 0 ? NONE : ids);

function lowerBound<T>(xs: readonly T[], key: number, keyOf: (x: T) => number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keyOf(xs[mid]!) < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const num = (x: number) => x;
const completedOf = (e: Entry) => e.times.completedAt!;

/** How many of the ascending `xs` lie in [lo, hi). */
export function countBetween(xs: readonly number[], lo: number, hi: number): number {
  return lowerBound(xs, hi, num) - lowerBound(xs, lo, num);
}

/** Index of the first done entry of `group` completed at or after `ms`. */
export function completedFrom(group: Group, ms: number): number {
  return lowerBound(group.completed, ms, completedOf);
}

export class AnalyticsAggregates {
  readonly entries = new Map<string, Entry>();
  /** type -> project (null for none) -> group */
  readonly groups = new Map<string, Map<string | null, Group>>();
  private readonly dirty = new Set<string>();
  /** put-order places of changed nodes not filed yet */
  private readonly pendingSeq = new Map<string, number>();
  private seq = 0;
  private head: string | null = null;
  private built = false;
  /** counters for tests and the bench */
  readonly stats = { rebuilds: 0, refiled: 0 };
  /**
   * Moves whenever an entry that blocks or waits on something (before or after) is re-filed:
   * everything a bottleneck walk reads (blocked lists, done-ness and scope of the nodes in
   * them) belongs to such entries, so the walks' results (`bottleneckRows`) hold until it moves.
   */
  blockingEpoch = 0;
  /** per scope: the bottleneck candidates' clock-free figures, valid for one blockingEpoch */
  readonly bottleneckRows = new Map<string, { epoch: number; rows: BottleneckRow[] }>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly tenant: Tenant,
    readonly registry: Registry,
    readonly timelines: Timelines,
  ) {
    this.unsubscribe = tenant.index.subscribe((event) => {
      try {
        this.onCommit(event);
      } catch {
        this.built = false; // never fail a commit; rebuild on the next read
      }
    });
  }

  close(): void {
    this.unsubscribe();
  }

  private onCommit(event: CommitEvent): void {
    if (!this.built) return;
    const { index } = this.tenant;
    const near = new Set<string>();
    const addNeighbours = (id: string, records: Array<NodeRecord | null | undefined>, out: Set<string>) => {
      for (const r of records) if (r) for (const e of r.edges) out.add(e.to);
      for (const { from } of index.inboundOf(id)) out.add(from);
    };
    for (const c of event.changes) {
      near.add(c.id);
      addNeighbours(c.id, [c.before, c.after], near);
      // the index re-put the node at the end of its put order
      const entry = this.entries.get(c.id);
      if (entry && c.after) entry.seq = ++this.seq;
    }
    const reach = new Set(near);
    for (const id of near) addNeighbours(id, [index.get(id)], reach);
    for (const id of reach) this.dirty.add(id);
    // a changed node not filed yet takes its place in the put order when filed
    for (const c of event.changes) if (c.after && !this.entries.has(c.id)) this.pendingSeq.set(c.id, ++this.seq);
    this.head = event.commit;
  }

  /** Brings every entry up to date with the index (call before reading the groups). */
  refresh(): void {
    if (!this.built || this.head !== this.tenant.index.head) {
      this.rebuild();
      return;
    }
    for (const id of this.dirty) this.refile(id);
    this.dirty.clear();
    this.pendingSeq.clear();
  }

  private rebuild(): void {
    this.stats.rebuilds++;
    this.entries.clear();
    this.groups.clear();
    this.dirty.clear();
    this.pendingSeq.clear();
    this.seq = 0;
    const all: Entry[] = [];
    for (const record of this.tenant.index.nodes.values()) {
      const entry = this.entryOf(record, ++this.seq);
      this.entries.set(record.id, entry);
      all.push(entry);
    }
    // bulk: counts and sets per entry, the sorted lists sorted once
    for (const entry of all) this.add(entry, false);
    for (const byProject of this.groups.values()) {
      for (const g of byProject.values()) {
        g.created.sort((a, b) => a - b);
        g.completed.sort((a, b) => completedOf(a) - completedOf(b));
      }
    }
    this.head = this.tenant.index.head;
    this.built = true;
  }

  private entryOf(record: NodeRecord, seq: number): Entry {
    const fm = record.frontmatter;
    const phase = phaseOf(this.tenant, record);
    return {
      id: record.id,
      record,
      seq,
      phase,
      times: this.timelines.timesOf(record),
      prioritized: typeof fm.priority === 'string',
      assigned: record.edges.some((e) => e.type === 'assigned'),
      withCommits: Array.isArray(fm.commits) && fm.commits.length > 0,
      blockers: phase === 'done' ? NONE : orNone(blockersOf(this.tenant, record.id)),
      blocks: record.edges.length === 0 && !this.tenant.index.hasInbound(record.id) ? NONE : orNone(blockedBy(this.tenant, record.id)),
    };
  }

  private refile(id: string): void {
    this.stats.refiled++;
    const old = this.entries.get(id);
    if (old && (old.blockers.length > 0 || old.blocks.length > 0)) this.blockingEpoch++;
    if (old) {
      this.remove(old);
      this.entries.delete(id);
    }
    const record = this.tenant.index.get(id);
    if (!record) return;
    const entry = this.entryOf(record, old?.seq ?? this.pendingSeq.get(id) ?? ++this.seq);
    if (entry.blockers.length > 0 || entry.blocks.length > 0) this.blockingEpoch++;
    this.entries.set(id, entry);
    this.add(entry, true);
  }

  private groupOf(entry: Entry): Group {
    const { type, project } = entry.record;
    let byProject = this.groups.get(type);
    if (!byProject) this.groups.set(type, (byProject = new Map()));
    let g = byProject.get(project);
    if (!g) {
      g = {
        type,
        project,
        nodes: 0,
        phases: { done: 0, active: 0, blocked: 0, open: 0 },
        byStatus: new Map(),
        open: 0,
        prioritized: 0,
        assigned: 0,
        created: [],
        completed: [],
        active: new Set(),
        blockedOpen: new Set(),
      };
      byProject.set(project, g);
    }
    return g;
  }

  private add(e: Entry, sorted: boolean): void {
    const g = this.groupOf(e);
    this.count(g, e, 1);
    const created = e.times.createdAt;
    if (!Number.isNaN(created)) {
      if (sorted) g.created.splice(lowerBound(g.created, created, num), 0, created);
      else g.created.push(created);
    }
    if (isCompleted(e)) {
      if (sorted) g.completed.splice(lowerBound(g.completed, completedOf(e), completedOf), 0, e);
      else g.completed.push(e);
    }
  }

  private remove(e: Entry): void {
    const g = this.groupOf(e);
    this.count(g, e, -1);
    const created = e.times.createdAt;
    if (!Number.isNaN(created)) g.created.splice(lowerBound(g.created, created, num), 1);
    if (isCompleted(e)) {
      for (let i = lowerBound(g.completed, completedOf(e), completedOf); i < g.completed.length; i++) {
        if (g.completed[i] === e) {
          g.completed.splice(i, 1);
          break;
        }
      }
    }
    if (g.nodes === 0) {
      const byProject = this.groups.get(g.type)!;
      byProject.delete(g.project);
      if (byProject.size === 0) this.groups.delete(g.type);
    }
  }

  private count(g: Group, e: Entry, by: 1 | -1): void {
    const { status } = e.record;
    g.nodes += by;
    g.phases[e.phase] += by;
    const n = (g.byStatus.get(status) ?? 0) + by;
    if (n === 0) g.byStatus.delete(status);
    else g.byStatus.set(status, n);
    if (e.phase !== 'done') {
      g.open += by;
      if (e.prioritized) g.prioritized += by;
      if (e.assigned) g.assigned += by;
      if (e.blockers.length > 0) {
        if (by > 0) g.blockedOpen.add(e);
        else g.blockedOpen.delete(e);
      }
    }
    if (e.phase === 'active') {
      if (by > 0) g.active.add(e);
      else g.active.delete(e);
    }
  }
}

function isCompleted(e: Entry): boolean {
  return e.phase === 'done' && e.times.completedAt !== null && !Number.isNaN(e.times.completedAt);
}

const aggregatesByTenant = new WeakMap<Tenant, AnalyticsAggregates>();

/** The tenant's aggregates, up to date with its index; made afresh when the registry or the timelines object changed. */
export function aggregatesOf(tenant: Tenant, timelines: Timelines): AnalyticsAggregates {
  let agg = aggregatesByTenant.get(tenant);
  if (!agg || agg.registry !== tenant.registry || agg.timelines !== timelines) {
    agg?.close();
    agg = new AnalyticsAggregates(tenant, tenant.registry, timelines);
    aggregatesByTenant.set(tenant, agg);
  }
  agg.refresh();
  return agg;
}

/** Forgets the tenant's aggregates: the next read builds them from the index afresh (tests compare the two). */
export function dropAggregates(tenant: Tenant): void {
  aggregatesByTenant.get(tenant)?.close();
  aggregatesByTenant.delete(tenant);
}
