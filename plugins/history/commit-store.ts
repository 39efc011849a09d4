/**
 * The per-tenant commit index on disk, under `<tenant>/commit-index/`, so its memory does not
 * grow with history (issue 27 item 3):
 *
 *   commits.dat   a 16-byte header (magic, format version), then one record per first-parent
 *                 commit, oldest first: u32 payload length | the first 4 bytes of the payload's
 *                 sha1 | payload (commit-record.ts)
 *   commits.off   per seq the byte offset of its record in commits.dat and its author date,
 *                 12 bytes (u48 + 2 zero + u32 unix seconds): reading commit `seq` is one pread
 *                 of the offsets and one of the record, and a date boundary is found without
 *                 reading records
 *   commits.sha   the 20 raw bytes of commit `seq`'s sha: prefix lookups scan it in chunks
 *   nodes.snap    the per-node table (node-table.ts) as of a record count, with that count's
 *                 newest sha and a sha1 of the whole file; written temp + rename
 *                 (kernel/durable-fs.ts)
 *
 * Memory holds, per node id, the seq of its newest change and its change count (node-table.ts:
 * about 100 bytes a node), nothing per commit.
 *
 * Appends go to the three files in that order, unsynced: the index is derived from git and
 * recoverable, so a commit is never held back for it. What a crash can leave is a tail that
 * is torn or missing in one of the files; at open the records after the snapshot are read
 * again (length, checksum, seq and sha must agree with the two tables), the per-node table is
 * brought up to date from them, and the three files are cut to the last commit all three
 * hold whole. The commits a crash lost are appended again from git by the caller. A checkpoint
 * (`checkpoint()`, at close and every so many commits) fdatasyncs the three files before it
 * writes the snapshot, so everything a snapshot covers is on disk even after a power loss,
 * and an open reads only what came after it. A missing or damaged snapshot costs one
 * sequential read of the records.
 *
 * Not safe for two processes at once: one tenant is served by one process (in cluster mode
 * the owner), and that process holds one index per tenant.
 */
import { createHash } from 'node:crypto';
import { closeSync, fdatasync, fstatSync, ftruncateSync, mkdirSync, openSync, readFileSync, readSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileDurable } from '../../kernel/durable-fs.js';
import { NodeTable, type NodeStats } from './node-table.js';
import {
  decodeChangeAt,
  decodeCommit,
  decodeHeader,
  decodeNodeChanges,
  encodeCommit,
  forEachChangeId,
  hasIdIndex,
  idHash,
  indexCount,
  indexedOffsets,
  type CommitInfo,
  type CommitRecord,
  type NewCommit,
  type NodeChange,
} from './commit-record.js';

export type { NodeStats } from './node-table.js';

const MAGIC = Buffer.from('WGCOMMIT', 'latin1');
const FORMAT = 2;
const HEADER = 16;
const FRAME = 8;
/** an offsets entry: u48 byte offset, 2 zero bytes, u32 author date in unix seconds */
const OFF_WIDTH = 12;
const SHA_WIDTH = 20;
/** commits read per pread when walking the log (a block is usually a few tens of KB) */
const BLOCK_COMMITS = 128;
/** a record bigger than this is read through its id index when one node's changes are wanted */
const BIG_RECORD = 32 * 1024;
/** bytes read for a big record's header or one of its change entries (read again whole when short) */
const HEAD_READ = 4096;
/** sha-table entries read per pread by a prefix scan (640 KB) */
const SHA_CHUNK = 32_768;

/** bytes of commits.dat read per pread while records are checked at open */
const RECOVER_BLOCK = 4 << 20;

const checksum = (payload: Buffer): Buffer => createHash('sha1').update(payload).digest().subarray(0, 4);
const fdatasyncAsync = (fd: number) => new Promise<void>((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));

function readAt(fd: number, length: number, position: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buf, got, length - got, position + got);
    if (n === 0) throw new RangeError(`commit index file ends early (${position + got})`);
    got += n;
  }
  return buf;
}

function writeAll(fd: number, buf: Buffer): void {
  let off = 0;
  while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
}

/** Entries of a fixed-width table read a chunk at a time, for the sequential pass at open. */
class TableCursor {
  private base = 0;
  private buf: Buffer = Buffer.alloc(0);
  constructor(
    private readonly fd: number,
    private readonly width: number,
  ) {}
  get(i: number, n: number): Buffer {
    if (i < this.base || i >= this.base + this.buf.length / this.width) {
      this.base = i;
      this.buf = readAt(this.fd, Math.min(SHA_CHUNK, n - i) * this.width, i * this.width);
    }
    const at = (i - this.base) * this.width;
    return this.buf.subarray(at, at + this.width);
  }
}

/** What `open` found: how many records it read again (after the snapshot) and whether it started empty. */
export interface OpenReport {
  replayed: number;
  truncated: boolean;
  fresh: boolean;
}

export class CommitStore {
  private readonly recFd: number;
  private readonly offFd: number;
  private readonly shaFd: number;
  /** records held whole by all three files */
  private n = 0;
  /** end of the last whole record in commits.dat */
  private recEnd = HEADER;
  private head: string | null = null;
  private readonly nodes: NodeTable;
  private closed = false;
  private checkpointing: Promise<void> | null = null;
  /** bumped by `clear()`, so a checkpoint started before it does not write a stale snapshot */
  private generation = 0;
  readonly report: OpenReport = { replayed: 0, truncated: false, fresh: false };

  private constructor(
    private readonly dir: string,
    canon?: (id: string) => string,
  ) {
    this.nodes = new NodeTable(canon);
    mkdirSync(dir, { recursive: true });
    // 'a+': reads anywhere, writes always at the end (this index only ever appends or truncates)
    this.recFd = openSync(join(dir, 'commits.dat'), 'a+');
    this.offFd = openSync(join(dir, 'commits.off'), 'a+');
    this.shaFd = openSync(join(dir, 'commits.sha'), 'a+');
  }

  /**
   * Opens (or creates) the index in `dir` and recovers it to the last commit its three files hold
   * whole. `canon`: the id string to keep for an id (NodeTable).
   */
  static open(dir: string, canon?: (id: string) => string): CommitStore {
    const store = new CommitStore(dir, canon);
    try {
      store.recover();
    } catch (err) {
      store.closeFiles();
      throw err;
    }
    return store;
  }

  get count(): number {
    return this.n;
  }

  /** sha of the newest commit (null when empty) */
  get headSha(): string | null {
    return this.head;
  }

  get nodeCount(): number {
    return this.nodes.size;
  }

  nodeStats(id: string): NodeStats | undefined {
    return this.nodes.stats(id);
  }

  // ---------------------------------------------------------------- open and recovery

  private recover(): void {
    const recSize = fstatSync(this.recFd).size;
    const header = recSize >= HEADER ? readAt(this.recFd, HEADER, 0) : null;
    if (!header || !header.subarray(0, 8).equals(MAGIC) || header.readUInt32LE(8) !== FORMAT) {
      // new, or another format: start empty (the caller appends the history from git)
      this.report.fresh = true;
      this.clear();
      return;
    }
    const tableN = Math.min(Math.floor(fstatSync(this.offFd).size / OFF_WIDTH), Math.floor(fstatSync(this.shaFd).size / SHA_WIDTH));
    let from = 0;
    let pos = HEADER;
    const snap = this.readSnapshot(tableN);
    if (snap) {
      try {
        pos = snap.covered === 0 ? HEADER : this.recordEnd(snap.covered - 1);
        if (pos > recSize) throw new RangeError('records end before the snapshot');
        from = snap.covered;
      } catch {
        // the records are shorter than the snapshot says (cut by hand): read them all
        this.nodes.clear();
        pos = HEADER;
      }
    }
    // Read the records after the snapshot again: each must be whole, match its checksum, and
    // agree with the offset and sha tables; the first that does not ends the index.
    const offsets = new TableCursor(this.offFd, OFF_WIDTH);
    const shas = new TableCursor(this.shaFd, SHA_WIDTH);
    let seq = from;
    let buf: Buffer = Buffer.alloc(0);
    let bufStart = pos;
    while (seq < tableN && pos + FRAME <= recSize) {
      if (pos + FRAME > bufStart + buf.length) {
        buf = readAt(this.recFd, Math.min(recSize - pos, RECOVER_BLOCK), pos);
        bufStart = pos;
      }
      const len = buf.readUInt32LE(pos - bufStart);
      if (pos + FRAME + len > recSize) break;
      if (pos + FRAME + len > bufStart + buf.length) {
        buf = readAt(this.recFd, Math.min(recSize - pos, Math.max(RECOVER_BLOCK, FRAME + len)), pos);
        bufStart = pos;
      }
      const at = pos - bufStart;
      const payload = buf.subarray(at + FRAME, at + FRAME + len);
      if (len < 24 || !checksum(payload).equals(buf.subarray(at + 4, at + 8))) break;
      if (payload.readUInt32LE(0) !== seq || offsets.get(seq, tableN).readUIntLE(0, 6) !== pos) break;
      if (!shas.get(seq, tableN).equals(payload.subarray(4, 24))) break;
      try {
        forEachChangeId(payload, 0, payload.length, (id) => this.nodes.note(id, seq));
      } catch {
        break;
      }
      seq++;
      pos += FRAME + len;
    }
    this.report.replayed = seq - from;
    this.n = seq;
    this.recEnd = pos;
    this.report.truncated = recSize !== pos || tableN !== seq;
    this.cutFiles();
    this.head = seq === 0 ? null : this.shaAt(seq - 1);
  }

  /** Cuts the three files to the `n` whole records (a torn tail, or entries one file has and another lacks). */
  private cutFiles(): void {
    if (fstatSync(this.recFd).size !== this.recEnd) ftruncateSync(this.recFd, this.recEnd);
    if (fstatSync(this.offFd).size !== this.n * OFF_WIDTH) ftruncateSync(this.offFd, this.n * OFF_WIDTH);
    if (fstatSync(this.shaFd).size !== this.n * SHA_WIDTH) ftruncateSync(this.shaFd, this.n * SHA_WIDTH);
  }

  /** Forgets everything: empty files with a fresh header, no snapshot (a rebuild from scratch). */
  clear(): void {
    this.generation++;
    ftruncateSync(this.recFd, 0);
    ftruncateSync(this.offFd, 0);
    ftruncateSync(this.shaFd, 0);
    rmSync(join(this.dir, 'nodes.snap'), { force: true });
    const header = Buffer.alloc(HEADER);
    MAGIC.copy(header, 0);
    header.writeUInt32LE(FORMAT, 8);
    writeAll(this.recFd, header);
    this.n = 0;
    this.recEnd = HEADER;
    this.head = null;
    this.nodes.clear();
  }

  // ---------------------------------------------------------------- the per-node snapshot

  /** The per-node snapshot, loaded into the table when it describes a prefix of these files (the same sha at its last seq). */
  private readSnapshot(tableN: number): { covered: number } | null {
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(this.dir, 'nodes.snap'));
    } catch {
      return null;
    }
    const covered = this.nodes.load(
      bytes,
      (n, sha) => n <= tableN && (n === 0 || readAt(this.shaFd, SHA_WIDTH, (n - 1) * SHA_WIDTH).equals(sha)),
    );
    return covered === null ? null : { covered };
  }

  /**
   * Makes the records durable, then writes the per-node snapshot covering them (the next open
   * reads only what comes after). Concurrent calls share one run.
   */
  checkpoint(): Promise<void> {
    if (this.checkpointing) return this.checkpointing;
    if (this.closed || this.n === 0) return Promise.resolve();
    const generation = this.generation;
    const snapshot = this.nodes.encode(this.n, this.head);
    const run = (async () => {
      await Promise.all([fdatasyncAsync(this.recFd), fdatasyncAsync(this.offFd), fdatasyncAsync(this.shaFd)]);
      if (generation !== this.generation) return;
      await writeFileDurable(join(this.dir, 'nodes.snap'), snapshot);
    })();
    this.checkpointing = run.finally(() => {
      this.checkpointing = null;
    });
    return this.checkpointing;
  }

  // ---------------------------------------------------------------- appends

  /**
   * Appends the next first-parent commit; fills in each change's link to the node's previous
   * change. Returns its seq.
   */
  append(commit: NewCommit): number {
    if (this.closed) throw new Error('commit index closed');
    const seq = this.n;
    for (const c of commit.changes) c.previous = this.nodeStats(c.id)?.newest ?? -1;
    const payload = encodeCommit(seq, commit);
    const frame = Buffer.allocUnsafe(FRAME);
    frame.writeUInt32LE(payload.length, 0);
    checksum(payload).copy(frame, 4);
    const offset = Buffer.alloc(OFF_WIDTH);
    offset.writeUIntLE(this.recEnd, 0, 6);
    // whole seconds: git's dates are, and the write path's come from seconds
    offset.writeUInt32LE(Math.min(0xffffffff, Math.max(0, Math.floor(commit.dateMs / 1000) || 0)), 8);
    // record first, then its sha, then its offset: a crash between them leaves entries that
    // open() cuts, never a table entry pointing past the records
    writeAll(this.recFd, Buffer.concat([frame, payload]));
    writeAll(this.shaFd, payload.subarray(4, 24));
    writeAll(this.offFd, offset);
    this.recEnd += FRAME + payload.length;
    this.n = seq + 1;
    this.head = commit.sha;
    for (const c of commit.changes) this.nodes.note(c.id, seq);
    return seq;
  }

  // ---------------------------------------------------------------- reads

  /** Byte range [start, end) of records lo..hi in commits.dat (one pread of the offsets). */
  private rangeOf(lo: number, hi: number): { offsets: number[]; end: number } {
    const withNext = hi + 1 < this.n;
    const raw = readAt(this.offFd, (hi - lo + 1 + (withNext ? 1 : 0)) * OFF_WIDTH, lo * OFF_WIDTH);
    const offsets: number[] = [];
    for (let i = 0; i <= hi - lo; i++) offsets.push(raw.readUIntLE(i * OFF_WIDTH, 6));
    return { offsets, end: withNext ? raw.readUIntLE((hi - lo + 1) * OFF_WIDTH, 6) : this.recEnd };
  }

  /** End of record `seq` from its offset and its frame's length (at open, before the tables are trusted). */
  private recordEnd(seq: number): number {
    const start = readAt(this.offFd, OFF_WIDTH, seq * OFF_WIDTH).readUIntLE(0, 6);
    return start + FRAME + readAt(this.recFd, 4, start).readUInt32LE(0);
  }

  private checkSeq(seq: number): void {
    if (!Number.isInteger(seq) || seq < 0 || seq >= this.n) throw new RangeError(`no commit ${seq} in the index (${this.n})`);
  }

  /** Calls `fn(buf, start, end, seq)` for the payload of each record lo..hi, in order, one pread for all. */
  private forRecords(lo: number, hi: number, fn: (buf: Buffer, start: number, end: number, seq: number) => void): void {
    const { offsets, end } = this.rangeOf(lo, hi);
    const base = offsets[0]!;
    const buf = readAt(this.recFd, end - base, base);
    for (let i = 0; i < offsets.length; i++) {
      const start = offsets[i]! - base;
      const stop = (i + 1 < offsets.length ? offsets[i + 1]! : end) - base;
      fn(buf, start + FRAME, stop, lo + i);
    }
  }

  commitAt(seq: number): CommitRecord {
    this.checkSeq(seq);
    let out: CommitRecord | null = null;
    this.forRecords(seq, seq, (buf, start, end) => (out = decodeCommit(buf, start, end)));
    return out!;
  }

  /**
   * Commits newest first, from `from` (default: the newest) down to seq 0, read a block at a time
   * and decoded as they are taken (the change feed stops after a few dozen of a block's 128).
   */
  *newestFirst(from = this.n - 1): Generator<CommitRecord> {
    let hi = Math.min(from, this.n - 1);
    while (hi >= 0) {
      const lo = Math.max(0, hi - BLOCK_COMMITS + 1);
      let block: Buffer = Buffer.alloc(0);
      const bounds: number[] = [];
      this.forRecords(lo, hi, (buf, start, end) => {
        block = buf;
        bounds.push(start, end);
      });
      for (let i = bounds.length - 2; i >= 0; i -= 2) yield decodeCommit(block, bounds[i]!, bounds[i + 1]!);
      hi = lo - 1;
    }
  }

  /** Calls `fn` for commits `from`..`to` (inclusive) oldest first; stops early when it returns false. */
  scan(from: number, to: number, fn: (commit: CommitRecord) => boolean | void): void {
    for (let lo = Math.max(0, from); lo <= Math.min(to, this.n - 1); lo += BLOCK_COMMITS) {
      const hi = Math.min(to, this.n - 1, lo + BLOCK_COMMITS - 1);
      const block: CommitRecord[] = [];
      this.forRecords(lo, hi, (buf, start, end) => block.push(decodeCommit(buf, start, end)));
      for (const c of block) if (fn(c) === false) return;
    }
  }

  /** A node's changes, newest first, following each change's link to the previous one. */
  *changesOf(id: string): Generator<NodeChange> {
    const stats = this.nodeStats(id);
    if (!stats) return;
    const idBytes = Buffer.from(id, 'utf8');
    let seq = stats.newest;
    while (seq >= 0) {
      const list = this.changesIn(seq, id, idBytes);
      if (list.length === 0) throw new RangeError(`commit ${seq} holds no change of ${id}`);
      for (let i = list.length - 1; i >= 0; i--) yield list[i]!;
      const previous = list[0]!.previous;
      if (previous >= seq) throw new RangeError(`change link of ${id} at ${seq} points forward`);
      seq = previous;
    }
  }

  /** The changes commit `seq` made to node `id` (usually one; none when it did not touch it). */
  changesIn(seq: number, id: string, idBytes = Buffer.from(id, 'utf8')): NodeChange[] {
    this.checkSeq(seq);
    const { offsets, end } = this.rangeOf(seq, seq);
    const start = offsets[0]!;
    if (end - start > BIG_RECORD) {
      const indexed = this.indexedChanges(start, end, id, idBytes);
      if (indexed) return indexed;
    }
    const buf = readAt(this.recFd, end - start, start);
    return decodeNodeChanges(buf, FRAME, buf.length, id, idBytes);
  }

  /**
   * A big record's changes of `id` through its id index: its header, the index and the
   * matching entries, a few small preads. Null when the record has no index.
   */
  private indexedChanges(start: number, end: number, id: string, idBytes: Buffer): NodeChange[] | null {
    const payload = start + FRAME;
    let head = readAt(this.recFd, Math.min(end - start, HEAD_READ), start);
    if (!hasIdIndex(head, FRAME)) return null;
    let commit: CommitInfo;
    try {
      commit = decodeHeader(head, FRAME, head.length);
    } catch {
      // a header longer than the first read (a very long subject)
      head = readAt(this.recFd, end - start, start);
      commit = decodeHeader(head, FRAME, head.length);
    }
    const count = indexCount(readAt(this.recFd, 8, end - 8));
    const index = readAt(this.recFd, count * 8 + 8, end - 8 - count * 8);
    const out: NodeChange[] = [];
    for (const at of indexedOffsets(index, idHash(idBytes))) {
      if (payload + at >= end) throw new RangeError('id index points past its record');
      let entry = readAt(this.recFd, Math.min(end - payload - at, HEAD_READ), payload + at);
      let change: NodeChange | null;
      try {
        change = decodeChangeAt(entry, 0, entry.length, commit, id, idBytes);
      } catch {
        entry = readAt(this.recFd, end - payload - at, payload + at);
        change = decodeChangeAt(entry, 0, entry.length, commit, id, idBytes);
      }
      if (change) out.push(change);
    }
    return out;
  }

  /**
   * The newest seq whose author date is before `ms`, walking back from the newest commit (the
   * first such commit a newest-first walk meets; -1 when there is none): the offsets table's
   * dates, read in chunks, no record.
   */
  newestBefore(ms: number): number {
    for (let hi = this.n - 1; hi >= 0; hi -= SHA_CHUNK) {
      const lo = Math.max(0, hi - SHA_CHUNK + 1);
      const raw = readAt(this.offFd, (hi - lo + 1) * OFF_WIDTH, lo * OFF_WIDTH);
      for (let i = hi - lo; i >= 0; i--) if (raw.readUInt32LE(i * OFF_WIDTH + 8) * 1000 < ms) return lo + i;
    }
    return -1;
  }

  /**
   * Each node's newest change with `after < seq < before` (ids in `skip` left out), newest
   * first and, within one commit, in the order the commit recorded them: what a newest-first
   * walk of those commits would meet first for each node, found from the per-node table
   * (a pass over the nodes and one read per commit holding such a change) instead of reading
   * every commit in between.
   */
  *newestChanges(after: number, before: number, skip: ReadonlySet<string>): Generator<NodeChange> {
    const bySeq = new Map<number, Set<string>>();
    for (const [id, seq] of this.nodes.newest()) {
      if (seq <= after || seq >= before || skip.has(id)) continue;
      let ids = bySeq.get(seq);
      if (!ids) bySeq.set(seq, (ids = new Set()));
      ids.add(id);
    }
    const seqs = [...bySeq.keys()].sort((a, b) => b - a);
    for (const seq of seqs) {
      const ids = bySeq.get(seq)!;
      for (const change of this.commitAt(seq).changes) {
        if (!ids.delete(change.id)) continue;
        yield change;
      }
    }
  }

  shaAt(seq: number): string {
    this.checkSeq(seq);
    return readAt(this.shaFd, SHA_WIDTH, seq * SHA_WIDTH).toString('hex');
  }

  /**
   * Seqs (ascending) of the commits whose sha starts with the lower-case hex `prefix`: the sha
   * table is read in 640 KB chunks and searched with Buffer.indexOf (20 MB for a million
   * commits). `newestOnly` (a full sha, which is unique) stops at the first hit from the newest end.
   */
  findPrefix(prefix: string, newestOnly = false): number[] {
    if (!/^[0-9a-f]{1,40}$/.test(prefix)) return [];
    const whole = Buffer.from(prefix.slice(0, prefix.length - (prefix.length % 2)), 'hex');
    const nibble = prefix.length % 2 ? parseInt(prefix[prefix.length - 1]!, 16) : -1;
    const matches = (buf: Buffer, at: number): boolean => {
      if (whole.length > 0 && buf.compare(whole, 0, whole.length, at, at + whole.length) !== 0) return false;
      return nibble < 0 || buf[at + whole.length]! >> 4 === nibble;
    };
    const hits: number[] = [];
    const chunks = Math.ceil(this.n / SHA_CHUNK);
    for (let k = 0; k < chunks; k++) {
      const c = newestOnly ? chunks - 1 - k : k;
      const base = c * SHA_CHUNK;
      const count = Math.min(SHA_CHUNK, this.n - base);
      const buf = readAt(this.shaFd, count * SHA_WIDTH, base * SHA_WIDTH);
      const found: number[] = [];
      if (whole.length >= 2) {
        // indexOf finds the bytes anywhere; only a hit at an entry's start counts
        for (let at = buf.indexOf(whole); at >= 0; at = buf.indexOf(whole, at + 1))
          if (at % SHA_WIDTH === 0 && matches(buf, at)) found.push(base + at / SHA_WIDTH);
      } else {
        for (let i = 0; i < count; i++) if (matches(buf, i * SHA_WIDTH)) found.push(base + i);
      }
      if (newestOnly && found.length > 0) return [found[found.length - 1]!];
      for (const seq of found) hits.push(seq);
    }
    return hits;
  }

  // ---------------------------------------------------------------- close

  private closeFiles(): void {
    for (const fd of [this.recFd, this.offFd, this.shaFd]) {
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
    }
  }

  /** Writes a last checkpoint (unless `skipCheckpoint`) and closes the files. */
  async close(skipCheckpoint = false): Promise<void> {
    if (this.closed) return;
    // one in flight may have captured fewer commits than there are now: the last one covers all
    await this.checkpointing?.catch(() => undefined);
    if (!skipCheckpoint) await this.checkpoint().catch(() => undefined);
    this.closed = true;
    this.closeFiles();
  }
}
