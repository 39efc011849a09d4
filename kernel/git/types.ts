/**
 * The git store's contract (docs/design.md §3): the `GitStore` interface every tenant writes and
 * reads its graph through, the commit input/output shapes, `GitStoreOptions` and the
 * cluster-mode `StoreFence`, and `HeadMismatchError`. The implementation is split by concern:
 * kernel/git/objects.ts (object encoding), kernel/git/cli.ts (the git CLI),
 * kernel/git/reads.ts and kernel/git/store.ts (the store), kernel/git/open.ts (open + replay).
 */
import type { StoreObserver } from '../metrics.js';
import type { DurableFs } from '../durable-fs.js';
import type { PackObject } from '../pack-writer.js';

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
  /** testing hook, no longer read: packed objects are read through `git cat-file --batch` (kernel/git/object-reader.ts) */
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
   * background pack maintenance once this many packs below `packSeal` exist (default 16;
   * 0 = never): kernel/git/pack-rollup.ts `planPackWork`
   */
  packLimit?: number;
  /** packs of at least this many bytes are never rewritten in the background (default 128 MiB) */
  packSeal?: number;
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
  /**
   * A journal fdatasync started whose commits will be acknowledged here; the returned call marks
   * its end (either way). Lets the acknowledgements of several tenants wait for each other's
   * fdatasyncs and go to the database together (kernel/cluster/head-acks.ts).
   */
  syncStarted?(): () => void;
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
