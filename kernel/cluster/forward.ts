/**
 * Cluster mode's front door: any process accepts any request. A request is routed by the
 * tenant of its bearer token (looked up by hash: the open tenants' tokens, then
 * `wg_tokens`); one for a tenant owned by another member is forwarded to it whole, the
 * answer streamed back as it comes (MCP's Streamable HTTP SSE streams included), so REST and
 * MCP clients never see the difference. Requests without a bearer token are routed by the
 * plugins' routers (the app's session cookie and sign-in form, render tickets, the OAuth
 * consent and token requests: `services.requestRouters`); the rest (public documents,
 * health, OAuth discovery and registration, static files) are served where they arrive.
 *
 * Why forward rather than redirect: clients (MCP SDKs, curl without -L, browsers posting
 * JSON) do not follow a 307 reliably, bearer tokens must not be re-sent to an address the
 * client did not choose, and members' addresses are internal. The cost is one extra local
 * hop, measured in docs/performance.md.
 *
 * A member that refuses the connection (it died) is retried until its lease runs out and the
 * tenant is taken over (by this process, when it claims it first). A request whose owner died
 * after it was sent gets 503 `owner_unavailable` unless it is a GET (retried): the write may
 * or may not have been applied, exactly as with a crash of a single server.
 */
import { request as httpRequest, Agent, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from '../config.js';
import type { RequestRouter } from '../plugin.js';
import type { TenantManager } from '../tenants.js';
import type { Cluster } from './ownership.js';

export const HOP_HEADER = 'x-workgraph-hop';
const LOCAL_HEADER = 'x-workgraph-local';
const LOCAL_ORG_HEADER = 'x-workgraph-local-org';
/** what a router may read of a request without a bearer token (sign-in and OAuth forms are small) */
const ROUTER_BODY_LIMIT = 1024 * 1024;
/** a request is forwarded at most this many times (ownership moving twice while it travels) */
const MAX_HOPS = 2;
const RETRYABLE_CONNECT = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);
/** request headers that describe one connection, not the request */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer']);

export interface ForwardOptions {
  cluster: Cluster;
  tenants: TenantManager;
  pool: pg.Pool;
  log: Logger;
  /** how long a request waits for a take-over or hand-off in progress (ms) */
  waitMs: number;
  /** this process's own listener (a request read for forwarding that ends up served here is sent to it) */
  selfUrl: () => string;
  /** called for requests served here */
  local: (req: IncomingMessage, res: ServerResponse) => void;
  /** the plugins' routers of requests without a bearer token (services.requestRouters) */
  routers: () => RequestRouter[];
  /** cluster mode's token refresh: make sure a token minted elsewhere is known to the open tenant */
  ensureToken?: (org: string, hash: string) => Promise<void>;
}

function sendError(res: ServerResponse, status: number, code: string, message: string, retryAfter?: number): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify({ error: { code, message, details: {} } });
  const headers: Record<string, string | number> = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-content-type-options': 'nosniff',
  };
  if (retryAfter) headers['retry-after'] = retryAfter;
  res.writeHead(status, headers);
  res.end(body);
}

/** The whole body; past `limit` bytes the rest is not read into memory (the served request fails its own size check). */
async function readBody(req: IncomingMessage, limit = Infinity): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw Object.assign(new Error('request body too large to route'), { status: 413 });
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * The request-target as the owner is sent it: always a path. The forward's destination is the
 * owner's URL alone; building it from the request-target (`new URL(req.url, owner)`) sent a
 * request for `//host/...` or in absolute form (`http://host/...`), bearer token and all, to
 * whatever host the client named, and piped that host's answer back (SSRF). An absolute-form
 * target keeps its path and query; `*` and anything unparsable become `/`.
 */
function originForm(url: string | undefined): string {
  if (url === undefined || url === '') return '/';
  if (url.startsWith('/')) return url;
  try {
    const parsed = new URL(url);
    return `${parsed.pathname}${parsed.search}`;
  } catch {
    return '/';
  }
}

/** A request that carries no body by its framing (RFC 9112 6.3: neither Content-Length nor Transfer-Encoding). */
function bodiless(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length === undefined || length === '0') && req.headers['transfer-encoding'] === undefined;
}

/** A member's URL as request options need it, parsed once per URL (members are few). */
const targets = new Map<string, { https: boolean; hostname: string; port: string }>();
function targetOf(url: string): { https: boolean; hostname: string; port: string } {
  let t = targets.get(url);
  if (!t) {
    const u = new URL(url);
    const https = u.protocol === 'https:';
    t = { https, hostname: u.hostname.replace(/^\[|\]$/g, ''), port: u.port || (https ? '443' : '80') };
    if (targets.size >= 1000) targets.clear();
    targets.set(url, t);
  }
  return t;
}

export function clusterRequestHandler(opts: ForwardOptions): (req: IncomingMessage, res: ServerResponse) => void {
  /** marks a request this process sent to its own listener (a client cannot guess it) */
  const localSecret = randomBytes(16).toString('hex');
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: 256 });
  /** token hash -> org, for tokens of tenants open elsewhere (a hash never changes tenant) */
  const orgCache = new Map<string, string>();

  const orgOf = async (hash: string): Promise<string | null> => {
    const local = opts.tenants.orgOfTokenHash(hash);
    if (local) return local;
    const cached = orgCache.get(hash);
    if (cached) return cached;
    const r = await opts.pool.query<{ org: string }>('SELECT org FROM wg_tokens WHERE hash = $1', [hash]);
    const org = r.rows[0]?.org ?? null;
    if (org) {
      if (orgCache.size >= 50_000) orgCache.delete(orgCache.keys().next().value!);
      orgCache.set(hash, org);
    }
    return org;
  };

  /** One attempt at the owner: resolves 'sent' once the answer is streaming back, or the failure. */
  const forwardOnce = (
    req: IncomingMessage,
    res: ServerResponse,
    target: string,
    body: Buffer | null,
    hop: number,
    toSelf = false,
    org: string | null = null,
  ): Promise<'sent' | { error: NodeJS.ErrnoException; connected: boolean }> =>
    new Promise((resolve) => {
      const to = targetOf(target);
      const headers: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) headers[k] = v;
      headers[HOP_HEADER] = String(hop + 1);
      if (toSelf) {
        headers[LOCAL_HEADER] = localSecret;
        if (org) headers[LOCAL_ORG_HEADER] = org;
      }
      const forwardedFor = req.socket.remoteAddress ?? '';
      headers['x-forwarded-for'] = req.headers['x-forwarded-for']
        ? `${String(req.headers['x-forwarded-for'])}, ${forwardedFor}`
        : forwardedFor;
      if (body) headers['content-length'] = String(body.length);
      const send = to.https ? httpsRequest : httpRequest;
      let connected = false;
      const options = {
        hostname: to.hostname,
        port: to.port,
        path: originForm(req.url),
        method: req.method,
        headers,
        agent: to.https ? httpsAgent : agent,
      };
      const upstream = send(options, (answer) => {
        const out: Record<string, string | string[]> = {};
        for (const [k, v] of Object.entries(answer.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
        res.writeHead(answer.statusCode ?? 502, out);
        // an event stream's headers go out now (its first event may be long in coming); any other
        // answer's headers leave with its first bytes, in one write (each socket write is a syscall)
        if (String(answer.headers['content-type'] ?? '').startsWith('text/event-stream')) res.flushHeaders();
        answer.pipe(res);
        answer.on('error', () => res.destroy());
        resolve('sent');
      });
      upstream.on('socket', (socket) => {
        if (!socket.connecting) connected = true;
        else socket.once('connect', () => (connected = true));
      });
      // one close listener per live attempt: a failed attempt removes its own before the retry
      // adds the next (a fail-over retries many times on the same response)
      const abandonUpstream = () => {
        if (!res.writableFinished) upstream.destroy();
      };
      res.on('close', abandonUpstream);
      upstream.on('error', (error: NodeJS.ErrnoException) => {
        res.off('close', abandonUpstream);
        resolve({ error, connected });
      });
      if (body) upstream.end(body);
      else if (bodiless(req)) {
        // nothing to stream: the request leaves now, not a tick after the client's request ends
        // through a pipe (its machinery was 15-20 µs of a forwarded read's CPU in a profile)
        upstream.end();
        req.resume();
      } else req.pipe(upstream);
    });

  /** Which tenant a request is for: its bearer token, else the plugins' routers (which may read the body). */
  const tenantOf = async (req: IncomingMessage): Promise<{ org: string | null; hash: string | null; body: Buffer | null }> => {
    const forwarded = (Number(req.headers[HOP_HEADER] ?? 0) || 0) > 0;
    const hashed = opts.tenants.hashedHeader(req.socket, req.headers.authorization);
    if (hashed) return { org: await orgOf(hashed.hash), hash: hashed.hash, body: null };
    let body: Buffer | null = null;
    for (const router of opts.routers()) {
      const needs = router.applies(req);
      if (!needs) continue;
      if (needs === 'body' && body === null) body = await readBody(req, ROUTER_BODY_LIMIT);
      const found = await router.route(req, body, { fresh: forwarded });
      if (!found) continue;
      if ('org' in found) return { org: found.org, hash: null, body };
      const org = await orgOf(found.tokenHash);
      if (org) return { org, hash: found.tokenHash, body };
    }
    return { org: null, hash: null, body };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // sent back to this process by itself (below): served here, no routing again
    if (req.headers[LOCAL_HEADER] === localSecret) {
      const org = req.headers[LOCAL_ORG_HEADER];
      if (typeof org === 'string') res.on('close', opts.cluster.enter(org));
      return opts.local(req, res);
    }
    const routed = await tenantOf(req);
    const { org, hash } = routed;
    // Read only when the request goes elsewhere (so it can be re-sent if that member died);
    // a request served here streams straight into the app. Once read, a request that ends
    // up served here after all (this process took the tenant over, or a router read it) is
    // sent to this process's own listener.
    let body: Buffer | null = routed.body;
    if (!org) return body === null ? opts.local(req, res) : void (await forwardOnce(req, res, opts.selfUrl(), body, 0, true));
    const hop = Number(req.headers[HOP_HEADER] ?? 0) || 0;
    const idempotent = req.method === 'GET' || req.method === 'HEAD';
    if (body === null && opts.cluster.localTenant(org)) {
      // served here (the common case once placement settled): no wait, no table
      if (hash) await opts.ensureToken?.(org, hash);
      res.on('close', opts.cluster.enter(org));
      return opts.local(req, res);
    }
    const deadline = performance.now() + opts.waitMs;
    let lastError = '';
    for (;;) {
      // a request another member sent here, or a second attempt, reads where the tenant is afresh
      const route = await opts.cluster.route(org, Math.max(0, deadline - performance.now()), hop > 0 || lastError !== '');
      if (route.kind === 'local' && hash) await opts.ensureToken?.(org, hash);
      if ((route.kind === 'local' || route.kind === 'unknown') && body === null) {
        if (route.kind === 'local') res.on('close', opts.cluster.enter(org));
        return opts.local(req, res);
      }
      if (route.kind === 'unavailable')
        return sendError(
          res,
          503,
          'owner_unavailable',
          `${route.reason}${lastError ? ` (${lastError})` : ''}; retry shortly`,
          Math.ceil(opts.cluster.leaseMs / 1000),
        );
      const target = route.kind === 'remote' ? route.url : opts.selfUrl();
      if (route.kind === 'remote' && hop >= MAX_HOPS) {
        // forwarded here by members that each thought another one served it: the tenant is being
        // handed over; wait for it to settle rather than bounce the request on
        opts.cluster.forget(org);
        lastError = `tenant ${org} is moving between processes`;
        if (performance.now() >= deadline) return sendError(res, 503, 'owner_unavailable', `${lastError}; retry shortly`, 1);
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      if (body === null && !idempotent) body = await readBody(req);
      const outcome = await forwardOnce(req, res, target, body, hop, route.kind !== 'remote', org);
      if (outcome === 'sent') return;
      opts.cluster.forget(org);
      const owner = route.kind === 'remote' ? route.owner : 'this process';
      lastError = `${owner}: ${outcome.error.code ?? outcome.error.message}`;
      const retry =
        RETRYABLE_CONNECT.has(outcome.error.code ?? '') || (idempotent && !res.headersSent) || (!outcome.connected && body !== null);
      if (!retry || performance.now() >= deadline) {
        return sendError(
          res,
          503,
          'owner_unavailable',
          `the process serving tenant ${org} failed while handling the request (${lastError}); a write may or may not have been applied`,
          1,
        );
      }
      opts.log.warn('forward failed; waiting for the tenant to be taken over', {
        org,
        owner,
        error: outcome.error.code ?? outcome.error.message,
      });
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  /**
   * The common case without a promise: a bearer token of a tenant this process serves and
   * knows the token of (what `handle` would find after its awaits, with nothing to wait for).
   */
  const servedHere = (req: IncomingMessage, res: ServerResponse): boolean => {
    if (req.headers[LOCAL_HEADER] !== undefined) return false;
    // hashed once per connection (kernel/tenants.ts `hashedHeader`), as the app behind it hashes it
    const hashed = opts.tenants.hashedHeader(req.socket, req.headers.authorization);
    if (!hashed) return false;
    const org = opts.tenants.orgOfTokenHash(hashed.hash);
    if (!org || !opts.cluster.localTenant(org)) return false;
    // `on`, not `once`: a response closes once and the leave is idempotent, and once's wrapper
    // and removal were 0.7 µs of a read's CPU in a profile (docs/performance.md)
    res.on('close', opts.cluster.enter(org));
    opts.local(req, res);
    return true;
  };

  return (req, res) => {
    if (servedHere(req, res)) return;
    handle(req, res).catch((err) => {
      if ((err as { status?: number }).status === 413)
        return sendError(res, 413, 'too_large', `request body exceeds ${ROUTER_BODY_LIMIT} bytes`);
      opts.log.error('cluster routing failed', { error: String(err) });
      sendError(res, 503, 'owner_unavailable', 'the cluster could not route this request; retry shortly', 1);
    });
  };
}
