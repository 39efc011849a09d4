/**
 * The git store's write side: `GitStoreImpl` (its reads are inherited from
 * kernel/git/reads.ts). Writes never go through a working tree or index. The store keeps an
 * in-memory cache of the HEAD tree (directory path -> entries, loaded lazily tree by tree),
 * so a commit touching one file re-hashes only the trees on its path (objects encoded by
 * kernel/git/objects.ts).
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
 * background step merges them (`maybeRepack`).
 *
 * With `fsync: false` there is no journal: each commit writes loose objects and the ref
 * before it is acknowledged, nothing is fsynced. Opening a store and replaying its journal:
 * kernel/git/open.ts.
 */
import { HeadMismatchError, type CommitInput, type CommitOutput, type GitStore, type GitStoreOptions } from './types.js';
import { mkdirSync } from 'node:fs';
import { errors, isSvcError } from '../errors.js';
import { fsyncDir, fsyncFile, writeFileAtomicSync, type DurableFs } from '../durable-fs.js';
import type { JournalWriter } from '../commit-journal.js';
import { writePack } from '../pack-writer.js';
import { countPacks, openStores, runGitNoSettle } from './cli.js';
import { listPacks, planPackWork, rollUpPacks } from './pack-rollup.js';
import {
  applyChanges,
  baseName,
  depth,
  EMPTY_TREE_OID,
  encodeObject,
  FILE_MODE,
  formatIdent,
  isBlobMode,
  isTreeMode,
  looseBytes,
  MAIN_REF,
  parentDir,
  serializeTree,
  spliceTreeDelta,
  treeStarts,
  TREE_MODE,
  validatePath,
  type EncodedObject,
  type TreeChange,
  type TreeEntry,
} from './objects.js';
import { GitStoreReads, type CachedTree } from './reads.js';

/** packs below the seal whose count starts a background maintenance step (`maybeRepack`) */
const PACK_LIMIT = 16;
/** packs of at least this size are never rewritten in the background (`planPackWork`) */
const PACK_SEAL = 128 * 1024 * 1024;

/** A failed disk (journal fdatasync, pack write-out) as writers hear it: 503, the system error's code only (no paths). */
function storageFailure(err: unknown, what: string): Error {
  const code = (err as { code?: unknown }).code;
  return errors.unavailable('storage_unavailable', `${what}${typeof code === 'string' ? ` (${code})` : ''}`);
}

/** A directory's tree as a commit builds it; `swapHead` turns it into the cached HEAD tree. */
interface NewTree {
  oid: string;
  body: Buffer;
  starts: Uint32Array | undefined;
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

export class GitStoreImpl extends GitStoreReads implements GitStore {
  private rootTree: string;
  /** dir path ('' = root) -> tree at HEAD; only directories loaded so far */
  private trees = new Map<string, CachedTree>();
  private queue: Promise<unknown> = Promise.resolve();
  /** set when close() starts: no timers are armed or fire after it */
  private closing = false;
  private closed = false;
  private journalClosed = false;
  /** set when a failed commit could not be taken back out of the journal: no more commits */
  private broken: Error | null = null;
  private recordsSinceCheckpoint = 0;
  private idleTimer: NodeJS.Timeout | null = null;
  private readonly writeFile: (path: string, data: Buffer | string) => void;
  /** acknowledged commits whose objects and ref are not written out yet, oldest first */
  private unwrittenCommits: Array<{ commit: string; objects: EncodedObject[] }> = [];
  /** pack files in objects/pack (counted at open, then as checkpoints and repacks add and merge them) */
  private packs = 0;
  /** of them, packs of at least the seal size, which background maintenance leaves alone */
  private sealedPacks = 0;
  private repacking: Promise<void> | null = null;
  /** stops the merge in progress (at close) */
  private repackAbort: AbortController | null = null;
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
    gitdir: string,
    fs: DurableFs,
    private readonly journal: JournalWriter | null,
    private readonly opts: GitStoreOptions,
    head: string | null,
    rootTree: string,
  ) {
    super(gitdir, fs, head);
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
    await this.countPacks();
  }

  private async countPacks(): Promise<void> {
    this.packs = await countPacks(this.gitdir);
    const seal = this.opts.packSeal ?? PACK_SEAL;
    this.sealedPacks = (await listPacks(this.gitdir)).filter((p) => p.size >= seal).length;
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
      if (this.opts.fence && this.lastJournaled.seq > this.ackedSeq)
        await this.acknowledge(this.lastJournaled.seq, this.lastJournaled.commit);
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
   * Pack files accumulate (one per write-out); past the limit (packs below the seal size
   * counted), one background step of `planPackWork` (kernel/git/pack-rollup.ts): a merge of
   * the smallest by object ids, so the packs left form a geometric progression of sizes, or
   * while no pack is sealed and the largest would be merged, a full `git repack -a -d -k`
   * (`-k`, keep unreachable: a checkpoint may write a pack and move the ref while git walks
   * the old ref, and its objects must not be dropped). The new pack is durable before the
   * replaced ones are deleted; packs written meanwhile are left alone.
   */
  private maybeRepack(): void {
    const limit = this.opts.packLimit ?? PACK_LIMIT;
    if (limit <= 0 || this.packs - this.sealedPacks < limit || this.repacking || this.closing) return;
    this.repacking = listPacks(this.gitdir)
      .then(async (packs) => {
        const work = planPackWork(packs, this.opts.packSeal ?? PACK_SEAL);
        if (work?.kind === 'full') {
          await runGitNoSettle(this.gitdir, ['repack', '-a', '-d', '-k', '-q', '-l', '--no-write-bitmap-index']);
        } else if (work) {
          this.repackAbort = new AbortController();
          await rollUpPacks(this.gitdir, work.packs, true, this.repackAbort.signal);
        }
      })
      .then(
        () => undefined,
        () => undefined, // retried after the next write-out
      )
      .then(async () => {
        await this.countPacks();
        // the reader's git may hold the replaced packs open (their space is freed when it exits)
        this.packed.recycle();
        this.repackAbort = null;
        this.repacking = null;
      });
  }

  private async doCommit(input: CommitInput): Promise<CommitOutput & { durable: Promise<void> }> {
    if (this.closed) throw new Error('git store is closed');
    if (this.broken) {
      // a store stopped by its fence says so (503 not_owner), every write after it alike
      if ((this.broken as { code?: unknown }).code === 'not_owner') throw this.broken;
      throw storageFailure(this.broken, 'the git store needs reopening: writes are refused until the server restarts (reads still answer)');
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
      let starts: Uint32Array | undefined;
      if (d.base === null) ({ body, starts } = spliceTreeDelta(Buffer.alloc(0), changes));
      else if (d.base.body) {
        // the base's entry table is kept for the next splice of this directory
        d.base.starts ??= treeStarts(d.base.body);
        ({ body, delta, starts } = spliceTreeDelta(d.base.body, changes, d.base.starts));
      } else body = serializeTree(applyChanges(new Map(d.base.entries), changes));
      const obj: EncodedObject = encodeObject('tree', body);
      // the directory's previous tree: a checkpoint pack stores this one as a delta against it
      if (d.base && d.base.oid !== EMPTY_TREE_OID) {
        obj.deltaBase = d.base.oid;
        obj.delta = delta;
      }
      objects.set(obj.oid, obj);
      newTrees.set(dir, { oid: obj.oid, body, starts, base: d.base, changes });
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
          throw isSvcError(err) ? err : storageFailure(err, 'the commit could not be made durable and was not acknowledged');
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
      if (t)
        this.trees.set(dir, {
          oid: t.oid,
          body: t.body,
          entries: applyChanges(t.base ? t.base.entries : new Map(), t.changes),
          starts: t.starts,
        });
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

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    if (this.lagTimer) clearTimeout(this.lagTimer);
    this.idleTimer = null;
    this.lagTimer = null;
    await this.queue;
    this.repackAbort?.abort(); // a merge in progress is dropped whole: its packs stay as they were
    await this.repacking;
    this.closed = true;
    if (openStores.get(this.gitdir) === this) openStores.delete(this.gitdir);
    // the checkpoint below reads nothing packed; a read after close gets a short-lived child
    await this.packed.close();
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
