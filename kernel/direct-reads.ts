/**
 * The direct read lane: routes a plugin marks `direct` (pure reads answered from memory, the node
 * read first) are answered from node's request event without the koa app, when the request is
 * ordinary: a GET whose path matches the route with no escaped character and no trailing slash,
 * a kernel bearer token that authenticates, a tenant for which the plugin is on, no plugin
 * middleware for the path, the Host/Origin check passed and no graceful stop under way.
 *
 * It runs the same code as the koa route for everything that decides the answer (the token
 * check, `invoke` with its input validation, read barrier and answer checks, the operation) and
 * answers the same bytes with the same headers in the same order (test/kernel/direct-reads.test.ts
 * compares both, request by request); the access line and the request metrics are the same too
 * (kernel/http-common.ts). What it leaves out is the framework's own work per request: koa's
 * context objects and middleware chain, @koa/router's matching and layer composition, the
 * allowed-methods pass. Measured: most of the gap to bare koa (docs/performance.md).
 *
 * Anything else goes to the koa app untouched, before a byte is written: every failure included
 * (no token, a bad one, an unknown node, a refused Host), so errors, their logging and their
 * metrics are the koa path's own. A failing request's operation then runs twice; that is why
 * only side-effect-free reads may be `direct`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { parse as parseQuery } from 'node:querystring';
import type { Actor } from './actor.js';
import { hostGuard, REQUEST_ID, requestRecorder } from './http-common.js';
import { restInput } from './http-answers.js';
import { invoke } from './operation.js';
import { RawResponse, serialize, StatusPayload, type KernelServices, type OpContext, type PluginDef, type RouteDef } from './plugin.js';
import type { Tenant } from './tenant.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * A RawResponse the lane can answer, prepared once: its headers as the flat list `writeHead`
 * takes and its body's byte length; null when it is koa's (see `prepare`). A cached answer (the
 * node read's, plugins/core/node-read-cache.ts) is the same instance for every hit, so a hot
 * node's headers are not listed and its body not measured again per request.
 */
const prepared = new WeakMap<RawResponse, { headers: string[]; length: string } | null>();

function prepare(result: RawResponse): { headers: string[]; length: string } | null {
  let p = prepared.get(result);
  if (p !== undefined) return p;
  // streams, redirects and bodies without a declared type (koa would name one) are koa's
  const body = result.body;
  if (result.attach || result.writesBody || !(typeof body === 'string' || Buffer.isBuffer(body))) p = null;
  else if (!Object.keys(result.headers).some((k) => k.toLowerCase() === 'content-type')) p = null;
  else
    p = {
      headers: Object.entries(result.headers).flat(),
      length: String(typeof body === 'string' ? Buffer.byteLength(body) : body.length),
    };
  prepared.set(result, p);
  return p;
}

/**
 * The operation context of a direct read: a class, so a request allocates one plain object (an
 * object literal with a getter took V8's slow path per request); `headers` is built on first use.
 */
class DirectContext implements OpContext {
  readonly via = 'rest' as const;
  private copied: Record<string, string | undefined> | null = null;
  constructor(
    readonly tenant: Tenant,
    readonly actor: Actor,
    readonly services: KernelServices,
    private readonly req: IncomingMessage,
  ) {}
  get headers(): Record<string, string | undefined> {
    if (!this.copied) {
      const headers: Record<string, string | undefined> = {};
      for (const [k, v] of Object.entries(this.req.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : v;
      this.copied = headers;
    }
    return this.copied;
  }
}

interface DirectRoute {
  plugin: PluginDef;
  route: RouteDef;
  /** answered here; a GET route that is not direct is listed too, so a path it matches first stays koa's */
  direct: boolean;
  /** the path's segments after the leading slash: a literal, or null for a parameter */
  literals: Array<string | null>;
  params: string[];
}

function compile(plugin: PluginDef, route: RouteDef): DirectRoute {
  const parts = route.path.slice(1).split('/');
  return {
    plugin,
    route,
    direct: route.direct === true && (route.auth ?? 'token') === 'token',
    literals: parts.map((p) => (p.startsWith(':') ? null : p)),
    params: parts.filter((p) => p.startsWith(':')).map((p) => p.slice(1)),
  };
}

/**
 * The GET routes a path can match, by its segment count and then its second segment (the first
 * is `v1` for all of them): a node read compares against a few routes rather than walking every
 * GET route the plugins declare. Each list keeps the routers' order.
 */
function routeTable(routes: DirectRoute[]): (parts: string[]) => DirectRoute[] {
  const byLength = new Map<number, { bySecond: Map<string, DirectRoute[]>; other: DirectRoute[] }>();
  for (const length of new Set(routes.map((r) => r.literals.length))) {
    const group = routes.filter((r) => r.literals.length === length);
    const wild = (r: DirectRoute) => length < 2 || r.literals[1] === null;
    const bySecond = new Map<string, DirectRoute[]>();
    for (const r of group)
      if (!wild(r) && !bySecond.has(r.literals[1]!))
        bySecond.set(
          r.literals[1]!,
          group.filter((g) => wild(g) || g.literals[1] === r.literals[1]),
        );
    byLength.set(length, { bySecond, other: group.filter(wild) });
  }
  const none: DirectRoute[] = [];
  return (parts) => {
    const g = byLength.get(parts.length);
    if (!g) return none;
    return (parts.length > 1 ? g.bySecond.get(parts[1]!) : undefined) ?? g.other;
  };
}

/** The first GET route that matches a path (no `%`, no trailing slash) and its parameters, or null. */
function match(candidates: (parts: string[]) => DirectRoute[], path: string): { hit: DirectRoute; params: Record<string, string> } | null {
  const parts = path.slice(1).split('/');
  for (const direct of candidates(parts)) {
    let ok = true;
    const params: Record<string, string> = {};
    let p = 0;
    for (let i = 0; i < parts.length && ok; i++) {
      const literal = direct.literals[i];
      const part = parts[i]!;
      if (literal === null) {
        if (part === '') ok = false;
        else params[direct.params[p++]!] = part;
      } else if (literal !== part) ok = false;
    }
    if (ok) return { hit: direct, params };
  }
  return null;
}

/** The koa app's callback with the direct lane in front (the same callback when no route is direct). */
export function withDirectReads(services: KernelServices, app: Handler): Handler {
  // every GET route in the order the koa routers have them: @koa/router answers with the first
  // route that matches, so the lane answers only a path whose first match is a direct route
  const routes: DirectRoute[] = [];
  for (const plugin of services.host.plugins)
    for (const route of plugin.routes ?? []) if (route.method === 'GET') routes.push(compile(plugin, route));
  // a plugin middleware that sees every request could answer any path: nothing is direct then
  const middleware = services.host.plugins.filter((p) => p.middleware);
  if (!routes.some((r) => r.direct) || middleware.some((p) => !p.middlewarePaths)) return app;
  const middlewarePrefixes = middleware.flatMap((p) => p.middlewarePaths!);
  const refusal = hostGuard(services);
  const record = requestRecorder(services);
  const candidates = routeTable(routes);

  const answer = async (req: IncomingMessage, res: ServerResponse, started: number, path: string, query: string | null): Promise<void> => {
    const found = match(candidates, path);
    if (!found || !found.hit.direct) return app(req, res);
    for (const prefix of middlewarePrefixes) if (path.startsWith(prefix)) return app(req, res);
    if (refusal(req.socket.localPort, path, req.headers)) return app(req, res);
    // the bearer header's hash, once per connection (kernel/tenants.ts `hashedHeader`); anything
    // but one of the kernel's tokens (a connector's JWT for a plugin's authenticator) is koa's
    const hashed = services.tenants.hashedHeader(req.socket, req.headers.authorization);
    if (!hashed) return app(req, res);
    let identity: { tenant: Tenant; actor: Actor };
    try {
      identity = services.tenants.authenticateHashed(hashed);
    } catch {
      return app(req, res);
    }
    const { hit: direct, params } = found;
    const { tenant, actor } = identity;
    if (!services.host.usable(tenant, direct.plugin)) return app(req, res);
    const op = direct.route.operation;
    const ctx = new DirectContext(tenant, actor, services, req);
    let result: unknown;
    try {
      const routeQuery = query === null ? {} : (parseQuery(query) as Record<string, string | string[] | undefined>);
      result = await invoke(op, ctx, restInput(op, direct.route, { params, query: routeQuery, body: undefined, headers: {} }));
    } catch {
      return app(req, res);
    }
    // the koa route's headers in its order: the front middleware's, then the answer's (a
    // RawResponse's in their order, else koa's type), then koa's length
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    const out = ['x-request-id', requestId, 'x-content-type-options', 'nosniff'];
    let status: number;
    let body: string | Buffer;
    let length: string | null = null;
    if (result instanceof RawResponse) {
      const ready = prepare(result);
      if (!ready) return app(req, res);
      status = result.status;
      body = result.body as string | Buffer;
      for (const h of ready.headers) out.push(h);
      length = ready.length;
    } else {
      status = direct.route.status ?? 200;
      let payload = result;
      if (result instanceof StatusPayload) {
        status = result.status;
        payload = result.payload;
      }
      body = serialize(payload);
      out.push('Content-Type', 'application/json; charset=utf-8');
    }
    // koa drops the body of these; only plain answers with a body come this way
    if (status < 200 || status >= 300 || status === 204 || status === 205) return app(req, res);
    out.push('Content-Length', length ?? String(typeof body === 'string' ? Buffer.byteLength(body) : body.length));
    // a graceful stop began while this request ran: the client must not reuse the connection
    if (services.closing) out.push('connection', 'close');
    res.writeHead(status, out);
    res.end(body);
    // the whole answer is with the socket now (end writes it at once): recorded here rather than
    // at the response's close, which would only add a listener and a tick per request
    record({
      method: 'GET',
      route: direct.route.path,
      status,
      started,
      tenant: tenant.org,
      actor: actor.agent ?? actor.personId,
      requestId,
    });
  };

  return (req, res) => {
    const url = req.url ?? '';
    if (req.method !== 'GET' || services.closing || !url.startsWith('/v1/') || url.includes('%')) return app(req, res);
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (path.endsWith('/')) return app(req, res);
    const started = performance.now();
    answer(req, res, started, path, q < 0 ? null : url.slice(q + 1)).catch((err: unknown) => {
      services.log.error('unhandled error', {
        method: 'GET',
        path,
        error: err instanceof Error ? (err.stack ?? err.message) : String(err),
      });
      if (!res.headersSent) app(req, res);
      else res.destroy();
    });
  };
}
