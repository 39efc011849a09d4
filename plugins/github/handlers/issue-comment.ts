/**
 * `issue_comment` deliveries: a comment on a synced issue becomes a comment on its node
 * (plugins/comments, through its api.ts), by the person the commenter's login maps to (else the
 * link's bot person); an edit or a deletion follows, as that comment's author. The pairing is
 * kept in the issue's sync record (`comments`: GitHub comment id -> comment node id), so a
 * comment the outbound side posted (which records its pairing) is not brought back, and a
 * redelivered `created` adds nothing. An issue with no node yet gets one first (issues.ts).
 *
 * Not synced: comments on pull requests (an `issue_comment` whose issue is a pull request), and
 * everything when the tenant has no comments plugin. A GitHub comment longer than a node comment
 * (8 KB) is kept whole, in several node comments (conflict.ts `pieces`), the first paired.
 */
import { errors } from '../../../kernel/errors.js';
import { invoke } from '../../../kernel/operation.js';
import { LIMITS } from '../../../kernel/registry.js';
import { addComment, deleteComment, editComment } from '../../comments/api.js';
import { commentsUsable, pairLocal, pieces } from '../conflict.js';
import { syncOfIssue } from '../store.js';
import { normalizeText, readIssue } from '../sync.js';
import type { GithubHandler } from './index.js';
import { stripMarkers } from '../marker.js';
import { createNodeOf, loginOf, ownMarkerOf } from './issues.js';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The node comment text of a GitHub comment: who wrote it when they map to nobody, and where. */
function bodyOf(text: string, login: string | null, mapped: boolean, url: string): string {
  const body = normalizeText(stripMarkers(text) ?? '') || '(empty)';
  return mapped || !login ? body : `${body}\n\n\u2014 @${login} on GitHub (${url})`;
}

export const issueCommentHandler: GithubHandler = async (ctx, payload) => {
  if (!commentsUsable(ctx)) return;
  const p = isRecord(payload) ? payload : {};
  const action = typeof p.action === 'string' ? p.action : '';
  const issue = readIssue(p.issue);
  const comment = isRecord(p.comment) ? p.comment : null;
  if (!issue || !comment || typeof comment.id !== 'number')
    throw errors.badRequest('an issue_comment delivery without an issue or a comment');
  // a pull request's conversation is not an issue's
  if (isRecord(p.issue) && p.issue.pull_request !== undefined) return;
  const key = String(comment.id);
  const author = loginOf(comment.user);
  const mapped = ctx.map.personOf(author) !== null;
  const url = typeof comment.html_url === 'string' ? comment.html_url : issue.html_url;
  const text = typeof comment.body === 'string' ? comment.body : '';
  let record = syncOfIssue(ctx.stores, ctx.link.id, issue.number);
  if (record?.ended) return;
  if (action === 'created') {
    if (record?.comments?.[key]) return;
    // a comment the outbound side posted, coming back with its marker: paired with its node comment, never added again
    const own = ownMarkerOf(ctx.tenant, text);
    if (record && own) {
      const now = ctx.stores.sync.get(record.node) ?? record;
      await ctx.stores.sync.set(record.node, { ...now, comments: { ...(now.comments ?? {}), [key]: own.id } });
      return;
    }
    if (!record) record = await createNodeOf(ctx, issue, loginOf(p.sender));
    if (!ctx.tenant.index.get(record.node)) return;
    const writer = ctx.as(author);
    const parts = pieces(bodyOf(text, author, mapped, url), LIMITS.bodyBytes - 40);
    let first: string | null = null;
    for (const [i, part] of parts.entries()) {
      const body = parts.length > 1 ? `(part ${i + 1} of ${parts.length})\n\n${part}` : part;
      const answer: unknown = await invoke(addComment, writer, { id: record.node, body });
      if (first === null && isRecord(answer) && typeof answer.id === 'string') first = answer.id;
      // the later parts are this side's: paired too, so the outbound side does not send them back
      else if (isRecord(answer) && typeof answer.id === 'string') await pairLocal(ctx, record.node, answer.id);
    }
    const now = ctx.stores.sync.get(record.node) ?? record;
    if (first) await ctx.stores.sync.set(record.node, { ...now, comments: { ...(now.comments ?? {}), [key]: first } });
    return;
  }
  const paired = record?.comments?.[key];
  if (!record || !paired) return;
  const node = ctx.tenant.index.get(paired);
  const owner = node && typeof node.frontmatter.author === 'string' ? node.frontmatter.author : null;
  if (action === 'edited') {
    if (!node || !owner) return;
    const body = bodyOf(text, author, mapped, url);
    if (normalizeText(node.body) === body) return;
    // an edit longer than a comment is cut here (the whole text is on GitHub, linked)
    const fitted =
      Buffer.byteLength(body) <= LIMITS.bodyBytes
        ? body
        : `${pieces(body, LIMITS.bodyBytes - 200)[0]}\n\n[... continued on GitHub: ${url}]`;
    await invoke(editComment, ctx.asPerson(owner), { id: paired, body: fitted });
    return;
  }
  if (action === 'deleted') {
    if (node && owner) await invoke(deleteComment, ctx.asPerson(owner), { id: paired });
    const now = ctx.stores.sync.get(record.node) ?? record;
    const comments = { ...(now.comments ?? {}) };
    delete comments[key];
    await ctx.stores.sync.set(record.node, { ...now, comments });
  }
};
