/**
 * Graph events derived from one commit's node changes (before/after records): the same
 * function serves commits made through the write path (the graph index's commit events)
 * and commits found again at open after a crash (kernel/events/recover.ts), so both yield
 * identical events. The catalogue is docs/events.md.
 */
import type { Edge, IndexChange, NodeRecord } from '../graph-index.js';
import type { EventActor, NewEvent } from './types.js';

/**
 * A commit changing more nodes than this yields one summary event (`graph.imported`,
 * `graph.restored`, `graph.bulk_changed`) instead of one per node: a consumer (a webhook, an
 * inbox) wants to hear that a bulk change happened, not ten thousand node events.
 */
export const BULK_THRESHOLD = 100;
/** node ids a summary event names at most */
const SUMMARY_NODES = 100;

export interface DerivableCommit {
  commit: string;
  changes: IndexChange[];
  actor: EventActor | null;
  op: string;
  date: string;
}

const link = (id: string) => `/v1/nodes/${encodeURIComponent(id)}`;

/** Frontmatter keys that are bookkeeping, not content: a change to them alone is no event. */
const QUIET_KEYS = new Set(['updated', 'edges', 'status']);

function changedFields(before: NodeRecord, after: NodeRecord): string[] {
  const keys = new Set([...Object.keys(before.frontmatter), ...Object.keys(after.frontmatter)]);
  const out: string[] = [];
  for (const k of [...keys].sort()) {
    if (QUIET_KEYS.has(k)) continue;
    if (JSON.stringify(before.frontmatter[k]) !== JSON.stringify(after.frontmatter[k])) out.push(k);
  }
  if (before.body !== after.body) out.push('body');
  return out;
}

const edgeKey = (e: Edge) =>
  JSON.stringify(
    Object.keys(e)
      .sort()
      .map((k) => [k, e[k]]),
  );

function edgeDiff(before: Edge[], after: Edge[]): { added: Edge[]; removed: Edge[] } {
  const b = new Map(before.map((e) => [edgeKey(e), e]));
  const a = new Map(after.map((e) => [edgeKey(e), e]));
  return {
    added: [...a].filter(([k]) => !b.has(k)).map(([, e]) => e),
    removed: [...b].filter(([k]) => !a.has(k)).map(([, e]) => e),
  };
}

function edgeEvent(
  type: 'edge.added' | 'edge.removed',
  from: NodeRecord,
  edge: Edge,
  base: Omit<NewEvent, 'type' | 'nodes' | 'project' | 'payload'>,
): NewEvent {
  const { type: edgeType, to, ...attributes } = edge;
  return {
    ...base,
    type,
    nodes: from.id === to ? [from.id] : [from.id, to],
    project: from.project,
    payload: { from: from.id, type: edgeType, to, attributes, link: link(from.id) },
  };
}

function summaryType(commit: DerivableCommit): string {
  if (commit.actor?.via === 'import' || commit.op.startsWith('import')) return 'graph.imported';
  if (commit.actor?.via === 'restore' || commit.op.startsWith('restore')) return 'graph.restored';
  return 'graph.bulk_changed';
}

/** The events one commit yields, in the order of its changes (node event first, then its edges). */
export function eventsOfCommit(commit: DerivableCommit): NewEvent[] {
  const time = commit.date;
  if (commit.changes.length > BULK_THRESHOLD) {
    let created = 0;
    let deleted = 0;
    const projects = new Set<string>();
    for (const c of commit.changes) {
      if (!c.before) created++;
      else if (!c.after) deleted++;
      const p = (c.after ?? c.before)?.project;
      if (p) projects.add(p);
    }
    return [
      {
        type: summaryType(commit),
        time,
        actor: commit.actor,
        nodes: commit.changes.slice(0, SUMMARY_NODES).map((c) => c.id),
        project: projects.size === 1 ? [...projects][0]! : null,
        commit: commit.commit,
        payload: {
          op: commit.op,
          total: commit.changes.length,
          created,
          updated: commit.changes.length - created - deleted,
          deleted,
          projects: [...projects].sort().slice(0, SUMMARY_NODES),
          truncated: commit.changes.length > SUMMARY_NODES,
        },
      },
    ];
  }
  const out: NewEvent[] = [];
  for (const { id, before, after } of commit.changes) {
    const main = after ?? before;
    if (!main) continue;
    const base = { time, actor: commit.actor, commit: commit.commit, ...(after ? { revision: after.revision } : {}) };
    const facts = { type: main.type, title: main.title, status: main.status, link: link(id) };
    if (!before && after) {
      out.push({ ...base, type: 'node.created', nodes: [id], project: after.project, payload: { ...facts, op: commit.op } });
    } else if (before && !after) {
      out.push({ ...base, type: 'node.deleted', nodes: [id], project: before.project, payload: { ...facts, op: commit.op } });
    } else if (before && after) {
      const fields = changedFields(before, after);
      if (before.status !== after.status) {
        out.push({
          ...base,
          type: 'node.status_changed',
          nodes: [id],
          project: after.project,
          payload: { ...facts, from: before.status, to: after.status, fields, op: commit.op },
        });
      } else if (fields.length > 0) {
        out.push({ ...base, type: 'node.updated', nodes: [id], project: after.project, payload: { ...facts, fields, op: commit.op } });
      }
    }
    const { added, removed } = edgeDiff(before?.edges ?? [], after?.edges ?? []);
    const edgeBase = { time, actor: commit.actor, commit: commit.commit, ...(after ? { revision: after.revision } : {}) };
    for (const e of removed) out.push(edgeEvent('edge.removed', main, e, edgeBase));
    for (const e of added) out.push(edgeEvent('edge.added', main, e, edgeBase));
  }
  return out;
}
