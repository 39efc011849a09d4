/**
 * HTML building blocks of the app: escaping, the page layout (navigation, flash messages,
 * the sign-out form), and the readable error page. Every page is server-rendered; scripts are
 * files under /app/static only (the Content-Security-Policy forbids inline scripts).
 */
import type { SvcError } from '../../kernel/errors.js';

export const esc = (value: unknown): string =>
  String(value ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** A tagged template whose interpolations are escaped unless they are `Html` (already safe). */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  values.forEach((v, i) => {
    out += render(v) + strings[i + 1]!;
  });
  return new Html(out);
}

function render(v: unknown): string {
  if (v instanceof Html) return v.text;
  if (Array.isArray(v)) return v.map(render).join('');
  if (v === null || v === undefined || v === false) return '';
  return esc(v);
}

export const raw = (text: string): Html => new Html(text);

/** JSON for a `<script type="application/json">` data block: never executed, `<` escaped so it cannot close the element. */
export function jsonBlock(id: string, data: unknown): Html {
  const text = JSON.stringify(data).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
  return raw(`<script type="application/json" id="${esc(id)}">${text}</script>`);
}

export interface Viewer {
  name: string;
  org: string;
  personId: string;
  csrf: string;
  /** unread inbox items (absent: the tenant has no inbox) */
  unread?: number;
  /** the tenant has the event stream (plugins/events): live pages open it */
  live?: boolean;
  /** an admin's own credential: the header links the operator console (pages/admin/) */
  admin?: boolean;
}

export interface LayoutOptions {
  title: string;
  viewer: Viewer | null;
  /** which navigation entry is current */
  nav?: 'new' | 'inbox' | 'queue' | 'board' | 'programs' | 'analytics' | 'views' | 'search' | 'orgs' | 'schema' | 'admin';
  flash?: { kind: 'ok' | 'error'; text: string } | null;
  scripts?: string[];
  banner?: Html;
  /**
   * The page updates itself from the event stream (static/live.js): the stream's filter
   * (`node=<id>`, `assignee=me`, ...) as a query string; its regions carry `data-live`.
   */
  live?: string;
}

const NAV: Array<{ key: NonNullable<LayoutOptions['nav']>; href: string; label: string }> = [
  { key: 'inbox', href: '/app/inbox', label: 'Inbox' },
  { key: 'queue', href: '/app/queue', label: 'My queue' },
  { key: 'board', href: '/app/board', label: 'Board' },
  { key: 'programs', href: '/app/programs', label: 'Programs' },
  { key: 'analytics', href: '/app/analytics', label: 'Analytics' },
  { key: 'views', href: '/app/views', label: 'Views' },
  { key: 'search', href: '/app/search', label: 'Search' },
  { key: 'schema', href: '/app/schema', label: 'Schema' },
  { key: 'new', href: '/app/new', label: 'New' },
  { key: 'admin', href: '/app/admin', label: 'Admin' },
];

export function layout(opts: LayoutOptions, body: Html): string {
  const v = opts.viewer;
  const nav = v
    ? html`<nav aria-label="Main"><ul>${NAV.filter((n) => (n.key !== 'inbox' || v.unread !== undefined) && (n.key !== 'admin' || v.admin === true)).map((n) => html`<li><a href="${n.href}"${n.key === opts.nav ? raw(' aria-current="page"') : ''}>${n.label}${n.key === 'inbox' ? unreadBadge(v.unread ?? 0) : ''}</a></li>`)}</ul></nav>
<div class="who"><a href="/app/orgs" title="Switch tenant">${v.org}</a> · <span>${v.name}</span>
<form method="post" action="/app/signout" class="inline">${csrfField(v.csrf)}<button type="submit" class="link">Sign out</button></form></div>`
    : html``;
  const flash = opts.flash
    ? html`<p class="flash ${opts.flash.kind}" role="${opts.flash.kind === 'error' ? 'alert' : 'status'}">${opts.flash.text}</p>`
    : '';
  const isLive = opts.live !== undefined && v?.live === true;
  const scripts = ['/app/static/app.js', ...(isLive ? ['/app/static/live.js'] : []), ...(opts.scripts ?? [])];
  // the stream's filter travels in a data attribute (no inline script under the CSP); the banner shows when the stream drops
  const live = isLive
    ? html`<div id="live" data-stream="${opts.live}" hidden></div>
<p id="live-banner" class="live-banner" aria-live="polite" hidden>Live updates paused, retrying…</p>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(opts.title)} · workgraph</title>
<link rel="icon" type="image/svg+xml" href="/app/static/favicon.svg">
<link rel="stylesheet" href="/app/static/app.css">
${scripts.map((s) => `<script src="${esc(s)}" defer></script>`).join('\n')}
</head><body>
<a class="skip" href="#main">Skip to content</a>
<header class="top"><a class="brand" href="/app/queue">workgraph</a>${nav}</header>
${opts.banner ?? ''}${live}
<main id="main" tabindex="-1">
${flash}
${body}
</main>
</body></html>
`;
}

/** The unread count beside "Inbox": a number, and the word for screen readers (live.js updates the number). */
export function unreadBadge(unread: number): Html {
  return html` <span id="inbox-count" class="count${unread === 0 ? ' zero' : ''}">${unread}</span><span class="sr-only"> unread</span>`;
}

export const csrfField = (token: string): Html => html`<input type="hidden" name="csrf" value="${token}">`;

const ERROR_TEXT: Record<number, { title: string; hint: string }> = {
  400: { title: 'This request could not be read', hint: 'Something in the address or the form was not understood.' },
  401: { title: 'Please sign in', hint: 'Your session ended or this link needs a signed-in person.' },
  403: { title: 'Not allowed', hint: 'Your identity may not do this.' },
  404: { title: 'Not found', hint: 'There is nothing here: the node or view may have been removed, or the address is wrong.' },
  409: { title: 'Someone else got there first', hint: 'The node changed or is held by someone else.' },
  413: { title: 'Too large', hint: 'What you sent is larger than the server accepts.' },
  422: { title: 'That did not pass validation', hint: 'Check the values and try again.' },
  502: { title: 'A service behind this one did not answer', hint: 'Try again in a moment.' },
  503: { title: 'Temporarily unavailable', hint: 'Try again in a moment.' },
};

/** The readable page for an error: what happened, the server's message, and the docs/spec.md code for support. */
export function errorPage(err: SvcError, viewer: Viewer | null): string {
  const text =
    ERROR_TEXT[err.status] ??
    (err.status >= 500
      ? { title: 'Something went wrong', hint: 'The server could not finish this request. It was logged.' }
      : { title: 'This request could not be served', hint: '' });
  const detail = err.status >= 500 ? '' : err.message;
  return layout(
    { title: `${text.title} (${err.status})`, viewer },
    html`<h1>${text.title}</h1>
<p>${text.hint}</p>
${detail ? html`<p class="detail">${detail}</p>` : ''}
<p class="muted">Status ${err.status}, code <code>${err.code}</code>.</p>
<p><a href="/app/queue">Back to my queue</a></p>`,
  );
}

/** The style class of a unified diff's line (pages showing a diff: a change, a schema proposal). */
export function diffLineClass(line: string): 'file' | 'add' | 'del' | 'hunk' | 'ctx' {
  if (line.startsWith('+++') || line.startsWith('---')) return 'file';
  if (line.startsWith('+')) return 'add';
  if (line.startsWith('-')) return 'del';
  return line.startsWith('@@') ? 'hunk' : 'ctx';
}
