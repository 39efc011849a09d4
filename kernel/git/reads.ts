/**
 * The git store's read side: `GitStoreReads`, the base class of the store
 * (kernel/git/store.ts). Single objects are read loose (or from the acknowledged commits not
 * yet written out, `unwritten`) and otherwise from the packs through one long-lived
 * `git cat-file --batch` child (kernel/git/object-reader.ts: no pack data in this process); bulk
 * reads (`loadFiles`, `listFiles`, `diffFiles` from null) list with `git ls-tree` and read
 * loose blobs directly, the rest through one `git cat-file --batch` (kernel/git/cli.ts).
 * The write side (commits, checkpoints, repacks, close) lives in the subclass.
 */
import type { StoredFile } from './types.js';
import { readFileSync } from 'node:fs';
import { inflateSync } from 'node:zlib';
import type { DurableFs } from '../durable-fs.js';
import { catFileBatch, parseLsTree, runGit } from './cli.js';
import { ObjectReader } from './object-reader.js';
import {
  EMPTY_TREE_OID,
  isBlobMode,
  isTreeMode,
  OID_RE,
  parseTree,
  prefixSegments,
  sha1Hex,
  wrap,
  type EncodedObject,
  type Entries,
  type TreeEntry,
} from './objects.js';

/** A directory's tree at HEAD as the store caches it (kernel/git/store.ts `trees`). */
export interface CachedTree {
  oid: string;
  entries: Entries;
  /** the serialized tree when its modes are canonical (what `spliceTree` builds on) */
  body: Buffer | null;
  /** where each entry of `body` starts (objects.ts `treeStarts`), once a splice made or read it */
  starts?: Uint32Array;
}

/**
 * Everything the store reads; the subclass adds the writes. The state both sides share is
 * `protected`: the head, the acknowledged objects not yet in a pack, the packed-object reader
 * (recycled after a repack, stopped at close).
 */
export abstract class GitStoreReads {
  protected headOid: string | null;
  /** packed objects: a `git cat-file --batch` child, started at the first packed read */
  protected readonly packed: ObjectReader;
  /** journaled (acknowledged) objects not yet written out to a pack */
  protected unwritten = new Map<string, EncodedObject>();

  // `_fs` (GitStoreOptions.fs) was isomorphic-git's view of the packs; git reads them now
  constructor(
    readonly gitdir: string,
    _fs: DurableFs,
    head: string | null,
  ) {
    this.headOid = head;
    this.packed = new ObjectReader(gitdir);
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

  protected readLooseSync(oid: string): { type: string; body: Buffer } | null {
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
    // Packed (e.g. after `git gc`), or written out since the loose read missed: git mmaps
    // the packs, so no pack data is held here however long the history (a missing object
    // is retried once on a fresh child, which also covers packs a repack replaced).
    return this.packed.read(oid);
  }

  private async readTreeEntries(oid: string): Promise<Entries> {
    return (await this.readTree(oid)).entries;
  }

  protected async readTree(oid: string): Promise<CachedTree> {
    if (oid === EMPTY_TREE_OID) return { oid, entries: new Map(), body: Buffer.alloc(0) };
    const o = await this.readObject(oid);
    if (o.type !== 'tree') throw new Error(`${oid} is a ${o.type}, not a tree`);
    const entries = parseTree(o.body);
    let canonical = true;
    for (const e of entries.values()) if (e.mode === '040000') canonical = false;
    return { oid, entries, body: canonical ? o.body : null };
  }

  protected async commitTree(commit: string): Promise<string> {
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
}
