/**
 * The console's agents page and the identity audit page (identity operations through
 * operations-bridge.ts). Agents: every agent of the tenant with its owner, its published
 * capabilities and when its host was last seen (read_capabilities), and its standing tokens
 * from the team's tokens, each revocable. The audit: every change to an identity fact in the
 * history, flagged when no identity operation made it, and the tokens at risk (audit_identity).
 */
import { isSvcError } from '../../../../kernel/errors.js';
import { csrfField, html, type Html } from '../../html.js';
import type { AppRequest, AppResult, Signed } from '../../host.js';
import { nodeLink } from '../queue.js';
import { consolePage, requireConsoleAdmin, when } from './console.js';

type Capabilities = Awaited<ReturnType<Signed['bridge']['readCapabilities']>>;

/** An agent's published record, or null when it never published one (read_capabilities' 404). */
async function capabilitiesOf(s: Signed, id: string): Promise<Capabilities | null> {
  try {
    return await s.bridge.readCapabilities(id);
  } catch (err) {
    if (isSvcError(err) && err.status === 404) return null;
    throw err;
  }
}

function capabilityList(c: Capabilities | null): Html {
  if (!c) return html`<span class="muted">never published</span>`;
  const m = c.capabilities;
  const part = (label: string, values: string[]) =>
    values.length ? html`<div><span class="small muted">${label}:</span> ${values.join(', ')}</div>` : '';
  const parts = [
    part('harnesses', m.harnesses),
    part('MCP servers', m.reachable_mcp),
    part('skills', m.skills),
    part('plugins', m.plugins),
    part('denied', m.deny),
  ].filter((p) => p !== '');
  return parts.length ? html`${parts}` : html`<span class="muted">nothing declared</span>`;
}

/** GET /app/admin/agents */
export async function showAgents(_req: AppRequest, s: Signed): Promise<AppResult> {
  requireConsoleAdmin(s);
  const [{ agents }, { tokens }] = await Promise.all([s.bridge.listAllAgents(), s.bridge.listTeamTokens()]);
  const caps = await Promise.all(agents.map((a) => capabilitiesOf(s, a.id)));
  const csrf = csrfField(s.viewer.csrf);
  const rows = agents.map((a, i) => {
    const own = tokens.filter((t) => t.agent === a.id);
    const c = caps[i] ?? null;
    const tokenList = own.length
      ? html`<ul class="plain">${own.map(
          (t) => html`<li><code>${t.hash_prefix}</code> ${t.label ?? ''} <span class="small muted">used ${when(t.last_used)}</span>
<form method="post" action="/app/admin/tokens/${encodeURIComponent(t.hash_prefix)}/revoke" class="inline">${csrf}<input type="hidden" name="back" value="agents"><button type="submit" class="danger" aria-label="Revoke token ${t.hash_prefix} of ${a.label}">Revoke</button></form></li>`,
        )}</ul>`
      : html`<span class="muted">no standing token</span>`;
    const owner = a.owner
      ? nodeLink(a.owner, String(s.bridge.tenant.index.get(a.owner)?.frontmatter.name ?? a.owner))
      : html`<span class="muted">none</span>`;
    return html`<tr id="${a.id}"><th scope="row">${nodeLink(a.id, a.label)}${a.status !== 'active' ? html` <span class="badge">${a.status}</span>` : ''}</th>
<td>${owner}</td><td>${capabilityList(c)}</td><td>${when(c?.last_seen)}</td><td>${tokenList}</td></tr>`;
  });
  return consolePage(
    s,
    'agents',
    'Agents',
    html`<p>Every agent of the tenant. Capabilities and "last seen" are what the agent's host published (its heartbeat); session tokens
expire on their own within 7 days, standing tokens are listed here with their revoke.</p>
<div class="table-wrap"><table class="console"><caption class="sr-only">Agents of ${s.viewer.org}</caption>
<thead><tr><th scope="col">Agent</th><th scope="col">Owner</th><th scope="col">Capabilities</th><th scope="col">Last seen</th><th scope="col">Tokens</th></tr></thead>
<tbody>${rows.length ? rows : html`<tr><td colspan="5" class="muted">No agents yet.</td></tr>`}</tbody></table></div>`,
  );
}

/** GET /app/admin/audit?flagged=1 */
export async function showAudit(req: AppRequest, s: Signed): Promise<AppResult> {
  requireConsoleAdmin(s);
  const flagged = req.query.get('flagged') === '1';
  const audit = await s.bridge.auditIdentity(flagged);
  const rows = audit.entries.map(
    (
      e,
    ) => html`<tr${e.flagged ? html` class="flagged"` : ''}><td>${when(e.date)}</td><td>${e.author.person ? nodeLink(e.author.person, e.author.name) : e.author.name}${e.agent ? html`<br><span class="small muted">agent ${e.agent}</span>` : ''}</td>
<td><code>${e.op}</code>${e.via ? html` <span class="small muted">via ${e.via}</span>` : ''}</td><td>${e.changes.length ? html`<ul class="plain">${e.changes.map((c) => html`<li>${c}</li>`)}</ul>` : ''}</td>
<td>${e.flagged ? html`<span class="badge warn">flagged</span> <span class="small">${e.reason ?? ''}</span>` : html`<span class="muted">identity operation</span>`}</td></tr>`,
  );
  const risk = audit.tokens_at_risk.length
    ? html`<section aria-labelledby="risk-h"><h2 id="risk-h">Tokens at risk (${audit.tokens_at_risk.length})</h2>
<p>Tokens minted for an agent after a flagged change of its owner. Revoke them on the <a href="/app/admin/tokens">tokens page</a>.</p>
<ul class="plain">${audit.tokens_at_risk.map((t) => html`<li><code>${t.hash_prefix}</code> ${t.kind} for ${t.agent} (${t.person}), minted ${when(t.created)}${t.revoked_at ? html` · revoked ${when(t.revoked_at)}` : ''}</li>`)}</ul></section>`
    : '';
  return consolePage(
    s,
    'audit',
    'Identity audit',
    html`<p>Every change to an identity fact (people, admin rights, agent ownership) in the history, newest first: ${audit.count} change(s),
${audit.flagged} flagged (not made by an identity operation), ${audit.commits_scanned} commits read.
${flagged ? html`<a href="/app/admin/audit">Show every change</a>` : html`<a href="/app/admin/audit?flagged=1">Show only flagged changes</a>`}</p>
${risk}
<div class="table-wrap"><table class="console"><caption class="sr-only">Identity changes</caption>
<thead><tr><th scope="col">When</th><th scope="col">By</th><th scope="col">Operation</th><th scope="col">Changes</th><th scope="col">Verdict</th></tr></thead>
<tbody>${rows.length ? rows : html`<tr><td colspan="5" class="muted">No changes${flagged ? ' flagged' : ''}.</td></tr>`}</tbody></table></div>`,
  );
}
