/**
 * GET /v1/queue (docs/spec.md "GET /v1/queue", rules 1-6) and its tool twins `show_queue` (same
 * JSON) and `render_queue` (the same queue as markdown). The ranking policy is documented
 * in docs/queue.md and echoed as `policy`.
 *
 * Per request the work is one pass over the candidate set C kept by the book (open,
 * queue-eligible nodes), narrowed first by project/assignee through the index's
 * by-project and inbound-edge maps, plus O(C log k) to pick the page ending at k. Signals
 * that do not depend on the clock come from the book's cache. Nothing here walks all nodes
 * of the graph.
 */
import { errors } from '../../kernel/errors.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import { RawResponse, type OpContext } from '../../kernel/plugin.js';
import { queryList } from '../../kernel/validate.js';
import { leasesOf, type StoredLease } from '../leases/public.js';
import type { Static } from '../../kernel/operation.js';
import { bookOf, READINESS_CODES, SUGGEST_CODES, type QueueBook, type StaticSignals, type Suggest } from './book.js';
import { mutedIds } from './mutes.js';
import { policyOf, type QueuePolicy } from './policy.js';
import { renderQueueMarkdown } from './render.js';
import type { QueueEnvelope, QueueFilters, QueueItem, SectionEntry, ShowQueueInput } from './schemas.js';
import { isDone, resolveScope, type ProjectScope } from '../core/public.js';

const READINESS_FILTERS = ['agent', 'human', 'untriaged'] as const;
type ReadinessFilter = (typeof READINESS_FILTERS)[number];
const SECTION_CAP = 50;
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The filters as the schema (schemas.ts) admits them: slugs checked; lists as a comma-separated
 * string or a list; `limit`/`offset` an integer or its digits (the forms the tools always took).
 */
export type QueueInput = Static<typeof QueueFilters>;
type QueueItem = Static<typeof QueueItem>;
type SectionEntry = Static<typeof SectionEntry>;
/** The envelope as built: the policy is always there until show_queue leaves it out. */
type QueueEnvelope = Static<typeof QueueEnvelope> & { policy: QueuePolicy };

interface QueueQuery {
  project: string | null;
  assignee: string | null;
  types: string[];
  excludeTypes: string[];
  readiness: ReadinessFilter[];
  limit: number;
  offset: number;
}

// ---------------------------------------------------------------- input

/** A comma-separated string or a list of them, flattened. */
function list(value: string | string[] | undefined): string[] {
  return queryList(value);
}

/** An integer (or its digits), clamped: docs/spec.md rule 1 clamps, never rejects. */
function clamped(value: number | string | undefined, def: number, min: number, max: number): number {
  if (value === undefined) return def;
  return Math.min(max, Math.max(min, Number(value)));
}

function parseQuery(ctx: OpContext, input: QueueInput): QueueQuery {
  const project = input.project;
  const assignee = input.assignee;
  const types = list(input.type);
  const excludeTypes = list(input.exclude_type);
  const unknownTypes = [...types, ...excludeTypes].filter((t) => !ctx.tenant.registry.nodeTypes.has(t));
  if (unknownTypes.length > 0) {
    throw errors.validation(`unknown node type(s): ${[...new Set(unknownTypes)].join(', ')}`, [
      { field: 'type', message: 'not a type in the registry (GET /v1/schema)', values: [...new Set(unknownTypes)] },
    ]);
  }
  // Checked here, not by the schema: the string and the list form must answer the same 422.
  const readiness = list(input.readiness);
  const badReadiness = readiness.filter((r) => !(READINESS_FILTERS as readonly string[]).includes(r));
  if (badReadiness.length > 0) {
    throw errors.validation(`unknown readiness filter value(s): ${badReadiness.join(', ')}`, [
      { field: 'readiness', message: 'unknown value', values: badReadiness, allowed: [...READINESS_FILTERS] },
    ]);
  }
  return {
    project: project || null,
    assignee: assignee || null,
    types,
    excludeTypes,
    readiness: readiness as ReadinessFilter[],
    limit: clamped(input.limit, 20, 1, 100),
    offset: clamped(input.offset, 0, 0, Number.MAX_SAFE_INTEGER),
  };
}

// ---------------------------------------------------------------- classification

function strings(value: unknown): string[] {
  if (typeof value === 'string') return value ? [value] : [];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string' && v !== '') : [];
}

const clamp01 = (x: number) => (x <= 0 ? 0 : x >= 1 ? 1 : x);
const round2 = (x: number) => Math.round(x * 100) / 100;

function daysAgo(nowMs: number, ms: number): string {
  if (!ms) return 'at an unknown time';
  const d = Math.floor((nowMs - ms) / DAY_MS);
  return d <= 0 ? 'today' : d === 1 ? '1 day ago' : `${d} days ago`;
}

function idList(ids: string[], total: number): string {
  const shown = ids.join(', ');
  return total > ids.length ? `${shown}, +${total - ids.length} more` : shown;
}

function heatOf(touchedMs: number, nowMs: number, windowDays: number): number {
  return touchedMs ? clamp01(1 - (nowMs - touchedMs) / (windowDays * DAY_MS)) : 0;
}

function stalenessOf(updatedMs: number, nowMs: number, days: number): number {
  return updatedMs ? clamp01((nowMs - updatedMs) / (days * DAY_MS)) : 0;
}

function ageOf(createdMs: number, nowMs: number, capDays: number): number {
  return createdMs ? clamp01((nowMs - createdMs) / (capDays * DAY_MS)) : 0;
}

const CLOSE = SUGGEST_CODES.indexOf('close');

/** approve > blocked > close > triage > do (docs/queue.md); only `close` needs the clock. */
function suggestFor(policy: QueuePolicy, s: StaticSignals, nowMs: number): Suggest {
  return s.closable && nowMs - s.updatedMs >= policy.close_after_days * DAY_MS ? 'close' : s.suggestBase;
}

function whyFor(
  s: StaticSignals,
  suggest: Suggest,
  heat: number,
  lease: StoredLease | undefined,
  me: string | null,
  nowMs: number,
): string {
  const record = s.record;
  const priority = typeof record.frontmatter.priority === 'string' ? record.frontmatter.priority : null;
  const unblocks =
    s.unblocksCount > 0
      ? `unblocks ${s.unblocksCount} open item${s.unblocksCount === 1 ? '' : 's'} (${idList(s.unblocks, s.unblocksCount)})`
      : '';
  let line: string;
  switch (suggest) {
    case 'approve': {
      if (s.approvalWhy) {
        line = s.approvalWhy;
        break;
      }
      const author = typeof record.frontmatter.author === 'string' ? record.frontmatter.author : 'someone';
      line = `Proposed by ${author} ${daysAgo(nowMs, s.createdMs)}; approve or reject it (not its author)`;
      break;
    }
    case 'blocked':
      line =
        s.blockers.length > 0
          ? `Waiting on ${idList(s.blockers.slice(0, 3), s.blockers.length)}; push that first or drop the dependency`
          : 'Marked blocked with no open blocker recorded; add a blocks edge naming it or move this on';
      break;
    case 'close':
      line = `Untouched since ${daysAgo(nowMs, s.updatedMs)} and nothing waits on it; close it or set a priority`;
      break;
    case 'triage':
      line = `No priority yet${unblocks ? `, ${unblocks}` : ''}; set p1-p3 or mark it agent-ready`;
      break;
    default:
      line =
        [priority ?? 'agent-ready', unblocks, heat >= 0.5 ? 'active this week' : ''].filter(Boolean).join(', ') + '; claim it and start';
  }
  if (!lease) return line;
  const until = new Date(lease.expires_ms).toISOString();
  if (lease.by === me)
    return lease.state === 'reserved' ? `Reserved by you until ${until}. ${line}` : `You hold it until ${until}. ${line}`;
  return `Claimed by ${lease.by} until ${until}. ${line}`;
}

// ---------------------------------------------------------------- sections

function sectionEntry(record: NodeRecord): SectionEntry {
  const fm = record.frontmatter;
  return {
    id: record.id,
    type: record.type,
    title: record.title,
    status: record.status,
    project: record.project,
    author: typeof fm.author === 'string' ? fm.author : null,
    created: typeof fm.created === 'string' ? fm.created : null,
    routed_to: strings(fm.routed_to),
  };
}

function byAge(a: SectionEntry, b: SectionEntry): number {
  const ca = a.created ?? '';
  const cb = b.created ?? '';
  if (ca !== cb) return ca < cb ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function mentions(record: NodeRecord, person: string): boolean {
  return strings(record.frontmatter.mentions).includes(person) || record.edges.some((e) => e.type === 'mentions' && e.to === person);
}

/** People carrying a node: its `assigned` targets and its stewards. */
function carriersOf(ctx: OpContext, id: string): string[] {
  const record = ctx.tenant.index.get(id);
  const assigned = record ? record.edges.filter((e) => e.type === 'assigned').map((e) => e.to) : [];
  const stewards = ctx.tenant.index.inboundOf(id, ['stewards']).map((e) => e.from);
  return [...assigned, ...stewards];
}

interface Sections {
  questions: SectionEntry[];
  asked: SectionEntry[];
  findings: SectionEntry[];
  pending: SectionEntry[];
  reviews: SectionEntry[];
  totals: Record<string, number>;
}

function sectionsFor(
  ctx: OpContext,
  book: QueueBook,
  me: string | null,
  scope: ProjectScope | null,
  policy: QueuePolicy,
  nowMs: number,
): Sections {
  const empty: Sections = {
    questions: [],
    asked: [],
    findings: [],
    pending: [],
    reviews: [],
    totals: { questions: 0, asked: 0, findings: 0, pending: 0, reviews: 0 },
  };
  if (!me) return empty;
  const { index } = ctx.tenant;
  const inScope = (r: NodeRecord) => !scope || (r.project !== null && scope.values.has(r.project));
  const collect = (ids: Iterable<string>, keep: (r: NodeRecord) => boolean) => {
    const out: SectionEntry[] = [];
    for (const id of ids) {
      const r = index.get(id);
      if (r && inScope(r) && keep(r)) out.push(sectionEntry(r));
    }
    return out.sort(byAge);
  };
  const routedOrUnrouted = (r: NodeRecord) => {
    const routed = strings(r.frontmatter.routed_to);
    return routed.length === 0 || routed.includes(me) || mentions(r, me);
  };
  const questions = collect(book.openQuestions, routedOrUnrouted);
  const pending = collect(book.pendingCaptures, routedOrUnrouted);
  const findings = collect(book.openFindings, (r) => {
    if (strings(r.frontmatter.routed_to).length > 0 || mentions(r, me)) return routedOrUnrouted(r);
    const carriers = r.edges.filter((e) => e.type === 'concerns').flatMap((e) => carriersOf(ctx, e.to));
    return carriers.length === 0 || carriers.includes(me);
  });
  const recent = nowMs - policy.heat_window_days * DAY_MS;
  const asked = collect(book.questionsByAsker.get(me) ?? [], (r) => {
    if (book.openQuestions.has(r.id)) return true;
    const updated = Date.parse(String(r.frontmatter.updated ?? ''));
    return Number.isFinite(updated) && updated >= recent;
  }).map((entry) => {
    const answers = index
      .inboundOf(entry.id, ['answers'])
      .map((e) => e.from)
      .filter((id) => index.has(id))
      .sort();
    return answers.length > 0 ? { ...entry, answered_by: answers } : entry;
  });
  const reviewIds = new Set(index.inboundOf(me, ['review-requested']).map((e) => e.from));
  const reviews = collect(reviewIds, (r) => !isDone(ctx.tenant, r));
  const totals = {
    questions: questions.length,
    asked: asked.length,
    findings: findings.length,
    pending: pending.length,
    reviews: reviews.length,
  };
  return {
    questions: questions.slice(0, SECTION_CAP),
    asked: asked.slice(0, SECTION_CAP),
    findings: findings.slice(0, SECTION_CAP),
    pending: pending.slice(0, SECTION_CAP),
    reviews: reviews.slice(0, SECTION_CAP),
    totals,
  };
}

// ---------------------------------------------------------------- the queue

/** counts[key]++, growing the array when computing a node's signals interned a new key */
function bump(counts: number[], key: number): void {
  while (counts.length <= key) counts.push(0);
  counts[key]!++;
}

function sortedCounts(map: Map<string, number>): Record<string, number> {
  return Object.fromEntries([...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The pool before scoring: candidates narrowed by project scope and assignee through index maps (null: all candidates). */
function poolOf(ctx: OpContext, book: QueueBook, scope: ProjectScope | null, carried: Set<string> | null): Set<string> | null {
  const { index } = ctx.tenant;
  let pool: Set<string> | null = null;
  if (scope) {
    pool = new Set();
    for (const value of scope.values) for (const id of index.idsInProject(value)) if (book.isCandidate(id)) pool.add(id);
  }
  if (carried) {
    const narrowed = new Set<string>();
    for (const id of carried) if (book.isCandidate(id) && (!pool || pool.has(id))) narrowed.add(id);
    pool = narrowed;
  }
  return pool;
}

function carriedBy(ctx: OpContext, person: string): Set<string> {
  const { index } = ctx.tenant;
  const ids = new Set(index.inboundOf(person, ['assigned']).map((e) => e.from));
  for (const e of index.get(person)?.edges ?? []) if (e.type === 'stewards') ids.add(e.to);
  return ids;
}

/**
 * The first `k` items in `cmp` order. A page near the top (the common case) costs
 * O(n log k) with a bounded heap instead of sorting the whole candidate set.
 */
export function selectTop(items: Int32Array, k: number, cmp: (a: number, b: number) => number): number[] {
  if (k <= 0 || items.length === 0) return [];
  if (k * 4 >= items.length) return Array.from(items.sort(cmp).subarray(0, k));
  // max-heap on cmp: the root is the worst of the best k seen so far
  const heap: number[] = [];
  const worse = (i: number, j: number) => cmp(heap[i]!, heap[j]!) > 0;
  const swap = (i: number, j: number) => {
    const x = heap[i]!;
    heap[i] = heap[j]!;
    heap[j] = x;
  };
  for (const item of items) {
    if (heap.length < k) {
      heap.push(item);
      for (let i = heap.length - 1; i > 0;) {
        const parent = (i - 1) >> 1;
        if (!worse(i, parent)) break;
        swap(i, parent);
        i = parent;
      }
    } else if (cmp(item, heap[0]!) < 0) {
      heap[0] = item;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && worse(l, m)) m = l;
        if (r < heap.length && worse(r, m)) m = r;
        if (m === i) break;
        swap(i, m);
        i = m;
      }
    }
  }
  return heap.sort(cmp);
}

/**
 * `show_queue`: the ranked queue. The ~500-byte ranking policy is the same on every call: REST
 * keeps it unless include_policy=false, the tool sends it when asked.
 */
export async function showQueue(ctx: OpContext, input: Static<typeof ShowQueueInput>): Promise<Static<typeof QueueEnvelope>> {
  const { include_policy, ...filters } = input;
  const envelope = queueOf(ctx, filters);
  if (include_policy ?? ctx.via === 'rest') return envelope;
  const { policy: _policy, ...lean } = envelope;
  return lean;
}

/** The queue envelope for these filters (policy included). */
function queueOf(ctx: OpContext, input: QueueInput): QueueEnvelope {
  const query = parseQuery(ctx, input);
  const { tenant } = ctx;
  const book = bookOf(tenant);
  const policy = policyOf(tenant.registry);
  const nowMs = ctx.services.clock.now();
  const me = ctx.actor.bound ? ctx.actor.personId : null;
  const scope = query.project ? resolveScope(tenant, query.project) : null;
  let carried: Set<string> | null = null;
  if (query.assignee) {
    const person = query.assignee === 'me' ? me : query.assignee;
    carried = person ? carriedBy(ctx, person) : new Set();
  }
  const leases = leasesOf(tenant);
  const muted = mutedIds(tenant, me, nowMs);
  const typeSet = query.types.length > 0 ? new Set(query.types) : null;
  const excluded = new Set(query.excludeTypes);
  const readinessSet = query.readiness.length > 0 ? new Set(query.readiness) : null;

  let mutedCount = 0;
  let dormantCount = 0;
  let reservedCount = 0;
  // One pass over the filtered candidates, reading the book's flat columns; per candidate
  // only numbers are written, into preallocated typed arrays (no objects, no hashing).
  // This function never awaits, so no commit can move a slot while it runs.
  const { columns: cols, slotIds } = book;
  const pool = poolOf(ctx, book, scope, carried);
  const capacity = pool ? pool.size : book.candidateCount;
  const picked = new Int32Array(capacity);
  const scores = new Float64Array(capacity);
  const tiers = new Uint8Array(capacity);
  let total = 0;
  // Live leases, marked by slot in one pass over the lease table (O(leases)), so the
  // candidate pass tests a byte instead of looking every id up.
  const leaseBySlot = new Map<number, StoredLease>();
  const leaseMark = leases.records.size > 0 ? new Uint8Array(slotIds.length) : null;
  if (leaseMark) {
    for (const lease of leases.records.values()) {
      const slot = lease.expires_ms > nowMs ? book.slotFor(lease.node_id) : undefined;
      if (slot === undefined) continue;
      leaseMark[slot] = 1;
      leaseBySlot.set(slot, lease);
    }
  }
  const typeCounts: number[] = [];
  const projectCounts: number[] = [];
  const suggestCounts = new Int32Array(SUGGEST_CODES.length);
  const readinessCounts = new Int32Array(READINESS_CODES.length);
  const typeVerdicts: number[] = [];
  const typeAllowed = (key: number): boolean => {
    let verdict = typeVerdicts[key];
    if (verdict === undefined) {
      const name = book.keyNames[key]!;
      verdict = typeVerdicts[key] = excluded.has(name) || (typeSet !== null && !typeSet.has(name)) ? 0 : 1;
    }
    return verdict === 1;
  };
  let readinessMask = 0;
  READINESS_CODES.forEach((code, i) => {
    if (!readinessSet || readinessSet.has(code)) readinessMask |= 1 << i;
  });
  const { heat_window_days: heatDays, staleness_days: staleDays, age_cap_days: ageDays, weights: w } = policy;
  const closeMs = policy.close_after_days * DAY_MS;
  const consider = (slot: number) => {
    if (book.slotStatics[slot] === undefined) book.ensureSlot(slot);
    if (!typeAllowed(cols.typeKey[slot]!)) return;
    const readiness = cols.readinessCode[slot]!;
    if ((readinessMask & (1 << readiness)) === 0) return;
    if (cols.wakeMs[slot]! > nowMs) {
      dormantCount++;
      return;
    }
    if (muted.size > 0 && muted.has(slotIds[slot]!)) {
      mutedCount++;
      return;
    }
    const lease = leaseMark && leaseMark[slot] ? leaseBySlot.get(slot) : undefined;
    if (lease && lease.state === 'reserved' && lease.by !== me) {
      reservedCount++;
      return;
    }
    const updated = cols.updatedMs[slot]!;
    const clockTerms =
      w.heat * heatOf(cols.touchedMs[slot]!, nowMs, heatDays) +
      w.staleness * stalenessOf(updated, nowMs, staleDays) +
      w.age * ageOf(cols.createdMs[slot]!, nowMs, ageDays);
    const heldByOther = lease !== undefined && lease.by !== me;
    scores[total] = round2(cols.baseScore[slot]! + clockTerms - (heldByOther ? policy.leased_penalty : 0));
    tiers[total] = lease && lease.state === 'reserved' && lease.by === me ? 0 : 1;
    picked[total] = slot;
    total++;
    bump(typeCounts, cols.typeKey[slot]!);
    bump(projectCounts, cols.projectKey[slot]!);
    suggestCounts[cols.closable[slot] && updated > 0 && nowMs - updated >= closeMs ? CLOSE : cols.suggestCode[slot]!]!++;
    readinessCounts[readiness]!++;
  };
  if (pool) {
    for (const id of pool) {
      const slot = book.slotFor(id);
      if (slot !== undefined) consider(slot);
    }
  } else {
    for (let slot = 0; slot < slotIds.length; slot++) if (slotIds[slot] !== null) consider(slot);
  }
  const countsByType = new Map<string, number>();
  const countsByProject = new Map<string, number>();
  typeCounts.forEach((n, key) => n > 0 && countsByType.set(book.keyNames[key]!, n));
  projectCounts.forEach((n, key) => n > 0 && countsByProject.set(book.keyNames[key]!, n));
  const countsBySuggest = Object.fromEntries(SUGGEST_CODES.map((name) => [name, suggestCounts[SUGGEST_CODES.indexOf(name)]!])) as Record<
    Suggest,
    number
  >;
  const countsByReadiness = Object.fromEntries(READINESS_CODES.map((name, i) => [name, readinessCounts[i]!])) as Record<
    ReadinessFilter,
    number
  >;

  // Ranked order: own reservations first, then score, priority, age (oldest first), id.
  const byRank = (i: number, j: number) => {
    const a = picked[i]!;
    const b = picked[j]!;
    const idA = slotIds[a]!;
    const idB = slotIds[b]!;
    return (
      tiers[i]! - tiers[j]! ||
      scores[j]! - scores[i]! ||
      cols.priorityRank[a]! - cols.priorityRank[b]! ||
      cols.createdMs[a]! - cols.createdMs[b]! ||
      (idA < idB ? -1 : idA > idB ? 1 : 0)
    );
  };
  const order = new Int32Array(total);
  for (let i = 0; i < total; i++) order[i] = i;
  const page = selectTop(order, query.offset + query.limit, byRank).slice(query.offset);
  const items: QueueItem[] = page.map((i) => {
    const s = book.slotStatics[picked[i]!]!;
    const record = s.record;
    const lease = leases.live(record.id, nowMs);
    const t = {
      heat: heatOf(s.touchedMs, nowMs, policy.heat_window_days),
      staleness: stalenessOf(s.updatedMs, nowMs, policy.staleness_days),
      age: ageOf(s.createdMs, nowMs, policy.age_cap_days),
    };
    const suggest = suggestFor(policy, s, nowMs);
    const item: QueueItem = {
      id: record.id,
      title: record.title,
      type: record.type,
      status: record.status,
      project: record.project,
      priority: s.priority,
      score: scores[i]!,
      signals: { blocking: round2(s.blocking), heat: round2(t.heat), staleness: round2(t.staleness), age: round2(t.age) },
      suggest,
      why: whyFor(s, suggest, t.heat, lease, me, nowMs),
    };
    if (s.readiness.value) {
      item.readiness = s.readiness.value;
      item.readiness_reasons = s.readiness.reasons;
    }
    if (lease) {
      item.lease = {
        by: lease.by,
        agent: lease.agent,
        session: lease.session,
        state: lease.state,
        expires_at: new Date(lease.expires_ms).toISOString(),
      };
    }
    return item;
  });
  const end = query.offset + items.length;
  const truncated = end < total;
  const sections = sectionsFor(ctx, book, me, scope, policy, nowMs);
  return {
    items,
    count: items.length,
    offset: query.offset,
    returned_count: items.length,
    total_count: total,
    truncated,
    next_offset: truncated ? end : null,
    counts_by_type: sortedCounts(countsByType),
    counts_by_project: sortedCounts(countsByProject),
    counts_by_suggest: countsBySuggest,
    counts_by_readiness: countsByReadiness,
    muted: mutedCount,
    dormant: dormantCount,
    reserved: reservedCount,
    questions: sections.questions,
    asked: sections.asked,
    findings: sections.findings,
    pending: sections.pending,
    reviews: sections.reviews,
    section_totals: sections.totals,
    filters: {
      project: query.project,
      ...(scope ? { project_scope: { repos: scope.repos, groupings: scope.groupings } } : {}),
      assignee: query.assignee === 'me' ? me : query.assignee,
      type: query.types,
      exclude_type: query.excludeTypes,
      readiness: query.readiness,
      limit: query.limit,
    },
    policy,
    generated_at: new Date(nowMs).toISOString(),
  };
}

/** `render_queue`: the same queue, as markdown a person can read. */
export async function renderQueue(ctx: OpContext, input: QueueInput): Promise<RawResponse> {
  const envelope = queueOf(ctx, input);
  return new RawResponse(200, { 'content-type': 'text/markdown; charset=utf-8' }, renderQueueMarkdown(ctx.tenant.org, envelope));
}
