/**
 * The queue's ranking pass: the page (ranked: own reservations first, then score, priority,
 * age oldest first, id) and the envelope's counts over the whole filtered set.
 *
 * Two ways to the same answer:
 * - `indexedPass` (no project or assignee pool, weights and the lease penalty not negative):
 *   counts summed over the ranked index's combinations (rank.ts), corrected one by one for
 *   the dormant, muted and leased candidates; the page read from the index's chunks in the
 *   order of their score bounds, stopping at the first chunk that cannot beat the page's last
 *   item. Cost: O(combinations + chunks + exceptions + scanned chunks x chunk size).
 * - `fullPass`: one pass over the pool (or every candidate), reading the book's flat columns,
 *   and a bounded heap for the page: O(C log k). Used for pools (their size is the cost) and
 *   as the reference the tests compare the index with.
 */
import type { StoredLease } from '../leases/public.js';
import type { QueueBook } from './book.js';
import { READINESS_CODES, SUGGEST_CODES } from './book.js';
import type { QueuePolicy } from './policy.js';
import { rankOf } from './rank.js';

export const DAY_MS = 24 * 60 * 60 * 1000;
const CLOSE = SUGGEST_CODES.indexOf('close');

const clamp01 = (x: number) => (x <= 0 ? 0 : x >= 1 ? 1 : x);
export const round2 = (x: number) => Math.round(x * 100) / 100;

export function heatOf(touchedMs: number, nowMs: number, windowDays: number): number {
  return touchedMs ? clamp01(1 - (nowMs - touchedMs) / (windowDays * DAY_MS)) : 0;
}

export function stalenessOf(updatedMs: number, nowMs: number, days: number): number {
  return updatedMs ? clamp01((nowMs - updatedMs) / (days * DAY_MS)) : 0;
}

export function ageOf(createdMs: number, nowMs: number, capDays: number): number {
  return createdMs ? clamp01((nowMs - createdMs) / (capDays * DAY_MS)) : 0;
}

export interface PassInput {
  book: QueueBook;
  policy: QueuePolicy;
  nowMs: number;
  me: string | null;
  /** candidates narrowed by project scope and assignee (null: all) */
  pool: Set<string> | null;
  /** live leases by slot */
  leaseBySlot: Map<number, StoredLease>;
  muted: Set<string>;
  typeAllowed: (key: number) => boolean;
  /** bit i set: readiness code i passes */
  readinessMask: number;
  offset: number;
  limit: number;
}

export interface PassResult {
  /** the page, ranked, after the offset */
  page: Array<{ slot: number; score: number }>;
  total: number;
  /** by interned key */
  typeCounts: number[];
  projectCounts: number[];
  suggestCounts: Int32Array;
  readinessCounts: Int32Array;
  muted: number;
  dormant: number;
  reserved: number;
}

/** counts[key] += by, growing the array when computing a node's signals interned a new key */
function bump(counts: number[], key: number, by = 1): void {
  while (counts.length <= key) counts.push(0);
  counts[key]! += by;
}

/**
 * The first `k` items in `cmp` order. A page near the top (the common case) costs
 * O(n log k) with a bounded heap instead of sorting the whole candidate set.
 */
export function selectTop(items: Int32Array, k: number, cmp: (a: number, b: number) => number): number[] {
  if (k <= 0 || items.length === 0) return [];
  if (k * 4 >= items.length) return Array.from(items.sort(cmp).subarray(0, k));
  const heap = new BoundedHeap(k, cmp);
  for (const item of items) heap.offer(item);
  return heap.sorted();
}

/** The best `k` offered items under `cmp`: a max-heap whose root is the worst of them. */
class BoundedHeap {
  readonly items: number[] = [];
  constructor(
    private readonly k: number,
    private readonly cmp: (a: number, b: number) => number,
  ) {}

  get full(): boolean {
    return this.items.length >= this.k;
  }

  /** the worst item kept (valid when non-empty) */
  get worst(): number {
    return this.items[0]!;
  }

  offer(item: number): void {
    const heap = this.items;
    const worse = (i: number, j: number) => this.cmp(heap[i]!, heap[j]!) > 0;
    const swap = (i: number, j: number) => {
      const x = heap[i]!;
      heap[i] = heap[j]!;
      heap[j] = x;
    };
    if (heap.length < this.k) {
      heap.push(item);
      for (let i = heap.length - 1; i > 0;) {
        const parent = (i - 1) >> 1;
        if (!worse(i, parent)) break;
        swap(i, parent);
        i = parent;
      }
    } else if (this.cmp(item, heap[0]!) < 0) {
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

  sorted(): number[] {
    return this.items.sort(this.cmp);
  }
}

/** The indices 0..n-1, popped in `cmp` order (smallest first): a binary heap built in O(n). */
class PopHeap {
  private readonly heap: Int32Array;
  private size: number;
  constructor(
    n: number,
    private readonly cmp: (a: number, b: number) => number,
  ) {
    this.heap = new Int32Array(n);
    for (let i = 0; i < n; i++) this.heap[i] = i;
    this.size = n;
    for (let i = (n >> 1) - 1; i >= 0; i--) this.down(i);
  }

  /** the next index, or -1 when none is left */
  pop(): number {
    if (this.size === 0) return -1;
    const top = this.heap[0]!;
    this.heap[0] = this.heap[--this.size]!;
    this.down(0);
    return top;
  }

  private down(i: number): void {
    const h = this.heap;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < this.size && this.cmp(h[l]!, h[m]!) < 0) m = l;
      if (r < this.size && this.cmp(h[r]!, h[m]!) < 0) m = r;
      if (m === i) return;
      const x = h[i]!;
      h[i] = h[m]!;
      h[m] = x;
      i = m;
    }
  }
}

/** Scoring and filtering shared by both passes (the same float operations in the same order). */
function scorer(inp: PassInput) {
  const { book, policy, nowMs, me, muted, leaseBySlot } = inp;
  const cols = book.columns;
  const { heat_window_days: heatDays, staleness_days: staleDays, age_cap_days: ageDays, weights: w } = policy;
  const closeMs = policy.close_after_days * DAY_MS;
  return {
    /** why a candidate is left out (after the filters), or null */
    exclusion(slot: number): 'dormant' | 'muted' | 'reserved' | null {
      if (cols.wakeMs[slot]! > nowMs) return 'dormant';
      if (muted.size > 0 && muted.has(book.slotIds[slot]!)) return 'muted';
      const lease = leaseBySlot.get(slot);
      if (lease && lease.state === 'reserved' && lease.by !== me) return 'reserved';
      return null;
    },
    filtered(slot: number): boolean {
      return !inp.typeAllowed(cols.typeKey[slot]!) || (inp.readinessMask & (1 << cols.readinessCode[slot]!)) === 0;
    },
    score(slot: number): number {
      const lease = leaseBySlot.get(slot);
      const clockTerms =
        w.heat * heatOf(cols.touchedMs[slot]!, nowMs, heatDays) +
        w.staleness * stalenessOf(cols.updatedMs[slot]!, nowMs, staleDays) +
        w.age * ageOf(cols.createdMs[slot]!, nowMs, ageDays);
      const heldByOther = lease !== undefined && lease.by !== me;
      return round2(cols.baseScore[slot]! + clockTerms - (heldByOther ? policy.leased_penalty : 0));
    },
    /** an upper bound of every score in a chunk (rank.ts) */
    bound(maxBase: number, maxTouched: number, minUpdatedPos: number, minCreatedPos: number): number {
      const clockTerms =
        w.heat * heatOf(maxTouched, nowMs, heatDays) +
        w.staleness * stalenessOf(minUpdatedPos, nowMs, staleDays) +
        w.age * ageOf(minCreatedPos, nowMs, ageDays);
      return round2(maxBase + clockTerms);
    },
    ownReservation(slot: number): boolean {
      const lease = leaseBySlot.get(slot);
      return lease !== undefined && lease.state === 'reserved' && lease.by === me;
    },
    suggestCode(slot: number): number {
      const updated = cols.updatedMs[slot]!;
      return cols.closable[slot] && updated > 0 && nowMs - updated >= closeMs ? CLOSE : cols.suggestCode[slot]!;
    },
    closeMs,
  };
}

function emptyResult(): PassResult {
  return {
    page: [],
    total: 0,
    typeCounts: [],
    projectCounts: [],
    suggestCounts: new Int32Array(SUGGEST_CODES.length),
    readinessCounts: new Int32Array(READINESS_CODES.length),
    muted: 0,
    dormant: 0,
    reserved: 0,
  };
}

/** Whether the index may answer: no pool, and every term that bounds rely on moves one way. */
export function indexable(inp: PassInput): boolean {
  const w = inp.policy.weights;
  return inp.pool === null && w.heat >= 0 && w.staleness >= 0 && w.age >= 0 && inp.policy.leased_penalty >= 0;
}

export function fullPass(inp: PassInput): PassResult {
  const { book } = inp;
  const cols = book.columns;
  const { slotIds } = book;
  const s = scorer(inp);
  const out = emptyResult();
  const capacity = inp.pool ? inp.pool.size : book.candidateCount;
  const picked = new Int32Array(capacity);
  const scores = new Float64Array(capacity);
  const tiers = new Uint8Array(capacity);
  // This function never awaits, so no commit can move a slot while it runs.
  const consider = (slot: number) => {
    if (book.slotStatics[slot] === undefined) book.ensureSlot(slot);
    if (s.filtered(slot)) return;
    const why = s.exclusion(slot);
    if (why !== null) {
      out[why]++;
      return;
    }
    scores[out.total] = s.score(slot);
    tiers[out.total] = s.ownReservation(slot) ? 0 : 1;
    picked[out.total] = slot;
    out.total++;
    bump(out.typeCounts, cols.typeKey[slot]!);
    bump(out.projectCounts, cols.projectKey[slot]!);
    out.suggestCounts[s.suggestCode(slot)]!++;
    out.readinessCounts[cols.readinessCode[slot]!]!++;
  };
  if (inp.pool) {
    for (const id of inp.pool) {
      const slot = book.slotFor(id);
      if (slot !== undefined) consider(slot);
    }
  } else {
    for (let slot = 0; slot < slotIds.length; slot++) if (slotIds[slot] !== null) consider(slot);
  }
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
  const order = new Int32Array(out.total);
  for (let i = 0; i < out.total; i++) order[i] = i;
  out.page = selectTop(order, inp.offset + inp.limit, byRank)
    .slice(inp.offset)
    .map((i) => ({ slot: picked[i]!, score: scores[i]! }));
  return out;
}

export function indexedPass(inp: PassInput): PassResult {
  const { book, nowMs } = inp;
  const cols = book.columns;
  const { slotIds } = book;
  const rank = rankOf(book);
  const s = scorer(inp);
  const out = emptyResult();
  // counts: every combination that passes the filters, `close` by binary search on the update instants
  for (const combo of rank.combos.values()) {
    if (combo.count === 0 || !inp.typeAllowed(combo.typeKey) || (inp.readinessMask & (1 << combo.readinessCode)) === 0) continue;
    out.total += combo.count;
    bump(out.typeCounts, combo.typeKey, combo.count);
    bump(out.projectCounts, combo.projectKey, combo.count);
    out.readinessCounts[combo.readinessCode]! += combo.count;
    let lo = 0;
    let hi = combo.closable.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (nowMs - combo.closable[mid]! >= s.closeMs) lo = mid + 1;
      else hi = mid;
    }
    out.suggestCounts[CLOSE]! += lo;
    out.suggestCounts[combo.suggestCode]! += combo.count - lo;
  }
  // the exceptions, one by one: dormant, muted, reserved by someone else
  const special = new Set<number>(rank.wakeSlots);
  for (const id of inp.muted) {
    const slot = book.slotFor(id);
    if (slot !== undefined) special.add(slot);
  }
  for (const slot of inp.leaseBySlot.keys()) special.add(slot);
  const excluded = new Set<number>();
  for (const slot of special) {
    if (s.filtered(slot)) continue;
    const why = s.exclusion(slot);
    if (why === null) continue;
    out[why]++;
    excluded.add(slot);
    out.total--;
    bump(out.typeCounts, cols.typeKey[slot]!, -1);
    bump(out.projectCounts, cols.projectKey[slot]!, -1);
    out.readinessCounts[cols.readinessCode[slot]!]!--;
    out.suggestCounts[s.suggestCode(slot)]!--;
  }
  const keep = (slot: number) => !excluded.has(slot) && !s.filtered(slot);

  // the page: own reservations first, then the best of the rest from the chunks
  const scoreOf = new Map<number, number>();
  const byRank = (a: number, b: number) => {
    const idA = slotIds[a]!;
    const idB = slotIds[b]!;
    return (
      scoreOf.get(b)! - scoreOf.get(a)! ||
      cols.priorityRank[a]! - cols.priorityRank[b]! ||
      cols.createdMs[a]! - cols.createdMs[b]! ||
      (idA < idB ? -1 : idA > idB ? 1 : 0)
    );
  };
  const k = inp.offset + inp.limit;
  const own: number[] = [];
  for (const slot of inp.leaseBySlot.keys()) {
    if (s.ownReservation(slot) && keep(slot)) {
      own.push(slot);
      scoreOf.set(slot, s.score(slot));
    }
  }
  own.sort(byRank);
  const need = k - own.length;
  let rest: number[] = [];
  if (need > 0) {
    const chunks = rank.bounds();
    const ub = new Float64Array(chunks.length);
    chunks.forEach((c, i) => (ub[i] = s.bound(c.maxBase, c.maxTouched, c.minUpdatedPos, c.minCreatedPos)));
    // chunks best bound first (then priority, created), popped lazily: most requests stop after a few
    const order = new PopHeap(
      chunks.length,
      (i, j) => ub[j]! - ub[i]! || chunks[i]!.minPrio - chunks[j]!.minPrio || chunks[i]!.minCreated - chunks[j]!.minCreated,
    );
    const heap = new BoundedHeap(need, byRank);
    for (let i = order.pop(); i >= 0; i = order.pop()) {
      const c = chunks[i]!;
      if (heap.full) {
        const w = heap.worst;
        const ws = scoreOf.get(w)!;
        const beyond =
          ub[i]! < ws ||
          (ub[i] === ws &&
            (c.minPrio > cols.priorityRank[w]! || (c.minPrio === cols.priorityRank[w]! && c.minCreated > cols.createdMs[w]!)));
        if (beyond) break;
      }
      for (const slot of c.slots) {
        if (!keep(slot) || s.ownReservation(slot)) continue;
        scoreOf.set(slot, s.score(slot));
        heap.offer(slot);
      }
    }
    rest = heap.sorted();
  }
  out.page = [...own, ...rest].slice(inp.offset, k).map((slot) => ({ slot, score: scoreOf.get(slot)! }));
  return out;
}

/** `index: false` makes every request take the full pass (the tests compare both; the bench may too). */
export const passSettings = { index: true };

/** The pass for these inputs: the index where it may answer, else the full pass. */
export function rankingPass(inp: PassInput): PassResult {
  return passSettings.index && indexable(inp) ? indexedPass(inp) : fullPass(inp);
}
