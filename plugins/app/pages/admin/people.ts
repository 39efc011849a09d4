/**
 * The console's people and tokens pages (identity operations through operations-bridge.ts):
 * people with their handle, admin rights, agents and token counts; create a person, grant and
 * revoke admin, offboard, make a one-time sign-in link (invite_person, valid a day, three or a
 * week); the team's tokens with revoke, and minting a token for a person. A token's secret and a
 * link are shown once on the answer page (never a list, a flash or a URL).
 */
import { isSvcError } from '../../../../kernel/errors.js';
import { csrfField, html, type Html } from '../../html.js';
import type { AppRequest, AppResult, Signed } from '../../host.js';
import { nodeLink } from '../queue.js';
import { act, consolePage, requireConsoleAdmin, secretOnce, when } from './console.js';

/** A sign-in link's lifetimes the console offers (invite_person's `expires_in_hours`), the default first. */
const LINK_HOURS: Array<[number, string]> = [
  [24, 'a day'],
  [72, '3 days'],
  [168, 'a week'],
];

/** The page that shows a sign-in link once. */
function linkOnce(name: string, link: { url: string; expires_at: string }): Html {
  return secretOnce(
    `Sign-in link for ${name}`,
    link.url,
    `Send it to ${name} over a private channel; it signs them in once, until ${link.expires_at.replace('T', ' ').slice(0, 16)} UTC. A newer link replaces it.`,
    'link',
  );
}

/** The name a comment mentions a person by: the local part of the email (plugins/comments resolves it). */
const handleOf = (email: string | null) => (email ? `@${email.split('@')[0]}` : '');

const confirmButton = (label: string, aria: string, danger = false): Html =>
  html`<button type="submit"${danger ? html` class="danger"` : ''} aria-label="${aria}">${label}</button>`;

/** The create-person form, with what was typed kept after a refusal. */
function createForm(s: Signed, draft: { name?: string; email?: string; roles?: string } = {}): Html {
  return html`<section aria-labelledby="new-person-h"><h2 id="new-person-h">Add a person</h2>
<form method="post" action="/app/admin/people" class="filters">${csrfField(s.viewer.csrf)}
<label for="person-name">Name<input id="person-name" name="name" required maxlength="200" value="${draft.name ?? ''}"></label>
<label for="person-email">Email<input id="person-email" name="email" type="email" required maxlength="200" value="${draft.email ?? ''}"></label>
<label for="person-roles">Roles (comma-separated, optional)<input id="person-roles" name="roles" value="${draft.roles ?? ''}"></label>
<label for="person-link"><span><input id="person-link" type="checkbox" name="link" value="on"> make a one-time sign-in link for them (valid a day)</span></label>
<label for="person-token"><span><input id="person-token" type="checkbox" name="token" value="on"> mint a sign-in token for them</span></label>
<button type="submit">Add person</button></form></section>`;
}

async function peopleBody(s: Signed, before: Html | '' = '', draft?: { name?: string; email?: string; roles?: string }): Promise<Html> {
  const [{ people }, agents] = await Promise.all([s.bridge.listPeople(), s.bridge.listAllAgents().catch(() => ({ agents: [] }))]);
  const csrf = csrfField(s.viewer.csrf);
  const rows = people.map((p) => {
    const own = agents.agents.filter((a) => a.owner === p.id);
    const base = `/app/admin/people/${encodeURIComponent(p.id)}`;
    const self = p.id === s.viewer.personId;
    const adminForm = p.is_admin
      ? html`<form method="post" action="${base}/revoke-admin" class="inline">${csrf}${confirmButton('Revoke admin', `Revoke admin: ${p.name}`)}</form>`
      : html`<form method="post" action="${base}/grant-admin" class="inline">${csrf}${confirmButton('Make admin', `Make admin: ${p.name}`)}</form>`;
    const offboard = self
      ? ''
      : html`<form method="post" action="${base}/offboard" class="inline">${csrf}${confirmButton('Offboard', `Offboard ${p.name}`, true)}</form>`;
    const mint = html`<form method="post" action="/app/admin/tokens" class="inline">${csrf}<input type="hidden" name="person" value="${p.id}">${confirmButton('New token', `New token for ${p.name}`)}</form>`;
    const link = self
      ? ''
      : html`<form method="post" action="${base}/invite" class="inline">${csrf}<label for="link-${p.id}" class="sr-only">Sign-in link for ${p.name} valid for</label><select id="link-${p.id}" name="hours">${LINK_HOURS.map(([h, label]) => html`<option value="${String(h)}">${label}</option>`)}</select>${confirmButton('Sign-in link', `Sign-in link for ${p.name}`)}</form>`;
    return html`<tr id="${p.id}"><th scope="row">${nodeLink(p.id, p.name)}${self ? html` <span class="small muted">(you)</span>` : ''}<br><span class="small muted">${p.email ?? ''}</span></th>
<td>${handleOf(p.email)}</td><td>${p.is_admin ? html`<span class="badge status ok">admin</span>` : 'member'}${p.status !== 'active' ? html` <span class="badge">${p.status}</span>` : ''}</td>
<td>${own.length ? own.map((a, i) => html`${i ? ', ' : ''}${a.label}`) : html`<span class="muted">none</span>`}</td>
<td>${p.active_tokens} live of ${p.tokens}<br><span class="small muted">last used ${when(p.last_used)}</span></td>
<td class="actions-cell">${adminForm} ${mint} ${link} ${offboard}</td></tr>`;
  });
  return html`${before}<div class="table-wrap"><table class="console"><caption class="sr-only">People of ${s.viewer.org}</caption>
<thead><tr><th scope="col">Person</th><th scope="col">Handle</th><th scope="col">Role</th><th scope="col">Agents</th><th scope="col">Tokens</th><th scope="col">Actions</th></tr></thead>
<tbody>${rows}</tbody></table></div>
${createForm(s, draft)}`;
}

/** GET /app/admin/people */
export async function showPeople(_req: AppRequest, s: Signed): Promise<AppResult> {
  requireConsoleAdmin(s);
  return consolePage(s, 'people', 'People', await peopleBody(s));
}

/** POST /app/admin/people {name, email, roles?, token?}: create_person (and admin_mint_token, its secret shown once). */
export async function addPerson(req: AppRequest, s: Signed): Promise<AppResult> {
  requireConsoleAdmin(s);
  const draft = {
    name: (req.form.get('name') ?? '').trim(),
    email: (req.form.get('email') ?? '').trim(),
    roles: req.form.get('roles') ?? '',
  };
  const roles = draft.roles
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  let created: Awaited<ReturnType<Signed['bridge']['createPerson']>>;
  try {
    created = await s.bridge.createPerson({ name: draft.name, email: draft.email, ...(roles.length ? { roles } : {}) });
  } catch (err) {
    if (!isSvcError(err) || err.status >= 500) throw err;
    const problem = html`<p class="flash error" role="alert">Could not add ${draft.name || 'the person'}: ${err.message}</p>`;
    return consolePage(s, 'people', 'People', await peopleBody(s, problem, draft), err.status);
  }
  let shown: Html | '' = '';
  if (req.form.get('link') === 'on') {
    try {
      shown = linkOnce(created.name, await s.bridge.invitePerson(created.id));
    } catch (err) {
      // the person exists either way: say why there is no link (the app plugin off: 409)
      if (!isSvcError(err) || err.status >= 500) throw err;
      shown = html`<p class="flash error" role="alert">No sign-in link: ${err.message}</p>`;
    }
  }
  if (req.form.get('token') === 'on') {
    const minted = await s.bridge.adminMintToken({ person: created.id, label: 'invited from the console' });
    shown = html`${shown}${secretOnce(
      `Sign-in token for ${created.name}`,
      minted.token,
      `Give it to ${created.name} over a private channel; it signs in at /app/signin until ${minted.expires.slice(0, 10)}.`,
    )}`;
  }
  const done = html`<p class="flash ok" role="status">Added ${created.name} (${created.email}).</p>${shown}`;
  return consolePage(s, 'people', 'People', await peopleBody(s, done));
}

/** POST /app/admin/people/:id/invite {hours}: invite_person, the link shown once on the answer page. */
export async function invitePerson(req: AppRequest, s: Signed): Promise<AppResult> {
  requireConsoleAdmin(s);
  const id = req.params.id!;
  const name = String(s.bridge.tenant.index.get(id)?.frontmatter.name ?? id);
  // the form's choice as a number; anything else is the operation's 422, as over REST
  const hours = req.form.has('hours') ? Number(req.form.get('hours')) : undefined;
  try {
    const link = await s.bridge.invitePerson(id, hours);
    return consolePage(s, 'people', 'People', await peopleBody(s, linkOnce(name, link)));
  } catch (err) {
    if (!isSvcError(err) || err.status >= 500) throw err;
    const problem = html`<p class="flash error" role="alert">No sign-in link for ${name}: ${err.message}</p>`;
    return consolePage(s, 'people', 'People', await peopleBody(s, problem), err.status);
  }
}

/** POST /app/admin/people/:id/grant-admin | revoke-admin | offboard */
export function personAction(kind: 'grant' | 'revoke' | 'offboard') {
  return async (req: AppRequest, s: Signed): Promise<AppResult> => {
    requireConsoleAdmin(s);
    const id = req.params.id!;
    const name = String(s.bridge.tenant.index.get(id)?.frontmatter.name ?? id);
    return act(s, `/app/admin/people#${encodeURIComponent(id)}`, async () => {
      if (kind === 'grant') {
        const r = await s.bridge.grantAdmin(id);
        return r.status === 'unchanged' ? `${name} was already an admin` : `${name} is now an admin`;
      }
      if (kind === 'revoke') {
        const r = await s.bridge.revokeAdmin(id);
        return r.status === 'unchanged' ? `${name} was not an admin` : `${name} is no longer an admin`;
      }
      const r = await s.bridge.offboardPerson(id);
      return `${name} is offboarded: ${r.tokens_revoked} token(s) and ${r.oauth_grants_revoked} OAuth grant(s) revoked`;
    });
  };
}

// ---------------------------------------------------------------- tokens

async function tokensBody(s: Signed, before: Html | '' = ''): Promise<Html> {
  const { tokens } = await s.bridge.listTeamTokens();
  const csrf = csrfField(s.viewer.csrf);
  const rows = tokens.map(
    (t) => html`<tr id="token-${t.hash_prefix}"><th scope="row"><code>${t.hash_prefix}</code></th>
<td>${nodeLink(t.person, t.name ?? t.person)}${t.agent ? html`<br><span class="small muted">agent ${t.agent}</span>` : ''}</td>
<td>${t.label ?? html`<span class="muted">no label</span>`}</td><td>${when(t.created)}</td>
<td>${t.expired ? html`<span class="badge">expired</span>` : when(t.expires, 'no expiry')}</td><td>${when(t.last_used)}</td>
<td><form method="post" action="/app/admin/tokens/${encodeURIComponent(t.hash_prefix)}/revoke" class="inline">${csrf}<button type="submit" class="danger" aria-label="Revoke token ${t.hash_prefix} of ${t.name ?? t.person}">Revoke</button></form></td></tr>`,
  );
  return html`${before}<p>Every live personal and standing agent token of the team. Only a hash is kept: a token's secret is shown once, when it is minted.</p>
<div class="table-wrap"><table class="console"><caption class="sr-only">Tokens of ${s.viewer.org}</caption>
<thead><tr><th scope="col">Token</th><th scope="col">For</th><th scope="col">Label</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col">Revoke</th></tr></thead>
<tbody>${rows.length ? rows : html`<tr><td colspan="7" class="muted">No live tokens.</td></tr>`}</tbody></table></div>`;
}

/** GET /app/admin/tokens */
export async function showTokens(_req: AppRequest, s: Signed): Promise<AppResult> {
  requireConsoleAdmin(s);
  return consolePage(s, 'tokens', 'Tokens', await tokensBody(s));
}

/** POST /app/admin/tokens {person, label?}: admin_mint_token; the secret is on this answer only. */
export async function mintToken(req: AppRequest, s: Signed): Promise<AppResult> {
  requireConsoleAdmin(s);
  const person = (req.form.get('person') ?? '').trim();
  const label = (req.form.get('label') ?? '').trim() || 'minted from the console';
  try {
    const minted = await s.bridge.adminMintToken({ person, label });
    const shown = secretOnce(
      `New token for ${minted.name ?? minted.person}`,
      minted.token,
      `Token ${minted.hash_prefix}, valid until ${minted.expires.slice(0, 10)}.`,
    );
    return consolePage(s, 'tokens', 'Tokens', await tokensBody(s, shown));
  } catch (err) {
    if (!isSvcError(err) || err.status >= 500) throw err;
    s.setFlash('error', `No token minted: ${err.message}`);
    return { redirect: '/app/admin/people' };
  }
}

/** POST /app/admin/tokens/:prefix/revoke (back to the page it was sent from: tokens or agents) */
export async function revokeToken(req: AppRequest, s: Signed): Promise<AppResult> {
  requireConsoleAdmin(s);
  const prefix = req.params.prefix!;
  const back = req.form.get('back') === 'agents' ? '/app/admin/agents' : '/app/admin/tokens';
  return act(s, back, async () => {
    await s.bridge.adminRevokeToken(prefix);
    return `Token ${prefix} is revoked`;
  });
}
