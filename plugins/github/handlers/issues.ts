/**
 * `issues` deliveries: a GitHub issue of a linked repository and its node stay in step
 * (docs/github.md "What syncs").
 *
 * - An issue with no node yet (opened, or any followed action on an issue from before the
 *   link) creates one: type from its labels, status from its state, labels, assignees (the
 *   people their logins map to), priority from the labels; and its `github-sync` record.
 * - A later change is read as the issue's whole state against the record's `synced` (store.ts):
 *   a field equal to `synced` is no change (our own write coming back, or an action that did
 *   not touch it); a changed field is applied to the node with the revision just read, unless
 *   the node moved away from `synced` too: then the node keeps its value and GitHub's is kept
 *   in a comment on the node with both texts (conflict.ts), and `synced` takes GitHub's value,
 *   so the node's value goes out to GitHub as the newer one (outbound).
 * - `deleted`: the node stays (nothing here is deleted by GitHub), closed as not planned unless
 *   it is already closed, with a comment saying so; the pairing goes.
 * - Other actions (locked, pinned, milestoned, transferred, ...) are not synced, nor an `issues`
 *   event whose issue is a pull request.
 */
import { errors, SvcError } from '../../../kernel/errors.js';
import { invoke } from '../../../kernel/operation.js';
import type { NodeRecord } from '../../../kernel/graph-index.js';
import { StatusPayload, type OpContext } from '../../../kernel/plugin.js';
import * as core from '../../core/api.js';
import { keepConflict, noteOnNode } from '../conflict.js';
import { markedId, stripMarkers } from '../marker.js';
import { syncOfIssue, type SyncRecord } from '../store.js';
import {
  issueSnapshot,
  mappedAssignees,
  newSyncRecord,
  nodeSnapshot,
  readIssue,
  sameField,
  SYNCED_FIELDS,
  type GithubIssue,
  type SyncedField,
} from '../sync.js';
import type { GithubHandler, InboundContext } from './index.js';

/** the actions whose issue state is read and applied */
const FOLLOWED = new Set(['opened', 'edited', 'closed', 'reopened', 'labeled', 'unlabeled', 'assigned', 'unassigned']);
const SUMMARY_MAX = 500;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function loginOf(user: unknown): string | null {
  return isRecord(user) && typeof user.login === 'string' ? user.login : null;
}

/** An operation's answer, the payload of a 207 included. */
function payloadOf(answer: unknown): unknown {
  return answer instanceof StatusPayload ? answer.payload : answer;
}

function revisionOf(answer: unknown, fallback: string): string {
  const p = payloadOf(answer);
  return isRecord(p) && typeof p.revision === 'string' ? p.revision : fallback;
}

/** Kebab-case, for an id segment. */
function slug(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 60) || 'repo'
  );
}

/** `owner/name#12`: what a node's `github_issue` field says. */
export function issueRef(repo: string, number: number): string {
  return `${repo}#${number}`;
}

/**
 * Creates the node of an issue not synced yet, with its sync record. A node that already
 * carries this issue's `github_issue` under the id this would take (a first attempt that
 * crashed after its commit) is adopted, not duplicated.
 */
export async function createNodeOf(ctx: InboundContext, issue: GithubIssue, sender: string | null): Promise<SyncRecord> {
  const { tenant, link, map } = ctx;
  const own = ownMarkerOf(tenant, issue.body);
  if (own) return pairOwnIssue(ctx, own, issue);
  const snap = issueSnapshot(issue);
  const type = map.typeOf(issue.labels);
  const def = tenant.registry.nodeTypes.get(type);
  if (!def) throw errors.invalidNode(`the mapped type ${type} is not a node type of this tenant (mappings of ${link.repo})`);
  const ref = issueRef(link.repo, issue.number);
  const base = `${def.prefix}gh-${slug(link.repo.split('/')[1] ?? link.repo)}-${issue.number}`;
  let id = base;
  let existing = tenant.index.get(id);
  for (let n = 2; existing && existing.frontmatter.github_issue !== ref; n++) {
    id = `${base}-${n}`;
    existing = tenant.index.get(id);
  }
  // the node is the issue's: its author writes it (a late first sync too)
  const writer = ctx.as(issue.user ?? sender);
  let revision: string;
  if (existing) revision = existing.revision;
  else {
    const people = [...new Set(mappedAssignees(map, snap.assignees).map((l) => map.personOf(l)))].filter((p): p is string => p !== null);
    const node: Record<string, unknown> = {
      id,
      type,
      summary: issue.title.slice(0, SUMMARY_MAX),
      title: issue.title,
      ...(snap.labels.length > 0 ? { labels: snap.labels } : {}),
      github_issue: ref,
      github_url: issue.html_url,
      ...(link.project ? { project: link.project } : {}),
      ...(people.length > 0 ? { edges: people.map((to) => ({ type: 'assigned', to })) } : {}),
      body: snap.body,
    };
    const answer = payloadOf(await invoke(core.putNode, writer, { nodes: [node] }));
    const result = isRecord(answer) && Array.isArray(answer.results) ? answer.results[0] : undefined;
    if (!isRecord(result) || result.status === 'failed') {
      const error = isRecord(result) && isRecord(result.error) ? result.error : {};
      throw new SvcError(
        typeof result?.http_status === 'number' ? result.http_status : 422,
        typeof error.code === 'string' ? error.code : 'invalid_node',
        `creating ${id} for ${ref}: ${typeof error.message === 'string' ? error.message : 'refused'}`,
      );
    }
    revision = typeof result.revision === 'string' ? result.revision : '';
  }
  // the status the issue's state maps to, when it is not the type's first one (a closed issue)
  const status = map.statusOf(type, issue.state, issue.state_reason);
  const created = tenant.index.get(id);
  if (created && created.status !== status && map.stateOf(type, created.status).state !== issue.state)
    revision = revisionOf(await invoke(core.patchNode, writer, { id, revision: created.revision, set: { status } }), revision);
  const priority = map.priorityOf(issue.labels);
  if (priority && created && created.frontmatter.priority !== priority)
    revision = revisionOf(await invoke(core.setPriority, writer, { id, priority }), revision);
  const record = newSyncRecord(link, { id, revision: tenant.index.get(id)?.revision ?? revision }, issue, snap);
  await ctx.stores.sync.set(id, record);
  return record;
}

/** The node a marker in `text` names (marker.ts: what the outbound side created), when it is one of this tenant's. */
export function ownMarkerOf(tenant: InboundContext['tenant'], text: string | null): NodeRecord | null {
  const id = markedId(text);
  return (id && tenant.index.get(id)) || null;
}

/**
 * An issue the outbound side created for `node` coming back before it recorded the pairing:
 * paired with its node as it is (both sides hold the same), never a second node.
 */
async function pairOwnIssue(ctx: InboundContext, node: NodeRecord, issue: GithubIssue): Promise<SyncRecord> {
  const existing = ctx.stores.sync.get(node.id);
  if (existing) return existing;
  const snap = issueSnapshot({ ...issue, body: stripMarkers(issue.body) });
  const record = newSyncRecord(ctx.link, node, issue, snap);
  await ctx.stores.sync.set(node.id, record);
  return record;
}

/** The people assigned to a node (its `assigned` edges to person nodes). */
function assignedPeople(node: NodeRecord): string[] {
  return node.edges.filter((e) => e.type === 'assigned').map((e) => e.to);
}

/** Applies the issue's state to its node under the sync rule (see the header). */
export async function applyIssue(ctx: InboundContext, record: SyncRecord, node: NodeRecord, issue: GithubIssue, sender: string | null) {
  const { tenant, map } = ctx;
  const incoming = issueSnapshot(issue);
  const current = nodeSnapshot(tenant, map, node);
  const synced = record.synced;
  const set: Record<string, unknown> = {};
  const patch: { body?: string; add_edges?: Array<{ type: string; to: string }>; remove_edges?: Array<{ type: string; to: string }> } = {};
  const kept: Array<{ field: SyncedField; github: string; here: string }> = [];
  const next = { ...synced };
  for (const field of SYNCED_FIELDS) {
    // GitHub did not change it (an echo of our own write, or an action that did not touch it)
    if (sameField(map, field, incoming, synced)) continue;
    Object.assign(next, { [field]: incoming[field] });
    // both sides already agree
    if (sameField(map, field, incoming, current)) continue;
    if (!sameField(map, field, current, synced)) {
      kept.push({ field, github: show(incoming[field]), here: show(current[field]) });
      continue;
    }
    if (field === 'title') {
      set.title = incoming.title;
      set.summary = incoming.title.slice(0, SUMMARY_MAX);
    } else if (field === 'body') patch.body = incoming.body;
    else if (field === 'state') set.status = map.statusOf(node.type, issue.state, issue.state_reason);
    else if (field === 'labels') set.labels = incoming.labels.length > 0 ? incoming.labels : null;
    else {
      const want = new Set(mappedAssignees(map, incoming.assignees).map((l) => map.personOf(l)));
      const have = assignedPeople(node);
      const add = [...want].filter((p): p is string => p !== null && !have.includes(p));
      // only people GitHub can name (they have a login) are taken off; the others are this side's alone
      const remove = have.filter((p) => !want.has(p) && map.loginOf(p) !== null);
      if (add.length > 0) patch.add_edges = add.map((to) => ({ type: 'assigned', to }));
      if (remove.length > 0) patch.remove_edges = remove.map((to) => ({ type: 'assigned', to }));
    }
  }
  const writer = ctx.as(sender);
  let revision = node.revision;
  if (Object.keys(set).length > 0 || Object.keys(patch).length > 0) {
    revision = revisionOf(
      await invoke(core.patchNode, writer, {
        id: node.id,
        revision: node.revision,
        ...(Object.keys(set).length > 0 ? { set } : {}),
        ...patch,
      }),
      revision,
    );
  }
  // the priority follows the labels GitHub changed (a label that maps to none leaves it)
  if (!sameField(map, 'labels', incoming, synced)) {
    const priority = map.priorityOf(incoming.labels);
    const before = map.priorityOf(synced.labels);
    const now = tenant.index.get(node.id);
    if (now && priority && now.frontmatter.priority !== priority) await invoke(core.setPriority, writer, { id: node.id, priority });
    else if (now && !priority && before && now.frontmatter.priority === before)
      await invoke(core.setPriority, writer, { id: node.id, priority: null });
  }
  for (const k of kept) {
    // without comments a conflict stays unresolved here: `synced` keeps the old value, so the
    // outbound side meets it and keeps both texts on the issue instead (docs/github.md)
    const noted = await keepConflict(ctx, node.id, sender, issue, k);
    if (!noted) Object.assign(next, { [k.field]: synced[k.field] });
  }
  await ctx.stores.sync.set(record.node, {
    // the record as it is now: the conflict notes above paired their comments in it (conflict.ts pairLocal)
    ...(ctx.stores.sync.get(record.node) ?? record),
    synced: next,
    node_revision: tenant.index.get(node.id)?.revision ?? revision,
    issue_updated_at: issue.updated_at,
    issue_id: issue.id,
    ...(incoming.body_truncated ? { body_truncated: true } : { body_truncated: false }),
  });
}

function show(value: unknown): string {
  return Array.isArray(value) ? (value.length > 0 ? value.join(', ') : '(none)') : String(value);
}

/** The issue was deleted on GitHub: the node stays, closed as not planned, and says so. */
async function issueDeleted(ctx: InboundContext, record: SyncRecord, issue: GithubIssue, sender: string | null): Promise<void> {
  const node = ctx.tenant.index.get(record.node);
  if (node) {
    const writer: OpContext = ctx.as(sender);
    if (ctx.map.stateOf(node.type, node.status).state === 'open')
      await invoke(core.patchNode, writer, {
        id: node.id,
        revision: node.revision,
        set: { status: ctx.map.statusOf(node.type, 'closed', 'not_planned') },
      });
    await noteOnNode(
      ctx,
      node.id,
      sender,
      `GitHub issue ${issueRef(ctx.link.repo, issue.number)} was deleted${sender ? ` by @${sender}` : ''}; this node is no longer synced with it.`,
    );
  }
  await ctx.stores.sync.delete(record.node);
}

export const issuesHandler: GithubHandler = async (ctx, payload) => {
  const p = isRecord(payload) ? payload : {};
  const action = typeof p.action === 'string' ? p.action : '';
  const issue = readIssue(p.issue);
  if (!issue) throw errors.badRequest('an issues delivery without an issue');
  // a pull request seen as an issue (milestoned, ...) is the pull_request handler's, not an issue to sync
  if (isRecord(p.issue) && p.issue.pull_request !== undefined) return;
  const sender = loginOf(p.sender);
  const record = syncOfIssue(ctx.stores, ctx.link.id, issue.number);
  if (action === 'deleted') {
    if (record && !record.ended) await issueDeleted(ctx, record, issue, sender);
    else if (record) await ctx.stores.sync.delete(record.node);
    return;
  }
  if (!FOLLOWED.has(action)) return;
  if (!record) {
    await createNodeOf(ctx, issue, sender);
    return;
  }
  if (record.ended) return;
  const node = ctx.tenant.index.get(record.node);
  if (!node) {
    // the node was deleted here: the pairing ends, and GitHub does not bring the node back
    ctx.log.info('github: the node of a synced issue is gone; pairing ended', {
      org: ctx.tenant.org,
      node: record.node,
      issue: issue.number,
    });
    await ctx.stores.sync.set(record.node, { ...record, ended: 'the node was deleted' });
    return;
  }
  await applyIssue(ctx, record, node, issue, sender);
};
