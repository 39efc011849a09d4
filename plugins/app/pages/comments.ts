/**
 * The discussion on a node page (plugins/comments): the comments oldest first, each with its
 * author's name, time and markdown (sanitized, `@mentions` linked to the person), an edit form
 * (folded, with the revision read) and a delete button on your own (an admin's: delete on any),
 * and the form to post one. Posting, editing and deleting are the `add_comment`, `edit_comment`
 * and `delete_comment` operations REST and MCP use; a refused post or edit comes back inline on
 * the node page with the text kept in its form (an edit someone else's change overtook: 409,
 * the form unfolded with the comment's newer revision, so saving again is a decision).
 */
import { isSvcError } from '../../../kernel/errors.js';
import { csrfField, html, raw, type Html } from '../html.js';
import type { AppRequest, AppResult, Signed } from '../host.js';
import { markdownWithMentionsToSafeHtml, type MentionTarget } from '../markdown.js';
import { mentionPattern } from '../operations-bridge.js';
import { nodePage } from './node.js';
import { nodeLink } from './queue.js';

/** comments a node page shows (list_comments' largest page); the rest are counted */
const SHOWN = 200;

function when(iso: string): Html {
  return html`<time datetime="${iso}">${iso.replace('T', ' ').slice(0, 16)} UTC</time>`;
}

/** An edit the node page shows again, unfolded with the person's text (it was refused). */
export interface CommentEdit {
  id: string;
  body: string;
}

/** Your own comment's edit form: folded under "Edit", its text and the revision you read. */
function editForm(c: { id: string; body: string; revision: string }, csrf: Html, open: CommentEdit | undefined): Html {
  const field = `edit-${c.id}`;
  return html`<details class="comment-edit"${open ? html` open` : ''}><summary>Edit</summary>
<form method="post" action="/app/comments/${encodeURIComponent(c.id)}/edit" class="stack">${csrf}<input type="hidden" name="revision" value="${c.revision}">
<label for="${field}">Edit your comment (markdown; @name mentions a person)</label>
<textarea id="${field}" name="body" rows="4" required>${open ? open.body : c.body}</textarea>
<button type="submit">Save comment</button></form></details>`;
}

/** The comments section of node `id`, or nothing when the tenant has no comments plugin. */
export async function commentsSection(s: Signed, id: string, draft = '', edit?: CommentEdit): Promise<Html | ''> {
  const b = s.bridge;
  if (!b.has('comments')) return '';
  const page = await b.listComments(id, SHOWN);
  const csrf = csrfField(s.viewer.csrf);
  const mayDelete = (author: string | null) => author === s.viewer.personId || b.ctx.actor.isAdmin;
  const items = page.comments.map((c) => {
    const targets = new Map<string, MentionTarget>();
    for (const m of c.mentions)
      for (const h of m.handles) targets.set(h.toLowerCase(), { href: `/app/nodes/${encodeURIComponent(m.person)}`, name: m.name });
    const author = c.author ? nodeLink(c.author, c.author_name ?? c.author) : html`<span>unknown</span>`;
    return html`<li class="comment" id="${c.id}"><p class="meta">${author}${c.agent ? html` <span class="muted small">(agent ${c.agent})</span>` : ''} · ${when(c.created)}${c.edited ? html` · <span class="muted small">edited ${when(c.updated)}</span>` : ''}</p>
<div class="markdown">${raw(markdownWithMentionsToSafeHtml(c.body, mentionPattern(), targets))}</div>
${c.author === s.viewer.personId ? editForm(c, csrf, edit?.id === c.id ? edit : undefined) : ''}
${mayDelete(c.author) ? html`<form method="post" action="/app/comments/${encodeURIComponent(c.id)}/delete">${csrf}<button type="submit" class="link" aria-label="Delete this comment by ${c.author_name ?? 'unknown'}">Delete</button></form>` : ''}</li>`;
  });
  return html`<section aria-labelledby="comments-h" id="comments"><h2 id="comments-h">Comments (${page.total})</h2>
<div data-live="comments">${items.length ? html`<ul class="comments plain">${items}</ul>` : html`<p class="muted">No comments yet.</p>`}
${page.total > page.count ? html`<p class="muted">${page.total - page.count} later comment(s) not shown.</p>` : ''}</div>
<form method="post" action="/app/nodes/${encodeURIComponent(id)}/comments" class="stack">${csrf}
<label for="comment-body">Add a comment (markdown; @name mentions a person)</label>
<textarea id="comment-body" name="body" rows="4" required>${draft}</textarea>
<button type="submit">Post comment</button></form></section>`;
}

/** A comment's own page is its place in the discussion of the node it discusses (search results and history link to it). */
export function commentRedirect(s: Signed, id: string): AppResult | null {
  const record = s.bridge.tenant.index.get(id);
  const node = record?.type === 'comment' ? record.edges.find((e) => e.type === 'discusses')?.to : undefined;
  return node && s.bridge.tenant.index.has(node) ? { redirect: `/app/nodes/${encodeURIComponent(node)}#${id}` } : null;
}

/** POST /app/nodes/:id/comments: add_comment; a refusal re-renders the node page with the error and the text kept. */
export async function postComment(req: AppRequest, s: Signed): Promise<AppResult> {
  const id = req.params.id!;
  const body = (req.form.get('body') ?? '').replace(/\r\n/g, '\n');
  try {
    const added = await s.bridge.addComment(id, body);
    const told = added.mentions.filter((m) => m.person !== s.viewer.personId).map((m) => m.name);
    s.setFlash('ok', `Comment posted${told.length ? `; mentioned ${told.join(', ')}` : ''}`);
    return { redirect: `/app/nodes/${encodeURIComponent(id)}#${added.id}` };
  } catch (err) {
    if (!isSvcError(err) || err.status >= 500 || err.status === 404) throw err;
    return nodePage(s, id, { error: err, commentDraft: body });
  }
}

/** POST /app/comments/:id/edit: edit_comment with the revision the form was drawn with; a refusal re-renders the node page with the edit kept. */
export async function changeComment(req: AppRequest, s: Signed): Promise<AppResult> {
  const id = req.params.id!;
  const node = s.bridge.tenant.index.get(id)?.edges.find((e) => e.type === 'discusses')?.to ?? null;
  const body = (req.form.get('body') ?? '').replace(/\r\n/g, '\n');
  const revision = req.form.get('revision') || undefined;
  try {
    const edited = await s.bridge.editComment(id, body, revision);
    const unchanged = (edited.warnings ?? []).includes('no change');
    s.setFlash('ok', unchanged ? 'Comment unchanged' : 'Comment saved');
    return { redirect: `/app/nodes/${encodeURIComponent(edited.node)}#${id}` };
  } catch (err) {
    if (!isSvcError(err) || err.status >= 500 || err.status === 404 || !node || !s.bridge.tenant.index.has(node)) throw err;
    return nodePage(s, node, { error: err, commentEdit: { id, body } });
  }
}

/** POST /app/comments/:id/delete: delete_comment, back to the node it discussed. */
export async function removeComment(req: AppRequest, s: Signed): Promise<AppResult> {
  const id = req.params.id!;
  const node = s.bridge.tenant.index.get(id)?.edges.find((e) => e.type === 'discusses')?.to ?? null;
  try {
    await s.bridge.deleteComment(id);
    s.setFlash('ok', 'Comment deleted');
  } catch (err) {
    if (!isSvcError(err) || err.status >= 500 || !node) throw err;
    s.setFlash('error', `Could not delete the comment: ${err.message}`);
  }
  return { redirect: node ? `/app/nodes/${encodeURIComponent(node)}#comments` : '/app/queue' };
}
