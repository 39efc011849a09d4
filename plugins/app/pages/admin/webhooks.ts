/**
 * The console's webhooks pages (plugins/webhooks operations through operations-bridge.ts):
 * the subscriptions with their delivery state; create one (its signing secret on the answer
 * page only, once); enable, disable, ping and delete; each subscription's delivery log.
 */
import { isSvcError } from '../../../../kernel/errors.js';
import { csrfField, html, type Html } from '../../html.js';
import type { AppRequest, AppResult, Signed } from '../../host.js';
import { act, checked, consolePage, requireConsoleAdmin, secretOnce, when } from './console.js';

type Webhook = Awaited<ReturnType<Signed['bridge']['listWebhooks']>>['webhooks'][number];

const stateBadge = (w: Webhook) =>
  html`<span class="badge${w.state === 'active' ? ' status ok' : w.state === 'failing' ? ' warn' : ''}">${w.state}</span>${w.disabled_reason ? html` <span class="small muted">${w.disabled_reason}</span>` : ''}`;

function actions(s: Signed, w: Webhook): Html {
  const csrf = csrfField(s.viewer.csrf);
  const base = `/app/admin/webhooks/${encodeURIComponent(w.id)}`;
  const form = (path: string, label: string, aria: string, extra: Html | '' = '', danger = false) =>
    html`<form method="post" action="${base}/${path}" class="inline">${csrf}${extra}<button type="submit"${danger ? html` class="danger"` : ''} aria-label="${aria}">${label}</button></form>`;
  return html`${w.enabled ? form('enabled', 'Disable', `Disable webhook to ${w.url}`, html`<input type="hidden" name="enabled" value="false">`) : form('enabled', 'Enable', `Enable webhook to ${w.url}`, html`<input type="hidden" name="enabled" value="true">`)}
${form('ping', 'Ping', `Ping webhook to ${w.url}`)} ${form('delete', 'Delete', `Delete webhook to ${w.url}`, '', true)}`;
}

/** The create form, with what was typed kept after a refusal. */
function createForm(
  s: Signed,
  draft: { url?: string; types?: string; project?: string; description?: string; slack?: boolean } = {},
): Html {
  return html`<section aria-labelledby="new-hook-h"><h2 id="new-hook-h">Add a webhook</h2>
<form method="post" action="/app/admin/webhooks" class="filters">${csrfField(s.viewer.csrf)}
<label for="hook-url">URL<input id="hook-url" name="url" type="url" required maxlength="2048" size="40" value="${draft.url ?? ''}"></label>
<label for="hook-types">Event types (comma-separated; empty: all)<input id="hook-types" name="types" placeholder="node.status_changed, lease.*" value="${draft.types ?? ''}"></label>
<label for="hook-project">Project (optional)<input id="hook-project" name="project" placeholder="proj-web" value="${draft.project ?? ''}"></label>
<label for="hook-description">Description<input id="hook-description" name="description" maxlength="500" value="${draft.description ?? ''}"></label>
<label for="hook-slack"><span><input id="hook-slack" type="checkbox" name="slack"${draft.slack ? html` checked` : ''}> Slack message format</span></label>
<button type="submit">Add webhook</button></form></section>`;
}

async function listBody(s: Signed, before: Html | '' = '', draft?: Parameters<typeof createForm>[1]): Promise<Html> {
  const { webhooks } = await s.bridge.listWebhooks();
  const rows = webhooks.map(
    (
      w,
    ) => html`<tr id="${w.id}"><th scope="row"><a href="/app/admin/webhooks/${encodeURIComponent(w.id)}">${w.url}</a>${w.description ? html`<br><span class="small muted">${w.description}</span>` : ''}</th>
<td>${w.types.length ? w.types.join(', ') : 'every type'}${w.project ? html`<br><span class="small muted">project ${w.project}</span>` : ''}</td>
<td>${stateBadge(w)}</td><td>${when(w.last_success)}</td><td class="actions-cell">${actions(s, w)}</td></tr>`,
  );
  return html`${before}<p>Subscriptions that push this tenant's events to other systems, signed per Standard Webhooks. A receiver failing for a day is disabled; enabling it resumes where it stopped.</p>
<div class="table-wrap"><table class="console"><caption class="sr-only">Webhooks of ${s.viewer.org}</caption>
<thead><tr><th scope="col">Receiver</th><th scope="col">Events</th><th scope="col">State</th><th scope="col">Last success</th><th scope="col">Actions</th></tr></thead>
<tbody>${rows.length ? rows : html`<tr><td colspan="5" class="muted">No webhooks yet.</td></tr>`}</tbody></table></div>
${createForm(s, draft)}`;
}

/** GET /app/admin/webhooks */
export async function showWebhooks(_req: AppRequest, s: Signed): Promise<AppResult> {
  requireConsoleAdmin(s);
  return consolePage(s, 'webhooks', 'Webhooks', await listBody(s));
}

/** POST /app/admin/webhooks: create_webhook; the signing secret is on this answer only. */
export async function addWebhook(req: AppRequest, s: Signed): Promise<AppResult> {
  requireConsoleAdmin(s);
  const draft = {
    url: (req.form.get('url') ?? '').trim(),
    types: req.form.get('types') ?? '',
    project: (req.form.get('project') ?? '').trim(),
    description: (req.form.get('description') ?? '').trim(),
    slack: checked(req.form, 'slack'),
  };
  const types = draft.types
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  try {
    const created = await s.bridge.createWebhook({
      url: draft.url,
      ...(types.length ? { types } : {}),
      ...(draft.project ? { project: draft.project } : {}),
      ...(draft.description ? { description: draft.description } : {}),
      ...(draft.slack ? { format: 'slack' as const } : {}),
    });
    const shown = html`<p class="flash ok" role="status">Webhook to ${created.webhook.url} added.</p>${secretOnce(
      'Signing secret',
      created.secret,
      'The receiver verifies each delivery with it (docs/events.md "Webhooks").',
    )}`;
    return consolePage(s, 'webhooks', 'Webhooks', await listBody(s, shown));
  } catch (err) {
    if (!isSvcError(err) || err.status >= 500) throw err;
    const problem = html`<p class="flash error" role="alert">Could not add the webhook: ${err.message}</p>`;
    return consolePage(s, 'webhooks', 'Webhooks', await listBody(s, problem, draft), err.status);
  }
}

/** POST /app/admin/webhooks/:id/enabled | ping | delete */
export function webhookAction(kind: 'enabled' | 'ping' | 'delete') {
  return async (req: AppRequest, s: Signed): Promise<AppResult> => {
    requireConsoleAdmin(s);
    const id = req.params.id!;
    const back =
      req.form.get('back') === 'log' && kind !== 'delete' ? `/app/admin/webhooks/${encodeURIComponent(id)}` : '/app/admin/webhooks';
    return act(s, back, async () => {
      if (kind === 'enabled') {
        const enabled = req.form.get('enabled') === 'true';
        const r = await s.bridge.setWebhookEnabled(id, enabled);
        return `Webhook to ${r.webhook.url} is ${r.webhook.enabled ? 'enabled' : 'disabled'}`;
      }
      if (kind === 'ping') {
        const { delivery } = await s.bridge.pingWebhook(id);
        return delivery.ok
          ? `Ping delivered: HTTP ${delivery.status} in ${delivery.latency_ms} ms`
          : `Ping failed: ${delivery.error ?? `HTTP ${delivery.status}`} (${delivery.latency_ms} ms)`;
      }
      await s.bridge.deleteWebhook(id);
      return 'Webhook deleted with its delivery log';
    });
  };
}

/** GET /app/admin/webhooks/:id: the subscription and its delivery log, newest first. */
export async function showWebhook(req: AppRequest, s: Signed): Promise<AppResult> {
  requireConsoleAdmin(s);
  const { webhook: w, deliveries } = await s.bridge.listWebhookDeliveries(req.params.id!);
  const rows = deliveries.map(
    (
      d,
    ) => html`<tr><td>${when(d.at)}</td><td>${d.kind}</td><td>${d.type}${d.event ? html` <span class="small muted">#${d.event}</span>` : ''}</td>
<td>${d.attempt}</td><td>${d.ok ? html`<span class="badge status ok">ok</span>` : html`<span class="badge warn">failed</span>`} ${d.status ?? ''}</td>
<td>${d.latency_ms} ms</td><td>${d.error ?? ''}</td></tr>`,
  );
  return consolePage(
    s,
    'webhooks',
    `Webhook to ${w.url}`,
    html`<p>${stateBadge(w)} · events: ${w.types.length ? w.types.join(', ') : 'every type'} · format ${w.format} · last delivered event #${w.last_event}
${w.failing_since ? html` · failing since ${when(w.failing_since)}, next attempt ${when(w.next_attempt)}` : ''}</p>
<p><a href="/app/admin/webhooks">All webhooks</a></p>
<h2>Delivery log</h2>
<div class="table-wrap"><table class="console"><caption class="sr-only">Delivery attempts, newest first</caption>
<thead><tr><th scope="col">When</th><th scope="col">Kind</th><th scope="col">Event</th><th scope="col">Attempt</th><th scope="col">Result</th><th scope="col">Latency</th><th scope="col">Error</th></tr></thead>
<tbody>${rows.length ? rows : html`<tr><td colspan="7" class="muted">No deliveries yet.</td></tr>`}</tbody></table></div>`,
  );
}
