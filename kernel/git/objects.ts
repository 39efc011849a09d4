/**
 * Git object encoding, without git: the repository's path layout (`nodePath`), object
 * hashing (node:crypto) and loose-object deflate (node:zlib), tree serialization in git's
 * order, tree splicing with its pack delta (`spliceTree`, `spliceTreeDelta`), tree parsing,
 * commit identities and path validation. Pure functions; kernel/git/store.ts builds commits
 * from them.
 */
import type { CommitAuthor } from './types.js';
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { encodeDelta } from '../pack-writer.js';

export const MAIN_REF = 'refs/heads/main';
export const EMPTY_TREE_OID = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
export const OID_RE = /^[0-9a-f]{40}$/;
export const TREE_MODE = '40000';
export const FILE_MODE = '100644';

/** `nodes/<type>/<h2>/<id>.md`, `<h2>` = first two hex digits of sha1(id). */
export function nodePath(type: string, id: string): string {
  for (const [what, v] of [
    ['type', type],
    ['id', id],
  ] as const) {
    if (!v || v === '.' || v === '..' || /[/\\\0\n]/.test(v)) throw new Error(`invalid node ${what}: ${JSON.stringify(v)}`);
  }
  const h2 = createHash('sha1').update(id, 'utf8').digest('hex').slice(0, 2);
  return `nodes/${type}/${h2}/${id}.md`;
}

export interface TreeEntry {
  mode: string;
  oid: string;
}
export type Entries = Map<string, TreeEntry>;
export interface EncodedObject {
  type: 'blob' | 'tree' | 'commit';
  oid: string;
  /** content without the `<type> <size>\0` header */
  body: Buffer;
  /** an object this one is likely to be a small delta against (a directory's previous tree) */
  deltaBase?: string;
  /** the delta from `deltaBase` to this object, when known */
  delta?: Buffer;
}

export function isTreeMode(mode: string): boolean {
  return mode === '40000' || mode === '040000';
}
export function isBlobMode(mode: string): boolean {
  return mode === '100644' || mode === '100755' || mode === '120000';
}

export function wrap(type: string, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${type} ${body.length}\0`, 'latin1'), body]);
}
export function sha1Hex(buf: Buffer): string {
  return createHash('sha1').update(buf).digest('hex');
}
/** zlib level of loose objects: git's own default for them (`core.looseCompression` = 1). */
const LOOSE_LEVEL = 1;
export function encodeObject(type: EncodedObject['type'], body: Buffer): EncodedObject {
  const hash = createHash('sha1');
  hash.update(`${type} ${body.length}\0`, 'latin1');
  hash.update(body);
  return { type, oid: hash.digest('hex'), body };
}
export function looseBytes(o: EncodedObject): Buffer {
  return deflateSync(wrap(o.type, o.body), { level: LOOSE_LEVEL });
}

/** git's tree order: byte order of names, with trees compared as if they ended in '/'. */
export function serializeTree(entries: Entries): Buffer {
  const items: Array<{ name: string; mode: string; oid: string; key: string }> = [];
  let ascii = true;
  let size = 0;
  for (const [name, e] of entries) {
    const tree = isTreeMode(e.mode);
    const mode = tree ? TREE_MODE : e.mode; // git writes "40000", fsck --strict flags "040000"
    if (ascii && !/^[\x00-\x7f]*$/.test(name)) ascii = false;
    items.push({ name, mode, oid: e.oid, key: tree ? `${name}/` : name });
    size += mode.length + 1 + Buffer.byteLength(name, 'utf8') + 1 + 20;
  }
  // UTF-16 order is byte order for ASCII names; anything else compares as UTF-8 bytes
  if (ascii) items.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  else items.sort((a, b) => Buffer.compare(Buffer.from(a.key, 'utf8'), Buffer.from(b.key, 'utf8')));
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  for (const it of items) {
    pos += out.write(it.mode, pos, 'latin1');
    out[pos++] = 0x20;
    pos += out.write(it.name, pos, 'utf8');
    out[pos++] = 0;
    pos += out.write(it.oid, pos, 'hex');
  }
  return out;
}

/** One change to a directory: `entry` null deletes `name`; `mode` of the entry it replaces or deletes. */
export interface TreeChange {
  name: string;
  entry: TreeEntry | null;
  /** mode of the existing entry (null when `name` is new); decides the sort key of a delete */
  oldMode: string | null;
}

/** git's sort key of a tree entry: the name's UTF-8 bytes, with '/' appended for a tree. */
function entryKey(name: string, mode: string): Buffer {
  return Buffer.from(isTreeMode(mode) ? `${name}/` : name, 'utf8');
}

/**
 * Compares the base tree's entry name `body[start, end)` (a tree when `tree`) with a sort key.
 * Byte by byte in JavaScript: names differ within their first bytes, and a native
 * `Buffer.compare` call per entry was most of a splice's time at a few hundred entries a tree.
 */
function compareEntryKey(body: Buffer, start: number, end: number, tree: boolean, key: Buffer): number {
  const n = end - start;
  const m = n < key.length ? n : key.length;
  for (let i = 0; i < m; i++) {
    const a = body[start + i]!;
    const b = key[i]!;
    if (a !== b) return a < b ? -1 : 1;
  }
  if (n < key.length) {
    if (!tree) return -1;
    const next = key[n]!;
    if (next !== 0x2f) return 0x2f < next ? -1 : 1;
    return key.length === n + 1 ? 0 : -1;
  }
  if (n === key.length) return tree ? 1 : 0;
  return 1;
}

function entryBytes(name: string, e: TreeEntry): Buffer {
  const mode = isTreeMode(e.mode) ? TREE_MODE : e.mode;
  const nameLen = Buffer.byteLength(name, 'utf8');
  const out = Buffer.allocUnsafe(mode.length + 1 + nameLen + 1 + 20);
  let pos = out.write(mode, 0, 'latin1');
  out[pos++] = 0x20;
  pos += out.write(name, pos, 'utf8');
  out[pos++] = 0;
  out.write(e.oid, pos, 'hex');
  return out;
}

/**
 * Where each entry of a serialized tree starts (byte offsets, in order): one pass over the
 * body. A spliced tree gets its table from the splice (`spliceTreeDelta`), so a directory the
 * store keeps changing is scanned once, not at every commit.
 */
export function treeStarts(body: Buffer): Uint32Array {
  const out: number[] = [];
  let pos = 0;
  while (pos < body.length) {
    out.push(pos);
    // a mode is "100644", "100755", "120000", "160000" or "40000": found without a native call
    // (five digits first: a tree's name may begin with a space, a six-digit mode never has one at 5)
    const sp = body[pos + 5] === 0x20 ? pos + 5 : body[pos + 6] === 0x20 ? pos + 6 : body.indexOf(0x20, pos);
    let nul = sp < 0 ? -1 : sp + 1;
    while (nul >= 0 && nul < body.length && body[nul] !== 0) nul++;
    if (sp < 0 || nul < 0 || nul + 21 > body.length) throw new Error('corrupt tree object');
    pos = nul + 21;
  }
  return Uint32Array.from(out);
}

/**
 * The body of a tree after `changes`, spliced into the serialized body of the tree they
 * change (`base`, in git order with canonical modes): unchanged runs of entries are copied
 * as bytes, so a commit touching one entry of a large directory costs one copy of it instead
 * of rebuilding, sorting and re-encoding every entry. Gives the same bytes as `serializeTree`
 * of the changed entries (tested).
 */
export function spliceTree(base: Buffer, changes: TreeChange[]): Buffer {
  return spliceTreeDelta(base, changes).body;
}

/**
 * `spliceTree`, plus the git delta that turns `base` into the result (its copied runs and
 * inserted entries, as gitformat-pack delta instructions): what a checkpoint pack stores
 * instead of the whole tree, and the result's entry table (`treeStarts`).
 *
 * Each change finds its place by binary search over `baseStarts` (the base's entry table,
 * scanned when not given): a name is compared with about log2(n) entries instead of every
 * entry before it, and no entry's name is scanned for its end (an entry ends 21 bytes after
 * its name: the NUL and the 20-byte id). At 100,000 nodes a bucket directory holds about 390
 * entries and a 100-node commit splices about 85 of them.
 */
export function spliceTreeDelta(
  base: Buffer,
  changes: TreeChange[],
  baseStarts?: Uint32Array,
): { body: Buffer; delta: Buffer; starts: Uint32Array } {
  const sorted = changes
    .map((c) => ({ c, key: entryKey(c.name, c.entry ? c.entry.mode : (c.oldMode ?? FILE_MODE)) }))
    .sort((a, b) => Buffer.compare(a.key, b.key));
  const starts = baseStarts ?? treeStarts(base);
  const n = starts.length;
  const startOf = (i: number): number => (i < n ? starts[i]! : base.length);
  /** entry i against a sort key */
  const compareAt = (i: number, key: Buffer): number => {
    const pos = starts[i]!;
    const sp = base[pos + 5] === 0x20 ? pos + 5 : pos + 6;
    const nul = startOf(i + 1) - 21;
    const tree = sp - pos === 5 && base[pos] === 0x34 && base[pos + 1] === 0x30; // "40000"
    return compareEntryKey(base, sp + 1, nul, tree, key);
  };
  const parts: Buffer[] = [];
  const ops: Array<number | Buffer> = []; // a base offset (then its length), or inserted bytes
  const newStarts = new Uint32Array(n + sorted.length);
  let w = 0;
  let outPos = 0;
  // the pending run of unchanged base entries: from entry `runEntry`, at byte `runStart`
  let runEntry = 0;
  let runStart = 0;
  const flush = (toEntry: number): void => {
    const to = startOf(toEntry);
    if (to > runStart) {
      const shift = outPos - runStart;
      for (let x = runEntry; x < toEntry; x++) newStarts[w++] = starts[x]! + shift;
      parts.push(base.subarray(runStart, to));
      ops.push(runStart, to - runStart);
      outPos += to - runStart;
    }
  };
  const insert = (c: TreeChange): void => {
    if (!c.entry) return;
    const bytes = entryBytes(c.name, c.entry);
    newStarts[w++] = outPos;
    parts.push(bytes);
    ops.push(bytes);
    outPos += bytes.length;
  };
  let next = 0; // the first base entry not yet passed
  for (const { c, key } of sorted) {
    // the first entry at or after `key`
    let lo = next;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareAt(mid, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    flush(lo);
    insert(c);
    if (lo < n && compareAt(lo, key) === 0) {
      // replaced or deleted: the run goes on after it
      runEntry = lo + 1;
      next = lo + 1;
    } else {
      runEntry = lo;
      next = lo;
    }
    runStart = startOf(runEntry);
  }
  flush(n);
  const body = Buffer.concat(parts, outPos);
  return { body, delta: encodeDelta(base.length, body.length, ops), starts: w === newStarts.length ? newStarts : newStarts.slice(0, w) };
}

export function applyChanges(entries: Entries, changes: Iterable<TreeChange>): Entries {
  for (const c of changes) {
    if (c.entry) entries.set(c.name, c.entry);
    else entries.delete(c.name);
  }
  return entries;
}

export function parseTree(body: Buffer): Entries {
  const entries: Entries = new Map();
  let pos = 0;
  while (pos < body.length) {
    const sp = body.indexOf(0x20, pos);
    const nul = body.indexOf(0, sp);
    if (sp < 0 || nul < 0 || nul + 21 > body.length) throw new Error('corrupt tree object');
    const mode = body.toString('latin1', pos, sp);
    const name = body.toString('utf8', sp + 1, nul);
    const oid = body.toString('hex', nul + 1, nul + 21);
    entries.set(name, { mode, oid });
    pos = nul + 21;
  }
  return entries;
}

function cleanIdent(s: string, what: string): string {
  // fsck rejects '<', '>' and newlines inside identities; git itself strips them.
  const out = s.replace(/[<>\n\r\0]/g, '').trim();
  if (!out) throw new Error(`commit ${what} must not be empty`);
  return out;
}

export function formatIdent(a: CommitAuthor, now: number): string {
  const ts = Math.floor(a.timestamp ?? now);
  const tzMin = -(a.timezoneOffset ?? 0);
  const sign = tzMin < 0 ? '-' : '+';
  const abs = Math.abs(tzMin);
  const tz = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}${String(abs % 60).padStart(2, '0')}`;
  return `${cleanIdent(a.name, 'author name')} <${cleanIdent(a.email, 'author email')}> ${ts} ${tz}`;
}

export function validatePath(path: string): string[] {
  const segs = path.split('/');
  for (const s of segs) {
    if (!s || s === '.' || s === '..' || s.toLowerCase() === '.git' || s.includes('\0')) {
      throw new Error(`invalid path: ${JSON.stringify(path)}`);
    }
  }
  return segs;
}

/** '' | 'nodes' | 'nodes/' | 'nodes/task/' -> segments */
export function prefixSegments(prefix: string): string[] {
  const p = prefix.replace(/^\/+/, '').replace(/\/+$/, '');
  return p ? validatePath(p) : [];
}

export function parentDir(dir: string): string {
  const i = dir.lastIndexOf('/');
  return i < 0 ? '' : dir.slice(0, i);
}
export function baseName(dir: string): string {
  return dir.slice(dir.lastIndexOf('/') + 1);
}
export function depth(dir: string): number {
  if (!dir) return 0;
  let n = 1;
  for (let i = 0; i < dir.length; i++) if (dir.charCodeAt(i) === 47) n++;
  return n;
}
