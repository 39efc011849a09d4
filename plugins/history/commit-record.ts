/**
 * The binary form of one commit of the on-disk commit index (commit-store.ts): what a
 * history read needs of a first-parent commit and of each node file it touched, with, per
 * node change, the seq of the commit holding that node's previous change (so a node's history
 * is a walk of backward links, and memory holds only each node's newest seq).
 *
 * Little-endian; a string is a u32 byte length (0xffffffff: null) and its UTF-8 bytes; a
 * sha is its 20 raw bytes.
 *
 *   u32 seq | sha | u8 flags (1: has parent, 2: internal) | parent (20 zero bytes when none)
 *   f64 author date ms | authorName | authorEmail | subject | person | agent | via | op
 *   u32 change count | changes
 *
 * A change: u8 kind ('A' 'M' 'D' 'R') | u8 flags (1: blob, 2: old blob, 4: deleted facts)
 * | i32 previous change's seq (-1: none) | id | path | oldPath | [blob] | [old blob]
 * | [type | title | author | authored_via].
 *
 * A commit of more than INDEX_ABOVE changes (a bulk load, an import) also carries an id index
 * after its changes (flag 4): per change the first 4 bytes of sha1(id) and the change's offset
 * in the payload, sorted, then u32 count and 'IDX1'. Walking a node's history through such a
 * commit then reads its header, the index and one entry, not megabytes of other nodes' changes.
 */
import { createHash } from 'node:crypto';

export type ChangeKind = 'A' | 'M' | 'D' | 'R';

export interface CommitInfo {
  sha: string;
  parent: string | null;
  /** position in the first-parent history, 0 = oldest */
  seq: number;
  /** author date, ISO 8601 */
  date: string;
  dateMs: number;
  authorName: string;
  authorEmail: string;
  subject: string;
  /** `Svc-Person` trailer: the person the server attributed the write to */
  person: string | null;
  agent: string | null;
  via: string | null;
  op: string | null;
  internal: boolean;
}

/** What a deleted node looked like, read once from its last blob when a feed needs it. */
export interface DeletedFacts {
  type: string;
  title: string;
  author: string | null;
  authored_via: string | null;
}

export interface NodeChange {
  id: string;
  change: ChangeKind;
  path: string;
  /** the previous path of a moved node file (change R) */
  oldPath: string | null;
  /** blob after the change; null when deleted */
  blob: string | null;
  /** blob before the change; null when added */
  oldBlob: string | null;
  /** seq of the commit holding this node's previous change; -1 for its first */
  previous: number;
  commit: CommitInfo;
  deleted?: DeletedFacts;
}

/** A commit with every node change it made, in the order they were recorded. */
export interface CommitRecord extends CommitInfo {
  changes: NodeChange[];
}

/** A commit as it is appended: its changes without the back reference. */
export type NewCommit = Omit<CommitInfo, 'seq' | 'date'> & { changes: Array<Omit<NodeChange, 'commit'>> };

const NULL_LEN = 0xffffffff;
const HAS_PARENT = 1;
const INTERNAL = 2;
const INDEXED = 4;
/** position of the commit flags in the payload (after seq and sha) */
const FLAGS_AT = 24;
/** commits with more changes than this get an id index */
export const INDEX_ABOVE = 64;
const INDEX_MAGIC = 0x31584449; // 'IDX1' little-endian

/** The id index's key of a node id. */
export function idHash(id: string | Buffer): number {
  return createHash('sha1').update(id).digest().readUInt32LE(0);
}
const HAS_BLOB = 1;
const HAS_OLD_BLOB = 2;
const HAS_DELETED = 4;

/** Grows as it is written; `bytes()` is the payload. */
class Writer {
  private buf = Buffer.allocUnsafe(512);
  private pos = 0;

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }
  u8(v: number): void {
    this.room(1);
    this.buf[this.pos++] = v;
  }
  u32(v: number): void {
    this.room(4);
    this.pos = this.buf.writeUInt32LE(v, this.pos);
  }
  i32(v: number): void {
    this.room(4);
    this.pos = this.buf.writeInt32LE(v, this.pos);
  }
  f64(v: number): void {
    this.room(8);
    this.pos = this.buf.writeDoubleLE(v, this.pos);
  }
  str(s: string | null): void {
    if (s === null) return this.u32(NULL_LEN);
    const len = Buffer.byteLength(s, 'utf8');
    this.u32(len);
    this.room(len);
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }
  sha(hex: string | null): void {
    this.room(20);
    if (hex === null) this.buf.fill(0, this.pos, this.pos + 20);
    else if (this.buf.write(hex, this.pos, 'hex') !== 20) throw new Error(`not a sha: ${hex.slice(0, 60)}`);
    this.pos += 20;
  }
  get position(): number {
    return this.pos;
  }
  patchU8(at: number, v: number): void {
    this.buf[at] = v;
  }
  bytes(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

export function encodeCommit(seq: number, c: NewCommit): Buffer {
  const w = new Writer();
  w.u32(seq);
  w.sha(c.sha);
  w.u8((c.parent !== null ? HAS_PARENT : 0) | (c.internal ? INTERNAL : 0));
  w.sha(c.parent);
  w.f64(c.dateMs);
  for (const s of [c.authorName, c.authorEmail, c.subject, c.person, c.agent, c.via, c.op]) w.str(s);
  w.u32(c.changes.length);
  const index: Array<[number, number]> = [];
  for (const ch of c.changes) {
    if (c.changes.length > INDEX_ABOVE) index.push([idHash(ch.id), w.position]);
    w.u8(ch.change.charCodeAt(0));
    w.u8((ch.blob !== null ? HAS_BLOB : 0) | (ch.oldBlob !== null ? HAS_OLD_BLOB : 0) | (ch.deleted ? HAS_DELETED : 0));
    w.i32(ch.previous);
    w.str(ch.id);
    w.str(ch.path);
    w.str(ch.oldPath);
    if (ch.blob !== null) w.sha(ch.blob);
    if (ch.oldBlob !== null) w.sha(ch.oldBlob);
    if (ch.deleted) {
      w.str(ch.deleted.type);
      w.str(ch.deleted.title);
      w.str(ch.deleted.author);
      w.str(ch.deleted.authored_via);
    }
  }
  if (index.length > 0) {
    w.patchU8(FLAGS_AT, (c.parent !== null ? HAS_PARENT : 0) | (c.internal ? INTERNAL : 0) | INDEXED);
    index.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
    for (const [hash, at] of index) {
      w.u32(hash);
      w.u32(at);
    }
    w.u32(index.length);
    w.u32(INDEX_MAGIC);
  }
  return w.bytes();
}

/** Whether the payload starting at `start` carries an id index (its first FLAGS_AT + 1 bytes must be in `buf`). */
export function hasIdIndex(buf: Buffer, start: number): boolean {
  return (buf[start + FLAGS_AT]! & INDEXED) !== 0;
}

/**
 * Offsets (in the payload, ascending) of the changes whose id hashes to `hash`, from an id
 * index read into `index` (its pairs, count and magic: the payload's last 8 + 8 * count bytes).
 */
export function indexedOffsets(index: Buffer, hash: number): number[] {
  const count = index.readUInt32LE(index.length - 8);
  if (index.readUInt32LE(index.length - 4) !== INDEX_MAGIC || index.length !== 8 + count * 8) throw new RangeError('damaged id index');
  let lo = 0;
  let hi = count;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (index.readUInt32LE(mid * 8) < hash) lo = mid + 1;
    else hi = mid;
  }
  const out: number[] = [];
  for (let i = lo; i < count && index.readUInt32LE(i * 8) === hash; i++) out.push(index.readUInt32LE(i * 8 + 4));
  return out;
}

/** The id index's entry count, from the payload's last 8 bytes. */
export function indexCount(tail: Buffer): number {
  if (tail.readUInt32LE(4) !== INDEX_MAGIC) throw new RangeError('damaged id index');
  return tail.readUInt32LE(0);
}

/** Reads one payload; every read is bounds-checked, so a damaged record throws instead of yielding garbage. */
class Reader {
  pos: number;
  constructor(
    private readonly buf: Buffer,
    start: number,
    private readonly end: number,
  ) {
    this.pos = start;
  }
  private need(n: number): void {
    if (this.pos + n > this.end) throw new RangeError('commit record ends early');
  }
  u8(): number {
    this.need(1);
    return this.buf[this.pos++]!;
  }
  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  i32(): number {
    this.need(4);
    const v = this.buf.readInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  f64(): number {
    this.need(8);
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }
  str(): string | null {
    const len = this.u32();
    if (len === NULL_LEN) return null;
    this.need(len);
    const s = this.buf.toString('utf8', this.pos, this.pos + len);
    this.pos += len;
    return s;
  }
  /** Skips a string; true when it is exactly `want` (compared as bytes, nothing decoded). */
  strEquals(want: Buffer): boolean {
    const len = this.u32();
    if (len === NULL_LEN) return false;
    this.need(len);
    const same = len === want.length && this.buf.compare(want, 0, len, this.pos, this.pos + len) === 0;
    this.pos += len;
    return same;
  }
  skipStr(): void {
    const len = this.u32();
    if (len === NULL_LEN) return;
    this.need(len);
    this.pos += len;
  }
  sha(): string {
    this.need(20);
    const s = this.buf.toString('hex', this.pos, this.pos + 20);
    this.pos += 20;
    return s;
  }
  skip(n: number): void {
    this.need(n);
    this.pos += n;
  }
}

function readHeader(r: Reader): CommitInfo {
  const seq = r.u32();
  const sha = r.sha();
  const flags = r.u8();
  const parentHex = r.sha();
  const dateMs = r.f64();
  const authorName = r.str() ?? '';
  const authorEmail = r.str() ?? '';
  const subject = r.str() ?? '';
  const person = r.str();
  const agent = r.str();
  const via = r.str();
  const op = r.str();
  return {
    sha,
    parent: flags & HAS_PARENT ? parentHex : null,
    seq,
    date: new Date(dateMs).toISOString(),
    dateMs,
    authorName,
    authorEmail,
    subject,
    person,
    agent,
    via,
    op,
    internal: (flags & INTERNAL) !== 0,
  };
}

const KINDS: Record<number, ChangeKind> = { 65: 'A', 77: 'M', 68: 'D', 82: 'R' };

function readChange(r: Reader, commit: CommitInfo, kindCode: number, flags: number, previous: number, id: string): NodeChange {
  const change = KINDS[kindCode];
  if (!change) throw new RangeError(`unknown change kind ${kindCode}`);
  const path = r.str() ?? '';
  const oldPath = r.str();
  const blob = flags & HAS_BLOB ? r.sha() : null;
  const oldBlob = flags & HAS_OLD_BLOB ? r.sha() : null;
  const out: NodeChange = { id, change, path, oldPath, blob, oldBlob, previous, commit };
  if (flags & HAS_DELETED) out.deleted = { type: r.str() ?? '', title: r.str() ?? '', author: r.str(), authored_via: r.str() };
  return out;
}

function skipChangeRest(r: Reader, flags: number): void {
  r.skipStr();
  r.skipStr();
  if (flags & HAS_BLOB) r.skip(20);
  if (flags & HAS_OLD_BLOB) r.skip(20);
  if (flags & HAS_DELETED) for (let k = 0; k < 4; k++) r.skipStr();
}

/** The commit's header fields from the payload at `buf[start, end)` (throws RangeError when `end` cuts it). */
export function decodeHeader(buf: Buffer, start: number, end: number): CommitInfo {
  return readHeader(new Reader(buf, start, end));
}

/** The change entry at `buf[start, end)` when it is node `id`'s (null when another node's). */
export function decodeChangeAt(
  buf: Buffer,
  start: number,
  end: number,
  commit: CommitInfo,
  id: string,
  idBytes: Buffer,
): NodeChange | null {
  const r = new Reader(buf, start, end);
  const kind = r.u8();
  const flags = r.u8();
  const previous = r.i32();
  return r.strEquals(idBytes) ? readChange(r, commit, kind, flags, previous, id) : null;
}

/** The whole commit in `buf[start, end)`. */
export function decodeCommit(buf: Buffer, start: number, end: number): CommitRecord {
  const r = new Reader(buf, start, end);
  const commit = readHeader(r) as CommitRecord;
  const n = r.u32();
  const changes: NodeChange[] = [];
  for (let i = 0; i < n; i++) {
    const kind = r.u8();
    const flags = r.u8();
    const previous = r.i32();
    const id = r.str() ?? '';
    changes.push(readChange(r, commit, kind, flags, previous, id));
  }
  commit.changes = changes;
  return commit;
}

/**
 * Only the changes of node `id` (as UTF-8 bytes) in the commit at `buf[start, end)`: the other
 * changes are skipped by their lengths, so walking a node's history through a bulk commit of
 * thousands of files decodes one entry of it.
 */
export function decodeNodeChanges(buf: Buffer, start: number, end: number, id: string, idBytes: Buffer): NodeChange[] {
  const r = new Reader(buf, start, end);
  const commit = readHeader(r);
  const n = r.u32();
  const out: NodeChange[] = [];
  for (let i = 0; i < n; i++) {
    const kind = r.u8();
    const flags = r.u8();
    const previous = r.i32();
    if (r.strEquals(idBytes)) out.push(readChange(r, commit, kind, flags, previous, id));
    else skipChangeRest(r, flags);
  }
  return out;
}

/**
 * Calls `fn(id)` for each change of the commit at `buf[start, end)` without building
 * objects: what rebuilding the per-node table from the records needs.
 */
export function forEachChangeId(buf: Buffer, start: number, end: number, fn: (id: string) => void): void {
  const r = new Reader(buf, start, end);
  r.skip(4 + 20 + 1 + 20 + 8);
  for (let k = 0; k < 7; k++) r.skipStr();
  const n = r.u32();
  for (let i = 0; i < n; i++) {
    r.skip(1);
    const flags = r.u8();
    r.skip(4);
    fn(r.str() ?? '');
    skipChangeRest(r, flags);
  }
}
