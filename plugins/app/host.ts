/**
 * The app's request plumbing: a small router over `/app/*` (and `/views/:id`, the share-link
 * host of docs/spec.md Lenses rule 4), form parsing with CSRF checks, sessions, security headers, and
 * errors turned into readable pages. Pages are functions from a request to a result.
 */
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type Koa from 'koa';
import type * as RateLimiterPackage from 'rate-limiter-flexible';
import type { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { readRawBody } from '../../kernel/body.js';
import { errors, isSvcError, SvcError } from '../../kernel/errors.js';
import type { KernelServices } from '../../kernel/plugin.js';
import { errorPage, type Viewer } from './html.js';
import { Bridge } from './operations-bridge.js';
import { cookieOf, sameSecret, SESSION_COOKIE, sessionStoreOf, type LiveSession, type SessionStore } from './session.js';

/** Whether the session's person may use the operator console: an admin, acting with their own credential (never an agent's). */
export function isConsoleAdmin(session: LiveSession): boolean {
  return session.actor.isAdmin && session.actor.agent === null;
}

/** Scripts only from this origin, never inline; no framing; forms post only here. */
export const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const FORM_LIMIT = 64 * 1024;

export interface AppRequest {
  method: string;
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  /** the urlencoded form of a POST (its CSRF token already checked) */
  form: URLSearchParams;
  headers: Record<string, string | undefined>;
  cookie: (name: string) => string | undefined;
  /** the client's address (the connection's; the app trusts no X-Forwarded-For) */
  ip: string;
}

/** A signed-in request: the person's operations and what the layout shows. */
export interface Signed {
  bridge: Bridge;
  viewer: Viewer;
  session: LiveSession;
  flash: { kind: 'ok' | 'error'; text: string } | null;
  /** keep a message for the next page of this session (after a redirect) */
  setFlash: (kind: 'ok' | 'error', text: string) => void;
}

export interface AppResult {
  status?: number;
  html?: string;
  redirect?: string;
  /** a stream is sent as it is produced (the event stream) */
  body?: Buffer | string | Readable;
  type?: string;
  cookies?: string[];
  cache?: string;
  /** further response headers (Retry-After) */
  headers?: Record<string, string>;
  /** a long-lived stream's hold on the node response (it may cut a client that stops reading) */
  attach?: (res: ServerResponse) => void;
}

export type PublicHandler = (req: AppRequest, host: AppHost) => Promise<AppResult>;
export type SignedHandler = (req: AppRequest, s: Signed, host: AppHost) => Promise<AppResult>;

interface Route {
  method: 'GET' | 'POST';
  pattern: RegExp;
  /** the route's pattern for access logs and metrics (never an id) */
  label: string;
  keys: string[];
  handler: PublicHandler | SignedHandler;
  signed: boolean;
  /** a POST without a session's CSRF token (sign-in checks its own) */
  ownCsrf?: boolean;
}

/**
 * A redirect target as a header may carry it: anything outside printable ASCII (a decoded
 * path parameter with `Ā` or a control character) percent-encoded, never a thrown
 * ERR_INVALID_CHAR (a 500); a lone surrogate, which has no encoding, is dropped.
 */
export function headerSafe(location: string): string {
  return location.replace(/[^\x21-\x7e]/gu, (c) => {
    try {
      return encodeURIComponent(c);
    } catch {
      return '';
    }
  });
}

function compile(path: string): { pattern: RegExp; keys: string[] } {
  const keys: string[] = [];
  const source = path.replace(/:([a-z]+)/g, (_m, k: string) => {
    keys.push(k);
    return '([^/]+)';
  });
  return { pattern: new RegExp(`^${source}/?$`), keys };
}

/**
 * rate-limiter-flexible, imported on first use. It is CommonJS: the bundle's chunk for it has only
 * a default export (its `module.exports`), and Node's `import()` has that default too.
 */
async function rateLimiterPackage(): Promise<typeof RateLimiterPackage> {
  const m = (await import('rate-limiter-flexible')) as typeof RateLimiterPackage & { default?: typeof RateLimiterPackage };
  return m.default ?? m;
}

export class AppHost {
  readonly sessions: SessionStore;
  private readonly routes: Route[] = [];
  private readonly flashes = new Map<string, { kind: 'ok' | 'error'; text: string }>();

  /**
   * Sign-in attempts per client address (SVC_SIGNIN_RATE a minute): each attempt takes a
   * point, a successful one gives it back, so only failures add up. In memory, per process.
   * The limiter's package is imported with the first sign-in, not at start (docs/performance.md).
   */
  private signinLimiter: Promise<RateLimiterMemory> | null = null;

  constructor(readonly services: KernelServices) {
    this.sessions = sessionStoreOf(services);
  }

  private limiter(): Promise<RateLimiterMemory> {
    return (this.signinLimiter ??= rateLimiterPackage().then(
      ({ RateLimiterMemory }) =>
        new RateLimiterMemory({ keyPrefix: 'app-signin', points: this.services.config.signinRatePerMinute, duration: 60 }),
      (err: unknown) => {
        this.signinLimiter = null; // the next attempt imports it again
        throw err;
      },
    ));
  }

  /** Takes a point of the address's sign-in budget: null, or the seconds to wait when it is spent. */
  async spendSigninPoint(ip: string): Promise<number | null> {
    const limiter = await this.limiter();
    try {
      await limiter.consume(ip);
      return null;
    } catch (err) {
      // a spent budget rejects with the limiter's answer (a RateLimiterRes), a failure with an Error
      if (err instanceof Error) throw err;
      return Math.max(1, Math.ceil((err as RateLimiterRes).msBeforeNext / 1000));
    }
  }

  /** Gives the point back: a sign-in that succeeded does not count against the address. */
  async refundSigninPoint(ip: string): Promise<void> {
    await (await this.limiter()).reward(ip, 1);
  }

  /**
   * Always Secure: Chromium and Firefox keep Secure cookies on http://localhost and 127.0.0.1
   * (potentially trustworthy origins; the browser tests check it), and anywhere else plain
   * HTTP is only served behind a TLS proxy (SVC_ALLOW_HTTP), where the browser sees https.
   */
  readonly secureCookies = true;

  cookie(name: string, value: string, opts: { path?: string; maxAge?: number; sameSite?: 'Lax' | 'Strict' } = {}): string {
    const attrs = [`${name}=${value}`, `Path=${opts.path ?? '/'}`, 'HttpOnly', `SameSite=${opts.sameSite ?? 'Lax'}`];
    if (opts.maxAge !== undefined) attrs.push(`Max-Age=${Math.max(0, Math.floor(opts.maxAge))}`);
    if (this.secureCookies) attrs.push('Secure');
    return attrs.join('; ');
  }

  get(path: string, handler: PublicHandler): void {
    this.add('GET', path, handler, false);
  }
  post(path: string, handler: PublicHandler, ownCsrf = true): void {
    this.add('POST', path, handler, false, ownCsrf);
  }
  getSigned(path: string, handler: SignedHandler): void {
    this.add('GET', path, handler, true);
  }
  postSigned(path: string, handler: SignedHandler): void {
    this.add('POST', path, handler, true);
  }

  private add(method: 'GET' | 'POST', path: string, handler: PublicHandler | SignedHandler, signed: boolean, ownCsrf = false): void {
    const { pattern, keys } = compile(path);
    this.routes.push({ method, pattern, keys, handler, signed, label: path, ownCsrf });
  }

  /**
   * `keepFlash`: a live page's background refresh (static/live.js sends `x-workgraph-live`): it
   * neither shows nor takes the one-time message, which belongs to the page the person's own
   * form post leads to (a refresh set off by that post's own event used to take it first)
   */
  signedFor(session: LiveSession, opts?: { keepFlash: boolean }): Signed {
    const flash = opts?.keepFlash ? null : (this.flashes.get(session.key) ?? null);
    if (!opts?.keepFlash) this.flashes.delete(session.key);
    return {
      bridge: new Bridge(this.services, session.tenant, session.actor),
      viewer: {
        name: session.actor.name,
        org: session.tenant.org,
        personId: session.actor.personId,
        csrf: session.record.csrf,
        admin: isConsoleAdmin(session),
      },
      session,
      flash,
      setFlash: (kind, text) => {
        this.flashes.set(session.key, { kind, text });
        if (this.flashes.size > 10_000) this.flashes.delete(this.flashes.keys().next().value!);
      },
    };
  }

  async handle(ctx: Koa.Context): Promise<void> {
    const headers: Record<string, string | undefined> = {};
    for (const [k, v] of Object.entries(ctx.request.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    const cookie = (name: string) => cookieOf(headers.cookie, name);
    let session: LiveSession | null = null;
    let result: AppResult;
    const label = { value: ctx.path.startsWith('/views/') ? '/views/:id' : '/app (unmatched)' };
    try {
      session = await this.sessions.resolve(cookie(SESSION_COOKIE));
      result = await this.dispatch(ctx, headers, cookie, session, label);
    } catch (err) {
      const svcErr = isSvcError(err) ? err : errors.internal();
      if (!isSvcError(err))
        this.services.log.error('app page failed', {
          route: label.value,
          error: err instanceof Error ? (err.stack ?? err.message) : String(err),
        });
      result = this.errorResult(svcErr, session);
    }
    (ctx as Koa.Context & { _matchedRoute?: string })._matchedRoute = label.value;
    if (session) {
      ctx.state.tenant = session.tenant.org;
      ctx.state.actor = session.actor.personId;
    }
    this.send(ctx, result);
  }

  errorResult(err: SvcError, session: LiveSession | null): AppResult {
    const viewer = session
      ? {
          name: session.actor.name,
          org: session.tenant.org,
          personId: session.actor.personId,
          csrf: session.record.csrf,
          admin: isConsoleAdmin(session),
        }
      : null;
    return { status: err.status, html: errorPage(err, viewer) };
  }

  private async dispatch(
    ctx: Koa.Context,
    headers: Record<string, string | undefined>,
    cookie: (name: string) => string | undefined,
    session: LiveSession | null,
    label: { value: string },
  ): Promise<AppResult> {
    const path = ctx.path;
    let allowed = false;
    for (const route of this.routes) {
      const m = route.pattern.exec(path);
      if (!m) continue;
      allowed = true;
      if (route.method !== ctx.method && !(route.method === 'GET' && ctx.method === 'HEAD')) continue;
      label.value = route.label;
      const params: Record<string, string> = {};
      route.keys.forEach((k, i) => {
        try {
          params[k] = decodeURIComponent(m[i + 1]!);
        } catch {
          throw errors.badRequest('the address is not well-formed (bad percent-encoding)');
        }
      });
      let form = new URLSearchParams();
      if (route.method === 'POST') {
        const type = headers['content-type'] ?? '';
        if (!type.startsWith('application/x-www-form-urlencoded'))
          throw errors.badRequest('forms are posted as application/x-www-form-urlencoded');
        form = new URLSearchParams((await readRawBody(ctx.req, FORM_LIMIT)).toString('utf8'));
      }
      const req: AppRequest = {
        method: ctx.method,
        path,
        params,
        query: new URLSearchParams(ctx.querystring),
        form,
        headers,
        cookie,
        ip: ctx.ip,
      };
      if (!route.signed) return (route.handler as PublicHandler)(req, this);
      if (!session) {
        if (route.method === 'GET')
          return { redirect: `/app/signin?next=${encodeURIComponent(ctx.path + (ctx.querystring ? `?${ctx.querystring}` : ''))}` };
        throw errors.unauthorized();
      }
      if (route.method === 'POST' && !sameSecret(form.get('csrf') ?? undefined, session.record.csrf)) {
        throw new SvcError(
          403,
          'csrf_failed',
          'this form was not sent by this app (or your session changed); reload the page and try again',
        );
      }
      const signed = this.signedFor(session, { keepFlash: route.method === 'GET' && headers['x-workgraph-live'] === '1' });
      if (!signed.bridge.has('app')) throw errors.notFound('the app (its plugin is not enabled for this tenant)');
      signed.viewer.live = signed.bridge.has('events');
      // the header's unread count on every page; an inbox that cannot answer leaves the page without it
      if (route.method === 'GET')
        signed.viewer.unread = await signed.bridge.unreadCount().catch((err: unknown) => {
          this.services.log.warn('app: the inbox count failed', { error: err instanceof Error ? err.message : String(err) });
          return undefined;
        });
      return (route.handler as SignedHandler)(req, signed, this);
    }
    if (allowed) throw new SvcError(405, 'method_not_allowed', `${ctx.method} is not allowed here`);
    throw errors.notFound(`page ${path}`);
  }

  private send(ctx: Koa.Context, result: AppResult): void {
    ctx.set('x-content-type-options', 'nosniff');
    ctx.set('referrer-policy', 'no-referrer');
    ctx.set('x-frame-options', 'DENY');
    ctx.set('content-security-policy', CSP);
    if (result.cookies?.length) ctx.set('set-cookie', result.cookies);
    for (const [k, v] of Object.entries(result.headers ?? {})) ctx.set(k, v);
    if (result.redirect) {
      ctx.status = result.status ?? 303;
      ctx.set('location', headerSafe(result.redirect));
      ctx.set('cache-control', 'no-store');
      ctx.body = '';
      return;
    }
    ctx.status = result.status ?? 200;
    ctx.set('cache-control', result.cache ?? 'private, no-store');
    if (result.html !== undefined) {
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = result.html;
    } else {
      ctx.type = result.type ?? 'application/octet-stream';
      ctx.body = result.body ?? '';
      result.attach?.(ctx.res);
    }
  }
}
