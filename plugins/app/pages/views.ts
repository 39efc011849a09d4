/**
 * Lens views in the app, and the share-link host of docs/spec.md Lenses rule 4:
 * `{app_url}/views/{id}?ticket=` exchanges the ticket once (302) into the HttpOnly
 * `svc_render_ticket` cookie scoped to that view, so the ticket leaves the address bar and
 * the logs. A live signed-in session outranks the ticket cookie.
 */
import { errors } from '../../../kernel/errors.js';
import { html, layout } from '../html.js';
import type { AppHost, AppRequest, AppResult, Signed } from '../host.js';
import { ticketBridge, ticketIsLive, TICKET_COOKIE, type Bridge } from '../operations-bridge.js';
import { SESSION_COOKIE } from '../session.js';
import { nodeLink } from './queue.js';

const LENS_ID = /^[a-z0-9][a-z0-9-]*$/;

export async function showLensCatalog(_req: AppRequest, s: Signed): Promise<AppResult> {
  const { lenses } = await s.bridge.listLenses();
  const body = html`<h1>Views</h1>
${lenses.length === 0 ? html`<p class="muted">No saved views yet: a view is a <code>lens-</code> node.</p>` : ''}
<ul class="cards">${lenses.map(
    (l) => html`<li><h2><a href="/app/views/${encodeURIComponent(l.id)}">${l.title}</a></h2><p class="small">${l.summary}</p>
<p class="muted small"><code>${l.id}</code>${l.param_names.length ? ` · params: ${l.param_names.join(', ')}` : ''}${l.valid ? '' : ' · broken definition'}</p></li>`,
  )}</ul>`;
  return { html: layout({ title: 'Views', viewer: s.viewer, nav: 'views', flash: s.flash }, body) };
}

function paramsOf(query: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of query) if (k.startsWith('param.')) out[k.slice(6)] = v;
  return out;
}

async function renderView(bridge: Bridge, id: string, params: Record<string, string>, s: Signed | null): Promise<AppResult> {
  const tree = await bridge.renderLens(id, params);
  // with a lens id render_lens answers the view tree, never the catalog
  if (!('columns' in tree)) throw new Error(`render_lens answered the catalog for lens ${id}`);
  const cols = (tree.columns ?? []).filter((c) => c !== 'id' && c !== 'title');
  const banner = tree.sharer
    ? html`<p class="banner" role="note">Shared by <strong>${tree.sharer.name}</strong> (read-only view${tree.sharer.label ? `, “${tree.sharer.label}”` : ''}), link valid until ${tree.sharer.expires.slice(0, 10)}.</p>`
    : undefined;
  const link = (itemId: string, title: string) => (s ? nodeLink(itemId, title) : html`${title}`);
  const body = html`${s ? html`<nav class="crumbs" aria-label="Breadcrumb"><a href="/app/views">Views</a> › <code>${id}</code></nav>` : ''}
<h1>${tree.title}</h1>
<p class="muted">${tree.count} of ${tree.total} item(s)${tree.truncated ? ' (truncated)' : ''} · generated ${tree.generated_at.slice(0, 16).replace('T', ' ')} UTC${
    Object.keys(tree.params).length
      ? ` · ${Object.entries(tree.params)
          .map(([k, v]) => `${k}=${v}`)
          .join(', ')}`
      : ''
  }</p>
${tree.groups.map(
  (
    g,
  ) => html`<section aria-label="${g.key || 'All'}">${tree.group_by ? html`<h2>${g.key || '(none)'} <span class="muted small">${g.count}</span></h2>` : ''}
<div class="table-wrap"><table><thead><tr><th scope="col">Item</th>${cols.map((c) => html`<th scope="col">${c}</th>`)}</tr></thead>
<tbody>${g.items.map((item) => html`<tr><td>${link(String(item.id), String(item.title))}<div class="muted small"><code>${item.id}</code></div></td>${cols.map((c) => html`<td>${cellText((item as Record<string, unknown>)[c])}</td>`)}</tr>`)}</tbody></table></div></section>`,
)}`;
  return { html: layout({ title: tree.title, viewer: s?.viewer ?? null, nav: 'views', flash: s?.flash ?? null, banner }, body) };
}

function cellText(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.map(cellText).join(', ');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** GET /app/views/:id and /views/:id: exchange a ticket, or render for the session, else for the ticket cookie. */
export async function showView(req: AppRequest, host: AppHost): Promise<AppResult> {
  const id = req.params.id!;
  if (!LENS_ID.test(id)) throw errors.validation('malformed view id', [{ field: 'id' }]);
  const ticket = req.query.get('ticket');
  if (ticket !== null) {
    const live = await ticketIsLive(host.services, id, ticket);
    if (!live) throw errors.unauthorized();
    const rest = new URLSearchParams(req.query);
    rest.delete('ticket');
    const maxAge = (live.expMs - host.services.clock.now()) / 1000;
    return {
      status: 302,
      redirect: `/app/views/${id}${rest.size ? `?${rest}` : ''}`,
      cookies: [host.cookie(TICKET_COOKIE, ticket, { path: `/app/views/${id}`, maxAge })],
    };
  }
  if (req.path.startsWith('/views/')) return { status: 302, redirect: `/app/views/${id}` };
  const session = await host.sessions.resolve(req.cookie(SESSION_COOKIE));
  const blob = req.cookie(TICKET_COOKIE);
  const shared = blob ? await ticketBridge(host.services, id, blob) : null;
  // The session outranks the ticket in its own tenant; a ticket of another tenant still opens its view.
  if (session && (!shared || shared.tenant.org === session.tenant.org)) {
    const s = host.signedFor(session);
    if (!s.bridge.has('app')) throw errors.notFound('the app (its plugin is not enabled for this tenant)');
    return renderView(s.bridge, id, paramsOf(req.query), s);
  }
  if (!shared) return { redirect: `/app/signin?next=${encodeURIComponent(`/app/views/${id}`)}` };
  return renderView(shared, id, paramsOf(req.query), null);
}
