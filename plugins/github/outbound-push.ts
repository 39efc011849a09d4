/**
 * What the outbound engine (outbound.ts) does on GitHub for one node, under the sync rule
 * (store.ts; docs/github.md "Outbound"). Each function is safe to run again after a crash at
 * any point, so a change is applied exactly once:
 *
 * - `pushNode`: the node's fields that moved away from `synced` are compared with the issue as
 *   GitHub has it now (re-read before every write). A field GitHub already shows is only
 *   recorded (a write that landed before a crash, or the echo of an inbound change); a field
 *   GitHub still has at `synced` is sent (one PATCH with all of them); a field GitHub moved too
 *   is not written over: the node's text goes to the issue as a comment holding both texts
 *   (once per pair of values), and `synced` keeps the old value, so the inbound side settles
 *   it when GitHub's change arrives (it keeps the node's value and a comment with GitHub's).
 * - `createIssue`: a node new in a linked project becomes an issue whose body ends with the
 *   node's marker (marker.ts). A durable "creating" record is written first; an attempt that
 *   finds one (the last attempt may have reached GitHub) looks for the marker among the issues
 *   updated since, and adopts the issue it finds instead of creating a second.
 * - `postComment`: a comment on a synced node becomes an issue comment, with the same
 *   "creating" record and marker search; its pairing is recorded in the sync record so the
 *   inbound side does not bring it back.
 */
import { createHash } from 'node:crypto';
import { invoke } from '../../kernel/operation.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { KernelServices } from '../../kernel/plugin.js';
import type { Collection } from '../../kernel/state-store.js';
import type { Tenant } from '../../kernel/tenant.js';
import * as core from '../core/api.js';
import type { GithubClient } from './client.js';
import type { Mapper } from './handlers/index.js';
import { issueRef } from './handlers/issues.js';
import { inboundContext, mapperOf } from './inbound.js';
import { markerOf, stripMarkers, withMarker } from './marker.js';
import type { GithubStores, StoredLink, SyncedIssue, SyncRecord } from './store.js';
import {
  issueSnapshot,
  mappedAssignees,
  nodeSnapshot,
  readIssue,
  sameField,
  SYNCED_FIELDS,
  type GithubIssue,
  type SyncedField,
} from './sync.js';

/** A create on GitHub that may have happened: kept until its result is recorded. */
export interface PendingCreate {
  kind: 'issue' | 'comment';
  /** the node (issue) or comment node id whose marker the created item carries */
  id: string;
  link: string;
  /** ISO: issues and comments updated since (less a margin) are searched for the marker */
  started: string;
}

/** The outbound side's own state (`github-outbound-pending`, `github-outbound-notes`). */
export interface OutboundStores {
  pending: Collection<PendingCreate>;
  /** conflict comments already posted: key -> ISO time */
  notes: Collection<string>;
}

export interface PushContext {
  tenant: Tenant;
  services: KernelServices;
  stores: GithubStores;
  out: OutboundStores;
  link: StoredLink;
  gh: GithubClient;
}

/** How far back from a pending create's start the marker search looks (clock skew with GitHub). */
const SEARCH_MARGIN_MS = 10 * 60 * 1000;
/** pages of 100 searched for a marker at most */
const SEARCH_PAGES = 5;

function ownerRepo(link: StoredLink): { owner: string; repo: string } {
  const [owner = '', repo = ''] = link.repo.split('/');
  return { owner, repo };
}

/** The issue as the sync reads it, its marker left out of the body. */
function issueOf(data: unknown): GithubIssue {
  const issue = readIssue(data);
  if (!issue) throw new Error('GitHub answered something that is not an issue');
  return { ...issue, body: stripMarkers(issue.body) };
}

/** The logins GitHub should hold: the node's (mapped) ones, and GitHub's that map to nobody (the node cannot hold those). */
function assigneesToSend(map: Mapper, here: SyncedIssue, there: SyncedIssue): string[] {
  const unmapped = there.assignees.filter((l) => map.personOf(l) === null);
  return [...new Set([...here.assignees, ...unmapped])].sort();
}

const show = (value: unknown): string => (Array.isArray(value) ? (value.length > 0 ? value.join(', ') : '(none)') : String(value));

const fence = (text: string): string => {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const f = '`'.repeat(longest + 1);
  return `${f}text\n${text}\n${f}`;
};

/** GitHub's issue comments hold at most 65,536 characters: a longer text is cut, with a note. */
const COMMENT_MAX = 60_000;
const fit = (text: string): string =>
  text.length <= COMMENT_MAX ? text : `${text.slice(0, COMMENT_MAX)}\n\n[... cut: the whole text is on the node]`;

/** Posts the node's value of a field GitHub also changed as an issue comment, once per pair of values. */
async function noteConflict(
  p: PushContext,
  record: SyncRecord,
  node: NodeRecord,
  field: SyncedField,
  here: SyncedIssue,
  there: SyncedIssue,
): Promise<void> {
  const hash = createHash('sha256')
    .update(JSON.stringify([field, here[field], there[field]]))
    .digest('hex')
    .slice(0, 16);
  const key = `${record.node}:${field}:${hash}`;
  if (p.out.notes.has(key)) return;
  const text =
    `work-graph change to **${field}** of ${node.id} not applied here: this issue changed too since the last sync, ` +
    `so GitHub's value stays. work-graph's value was:\n\n${fence(show(here[field]))}\n\nGitHub's:\n\n${fence(show(there[field]))}`;
  const noteId = `conflict:${key}`;
  await createComment(p, record, noteId, fit(text));
  await p.out.notes.set(key, new Date(p.services.clock.now()).toISOString());
}

/** Sends the node's changes since `synced` to its issue (see the header). Returns what was sent. */
export async function pushNode(
  p: PushContext,
  record: SyncRecord,
  node: NodeRecord,
): Promise<{ sent: SyncedField[]; conflicts: SyncedField[] }> {
  const map = mapperOf(p.tenant, p.link);
  const here = nodeSnapshot(p.tenant, map, node);
  const changed = SYNCED_FIELDS.filter((f) => !sameField(map, f, here, record.synced) && !(f === 'body' && record.body_truncated));
  if (changed.length === 0) return { sent: [], conflicts: [] };
  const { owner, repo } = ownerRepo(p.link);
  const current = await p.gh.rest.issues.get({ owner, repo, issue_number: record.issue_number });
  let issue = issueOf(current.data);
  const there = issueSnapshot(issue);
  const agreed: Partial<SyncedIssue> = {};
  const patch: {
    title?: string;
    body?: string;
    state?: 'open' | 'closed';
    state_reason?: 'completed' | 'not_planned' | 'reopened' | null;
    labels?: string[];
    assignees?: string[];
  } = {};
  const sent: SyncedField[] = [];
  const conflicts: SyncedField[] = [];
  for (const field of changed) {
    if (sameField(map, field, there, here)) {
      // GitHub already shows it: a write of ours that landed before a crash, or an inbound echo
      Object.assign(agreed, { [field]: there[field] });
      continue;
    }
    if (!sameField(map, field, there, record.synced)) {
      conflicts.push(field);
      continue;
    }
    sent.push(field);
    if (field === 'title') patch.title = here.title;
    else if (field === 'body') patch.body = here.body;
    else if (field === 'state') {
      const s = map.stateOf(node.type, node.status);
      patch.state = s.state;
      patch.state_reason = s.state === 'closed' ? s.state_reason : 'reopened';
    } else if (field === 'labels') patch.labels = here.labels;
    else patch.assignees = assigneesToSend(map, here, there);
    const value = field === 'assignees' ? (patch.assignees ?? []) : here[field];
    Object.assign(agreed, { [field]: value });
  }
  if (sent.length > 0) {
    const answer = await p.gh.rest.issues.update({ owner, repo, issue_number: record.issue_number, ...patch });
    issue = issueOf(answer.data);
  }
  // a read-modify-write with no wait in between: the inbound side's changes to the record are kept
  const now = p.stores.sync.get(record.node);
  if (now) {
    await p.stores.sync.set(record.node, {
      ...now,
      synced: { ...now.synced, ...agreed },
      node_revision: node.revision,
      issue_updated_at: issue.updated_at || now.issue_updated_at,
    });
  }
  for (const field of conflicts) await noteConflict(p, record, node, field, here, there);
  return { sent, conflicts };
}

/** The node types a link makes issues of: the ones its mappings name. */
export function linkedTypes(link: StoredLink): Set<string> {
  const m = link.mappings;
  return new Set([...Object.values(m.label_types), ...Object.keys(m.open_status), m.default_type]);
}

/** The enabled link whose project a node new here belongs to (and whose mappings name its type), if any. */
export function linkForNewNode(stores: GithubStores, node: NodeRecord): StoredLink | undefined {
  if (!node.project || typeof node.frontmatter.github_issue === 'string') return undefined;
  for (const link of stores.links.values())
    if (link.enabled && link.project === node.project && linkedTypes(link).has(node.type)) return link;
  return undefined;
}

async function startPending(p: PushContext, kind: PendingCreate['kind'], id: string): Promise<{ pending: PendingCreate; again: boolean }> {
  const key = `${kind}:${id}`;
  const existing = p.out.pending.get(key);
  if (existing) return { pending: existing, again: true };
  const pending: PendingCreate = { kind, id, link: p.link.id, started: new Date(p.services.clock.now()).toISOString() };
  // durable before the request: a crash after it leaves the record that says "look before creating"
  await p.out.pending.set(key, pending);
  return { pending, again: false };
}

const sinceOf = (pending: PendingCreate): string => new Date(Date.parse(pending.started) - SEARCH_MARGIN_MS).toISOString();

/** An issue of the repository updated since the pending create began that carries `id`'s marker. */
async function findMarkedIssue(p: PushContext, pending: PendingCreate): Promise<unknown> {
  const { owner, repo } = ownerRepo(p.link);
  const marker = markerOf(pending.id);
  for (let page = 1; page <= SEARCH_PAGES; page++) {
    const res = await p.gh.rest.issues.listForRepo({ owner, repo, state: 'all', since: sinceOf(pending), per_page: 100, page });
    const hit = res.data.find((i) => typeof i.body === 'string' && i.body.includes(marker) && i.pull_request === undefined);
    if (hit) return hit;
    if (res.data.length < 100) break;
  }
  return null;
}

/** Creates the issue of a node new in a linked project, or adopts the one a crashed attempt created (see the header). */
export async function createIssue(p: PushContext, node: NodeRecord): Promise<SyncRecord> {
  const map = mapperOf(p.tenant, p.link);
  const { pending, again } = await startPending(p, 'issue', node.id);
  const here = nodeSnapshot(p.tenant, map, node);
  const { owner, repo } = ownerRepo(p.link);
  let data: unknown = again ? await findMarkedIssue(p, pending) : null;
  if (!data) {
    const s = map.stateOf(node.type, node.status);
    const res = await p.gh.rest.issues.create({
      owner,
      repo,
      title: here.title,
      body: withMarker(here.body, node.id),
      ...(here.labels.length > 0 ? { labels: here.labels } : {}),
      ...(here.assignees.length > 0 ? { assignees: mappedAssignees(map, here.assignees) } : {}),
    });
    data = res.data;
    // an issue is created open: a node already closed closes it (the PATCH is safe to repeat)
    if (s.state === 'closed') {
      const issue = issueOf(data);
      data = (await p.gh.rest.issues.update({ owner, repo, issue_number: issue.number, state: 'closed', state_reason: s.state_reason }))
        .data;
    }
  }
  const issue = issueOf(data);
  const snap = issueSnapshot(issue);
  const record: SyncRecord = {
    node: node.id,
    link: p.link.id,
    repo: p.link.repo,
    issue_number: issue.number,
    issue_id: issue.id,
    synced: { title: snap.title, body: snap.body, state: snap.state, labels: snap.labels, assignees: snap.assignees },
    node_revision: node.revision,
    issue_updated_at: issue.updated_at,
    comments: {},
  };
  await p.stores.sync.set(node.id, record);
  await p.out.pending.delete(`issue:${node.id}`);
  await noteIssueOnNode(p, node.id, issue);
  return record;
}

/** The node says which issue it is (`github_issue`, `github_url`), written as the link's bot person. */
async function noteIssueOnNode(p: PushContext, id: string, issue: GithubIssue): Promise<void> {
  const node = p.tenant.index.get(id);
  const ref = issueRef(p.link.repo, issue.number);
  if (!node || node.frontmatter.github_issue === ref) return;
  const writer = inboundContext(p.tenant, p.services, p.link, 'outbound', 'outbound').as(null);
  try {
    await invoke(core.patchNode, writer, {
      id,
      revision: node.revision,
      set: { github_issue: ref, ...(issue.html_url ? { github_url: issue.html_url } : {}) },
    });
  } catch (err) {
    // the pairing is recorded; the fields on the node are a convenience, not the pairing
    p.services.log.warn('github outbound: could not note the issue on the node', { org: p.tenant.org, node: id, error: String(err) });
  }
}

/** Creates an issue comment carrying `id`'s marker, or finds the one a crashed attempt created. Returns its id. */
async function createComment(p: PushContext, record: SyncRecord, id: string, body: string): Promise<number> {
  const { owner, repo } = ownerRepo(p.link);
  const { pending, again } = await startPending(p, 'comment', id);
  let found: number | null = null;
  if (again) {
    const marker = markerOf(id);
    for (let page = 1; page <= SEARCH_PAGES && found === null; page++) {
      const res = await p.gh.rest.issues.listComments({
        owner,
        repo,
        issue_number: record.issue_number,
        since: sinceOf(pending),
        per_page: 100,
        page,
      });
      found = res.data.find((c) => typeof c.body === 'string' && c.body.includes(marker))?.id ?? null;
      if (res.data.length < 100) break;
    }
  }
  if (found === null) {
    const res = await p.gh.rest.issues.createComment({ owner, repo, issue_number: record.issue_number, body: withMarker(body, id) });
    found = res.data.id;
  }
  await p.out.pending.delete(`comment:${id}`);
  return found;
}

/** A comment made here on a synced node goes to its issue, paired so it does not come back. */
export async function postComment(p: PushContext, record: SyncRecord, comment: NodeRecord): Promise<void> {
  const author = typeof comment.frontmatter.author === 'string' ? p.tenant.index.get(comment.frontmatter.author) : undefined;
  const by = author ? `\n\n\u2014 ${author.title} on work-graph` : '';
  const ghId = await createComment(p, record, comment.id, fit(`${comment.body.trimEnd()}${by}`));
  const now = p.stores.sync.get(record.node) ?? record;
  await p.stores.sync.set(record.node, { ...now, comments: { ...(now.comments ?? {}), [String(ghId)]: comment.id } });
}
