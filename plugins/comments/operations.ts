/**
 * Comments (issue 25 item 2): a comment is a `comment-` node (seed-pack/index.ts) with a
 * markdown body, a `discusses` edge to the node it is about and a `mentions` edge to each person
 * it names, so it has history, search and events like every node, and never enters the queue.
 * One function per operation; each write is one commit attributed to the caller.
 */
import { randomBytes } from 'node:crypto';
import { errors } from '../../kernel/errors.js';
import type { Edge, NodeRecord } from '../../kernel/graph-index.js';
import type { Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import { LIMITS } from '../../kernel/registry.js';
import { writeActorOf } from '../../kernel/tenants.js';
import type { Tenant } from '../../kernel/tenant.js';
import type {
  AddCommentInput,
  AddCommentOutput,
  CommentIdInput,
  CommentView,
  DeleteCommentOutput,
  EditCommentInput,
  ListCommentsInput,
  ListCommentsOutput,
} from './api.js';
import { directory, resolveMentions, type PeopleDirectory } from './mentions.js';

export const COMMENT_TYPE = 'comment';
export const DISCUSSES = 'discusses';
/** a comment's body: the node body limit (docs/spec.md "Limits") */
export const COMMENT_MAX_BYTES = LIMITS.bodyBytes;
/** the excerpt kept as the comment's summary (its title in search, history and the inbox) */
const EXCERPT_CHARS = 200;
export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 200;

type View = Static<typeof CommentView>;

/** The node a comment discusses (its first `discusses` edge). */
export function discussedBy(record: NodeRecord): string | null {
  return record.edges.find((e) => e.type === DISCUSSES)?.to ?? null;
}

function checkBody(body: string): string {
  const text = body.replace(/\r\n?/g, '\n');
  if (text.trim() === '') throw errors.validation('a comment needs some text', [{ field: 'body', message: 'must not be blank' }]);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > COMMENT_MAX_BYTES)
    throw errors.validation(`body exceeds ${COMMENT_MAX_BYTES} bytes`, [
      { field: 'body', message: `at most ${COMMENT_MAX_BYTES} bytes`, bytes },
    ]);
  return text;
}

function excerpt(body: string): string {
  const line = body.replace(/\s+/g, ' ').trim();
  return line.length <= EXCERPT_CHARS ? line : `${line.slice(0, EXCERPT_CHARS - 1)}…`;
}

const nameOf = (tenant: Tenant, person: string | null): string | null => {
  if (!person) return null;
  const fm = tenant.index.get(person)?.frontmatter;
  return typeof fm?.name === 'string' && fm.name ? fm.name : person;
};

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** The answer's view of a comment node: mentions are its `mentions` edges, with the handles that name them in the body today. */
export function commentView(tenant: Tenant, record: NodeRecord, people: PeopleDirectory = directory(tenant)): View {
  const fm = record.frontmatter;
  const mentioned = record.edges.filter((e) => e.type === 'mentions').map((e) => e.to);
  const found = new Map(resolveMentions(tenant, record.body, people).mentions.map((m) => [m.person, m.handles]));
  const author = str(fm.author);
  const created = str(fm.created) ?? '';
  const updated = str(fm.updated) ?? created;
  return {
    id: record.id,
    node: discussedBy(record) ?? '',
    body: record.body,
    author,
    author_name: nameOf(tenant, author),
    agent: str(fm.authored_by_agent),
    created,
    updated,
    edited: updated !== created,
    revision: record.revision,
    mentions: mentioned.map((person) => ({ person, name: nameOf(tenant, person) ?? person, handles: found.get(person) ?? [] })),
  };
}

/** The node to comment on: it exists in the caller's tenant (404 otherwise) and is not itself a comment. */
function discussable(tenant: Tenant, id: string): NodeRecord {
  const record = tenant.index.get(id);
  if (!record) throw errors.notFound(`node ${id}`);
  if (record.type === COMMENT_TYPE)
    throw errors.validation(`${id} is a comment; comment on the node it discusses (${discussedBy(record) ?? 'unknown'})`, [
      { field: 'id', message: 'a comment cannot be commented on' },
    ]);
  return record;
}

/** A comment of the caller's tenant, or 404 (an id of another type is no comment). */
function commentRecord(tenant: Tenant, id: string): NodeRecord {
  const record = tenant.index.get(id);
  if (!record || record.type !== COMMENT_TYPE) throw errors.notFound(`comment ${id}`);
  return record;
}

function freshId(tenant: Tenant): string {
  for (;;) {
    const id = `comment-${randomBytes(8).toString('hex')}`;
    if (!tenant.index.has(id)) return id;
  }
}

function edgesFor(node: string, mentions: Array<{ person: string }>): Edge[] {
  return [{ type: DISCUSSES, to: node }, ...mentions.map((m) => ({ type: 'mentions', to: m.person }))];
}

export async function addComment(ctx: OpContext, input: Static<typeof AddCommentInput>): Promise<Static<typeof AddCommentOutput>> {
  const body = checkBody(input.body);
  const actor = writeActorOf(ctx.actor);
  const { tenant } = ctx;
  return tenant.write(actor, { op: 'add_comment', via: ctx.via }, async (draft) => {
    // looked up inside the write job: the node cannot disappear between the check and the commit
    const target = discussable(tenant, input.id);
    const { mentions, unresolved } = resolveMentions(tenant, body);
    const id = freshId(tenant);
    const frontmatter: Record<string, unknown> = { id, type: COMMENT_TYPE, status: 'posted', summary: excerpt(body) };
    if (target.project) frontmatter.project = target.project;
    frontmatter.edges = edgesFor(target.id, mentions);
    draft.put({ frontmatter, body });
    await draft.commit({ deferDurability: true });
    const stored = tenant.index.get(id);
    if (!stored) throw new Error(`comment ${id} was committed but is not in the index`);
    return { ...commentView(tenant, stored), unresolved, warnings: draft.warnings };
  });
}

/** Comments oldest first; the cursor is the sort key of the last one seen, so a deletion between pages skips nothing. */
const sortKey = (v: { created: string; id: string }) => `${v.created} ${v.id}`;

function decodeCursor(after: string): string {
  const key = Buffer.from(after, 'base64url').toString('utf8');
  if (!/^\S+ comment-[a-z0-9-]+$/.test(key))
    throw errors.validation('after: not a cursor of list_comments (pass the `next` of the previous page)', [
      { field: 'after', message: 'unknown cursor' },
    ]);
  return key;
}

export async function listComments(ctx: OpContext, input: Static<typeof ListCommentsInput>): Promise<Static<typeof ListCommentsOutput>> {
  const { tenant } = ctx;
  const target = tenant.index.get(input.id);
  if (!target) throw errors.notFound(`node ${input.id}`);
  const limit = Math.min(input.limit ?? DEFAULT_PAGE, MAX_PAGE);
  const after = input.after ? decodeCursor(input.after) : null;
  const records = tenant.index
    .inboundOf(target.id, [DISCUSSES])
    .map((e) => tenant.index.get(e.from))
    .filter((r): r is NodeRecord => r?.type === COMMENT_TYPE);
  const keyed = records
    .map((r) => ({ record: r, key: sortKey({ created: str(r.frontmatter.created) ?? '', id: r.id }) }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const rest = after === null ? keyed : keyed.filter((k) => k.key > after);
  const page = rest.slice(0, limit);
  const people = directory(tenant);
  const comments = page.map((k) => commentView(tenant, k.record, people));
  const last = page[page.length - 1];
  return {
    node: target.id,
    comments,
    count: comments.length,
    total: keyed.length,
    next: rest.length > limit && last ? Buffer.from(last.key, 'utf8').toString('base64url') : null,
  };
}

/** Only the comment's author (their own credentials and agents) edits it. */
function checkAuthor(ctx: OpContext, record: NodeRecord, what: string, adminToo: boolean): void {
  const author = str(record.frontmatter.author);
  if (author === ctx.actor.personId) return;
  if (adminToo && ctx.actor.isAdmin) return;
  throw errors.forbidden(`only the author of ${record.id}${adminToo ? ' or an admin' : ''} may ${what} it`, {
    id: record.id,
    author,
  });
}

export async function editComment(ctx: OpContext, input: Static<typeof EditCommentInput>): Promise<Static<typeof AddCommentOutput>> {
  const body = checkBody(input.body);
  const actor = writeActorOf(ctx.actor);
  const { tenant } = ctx;
  return tenant.write(actor, { op: 'edit_comment', via: ctx.via }, async (draft) => {
    const record = commentRecord(tenant, input.id);
    checkAuthor(ctx, record, 'edit', false);
    if (input.revision !== undefined && input.revision !== record.revision)
      throw errors.revisionConflict(record.id, record.revision, input.revision);
    const { mentions, unresolved } = resolveMentions(tenant, body);
    const node = discussedBy(record);
    // other edges someone added stay; the mentions are the new text's
    const others = record.edges.filter((e) => e.type !== 'mentions' && e.type !== DISCUSSES);
    const frontmatter: Record<string, unknown> = { ...record.frontmatter, summary: excerpt(body) };
    frontmatter.edges = [...(node ? edgesFor(node, mentions) : mentions.map((m) => ({ type: 'mentions', to: m.person }))), ...others];
    draft.put({ frontmatter, body });
    const committed = await draft.commit({ deferDurability: true });
    const stored = tenant.index.get(record.id) ?? record;
    const warnings = [...draft.warnings];
    if (committed.get(record.id)?.status === 'unchanged') warnings.push('no change');
    return { ...commentView(tenant, stored), unresolved, warnings };
  });
}

export async function deleteComment(ctx: OpContext, input: Static<typeof CommentIdInput>): Promise<Static<typeof DeleteCommentOutput>> {
  const actor = writeActorOf(ctx.actor);
  const { tenant } = ctx;
  return tenant.write(actor, { op: 'delete_comment', via: ctx.via }, async (draft) => {
    const record = commentRecord(tenant, input.id);
    checkAuthor(ctx, record, 'delete', true);
    draft.delete(record.id);
    await draft.commit({ deferDurability: true });
    return { status: 'deleted' as const, id: record.id, node: discussedBy(record) };
  });
}

/**
 * Comments change only through these operations: a core write (put_node update, patch_node,
 * add_edge, set_status, ...) to an existing comment is refused, so a comment's `author` stamp
 * stays its author's and nobody rewrites another person's words.
 */
export function commentWriteCheck(_ctx: OpContext, node: NodeRecord): null {
  if (node.type !== COMMENT_TYPE) return null;
  throw errors.forbidden(`${node.id} is a comment: change it with edit_comment or delete_comment (its author; admins may delete)`, {
    id: node.id,
  });
}
