/**
 * Sign-in by pasting a personal access token once (POST body only; the token is hashed and
 * never stored, shown or put in a URL), sign-out, and the tenant switch over
 * GET /v1/me/org-choices.
 */
import { hashToken } from '../../../kernel/auth.js';
import { isSvcError } from '../../../kernel/errors.js';
import { csrfField, html, layout } from '../html.js';
import type { AppHost, AppRequest, AppResult, Signed } from '../host.js';
import { randomToken, sameSecret, SESSION_COOKIE, SESSION_TTL_MS, SIGNIN_CSRF_COOKIE } from '../session.js';

const DEFAULT_NEXT = '/app/queue';
const BASE = 'http://app.invalid';

/**
 * Where to go after sign-in: only a path of this app (no open redirect), normalized to
 * printable ASCII so it can stand in a `Location` header (a DEL, NUL or `Ā` there made Node
 * throw, a 500). Control characters and backslashes are refused outright rather than
 * normalized: URL parsing drops tabs and newlines and reads `\` as `/`, which can turn
 * `/\evil` or `/<TAB>/evil` into `//evil`. Anything else not allowed is the default page.
 */
export function safeNext(raw: string | null): string {
  if (!raw || raw.length > 2048 || /[\u0000-\u001f\u007f\\]/.test(raw) || !raw.startsWith('/') || raw.startsWith('//')) return DEFAULT_NEXT;
  let url: URL;
  try {
    url = new URL(raw, BASE);
  } catch {
    return DEFAULT_NEXT;
  }
  if (url.origin !== BASE || !(url.pathname === '/app' || url.pathname.startsWith('/app/'))) return DEFAULT_NEXT;
  // the parser percent-encoded what a header may not hold (non-ASCII, spaces); a lone
  // surrogate or anything else that survived is refused
  const next = `${url.pathname}${url.search}${url.hash}`;
  return /^[\x21-\x7e]+$/.test(next) ? next : DEFAULT_NEXT;
}

function signinPage(csrf: string, next: string, error: string | null, org: string | null, sso = false): string {
  return layout(
    { title: 'Sign in', viewer: null },
    html`<h1>Sign in</h1>
<p>Paste one of your personal access tokens${org ? html` for the tenant <strong>${org}</strong>` : ''}. The app checks it once and keeps only a
session cookie; the token itself is never stored, shown again, or put in an address.</p>
${error ? html`<p class="flash error" role="alert">${error}</p>` : ''}
<form method="post" action="/app/signin" class="stack">
${csrfField(csrf)}<input type="hidden" name="next" value="${next}">
<label for="token">Personal access token</label>
<input id="token" name="token" type="password" autocomplete="off" required aria-describedby="token-help" spellcheck="false">
<p id="token-help" class="muted">It starts with <code>svc_pat_</code>. No token? Ask an administrator for a sign-in link: it signs you in once, and you can make tokens after that.</p>
<button type="submit">Sign in</button>
</form>
${
  sso
    ? html`<h2>Single sign-on</h2>
<p><a class="button" href="/app/signin/oidc?next=${encodeURIComponent(next)}${org ? `&org=${encodeURIComponent(org)}` : ''}">Sign in with your identity provider</a></p>`
    : ''
}`,
  );
}

export async function showSignin(req: AppRequest, host: AppHost): Promise<AppResult> {
  const csrf = randomToken();
  return {
    html: signinPage(csrf, safeNext(req.query.get('next')), null, req.query.get('org'), host.services.config.oidc !== null),
    cookies: [host.cookie(SIGNIN_CSRF_COOKIE, csrf, { path: '/app/signin', sameSite: 'Strict', maxAge: 3600 })],
  };
}

export async function doSignin(req: AppRequest, host: AppHost): Promise<AppResult> {
  const next = safeNext(req.form.get('next'));
  if (!sameSecret(req.form.get('csrf') ?? undefined, req.cookie(SIGNIN_CSRF_COOKIE))) {
    const csrf = randomToken();
    return {
      status: 403,
      html: signinPage(csrf, next, 'This sign-in form expired or was not sent by this app. Please try again.', null),
      cookies: [host.cookie(SIGNIN_CSRF_COOKIE, csrf, { path: '/app/signin', sameSite: 'Strict', maxAge: 3600 })],
    };
  }
  // Brute force: a failed attempt costs a point of the client address's budget; a success gives it back.
  const seconds = await host.spendSigninPoint(req.ip);
  if (seconds !== null)
    return {
      status: 429,
      headers: { 'retry-after': String(seconds) },
      html: signinPage(
        req.form.get('csrf')!,
        next,
        `Too many sign-in attempts from your address. Please wait ${seconds} seconds and try again.`,
        null,
      ),
    };
  const token = (req.form.get('token') ?? '').trim();
  let identity: ReturnType<typeof host.services.tenants.authenticate>;
  try {
    identity = host.services.tenants.authenticate(token);
    if (identity.actor.token.kind !== 'pat' || identity.actor.agent !== null) throw new Error('not a personal access token');
    if (!identity.actor.bound) throw new Error('the token is not bound to a person');
  } catch (err) {
    if (!(err instanceof Error) && !isSvcError(err)) throw err;
    return {
      status: 401,
      html: signinPage(req.form.get('csrf')!, next, 'That is not a valid personal access token of a person. Check it and try again.', null),
    };
  }
  await host.refundSigninPoint(req.ip);
  const patHash = hashToken(token);
  // Always a new session id and CSRF token (session fixation): the browser's previous session,
  // if any, only lends its tenants to the new record and is deleted.
  // (cluster mode: a session whose current tenant another process serves counts as well)
  const previous = (await host.sessions.resolve(req.cookie(SESSION_COOKIE))) ?? (await host.sessions.elsewhere(req.cookie(SESSION_COOKIE)));
  const { id } = await host.sessions.signIn(previous, identity.tenant.org, patHash);
  return {
    redirect: next,
    cookies: [
      host.cookie(SESSION_COOKIE, id, { maxAge: SESSION_TTL_MS / 1000 }),
      host.cookie(SIGNIN_CSRF_COOKIE, '', { path: '/app/signin', maxAge: 0 }),
    ],
  };
}

export async function doSignout(_req: AppRequest, s: Signed, host: AppHost): Promise<AppResult> {
  await host.sessions.destroy(s.session);
  return { redirect: '/app/signin', cookies: [host.cookie(SESSION_COOKIE, '', { maxAge: 0 })] };
}

export async function showOrgs(_req: AppRequest, s: Signed): Promise<AppResult> {
  let choices: Array<{ slug: string; label: string; default?: boolean }> = [];
  let note = '';
  try {
    const answer = await s.bridge.getOrgChoices();
    choices = answer.org_choices;
    if (answer.source !== 'idp') note = 'The identity provider did not list your organizations; these are the tenants of this session.';
  } catch (err) {
    if (!isSvcError(err)) throw err;
    note = `The identity provider could not be asked (${err.code}); these are the tenants of this session.`;
  }
  const signedIn = Object.keys(s.session.record.tenants);
  for (const org of signedIn) if (!choices.some((c) => c.slug === org)) choices.push({ slug: org, label: org });
  const current = s.session.tenant.org;
  return {
    html: layout(
      { title: 'Tenants', viewer: s.viewer, nav: 'orgs', flash: s.flash },
      html`<h1>Tenants</h1>
${note ? html`<p class="muted">${note}</p>` : ''}
<ul class="cards">${choices.map(
        (c) => html`<li><strong>${c.label}</strong> <code>${c.slug}</code>${c.default ? ' (default)' : ''}
${
  c.slug === current
    ? html` <span class="badge">current</span>`
    : signedIn.includes(c.slug)
      ? html`<form method="post" action="/app/orgs" class="inline">${csrfField(s.viewer.csrf)}<input type="hidden" name="org" value="${c.slug}"><button type="submit">Switch to ${c.slug}</button></form>`
      : html` <a href="/app/signin?org=${encodeURIComponent(c.slug)}">Sign in to ${c.slug}</a>`
}</li>`,
      )}</ul>`,
    ),
  };
}

export async function switchOrg(req: AppRequest, s: Signed, host: AppHost): Promise<AppResult> {
  const org = req.form.get('org') ?? '';
  if (!(await host.sessions.switchTo(s.session, org))) {
    s.setFlash('error', `You are not signed in to ${org}; sign in with a token of that tenant.`);
    return { redirect: '/app/orgs' };
  }
  return { redirect: '/app/queue' };
}
