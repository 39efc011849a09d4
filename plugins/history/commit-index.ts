/**
 * The per-tenant commit index: every first-parent commit of `main` with the node files it
 * touched, and for every node id the list of its changes, oldest first. Built at tenant
 * open from one streamed `git log` and kept in step with each commit through the graph
 * index's commit events, so history reads never walk the log.
 */
import { parseStoredNode } from '../../kernel/codec.js';
import type { CommitEvent } from '../../kernel/graph-index.js';
import { errors } from '../../kernel/errors.js';
import type { Tenant } from '../../kernel/tenant.js';
import { readCommitSync, streamLog, trailersOf, type ParsedCommit, type RawChange } from '../../kernel/git-log.js';
import { perTenant } from '../../kernel/per-tenant.js';
import { EventIndex } from '../../kernel/event-index.js';

export type ChangeKind = 'A' | 'M' | 'D' | 'R';

export interface CommitInfo {
  sha: string;
  parent: string | null;
  /** position in the first-parent history, 0 = oldest */
  seq: number;
  /** author date, ISO 8601 */
  date: string;
  dateMs: number;
  authorName: string;
  authorEmail: string;
  subject: string;
  /** `Svc-Person` trailer: the person the server attributed the write to */
  person: string | null;
  agent: string | null;
  via: string | null;
  op: string | null;
  internal: boolean;
  changes: NodeChange[];
}

/** What a deleted node looked like, read once from its last blob when a feed needs it. */
export interface DeletedFacts {
  type: string;
  title: string;
  author: string | null;
  authored_via: string | null;
}

export interface NodeChange {
  id: string;
  change: ChangeKind;
  path: string;
  /** the previous path of a moved node file (change R) */
  oldPath: string | null;
  /** blob after the change; null when deleted */
  blob: string | null;
  /** blob before the change; null when added */
  oldBlob: string | null;
  commit: CommitInfo;
  deleted?: DeletedFacts;
}

const NODE_FILE = /^nodes\/(?:[^/]+\/)*([^/]+)\.md$/;

/** The node id a repository path holds, or null for files that are not node files. */
export function idOfPath(path: string): string | null {
  const m = NODE_FILE.exec(path);
  return m ? m[1]! : null;
}

/**
 * A copy of `s` that holds only its own characters. What the log parser hands over are slices
 * of the log's output chunks, and V8 keeps a slice's whole parent alive: kept as they came, the
 * index held most of `git log`'s text (about 2 KB a commit; docs/performance.md "History in
 * memory").
 */
const own = (s: string): string => Buffer.from(s, 'utf8').toString('utf8');

/** One instance per distinct value (authors, trailer values, paths repeat from commit to commit). */
class StringPool {
  private readonly pool = new Map<string, string>();
  get(s: string): string;
  get(s: string | null): string | null;
  get(s: string | null): string | null {
    if (s === null) return null;
    let hit = this.pool.get(s);
    if (hit === undefined) this.pool.set((hit = own(s)), hit);
    return hit;
  }
  clear(): void {
    this.pool.clear();
  }
}

function commitInfo(parsed: ParsedCommit, seq: number, pool: StringPool, parentSha: string | null): CommitInfo {
  const trailers = trailersOf(parsed.message);
  return {
    sha: own(parsed.sha),
    parent: parentSha,
    seq,
    date: new Date(parsed.timestamp * 1000).toISOString(),
    dateMs: parsed.timestamp * 1000,
    authorName: pool.get(parsed.authorName),
    authorEmail: pool.get(parsed.authorEmail),
    subject: own(parsed.message.split('\n')[0] ?? ''),
    person: pool.get(trailers['Svc-Person'] || null),
    agent: pool.get(trailers['Svc-Agent'] || null),
    via: pool.get(trailers['Svc-Via'] || null),
    op: pool.get(trailers['Svc-Op'] || null),
    internal: trailers['Svc-Internal'] === 'true',
    changes: [],
  };
}

/** Raw file changes of one commit as node changes; a delete and an add of one id is a move (R). */
function nodeChanges(commit: CommitInfo, raw: RawChange[]): NodeChange[] {
  const byId = new Map<string, RawChange[]>();
  for (const r of raw) {
    const id = idOfPath(r.path);
    if (!id) continue;
    const list = byId.get(id) ?? [];
    list.push(r);
    byId.set(id, list);
  }
  const out: NodeChange[] = [];
  for (const [id, list] of byId) {
    const del = list.find((r) => r.status === 'D');
    const add = list.find((r) => r.status === 'A');
    if (del && add) {
      out.push({ id, change: 'R', path: add.path, oldPath: del.path, blob: add.newBlob, oldBlob: del.oldBlob, commit });
      continue;
    }
    for (const r of list) out.push({ id, change: r.status, path: r.path, oldPath: null, blob: r.newBlob, oldBlob: r.oldBlob, commit });
  }
  return out;
}

export class CommitIndex extends EventIndex {
  /** first-parent history, oldest first */
  readonly commits: CommitInfo[] = [];
  private readonly bySha = new Map<string, CommitInfo>();
  private readonly byNode = new Map<string, NodeChange[]>();
  private readonly pool = new StringPool();

  constructor(tenant: Tenant) {
    super(tenant, 'history index');
    this.start();
  }

  protected unavailable(): unknown {
    return errors.unavailable('history_unavailable', 'the commit history index could not be built; try again');
  }

  protected reset(): void {
    this.commits.length = 0;
    this.bySha.clear();
    this.byNode.clear();
    this.pool.clear();
  }

  /** The first-parent log up to the head as of now (taken in the tick the build starts). */
  protected async load(): Promise<void> {
    const tip = this.tenant.index.head;
    if (!tip) return;
    const newestFirst: Array<{ commit: ParsedCommit; changes: RawChange[] }> = [];
    await streamLog(this.tenant.store.gitdir, tip, (commit, changes) => newestFirst.push({ commit, changes }));
    for (let i = newestFirst.length - 1; i >= 0; i--) {
      const { commit, changes } = newestFirst[i]!;
      if (this.bySha.has(commit.sha)) continue;
      const parent = commit.parent === null ? null : (this.bySha.get(commit.parent)?.sha ?? own(commit.parent));
      const info = commitInfo(commit, this.commits.length, this.pool, parent);
      this.add(info, nodeChanges(info, changes));
    }
  }

  private add(info: CommitInfo, changes: NodeChange[]): void {
    // an exact-size copy: a list grown by push() keeps room for 16 more entries
    info.changes = changes.slice();
    this.commits.push(info);
    this.bySha.set(info.sha, info);
    for (const c of changes) {
      // one instance of each id and path, and a change's blob before is the previous change's blob after
      c.id = this.pool.get(c.id);
      c.path = this.pool.get(c.path);
      c.oldPath = this.pool.get(c.oldPath);
      const list = this.byNode.get(c.id);
      const previous = list?.[list.length - 1];
      c.oldBlob = c.oldBlob !== null && previous?.blob === c.oldBlob ? previous.blob : c.oldBlob === null ? null : own(c.oldBlob);
      c.blob = c.blob === null ? null : own(c.blob);
      if (list) list.push(c);
      else this.byNode.set(c.id, [c]);
    }
  }

  /** One commit made through the tenant's write path. */
  protected applyEvent(event: CommitEvent): void {
    if (this.bySha.has(event.commit)) return;
    const parsed = readCommitSync(this.tenant.store, event.commit);
    const info: CommitInfo = parsed
      ? commitInfo(
          parsed,
          this.commits.length,
          this.pool,
          parsed.parent === null ? null : (this.bySha.get(parsed.parent)?.sha ?? own(parsed.parent)),
        )
      : {
          sha: event.commit,
          parent: event.parent,
          seq: this.commits.length,
          date: event.date,
          dateMs: Date.parse(event.date),
          authorName: event.actor.name,
          authorEmail: event.actor.email,
          subject: `${event.op}: ${event.changes.map((c) => c.id).join(', ')}`,
          person: event.actor.person,
          agent: null,
          via: event.via,
          op: event.op,
          internal: event.internal,
          changes: [],
        };
    const changes: NodeChange[] = event.changes.map((c) => {
      const path = (c.after ?? c.before)!.path;
      const moved = c.before !== null && c.after !== null && c.before.path !== c.after.path;
      return {
        id: c.id,
        change: c.before === null ? 'A' : c.after === null ? 'D' : moved ? 'R' : 'M',
        path,
        oldPath: moved ? c.before!.path : null,
        blob: c.after?.revision ?? null,
        oldBlob: c.before?.revision ?? null,
        commit: info,
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
    this.add(info, changes);
  }

  /** A node's changes, oldest first (also for deleted nodes); undefined if it never existed. */
  changesOf(id: string): readonly NodeChange[] | undefined {
    return this.byNode.get(id);
  }

  get head(): CommitInfo | null {
    return this.commits[this.commits.length - 1] ?? null;
  }

  /**
   * Commits whose sha starts with `prefix`. A full sha is a map lookup; an abbreviation
   * scans the commit list (a string prefix test per commit, well under a millisecond for
   * 10,000 commits) rather than keeping a second sorted structure.
   */
  resolve(prefix: string): CommitInfo[] {
    if (prefix.length === 40) {
      const hit = this.bySha.get(prefix);
      return hit ? [hit] : [];
    }
    const out: CommitInfo[] = [];
    for (const c of this.commits) if (c.sha.startsWith(prefix)) out.push(c);
    return out;
  }

  /** Type, title and attribution of a node a change deleted, from the blob it last had. */
  async deletedFacts(change: NodeChange): Promise<DeletedFacts> {
    if (change.deleted) return change.deleted;
    const fallback: DeletedFacts = { type: change.path.split('/')[1] ?? '', title: '', author: null, authored_via: null };
    if (!change.oldBlob) return (change.deleted = fallback);
    try {
      const { frontmatter } = parseStoredNode(await this.tenant.store.readBlob(change.oldBlob));
      const title =
        typeof frontmatter.title === 'string' && frontmatter.title.trim()
          ? frontmatter.title
          : (String(frontmatter.summary ?? '').split('\n')[0] ?? '');
      change.deleted = {
        type: typeof frontmatter.type === 'string' ? frontmatter.type : fallback.type,
        title,
        author: typeof frontmatter.author === 'string' ? frontmatter.author : null,
        authored_via: typeof frontmatter.authored_via === 'string' ? frontmatter.authored_via : null,
      };
    } catch {
      change.deleted = fallback;
    }
    return change.deleted;
  }
}

/** The tenant's commit index, started on first use (normally at tenant open). */
export const commitIndexOf: (tenant: Tenant) => CommitIndex = perTenant((tenant) => new CommitIndex(tenant));
