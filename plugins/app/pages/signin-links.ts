/**
 * Sign-in without a token (issue 25 item 6): the one-time link an admin makes with
 * `invite_person` (plugins/identity/signin-links.ts), and OpenID Connect when the operator
 * configured a provider (SVC_OIDC_*, docs/operator.md).
 *
 * The link `/app/invite/{org}#{secret}` keeps its secret in the fragment: no request line,
 * access log or Referer ever holds it. static/invite.js moves it into the form and out of the
 * address bar; pressing "Sign in" posts it once (double-submit CSRF cookie as on the token form,
 * and the same per-address rate limit). Either way the new session stands on a token record of
 * its own (7 days), so revoking it or offboarding the person ends the session.
 */
import { createHash } from 'node:crypto';
import type * as Oidc from 'openid-client';
import { isLoopbackName } from '../../../kernel/config.js';
import { globalStore, type KernelServices } from '../../../kernel/plugin.js';
import type { Collection } from '../../../kernel/state-store.js';
import type { Tenant } from '../../../kernel/tenant.js';
import { mintAppSessionCredential, personOfEmail, redeemSigninLink } from '../../identity/public.js';
import { csrfField, html, layout, type Html } from '../html.js';
import type { AppHost, AppRequest, AppResult } from '../host.js';
import { randomToken, sameSecret, SESSION_COOKIE, SESSION_TTL_MS } from '../session.js';
import { safeNext } from './auth.js';

export const INVITE_CSRF_COOKIE = 'svc_app_invite_csrf';
export const OIDC_STATE_COOKIE = 'svc_app_oidc';
/** how long a started provider sign-in may take to come back */
const OIDC_PENDING_MS = 10 * 60 * 1000;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** A tenant open here whose app and identity plugins are on (a sign-in elsewhere leads nowhere). */
function signinTenant(services: KernelServices, org: string): Tenant | null {
  const tenant = services.tenants.get(org);
  if (!tenant) return null;
  for (const name of ['app', 'identity']) {
    const plugin = services.host.plugins.find((p) => p.name === name);
    if (!plugin || !services.host.usable(tenant, plugin)) return null;
  }
  return tenant;
}

function page(title: string, body: Html, scripts: string[] = []): string {
  return layout({ title, viewer: null, scripts }, body);
}

function invitePage(org: string, csrf: string, error: string | null): string {
  return page(
    'Sign in with your link',
    html`<h1>Sign in with your link</h1>
${error ? html`<p class="flash error" role="alert">${error}</p>` : ''}
<form method="post" action="/app/invite/${encodeURIComponent(org)}" id="invite-form" class="stack"${error ? '' : ' hidden'}>
${csrfField(csrf)}<input type="hidden" name="secret" id="invite-secret" value="">
<p>An administrator of <strong>${org}</strong> invited you. The link works once: after this you stay signed in on this browser for up to a week.</p>
<button type="submit">Sign in</button>
</form>
<p id="invite-missing" class="flash error" role="alert" hidden>This address is missing the secret part of your sign-in link. Open the whole link you were sent, or ask an administrator for a new one.</p>
<noscript><p class="flash error">This page needs JavaScript to read your sign-in link (its secret never leaves your browser in the address).</p></noscript>
<p class="muted">Have a personal access token? <a href="/app/signin?org=${encodeURIComponent(org)}">Sign in with it</a>.</p>`,
    ['/app/static/invite.js'],
  );
}

export async function showInvite(req: AppRequest, host: AppHost): Promise<AppResult> {
  const csrf = randomToken();
  const org = req.params.org!;
  return {
    html: invitePage(org, csrf, null),
    cookies: [host.cookie(INVITE_CSRF_COOKIE, csrf, { path: '/app/invite', sameSite: 'Strict', maxAge: 3600 })],
  };
}

export async function redeemInvite(req: AppRequest, host: AppHost): Promise<AppResult> {
  const org = req.params.org!;
  const refused = (status: number, message: string, extra: Partial<AppResult> = {}): AppResult => {
    const csrf = randomToken();
    return {
      status,
      html: invitePage(org, csrf, message),
      cookies: [host.cookie(INVITE_CSRF_COOKIE, csrf, { path: '/app/invite', sameSite: 'Strict', maxAge: 3600 })],
      ...extra,
    };
  };
  if (!sameSecret(req.form.get('csrf') ?? undefined, req.cookie(INVITE_CSRF_COOKIE)))
    return refused(403, 'This sign-in form expired or was not sent by this app. Open your link again.');
  // guessing secrets costs the address's sign-in budget, as wrong tokens do
  const seconds = await host.spendSigninPoint(req.ip);
  if (seconds !== null)
    return refused(429, `Too many sign-in attempts from your address. Please wait ${seconds} seconds and try again.`, {
      headers: { 'retry-after': String(seconds) },
    });
  const tenant = signinTenant(host.services, org);
  const now = host.services.clock.now();
  const result = tenant ? await redeemSigninLink(tenant, (req.form.get('secret') ?? '').trim(), now) : null;
  if (!tenant || !result || !result.ok) {
    if (result?.ok === false && result.reason === 'expired')
      return refused(410, 'This sign-in link has expired (links work for 24 hours). Ask an administrator for a new one.');
    return refused(
      403,
      'This sign-in link is not valid: it was already used, replaced by a newer one, revoked, or belongs to another workspace. Ask an administrator for a new one.',
    );
  }
  await host.refundSigninPoint(req.ip);
  const hash = await mintAppSessionCredential(tenant, result.person, 'invite link', result.invitedBy, now);
  return startSession(req, host, tenant.org, hash, {}, '/app/queue', INVITE_CSRF_COOKIE, '/app/invite');
}

/** A new session (never the browser's old id: fixation), keeping the tenants of a live previous one. */
async function startSession(
  req: AppRequest,
  host: AppHost,
  org: string,
  hash: string,
  others: Record<string, string>,
  next: string,
  cookieToClear: string,
  cookiePath: string,
): Promise<AppResult> {
  const previous = (await host.sessions.resolve(req.cookie(SESSION_COOKIE))) ?? (await host.sessions.elsewhere(req.cookie(SESSION_COOKIE)));
  const { id } = await host.sessions.signIn(previous, org, hash, others);
  return {
    redirect: next,
    cookies: [
      host.cookie(SESSION_COOKIE, id, { maxAge: SESSION_TTL_MS / 1000 }),
      host.cookie(cookieToClear, '', { path: cookiePath, maxAge: 0 }),
    ],
  };
}

// ---------------------------------------------------------------- OpenID Connect

interface PendingSignin {
  verifier: string;
  nonce: string;
  org: string | null;
  next: string;
  expires_ms: number;
}

/** The OpenID Connect client, imported with the first provider sign-in, not at start. */
const oidcClient = (): Promise<typeof Oidc> => import('openid-client');

const discovered = new WeakMap<KernelServices, Promise<Oidc.Configuration>>();

/** The provider's configuration, discovered once per server (a failed discovery is retried on the next sign-in). */
function providerOf(services: KernelServices): Promise<Oidc.Configuration> | null {
  const settings = services.config.oidc;
  if (!settings) return null;
  let found = discovered.get(services);
  if (!found) {
    const issuer = new URL(settings.issuer);
    found = oidcClient().then((oidc) =>
      oidc.discovery(
        issuer,
        settings.clientId,
        settings.clientSecret,
        undefined,
        // plain http only to a provider on this machine (kernel/config.ts refuses it elsewhere)
        issuer.protocol === 'http:' && isLoopbackName(issuer.hostname) ? { execute: [oidc.allowInsecureRequests] } : undefined,
      ),
    );
    found.catch(() => discovered.delete(services));
    discovered.set(services, found);
  }
  return found;
}

const pendingStores = new WeakMap<KernelServices, Collection<PendingSignin>>();

/**
 * Started provider sign-ins (verifier, nonce), keyed by the SHA-256 of their `state`, in the
 * server-wide store (the callback may reach another process in cluster mode). One file a key:
 * anyone can start a sign-in, so a write must not cost the size of all of them.
 */
function pendingOf(host: AppHost): Collection<PendingSignin> {
  let store = pendingStores.get(host.services);
  if (!store) {
    store = globalStore(host.services, 'app').collection<PendingSignin>('oidc-pending', { layout: 'file-per-key' });
    pendingStores.set(host.services, store);
  }
  return store;
}

function oidcRefusal(status: number, title: string, message: string): AppResult {
  return {
    status,
    html: page(
      title,
      html`<h1>${title}</h1>
<p class="flash error" role="alert">${message}</p>
<p><a href="/app/signin">Back to sign-in</a></p>`,
    ),
  };
}

function redirectUri(services: KernelServices): string {
  return `${services.baseUrl}/app/signin/oidc/callback`;
}

export async function startOidc(req: AppRequest, host: AppHost): Promise<AppResult> {
  const provider = providerOf(host.services);
  if (!provider)
    return oidcRefusal(
      404,
      'Single sign-on is not set up',
      'This server has no identity provider configured; sign in with a link or a token.',
    );
  let config: Oidc.Configuration;
  try {
    config = await provider;
  } catch (err) {
    host.services.log.warn('app: OpenID Connect discovery failed', { error: err instanceof Error ? err.message : String(err) });
    return oidcRefusal(502, 'The identity provider did not answer', 'The sign-in provider could not be reached. Try again in a moment.');
  }
  // each start writes a record: it costs a point of the address's sign-in budget until it succeeds
  const seconds = await host.spendSigninPoint(req.ip);
  if (seconds !== null)
    return {
      ...oidcRefusal(429, 'Too many sign-in attempts', `Please wait ${seconds} seconds and try again.`),
      headers: { 'retry-after': String(seconds) },
    };
  const org = req.query.get('org');
  const oidc = await oidcClient();
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const now = host.services.clock.now();
  const pending = pendingOf(host);
  // expired starts are dropped as new ones come (a handful per minute)
  for (const [key, p] of pending.entries()) if (now >= p.expires_ms) void pending.delete(key).catch(() => undefined);
  await pending.set(sha256(state), {
    verifier,
    nonce,
    org: org || null,
    next: safeNext(req.query.get('next')),
    expires_ms: now + OIDC_PENDING_MS,
  });
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri(host.services),
    scope: 'openid email profile',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  return {
    redirect: url.href,
    // binds the answer to this browser: a callback URL someone else started is refused (login CSRF)
    cookies: [host.cookie(OIDC_STATE_COOKIE, state, { path: '/app/signin/oidc', maxAge: OIDC_PENDING_MS / 1000 })],
  };
}

/** The email the provider vouches for: from the ID token, else its userinfo endpoint. */
async function verifiedEmail(config: Oidc.Configuration, tokens: Oidc.TokenEndpointResponse & Oidc.TokenEndpointResponseHelpers) {
  const claims = tokens.claims();
  if (!claims) return { email: null, verified: false };
  let source: Record<string, unknown> = claims;
  if (typeof claims.email !== 'string') source = await (await oidcClient()).fetchUserInfo(config, tokens.access_token, claims.sub);
  return { email: typeof source.email === 'string' ? source.email : null, verified: source.email_verified === true };
}

export async function finishOidc(req: AppRequest, host: AppHost): Promise<AppResult> {
  const provider = providerOf(host.services);
  if (!provider) return oidcRefusal(404, 'Single sign-on is not set up', 'This server has no identity provider configured.');
  const state = req.query.get('state') ?? '';
  const clear = host.cookie(OIDC_STATE_COOKIE, '', { path: '/app/signin/oidc', maxAge: 0 });
  const failed = (status: number, title: string, message: string): AppResult => ({
    ...oidcRefusal(status, title, message),
    cookies: [clear],
  });
  if (!sameSecret(state, req.cookie(OIDC_STATE_COOKIE)))
    return failed(
      403,
      'Sign-in not started here',
      'This sign-in answer does not belong to a sign-in started in this browser. Start again.',
    );
  const pending = await pendingOf(host).take(sha256(state));
  const now = host.services.clock.now();
  if (!pending || now >= pending.expires_ms)
    return failed(403, 'Sign-in expired', 'This sign-in took too long or was already finished. Start again.');
  const providerError = req.query.get('error');
  if (providerError) return failed(403, 'The provider refused the sign-in', `The identity provider answered: ${providerError}.`);
  let found: { email: string | null; verified: boolean };
  try {
    const config = await provider;
    const oidc = await oidcClient();
    const tokens = await oidc.authorizationCodeGrant(config, new URL(`${redirectUri(host.services)}?${req.query.toString()}`), {
      pkceCodeVerifier: pending.verifier,
      expectedState: state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    });
    found = await verifiedEmail(config, tokens);
  } catch (err) {
    // never the code or tokens in the log: the library's message names the check that failed
    host.services.log.warn('app: OpenID Connect sign-in failed', { error: err instanceof Error ? err.message : String(err) });
    return failed(403, 'Sign-in failed', 'The identity provider’s answer could not be verified. Start again.');
  }
  if (!found.email || !found.verified)
    return failed(
      403,
      'Email not verified',
      'The identity provider did not vouch for an email address of yours, so it cannot be matched to a person here.',
    );
  const orgs = pending.org ? [pending.org] : host.services.tenants.list().map((t) => t.org);
  const matches: Array<{ org: string; person: string; tenant: Tenant }> = [];
  for (const org of orgs) {
    const tenant = signinTenant(host.services, org);
    const person = tenant ? personOfEmail(tenant, found.email) : null;
    if (tenant && person) matches.push({ org, person, tenant });
  }
  if (matches.length === 0)
    return failed(
      403,
      'No account for this email',
      `No person here has the email ${found.email}${pending.org ? ` in ${pending.org}` : ''}. Ask an administrator to add you with that email.`,
    );
  // the configured tenant first when the email is a person there, else the first by name
  matches.sort(
    (a, b) => Number(b.org === host.services.config.orgSlug) - Number(a.org === host.services.config.orgSlug) || a.org.localeCompare(b.org),
  );
  const hashes: Record<string, string> = {};
  for (const m of matches) hashes[m.org] = await mintAppSessionCredential(m.tenant, m.person, 'OpenID Connect', null, now);
  await host.refundSigninPoint(req.ip);
  const first = matches[0]!;
  return startSession(req, host, first.org, hashes[first.org]!, hashes, pending.next, OIDC_STATE_COOKIE, '/app/signin/oidc');
}
