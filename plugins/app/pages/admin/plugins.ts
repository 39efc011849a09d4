/**
 * The console's plugins page: every plugin of the server for this tenant with its description,
 * state and dependencies, and a switch each (set_tenant_plugin, applied at once). The rules are
 * the operation's (plugins/core/tenant-plugins.ts): a plugin an enabled one needs is refused
 * naming it; enabling brings the missing dependencies along (the form says which); switching
 * the web app off needs its confirmation box.
 */
import { isSvcError } from '../../../../kernel/errors.js';
import { csrfField, html, layout } from '../../html.js';
import type { AppRequest, AppResult, Signed } from '../../host.js';
import { act, checked, consolePage, requireConsoleAdmin } from './console.js';

type PluginRow = Awaited<ReturnType<Signed['bridge']['listTenantPlugins']>>['plugins'][number];

const list = (names: string[]) => (names.length ? names.join(', ') : html`<span class="muted">none</span>`);

/** The plugins `p` needs that are off now, which enabling it switches on too (dependencies first). */
function missing(p: PluginRow, byName: Map<string, PluginRow>, seen = new Set<string>()): string[] {
  const out: string[] = [];
  for (const dep of p.depends_on) {
    const d = byName.get(dep);
    if (!d || d.enabled || seen.has(dep)) continue;
    seen.add(dep);
    out.push(...missing(d, byName, seen), dep);
  }
  return out;
}

function stateOf(p: PluginRow) {
  if (p.always_on) return html`<span class="badge status">always on</span>`;
  if (!p.enabled) return html`<span class="badge">off</span>`;
  if (!p.usable) return html`<span class="badge status">on, not usable</span> <span class="small muted">a dependency is off</span>`;
  return html`<span class="badge status ok">on</span>`;
}

function switchForm(s: Signed, p: PluginRow, byName: Map<string, PluginRow>) {
  if (p.always_on) return html`<span class="muted small">cannot be switched</span>`;
  const action = `/app/admin/plugins/${encodeURIComponent(p.name)}`;
  const csrf = csrfField(s.viewer.csrf);
  if (!p.enabled) {
    const along = missing(p, byName);
    return html`<form method="post" action="${action}" class="inline">${csrf}<input type="hidden" name="enabled" value="true">
<button type="submit" aria-label="Enable ${p.name}">Enable</button>${along.length ? html` <span class="small muted">also enables ${along.join(', ')}</span>` : ''}</form>`;
  }
  const confirm = p.confirm_to_disable
    ? html`<label class="small"><input type="checkbox" name="confirm" required> this ends the web app for everyone of ${s.viewer.org}</label>`
    : '';
  return html`<form method="post" action="${action}" class="inline">${csrf}<input type="hidden" name="enabled" value="false">${confirm}
<button type="submit" class="danger" aria-label="Disable ${p.name}">Disable</button>${p.required_by.length ? html` <span class="small muted">needed by ${p.required_by.join(', ')}</span>` : ''}</form>`;
}

/** GET /app/admin/plugins */
export async function showPlugins(_req: AppRequest, s: Signed): Promise<AppResult> {
  requireConsoleAdmin(s);
  const { plugins } = await s.bridge.listTenantPlugins();
  const byName = new Map(plugins.map((p) => [p.name, p]));
  const rows = plugins.map(
    (
      p,
    ) => html`<tr id="plugin-${p.name}"><th scope="row">${p.name}${p.version ? html` <span class="small muted">${p.version}</span>` : ''}</th>
<td>${p.description ?? html`<span class="muted">no description</span>`}</td><td>${stateOf(p)}</td>
<td>${list(p.depends_on)}</td><td>${list(p.optional_depends_on)}</td><td>${list(p.required_by)}</td><td>${switchForm(s, p, byName)}</td></tr>`,
  );
  return consolePage(
    s,
    'plugins',
    'Plugins',
    html`<p>What this tenant runs. A change applies at once: a disabled plugin's pages and API routes answer "not found" and its MCP tools leave
the tenant's tool list. The operator CLI (<code>workgraph tenant plugins</code>) changes the same list.</p>
<div class="table-wrap"><table class="console"><caption class="sr-only">Plugins of ${s.viewer.org}</caption>
<thead><tr><th scope="col">Plugin</th><th scope="col">What it does</th><th scope="col">State</th><th scope="col">Needs</th><th scope="col">Uses if on</th><th scope="col">Needed by</th><th scope="col">Switch</th></tr></thead>
<tbody>${rows}</tbody></table></div>`,
  );
}

/** POST /app/admin/plugins/:name {enabled, confirm?} */
export async function switchPlugin(req: AppRequest, s: Signed): Promise<AppResult> {
  requireConsoleAdmin(s);
  const name = req.params.name!;
  const enabled = req.form.get('enabled') === 'true';
  const confirm = checked(req.form, 'confirm');
  if (!enabled && name === 'app') {
    // the console itself goes with it: the answer is this page, the last one the app serves to the tenant
    try {
      await s.bridge.setTenantPlugin(name, false, confirm);
    } catch (err) {
      if (!isSvcError(err) || err.status >= 500) throw err;
      s.setFlash('error', err.message);
      return { redirect: '/app/admin/plugins' };
    }
    return {
      html: layout(
        { title: 'The web app is off', viewer: null },
        html`<h1>The web app is off for ${s.viewer.org}</h1>
<p>Every page of the app now answers "not found" for this tenant. An admin switches it back on with
<code>POST /v1/tenant/plugins/app {"enabled": true}</code>, the MCP tool <code>set_tenant_plugin</code>, or
<code>workgraph tenant plugins ${s.viewer.org} --enable app</code>.</p>`,
      ),
    };
  }
  return act(s, '/app/admin/plugins', async () => {
    const done = await s.bridge.setTenantPlugin(name, enabled, confirm);
    if (done.changed.length === 0) return `${name} was already ${enabled ? 'on' : 'off'}`;
    if (!enabled) return `${name} is off for this tenant`;
    const along = done.changed.filter((n) => n !== name);
    return `${name} is on for this tenant${along.length ? ` (with ${along.join(', ')}, which it needs)` : ''}`;
  });
}
