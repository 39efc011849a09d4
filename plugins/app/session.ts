/**
 * Browser sessions of the app. A session is a random id in an HttpOnly cookie; the server
 * keeps only its SHA-256, with the hash of the personal access token the person signed in
 * with (never the token; for a sign-in link or OpenID Connect, of the token record made for the
 * session, plugins/identity/signin-links.ts) for each tenant signed in to, the current tenant, and a CSRF token.
 * Every request re-checks the token record, so revoking the token, offboarding, or its expiry
 * ends the session at once. Stored server-wide (a person signs in before a tenant is known)
 * in the global store `app` (SVC_DATA_DIR/app/sessions.json, or PostgreSQL in cluster mode).
 * In cluster mode a request with the cookie is routed to the process that owns the session's
 * current tenant (router.ts), which is where the token can be checked.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isLive } from '../../kernel/auth.js';
import type { Actor } from '../../kernel/actor.js';
import { globalStore, type KernelServices } from '../../kernel/plugin.js';
import type { Collection } from '../../kernel/state-store.js';
import type { Tenant } from '../../kernel/tenant.js';
import { actorFor } from '../../kernel/tenants.js';

export const SESSION_COOKIE = 'svc_app_session';
export const SIGNIN_CSRF_COOKIE = 'svc_app_csrf';
/** absolute session lifetime: a person signs in again after a week */
export const SESSION_TTL_MS = 7 * 24 * 3600 * 1000;
/** a stored session's `seen_ms` is refreshed at most this often (one durable write) */
const SEEN_EVERY_MS = 5 * 60 * 1000;

export interface StoredSession {
  /** org -> hash of the PAT signed in with for that tenant */
  tenants: Record<string, string>;
  current: string;
  csrf: string;
  created_ms: number;
  expires_ms: number;
  seen_ms: number;
}

export interface LiveSession {
  key: string;
  record: StoredSession;
  tenant: Tenant;
  actor: Actor;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
export const randomToken = () => randomBytes(32).toString('base64url');

export function sameSecret(a: string | undefined, b: string | undefined): boolean {
  if (typeof a !== 'string' || typeof b !== 'string' || a.length === 0) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Values of one cookie in a Cookie header. */
export function cookieOf(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

const stores = new WeakMap<KernelServices, SessionStore>();

/** The server's one session store (the app's pages and its cluster router share it). */
export function sessionStoreOf(services: KernelServices): SessionStore {
  let store = stores.get(services);
  if (!store) stores.set(services, (store = new SessionStore(services)));
  return store;
}

export class SessionStore {
  private readonly records: Collection<StoredSession>;

  constructor(private readonly services: KernelServices) {
    this.records = globalStore(services, 'app').collection<StoredSession>('sessions');
  }

  /** Cluster mode: a tenant that is not open here is served by another process, not gone. */
  private get clustered(): boolean {
    return Boolean(this.services.tenants.options.operational);
  }

  /**
   * The unexpired record of a cookie, whichever process serves its tenants (read through):
   * for routing a request to the owner of the session's current tenant, and for adding a
   * tenant to a session whose current tenant another process serves. Checks no token.
   */
  async recordOf(cookie: string | undefined, opts?: { fresh: boolean }): Promise<{ key: string; record: StoredSession } | null> {
    if (!cookie || cookie.length > 100) return null;
    const key = sha256(cookie);
    const record = await this.records.fetch(key, opts);
    return record && this.now() < record.expires_ms ? { key, record } : null;
  }

  /** Cluster mode: the record of a live-looking session whose current tenant another process serves (else null). */
  async elsewhere(cookie: string | undefined): Promise<{ key: string; record: StoredSession } | null> {
    if (!this.clustered) return null;
    const found = await this.recordOf(cookie);
    return found && !this.services.tenants.get(found.record.current) ? found : null;
  }

  private now(): number {
    return this.services.clock.now();
  }

  /**
   * A sign-in: always a new session id and CSRF token (a session id known before the sign-in,
   * say a cookie planted by someone else, must never become a signed-in session). The tenants
   * of the browser's previous session, if any, are carried into the new record beside the one
   * signed in to now, which becomes current; the previous record is deleted, so its id is dead.
   */
  async signIn(
    previous: Pick<LiveSession, 'key' | 'record'> | null,
    org: string,
    patHash: string,
    /** further tenants signed in to at once (an OpenID Connect email that is a person in several) */
    others: Record<string, string> = {},
  ): Promise<{ id: string; record: StoredSession }> {
    const id = randomToken();
    const now = this.now();
    const record: StoredSession = {
      tenants: { ...(previous?.record.tenants ?? {}), ...others, [org]: patHash },
      current: org,
      csrf: randomToken(),
      created_ms: now,
      expires_ms: now + SESSION_TTL_MS,
      seen_ms: now,
    };
    this.sweep(now);
    await this.records.batch([{ key: sha256(id), value: record }, ...(previous ? [{ key: previous.key, value: null }] : [])]);
    return { id, record };
  }

  async switchTo(session: LiveSession, org: string): Promise<boolean> {
    if (!session.record.tenants[org]) return false;
    await this.records.set(session.key, { ...session.record, current: org });
    return true;
  }

  async destroy(session: LiveSession): Promise<void> {
    await this.records.delete(session.key);
  }

  /**
   * The live session of a cookie value: unknown, expired, or a token that no longer
   * authenticates (revoked, expired, person gone) is none, and a dead record is dropped.
   * Reads through on a local miss: a session another server process created.
   */
  async resolve(cookie: string | undefined): Promise<LiveSession | null> {
    if (!cookie || cookie.length > 100) return null;
    const key = sha256(cookie);
    const record = await this.records.fetch(key);
    if (!record) return null;
    const now = this.now();
    const tenant = this.services.tenants.get(record.current);
    // Cluster mode: the tenant is open in another process (the request should have been routed
    // there); the session is not this process's to judge, so it stays.
    if (!tenant && this.clustered && now < record.expires_ms) return null;
    const patHash = record.tenants[record.current];
    const token = tenant && patHash ? tenant.tokens.find(patHash) : undefined;
    if (now >= record.expires_ms || !tenant || !token || !isLive(token, now)) {
      this.background(this.records.delete(key));
      return null;
    }
    tenant.tokens.touch(token.hash, now);
    if (now - record.seen_ms > SEEN_EVERY_MS) this.background(this.records.set(key, { ...record, seen_ms: now }));
    return { key, record, tenant, actor: actorFor(tenant, token) };
  }

  /** Drops expired records (on each sign-in: a handful of entries per person). */
  private sweep(now: number): void {
    const dead: Array<{ key: string; value: null }> = [];
    for (const [key, r] of this.records.entries()) if (now >= r.expires_ms) dead.push({ key, value: null });
    if (dead.length > 0) this.background(this.records.batch(dead));
  }

  /** Housekeeping writes nobody waits for: a failure is logged, never an unhandled rejection. */
  private background(write: Promise<void>): void {
    write.catch((err: unknown) =>
      this.services.log.error('app session store write failed', { error: err instanceof Error ? err.message : String(err) }),
    );
  }
}
