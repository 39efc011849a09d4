/**
 * Render tickets (docs/spec.md "Lenses" rules 2-4, Authentication): a JWT (HS256, jose) signed with
 * a per-tenant key kept in `tenants/<org>/auth/render-ticket.key`. Nothing about a ticket is
 * stored: the signature, the lens it names and its expiry are the whole authority, so a
 * ticket cannot be revoked, only outlived. It authenticates only the render route of the
 * lens it was minted for, as the sharer, through the kernel's ticket authenticators.
 *
 * Offboarding the sharer does not end a ticket (nothing is stored to revoke; docs/spec.md Lenses rule 3
 * makes expiry the only bound): `offboard_person` tells the admin so in its answer
 * (`render_tickets`, `render_tickets_valid_until`) and docs/operator.md says how to end them all.
 */
import { randomBytes, createHash } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { decodeJwt, jwtVerify, SignJWT } from 'jose';
import type { Actor } from '../../kernel/actor.js';
import type { TokenRecord } from '../../kernel/auth.js';
import { isLoopback } from '../../kernel/config.js';
import type { IncomingMessage } from 'node:http';
import type { KernelServices, RequestRouter, RouteRequest, TicketAuthenticator } from '../../kernel/plugin.js';
import type { Tenant } from '../../kernel/tenant.js';
import { actorFor } from '../../kernel/tenants.js';
import { queryString } from '../../kernel/validate.js';

export const COOKIE_NAME = 'svc_render_ticket';
export const TICKET_DEFAULT_DAYS = 7;
export const TICKET_MAX_DAYS = 30;
const KEY_FILE = 'render-ticket.key';
const AUDIENCE = 'svc-render';
const TYP = 'svc-render-ticket+jwt';
/** A blob longer than this is not one of ours; refuse before any parsing. */
const MAX_TICKET_CHARS = 4096;
const RENDER_PATH = /^\/v1\/lens\/([a-z0-9][a-z0-9-]*)\/render\/?$/;

export interface TicketClaims {
  /** tenant org (the JWT issuer) */
  org: string;
  lens: string;
  /** sharer person id (the JWT subject) */
  sharer: string;
  /** render params pinned at mint */
  params: Record<string, string>;
  label: string | null;
  expMs: number;
}

interface TicketKey {
  kid: string;
  secret: Uint8Array;
}

const keys = new WeakMap<Tenant, TicketKey>();

/** Creates the key file once, atomically (temp file + link), so two processes agree on one key. */
function readOrCreateKey(dir: string): Buffer {
  const file = join(dir, KEY_FILE);
  try {
    return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64url');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, randomBytes(32).toString('base64url') + '\n');
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(tmp);
  }
  const dfd = openSync(dir, 'r');
  try {
    fsyncSync(dfd);
  } finally {
    closeSync(dfd);
  }
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64url');
}

/** The tenant's signing key, read (or created) once per process. */
export function keyFor(tenant: Tenant): TicketKey {
  let key = keys.get(tenant);
  if (!key) {
    const secret = readOrCreateKey(tenant.tokens.dir);
    if (secret.length < 32) throw new Error(`${join(tenant.tokens.dir, KEY_FILE)} holds a key shorter than 256 bits`);
    key = { kid: createHash('sha256').update(secret).digest('hex').slice(0, 12), secret: new Uint8Array(secret) };
    keys.set(tenant, key);
  }
  return key;
}

export async function signTicket(tenant: Tenant, claims: TicketClaims, nowMs: number): Promise<string> {
  const key = keyFor(tenant);
  const payload: Record<string, unknown> = { lens: claims.lens, scope: 'lens:render' };
  if (Object.keys(claims.params).length > 0) payload.params = claims.params;
  if (claims.label) payload.label = claims.label;
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'HS256', typ: TYP, kid: key.kid })
    .setIssuer(claims.org)
    .setSubject(claims.sharer)
    .setAudience(AUDIENCE)
    .setIssuedAt(Math.floor(nowMs / 1000))
    .setExpirationTime(Math.floor(claims.expMs / 1000))
    .setJti(randomBytes(12).toString('base64url'))
    .sign(key.secret);
}

function stringMap(value: unknown): Record<string, string> | null {
  if (value === undefined) return {};
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (typeof v !== 'string') return null;
    out[k] = v;
  }
  return out;
}

/**
 * Verifies a ticket blob against the key of the tenant it names; null for anything that is
 * not a live ticket of ours (bad shape, unknown tenant, bad signature, expired, wrong lens).
 */
export async function verifyTicket(
  services: KernelServices,
  blob: string,
  lensId: string,
): Promise<{ tenant: Tenant; claims: TicketClaims } | null> {
  if (blob.length === 0 || blob.length > MAX_TICKET_CHARS) return null;
  let org: unknown;
  try {
    org = decodeJwt(blob).iss; // unverified: only picks the tenant whose key checks the signature
  } catch {
    return null;
  }
  if (typeof org !== 'string') return null;
  const tenant = services.tenants.get(org);
  if (!tenant) return null;
  try {
    const { payload } = await jwtVerify(blob, keyFor(tenant).secret, {
      algorithms: ['HS256'],
      typ: TYP,
      issuer: org,
      audience: AUDIENCE,
      currentDate: new Date(services.clock.now()),
      requiredClaims: ['exp', 'iat', 'sub', 'jti'],
    });
    const params = stringMap(payload.params);
    if (payload.lens !== lensId || payload.scope !== 'lens:render' || typeof payload.sub !== 'string' || params === null) return null;
    const claims: TicketClaims = {
      org,
      lens: lensId,
      sharer: payload.sub,
      params,
      label: typeof payload.label === 'string' ? payload.label : null,
      expMs: payload.exp! * 1000,
    };
    return { tenant, claims };
  } catch {
    return null;
  }
}

/** Values of one cookie name in a Cookie header (several may be sent, most specific path first). */
export function cookieValues(header: string | undefined, name: string): string[] {
  if (!header) return [];
  const out: string[] = [];
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    if (value) out.push(value);
    if (out.length >= 5) break;
  }
  return out;
}

/** How a render request was authenticated by a ticket; absent for bearer requests. */
export interface TicketGrant {
  claims: TicketClaims;
  source: 'query' | 'cookie';
}

// Keyed by the actor object the authenticator hands the kernel: unforgeable by request data.
const grants = new WeakMap<Actor, TicketGrant>();

export function grantOf(actor: Actor): TicketGrant | undefined {
  return grants.get(actor);
}

/** The sharer as a read-only identity. It never reaches a write: only the render route accepts it. */
function ticketActor(tenant: Tenant, blob: string, claims: TicketClaims): Actor {
  const record: TokenRecord = {
    hash: createHash('sha256').update(blob).digest('hex'),
    kind: 'pat',
    person: claims.sharer,
    agent: null,
    session: null,
    label: 'render ticket',
    audience: AUDIENCE,
    created: new Date(0).toISOString(),
    expires: new Date(claims.expMs).toISOString(),
    revoked_at: null,
    last_used: null,
    minted_by: null,
    parent: null,
  };
  return actorFor(tenant, record);
}

/**
 * The kernel hook: on the render route of a lens, with no Authorization header, a `ticket`
 * query parameter (first hop) or the `svc_render_ticket` cookie authenticates as the sharer.
 */
export function ticketAuthenticator(services: KernelServices): TicketAuthenticator {
  return async (req: RouteRequest & { path: string }) => {
    const m = RENDER_PATH.exec(req.path);
    if (!m) return null;
    const lensId = m[1]!;
    const fromQuery = queryString(req.query.ticket);
    const candidates = fromQuery !== undefined ? [fromQuery] : cookieValues(req.headers.cookie, COOKIE_NAME);
    for (const blob of candidates) {
      const verified = await verifyTicket(services, blob, lensId);
      if (!verified) continue;
      const actor = ticketActor(verified.tenant, blob, verified.claims);
      grants.set(actor, { claims: verified.claims, source: fromQuery !== undefined ? 'query' : 'cookie' });
      return { tenant: verified.tenant, actor };
    }
    return null;
  };
}

/** `Secure` unless the server speaks plain HTTP on loopback (a browser drops Secure cookies on http). */
export function cookieIsSecure(services: KernelServices): boolean {
  const c = services.config;
  return Boolean(c.tlsCert) || c.allowHttp || !isLoopback(c.host);
}

export function ticketCookie(services: KernelServices, lensId: string, blob: string, maxAgeSeconds: number): string {
  const attrs = [
    `${COOKIE_NAME}=${blob}`,
    `Path=/v1/lens/${lensId}/render`,
    `Max-Age=${Math.max(0, maxAgeSeconds)}`,
    'HttpOnly',
    'SameSite=Lax',
  ];
  if (cookieIsSecure(services)) attrs.push('Secure');
  return attrs.join('; ');
}

/** The app's share-link host of a lens view (plugins/app): `/views/:id` and `/app/views/:id`. */
const VIEW_PATH = /^\/(?:app\/)?views\/[a-z0-9][a-z0-9-]*\/?$/;

/**
 * The tenant a ticket names (its unverified `iss`), for a request of the render route or of
 * the app's view pages that carries one (`?ticket=` first, else the `svc_render_ticket`
 * cookie); null for any other request. Routing only: the owner verifies the signature.
 */
export function ticketOrgOf(req: IncomingMessage): string | null {
  if (req.method !== 'GET' && req.method !== 'HEAD') return null;
  if (req.headers.authorization) return null;
  let url: URL;
  try {
    url = new URL(req.url ?? '/', 'http://x');
  } catch {
    return null;
  }
  if (!RENDER_PATH.test(url.pathname) && !VIEW_PATH.test(url.pathname)) return null;
  const fromQuery = url.searchParams.get('ticket');
  const candidates = fromQuery !== null ? [fromQuery] : cookieValues(req.headers.cookie, COOKIE_NAME);
  for (const blob of candidates) {
    if (blob.length === 0 || blob.length > MAX_TICKET_CHARS) continue;
    try {
      const iss = decodeJwt(blob).iss;
      if (typeof iss === 'string' && iss.length > 0) return iss;
    } catch {
      // not a JWT: the next candidate
    }
  }
  return null;
}

/** Cluster mode: a ticketed render (or app view) is served by the owner of the ticket's tenant. */
export const ticketRouter: RequestRouter = {
  applies: (req) => (ticketOrgOf(req) ? 'headers' : false),
  route: async (req) => {
    const org = ticketOrgOf(req);
    return org ? { org } : null;
  },
};
