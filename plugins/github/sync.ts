/**
 * The two sides of a synced issue in one form (store.ts SyncedIssue), so the loop and conflict
 * rules compare like with like: `issueSnapshot` reads a GitHub issue (a webhook payload's or a
 * REST answer's), `nodeSnapshot` reads the node. Both normalize the same way: bodies with `\n`
 * line ends and no trailing whitespace, cut to the node body limit with a link to the issue;
 * labels sorted; logins lower-case and sorted.
 *
 * Assignees: `synced.assignees` holds every GitHub login; the node can only hold the ones that
 * map to a person (an `assigned` edge), so the node side is compared with `mappedAssignees` of
 * the other side, never with the whole list (an unmapped assignee is no change, either way).
 */
import { LIMITS } from '../../kernel/registry.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Tenant } from '../../kernel/tenant.js';
import type { Mapper } from './handlers/index.js';
import { stripMarkers } from './marker.js';
import { assigneeLoginsOf, normalizeLabels, normalizeLogins } from './mapping.js';
import type { SyncedIssue, SyncRecord } from './store.js';

/** The fields of an issue the sync reads (a webhook payload's `issue`, or GET /repos/{o}/{r}/issues/{n}). */
export interface GithubIssue {
  id: number;
  number: number;
  title: string;
  body: string | null;
  state: 'open' | 'closed';
  state_reason: string | null;
  labels: string[];
  assignees: string[];
  html_url: string;
  updated_at: string;
  user: string | null;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The issue of a payload (its `issue`), checked field by field; null when it is not one. */
export function readIssue(raw: unknown): GithubIssue | null {
  if (!isRecord(raw) || typeof raw.number !== 'number' || typeof raw.id !== 'number' || typeof raw.title !== 'string') return null;
  const names = (list: unknown, key: string): string[] =>
    Array.isArray(list)
      ? list
          .map((x) => (isRecord(x) ? x[key] : typeof x === 'string' && key === 'name' ? x : undefined))
          .filter((x): x is string => typeof x === 'string')
      : [];
  const assignees = names(raw.assignees, 'login');
  if (assignees.length === 0 && isRecord(raw.assignee) && typeof raw.assignee.login === 'string') assignees.push(raw.assignee.login);
  return {
    id: raw.id,
    number: raw.number,
    title: raw.title,
    body: typeof raw.body === 'string' ? raw.body : null,
    state: raw.state === 'closed' ? 'closed' : 'open',
    state_reason: typeof raw.state_reason === 'string' ? raw.state_reason : null,
    labels: names(raw.labels, 'name'),
    assignees,
    html_url: typeof raw.html_url === 'string' ? raw.html_url : '',
    updated_at: typeof raw.updated_at === 'string' ? raw.updated_at : '',
    user: isRecord(raw.user) && typeof raw.user.login === 'string' ? raw.user.login : null,
  };
}

/** Line ends as `\n`, no trailing whitespace. */
export function normalizeText(text: string | null | undefined): string {
  return (text ?? '').replace(/\r\n?/g, '\n').trimEnd();
}

/** The note that ends a body cut to the node limit. */
const cutNote = (url: string) => `\n\n[... the rest is on GitHub: ${url}]`;

/** `text` cut to at most `limit` UTF-8 bytes, on a character boundary. */
export function cutToBytes(text: string, limit: number): string {
  if (Buffer.byteLength(text) <= limit) return text;
  let out = Buffer.from(text).subarray(0, limit).toString('utf8');
  // a cut inside a multi-byte character decodes as U+FFFD: drop it
  while (out.endsWith('\uFFFD') || Buffer.byteLength(out) > limit) out = out.slice(0, -1);
  return out;
}

/** The node body of an issue body: normalized, and cut (with a link to the issue) past the node limit. */
export function nodeBodyOf(body: string | null, url: string): { body: string; truncated: boolean } {
  const text = normalizeText(body);
  if (Buffer.byteLength(text) <= LIMITS.bodyBytes) return { body: text, truncated: false };
  const note = cutNote(url);
  return { body: cutToBytes(text, LIMITS.bodyBytes - Buffer.byteLength(note)).trimEnd() + note, truncated: true };
}

/** The issue in synced form. */
export function issueSnapshot(issue: GithubIssue): SyncedIssue & { body_truncated: boolean } {
  // the marker the outbound side put into an issue it created is no part of the text (marker.ts)
  const body = nodeBodyOf(stripMarkers(issue.body), issue.html_url);
  return {
    title: issue.title,
    body: body.body,
    state: issue.state,
    labels: normalizeLabels(issue.labels),
    assignees: normalizeLogins(issue.assignees),
    body_truncated: body.truncated,
  };
}

/** A new pairing of a node with an issue, synced as `snap` (issueSnapshot of the issue), no comments paired yet. */
export function newSyncRecord(
  link: { id: string; repo: string },
  node: { id: string; revision: string },
  issue: GithubIssue,
  snap: ReturnType<typeof issueSnapshot>,
): SyncRecord {
  return {
    node: node.id,
    link: link.id,
    repo: link.repo,
    issue_number: issue.number,
    issue_id: issue.id,
    synced: { title: snap.title, body: snap.body, state: snap.state, labels: snap.labels, assignees: snap.assignees },
    node_revision: node.revision,
    issue_updated_at: issue.updated_at,
    ...(snap.body_truncated ? { body_truncated: true } : {}),
    comments: {},
  };
}

/** The node in synced form (assignees: the logins of its assigned people that have one). */
export function nodeSnapshot(tenant: Tenant, map: Mapper, node: NodeRecord): SyncedIssue {
  const labels = Array.isArray(node.frontmatter.labels) ? node.frontmatter.labels.filter((l): l is string => typeof l === 'string') : [];
  return {
    title: node.title,
    body: normalizeText(node.body),
    state: map.stateOf(node.type, node.status).state,
    labels: normalizeLabels(labels),
    assignees: assigneeLoginsOf(tenant, map.mappings, node),
  };
}

/** The logins of `logins` that map to a person (what a node can hold as `assigned` edges). */
export function mappedAssignees(map: Mapper, logins: readonly string[]): string[] {
  return logins.filter((l) => map.personOf(l) !== null);
}

export type SyncedField = keyof SyncedIssue;
export const SYNCED_FIELDS: readonly SyncedField[] = ['title', 'body', 'state', 'labels', 'assignees'];

/** Whether two snapshots agree on `field` (assignees compared on the mapped logins). */
export function sameField(map: Mapper, field: SyncedField, a: SyncedIssue, b: SyncedIssue): boolean {
  if (field === 'assignees') return JSON.stringify(mappedAssignees(map, a.assignees)) === JSON.stringify(mappedAssignees(map, b.assignees));
  return JSON.stringify(a[field]) === JSON.stringify(b[field]);
}
