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

/** What derivation asks of the tenant: whether a `proposed` node of a type waits for someone's approval. */
export interface DeriveContext {
  awaitsApproval(type: string): boolean;
}

const NO_CONTEXT: DeriveContext = { awaitsApproval: (type) => type === 'dec' };

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

const str = (v: unknown): string | null => (typeof v === 'string' && v ? v : null);

/** `state.steps` of a workflow run node: step id -> state (plugins/workflows/model.ts `RunState`), read as plain data. */
function stepStates(
  record: NodeRecord | null,
): Map<string, { state: string; capability: string | null; approval: boolean; attempts: number }> {
  const out = new Map<string, { state: string; capability: string | null; approval: boolean; attempts: number }>();
  const state = record?.type === 'run' ? record.frontmatter.state : undefined;
  if (!state || typeof state !== 'object' || Array.isArray(state)) return out;
  const steps = (state as Record<string, unknown>).steps;
  if (!steps || typeof steps !== 'object' || Array.isArray(steps)) return out;
  for (const [sid, raw] of Object.entries(steps as Record<string, unknown>)) {
    if (!raw || typeof raw !== 'object') continue;
    const step = raw as Record<string, unknown>;
    if (typeof step.state !== 'string') continue;
    out.set(sid, {
      state: step.state,
      capability: str(step.capability),
      approval: step.approval === true,
      attempts: typeof step.attempts === 'number' ? step.attempts : 0,
    });
  }
  return out;
}

const FINISHED_STEP = new Set(['succeeded', 'failed', 'skipped']);

/**
 * Events that say what a change means beyond "a node changed", read from the node's own
 * data so they are derived (and recovered) with the commit: a question routed or answered,
 * a workflow step ready or finished, a proposal waiting for approval.
 */
function meaningEvents(
  change: IndexChange,
  base: Omit<NewEvent, 'type' | 'nodes' | 'project' | 'payload'>,
  ctx: DeriveContext,
  byId: Map<string, IndexChange>,
): NewEvent[] {
  const out: NewEvent[] = [];
  const { id, before, after } = change;
  if (after?.type === 'question') {
    const routed = str(after.frontmatter.routed_to);
    if (routed && routed !== str(before?.frontmatter.routed_to)) {
      out.push({
        ...base,
        type: 'question.routed',
        nodes: [id, routed],
        project: after.project,
        payload: {
          question: id,
          title: after.title,
          routed_to: routed,
          routed_via: str(after.frontmatter.routed_via),
          asker: str(after.frontmatter.asker),
          link: link(id),
        },
      });
    }
  }
  if (after) {
    const { added } = edgeDiff(before?.edges ?? [], after.edges);
    for (const e of added) {
      if (e.type !== 'answers') continue;
      const question = byId.get(e.to)?.after ?? byId.get(e.to)?.before ?? null;
      out.push({
        ...base,
        type: 'question.answered',
        nodes: [e.to, id],
        project: question?.project ?? after.project,
        payload: {
          question: e.to,
          answer: id,
          asker: str(question?.frontmatter.asker),
          routed_to: str(question?.frontmatter.routed_to),
          link: link(e.to),
        },
      });
    }
  }
  if (
    after &&
    after.status === 'proposed' &&
    ctx.awaitsApproval(after.type) &&
    (before?.status !== 'proposed' || before.markdown !== after.markdown)
  ) {
    const proposers = after.frontmatter.proposed_by;
    out.push({
      ...base,
      type: 'proposal.pending',
      nodes: [id],
      project: after.project,
      payload: {
        type: after.type,
        title: after.title,
        proposed_by: Array.isArray(proposers) ? proposers.map(String) : [],
        link: link(id),
      },
    });
  }
  if ((after ?? before)?.type === 'comment') out.push(...commentEvents(change, base));
  if (after?.type === 'run') {
    const was = stepStates(before);
    const workflow = str((after.frontmatter.lineage as Record<string, unknown> | undefined)?.workflow);
    for (const [sid, step] of stepStates(after)) {
      const from = was.get(sid)?.state ?? null;
      if (from === step.state) continue;
      const payload = {
        run: id,
        step: sid,
        workflow,
        from,
        capability: step.capability,
        approval: step.approval,
        link: `/v1/runs/${encodeURIComponent(id)}`,
      };
      if (step.state === 'ready')
        out.push({
          ...base,
          type: 'workflow.step_ready',
          nodes: [id],
          project: after.project,
          payload: { ...payload, attempts: step.attempts },
        });
      else if (FINISHED_STEP.has(step.state))
        out.push({
          ...base,
          type: 'workflow.step_finished',
          nodes: [id],
          project: after.project,
          payload: { ...payload, outcome: step.state, attempts: step.attempts },
        });
    }
  }
  return out;
}

/**
 * A comment (plugins/comments) added, edited or deleted, told about the node it discusses (so
 * `node=` filters and the node's live page hear it), and `comment.mentioned` for each person a
 * new `mentions` edge names: the event the mentioned person's inbox shows. Never for a mention
 * of the comment's own author.
 */
function commentEvents(change: IndexChange, base: Omit<NewEvent, 'type' | 'nodes' | 'project' | 'payload'>): NewEvent[] {
  const { id, before, after } = change;
  const main = (after ?? before)!;
  const on = main.edges.find((e) => e.type === 'discusses')?.to ?? null;
  const nodes = on ? [on, id] : [id];
  // the actor is the author of an added or edited comment; no `author` field, so an `assignee=me`
  // filter (a payload field equal to me) does not hand the author their own mentions of others
  const facts = { comment: id, node: on, excerpt: main.title, link: link(on ?? id) };
  const mentioned = (r: NodeRecord | null) => (r ? r.edges.filter((e) => e.type === 'mentions').map((e) => e.to) : []);
  const out: NewEvent[] = [];
  if (!after)
    return [
      { ...base, type: 'comment.deleted', nodes, project: main.project, payload: { ...facts, author: str(main.frontmatter.author) } },
    ];
  if (!before)
    out.push({ ...base, type: 'comment.added', nodes, project: after.project, payload: { ...facts, mentions: mentioned(after) } });
  else if (before.body !== after.body)
    out.push({ ...base, type: 'comment.edited', nodes, project: after.project, payload: { ...facts, mentions: mentioned(after) } });
  const had = new Set(mentioned(before));
  for (const person of new Set(mentioned(after))) {
    if (had.has(person) || person === base.actor?.person) continue;
    out.push({
      ...base,
      type: 'comment.mentioned',
      nodes: on ? [on, person, id] : [id, person],
      project: after.project,
      payload: { ...facts, person },
    });
  }
  return out;
}

/** The events one commit yields, in the order of its changes (node event first, then its edges, then what it means). */
export function eventsOfCommit(commit: DerivableCommit, ctx: DeriveContext = NO_CONTEXT): NewEvent[] {
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
  const byId = new Map(commit.changes.map((c) => [c.id, c]));
  for (const change of commit.changes) {
    const { id, before, after } = change;
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
    out.push(...meaningEvents(change, edgeBase, ctx, byId));
  }
  return out;
}
