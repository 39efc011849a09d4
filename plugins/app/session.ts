/**
 * Browser sessions of the app. A session is a random id in an HttpOnly cookie; the server
 * keeps only its SHA-256, with the hash of the personal access token the person signed in
 * with (never the token) for each tenant signed in to, the current tenant, and a CSRF token.
 * Every request re-checks the token record, so revoking the token, offboarding, or its expiry
 * ends the session at once. Stored server-wide (a person signs in before a tenant is known)
 * in the global store `app` (SVC_DATA_DIR/app/sessions.json, or PostgreSQL in cluster mode).
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

export class SessionStore {
  private readonly records: Collection<StoredSession>;

  constructor(private readonly services: KernelServices) {
    this.records = globalStore(services, 'app').collection<StoredSession>('sessions');
  }

  private now(): number {
    return this.services.clock.now();
  }

  /** A new session for a tenant and token hash; returns the cookie value (shown to nobody else). */
  async create(org: string, patHash: string): Promise<{ id: string; record: StoredSession }> {
    const id = randomToken();
    const now = this.now();
    const record: StoredSession = { tenants: { [org]: patHash }, current: org, csrf: randomToken(), created_ms: now, expires_ms: now + SESSION_TTL_MS, seen_ms: now };
    this.sweep(now);
    await this.records.set(sha256(id), record);
    return { id, record };
  }

  /** Adds a tenant to a live session and makes it current. */
  async addTenant(session: LiveSession, org: string, patHash: string): Promise<void> {
    const record: StoredSession = { ...session.record, tenants: { ...session.record.tenants, [org]: patHash }, current: org };
    await this.records.set(session.key, record);
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
    write.catch((err: unknown) => this.services.log.error('app session store write failed', { error: err instanceof Error ? err.message : String(err) }));
  }
}
