/**
 * The ranked candidate index (issue 27 item 5), kept in step with the book (book.ts) so a
 * GET /v1/queue without a project or assignee pool does work proportional to its page, not
 * to the candidate set:
 *
 * - every candidate filed in chunks of about CHUNK slots, in the static order (base score
 *   descending, priority, created, id). Each chunk knows bounds over its slots (highest base
 *   score, latest touch, earliest positive update and creation, lowest priority rank and
 *   creation), from which an upper bound of any of its scores at a given instant follows:
 *   every clock term of the score is monotone in its timestamp (heat grows with the touch,
 *   staleness and age shrink with the update and the creation; an unknown instant adds 0).
 *   A request orders the chunks by that bound and stops scanning once a chunk cannot beat
 *   the page's last item (operations' pass.ts);
 * - counts per combination of (type, project, readiness, suggestion), with the update
 *   instants of the closable ones sorted, so the envelope's counts are sums over a few
 *   combinations, `close` a binary search; the candidates with a wake date are a set (the
 *   request checks them one by one, like the muted and leased ones).
 *
 * The book marks a slot dirty whenever its cached signals are dropped, it is added or it is
 * freed; `refresh()` re-files the dirty slots (their signals recomputed: the book's cost) and
 * rebuilds everything after a book rebuild. Exactness never depends on the bounds being
 * tight: a loose bound only scans more chunks.
 */
import type { QueueBook } from './book.js';

const CHUNK = 128;

export interface Combo {
  typeKey: number;
  projectKey: number;
  readinessCode: number;
  suggestCode: number;
  count: number;
  /** updatedMs of the closable candidates in this combination, ascending */
  closable: number[];
}

export interface Chunk {
  slots: number[];
  /** bounds are recomputed on the next request after a change */
  stale: boolean;
  maxBase: number;
  maxTouched: number;
  /** earliest positive updatedMs / createdMs (0 when none is positive) */
  minUpdatedPos: number;
  minCreatedPos: number;
  minPrio: number;
  minCreated: number;
}

function lowerBound(xs: readonly number[], x: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class QueueRank {
  chunks: Chunk[] = [];
  readonly combos = new Map<string, Combo>();
  readonly wakeSlots = new Set<number>();
  /** the combination a filed slot is counted in, and the static key it was filed under */
  private filedCombo: Array<Combo | undefined> = [];
  private kBase: number[] = [];
  private kPrio: number[] = [];
  private kCreated: number[] = [];
  private kId: string[] = [];
  private filedClosable: Array<number | undefined> = [];
  private builtAt = -1;
  readonly stats = { builds: 0, refiled: 0, merges: 0 };

  constructor(private readonly book: QueueBook) {}

  /** a < b in the static order (base descending, priority, created, id) */
  private before(a: number, b: number): boolean {
    if (this.kBase[a] !== this.kBase[b]) return this.kBase[a]! > this.kBase[b]!;
    if (this.kPrio[a] !== this.kPrio[b]) return this.kPrio[a]! < this.kPrio[b]!;
    if (this.kCreated[a] !== this.kCreated[b]) return this.kCreated[a]! < this.kCreated[b]!;
    return this.kId[a]! < this.kId[b]!;
  }

  /** Files what changed since the last call (everything after a book rebuild). */
  refresh(): void {
    const { book } = this;
    if (this.builtAt !== book.stats.rebuilds) {
      this.build();
      return;
    }
    // every unfile before any file: a node freed from one slot and added in another keeps its id
    for (const slot of book.dirtySlots) if (this.filedCombo[slot]) this.unfile(slot);
    for (const slot of book.dirtySlots) {
      this.stats.refiled++;
      if (book.slotIds[slot] !== null && book.slotIds[slot] !== undefined) {
        book.ensureSlot(slot);
        this.file(slot);
      }
    }
    book.dirtySlots.clear();
  }

  private build(): void {
    const { book } = this;
    this.stats.builds++;
    this.combos.clear();
    this.wakeSlots.clear();
    this.filedCombo = [];
    this.filedClosable = [];
    const all: number[] = [];
    for (let slot = 0; slot < book.slotIds.length; slot++) {
      if (book.slotIds[slot] === null) continue;
      book.ensureSlot(slot);
      this.key(slot);
      this.count(slot, true);
      all.push(slot);
    }
    all.sort((a, b) => (this.before(a, b) ? -1 : 1));
    this.chunks = [];
    for (let i = 0; i < all.length; i += CHUNK) this.chunks.push(newChunk(all.slice(i, i + CHUNK)));
    for (const combo of this.combos.values()) combo.closable.sort((a, b) => a - b);
    book.dirtySlots.clear();
    this.builtAt = book.stats.rebuilds;
  }

  private key(slot: number): void {
    const cols = this.book.columns;
    this.kBase[slot] = cols.baseScore[slot]!;
    this.kPrio[slot] = cols.priorityRank[slot]!;
    this.kCreated[slot] = cols.createdMs[slot]!;
    this.kId[slot] = this.book.slotIds[slot]!;
  }

  private count(slot: number, bulk: boolean): void {
    const cols = this.book.columns;
    const name = `${cols.typeKey[slot]},${cols.projectKey[slot]},${cols.readinessCode[slot]},${cols.suggestCode[slot]}`;
    let combo = this.combos.get(name);
    if (!combo) {
      combo = {
        typeKey: cols.typeKey[slot]!,
        projectKey: cols.projectKey[slot]!,
        readinessCode: cols.readinessCode[slot]!,
        suggestCode: cols.suggestCode[slot]!,
        count: 0,
        closable: [],
      };
      this.combos.set(name, combo);
    }
    combo.count++;
    this.filedClosable[slot] = undefined;
    if (cols.closable[slot]) {
      const u = cols.updatedMs[slot]!;
      this.filedClosable[slot] = u;
      if (bulk) combo.closable.push(u);
      else combo.closable.splice(lowerBound(combo.closable, u), 0, u);
    }
    if (!Number.isNaN(cols.wakeMs[slot]!)) this.wakeSlots.add(slot);
    this.filedCombo[slot] = combo;
  }

  private file(slot: number): void {
    this.key(slot);
    this.count(slot, false);
    const chunk = this.chunkFor(slot);
    if (!chunk) {
      this.chunks.push(newChunk([slot]));
      return;
    }
    const { slots } = chunk;
    let lo = 0;
    let hi = slots.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.before(slots[mid]!, slot)) lo = mid + 1;
      else hi = mid;
    }
    slots.splice(lo, 0, slot);
    chunk.stale = true;
    if (slots.length > 2 * CHUNK) {
      const at = this.chunks.indexOf(chunk);
      this.chunks.splice(at + 1, 0, newChunk(slots.splice(CHUNK)));
    }
  }

  /** The chunk `slot` belongs in by its current key: the first whose last slot is not before it (else the last chunk). */
  private chunkFor(slot: number): Chunk | undefined {
    const { chunks } = this;
    let lo = 0;
    let hi = chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const slots = chunks[mid]!.slots;
      if (this.before(slots[slots.length - 1]!, slot)) lo = mid + 1;
      else hi = mid;
    }
    return chunks[Math.min(lo, chunks.length - 1)];
  }

  private unfile(slot: number): void {
    const combo = this.filedCombo[slot]!;
    this.filedCombo[slot] = undefined;
    combo.count--;
    // by the key and instant it was filed with (the columns may already hold its next signals)
    const closableAt = combo.closable.length > 0 ? this.closableIndex(combo, slot) : -1;
    if (closableAt >= 0) combo.closable.splice(closableAt, 1);
    this.wakeSlots.delete(slot);
    let chunk = this.chunkFor(slot)!;
    let at = chunk.slots.indexOf(slot);
    if (at < 0) {
      // never expected (the order is total); answers rest on the partition, so look everywhere
      chunk = this.chunks.find((c) => c.slots.includes(slot))!;
      at = chunk.slots.indexOf(slot);
    }
    chunk.slots.splice(at, 1);
    chunk.stale = true;
    if (chunk.slots.length === 0) this.chunks.splice(this.chunks.indexOf(chunk), 1);
    else if (chunk.slots.length < CHUNK / 4) {
      // a small chunk joins a neighbour (its successor, else its predecessor) when both fit in
      // one, so deletes cannot leave many tiny chunks
      const i = this.chunks.indexOf(chunk);
      const next = this.chunks[i + 1];
      const prev = this.chunks[i - 1];
      if (next && chunk.slots.length + next.slots.length <= 2 * CHUNK) {
        next.slots = chunk.slots.concat(next.slots);
        next.stale = true;
        this.chunks.splice(i, 1);
        this.stats.merges++;
      } else if (!next && prev && prev.slots.length + chunk.slots.length <= 2 * CHUNK) {
        prev.slots = prev.slots.concat(chunk.slots);
        prev.stale = true;
        this.chunks.splice(i, 1);
        this.stats.merges++;
      }
    }
  }

  /** Where the filed closable instant of `slot` sits (-1 when it was not closable). */
  private closableIndex(combo: Combo, slot: number): number {
    const u = this.filedClosable[slot];
    if (u === undefined) return -1;
    this.filedClosable[slot] = undefined;
    return lowerBound(combo.closable, u);
  }

  /** The chunks' bounds, recomputed where stale. */
  bounds(): Chunk[] {
    const cols = this.book.columns;
    for (const c of this.chunks) {
      if (!c.stale) continue;
      let maxBase = -Infinity;
      let maxTouched = 0;
      let minUpdatedPos = Infinity;
      let minCreatedPos = Infinity;
      let minPrio = Infinity;
      let minCreated = Infinity;
      for (const s of c.slots) {
        maxBase = Math.max(maxBase, cols.baseScore[s]!);
        maxTouched = Math.max(maxTouched, cols.touchedMs[s]!);
        const u = cols.updatedMs[s]!;
        if (u > 0) minUpdatedPos = Math.min(minUpdatedPos, u);
        const cr = cols.createdMs[s]!;
        if (cr > 0) minCreatedPos = Math.min(minCreatedPos, cr);
        minCreated = Math.min(minCreated, cr);
        minPrio = Math.min(minPrio, cols.priorityRank[s]!);
      }
      Object.assign(c, {
        stale: false,
        maxBase,
        maxTouched,
        minUpdatedPos: Number.isFinite(minUpdatedPos) ? minUpdatedPos : 0,
        minCreatedPos: Number.isFinite(minCreatedPos) ? minCreatedPos : 0,
        minPrio,
        minCreated,
      });
    }
    return this.chunks;
  }
}

function newChunk(slots: number[]): Chunk {
  return { slots, stale: true, maxBase: 0, maxTouched: 0, minUpdatedPos: 0, minCreatedPos: 0, minPrio: 0, minCreated: 0 };
}

const ranks = new WeakMap<QueueBook, QueueRank>();

/** The book's ranked index, refreshed. */
export function rankOf(book: QueueBook): QueueRank {
  let rank = ranks.get(book);
  if (!rank) ranks.set(book, (rank = new QueueRank(book)));
  rank.refresh();
  return rank;
}
