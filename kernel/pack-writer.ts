/**
 * Writes git pack files (version 2) with their index (version 2): how the store writes
 * acknowledged commits out in bulk. One pack holds a batch of objects, each zlib-compressed;
 * a tree whose previous version (`deltaBase`) is earlier in the same pack is stored as an
 * OFS_DELTA against it (without that, every commit stored each directory it touched whole,
 * and at 100k nodes a 256-way shard directory is ~27 KB). The pack and its index are written to temp names, fsynced
 * (when durable), renamed (.pack first: git uses a pack once its .idx exists), and the
 * directory is fsynced. Format: gitformat-pack(5). Trees go in as stored zlib blocks
 * (incompressible SHA-1s; no zlib context per object); blobs and commits are deflated.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, unlinkSync } from 'node:fs';
import { open, unlink } from 'node:fs/promises';
import { crc32, deflateSync } from 'node:zlib';
import { fsyncDir } from './durable-fs.js';

export interface PackObject {
  type: 'blob' | 'tree' | 'commit';
  oid: string;
  body: Buffer;
  /**
   * An object this one probably differs little from (a directory's previous tree). When that
   * object is earlier in the same pack, this one is stored as an OFS_DELTA against it.
   */
  deltaBase?: string;
  /** the delta instructions from `deltaBase` to this object, when the caller knows them */
  delta?: Buffer;
}

/** git's default `pack.depth`: longest delta chain written */
export const MAX_DELTA_DEPTH = 50;
const OFS_DELTA = 6;

const TYPE_NUMBERS = { commit: 1, tree: 2, blob: 3 } as const;

/** the object header of a pack entry: type and inflated size, 7 bits per continuation byte */
function entryHeader(type: PackObject['type'] | typeof OFS_DELTA, size: number): Buffer {
  const bytes: number[] = [];
  let b = ((type === OFS_DELTA ? OFS_DELTA : TYPE_NUMBERS[type]) << 4) | (size & 0x0f);
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    bytes.push(b | 0x80);
    b = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  bytes.push(b);
  return Buffer.from(bytes);
}

/** OFS_DELTA's base distance: big-endian 7-bit groups, each continuation adding one (gitformat-pack). */
function ofsBytes(distance: number): Buffer {
  const bytes = [distance & 0x7f];
  let d = Math.floor(distance / 128);
  while (d > 0) {
    d -= 1;
    bytes.unshift(0x80 | (d & 0x7f));
    d = Math.floor(d / 128);
  }
  return Buffer.from(bytes);
}

function varint(n: number, out: number[]): void {
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
}

function copyOp(offset: number, size: number, out: number[]): void {
  // size 0 would mean 0x10000: every copy here is 1..0xffffff bytes
  let op = 0x80;
  const args: number[] = [];
  for (let i = 0; i < 4; i++) {
    const byte = Math.floor(offset / 2 ** (8 * i)) & 0xff;
    if (byte) {
      op |= 1 << i;
      args.push(byte);
    }
  }
  for (let i = 0; i < 3; i++) {
    const byte = (size >> (8 * i)) & 0xff;
    if (byte) {
      op |= 0x10 << i;
      args.push(byte);
    }
  }
  out.push(op, ...args);
}

/**
 * A git delta from a base of `baseLength` bytes to a target of `targetLength` bytes, from
 * `ops`: a number is a base offset followed by a length to copy; a Buffer is inserted.
 */
export function encodeDelta(baseLength: number, targetLength: number, ops: Array<number | Buffer>): Buffer {
  const out: number[] = [];
  varint(baseLength, out);
  varint(targetLength, out);
  const parts: Buffer[] = [];
  const flush = (): void => {
    if (out.length) parts.push(Buffer.from(out));
    out.length = 0;
  };
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    if (typeof op === 'number') {
      const len = ops[++i] as number;
      for (let off = 0; off < len; off += 0xffffff) copyOp(op + off, Math.min(0xffffff, len - off), out);
    } else {
      for (let off = 0; off < op.length; off += 127) {
        const len = Math.min(127, op.length - off);
        out.push(len);
        flush();
        parts.push(op.subarray(off, off + len));
      }
    }
  }
  flush();
  return Buffer.concat(parts);
}

/**
 * The target of a git delta (gitformat-pack "Deltified representation"): the inverse of
 * `encodeDelta`, for the commit journal's tree records. Throws on a delta that does not fit
 * `base` or its own stated sizes.
 */
export function applyDelta(base: Buffer, delta: Buffer): Buffer {
  let pos = 0;
  const size = (): number => {
    let n = 0;
    let shift = 0;
    let b: number;
    do {
      if (pos >= delta.length) throw new Error('truncated delta');
      b = delta[pos++]!;
      n += (b & 0x7f) * 2 ** shift;
      shift += 7;
    } while (b & 0x80);
    return n;
  };
  if (size() !== base.length) throw new Error('delta base size mismatch');
  const out = Buffer.allocUnsafe(size());
  let at = 0;
  while (pos < delta.length) {
    const op = delta[pos++]!;
    if (op & 0x80) {
      let off = 0;
      let len = 0;
      for (let i = 0; i < 4; i++) if (op & (1 << i)) off += delta[pos++]! * 2 ** (8 * i);
      for (let i = 0; i < 3; i++) if (op & (0x10 << i)) len += delta[pos++]! * 2 ** (8 * i);
      if (len === 0) len = 0x10000;
      if (off + len > base.length || at + len > out.length) throw new Error('delta copy out of range');
      base.copy(out, at, off, off + len);
      at += len;
    } else if (op > 0) {
      if (pos + op > delta.length || at + op > out.length) throw new Error('delta insert out of range');
      delta.copy(out, at, pos, pos + op);
      pos += op;
      at += op;
    } else throw new Error('delta opcode 0');
  }
  if (at !== out.length) throw new Error('delta target size mismatch');
  return out;
}

/** Length of the common prefix of `a` and `b` (native compares of 256-byte blocks, then bytes). */
function commonPrefix(a: Buffer, b: Buffer, limit: number): number {
  let i = 0;
  while (i + 256 <= limit && a.compare(b, i, i + 256, i, i + 256) === 0) i += 256;
  while (i < limit && a[i] === b[i]) i++;
  return i;
}

function commonSuffix(a: Buffer, b: Buffer, limit: number): number {
  let i = 0;
  const al = a.length;
  const bl = b.length;
  while (i + 256 <= limit && a.compare(b, bl - i - 256, bl - i, al - i - 256, al - i) === 0) i += 256;
  while (i < limit && a[al - i - 1] === b[bl - i - 1]) i++;
  return i;
}

/**
 * A git delta (gitformat-pack "Deltified representation") turning `base` into `target`: copy
 * the common prefix, insert what differs, copy the common suffix. A directory's next tree
 * differs from its previous one in an entry or a few, so this is small without a search.
 */
export function prefixSuffixDelta(base: Buffer, target: Buffer): Buffer {
  const limit = Math.min(base.length, target.length);
  const pre = commonPrefix(base, target, limit);
  const suf = commonSuffix(base, target, limit - pre);
  const out: number[] = [];
  varint(base.length, out);
  varint(target.length, out);
  for (let off = 0; off < pre; off += 0xffffff) copyOp(off, Math.min(0xffffff, pre - off), out);
  const head = Buffer.from(out);
  const parts: Buffer[] = [head];
  const midEnd = target.length - suf;
  for (let off = pre; off < midEnd; off += 127) {
    const len = Math.min(127, midEnd - off);
    parts.push(Buffer.from([len]), target.subarray(off, off + len));
  }
  const tail: number[] = [];
  for (let off = 0; off < suf; off += 0xffffff) copyOp(base.length - suf + off, Math.min(0xffffff, suf - off), tail);
  parts.push(Buffer.from(tail));
  return Buffer.concat(parts);
}

/**
 * A zlib stream of stored (uncompressed) blocks: RFC 1950 header, RFC 1951 blocks of at most
 * 65535 bytes, Adler-32 trailer. Trees are mostly SHA-1 bytes, which do not compress; this
 * skips a zlib context per object (~15 us each) and the search for matches.
 */
export function zlibStored(data: Buffer): Buffer {
  const blocks = Math.max(1, Math.ceil(data.length / 65535));
  const out = Buffer.allocUnsafe(2 + blocks * 5 + data.length + 4);
  out[0] = 0x78;
  out[1] = 0x01;
  let pos = 2;
  for (let b = 0; b < blocks; b++) {
    const start = b * 65535;
    const len = Math.min(65535, data.length - start);
    out[pos++] = b === blocks - 1 ? 1 : 0;
    out.writeUInt16LE(len, pos);
    out.writeUInt16LE(~len & 0xffff, pos + 2);
    pos += 4;
    data.copy(out, pos, start, start + len);
    pos += len;
  }
  let a = 1;
  let c = 0;
  for (let i = 0; i < data.length;) {
    const end = Math.min(data.length, i + 3800); // sums stay below 2^32 between reductions
    for (; i < end; i++) {
      a += data[i]!;
      c += a;
    }
    a %= 65521;
    c %= 65521;
  }
  out.writeUInt32BE(((c << 16) | a) >>> 0, pos);
  return out;
}

/**
 * One object's zlib stream (level 1), its output buffer sized to the object: zlib's default
 * output chunk (16 KB) was a fresh allocation outside Buffer's pool for every object, and with
 * the heap of a 100,000-node graph that allocation cost as much as the compression itself
 * (docs/performance.md "Memory, seed rate, disk and restart, seventh session").
 */
function deflate(data: Buffer): Buffer {
  // a window and a hash table no larger than the object needs: zlib's defaults (32 KB window,
  // memLevel 8) allocate about 270 KB of native memory per object, past glibc's mmap threshold,
  // and that churn kept RSS well above the heap after a bulk seed; a window of the object's size
  // loses nothing (matches cannot reach further back than its start)
  const windowBits = Math.min(15, Math.max(9, Math.ceil(Math.log2(data.length + 262))));
  const memLevel = Math.min(8, Math.max(1, windowBits - 7));
  return deflateSync(data, { level: 1, windowBits, memLevel, chunkSize: Math.min(16 * 1024, Math.max(64, data.length + 64)) });
}

let seq = 0;

/**
 * Write `buf` to `dir/tmpName`, fsync it when durable, and return the temp path. In the thread
 * pool: a checkpoint's pack is megabytes at 100k nodes, and its write and fsync on the main
 * thread held every request (reads included) for as long.
 */
async function writeTemp(dir: string, prefix: string, buf: Buffer, durable: boolean): Promise<string> {
  const path = `${dir}/${prefix}_${process.pid}_${(seq++).toString(36)}`;
  const fh = await open(path, 'wx', 0o444);
  try {
    let off = 0;
    while (off < buf.length) off += (await fh.write(buf, off, buf.length - off)).bytesWritten;
    if (durable) await fh.sync();
  } catch (err) {
    await fh.close().catch(() => undefined);
    await unlink(path).catch(() => undefined);
    throw err;
  }
  await fh.close();
  return path;
}

/** objects compressed per event-loop turn while a pack is built */
const BUILD_SLICE = 128;

/**
 * The pack bytes and the index bytes of `objects` (duplicates by oid dropped). Yields to the
 * event loop every `BUILD_SLICE` objects: a checkpoint after a burst compresses thousands of
 * objects, and reads keep being answered meanwhile.
 */
export async function buildPack(objects: PackObject[]): Promise<{ pack: Buffer; idx: Buffer; name: string; count: number }> {
  const unique = new Map<string, PackObject>();
  for (const o of objects) if (!unique.has(o.oid)) unique.set(o.oid, o);
  const list = [...unique.values()];

  const parts: Buffer[] = [];
  const head = Buffer.alloc(12);
  head.write('PACK', 0, 'latin1');
  head.writeUInt32BE(2, 4);
  head.writeUInt32BE(list.length, 8);
  parts.push(head);
  let offset = 12;
  const entries: Array<{ oid: Buffer; offset: number; crc: number }> = [];
  /** oid -> where it was written in this pack and the length of its delta chain */
  const written = new Map<string, { offset: number; depth: number; body: Buffer }>();
  for (let i = 0; i < list.length; i++) {
    if (i > 0 && i % BUILD_SLICE === 0) await new Promise<void>((r) => setImmediate(r));
    const o = list[i]!;
    const base = o.deltaBase !== undefined ? written.get(o.deltaBase) : undefined;
    let h: Buffer;
    let z: Buffer;
    let depth = 0;
    const delta = base && base.depth < MAX_DELTA_DEPTH ? (o.delta ?? prefixSuffixDelta(base.body, o.body)) : null;
    if (base && delta && delta.length < o.body.length / 2) {
      depth = base.depth + 1;
      h = Buffer.concat([entryHeader(OFS_DELTA, delta.length), ofsBytes(offset - base.offset)]);
      z = deflate(delta);
    } else {
      h = entryHeader(o.type, o.body.length);
      z = o.type === 'tree' ? zlibStored(o.body) : deflate(o.body);
    }
    written.set(o.oid, { offset, depth, body: o.body });
    entries.push({ oid: Buffer.from(o.oid, 'hex'), offset, crc: crc32(z, crc32(h)) });
    parts.push(h, z);
    offset += h.length + z.length;
  }
  const body = Buffer.concat(parts);
  const packSha = createHash('sha1').update(body).digest();
  const pack = Buffer.concat([body, packSha]);
  if (pack.length >= 0x80000000) throw new Error('pack too large for 32-bit offsets');

  entries.sort((a, b) => Buffer.compare(a.oid, b.oid));
  const n = entries.length;
  const idx = Buffer.alloc(8 + 256 * 4 + n * 20 + n * 4 + n * 4 + 20 + 20);
  idx.writeUInt32BE(0xff744f63, 0);
  idx.writeUInt32BE(2, 4);
  let pos = 8;
  let k = 0;
  for (let byte = 0; byte < 256; byte++) {
    while (k < n && entries[k]!.oid[0]! <= byte) k++;
    idx.writeUInt32BE(k, pos);
    pos += 4;
  }
  for (const e of entries) {
    e.oid.copy(idx, pos);
    pos += 20;
  }
  for (const e of entries) {
    idx.writeUInt32BE(e.crc >>> 0, pos);
    pos += 4;
  }
  for (const e of entries) {
    idx.writeUInt32BE(e.offset, pos);
    pos += 4;
  }
  packSha.copy(idx, pos);
  pos += 20;
  createHash('sha1').update(idx.subarray(0, pos)).digest().copy(idx, pos);
  return { pack, idx, name: `pack-${packSha.toString('hex')}`, count: n };
}

/**
 * Write `objects` as one pack + index under `<gitdir>/objects/pack`; durable (fsynced files
 * and directory) unless `durable` is false. Returns the pack's base name.
 */
export async function writePack(gitdir: string, objects: PackObject[], durable: boolean): Promise<string> {
  const dir = `${gitdir}/objects/pack`;
  mkdirSync(dir, { recursive: true });
  const { pack, idx, name } = await buildPack(objects);
  const tmpPack = await writeTemp(dir, 'tmp_wgpack', pack, durable);
  let tmpIdx: string | null = null;
  try {
    tmpIdx = await writeTemp(dir, 'tmp_wgidx', idx, durable);
    renameSync(tmpPack, `${dir}/${name}.pack`);
    renameSync(tmpIdx, `${dir}/${name}.idx`);
  } catch (err) {
    for (const p of [tmpPack, tmpIdx]) {
      if (!p) continue;
      try {
        unlinkSync(p);
      } catch {
        // renamed or gone
      }
    }
    throw err;
  }
  if (durable) await fsyncDir(dir);
  return name;
}
