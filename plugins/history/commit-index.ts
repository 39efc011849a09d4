/**
 * The per-tenant commit index: every first-parent commit of `main` with the node files it
 * touched, and for every node id its changes, newest first. The commits live on disk
 * (commit-store.ts, under `<tenant>/commit-index/`); memory holds per node id only the seq of
 * its newest change and its change count, so a year of history costs no more memory than a
 * week. Reads are preads of files the page cache keeps; no read walks git.
 *
 * At tenant open the stored index is recovered (a torn tail cut), and the commits made since
 * it was last written, by this server or by anyone else with git, are appended from one
 * streamed `git log <indexed head>..<head>`. When the indexed head is not a first-parent
 * ancestor of the head (history rewritten, or the files unreadable) the index is rebuilt from
 * the whole log. From then on it follows the graph index's commit events, one append each.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseStoredNode } from '../../kernel/codec.js';
import type { CommitEvent } from '../../kernel/graph-index.js';
import { errors } from '../../kernel/errors.js';
import type { Tenant } from '../../kernel/tenant.js';
import { readCommitSync, streamLog, trailersOf, type ParsedCommit, type RawChange } from '../../kernel/git-log.js';
import { perTenant } from '../../kernel/per-tenant.js';
import { EventIndex } from '../../kernel/event-index.js';
import { CommitStore } from './commit-store.js';
import type { CommitRecord, DeletedFacts, NewCommit, NodeChange } from './commit-record.js';

export type { ChangeKind, CommitInfo, CommitRecord, DeletedFacts, NodeChange } from './commit-record.js';

const NODE_FILE = /^nodes\/(?:[^/]+\/)*([^/]+)\.md$/;
/** a checkpoint (records synced, per-node snapshot written) at least every this many commits */
const CHECKPOINT_EVERY = 10_000;
/** deleted nodes' facts read from their last blob, kept for the change feed */
const DELETED_CACHE = 256;

/** The node id a repository path holds, or null for files that are not node files. */
export function idOfPath(path: string): string | null {
  const m = NODE_FILE.exec(path);
  return m ? m[1]! : null;
}

type NewChange = NewCommit['changes'][number];

/** Raw file changes of one commit as node changes; a delete and an add of one id is a move (R). */
function nodeChanges(raw: RawChange[]): NewChange[] {
  const byId = new Map<string, RawChange[]>();
  for (const r of raw) {
    const id = idOfPath(r.path);
    if (!id) continue;
    const list = byId.get(id) ?? [];
    list.push(r);
    byId.set(id, list);
  }
  const out: NewChange[] = [];
  for (const [id, list] of byId) {
    const del = list.find((r) => r.status === 'D');
    const add = list.find((r) => r.status === 'A');
    if (del && add) {
      out.push({ id, change: 'R', path: add.path, oldPath: del.path, blob: add.newBlob, oldBlob: del.oldBlob, previous: -1 });
      continue;
    }
    for (const r of list)
      out.push({ id, change: r.status, path: r.path, oldPath: null, blob: r.newBlob, oldBlob: r.oldBlob, previous: -1 });
  }
  return out;
}

function commitOf(parsed: ParsedCommit, changes: NewChange[]): NewCommit {
  const trailers = trailersOf(parsed.message);
  return {
    sha: parsed.sha,
    parent: parsed.parent,
    dateMs: parsed.timestamp * 1000,
    authorName: parsed.authorName,
    authorEmail: parsed.authorEmail,
    subject: parsed.message.split('\n')[0] ?? '',
    person: trailers['Svc-Person'] || null,
    agent: trailers['Svc-Agent'] || null,
    via: trailers['Svc-Via'] || null,
    op: trailers['Svc-Op'] || null,
    internal: trailers['Svc-Internal'] === 'true',
    changes,
  };
}

/** Thrown inside the log stream to stop it: the index closed or was reset, or the range does not continue the index. */
class StopLog extends Error {}

export class CommitIndex extends EventIndex {
  private store: CommitStore | null = null;
  private closed = false;
  private sinceCheckpoint = 0;
  /** bumped whenever the files are reset, so a reader streaming them (timelines) knows to start over */
  private resets = 0;
  /** set when a read found the files damaged: the next build starts from scratch */
  private damagedFiles = false;
  private loading: Promise<unknown> | null = null;
  private readonly deletedCache = new Map<string, DeletedFacts>();
  private readonly dir: string;

  constructor(tenant: Tenant) {
    super(tenant, 'history index');
    this.dir = join(tenant.dir, 'commit-index');
    tenant.onClose(() => this.close());
    this.start();
  }

  protected unavailable(): unknown {
    return errors.unavailable('history_unavailable', 'the commit history index could not be built; try again');
  }

  /** Drops what memory holds; the next load reopens the files and appends what they lack. */
  protected reset(): void {
    this.resets++;
    this.deletedCache.clear();
    const store = this.store;
    this.store = null;
    void store?.close(true);
  }

  protected async load(): Promise<void> {
    // the head as of the subscription's tick: every later commit arrives as an event
    const tip = this.tenant.index.head;
    if (this.closed) return;
    const run = this.open(tip);
    this.loading = run;
    try {
      await run;
    } finally {
      this.loading = null;
    }
  }

  private async open(tip: string | null): Promise<void> {
    const { tenant } = this;
    if (this.damagedFiles) {
      rmSync(this.dir, { recursive: true, force: true });
      this.damagedFiles = false;
    }
    let store: CommitStore;
    // ids kept as the graph index's own strings, not a copy per node read back from the files
    const canon = (id: string) => tenant.index.ownId(id);
    try {
      store = CommitStore.open(this.dir, canon);
    } catch (err) {
      tenant.log.warn('history index files unreadable; rebuilding them from git', { org: tenant.org, error: String(err) });
      rmSync(this.dir, { recursive: true, force: true });
      store = CommitStore.open(this.dir, canon);
    }
    this.store = store;
    const resets = this.resets;
    if (store.report.truncated)
      tenant.log.info('history index: torn tail cut at open', { org: tenant.org, commits: store.count, replayed: store.report.replayed });
    if (tip === null) {
      if (store.count > 0) store.clear();
      return;
    }
    let appended = 0;
    if (store.headSha !== tip && store.headSha !== null) {
      const from = store.headSha;
      const continued = await this.appendLog(store, `${from}..${tip}`, from, resets);
      if (continued === null) {
        tenant.log.warn('history index: the indexed head is not a first-parent ancestor of the head (history rewritten); rebuilding', {
          org: tenant.org,
          indexed: from,
          head: tip,
        });
        store.clear();
      } else appended = continued;
    }
    if (store.headSha === null) appended = (await this.appendLog(store, tip, null, resets)) ?? 0;
    if (this.closed || resets !== this.resets) return;
    if (store.headSha !== tip) throw new Error(`history index ends at ${store.headSha}, not at the head ${tip}`);
    if (appended > 0) tenant.log.info('history index: commits appended from git', { org: tenant.org, commits: appended });
    this.sinceCheckpoint += appended + store.report.replayed;
    if (this.sinceCheckpoint >= 1000) this.checkpointSoon();
  }

  /**
   * Appends the commits of `range`, oldest first. With `expectParent`, the oldest must have it
   * as its parent (the range continues the index); otherwise, or when git does not know the
   * range, null. Returns how many commits were appended.
   */
  private async appendLog(store: CommitStore, range: string, expectParent: string | null, resets: number): Promise<number | null> {
    let appended = 0;
    let broken = false;
    try {
      await streamLog(
        this.tenant.store.gitdir,
        range,
        (commit, raw) => {
          if (this.closed || resets !== this.resets) throw new StopLog('closed');
          if (appended === 0 && commit.parent !== expectParent) {
            broken = true;
            throw new StopLog('not a continuation');
          }
          store.append(commitOf(commit, nodeChanges(raw)));
          appended++;
        },
        { reverse: true },
      );
    } catch (err) {
      if (broken) return null;
      if (err instanceof StopLog) return appended;
      // git does not know the indexed head (it went with a rewrite and a gc): rebuild
      if (expectParent !== null && appended === 0) return null;
      throw err;
    }
    // nothing between two different heads: the head went back behind the index
    if (expectParent !== null && appended === 0) return null;
    return appended;
  }

  /** One commit made through the tenant's write path. */
  protected applyEvent(event: CommitEvent): void {
    if (this.closed) return;
    const store = this.store;
    if (!store) throw new Error('history index not open');
    if (event.commit === store.headSha) return;
    // an event that does not continue the index (a commit it missed): throwing rebuilds it,
    // which appends what is missing from git
    if (event.parent !== store.headSha) throw new Error(`commit ${event.commit} does not follow the indexed head ${store.headSha}`);
    const parsed = readCommitSync(this.tenant.store, event.commit);
    const changes: NewChange[] = event.changes.map((c) => {
      const path = (c.after ?? c.before)!.path;
      const moved = c.before !== null && c.after !== null && c.before.path !== c.after.path;
      return {
        id: c.id,
        change: c.before === null ? 'A' : c.after === null ? 'D' : moved ? 'R' : 'M',
        path,
        oldPath: moved ? c.before!.path : null,
        blob: c.after?.revision ?? null,
        oldBlob: c.before?.revision ?? null,
        previous: -1,
        ...(c.after === null && c.before
          ? {
              deleted: {
                type: c.before.type,
                title: c.before.title,
                author: typeof c.before.frontmatter.author === 'string' ? c.before.frontmatter.author : null,
                authored_via: typeof c.before.frontmatter.authored_via === 'string' ? c.before.frontmatter.authored_via : null,
              },
            }
          : {}),
      };
    });
    store.append(
      parsed
        ? commitOf(parsed, changes)
        : {
            // a packed commit object cannot be read synchronously: the event says the same
            sha: event.commit,
            parent: event.parent,
            dateMs: Date.parse(event.date),
            authorName: event.actor.name,
            authorEmail: event.actor.email,
            subject: `${event.op}: ${event.changes.map((c) => c.id).join(', ')}`,
            person: event.actor.person,
            agent: event.actor.agent ?? null,
            via: event.via,
            op: event.op,
            internal: event.internal,
            changes,
          },
    );
    if (++this.sinceCheckpoint >= Math.max(CHECKPOINT_EVERY, store.nodeCount)) this.checkpointSoon();
  }

  private checkpointSoon(): void {
    this.sinceCheckpoint = 0;
    this.store
      ?.checkpoint()
      .catch((err: unknown) => this.tenant.log.warn('history index checkpoint failed', { org: this.tenant.org, error: String(err) }));
  }

  /** Stops a build in progress, writes a last checkpoint and closes the files (tenant close). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    super.close();
    await this.loading?.catch(() => undefined);
    const store = this.store;
    this.store = null;
    await store?.close();
  }

  // ---------------------------------------------------------------- reads (after ready())

  private get opened(): CommitStore {
    if (!this.store) throw errors.unavailable('history_unavailable', 'the commit history index is being rebuilt; try again');
    return this.store;
  }

  /**
   * A read found the files damaged (a record that does not decode): answered 503, and the
   * index is rebuilt from git in the background.
   */
  private damaged(err: unknown): unknown {
    if (err instanceof RangeError) {
      this.tenant.log.error('history index damaged; rebuilding it from git', { org: this.tenant.org, error: String(err) });
      this.damagedFiles = true;
      if (!this.loading) this.rebuild();
      return this.unavailable();
    }
    return err;
  }

  private read<T>(fn: (store: CommitStore) => T): T {
    try {
      return fn(this.opened);
    } catch (err) {
      throw this.damaged(err);
    }
  }

  /** Commits in the index (seqs 0 .. count - 1). */
  get count(): number {
    return this.read((s) => s.count);
  }

  /** Changes so far whenever the files were reset under a reader that streams them. */
  get resetCount(): number {
    return this.resets;
  }

  commitAt(seq: number): CommitRecord {
    return this.read((s) => s.commitAt(seq));
  }

  /** Commits newest first (read a block at a time). */
  *newestFirst(): Generator<CommitRecord> {
    try {
      yield* this.opened.newestFirst();
    } catch (err) {
      throw this.damaged(err);
    }
  }

  /** Commits `from`..`to` oldest first; `fn` returning false stops the scan. */
  scan(from: number, to: number, fn: (commit: CommitRecord) => boolean | void): void {
    this.read((s) => s.scan(from, to, fn));
  }

  /** How many node ids the history has touched (deleted ones too). */
  get nodeCount(): number {
    return this.read((s) => s.nodeCount);
  }

  /** The newest seq whose author date is before `ms` (-1: none): where a walk back to a date stops. */
  newestBefore(ms: number): number {
    return this.read((s) => s.newestBefore(ms));
  }

  /** Each node's newest change in commits `after` < seq < `before`, newest first (`skip`: ids left out). */
  *newestChanges(after: number, before: number, skip: ReadonlySet<string>): Generator<NodeChange> {
    try {
      yield* this.opened.newestChanges(after, before, skip);
    } catch (err) {
      throw this.damaged(err);
    }
  }

  /** How many changes a node has (also after its deletion); undefined if it never existed. */
  changeCount(id: string): number | undefined {
    return this.read((s) => s.nodeStats(id)?.count);
  }

  /** A node's changes, newest first. */
  *changesOf(id: string): Generator<NodeChange> {
    try {
      yield* this.opened.changesOf(id);
    } catch (err) {
      throw this.damaged(err);
    }
  }

  /** The changes commit `seq` made to node `id`. */
  changesIn(seq: number, id: string): NodeChange[] {
    return this.read((s) => s.changesIn(seq, id));
  }

  /** Commits whose sha starts with the lower-case hex `prefix`, oldest first (a scan of the sha table). */
  resolve(prefix: string): Array<{ sha: string; seq: number }> {
    return this.read((s) => s.findPrefix(prefix, prefix.length === 40).map((seq) => ({ seq, sha: s.shaAt(seq) })));
  }

  /** The seq of a full sha, searched from the newest commit back; -1 when it is not in the index. */
  seqOf(sha: string): number {
    return this.read((s) => s.findPrefix(sha, true)[0] ?? -1);
  }

  /** Type, title and attribution of a node a change deleted, from the blob it last had. */
  async deletedFacts(change: NodeChange): Promise<DeletedFacts> {
    if (change.deleted) return change.deleted;
    const key = `${change.commit.seq}:${change.id}`;
    const cached = this.deletedCache.get(key);
    if (cached) return cached;
    const fallback: DeletedFacts = { type: change.path.split('/')[1] ?? '', title: '', author: null, authored_via: null };
    let facts = fallback;
    if (change.oldBlob) {
      try {
        const { frontmatter } = parseStoredNode(await this.tenant.store.readBlob(change.oldBlob));
        const title =
          typeof frontmatter.title === 'string' && frontmatter.title.trim()
            ? frontmatter.title
            : (String(frontmatter.summary ?? '').split('\n')[0] ?? '');
        facts = {
          type: typeof frontmatter.type === 'string' ? frontmatter.type : fallback.type,
          title,
          author: typeof frontmatter.author === 'string' ? frontmatter.author : null,
          authored_via: typeof frontmatter.authored_via === 'string' ? frontmatter.authored_via : null,
        };
      } catch {
        // an unreadable blob: the path's type and no title
      }
    }
    // bounded: the feed asks again for the deletions near the head, not for all of them
    if (this.deletedCache.size >= DELETED_CACHE) this.deletedCache.delete(this.deletedCache.keys().next().value!);
    this.deletedCache.set(key, facts);
    return facts;
  }
}

/** The tenant's commit index, started on first use (normally at tenant open). */
export const commitIndexOf: (tenant: Tenant) => CommitIndex = perTenant((tenant) => new CommitIndex(tenant));
