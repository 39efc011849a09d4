/**
 * The git store's commit journal (write-ahead log), `<gitdir>/svc-journal`.
 *
 * One record per commit, written and `fdatasync`ed before the commit is acknowledged:
 *
 *   u32be payload length | u32be crc32(payload) | payload
 *   payload = u32be epoch | commit oid (20 bytes) | parent oid (20 bytes, zeros for none) |
 *             u32be count |
 *             count x ( u8 type (1 blob, 2 tree, 3 commit, 4 tree as a delta) | oid (20) | u32be len | body )
 *
 * Bodies are stored raw: nothing is deflated on the acknowledgement path; the write-out
 * deflates them once, into a pack. A tree the commit spliced from the directory's previous
 * tree is stored as type 4: that tree's oid (20 bytes) and the git delta from it (the
 * instructions the checkpoint pack stores too). At 100,000 nodes a directory's tree is about
 * 17 KB and a one-node commit's delta about 100 bytes: whole trees made the journal about 26 KB
 * a commit, most of a seed's writes and their fdatasyncs. The base is an earlier object of the
 * chain or one a checkpoint already wrote to the repository (`resolveDeltas`).
 *
 * The ref value a record sets is its commit oid. Records form a chain (each record's parent
 * is the previous record's commit, the first one's parent is the ref as of the last
 * checkpoint). A record that fails its length or crc check can only be the torn tail of a
 * write that was never acknowledged; it and anything after it is dropped.
 *
 * A checkpoint does not truncate the file: it invalidates the first record's header and
 * starts a new epoch at offset 0, so later records overwrite blocks the file already has.
 * An fdatasync then flushes data only; an append that grows the file also commits the
 * size change through the file system's journal, which measured about twice as slow. Bytes
 * of an older epoch after the live records are stale and end the decoding like a torn
 * tail. The file is truncated when the store opens and closes, and when it has grown past
 * `RETAIN_BYTES`.
 *
 * git ignores unknown files at the top of a gitdir (`git fsck --full --strict` included).
 */
import { writeSync } from 'node:fs';
import { crc32 as zlibCrc32 } from 'node:zlib';
import type { FileHandle } from 'node:fs/promises';
import { encodeObject } from './git/objects.js';
import { applyDelta } from './pack-writer.js';

export const JOURNAL_NAME = 'svc-journal';
const MAX_RECORD = 1 << 30;
/** a checkpoint truncates a journal that grew past this instead of reusing it in place */
export const RETAIN_BYTES = 16 * 1024 * 1024;
const TYPE_CODES = { blob: 1, tree: 2, commit: 3 } as const;
const TYPE_NAMES = ['', 'blob', 'tree', 'commit'] as const;
const TREE_DELTA = 4;

export type ObjectType = 'blob' | 'tree' | 'commit';
export interface JournalObject {
  type: ObjectType;
  oid: string;
  /** the object's content, without git's `<type> <size>\0` header (empty until `resolveDeltas` for a decoded delta) */
  body: Buffer;
  /** a tree's previous version (written: stored as a delta when `delta` is given too; decoded: the base of a type 4 record) */
  deltaBase?: string;
  /** the git delta from `deltaBase` to `body` */
  delta?: Buffer;
}
export interface JournalRecord {
  /** set by the writer; records of one epoch are the live journal */
  epoch?: number;
  commit: string;
  parent: string | null;
  objects: JournalObject[];
}

/** CRC-32 (IEEE, zlib's): native, so a large record (trees of big directories) costs no JS loop. */
export function crc32(buf: Buffer): number {
  return zlibCrc32(buf) >>> 0;
}

const ZERO_OID = Buffer.alloc(20);

export function encodeRecord(rec: JournalRecord): Buffer {
  const parts: Buffer[] = [];
  const head = Buffer.alloc(8 + 48);
  head.writeUInt32BE((rec.epoch ?? 0) >>> 0, 8);
  Buffer.from(rec.commit, 'hex').copy(head, 12);
  (rec.parent ? Buffer.from(rec.parent, 'hex') : ZERO_OID).copy(head, 32);
  head.writeUInt32BE(rec.objects.length, 52);
  parts.push(head);
  for (const o of rec.objects) {
    const h = Buffer.alloc(25);
    Buffer.from(o.oid, 'hex').copy(h, 1);
    if (o.type === 'tree' && o.deltaBase !== undefined && o.delta !== undefined && o.delta.length + 20 < o.body.length) {
      h[0] = TREE_DELTA;
      h.writeUInt32BE(20 + o.delta.length, 21);
      parts.push(h, Buffer.from(o.deltaBase, 'hex'), o.delta);
      continue;
    }
    h[0] = TYPE_CODES[o.type];
    h.writeUInt32BE(o.body.length, 21);
    parts.push(h, o.body);
  }
  const buf = Buffer.concat(parts);
  const payload = buf.subarray(8);
  buf.writeUInt32BE(payload.length, 0);
  buf.writeUInt32BE(crc32(payload), 4);
  return buf;
}

function decodePayload(p: Buffer): JournalRecord | null {
  if (p.length < 48) return null;
  const epoch = p.readUInt32BE(0);
  const commit = p.toString('hex', 4, 24);
  const parentBuf = p.subarray(24, 44);
  const parent = parentBuf.equals(ZERO_OID) ? null : parentBuf.toString('hex');
  const count = p.readUInt32BE(44);
  const objects: JournalObject[] = [];
  let pos = 48;
  for (let i = 0; i < count; i++) {
    if (pos + 25 > p.length) return null;
    const code = p[pos]!;
    const type = code === TREE_DELTA ? 'tree' : TYPE_NAMES[code];
    if (!type) return null;
    const oid = p.toString('hex', pos + 1, pos + 21);
    const len = p.readUInt32BE(pos + 21);
    pos += 25;
    if (pos + len > p.length) return null;
    if (code === TREE_DELTA) {
      if (len < 21) return null;
      objects.push({
        type,
        oid,
        body: EMPTY,
        deltaBase: p.toString('hex', pos, pos + 20),
        delta: Buffer.from(p.subarray(pos + 20, pos + len)),
      });
    } else objects.push({ type, oid, body: Buffer.from(p.subarray(pos, pos + len)) });
    pos += len;
  }
  if (pos !== p.length) return null;
  return { epoch, commit, parent, objects };
}

const EMPTY = Buffer.alloc(0);

/**
 * Rebuilds the trees a chain of decoded records stores as deltas, in order: a base is an
 * earlier object of the chain or, for the first commit after a checkpoint, an object the
 * repository has (`readBase`). Each rebuilt tree must hash to its oid. Throws when a base is
 * missing or a tree does not match: the chain cannot be replayed as it was acknowledged.
 */
export async function resolveDeltas(records: JournalRecord[], readBase: (oid: string) => Promise<Buffer>): Promise<void> {
  const bodies = new Map<string, Buffer>();
  for (const rec of records) {
    for (const o of rec.objects) {
      if (o.body.length === 0 && o.delta !== undefined && o.deltaBase !== undefined) {
        const base = bodies.get(o.deltaBase) ?? (await readBase(o.deltaBase));
        o.body = applyDelta(base, o.delta);
        const { oid } = encodeObject('tree', o.body);
        if (oid !== o.oid) throw new Error(`journal: tree ${o.oid} rebuilt from ${o.deltaBase} hashes to ${oid}`);
      }
      if (o.type === 'tree') bodies.set(o.oid, o.body);
    }
  }
}

/**
 * Complete, intact records of a journal image, in order; `validBytes` is where the last
 * good record ends (anything after it is a torn or corrupt tail).
 */
export function decodeJournal(buf: Buffer): { records: JournalRecord[]; validBytes: number } {
  const records: JournalRecord[] = [];
  let pos = 0;
  while (pos + 8 <= buf.length) {
    const len = buf.readUInt32BE(pos);
    if (len === 0 || len > MAX_RECORD || pos + 8 + len > buf.length) break;
    const payload = buf.subarray(pos + 8, pos + 8 + len);
    if (crc32(payload) !== buf.readUInt32BE(pos + 4)) break;
    const rec = decodePayload(payload);
    if (!rec) break;
    if (records.length > 0 && rec.epoch !== records[0]!.epoch) break; // stale bytes of an earlier epoch
    records.push(rec);
    pos += 8 + len;
  }
  return { records, validBytes: pos };
}

/** Writes records into an open journal file handle (opened read-write, not appending). */
export class JournalWriter {
  private epoch = 1;
  private fileSize: number;
  constructor(
    private readonly fh: FileHandle,
    private size: number,
    private readonly doSync: boolean,
  ) {
    this.fileSize = size;
  }

  /** bytes of live records */
  get bytes(): number {
    return this.size;
  }

  /** Write one record after the live ones and make it durable; on failure the journal is cut back to where it was. */
  async append(rec: JournalRecord): Promise<void> {
    const before = this.size;
    try {
      const seq = this.write(rec);
      await this.syncTo(seq);
    } catch (err) {
      await this.truncate(before);
      throw err;
    }
  }

  /** records written so far (a count that never goes back; `syncTo` takes one) */
  private written = 0;
  /** records known durable */
  private synced = 0;
  private syncing: Promise<void> | null = null;
  /** told how long each group fdatasync took (seconds) */
  onSync: ((seconds: number) => void) | null = null;
  /** told when a group fdatasync starts; what it returns is called when that fdatasync ends, either way */
  onSyncStart: (() => () => void) | null = null;

  /**
   * Write one record after the live ones into the page cache, not yet durable (`syncTo` the
   * returned number makes it so). The copy is synchronous (~30 us for a commit's record; a
   * thread-pool round trip measured ~0.25 ms on the VM). A failed write leaves the live
   * records as they were (the torn bytes after them end decoding) and throws.
   */
  write(rec: JournalRecord): number {
    const buf = encodeRecord({ ...rec, epoch: this.epoch });
    const before = this.size;
    let off = 0;
    while (off < buf.length) off += writeSync(this.fh.fd, buf, off, buf.length - off, before + off);
    this.fileSize = Math.max(this.fileSize, before + buf.length);
    this.size = before + buf.length;
    return ++this.written;
  }

  /**
   * Resolves once record `seq` (from `write`) and everything before it is durable. Group
   * commit: one fdatasync covers every record written before it started, so writers whose
   * records were written while a sync was in flight share the next one. Rejects when an
   * fdatasync fails (what was written since the last good one is then of unknown state).
   */
  async syncTo(seq: number): Promise<void> {
    if (!this.doSync) {
      this.synced = Math.max(this.synced, seq);
      return;
    }
    while (this.synced < seq) {
      if (!this.syncing) {
        const target = this.written;
        const started = performance.now();
        const ended = this.onSyncStart?.();
        this.syncing = this.fh.datasync().then(
          () => {
            ended?.();
            this.onSync?.((performance.now() - started) / 1000);
            this.synced = Math.max(this.synced, target);
            this.syncing = null;
          },
          (err: unknown) => {
            ended?.();
            this.syncing = null;
            throw err;
          },
        );
      }
      await this.syncing;
    }
  }

  /** Resolves once every record written so far is durable. */
  syncAll(): Promise<void> {
    return this.syncTo(this.written);
  }

  /**
   * Empty the journal (its records are checkpointed): a new epoch starting at offset 0 with
   * the old first header zeroed, durably; the file keeps its blocks unless it grew past
   * `RETAIN_BYTES`. Throws when that fails.
   */
  async reset(): Promise<void> {
    if (this.size === 0) return;
    if (this.fileSize > RETAIN_BYTES) return this.truncate(0);
    writeSync(this.fh.fd, Buffer.alloc(8), 0, 8, 0);
    if (this.doSync) await this.fh.datasync();
    this.size = 0;
    this.epoch = (this.epoch + 1) >>> 0 || 1;
  }

  /** Cut the journal file to `size` bytes (durably). Throws when that fails. */
  async truncate(size: number): Promise<void> {
    await this.fh.truncate(size);
    if (this.doSync) await this.fh.datasync();
    this.size = size;
    this.fileSize = size;
  }

  close(): Promise<void> {
    return this.fh.close();
  }
}
