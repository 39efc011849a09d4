/**
 * The queue's incremental bookkeeping, kept in step with the graph index through its commit
 * events (never by rescanning the graph per request):
 *
 * - the candidates: ids of queue-eligible nodes that are not done (queueable types, plus
 *   `proposed` nodes of self-approval types, which wait for someone's approval), each in a
 *   slot of flat typed columns holding its hot numbers;
 * - the routed sections' open sets (questions, findings, pending captures) and every
 *   question by asker;
 * - a lazily filled cache, beside each candidate, of its time-independent signals (transitive
 *   weighted blocking, open blockers, readiness, created/updated/last-touched instants).
 *
 * A commit reclassifies the nodes it changed and the targets of their edges (before and
 * after: a `resolves` edge retires its target, a `blocks` edge changes what its target
 * waits on) and drops the cached signals of those nodes and of everything up to
 * `blocking_depth` hops upstream of them. Cost per commit: O(changed nodes x their edges +
 * the bounded upstream cone). A schema commit (the registry may change types, terminal
 * statuses or edge weights) rebuilds everything once: O(nodes).
 */
import type { CommitEvent, NodeRecord } from '../../kernel/graph-index.js';
import type { Tenant } from '../../kernel/tenant.js';
import { isDone } from '../core/public.js';
import { externalApprovals } from './approvals.js';
import { policyOf } from './policy.js';
import { perTenant } from '../../kernel/per-tenant.js';

export type Readiness = { value: 'agent' | 'human' | null; reasons: string[] };
export type Suggest = (typeof SUGGEST_CODES)[number];

/**
 * Everything about a candidate that does not depend on the clock, flattened so the
 * per-request pass reads one object per candidate (docs/queue.md for the meaning).
 */
export interface StaticSignals {
  /** the record these signals were computed from (dropped with them on any change to the node) */
  record: NodeRecord;
  type: string;
  project: string | null;
  /** interned keys (QueueBook.keyName) of the type and of the project (`(none)` when null), for cheap counting */
  typeKey: number;
  projectKey: number;
  priority: string | null;
  /** p1 0, p2 1, p3 2, none 3 (tie-break) */
  priorityRank: number;
  readiness: Readiness;
  readinessKey: 'agent' | 'human' | 'untriaged';
  /** a proposal waiting for someone other than its author, or a node a registered approval source names */
  approve: boolean;
  /** the `why` line of the first pending approval from a registered source (approvals.ts), or null */
  approvalWhy: string | null;
  /** the suggestion before the clock is consulted; `triage` may turn into `close` with time */
  suggestBase: Exclude<Suggest, 'close'>;
  /** `triage` and nothing waits on it: becomes `close` once untouched for close_after_days */
  closable: boolean;
  /** the clock-independent part of the score: priority weight + blocking term */
  baseScore: number;
  /** frontmatter `wake` as epoch ms (dormant before it), or null */
  wakeMs: number | null;
  /** sum over open nodes waiting on this one (transitively) of the best product of edge weights on a path to it */
  blocking: number;
  /** the waiting nodes, nearest first (at most 3, for the `why` line) */
  unblocks: string[];
  unblocksCount: number;
  /** open nodes with a `blocks` edge to this one */
  blockers: string[];
  createdMs: number;
  updatedMs: number;
  /** last update of the node or of any node with an edge to it */
  touchedMs: number;
}

const SECTION_TYPES = new Set(['question', 'finding', 'capture']);

function timeOf(value: unknown): number {
  if (typeof value !== 'string') return 0;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : 0;
}

/** A proposed decision, or a proposed node of a self-approval type, waits for someone's approval. */
export function needsApproval(tenant: Tenant, record: NodeRecord): boolean {
  if (record.status !== 'proposed') return false;
  return record.type === 'dec' || Boolean(tenant.registry.nodeTypes.get(record.type)?.self_approval_ban);
}

/** no decisive reason: one shared, frozen answer (kept per candidate, it was 72 bytes a node) */
const UNDECIDED: Readiness = Object.freeze({ value: null, reasons: Object.freeze([]) as unknown as string[] });
/** an empty id list kept per candidate: one shared, frozen array */
const NO_IDS = Object.freeze([]) as unknown as string[];

/** Derived readiness: decisive only with a reason; `agent` is the hand-set override and wins. */
export function readinessOf(tenant: Tenant, record: NodeRecord): Readiness {
  const fm = record.frontmatter;
  if (fm.readiness === 'agent') {
    return {
      value: 'agent',
      reasons: [typeof fm.readiness_by === 'string' ? `marked agent-ready by ${fm.readiness_by}` : 'marked agent-ready'],
    };
  }
  const reasons: string[] = [];
  if (needsApproval(tenant, record)) reasons.push('a proposal needs a person other than its author to approve it');
  for (const approval of externalApprovals(tenant, record)) reasons.push(approval.reason);
  for (const e of record.edges) if (e.type === 'review-requested') reasons.push(`review requested from ${e.to}`);
  if (record.status === 'review') reasons.push('in review: a person decides');
  return reasons.length > 0 ? { value: 'human', reasons } : UNDECIDED;
}

function wakeOf(record: NodeRecord): number | null {
  const wake = record.frontmatter.wake;
  if (typeof wake !== 'string') return null;
  const ms = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(wake) ? `${wake}T00:00:00Z` : wake);
  return Number.isFinite(ms) ? ms : null;
}

export function askerOf(record: NodeRecord): string | null {
  const asker = record.frontmatter.asker ?? record.frontmatter.author;
  return typeof asker === 'string' ? asker : null;
}

export const READINESS_CODES = ['agent', 'human', 'untriaged'] as const;
/** suggestion codes; `close` (3) is only ever derived from `triage` with the clock */
export const SUGGEST_CODES = ['do', 'blocked', 'triage', 'close', 'approve'] as const;

/**
 * The hot per-candidate numbers as flat typed columns indexed by slot (struct of arrays), so
 * the per-request pass reads contiguous memory instead of chasing one object per node: at
 * 50,000 nodes that is the difference between linear and cache-miss-bound growth.
 */
export class CandidateColumns {
  capacity = 0;
  baseScore = new Float64Array(0);
  touchedMs = new Float64Array(0);
  updatedMs = new Float64Array(0);
  createdMs = new Float64Array(0);
  /** NaN when the node has no wake date */
  wakeMs = new Float64Array(0);
  typeKey = new Int32Array(0);
  projectKey = new Int32Array(0);
  readinessCode = new Uint8Array(0);
  suggestCode = new Uint8Array(0);
  priorityRank = new Uint8Array(0);
  closable = new Uint8Array(0);

  constructor(capacity: number) {
    this.grow(capacity);
  }

  grow(min: number): void {
    const capacity = Math.max(min, this.capacity * 2, 1024);
    const widen = <T extends Float64Array | Int32Array | Uint8Array>(old: T, make: (n: number) => T): T => {
      const next = make(capacity);
      next.set(old);
      return next;
    };
    this.baseScore = widen(this.baseScore, (n) => new Float64Array(n));
    this.touchedMs = widen(this.touchedMs, (n) => new Float64Array(n));
    this.updatedMs = widen(this.updatedMs, (n) => new Float64Array(n));
    this.createdMs = widen(this.createdMs, (n) => new Float64Array(n));
    this.wakeMs = widen(this.wakeMs, (n) => new Float64Array(n));
    this.typeKey = widen(this.typeKey, (n) => new Int32Array(n));
    this.projectKey = widen(this.projectKey, (n) => new Int32Array(n));
    this.readinessCode = widen(this.readinessCode, (n) => new Uint8Array(n));
    this.suggestCode = widen(this.suggestCode, (n) => new Uint8Array(n));
    this.priorityRank = widen(this.priorityRank, (n) => new Uint8Array(n));
    this.closable = widen(this.closable, (n) => new Uint8Array(n));
    this.capacity = capacity;
  }

  fill(slot: number, s: StaticSignals): void {
    this.baseScore[slot] = s.baseScore;
    this.touchedMs[slot] = s.touchedMs;
    this.updatedMs[slot] = s.updatedMs;
    this.createdMs[slot] = s.createdMs;
    this.wakeMs[slot] = s.wakeMs ?? Number.NaN;
    this.typeKey[slot] = s.typeKey;
    this.projectKey[slot] = s.projectKey;
    this.readinessCode[slot] = READINESS_CODES.indexOf(s.readinessKey);
    this.suggestCode[slot] = SUGGEST_CODES.indexOf(s.suggestBase);
    this.priorityRank[slot] = s.priorityRank;
    this.closable[slot] = s.closable ? 1 : 0;
  }
}

export class QueueBook {
  /**
   * Candidates (open, queue-eligible nodes) live in slots: `slotIds[slot]` is the node id
   * (null for a free slot), `slotStatics[slot]` its cached signals (undefined until computed
   * or after a drop) and `columns` the same signals' hot numbers.
   */
  private readonly slotOf = new Map<string, number>();
  readonly slotIds: Array<string | null> = [];
  readonly slotStatics: Array<StaticSignals | undefined> = [];
  private readonly freeSlots: number[] = [];
  readonly columns = new CandidateColumns(1024);
  readonly openQuestions = new Set<string>();
  readonly openFindings = new Set<string>();
  readonly pendingCaptures = new Set<string>();
  readonly questionsByAsker = new Map<string, Set<string>>();
  private readonly askerOfQuestion = new Map<string, string>();
  private readonly keys = new Map<string, number>();
  /** names of interned keys, by key */
  readonly keyNames: string[] = [];
  /** slots added, freed or whose signals were dropped since the ranked index (rank.ts) last looked */
  readonly dirtySlots = new Set<number>();
  /** counters for tests and the bench: how much work the bookkeeping did */
  readonly stats = { rebuilds: 0, reclassified: 0, staticsComputed: 0, staticsDropped: 0 };

  constructor(private readonly tenant: Tenant) {
    this.rebuild();
    tenant.index.subscribe((event) => this.onCommit(event));
  }

  /** O(nodes): at open and after a schema change. */
  rebuild(): void {
    this.stats.rebuilds++;
    this.slotOf.clear();
    this.slotIds.length = 0;
    this.slotStatics.length = 0;
    this.freeSlots.length = 0;
    this.dirtySlots.clear();
    this.openQuestions.clear();
    this.openFindings.clear();
    this.pendingCaptures.clear();
    this.questionsByAsker.clear();
    this.askerOfQuestion.clear();
    for (const record of this.tenant.index.nodes.values()) this.classify(record.id);
  }

  isCandidateType(record: NodeRecord): boolean {
    const def = this.tenant.registry.nodeTypes.get(record.type);
    if (!def) return false;
    if (def.queueable) return true;
    return (def.self_approval_ban && record.status === 'proposed') || externalApprovals(this.tenant, record).length > 0;
  }

  get candidateCount(): number {
    return this.slotOf.size;
  }

  isCandidate(id: string): boolean {
    return this.slotOf.has(id);
  }

  slotFor(id: string): number | undefined {
    return this.slotOf.get(id);
  }

  private addCandidate(id: string): void {
    let slot = this.slotOf.get(id);
    if (slot === undefined) {
      slot = this.freeSlots.pop() ?? this.slotIds.length;
      if (slot === this.slotIds.length) {
        this.slotIds.push(null);
        this.slotStatics.push(undefined);
        if (slot >= this.columns.capacity) this.columns.grow(slot + 1);
      }
      this.slotOf.set(id, slot);
      this.slotIds[slot] = id;
    }
    this.slotStatics[slot] = undefined;
    this.dirtySlots.add(slot);
  }

  private removeCandidate(id: string): void {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return;
    this.slotOf.delete(id);
    this.slotIds[slot] = null;
    this.slotStatics[slot] = undefined;
    this.freeSlots.push(slot);
    this.dirtySlots.add(slot);
  }

  private classify(id: string): void {
    this.stats.reclassified++;
    this.openQuestions.delete(id);
    this.openFindings.delete(id);
    this.pendingCaptures.delete(id);
    const oldAsker = this.askerOfQuestion.get(id);
    if (oldAsker !== undefined) {
      this.questionsByAsker.get(oldAsker)?.delete(id);
      this.askerOfQuestion.delete(id);
    }
    const record = this.tenant.index.get(id);
    const eligible = record !== undefined && this.isCandidateType(record);
    if (!record || (!eligible && !SECTION_TYPES.has(record.type))) {
      this.removeCandidate(id);
      return;
    }
    const done = isDone(this.tenant, record);
    if (eligible && !done) this.addCandidate(id);
    else this.removeCandidate(id);
    if (record.type === 'question') {
      if (!done) this.openQuestions.add(id);
      const asker = askerOf(record);
      if (asker) {
        let set = this.questionsByAsker.get(asker);
        if (!set) this.questionsByAsker.set(asker, (set = new Set()));
        set.add(id);
        this.askerOfQuestion.set(id, asker);
      }
    } else if (record.type === 'finding' && !done) this.openFindings.add(id);
    else if (record.type === 'capture' && record.status === 'pending' && !done) this.pendingCaptures.add(id);
  }

  private onCommit(event: CommitEvent): void {
    if (event.changes.some((c) => c.before?.type === 'schema' || c.after?.type === 'schema')) {
      this.rebuild();
      return;
    }
    const seeds = new Set<string>();
    for (const change of event.changes) {
      seeds.add(change.id);
      for (const record of [change.before, change.after]) {
        if (!record) continue;
        for (const edge of record.edges) seeds.add(edge.to);
      }
    }
    for (const id of seeds) this.classify(id);
    // A seed whose done-ness changed changes the open-blocker list of what it blocks.
    const dropped = new Set(seeds);
    for (const id of seeds) {
      for (const edge of this.tenant.index.get(id)?.edges ?? []) if (edge.type === 'blocks') dropped.add(edge.to);
    }
    this.dropUpstream(dropped);
  }

  /** Drops cached signals of `seeds` and of every node up to blocking_depth hops upstream of them. */
  private dropUpstream(seeds: Set<string>): void {
    const policy = policyOf(this.tenant.registry);
    const { index } = this.tenant;
    const seen = new Set<string>(seeds);
    let frontier = [...seeds];
    for (let depth = 0; depth <= policy.blocking_depth && frontier.length > 0; depth++) {
      const next: string[] = [];
      for (const id of frontier) {
        const slot = this.slotOf.get(id);
        if (slot !== undefined && this.slotStatics[slot] !== undefined) {
          this.slotStatics[slot] = undefined;
          this.stats.staticsDropped++;
          this.dirtySlots.add(slot);
        }
        for (const e of index.inboundOf(id, policy.blocking_edges)) {
          if (!seen.has(e.from)) {
            seen.add(e.from);
            next.push(e.from);
          }
        }
      }
      frontier = next;
    }
  }

  /** Done for queue purposes; candidates and sections are known open, anything else is asked. */
  private doneById(id: string): boolean {
    if (this.slotOf.has(id)) return false;
    const record = this.tenant.index.get(id);
    return !record || isDone(this.tenant, record);
  }

  /** A small integer standing for a type or project name (never forgotten: there are few). */
  intern(name: string): number {
    let key = this.keys.get(name);
    if (key === undefined) {
      key = this.keyNames.length;
      this.keys.set(name, key);
      this.keyNames.push(name);
    }
    return key;
  }

  /** Signals of the candidate in `slot`, computed (and its columns filled) when not cached. */
  ensureSlot(slot: number): StaticSignals {
    const cached = this.slotStatics[slot];
    if (cached) return cached;
    const record = this.tenant.index.get(this.slotIds[slot]!)!;
    const signals = this.computeStatic(record);
    this.stats.staticsComputed++;
    this.slotStatics[slot] = signals;
    this.columns.fill(slot, signals);
    return signals;
  }

  /** Time-independent signals of an existing node (cached for candidates; undefined when it is gone). */
  staticOf(id: string): StaticSignals | undefined {
    const slot = this.slotOf.get(id);
    if (slot !== undefined) return this.ensureSlot(slot);
    const record = this.tenant.index.get(id);
    if (!record) return undefined;
    this.stats.staticsComputed++;
    return this.computeStatic(record);
  }

  private computeStatic(record: NodeRecord): StaticSignals {
    const { index, registry } = this.tenant;
    const policy = policyOf(registry);
    const id = record.id;
    const blockers = [
      ...new Set(
        index
          .inboundOf(id, ['blocks'])
          .map((e) => e.from)
          .filter((from) => from !== id && index.has(from) && !this.doneById(from)),
      ),
    ].sort();
    // Best-path relaxation, bounded in depth and in nodes reached (docs/queue.md "blocking").
    const best = new Map<string, number>();
    const order: string[] = [];
    let frontier: Array<[string, number]> = [[id, 1]];
    for (let depth = 1; depth <= policy.blocking_depth && frontier.length > 0; depth++) {
      const next: Array<[string, number]> = [];
      for (const [nodeId, weight] of frontier) {
        const node = index.get(nodeId);
        if (!node) continue;
        for (const edge of node.edges) {
          if (edge.to === id || !policy.blocking_edges.includes(edge.type)) continue;
          const w = weight * registry.edgeWeight(edge.type);
          const known = best.get(edge.to);
          if (known !== undefined && known >= w) continue;
          if (known === undefined) {
            if (best.size >= policy.blocking_max_nodes || !index.has(edge.to) || this.doneById(edge.to)) continue;
            order.push(edge.to);
          }
          best.set(edge.to, w);
          next.push([edge.to, w]);
        }
      }
      frontier = next;
    }
    let blocking = 0;
    for (const w of best.values()) blocking += w;
    const createdMs = timeOf(record.frontmatter.created);
    const updatedMs = timeOf(record.frontmatter.updated) || createdMs;
    let touchedMs = updatedMs;
    for (const e of index.inboundOf(id)) {
      const from = index.get(e.from);
      if (from) touchedMs = Math.max(touchedMs, timeOf(from.frontmatter.updated));
    }
    const readiness = readinessOf(this.tenant, record);
    const external = externalApprovals(this.tenant, record);
    const approve = needsApproval(this.tenant, record) || external.length > 0;
    const rawPriority = record.frontmatter.priority;
    const priority = rawPriority === 'p1' || rawPriority === 'p2' || rawPriority === 'p3' ? rawPriority : null;
    const handReady = record.frontmatter.readiness === 'agent';
    const suggestBase: StaticSignals['suggestBase'] = approve
      ? 'approve'
      : record.status === 'blocked' || blockers.length > 0
        ? 'blocked'
        : !priority && !handReady
          ? 'triage'
          : 'do';
    const weights = policy.weights;
    return {
      record,
      type: record.type,
      project: record.project,
      typeKey: this.intern(record.type),
      projectKey: this.intern(record.project ?? '(none)'),
      priority,
      priorityRank: priority ? Number(priority[1]) - 1 : 3,
      readiness,
      readinessKey: readiness.value ?? 'untriaged',
      approve,
      approvalWhy:
        external.length === 0 ? null : external.length === 1 ? external[0]!.why : `${external[0]!.why} (+${external.length - 1} more)`,
      suggestBase,
      closable: suggestBase === 'triage' && order.length === 0 && updatedMs > 0,
      baseScore: (priority ? weights.priority[priority] : weights.priority.none) + weights.blocking * Math.log2(1 + blocking),
      wakeMs: wakeOf(record),
      blocking,
      unblocks: order.length > 0 ? order.slice(0, 3) : NO_IDS,
      unblocksCount: order.length,
      blockers: blockers.length > 0 ? blockers : NO_IDS,
      createdMs,
      updatedMs,
      touchedMs,
    };
  }
}

export const bookOf: (tenant: Tenant) => QueueBook = perTenant((tenant) => new QueueBook(tenant));
