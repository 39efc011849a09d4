/**
 * Sign-in without a token (issue 25 item 6): one-time sign-in links an admin makes for a
 * person (`invite_person`), and what the app's passwordless sign-ins (the link, OpenID Connect)
 * need from identity: redeeming a link, finding the person of a verified email, and the
 * credential an app session stands on.
 *
 * - A link is `{base}/app/invite/{org}#{secret}`: the secret travels in the fragment, which
 *   browsers never send, so no access log, proxy or Referer sees it. Only its SHA-256 is kept
 *   (state collection `signin-links`, keyed by person: one live link a person, so a new invite
 *   replaces the older link). It lives 24 hours and is taken on first use (`Collection.take`:
 *   of two racing redemptions exactly one wins).
 * - Offboarding drops the person's link and marks them (collection `signin-offboarded`) so a
 *   provider's email cannot sign them back in; an admin's new invite lifts the mark.
 * - An app session stands on a token record like any other: a `pat` labelled `app sign-in (...)`,
 *   7 days, whose plaintext is never produced for anyone (a random value hashed and dropped).
 *   Offboarding and token revocation therefore end such a session exactly as they end one
 *   signed in with a pasted token (plugins/app/session.ts re-checks the record on each request).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { generateToken, newTokenRecord } from '../../kernel/auth.js';
import { errors } from '../../kernel/errors.js';
import type { Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import type { Tenant } from '../../kernel/tenant.js';
import type { Collection } from '../../kernel/state-store.js';
import type { InvitePersonInput, SigninLink } from './api.js';
import { nowMs, personNode, requireAdmin, requireDirectCredential } from './gates.js';

/** How long a sign-in link can be opened by default: a day covers "sent in the evening, opened next morning". */
export const SIGNIN_LINK_TTL_MS = 24 * 3600 * 1000;
/** The longest an admin may ask for (`expires_in_hours`): a week covers "sent on Friday for a Monday start". */
export const SIGNIN_LINK_MAX_HOURS = 7 * 24;
/** The token record behind an app session lives as long as the session can (plugins/app/session.ts). */
export const APP_SESSION_TOKEN_TTL_MS = 7 * 24 * 3600 * 1000;

interface StoredLink {
  /** SHA-256 (hex) of the secret */
  hash: string;
  expires_ms: number;
  invited_by: string;
  created: string;
}

interface OffboardMark {
  at: string;
}

const linksOf = (tenant: Tenant): Collection<StoredLink> => tenant.state.collection<StoredLink>('signin-links');
const marksOf = (tenant: Tenant): Collection<OffboardMark> => tenant.state.collection<OffboardMark>('signin-offboarded');

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === 32 && y.length === 32 && timingSafeEqual(x, y);
}

/** Where people reach the app: SVC_APP_URL (`{public base}/app`, docs/operator.md) when set, else this server's /app. */
function appBase(ctx: OpContext): string {
  const configured = ctx.services.config.appUrl;
  return configured ? configured.replace(/\/+$/, '') : `${ctx.services.baseUrl}/app`;
}

export async function invitePerson(ctx: OpContext, input: Static<typeof InvitePersonInput>): Promise<Static<typeof SigninLink>> {
  requireAdmin(ctx);
  // a link is a credential: only a person's own credential makes one (like minting a token)
  requireDirectCredential(ctx);
  personNode(ctx, input.id);
  const app = ctx.services.host.plugins.find((p) => p.name === 'app');
  if (!app || !ctx.services.host.usable(ctx.tenant, app))
    throw errors.conflict('the app plugin is not enabled for this tenant: a sign-in link would lead nowhere', { plugin: 'app' });
  const secret = randomBytes(32).toString('base64url');
  const now = nowMs(ctx);
  const expires = now + (input.expires_in_hours === undefined ? SIGNIN_LINK_TTL_MS : input.expires_in_hours * 3600 * 1000);
  // one live link a person: this write replaces (invalidates) any older one
  await linksOf(ctx.tenant).set(input.id, {
    hash: sha256(secret),
    expires_ms: expires,
    invited_by: ctx.actor.personId,
    created: new Date(now).toISOString(),
  });
  // an admin inviting an offboarded person brings them back (their provider sign-in too)
  if (marksOf(ctx.tenant).has(input.id)) await marksOf(ctx.tenant).delete(input.id);
  return {
    person: input.id,
    url: `${appBase(ctx)}/invite/${encodeURIComponent(ctx.tenant.org)}#${secret}`,
    expires_at: new Date(expires).toISOString(),
  };
}

/** Offboarding: the person's link dies and a provider's email no longer signs them in. */
export async function forgetSignin(tenant: Tenant, personId: string, at: string): Promise<void> {
  await marksOf(tenant).set(personId, { at });
  if (linksOf(tenant).has(personId)) await linksOf(tenant).delete(personId);
}

export type RedeemResult = { ok: true; person: string; invitedBy: string } | { ok: false; reason: 'unknown' | 'expired' };

/**
 * Takes the link whose secret this is: its person, or why not. A used, replaced, revoked or
 * malformed secret is `unknown` (the page cannot tell them apart, and says so); an expired one
 * is dropped and `expired`.
 */
export async function redeemSigninLink(tenant: Tenant, secret: string, nowMsValue: number): Promise<RedeemResult> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(secret)) return { ok: false, reason: 'unknown' };
  const hash = sha256(secret);
  const links = linksOf(tenant);
  let person: string | null = null;
  // constant-time comparison against each live link (a handful a tenant)
  for (const [id, link] of links.entries()) if (sameHash(link.hash, hash)) person = id;
  if (person === null) return { ok: false, reason: 'unknown' };
  const taken = await links.take(person);
  if (!taken || !sameHash(taken.hash, hash)) {
    // replaced by a new invite between the lookup and the take: the newer link stays usable
    if (taken) await links.set(person, taken);
    return { ok: false, reason: 'unknown' };
  }
  if (nowMsValue >= taken.expires_ms) return { ok: false, reason: 'expired' };
  const node = tenant.index.get(person);
  if (!node || node.type !== 'person') return { ok: false, reason: 'unknown' };
  return { ok: true, person, invitedBy: taken.invited_by };
}

/**
 * The person of the tenant whose email this is (case-insensitive), unless offboarded; null
 * when none. Emails are unique among a tenant's people (create_person refuses a duplicate).
 */
export function personOfEmail(tenant: Tenant, email: string): string | null {
  const wanted = email.trim().toLowerCase();
  if (!wanted) return null;
  for (const id of tenant.index.idsOfType('person')) {
    const value = tenant.index.get(id)?.frontmatter.email;
    if (typeof value === 'string' && value.trim().toLowerCase() === wanted) return marksOf(tenant).has(id) ? null : id;
  }
  return null;
}

/**
 * A new token record for an app session of `person` (never shown to anyone: the app keeps its
 * hash in the session): returns that hash.
 */
export async function mintAppSessionCredential(
  tenant: Tenant,
  person: string,
  via: 'invite link' | 'OpenID Connect',
  mintedBy: string | null,
  nowMsValue: number,
): Promise<string> {
  const record = newTokenRecord(generateToken('pat'), {
    kind: 'pat',
    person,
    created: new Date(nowMsValue).toISOString(),
    expires: new Date(nowMsValue + APP_SESSION_TOKEN_TTL_MS).toISOString(),
    label: `app sign-in (${via})`,
    minted_by: mintedBy,
  });
  await tenant.tokens.mutate((records) => void records.set(record.hash, record));
  return record.hash;
}
