/**
 * Startup loading of every node file, with an index snapshot.
 *
 * The snapshot (node:v8 serialize, written durably) holds a head commit and, for every
 * file under `nodes/` at that commit, its path, blob oid, content and parsed value. At
 * start:
 *   - no head in the repo                        -> 'empty'
 *   - snapshot head == HEAD                      -> 'snapshot' (nothing parsed)
 *   - snapshot of another commit still in the repo -> 'snapshot+diff' (only changed files parsed)
 *   - snapshot missing / corrupt / unreadable / of another format, or its head unknown
 *                                                -> 'full' (every file read and parsed)
 * A bad snapshot is never fatal. Errors thrown by `parse` propagate (a parser that must
 * tolerate bad files should catch and return an error marker itself).
 *
 * The file is gzipped (level 1, in the thread pool): the serialized form repeats every key
 * and field name, so it shrinks about tenfold (65 -> 6 MB at 100,000 nodes), for about 90 ms
 * of decompression at a start that deserializes for 360 ms anyway (docs/decisions.md "The
 * index snapshot is gzipped"). A snapshot written before, not gzipped, is still read.
 */
import { promises as fsp } from 'node:fs';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { deserialize, serialize } from 'node:v8';
import { constants as zlibConstants, gunzip, gzip } from 'node:zlib';
import { writeFileDurable } from './durable-fs.js';
import type { GitStore } from './git/types.js';

export interface LoadedFile {
  path: string;
  oid: string;
  content: string;
  parsed: unknown;
}

export interface NodeSnapshotOptions {
  /** the snapshot as `prefetchNodeSnapshot` read it (same file and tag) */
  prefetched?: Promise<SnapshotData | null>;
  /**
   * Opaque tag stored in the snapshot; a snapshot written with a different tag is ignored
   * (full load). Bump it whenever `parse` changes the shape of its output.
   */
  tag?: string;
}

export type LoadSource = 'empty' | 'snapshot' | 'snapshot+diff' | 'full';

const NODES_PREFIX = 'nodes/';
const FORMAT = 'workgraph-node-snapshot';
const VERSION = 1;
const OID_RE = /^[0-9a-f]{40}$/;

export interface SnapshotData {
  format: string;
  version: number;
  tag: string;
  head: string;
  files: LoadedFile[];
}

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);
/** zlib's output comes in chunks of this size (its default, 16 KB, made inflating 65 MB three times slower) */
const ZLIB_CHUNK = 1 << 20;

/** A snapshot file's bytes as written: gzipped, or (written before the gzip) the serialized form itself. */
export async function decodeSnapshot(raw: Buffer): Promise<unknown> {
  const gzipped = raw.length >= 18 && raw[0] === 0x1f && raw[1] === 0x8b;
  if (!gzipped) return deserialize(raw);
  // gzip's trailer holds the inflated size (mod 2^32): one output chunk of that size, no
  // concatenation of 65 chunks into a second 65 MB copy at 100,000 nodes
  // (a damaged trailer cannot ask for more than deflate's best ratio allows, nor past 1 GB)
  const size = raw.readUInt32LE(raw.length - 4);
  const fits = size < 2 ** 30 && size <= raw.length * 1032;
  return deserialize(await gunzipAsync(raw, { chunkSize: fits ? Math.max(ZLIB_CHUNK, size + 1) : ZLIB_CHUNK }));
}

/**
 * Starts reading and inflating the snapshot (the inflating runs in the thread pool) so a
 * tenant's start can open its git store meanwhile; `loadNodeFiles` takes the result as
 * `prefetched`. Never rejects: an unusable snapshot is null.
 */
export function prefetchNodeSnapshot(snapshotFile: string, opts: NodeSnapshotOptions = {}): Promise<SnapshotData | null> {
  return readSnapshot(snapshotFile, opts.tag ?? '');
}

async function readSnapshot(snapshotFile: string, tag: string): Promise<SnapshotData | null> {
  let raw: Buffer;
  try {
    raw = await fsp.readFile(snapshotFile);
  } catch {
    return null;
  }
  try {
    const d = (await decodeSnapshot(raw)) as Partial<SnapshotData> | null;
    if (!d || typeof d !== 'object') return null;
    if (d.format !== FORMAT || d.version !== VERSION || d.tag !== tag) return null;
    if (typeof d.head !== 'string' || !OID_RE.test(d.head) || !Array.isArray(d.files)) return null;
    for (const f of d.files as unknown[]) {
      const x = f as Partial<LoadedFile> | null;
      if (!x || typeof x !== 'object' || typeof x.path !== 'string' || typeof x.oid !== 'string' || typeof x.content !== 'string') {
        return null;
      }
    }
    return d as SnapshotData;
  } catch {
    return null;
  }
}

export async function loadNodeFiles(
  store: GitStore,
  snapshotFile: string,
  parse: (text: string) => unknown,
  opts: NodeSnapshotOptions = {},
): Promise<{ head: string | null; files: LoadedFile[]; source: LoadSource }> {
  const head = store.head();
  if (!head) return { head: null, files: [], source: 'empty' };

  const snap = await (opts.prefetched ?? readSnapshot(snapshotFile, opts.tag ?? ''));
  if (snap && snap.head === head) return { head, files: snap.files, source: 'snapshot' };

  if (snap) {
    let changes: Awaited<ReturnType<GitStore['diffFiles']>> | null;
    try {
      changes = await store.diffFiles(snap.head, head, NODES_PREFIX);
    } catch {
      changes = null; // snapshot head no longer (or never) in this repo
    }
    if (changes) {
      const byPath = new Map<string, LoadedFile>();
      for (const f of snap.files) byPath.set(f.path, f);
      for (const c of changes) {
        if (c.oid === null || c.content === null) byPath.delete(c.path);
        else byPath.set(c.path, { path: c.path, oid: c.oid, content: c.content, parsed: parse(c.content) });
      }
      return { head, files: [...byPath.values()], source: 'snapshot+diff' };
    }
  }

  const stored = await store.loadFiles(NODES_PREFIX);
  const files = stored.map((f) => ({ path: f.path, oid: f.oid, content: f.content, parsed: parse(f.content) }));
  return { head, files, source: 'full' };
}

/** Write the snapshot durably (gzipped; temp + fsync + rename), creating its directory if needed. */
export async function saveNodeSnapshot(
  snapshotFile: string,
  head: string,
  files: LoadedFile[],
  opts: NodeSnapshotOptions & { fsync?: boolean } = {},
): Promise<void> {
  const data: SnapshotData = {
    format: FORMAT,
    version: VERSION,
    tag: opts.tag ?? '',
    head,
    files: files.map((f) => ({ path: f.path, oid: f.oid, content: f.content, parsed: f.parsed })),
  };
  const buf = await gzipAsync(serialize(data), { level: zlibConstants.Z_BEST_SPEED, chunkSize: ZLIB_CHUNK });
  await fsp.mkdir(dirname(snapshotFile), { recursive: true });
  await writeFileDurable(snapshotFile, buf, { fsync: opts.fsync ?? true });
}
