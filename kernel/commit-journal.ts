/**
 * The git store's commit journal (write-ahead log), `<gitdir>/svc-journal`.
 *
 * One record per commit, appended and `fdatasync`ed before the commit is acknowledged:
 *
 *   u32be payload length | u32be crc32(payload) | payload
 *   payload = commit oid (20 bytes) | parent oid (20 bytes, zeros for none) | u32be count |
 *             count x ( u8 type (1 blob, 2 tree, 3 commit) | oid (20) | u32be len | deflated bytes )
 *
 * The ref value a record sets is its commit oid. Records form a chain (each record's parent
 * is the previous record's commit, the first one's parent is the ref as of the last
 * checkpoint). A record that fails its length or crc check can only be the torn tail of an
 * append that was never acknowledged; it and anything after it is dropped.
 *
 * git ignores unknown files at the top of a gitdir (`git fsck --full --strict` included).
 */
import type { FileHandle } from 'node:fs/promises';

export const JOURNAL_NAME = 'svc-journal';
const MAX_RECORD = 1 << 30;
const TYPE_CODES = { blob: 1, tree: 2, commit: 3 } as const;
const TYPE_NAMES = ['', 'blob', 'tree', 'commit'] as const;

export type ObjectType = 'blob' | 'tree' | 'commit';
export interface JournalObject {
  type: ObjectType;
  oid: string;
  deflated: Buffer;
}
export interface JournalRecord {
  commit: string;
  parent: string | null;
  objects: JournalObject[];
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (let i = 0; i < buf.length; i++) c = CRC_TABLE[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const ZERO_OID = Buffer.alloc(20);

export function encodeRecord(rec: JournalRecord): Buffer {
  const parts: Buffer[] = [];
  const head = Buffer.alloc(8 + 44);
  Buffer.from(rec.commit, 'hex').copy(head, 8);
  (rec.parent ? Buffer.from(rec.parent, 'hex') : ZERO_OID).copy(head, 28);
  head.writeUInt32BE(rec.objects.length, 48);
  parts.push(head);
  for (const o of rec.objects) {
    const h = Buffer.alloc(25);
    h[0] = TYPE_CODES[o.type];
    Buffer.from(o.oid, 'hex').copy(h, 1);
    h.writeUInt32BE(o.deflated.length, 21);
    parts.push(h, o.deflated);
  }
  const buf = Buffer.concat(parts);
  const payload = buf.subarray(8);
  buf.writeUInt32BE(payload.length, 0);
  buf.writeUInt32BE(crc32(payload), 4);
  return buf;
}

function decodePayload(p: Buffer): JournalRecord | null {
  if (p.length < 44) return null;
  const commit = p.toString('hex', 0, 20);
  const parentBuf = p.subarray(20, 40);
  const parent = parentBuf.equals(ZERO_OID) ? null : parentBuf.toString('hex');
  const count = p.readUInt32BE(40);
  const objects: JournalObject[] = [];
  let pos = 44;
  for (let i = 0; i < count; i++) {
    if (pos + 25 > p.length) return null;
    const type = TYPE_NAMES[p[pos]!];
    if (!type) return null;
    const oid = p.toString('hex', pos + 1, pos + 21);
    const len = p.readUInt32BE(pos + 21);
    pos += 25;
    if (pos + len > p.length) return null;
    objects.push({ type, oid, deflated: Buffer.from(p.subarray(pos, pos + len)) });
    pos += len;
  }
  if (pos !== p.length) return null;
  return { commit, parent, objects };
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
    records.push(rec);
    pos += 8 + len;
  }
  return { records, validBytes: pos };
}

/** Appends records to an open journal file handle (opened with 'a'). */
export class JournalWriter {
  constructor(
    private readonly fh: FileHandle,
    private size: number,
    private readonly doSync: boolean,
  ) {}

  get bytes(): number {
    return this.size;
  }

  /** Append one record and make it durable; on failure the journal is cut back to where it was. */
  async append(rec: JournalRecord): Promise<void> {
    const buf = encodeRecord(rec);
    const before = this.size;
    try {
      let off = 0;
      while (off < buf.length) {
        const { bytesWritten } = await this.fh.write(buf, off, buf.length - off);
        off += bytesWritten;
      }
      if (this.doSync) await this.fh.datasync();
      this.size = before + buf.length;
    } catch (err) {
      await this.truncate(before);
      throw err;
    }
  }

  /** Cut the journal to `size` bytes (durably). Throws when that fails. */
  async truncate(size: number): Promise<void> {
    await this.fh.truncate(size);
    if (this.doSync) await this.fh.datasync();
    this.size = size;
  }

  close(): Promise<void> {
    return this.fh.close();
  }
}
