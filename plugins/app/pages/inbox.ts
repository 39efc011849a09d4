/**
 * The inbox: what needs the person's attention, made by events (plugins/inbox): assigned to
 * me, review requested of me, questions routed to me, mentions of me, my claims taken over,
 * expired or about to expire. Unread items stand out; each can be marked read, or all at once
 * (up to the newest event the page showed, so an item that arrived since stays unread). The
 * list updates itself from the event stream (static/live.js).
 */
import { errors } from '../../../kernel/errors.js';
import { csrfField, html, layout, type Html } from '../html.js';
import type { AppRequest, AppResult, Signed } from '../host.js';
import { nodeLink } from './queue.js';

const KIND_TEXT: Record<string, string> = {
  assigned: 'Assigned to you',
  review_requested: 'Review requested',
  question_routed: 'Question for you',
  question_answered: 'Your question was answered',
  mention: 'Mentioned you',
  claim_taken_over: 'Your claim was taken over',
  claim_expired: 'Your claim expired',
  claim_expiring: 'Your claim expires soon',
};

export const INBOX_PAGE_SIZE = 100;

function when(iso: string): Html {
  return html`<time datetime="${iso}">${iso.replace('T', ' ').slice(0, 16)} UTC</time>`;
}

export async function showInbox(req: AppRequest, s: Signed): Promise<AppResult> {
  const unreadOnly = req.query.get('show') === 'unread';
  const inbox = await s.bridge.showInbox({ unread: unreadOnly || undefined, limit: INBOX_PAGE_SIZE });
  const csrf = csrfField(s.viewer.csrf);
  const back = unreadOnly ? '/app/inbox?show=unread' : '/app/inbox';
  const tab = (label: string, href: string, current: boolean) =>
    html`<a href="${href}"${current ? html` aria-current="page"` : ''}>${label}</a>`;
  const body = html`<h1>Inbox</h1>
<div data-live="inbox">
<p class="muted" role="status">${inbox.unread_count === 0 ? 'Nothing unread.' : `${inbox.unread_count} unread`} · ${inbox.total} item(s) ${unreadOnly ? 'unread' : 'in all'}</p>
<div class="row inbox-tools">
<nav class="tabs" aria-label="Which items">${tab('All', '/app/inbox', !unreadOnly)} · ${tab('Unread', '/app/inbox?show=unread', unreadOnly)}</nav>
${
  inbox.unread_count > 0
    ? html`<form method="post" action="/app/inbox/read" class="inline">${csrf}<input type="hidden" name="all" value="1"><input type="hidden" name="through" value="${inbox.through}"><input type="hidden" name="back" value="${back}"><button type="submit">Mark all read</button></form>`
    : ''
}
</div>
${
  inbox.items.length === 0
    ? html`<p>${unreadOnly ? 'You have read everything.' : 'Nothing here yet: questions routed to you, reviews requested of you, mentions and your claims will show up here.'}</p>`
    : html`<ul class="inbox plain">${inbox.items.map(
        (item) => html`<li class="inbox-item${item.read ? '' : ' unread'}" data-item="${item.id}">
<div><span class="badge kind">${item.comment ? 'Mentioned you in a comment' : (KIND_TEXT[item.kind] ?? item.kind)}</span>${item.read ? '' : html` <span class="badge unread-mark">unread</span>`}
${item.comment ? html`<a href="/app/nodes/${encodeURIComponent(item.node)}#${item.comment}">${item.title}</a>` : nodeLink(item.node, item.title)}</div>
<div class="muted small">${item.actor ? html`by ${item.actor.name} · ` : ''}${when(item.time)}${item.project ? ` · ${item.project}` : ''} · <code>${item.node}</code></div>
${
  item.read
    ? ''
    : html`<form method="post" action="/app/inbox/read" class="inline">${csrf}<input type="hidden" name="id" value="${item.id}"><input type="hidden" name="back" value="${back}"><button type="submit" class="link">Mark read<span class="sr-only">: ${item.title}</span></button></form>`
}
</li>`,
      )}</ul>`
}
${inbox.total > inbox.items.length ? html`<p class="muted">${inbox.total - inbox.items.length} older item(s) not shown.</p>` : ''}
</div>`;
  return { html: layout({ title: 'Inbox', viewer: s.viewer, nav: 'inbox', flash: s.flash, live: '' }, body) };
}

/** POST /app/inbox/read: one item (`id`) or all (`all=1`, up to `through`). */
export async function markRead(req: AppRequest, s: Signed): Promise<AppResult> {
  const f = req.form;
  const back = f.get('back') === '/app/inbox?show=unread' ? '/app/inbox?show=unread' : '/app/inbox';
  if (f.get('all') === '1') {
    const through = f.get('through');
    if (through !== null && !/^\d{1,15}$/.test(through)) throw errors.badRequest('through is an event id (a whole number)');
    const r = await s.bridge.markInboxRead({ all: true, through: through === null ? undefined : Number(through) });
    s.setFlash('ok', `Marked ${r.marked} item(s) read.`);
    return { redirect: back };
  }
  const id = f.get('id');
  if (!id) throw errors.badRequest('which item: the form needs an id, or all=1');
  const r = await s.bridge.markInboxRead({ ids: [id] });
  if (r.skipped.length > 0) s.setFlash('error', 'That item is no longer in your inbox.');
  return { redirect: back };
}
