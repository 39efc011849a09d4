/**
 * Crash recovery of the event log: the commits between the last one the log covered and the
 * graph's head (acknowledged, then the process died before their events were written; or
 * committed outside the server), read from the history with their node files before and
 * after, turned into the same events the write path derives (kernel/events/derive.ts).
 */
import { parseStoredNode } from '../codec.js';
import { streamLog, trailersOf, type ParsedCommit, type RawChange } from '../git-log.js';
import { makeRecord, type IndexChange, type NodeRecord } from '../graph-index.js';
import type { GitStore } from '../git/types.js';
import type { DerivableCommit } from './derive.js';
import type { EventActor } from './types.js';

const NODE_FILE = /^nodes\/(?:[^/]+\/)*([^/]+)\.md$/;

/** The actor a commit's `Svc-*` trailers name (commits made outside the server: its author, via 'git'). */
export function actorOfCommit(commit: ParsedCommit): EventActor {
  const t = trailersOf(commit.message);
  return {
    person: t['Svc-Person'] || null,
    agent: t['Svc-Agent'] || null,
    name: commit.authorName,
    via: t['Svc-Via'] || 'git',
  };
}

async function recordOf(store: GitStore, path: string, blob: string | null): Promise<NodeRecord | null> {
  if (!blob) return null;
  try {
    const markdown = await store.readBlob(blob);
    const { frontmatter, body } = parseStoredNode(markdown);
    return makeRecord(path, blob, markdown, frontmatter, body);
  } catch {
    return null; // not a node file the server could parse: no event for it
  }
}

/** Node changes of one commit's raw file changes; a delete and an add of one id is one change (a move). */
async function changesOf(store: GitStore, raw: RawChange[]): Promise<IndexChange[]> {
  const byId = new Map<string, { before: NodeRecord | null; after: NodeRecord | null }>();
  for (const r of raw) {
    const id = NODE_FILE.exec(r.path)?.[1];
    if (!id) continue;
    const entry = byId.get(id) ?? { before: null, after: null };
    const before = await recordOf(store, r.path, r.oldBlob);
    const after = await recordOf(store, r.path, r.newBlob);
    if (before) entry.before = before;
    if (after) entry.after = after;
    byId.set(id, entry);
  }
  return [...byId].filter(([, c]) => c.before || c.after).map(([id, c]) => ({ id, ...c }));
}

/**
 * The commits after `covered` up to `head` (first-parent), oldest first, as derivable
 * commits. `covered` null: the whole history. Throws when `covered` is not in the repository.
 */
export async function commitsSince(store: GitStore, covered: string | null, head: string): Promise<DerivableCommit[]> {
  const newestFirst: Array<{ commit: ParsedCommit; changes: RawChange[] }> = [];
  await streamLog(store.gitdir, covered ? `${covered}..${head}` : head, (commit, changes) => newestFirst.push({ commit, changes }));
  const out: DerivableCommit[] = [];
  for (let i = newestFirst.length - 1; i >= 0; i--) {
    const { commit, changes } = newestFirst[i]!;
    const t = trailersOf(commit.message);
    out.push({
      commit: commit.sha,
      changes: await changesOf(store, changes),
      actor: actorOfCommit(commit),
      op: t['Svc-Op'] || 'git',
      date: new Date(commit.timestamp * 1000).toISOString(),
    });
  }
  return out;
}
