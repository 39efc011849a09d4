/**
 * The graph's git repository: a bare repo whose branch `main` holds
 * `nodes/<type>/<h2>/<id>.md` files (docs/design.md §3).
 *
 * Writes never go through a working tree or index. The store keeps an in-memory cache of
 * the HEAD tree (directory path -> entries, loaded lazily tree by tree), so a commit
 * touching one file re-hashes only the trees on its path. Objects are hashed with
 * node:crypto and deflated with node:zlib here.
 *
 * Durability goes through a commit journal (`<gitdir>/svc-journal`, kernel/commit-journal.ts):
 * a commit writes one record (commit oid, parent, every new object's raw body) and
 * fdatasyncs it. That is the acknowledgement point: nothing else touches the disk on the
 * commit path, and the cache and head are swapped right after. A failed append is cut
 * back out of the journal, leaving head and cache untouched.
 *
 * Acknowledged commits are written out in bulk by a checkpoint: all their objects as one
 * pack + index (kernel/pack-writer.ts, fsynced), then `refs/heads/main` (temp + rename,
 * fsynced), then the journal is emptied. Checkpoints run on the commit queue every
 * `checkpointEvery` commits, `writeOutLagMs` after the first unwritten commit,
 * `checkpointIdleMs` after the last one, at close, and whenever a git process is about to
 * read the repository (`settled()`: `runGit` and `streamBlobs` wait for it themselves).
 * Until then in-process reads find the objects in memory. Why not loose objects per
 * commit: creating six files a commit, and each journal fdatasync then flushing them
 * too (ext4 orders data before the metadata it commits), cost more than everything else
 * on the write path together. Packs accumulate, one per checkpoint; past `packLimit` a
 * background `git repack --geometric=2 -d` merges them.
 *
 * On open, the journal is replayed: its intact chain of records is written as one pack,
 * the ref is moved forward to the last record, a torn tail (never acknowledged) is
 * dropped, temp files of an interrupted write-out are removed. With `fsync: false` there
 * is no journal: each commit writes loose objects and the ref before it is acknowledged,
 * nothing is fsynced.
 *
 * Bulk reads (`loadFiles`, `listFiles`, `diffFiles` from null) use the git CLI
 * (`ls-tree` + one `cat-file --batch`), which is an order of magnitude faster than
 * isomorphic-git's readBlob for thousands of blobs (FACTS.md).
 */
import type { StoreObserver } from './metrics.js';
import { createHash } from 'node:crypto';
import { mkdirSync, promises as fsp, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { spawn } from 'node:child_process';
import { deflateSync, inflateSync } from 'node:zlib';
import git from 'isomorphic-git';
import { createDurableFs, fsyncDir, writeFileDurable, type DurableFs } from './durable-fs.js';
import { decodeJournal, JOURNAL_NAME, JournalWriter } from './commit-journal.js';
import { encodeDelta, writePack, type PackObject } from './pack-writer.js';

export interface CommitAuthor {
  name: string;
  email: string;
  /** unix seconds, default now */
  timestamp?: number;
  /** minutes, same sign convention as Date#getTimezoneOffset (-120 = UTC+2); default 0 */
  timezoneOffset?: number;
}
/** `content: null` deletes the file. */
export interface FileChange {
  path: string;
  content: string | null;
}
export interface CommitInput {
  changes: FileChange[];
  author: CommitAuthor;
  committer?: CommitAuthor;
  message: string;
  /** must equal the current head (compare-and-swap guard); null for the first commit */
  expectedParent: string | null;
}
export interface CommitOutput {
  commit: string;
  /** path -> new blob oid, null for deleted */
  blobs: Record<string, string | null>;
}
export interface StoredFile {
  path: string;
  oid: string;
  content: string;
}
export interface GitStore {
  readonly gitdir: string;
  /** current commit of refs/heads/main, null when the repo has no commits */
  head(): string | null;
  /** resolves when the commit is durable: its journal record fdatasynced (without a journal: its loose objects and the ref written) */
  commit(input: CommitInput): Promise<CommitOutput>;
  /**
   * Group commit: resolves once the commit is the head and its journal record is written
   * (a process crash can no longer lose it), with `durable` resolving once it is fdatasynced
   * too. The next commit can start meanwhile; records written while one fdatasync runs share
   * the next. Whoever acknowledges the commit must await `durable` first. When an fdatasync
   * fails, `durable` rejects and the store takes no more commits (reopening replays the journal).
   */
  commitDeferred(input: CommitInput): Promise<CommitOutput & { durable: Promise<void> }>;
  /** all files at HEAD under the directory `prefix` ('' = everything) */
  listFiles(prefix: string): Promise<Array<{ path: string; oid: string }>>;
  /** all files at HEAD under the directory `prefix`, with content */
  loadFiles(prefix: string): Promise<StoredFile[]>;
  /**
   * Files under `prefix` that differ between two commits: oid/content null = deleted in
   * `toCommit`. `fromCommit` null means every file of `toCommit`.
   */
  diffFiles(
    fromCommit: string | null,
    toCommit: string,
    prefix: string,
  ): Promise<Array<{ path: string; oid: string | null; content: string | null }>>;
  readBlob(oid: string): Promise<string>;
  /** git blob sha1 of `content` (utf8), nothing written */
  blobOid(content: string): string;
  /**
   * Resolves when every acknowledged commit's loose objects and ref are written, so a git
   * process started afterwards sees them. `runGit` and `streamBlobs` wait for it themselves;
   * anything else that spawns git on `gitdir` must await it first.
   */
  settled(): Promise<void>;
  /** An object read without git: loose, or acknowledged and not yet written; null when packed or missing. */
  readObjectSync(oid: string): { type: string; body: Buffer } | null;
  /** commits replayed from the commit journal when the store opened */
  readonly replayedCommits: number;
  close(): Promise<void>;
}

export interface GitStoreOptions {
  /**
   * Durability (default true): every commit is appended to the commit journal and
   * fdatasynced before it is acknowledged; checkpoints fsync the objects and the ref.
   * `false` writes no journal and fsyncs nothing (objects and ref still temp + rename).
   */
  fsync?: boolean;
  /** testing hook: the fs isomorphic-git reads packed objects through */
  fs?: DurableFs;
  /**
   * testing hook: writes one loose object or the ref file atomically (temp + rename, no
   * fsync), synchronously; throws ENOENT when the directory is missing
   */
  writeFile?: (path: string, data: Buffer | string) => void;
  /** checkpoint after this many journaled commits (default 512) */
  checkpointEvery?: number;
  /** checkpoint after this many journal bytes (default 64 MiB) */
  checkpointBytes?: number;
  /** checkpoint when no commit came for this long (ms, default 1000) */
  checkpointIdleMs?: number;
  /** testing hook: `close()` leaves the journal un-checkpointed (as a crash would) */
  checkpointOnClose?: boolean;
  /** write acknowledged commits out (pack + ref) at most this long after them (ms, default 1000) */
  writeOutLagMs?: number;
  /** testing hook: writes a checkpoint's pack (default kernel/pack-writer.ts writePack) */
  writePack?: (gitdir: string, objects: PackObject[], durable: boolean) => Promise<string>;
  /**
   * background repack once this many packs exist (default 16; 0 = never): a full
   * `git repack -a -d -k` when the younger packs outweigh the largest, else `--geometric=2`
   */
  packLimit?: number;
  /** told how long each journal fdatasync (one per group of commits) and each checkpoint took (metrics) */
  observe?: StoreObserver;
  /**
   * Cluster mode (docs/scale-out.md): the tenant's ownership fence. With it a commit is acknowledged only after
   * `acknowledge` recorded it as the tenant's head under this process's fencing token, and a
   * checkpoint moves `refs/heads/main` only after `check` confirmed the token is still current.
   * Either rejecting (another process took the tenant over) stops the store taking commits.
   */
  fence?: StoreFence;
  /** told after each checkpoint that moved `refs/heads/main` (the off-site copy: kernel/backup-push.ts) */
  onCheckpoint?: (head: string) => void;
}

export interface StoreFence {
  /** record `commit` (durable in the journal) as the acknowledged head; rejects when the tenant is no longer ours */
  acknowledge(commit: string): Promise<void>;
  /** rejects when the tenant is no longer ours */
  check(): Promise<void>;
}

/** Thrown by `commit` when `expectedParent` is not the current head. */
export class HeadMismatchError extends Error {
  constructor(
    readonly expected: string | null,
    readonly actual: string | null,
  ) {
    super(`expected parent ${expected ?? '(none)'} but head is ${actual ?? '(none)'}`);
    this.name = 'HeadMismatchError';
  }
}

export const MAIN_REF = 'refs/heads/main';
export const EMPTY_TREE_OID = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
const OID_RE = /^[0-9a-f]{40}$/;
const TREE_MODE = '40000';
const FILE_MODE = '100644';
/** pack files whose count starts a background geometric repack */
const PACK_LIMIT = 16;

let tmpSeq = 0;
/** Atomic replace without fsync: a unique temp name beside `path`, then rename. */
export function writeFileAtomicSync(path: string, data: Buffer | string): void {
  const slash = path.lastIndexOf('/');
  const dir = path.slice(0, slash);
  const uniq = `${process.pid}_${(tmpSeq++).toString(36)}`;
  // git's own temp-object name inside objects/xx/; elsewhere a dot-name ending in .lock, which git skips
  const tmp = /\/objects\/[0-9a-f]{2}$/.test(dir) ? `${dir}/tmp_obj_${uniq}` : `${dir}/.${path.slice(slash + 1)}.${uniq}.tmp.lock`;
  writeFileSync(tmp, data, { flag: 'wx' });
  try {
    renameSync(tmp, path);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // already gone
    }
    throw err;
  }
}

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

// ---------------------------------------------------------------------------------------
// object encoding

interface TreeEntry {
  mode: string;
  oid: string;
}
type Entries = Map<string, TreeEntry>;
interface EncodedObject {
  type: 'blob' | 'tree' | 'commit';
  oid: string;
  /** content without the `<type> <size>\0` header */
  body: Buffer;
  /** an object this one is likely to be a small delta against (a directory's previous tree) */
  deltaBase?: string;
  /** the delta from `deltaBase` to this object, when known */
  delta?: Buffer;
}

function isTreeMode(mode: string): boolean {
  return mode === '40000' || mode === '040000';
}
function isBlobMode(mode: string): boolean {
  return mode === '100644' || mode === '100755' || mode === '120000';
}

function wrap(type: string, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${type} ${body.length}\0`, 'latin1'), body]);
}
function sha1Hex(buf: Buffer): string {
  return createHash('sha1').update(buf).digest('hex');
}
/** zlib level of loose objects: git's own default for them (`core.looseCompression` = 1). */
const LOOSE_LEVEL = 1;
function encodeObject(type: EncodedObject['type'], body: Buffer): EncodedObject {
  const hash = createHash('sha1');
  hash.update(`${type} ${body.length}\0`, 'latin1');
  hash.update(body);
  return { type, oid: hash.digest('hex'), body };
}
function looseBytes(o: EncodedObject): Buffer {
  return deflateSync(wrap(o.type, o.body), { level: LOOSE_LEVEL });
}

/** git's tree order: byte order of names, with trees compared as if they ended in '/'. */
function serializeTree(entries: Entries): Buffer {
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

/** Compares the base tree's entry name `body[start, end)` (a tree when `tree`) with a sort key. */
function compareEntryKey(body: Buffer, start: number, end: number, tree: boolean, key: Buffer): number {
  const n = end - start;
  const m = Math.min(n, key.length);
  const r = body.compare(key, 0, m, start, start + m);
  if (r !== 0) return r;
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
 * The body of a tree after `changes`, spliced into the serialized body of the tree they
 * change (`base`, in git order with canonical modes): unchanged runs of entries are copied
 * as bytes, so a commit touching one entry of a large directory costs one pass of
 * `indexOf` over it instead of rebuilding, sorting and re-encoding every entry. Gives the
 * same bytes as `serializeTree` of the changed entries (tested).
 */
export function spliceTree(base: Buffer, changes: TreeChange[]): Buffer {
  return spliceTreeDelta(base, changes).body;
}

/**
 * `spliceTree`, plus the git delta that turns `base` into the result (its copied runs and
 * inserted entries, as gitformat-pack delta instructions): what a checkpoint pack stores
 * instead of the whole tree.
 */
export function spliceTreeDelta(base: Buffer, changes: TreeChange[]): { body: Buffer; delta: Buffer } {
  const sorted = changes
    .map((c) => ({ c, key: entryKey(c.name, c.entry ? c.entry.mode : (c.oldMode ?? FILE_MODE)) }))
    .sort((a, b) => Buffer.compare(a.key, b.key));
  const parts: Buffer[] = [];
  const ops: Array<number | Buffer> = []; // a base offset (then its length), or inserted bytes
  let ci = 0;
  let runStart = 0;
  let pos = 0;
  const copy = (from: number, to: number): void => {
    if (to <= from) return;
    parts.push(base.subarray(from, to));
    ops.push(from, to - from);
  };
  const emit = (k: number, at: number): void => {
    copy(runStart, at);
    const { c } = sorted[k]!;
    if (c.entry) {
      const bytes = entryBytes(c.name, c.entry);
      parts.push(bytes);
      ops.push(bytes);
    }
  };
  while (pos < base.length && ci < sorted.length) {
    const sp = base.indexOf(0x20, pos);
    const nul = base.indexOf(0, sp);
    if (sp < 0 || nul < 0 || nul + 21 > base.length) throw new Error('corrupt tree object');
    const tree = sp - pos === 5 && base[pos] === 0x34 && base[pos + 1] === 0x30; // "40000"
    const end = nul + 21;
    let c = compareEntryKey(base, sp + 1, nul, tree, sorted[ci]!.key);
    while (c > 0) {
      emit(ci, pos);
      runStart = pos;
      ci++;
      if (ci >= sorted.length) break;
      c = compareEntryKey(base, sp + 1, nul, tree, sorted[ci]!.key);
    }
    if (ci < sorted.length && c === 0) {
      emit(ci, pos);
      runStart = end;
      ci++;
    }
    pos = end;
  }
  copy(runStart, base.length);
  for (; ci < sorted.length; ci++) {
    const { c } = sorted[ci]!;
    if (c.entry) {
      const bytes = entryBytes(c.name, c.entry);
      parts.push(bytes);
      ops.push(bytes);
    }
  }
  const body = Buffer.concat(parts);
  return { body, delta: encodeDelta(base.length, body.length, ops) };
}

function applyChanges(entries: Entries, changes: Iterable<TreeChange>): Entries {
  for (const c of changes) {
    if (c.entry) entries.set(c.name, c.entry);
    else entries.delete(c.name);
  }
  return entries;
}

function parseTree(body: Buffer): Entries {
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

function formatIdent(a: CommitAuthor, now: number): string {
  const ts = Math.floor(a.timestamp ?? now);
  const tzMin = -(a.timezoneOffset ?? 0);
  const sign = tzMin < 0 ? '-' : '+';
  const abs = Math.abs(tzMin);
  const tz = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}${String(abs % 60).padStart(2, '0')}`;
  return `${cleanIdent(a.name, 'author name')} <${cleanIdent(a.email, 'author email')}> ${ts} ${tz}`;
}

function validatePath(path: string): string[] {
  const segs = path.split('/');
  for (const s of segs) {
    if (!s || s === '.' || s === '..' || s.toLowerCase() === '.git' || s.includes('\0')) {
      throw new Error(`invalid path: ${JSON.stringify(path)}`);
    }
  }
  return segs;
}

/** '' | 'nodes' | 'nodes/' | 'nodes/task/' -> segments */
function prefixSegments(prefix: string): string[] {
  const p = prefix.replace(/^\/+/, '').replace(/\/+$/, '');
  return p ? validatePath(p) : [];
}

function parentDir(dir: string): string {
  const i = dir.lastIndexOf('/');
  return i < 0 ? '' : dir.slice(0, i);
}
function baseName(dir: string): string {
  return dir.slice(dir.lastIndexOf('/') + 1);
}
function depth(dir: string): number {
  if (!dir) return 0;
  let n = 1;
  for (let i = 0; i < dir.length; i++) if (dir.charCodeAt(i) === 47) n++;
  return n;
}


// ---------------------------------------------------------------------------------------
// git CLI helpers

/** git's environment without the caller's GIT_* overrides, in the C locale. */
export function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  env.GIT_CONFIG_NOSYSTEM = '1';
  env.LC_ALL = 'C';
  return env;
}

/** Open stores by resolved gitdir: git processes wait for a store's writes to settle. */
const openStores = new Map<string, GitStore>();
/** Resolves when the store open on `gitdir` (if any) has written every acknowledged commit out. */
export function gitdirSettled(gitdir: string): Promise<void> {
  return openStores.get(resolvePath(gitdir))?.settled() ?? Promise.resolve();
}

/** Runs one git command against a bare repository and collects its stdout. */
export async function runGit(gitdir: string, args: string[]): Promise<Buffer> {
  await gitdirSettled(gitdir);
  return runGitNoSettle(gitdir, args);
}

/** Sizes in bytes of the repository's pack files. */
async function packSizes(gitdir: string): Promise<number[]> {
  const dir = `${gitdir}/objects/pack`;
  const sizes: number[] = [];
  for (const name of await fsp.readdir(dir).catch(() => [] as string[])) {
    if (!name.endsWith('.pack')) continue;
    const st = await fsp.stat(`${dir}/${name}`).catch(() => null);
    if (st) sizes.push(st.size);
  }
  return sizes;
}

/** Number of pack files in the repository. */
async function countPacks(gitdir: string): Promise<number> {
  try {
    return (await fsp.readdir(`${gitdir}/objects/pack`)).filter((n) => n.endsWith('.pack')).length;
  } catch {
    return 0;
  }
}

function runGitNoSettle(gitdir: string, args: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['--git-dir', gitdir, '--literal-pathspecs', ...args], {
      env: gitEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(Buffer.concat(out));
      else reject(new Error(`git ${args[0]} failed (${code}): ${Buffer.concat(err).toString('utf8').trim()}`));
    });
  });
}

/** Parse `git ls-tree -r -z` output, keeping blobs only. */
function parseLsTree(out: Buffer): Array<{ path: string; oid: string }> {
  const files: Array<{ path: string; oid: string }> = [];
  let pos = 0;
  while (pos < out.length) {
    const end = out.indexOf(0, pos);
    const stop = end < 0 ? out.length : end;
    const tab = out.indexOf(0x09, pos);
    if (tab < 0 || tab > stop) throw new Error('unexpected ls-tree output');
    // "<mode> SP <type> SP <oid> TAB <path>"
    const meta = out.toString('latin1', pos, tab);
    const [, type, oid] = meta.split(' ');
    if (type === 'blob' && oid) files.push({ path: out.toString('utf8', tab + 1, stop), oid });
    pos = stop + 1;
  }
  return files;
}

/**
 * Streams every oid through one `git cat-file --batch --buffer`, handing each blob to
 * `onBlob` in input order as it arrives (the whole set is never held at once). An oid git
 * reports missing is skipped, or fails the call with `missing: 'fail'`.
 */
export async function streamBlobs(gitdir: string, oids: string[], onBlob: (oid: string, text: string) => void, opts: { missing?: 'skip' | 'fail' } = {}): Promise<void> {
  if (oids.length === 0) return;
  await gitdirSettled(gitdir);
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['--git-dir', gitdir, 'cat-file', '--batch', '--buffer'], { env: gitEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    let chunks: Buffer[] = [];
    let avail = 0;
    /** bytes of the current record (content + LF); -1 while its header is unread */
    let need = -1;
    let current = '';
    let failure: Error | null = null;
    const errOut: Buffer[] = [];

    const fail = (e: Error): void => {
      if (failure) return;
      failure = e;
      child.kill();
    };
    const pump = (): void => {
      let buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, avail);
      let pos = 0;
      for (;;) {
        if (need < 0) {
          const nl = buf.indexOf(10, pos);
          if (nl < 0) break;
          const header = buf.toString('latin1', pos, nl).split(' ');
          pos = nl + 1;
          if (header.length === 2 && header[1] === 'missing' && opts.missing !== 'fail') continue;
          if (header.length !== 3 || header[1] !== 'blob') {
            fail(new Error(`cat-file: unexpected header "${header.join(' ')}"`));
            return;
          }
          current = header[0]!;
          need = Number(header[2]) + 1;
        }
        if (buf.length - pos < need) break;
        try {
          onBlob(current, buf.toString('utf8', pos, pos + need - 1));
        } catch (e) {
          fail(e as Error);
          return;
        }
        pos += need;
        need = -1;
      }
      buf = buf.subarray(pos);
      chunks = buf.length ? [buf] : [];
      avail = buf.length;
    };

    child.stdout.on('data', (c: Buffer) => {
      if (failure) return;
      chunks.push(c);
      avail += c.length;
      // re-scan only when the pending record can be complete (no O(n^2) on a large blob)
      if (need < 0 || avail >= need) pump();
    });
    child.stderr.on('data', (c: Buffer) => errOut.push(c));
    child.stdin.on('error', (e) => fail(e));
    child.on('error', (e) => fail(e));
    child.on('close', (code) => {
      if (failure) return reject(failure);
      if (code !== 0) return reject(new Error(`git cat-file failed (${code}): ${Buffer.concat(errOut).toString('utf8').trim()}`));
      resolve();
    });
    child.stdin.end(oids.join('\n') + '\n');
  });
}

/** Every oid's blob through one `git cat-file --batch`, in input order, utf8-decoded. */
async function catFileBatch(gitdir: string, oids: string[]): Promise<string[]> {
  const results: string[] = [];
  await streamBlobs(gitdir, oids, (_oid, text) => void results.push(text), { missing: 'fail' });
  if (results.length !== oids.length) throw new Error(`git cat-file returned ${results.length} of ${oids.length} objects`);
  return results;
}

// ---------------------------------------------------------------------------------------

interface CachedTree {
  oid: string;
  entries: Entries;
  /** the serialized tree when its modes are canonical (what `spliceTree` builds on) */
  body: Buffer | null;
}

/** A directory's tree as a commit builds it; `swapHead` turns it into the cached HEAD tree. */
interface NewTree {
  oid: string;
  body: Buffer;
  base: CachedTree | null;
  changes: TreeChange[];
}

/** A directory changed by the commit being built: its HEAD tree (if any) and the changes to it. */
interface OverlayDir {
  base: CachedTree | null;
  changes: Map<string, TreeChange>;
}

function overlayGet(d: OverlayDir, name: string): TreeEntry | undefined {
  const c = d.changes.get(name);
  if (c) return c.entry ?? undefined;
  return d.base?.entries.get(name);
}

function overlaySet(d: OverlayDir, name: string, entry: TreeEntry | null): void {
  const prev = d.changes.get(name);
  const oldMode = prev ? prev.oldMode : (d.base?.entries.get(name)?.mode ?? null);
  d.changes.set(name, { name, entry, oldMode });
}

function overlaySize(d: OverlayDir): number {
  let n = d.base ? d.base.entries.size : 0;
  for (const c of d.changes.values()) {
    if (c.entry && c.oldMode === null) n++;
    else if (!c.entry && c.oldMode !== null) n--;
  }
  return n;
}

class GitStoreImpl implements GitStore {
  private headOid: string | null;
  private rootTree: string;
  /** dir path ('' = root) -> tree at HEAD; only directories loaded so far */
  private trees = new Map<string, CachedTree>();
  private queue: Promise<unknown> = Promise.resolve();
  /** set when close() starts: no timers are armed or fire after it */
  private closing = false;
  private closed = false;
  private journalClosed = false;
  private igCache: object = {};
  /** set when a failed commit could not be taken back out of the journal: no more commits */
  private broken: Error | null = null;
  private recordsSinceCheckpoint = 0;
  private idleTimer: NodeJS.Timeout | null = null;
  private readonly writeFile: (path: string, data: Buffer | string) => void;
  /** journaled (acknowledged) objects not yet written out to a pack */
  private unwritten = new Map<string, EncodedObject>();
  /** acknowledged commits whose objects and ref are not written out yet, oldest first */
  private unwrittenCommits: Array<{ commit: string; objects: EncodedObject[] }> = [];
  /** pack files in objects/pack (counted at open, then as checkpoints and repacks add and merge them) */
  private packs = 0;
  private repacking: Promise<void> | null = null;
  /** cluster mode: the newest journal record known durable, and the newest whose acknowledgement reached the fence */
  private ackTarget = { seq: 0, commit: '' };
  private ackedSeq = 0;
  private lastJournaled = { seq: 0, commit: '' };
  /** commits replayed from the journal at open (cluster mode: those past the acknowledged head were never acknowledged) */
  replayedCommits = 0;
  private acking: Promise<void> | null = null;
  /** bounds how long an acknowledged commit stays invisible to git processes */
  private lagTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly gitdir: string,
    private readonly fs: DurableFs,
    private readonly journal: JournalWriter | null,
    private readonly opts: GitStoreOptions,
    head: string | null,
    rootTree: string,
  ) {
    this.headOid = head;
    this.rootTree = rootTree;
    this.writeFile = opts.writeFile ?? writeFileAtomicSync;
  }

  /**
   * Read the root tree of the current head. A packed head commit is read with one
   * `git cat-file` (git binary-searches the pack index): isomorphic-git would first load the
   * whole index of the pack into a map, ~0.1 s of a 10k-node start and memory per object held
   * from then on; that now happens at the first commit instead, if ever.
   */
  async init(): Promise<void> {
    if (this.headOid) {
      if (this.readLooseSync(this.headOid)) this.rootTree = await this.commitTree(this.headOid);
      else {
        const text = (await runGitNoSettle(this.gitdir, ['cat-file', 'commit', this.headOid])).toString('latin1', 0, 46);
        const m = /^tree ([0-9a-f]{40})\n/.exec(text);
        if (!m) throw new Error(`corrupt commit ${this.headOid}`);
        this.rootTree = m[1]!;
      }
    }
    this.packs = await countPacks(this.gitdir);
  }

  head(): string | null {
    return this.headOid;
  }

  blobOid(content: string): string {
    return sha1Hex(wrap('blob', Buffer.from(content, 'utf8')));
  }

  // ---- object reading -------------------------------------------------------------

  /** A loose object, or null when it is not stored loose (packed or missing). */
  readObjectSync(oid: string): { type: string; body: Buffer } | null {
    return OID_RE.test(oid) ? this.readLooseSync(oid) : null;
  }

  private readLooseSync(oid: string): { type: string; body: Buffer } | null {
    const mem = this.unwritten.get(oid);
    if (mem) return { type: mem.type, body: mem.body };
    let raw: Buffer;
    try {
      raw = readFileSync(`${this.gitdir}/objects/${oid.slice(0, 2)}/${oid.slice(2)}`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    const full = inflateSync(raw);
    const nul = full.indexOf(0);
    const [type, size] = full.toString('latin1', 0, nul).split(' ');
    const body = full.subarray(nul + 1);
    if (nul < 0 || Number(size) !== body.length) throw new Error(`corrupt object ${oid}`);
    return { type: type!, body };
  }

  async readObject(oid: string): Promise<{ type: string; body: Buffer }> {
    if (!OID_RE.test(oid)) throw new Error(`invalid oid: ${oid}`);
    const loose = this.readLooseSync(oid);
    if (loose) return loose;
    // Packed (e.g. after `git gc`): let isomorphic-git find it in the pack files.
    let r: Awaited<ReturnType<typeof git.readObject>>;
    try {
      r = await git.readObject({ fs: this.fs, gitdir: this.gitdir, oid, format: 'content', cache: this.igCache });
    } catch {
      // a background repack may have replaced the packs isomorphic-git has cached
      this.igCache = {};
      r = await git.readObject({ fs: this.fs, gitdir: this.gitdir, oid, format: 'content', cache: this.igCache });
    }
    return { type: r.type, body: Buffer.from(r.object as Uint8Array) };
  }

  private async readTreeEntries(oid: string): Promise<Entries> {
    return (await this.readTree(oid)).entries;
  }

  private async readTree(oid: string): Promise<CachedTree> {
    if (oid === EMPTY_TREE_OID) return { oid, entries: new Map(), body: Buffer.alloc(0) };
    const o = await this.readObject(oid);
    if (o.type !== 'tree') throw new Error(`${oid} is a ${o.type}, not a tree`);
    const entries = parseTree(o.body);
    let canonical = true;
    for (const e of entries.values()) if (e.mode === '040000') canonical = false;
    return { oid, entries, body: canonical ? o.body : null };
  }

  private async commitTree(commit: string): Promise<string> {
    const o = await this.readObject(commit);
    if (o.type !== 'commit') throw new Error(`${commit} is a ${o.type}, not a commit`);
    const m = /^tree ([0-9a-f]{40})\n/.exec(o.body.toString('latin1', 0, 46));
    if (!m) throw new Error(`corrupt commit ${commit}`);
    return m[1]!;
  }

  async readBlob(oid: string): Promise<string> {
    const o = await this.readObject(oid);
    if (o.type !== 'blob') throw new Error(`${oid} is a ${o.type}, not a blob`);
    return o.body.toString('utf8');
  }

  /**
   * The HEAD tree of `dir`, loading it (and its ancestors) into the cache; null if absent.
   * Called only from `doCommit` (under the commit lock).
   */
  private async loadDir(dir: string): Promise<CachedTree | null> {
    const hit = this.trees.get(dir);
    if (hit) return hit;
    let oid: string;
    if (dir === '') {
      oid = this.rootTree;
    } else {
      const parent = await this.loadDir(parentDir(dir));
      const e = parent?.entries.get(baseName(dir));
      if (!e || !isTreeMode(e.mode)) return null;
      oid = e.oid;
    }
    // only called under the commit lock, so the cache cannot change while we read
    const t = await this.readTree(oid);
    this.trees.set(dir, t);
    return t;
  }

  // ---- writing --------------------------------------------------------------------

  async commit(input: CommitInput): Promise<CommitOutput> {
    const { durable, ...out } = await this.commitDeferred(input);
    await durable;
    return out;
  }

  commitDeferred(input: CommitInput): Promise<CommitOutput & { durable: Promise<void> }> {
    const run = this.queue.then(() => this.doCommit(input));
    this.queue = run.then(
      () => this.afterCommit(),
      () => undefined,
    );
    return run;
  }

  /**
   * One loose object, temp + rename, no fsync: the write path without a journal.
   * Synchronous: ~30 us a file, against ~70 us and four thread-pool round trips async.
   */
  private writeLoose(o: EncodedObject): void {
    const dir = `${this.gitdir}/objects/${o.oid.slice(0, 2)}`;
    const path = `${dir}/${o.oid.slice(2)}`;
    const bytes = looseBytes(o);
    try {
      this.writeFile(path, bytes);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      try {
        mkdirSync(dir);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      this.writeFile(path, bytes);
    }
  }

  private writeRef(oid: string): void {
    const path = `${this.gitdir}/${MAIN_REF}`;
    try {
      this.writeFile(path, `${oid}\n`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      mkdirSync(`${this.gitdir}/refs/heads`, { recursive: true });
      this.writeFile(path, `${oid}\n`);
    }
  }

  /** Runs on the queue after every successful commit: checkpoint now, or arm the idle timer. */
  private async afterCommit(): Promise<void> {
    if (!this.journal || this.closing) return;
    if (
      this.recordsSinceCheckpoint >= (this.opts.checkpointEvery ?? 512) ||
      this.journal.bytes >= (this.opts.checkpointBytes ?? 64 * 1024 * 1024)
    ) {
      await this.checkpoint().catch(() => undefined); // retried by the next trigger; the journal still holds everything
      return;
    }
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.closing) return;
      this.queue = this.queue.then(() => this.checkpoint()).catch(() => undefined);
    }, this.opts.checkpointIdleMs ?? 1000);
    this.idleTimer.unref();
    if (!this.lagTimer && this.unwrittenCommits.length > 0) {
      this.lagTimer = setTimeout(() => {
        this.lagTimer = null;
        if (!this.closing) void this.settled();
      }, this.opts.writeOutLagMs ?? 1000);
      this.lagTimer.unref();
    }
  }

  /**
   * The write-out: every acknowledged commit not yet written goes into one pack (fsynced,
   * renamed, directory fsynced), then the ref is moved to the last of them (temp + rename,
   * fsynced), then the journal is emptied. Runs on the queue, so no commit is in flight.
   * A failure stops further commits (the journal still holds everything; reopening the
   * store replays it); reads keep being served from `unwritten`.
   */
  private async checkpoint(): Promise<void> {
    if (!this.journal || this.journalClosed) return;
    const started = performance.now();
    try {
      await this.writeOut();
    } finally {
      this.opts.observe?.checkpoint((performance.now() - started) / 1000);
    }
  }

  private async writeOut(): Promise<void> {
    if (!this.journal || this.journalClosed) return;
    if (this.lagTimer) clearTimeout(this.lagTimer);
    this.lagTimer = null;
    if (this.broken) return;
    try {
      // records written but not yet fdatasynced (group commit) first: the ref never moves
      // to a commit whose acknowledgement could still fail
      await this.journal.syncAll();
      // cluster mode: only acknowledged commits are written out (a take-over drops the others)
      if (this.opts.fence && this.lastJournaled.seq > this.ackedSeq) await this.acknowledge(this.lastJournaled.seq, this.lastJournaled.commit);
    } catch (err) {
      this.broken ??= err as Error;
      return;
    }
    const batch = this.unwrittenCommits;
    if (batch.length > 0) {
      try {
        const objects = batch.flatMap((c) => c.objects);
        await (this.opts.writePack ?? writePack)(this.gitdir, objects, true);
        this.packs++;
        // cluster mode: a process that lost the tenant never moves the shared ref
        await this.opts.fence?.check();
        this.writeRef(batch[batch.length - 1]!.commit);
        await fsyncFile(`${this.gitdir}/${MAIN_REF}`, false);
        await fsyncDir(`${this.gitdir}/refs/heads`);
      } catch (err) {
        this.broken = err as Error;
        return;
      }
      this.unwrittenCommits = [];
      for (const { objects } of batch) for (const o of objects) if (this.unwritten.get(o.oid) === o) this.unwritten.delete(o.oid);
      this.opts.onCheckpoint?.(batch[batch.length - 1]!.commit);
    }
    try {
      await this.journal.reset();
    } catch (err) {
      this.broken = err as Error;
      return;
    }
    this.recordsSinceCheckpoint = 0;
    this.maybeRepack();
  }

  /**
   * Pack files accumulate (one per write-out); past the limit, one background
   * `git repack --geometric=2 -d` merges the small ones (and any loose objects) into a
   * geometric progression of sizes. git writes and fsyncs the new pack before deleting
   * the ones it replaced; packs written meanwhile are left alone.
   */
  private maybeRepack(): void {
    const limit = this.opts.packLimit ?? PACK_LIMIT;
    if (limit <= 0 || this.packs < limit || this.repacking || this.closing) return;
    this.repacking = packSizes(this.gitdir)
      .then((sizes) => {
        // A geometric roll-up keeps what it merges as it is: each checkpoint pack starts every
        // directory it touches with a whole tree, and without paths git finds no deltas
        // between packs. Once the younger packs together outweigh the largest one, one full
        // repack (paths known, existing deltas reused) deltifies all of it; the doubling keeps
        // the total work linear in the repository. `-k` (keep unreachable) because a
        // checkpoint may write a pack and move the ref while git walks the old ref: its objects
        // must not be dropped as unreachable.
        const largest = Math.max(0, ...sizes);
        const rest = sizes.reduce((a, b) => a + b, 0) - largest;
        const args = rest >= largest ? ['repack', '-a', '-d', '-k', '-q', '-l', '--no-write-bitmap-index'] : ['repack', '-d', '-q', '-l', '--geometric=2', '--no-write-bitmap-index'];
        return runGitNoSettle(this.gitdir, args);
      })
      .then(
        () => undefined,
        () => undefined, // retried after the next write-out
      )
      .then(async () => {
        this.packs = await countPacks(this.gitdir);
        this.igCache = {};
        this.repacking = null;
      });
  }

  private async doCommit(input: CommitInput): Promise<CommitOutput & { durable: Promise<void> }> {
    if (this.closed) throw new Error('git store is closed');
    if (this.broken) {
      // a store stopped by its fence says so (503 not_owner), every write after it alike
      if ((this.broken as { code?: unknown }).code === 'not_owner') throw this.broken;
      throw new Error(`git store needs reopening: ${this.broken.message}`);
    }
    if (input.expectedParent !== this.headOid) throw new HeadMismatchError(input.expectedParent, this.headOid);
    if (!input.changes.length) throw new Error('commit needs at least one change');
    const now = Math.floor(Date.now() / 1000);
    const authorLine = formatIdent(input.author, now);
    const committerLine = formatIdent(input.committer ?? input.author, now);

    // Overlay: the changes to every directory on a changed path (HEAD's trees stay untouched
    // until the commit is durable).
    const overlay = new Map<string, OverlayDir>();
    const mutable = async (dir: string): Promise<OverlayDir> => {
      let m = overlay.get(dir);
      if (!m) {
        m = { base: await this.loadDir(dir), changes: new Map() };
        overlay.set(dir, m);
      }
      return m;
    };

    const objects = new Map<string, EncodedObject>();
    const blobs: Record<string, string | null> = {};
    const seen = new Set<string>();
    for (const ch of input.changes) {
      const segs = validatePath(ch.path);
      if (seen.has(ch.path)) throw new Error(`path changed twice in one commit: ${ch.path}`);
      seen.add(ch.path);
      const name = segs[segs.length - 1]!;
      let dir = '';
      let entries = await mutable('');
      for (let i = 0; i < segs.length - 1; i++) {
        const e = overlayGet(entries, segs[i]!);
        if (e && !isTreeMode(e.mode)) throw new Error(`${ch.path}: ${segs.slice(0, i + 1).join('/')} is a file`);
        if (!e && ch.content === null) throw new Error(`cannot delete missing file ${ch.path}`);
        dir = dir ? `${dir}/${segs[i]}` : segs[i]!;
        entries = await mutable(dir);
      }
      const existing = overlayGet(entries, name);
      if (existing && !isBlobMode(existing.mode)) throw new Error(`${ch.path} is a directory`);
      if (ch.content === null) {
        if (!existing) throw new Error(`cannot delete missing file ${ch.path}`);
        overlaySet(entries, name, null);
        blobs[ch.path] = null;
      } else {
        const obj = encodeObject('blob', Buffer.from(ch.content, 'utf8'));
        objects.set(obj.oid, obj);
        overlaySet(entries, name, { mode: existing && existing.mode !== '120000' ? existing.mode : FILE_MODE, oid: obj.oid });
        blobs[ch.path] = obj.oid;
      }
    }

    // Hash trees bottom-up; an emptied directory disappears from its parent.
    const dirs = [...overlay.keys()].sort((a, b) => depth(b) - depth(a));
    const newTrees = new Map<string, NewTree | null>();
    let rootOid = EMPTY_TREE_OID;
    for (const dir of dirs) {
      const d = overlay.get(dir)!;
      if (dir !== '' && overlaySize(d) === 0) {
        overlaySet(overlay.get(parentDir(dir))!, baseName(dir), null);
        newTrees.set(dir, null);
        continue;
      }
      const changes = [...d.changes.values()];
      let body: Buffer;
      let delta: Buffer | undefined;
      if (d.base === null) body = spliceTree(Buffer.alloc(0), changes);
      else if (d.base.body) ({ body, delta } = spliceTreeDelta(d.base.body, changes));
      else body = serializeTree(applyChanges(new Map(d.base.entries), changes));
      const obj: EncodedObject = encodeObject('tree', body);
      // the directory's previous tree: a checkpoint pack stores this one as a delta against it
      if (d.base && d.base.oid !== EMPTY_TREE_OID) {
        obj.deltaBase = d.base.oid;
        obj.delta = delta;
      }
      objects.set(obj.oid, obj);
      newTrees.set(dir, { oid: obj.oid, body, base: d.base, changes });
      if (dir === '') rootOid = obj.oid;
      else overlaySet(overlay.get(parentDir(dir))!, baseName(dir), { mode: TREE_MODE, oid: obj.oid });
    }

    let body = `tree ${rootOid}\n`;
    if (this.headOid) body += `parent ${this.headOid}\n`;
    const message = input.message.endsWith('\n') ? input.message : `${input.message}\n`;
    body += `author ${authorLine}\ncommitter ${committerLine}\n\n${message}`;
    const commitObj = encodeObject('commit', Buffer.from(body, 'utf8'));
    objects.set(commitObj.oid, commitObj);

    const all = [...objects.values()];
    if (this.journal) {
      // The journal record + fdatasync is the durability point and the acknowledgement.
      // The objects and the ref are written out later, in bulk, as one pack (checkpoints:
      // `settled()`, a lag timer, every `checkpointEvery` commits, idle, close). Loose files
      // per commit cost more than everything else together (file creation, and each journal
      // fdatasync flushing them too). Until then reads find the objects in `unwritten`.
      const journal = this.journal;
      const seq = journal.write({ commit: commitObj.oid, parent: this.headOid, objects: all }); // throws: nothing changed
      this.lastJournaled = { seq, commit: commitObj.oid };
      this.recordsSinceCheckpoint++;
      for (const o of all) this.unwritten.set(o.oid, o);
      this.unwrittenCommits.push({ commit: commitObj.oid, objects: all });
      this.swapHead(newTrees, rootOid, commitObj.oid);
      const oid = commitObj.oid;
      const durable = journal.syncTo(seq).then(
        () => this.acknowledge(seq, oid),
        (err: unknown) => {
          // the head moved past a record whose durability is unknown: no more commits until reopened
          this.broken ??= err as Error;
          throw err;
        },
      );
      durable.catch(() => undefined); // the acknowledging caller sees the failure; never unhandled
      return { commit: commitObj.oid, blobs, durable };
    }
    // No journal: the loose files are the only copy, so they are written before the ack
    // (objects first: git never sees a ref to a missing object).
    for (const o of all) this.writeLoose(o);
    if (this.opts.fence) {
      // cluster mode without fsync (tests, benchmarks): acknowledged through the fence before the ref moves
      try {
        await this.opts.fence.acknowledge(commitObj.oid);
      } catch (err) {
        this.broken ??= err as Error;
        throw err;
      }
    }
    this.writeRef(commitObj.oid);
    this.swapHead(newTrees, rootOid, commitObj.oid);
    this.opts.onCheckpoint?.(commitObj.oid);
    return { commit: commitObj.oid, blobs, durable: Promise.resolve() };
  }

  /**
   * Cluster mode: record a durable commit as the tenant's acknowledged head through the fence
   * before it is acknowledged. Coalesced like the fdatasyncs: one round trip covers every
   * record that became durable before it started, and they run one at a time, so the head
   * recorded never moves backwards.
   */
  private async acknowledge(seq: number, commit: string): Promise<void> {
    const fence = this.opts.fence;
    if (!fence) return;
    if (seq > this.ackTarget.seq) this.ackTarget = { seq, commit };
    while (this.ackedSeq < seq) {
      if (!this.acking) {
        const target = this.ackTarget;
        this.acking = fence.acknowledge(target.commit).then(
          () => {
            this.ackedSeq = Math.max(this.ackedSeq, target.seq);
            this.acking = null;
          },
          (err: unknown) => {
            this.acking = null;
            this.broken ??= err as Error;
            throw err;
          },
        );
      }
      await this.acking;
    }
  }

  /** Durable: swap the tree cache and head (the HEAD trees' entry maps are updated in place). */
  private swapHead(newTrees: Map<string, NewTree | null>, rootOid: string, commit: string): void {
    for (const [dir, t] of newTrees) {
      if (t) this.trees.set(dir, { oid: t.oid, body: t.body, entries: applyChanges(t.base ? t.base.entries : new Map(), t.changes) });
      else this.trees.delete(dir);
    }
    this.rootTree = rootOid;
    this.headOid = commit;
  }

  /** Write acknowledged commits out now, on the commit queue (a checkpoint). */
  settled(): Promise<void> {
    if (this.unwrittenCommits.length === 0 || this.journalClosed) return Promise.resolve();
    const run = this.queue.then(() => this.checkpoint());
    this.queue = run.catch(() => undefined);
    return run;
  }

  // ---- bulk reads ---------------------------------------------------------------------

  /**
   * Contents of many blobs, in order. Loose objects are read and inflated directly (git
   * 2.39's `cat-file --batch` opens and maps each loose object several times: measured
   * ~0.4 s per 10k loose blobs against ~0.15 s here); whatever is not loose (packed)
   * goes through one `git cat-file --batch --buffer`. When probing keeps missing (a packed
   * repo), probing stops and the rest goes straight to cat-file. The event loop is
   * yielded to every 256 objects.
   */
  private async readBlobsBulk(oids: string[]): Promise<string[]> {
    const out: string[] = new Array(oids.length);
    const viaGit: number[] = [];
    let hits = 0;
    let misses = 0;
    for (let i = 0; i < oids.length; i++) {
      const oid = oids[i]!;
      if (misses > 64 && misses > hits * 4) {
        viaGit.push(i);
        continue;
      }
      if ((i & 255) === 255) await new Promise<void>((r) => setImmediate(r));
      const o = this.readLooseSync(oid);
      if (!o) {
        misses++;
        viaGit.push(i);
        continue;
      }
      hits++;
      if (o.type !== 'blob') throw new Error(`${oid} is a ${o.type}, not a blob`);
      out[i] = o.body.toString('utf8');
    }
    if (viaGit.length) {
      const got = await catFileBatch(
        this.gitdir,
        viaGit.map((i) => oids[i]!),
      );
      viaGit.forEach((i, k) => (out[i] = got[k]!));
    }
    return out;
  }

  private async listAt(commit: string, prefix: string): Promise<Array<{ path: string; oid: string }>> {
    const segs = prefixSegments(prefix);
    const args = ['ls-tree', '-r', '-z', commit];
    if (segs.length) args.push('--', segs.join('/'));
    const files = parseLsTree(await runGit(this.gitdir, args));
    // the pathspec would also match a file named exactly like the prefix; keep directory contents only
    if (segs.length) {
      const dirPrefix = `${segs.join('/')}/`;
      return files.filter((f) => f.path.startsWith(dirPrefix));
    }
    return files;
  }

  private async loadAt(commit: string, prefix: string): Promise<StoredFile[]> {
    const files = await this.listAt(commit, prefix);
    const contents = await this.readBlobsBulk(files.map((f) => f.oid));
    return files.map((f, i) => ({ path: f.path, oid: f.oid, content: contents[i]! }));
  }

  async listFiles(prefix: string): Promise<Array<{ path: string; oid: string }>> {
    const head = this.headOid;
    return head ? this.listAt(head, prefix) : [];
  }

  async loadFiles(prefix: string): Promise<StoredFile[]> {
    const head = this.headOid;
    return head ? this.loadAt(head, prefix) : [];
  }

  async diffFiles(
    fromCommit: string | null,
    toCommit: string,
    prefix: string,
  ): Promise<Array<{ path: string; oid: string | null; content: string | null }>> {
    if (fromCommit === null) return this.loadAt(toCommit, prefix);
    const segs = prefixSegments(prefix);
    const [a, b] = await Promise.all([this.subtreeAt(fromCommit, segs), this.subtreeAt(toCommit, segs)]);
    const changes: Array<{ path: string; oid: string | null }> = [];
    if (a !== b) await this.diffTrees(a, b, segs.join('/'), changes);
    const wanted = changes.filter((c) => c.oid !== null).map((c) => c.oid!);
    const contents = await this.readBlobsBulk(wanted);
    let k = 0;
    return changes.map((c) => ({ path: c.path, oid: c.oid, content: c.oid === null ? null : contents[k++]! }));
  }

  private async subtreeAt(commit: string, segs: string[]): Promise<string | null> {
    let oid: string | null = await this.commitTree(commit);
    for (const s of segs) {
      const e: TreeEntry | undefined = (await this.readTreeEntries(oid)).get(s);
      if (!e || !isTreeMode(e.mode)) return null;
      oid = e.oid;
    }
    return oid;
  }

  private async diffTrees(
    a: string | null,
    b: string | null,
    base: string,
    out: Array<{ path: string; oid: string | null }>,
  ): Promise<void> {
    const [ea, eb] = await Promise.all([
      a ? this.readTreeEntries(a) : Promise.resolve<Entries>(new Map()),
      b ? this.readTreeEntries(b) : Promise.resolve<Entries>(new Map()),
    ]);
    const names = new Set([...ea.keys(), ...eb.keys()]);
    for (const name of names) {
      const x = ea.get(name);
      const y = eb.get(name);
      if (x && y && x.oid === y.oid && x.mode === y.mode) continue;
      const path = base ? `${base}/${name}` : name;
      const xTree = !!x && isTreeMode(x.mode);
      const yTree = !!y && isTreeMode(y.mode);
      if (xTree || yTree) await this.diffTrees(xTree ? x!.oid : null, yTree ? y!.oid : null, path, out);
      const xBlob = !!x && isBlobMode(x.mode);
      const yBlob = !!y && isBlobMode(y.mode);
      if (yBlob) {
        if (!(xBlob && x!.oid === y!.oid)) out.push({ path, oid: y!.oid });
      } else if (xBlob) {
        out.push({ path, oid: null });
      }
    }
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    if (this.lagTimer) clearTimeout(this.lagTimer);
    this.idleTimer = null;
    this.lagTimer = null;
    await this.queue;
    await this.repacking;
    this.closed = true;
    if (openStores.get(this.gitdir) === this) openStores.delete(this.gitdir);
    if (this.journal) {
      try {
        if (this.opts.checkpointOnClose !== false && !this.broken) {
          // on the queue, behind any checkpoint a reader's settled() queued meanwhile
          const last = this.queue.then(() => this.checkpoint());
          this.queue = last.catch(() => undefined);
          await last;
          if (!this.broken) await this.journal.truncate(0); // a clean stop leaves an empty file
        } else await this.queue;
      } finally {
        this.journalClosed = true;
        await this.journal.close();
      }
    }
  }
}

/** fsync one file by path; a missing file is skipped when `missingOk`. */
async function fsyncFile(path: string, missingOk: boolean): Promise<void> {
  let fh: FileHandle;
  try {
    fh = await fsp.open(path, 'r');
  } catch (err) {
    if (missingOk && (err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}


/** The loose `refs/heads/main`: an oid, null when absent, 'invalid' when unreadable. */
async function readLooseRef(dir: string): Promise<string | null | 'invalid'> {
  let text: string;
  try {
    text = await fsp.readFile(`${dir}/${MAIN_REF}`, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    return 'invalid';
  }
  const v = text.trim();
  return OID_RE.test(v) ? v : 'invalid';
}

/**
 * Replay the commit journal (after a crash, or a close without checkpoint), make the
 * result durable and empty the journal; returns the writer for new records.
 *
 * Every object of every intact record is checked (exists, inflates, hashes to its oid) and
 * rewritten from the journal otherwise; all of them are then fsynced with their
 * directories. The ref is moved to the last record's commit when it is absent, unreadable,
 * or at an earlier commit of the chain (or the chain's base); a ref anywhere else was moved
 * by someone else and is left alone. A torn or corrupt tail (bad length/crc) was never
 * acknowledged and is dropped.
 */
async function recoverJournal(dir: string, readRef: () => Promise<string | null>, doSync: boolean): Promise<{ journal: JournalWriter; replayed: number }> {
  const path = `${dir}/${JOURNAL_NAME}`;
  let image: Buffer | null = null;
  let existed = true;
  try {
    image = await fsp.readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    existed = false;
  }
  const records = image && image.length ? decodeJournal(image).records : [];
  // keep the chained prefix (records are appended in commit order; anything else is damage)
  let n = records.length ? 1 : 0;
  while (n < records.length && records[n]!.parent === records[n - 1]!.commit) n++;
  const chain = records.slice(0, n);
  // temp files of one of our pack write-outs that a crash interrupted (git's own temp files,
  // tmp_pack_*, may belong to a repack still running and are left to git)
  try {
    for (const name of await fsp.readdir(`${dir}/objects/pack`)) {
      if (/^tmp_wg(pack|idx)_/.test(name)) await fsp.unlink(`${dir}/objects/pack/${name}`).catch(() => undefined);
    }
  } catch {
    // no pack directory yet
  }
  if (chain.length) {
    // every object of the chain, whether or not a write-out got it to disk before the crash:
    // one durable pack (a duplicate of an object git already has is harmless)
    await writePack(dir, chain.flatMap((r) => r.objects), doSync);

    const last = chain[chain.length - 1]!.commit;
    const loose = await readLooseRef(dir);
    const cur = loose === null ? await readRef() : loose;
    const movable = new Set<string | null>([chain[0]!.parent, ...chain.map((r) => r.commit)]);
    if (cur === 'invalid' || (cur !== last && movable.has(cur))) {
      await fsp.mkdir(`${dir}/refs/heads`, { recursive: true });
      await writeFileDurable(`${dir}/${MAIN_REF}`, `${last}\n`);
    } else if (cur === last) {
      await fsyncFile(`${dir}/${MAIN_REF}`, true);
      await fsyncDir(`${dir}/refs/heads`);
    }
  }
  // Replayed records start a fresh file (a new inode, renamed over the old one) rather than
  // being cut out of the old one: a process still holding the old file open (in cluster mode,
  // a paused former owner of the tenant) can then only write into the unlinked inode, never
  // into the records of the process that replayed it.
  if (existed && image && image.length > 0) {
    await writeFileDurable(path, '');
    image = null;
  }
  const fh = await fsp.open(path, existed ? 'r+' : 'w+');
  try {
    const journal = new JournalWriter(fh, image ? image.length : 0, doSync);
    if (journal.bytes > 0) await journal.truncate(0);
    if (!existed) await fsyncDir(dir);
    return { journal, replayed: chain.length };
  } catch (err) {
    await fh.close();
    throw err;
  }
}

/** Open (creating if missing/empty) the bare repository at `gitdir`. */
export async function openGitStore(gitdir: string, opts: GitStoreOptions = {}): Promise<GitStore> {
  const dir = resolvePath(gitdir);
  const doFsync = opts.fsync ?? true;
  // object and ref writes: temp + rename, durable through the journal + checkpoints instead
  const fs = opts.fs ?? createDurableFs({ fsync: false });

  let names: string[] = [];
  try {
    names = await fsp.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (names.length === 0) {
    await git.init({ fs: createDurableFs({ fsync: doFsync }), gitdir: dir, bare: true, defaultBranch: 'main' });
  } else if (!names.includes('HEAD') || !names.includes('objects')) {
    throw new Error(`${dir} exists and is not a git repository`);
  }

  const resolveHead = async (): Promise<string | null> => {
    try {
      return await git.resolveRef({ fs, gitdir: dir, ref: MAIN_REF });
    } catch (err) {
      if ((err as { code?: string }).code !== 'NotFoundError') throw err;
      return null;
    }
  };
  const recovered = doFsync ? await recoverJournal(dir, resolveHead, doFsync) : null;
  const journal = recovered?.journal ?? null;
  try {
    const head = await resolveHead();
    const store = new GitStoreImpl(dir, fs, journal, opts, head, EMPTY_TREE_OID);
    store.replayedCommits = recovered?.replayed ?? 0;
    if (journal && opts.observe) journal.onSync = (s) => opts.observe!.journalSync(s);
    await store.init();
    openStores.set(dir, store);
    return store;
  } catch (err) {
    await journal?.close();
    throw err;
  }
}
