/**
 * The console's GitHub page (plugins/github operations through operations-bridge.ts): the
 * linked repositories with their state, the webhook URL to paste into GitHub, how many issues
 * are synced and the inbound queue (queued, failed, last error); enable and disable a link.
 * Linking itself (credentials, mappings) is `link_github_repo` over REST or MCP
 * (docs/github.md): credentials are never shown here.
 */
import { csrfField, html, type Html } from '../../html.js';
import type { AppRequest, AppResult, Signed } from '../../host.js';
import { act, consolePage, requireConsoleAdmin, when } from './console.js';

type Link = Awaited<ReturnType<Signed['bridge']['listGithubLinks']>>['links'][number];

const stateBadge = (l: Link) =>
  html`<span class="badge${l.state === 'active' ? ' status ok' : ''}">${l.state}</span>${l.disabled_reason ? html` <span class="small muted">${l.disabled_reason}</span>` : ''}`;

function switchForm(s: Signed, l: Link): Html {
  const next = l.enabled ? 'false' : 'true';
  const label = l.enabled ? 'Disable' : 'Enable';
  return html`<form method="post" action="/app/admin/github/${encodeURIComponent(l.id)}/enabled" class="inline">${csrfField(s.viewer.csrf)}<input type="hidden" name="enabled" value="${next}"><button type="submit" aria-label="${label} the link of ${l.repo}">${label}</button></form>`;
}

function inbound(l: Link): Html {
  const { queued, failed, last_error } = l.inbound;
  return html`${queued} queued${failed ? html`, <span class="badge warn">${failed} failed</span>` : ''}${last_error ? html`<br><span class="small muted">${last_error}</span>` : ''}`;
}

/** GET /app/admin/github */
export async function showGithubLinks(_req: AppRequest, s: Signed): Promise<AppResult> {
  requireConsoleAdmin(s);
  const { links } = await s.bridge.listGithubLinks();
  const rows = links.map(
    (
      l,
    ) => html`<tr id="${l.id}"><th scope="row">${l.repo}<br><span class="small muted">${l.auth === 'app' ? `GitHub App, installation ${l.installation_id ?? ''}` : 'token'}</span></th>
<td>${stateBadge(l)}</td><td>${l.synced_issues}</td><td>${inbound(l)}</td><td><code>${l.webhook_url}</code></td><td>${when(l.updated)}</td><td class="actions-cell">${switchForm(s, l)}</td></tr>`,
  );
  return consolePage(
    s,
    'github',
    'GitHub',
    html`<p>Repositories linked to this tenant: their issues and this graph stay in step. Link one with <code>link_github_repo</code> (REST or MCP) and paste its webhook URL and secret into the repository's webhook settings; credentials are never shown again.</p>
<div class="table-wrap"><table class="console"><caption class="sr-only">GitHub links of ${s.viewer.org}</caption>
<thead><tr><th scope="col">Repository</th><th scope="col">State</th><th scope="col">Synced issues</th><th scope="col">Inbound</th><th scope="col">Webhook URL</th><th scope="col">Updated</th><th scope="col">Actions</th></tr></thead>
<tbody>${rows.length ? rows : html`<tr><td colspan="7" class="muted">No repositories linked yet.</td></tr>`}</tbody></table></div>`,
  );
}

/** POST /app/admin/github/:id/enabled */
export async function switchGithubLink(req: AppRequest, s: Signed): Promise<AppResult> {
  requireConsoleAdmin(s);
  return act(s, '/app/admin/github', async () => {
    const r = await s.bridge.setGithubLinkEnabled(req.params.id!, req.form.get('enabled') === 'true');
    return `The link of ${r.link.repo} is ${r.link.enabled ? 'enabled' : 'disabled'}`;
  });
}
