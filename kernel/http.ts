/**
 * The REST adapter (koa): error envelope, body limit, bearer authentication, one route
 * per plugin operation (404 where the plugin is disabled for the caller's tenant),
 * `/healthz`, and the Streamable HTTP MCP endpoint at `/mcp`.
 */
import Router from '@koa/router';
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import Koa from 'koa';
import type { ServerResponse } from 'node:http';
import type { Actor } from './actor.js';
import { parseJsonBody, readMcpBody, readRawBody, tooLargeRpcAnswer } from './body.js';
import { errors, isSvcError, SvcError } from './errors.js';
import { BODY_METHODS, prefersHtml, restInput, send, sendError, sendErrorPage } from './http-answers.js';
import { bearer, hostGuard, JWT_SHAPE, REQUEST_ID, requestRecorder } from './http-common.js';
import { buildMcpServer } from './mcp.js';
import { credentialOf, McpSessions } from './mcp-sessions.js';
import { invoke } from './operation.js';
import { serialize, type KernelServices, type OpContext, type PluginDef, type RouteDef, type RouteRequest } from './plugin.js';
import type { Tenant } from './tenant.js';

/** Each app's MCP sessions, ended when its server stops (closeMcpSessions). */
const appSessions = new WeakMap<Koa, McpSessions>();

/**
 * The signal of an operation's context, aborted when the client's connection closes; made on
 * first use. Few operations look at it (the waiting ones), and an AbortController per request
 * plus the DOMException its abort builds at every response's close was a measurable share of a
 * read's CPU (docs/performance.md).
 */
export function clientGone(res: ServerResponse): () => AbortSignal {
  let controller: AbortController | null = null;
  return () => {
    if (!controller) {
      const made = new AbortController();
      controller = made;
      if (res.closed) made.abort();
      else res.once('close', () => made.abort());
    }
    return controller.signal;
  };
}

export function closeMcpSessions(app: Koa): void {
  appSessions.get(app)?.closeAll();
}

/** A JSON-RPC `initialize` request (alone or first in a batch). */
function isInitialize(body: unknown): boolean {
  const first: unknown = Array.isArray(body) ? body[0] : body;
  return typeof first === 'object' && first !== null && (first as { method?: unknown }).method === 'initialize';
}

function headersOf(ctx: Koa.Context): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(ctx.request.headers)) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/** The matched route's pattern (`/v1/nodes/:id`), or a fixed word: ids and tickets never reach a label or a log. */
function routePattern(ctx: Koa.Context): string {
  const matched = (ctx as Koa.Context & { _matchedRoute?: string | RegExp })._matchedRoute;
  if (typeof matched === 'string') return matched;
  return ctx.path === '/mcp' ? '/mcp' : 'unmatched';
}

function noteIdentity<T extends { tenant: Tenant; actor: Actor }>(ctx: Koa.Context, identity: T): T {
  ctx.state.tenant = identity.tenant.org;
  ctx.state.actor = identity.actor.agent ?? identity.actor.personId;
  return identity;
}

/** The Prometheus text exposition of this process. */
export async function serveMetrics(ctx: Koa.Context, services: KernelServices): Promise<void> {
  ctx.type = services.metrics.contentType;
  ctx.set('cache-control', 'no-store');
  ctx.body = await services.metrics.text();
}

/** The separate metrics listener (METRICS_PORT): `GET /metrics`, nothing else. */
export function createMetricsApp(services: KernelServices): Koa {
  const app = new Koa();
  app.use(async (ctx) => {
    if (ctx.method !== 'GET' || ctx.path !== '/metrics') {
      ctx.status = 404;
      ctx.type = 'application/json';
      ctx.body = serialize(errors.notFound(`route ${ctx.method} ${ctx.path}`).envelope());
      return;
    }
    await serveMetrics(ctx, services);
  });
  return app;
}

export function createApp(services: KernelServices): Koa {
  const app = new Koa();
  const metricsTokenHash = services.config.metricsToken ? createHash('sha256').update(services.config.metricsToken).digest() : null;
  app.proxy = false;
  // A client that goes away mid-stream is not a server fault; anything else is logged.
  const CLIENT_GONE = new Set(['ERR_STREAM_PREMATURE_CLOSE', 'EPIPE', 'ECONNRESET', 'ECONNABORTED']);
  app.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code && CLIENT_GONE.has(err.code)) return;
    services.log.error('response error', { error: err.stack ?? err.message });
  });
  // One router per first segment after /v1/ (`nodes`, `queue`, ...) and number of segments,
  // plus one for the rest: @koa/router tests every route's pattern on every request, so a
  // request only meets the routes that share its first segment and its length (`/v1/nodes/:id`
  // not the sixteen `/v1/nodes/:id/...` routes). No route has a wildcard or an optional part, so
  // a route matches paths of its own length only (a trailing slash is not counted, as the router
  // ignores it); all routes of one path are in the same group, so 405 answers stay whole.
  const groups = new Map<string, Router>();
  const groupOf = (path: string): string => {
    if (!path.startsWith('/v1/')) return '';
    const end = path.indexOf('/', 4);
    let segments = 1;
    const last = path.endsWith('/') ? path.length - 1 : path.length;
    for (let i = path.indexOf('/', 4); i >= 0 && i < last; i = path.indexOf('/', i + 1)) segments++;
    return `${end < 0 ? path.slice(4) : path.slice(4, end)}/${segments}`;
  };
  const routerFor = (path: string): Router => {
    const key = groupOf(path);
    let r = groups.get(key);
    if (!r) {
      r = new Router();
      groups.set(key, r);
    }
    return r;
  };
  const router = routerFor('/');
  const record = requestRecorder(services);

  // DNS-rebinding protection (kernel/host-guard.ts): Host and Origin are checked before any
  // route, plugin middleware (OAuth, the app) or MCP runs. The rules depend on the port the
  // request arrived on (the listener's actual port, also when PORT=0).
  const hostRefusal = hostGuard(services);
  const guardHost = (ctx: Koa.Context): void => {
    const refusal = hostRefusal(ctx.req.socket.localPort, ctx.path, ctx.req.headers);
    if (refusal) {
      services.log.warn('request refused by the Host/Origin check', {
        code: refusal.code,
        route: ctx.path === '/mcp' ? '/mcp' : 'unmatched',
        request_id: ctx.state.requestId,
        ...refusal.details,
      });
      throw refusal;
    }
  };

  // One middleware in front of everything (three layers before: each await of a layer is a
  // measurable part of a read), in this order:
  // - the access line and the request metrics: written when the response is done (streams and
  //   MCP included), with the route pattern (never the raw path with ids), the tenant and actor
  //   ids, and the request id (taken from a well-formed x-request-id, else minted, and returned);
  // - a graceful stop under way: 503 at once;
  // - errors (thrown by the host check, the routes or a plugin middleware) become the envelope;
  // - the Host/Origin check, before any route, plugin middleware or MCP.
  app.use(async (ctx, next) => {
    const started = performance.now();
    const incoming = ctx.get('x-request-id');
    const requestId = REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('x-request-id', requestId);
    // no answer of this server is to be content-sniffed into something else (JSON as HTML)
    ctx.set('x-content-type-options', 'nosniff');
    ctx.res.once('close', () =>
      record({
        method: ctx.method,
        route: routePattern(ctx),
        status: ctx.res.headersSent ? ctx.res.statusCode : 499,
        started,
        tenant: (ctx.state.tenant as string | undefined) ?? null,
        actor: (ctx.state.actor as string | undefined) ?? null,
        requestId,
      }),
    );
    if (services.closing) {
      // A graceful stop is under way: requests already running finish, new ones are told to go
      // elsewhere with a whole answer (never a reset); /healthz fails so balancers drain this one.
      ctx.status = 503;
      ctx.type = 'application/json';
      ctx.set('connection', 'close');
      ctx.set('retry-after', '1');
      ctx.body = serialize(
        new SvcError(503, 'shutting_down', 'the server is stopping; retry on another instance or in a moment').envelope(),
      );
      return;
    }
    try {
      guardHost(ctx);
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw errors.notFound(`route ${ctx.method} ${ctx.path}`);
      if (ctx.status === 405 && ctx.body === undefined)
        throw new SvcError(405, 'method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}`);
    } catch (err) {
      if (isSvcError(err)) sendError(ctx, err, services);
      else {
        services.log.error('unhandled error', {
          method: ctx.method,
          path: ctx.path,
          error: err instanceof Error ? (err.stack ?? err.message) : String(err),
        });
        sendError(ctx, errors.internal(), services);
      }
    }
    // a graceful stop began while this request ran: the client must not reuse the connection
    if (services.closing && !ctx.res.headersSent) ctx.set('connection', 'close');
  });

  // Protocol endpoints of plugins outside /v1 (OAuth, /.well-known/*), before the API routers.
  // Each runs only for the path prefixes it declares (`middlewarePaths`): a request under none
  // of them goes straight on (four async layers per API request were a measurable part of a read).
  const pluginMiddleware = services.host.plugins
    .filter((p) => p.middleware)
    .map((p) => ({ paths: p.middlewarePaths ?? null, handle: p.middleware!(services) }));
  if (pluginMiddleware.length > 0)
    app.use((ctx, next) => {
      const path = ctx.path;
      let chosen: Koa.Middleware[] | null = null;
      for (const m of pluginMiddleware) {
        if (m.paths === null) (chosen ??= []).push(m.handle);
        else
          for (const prefix of m.paths)
            if (path.startsWith(prefix)) {
              (chosen ??= []).push(m.handle);
              break;
            }
      }
      if (chosen === null) return next();
      const list = chosen;
      const run = (i: number): Promise<unknown> => (i === list.length ? next() : list[i]!(ctx, () => run(i + 1)));
      return run(0);
    });

  router.get('/healthz', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = '{"ok":true}';
  });

  /** The kernel's own tokens synchronously; other credentials (connector JWTs) through the plugins' authenticators. */
  const authenticateAny = async (ctx: Koa.Context): Promise<{ tenant: Tenant; actor: Actor }> => {
    const token = bearer(ctx.get('authorization') || undefined);
    if (!token || !JWT_SHAPE.test(token) || services.bearerAuthenticators.length === 0) return authenticate(ctx);
    for (const authenticator of services.bearerAuthenticators) {
      const found = await authenticator(token);
      if (found) return noteIdentity(ctx, found);
    }
    return authenticate(ctx);
  };

  const authenticate = (ctx: Koa.Context): { tenant: Tenant; actor: Actor } => {
    const header = ctx.get('authorization') || undefined;
    try {
      // hashed once per connection (a keep-alive client sends the same header every time)
      const hashed = services.tenants.hashedHeader(ctx.req.socket, header);
      if (!hashed) throw errors.unauthorized();
      return noteIdentity(ctx, services.tenants.authenticateHashed(hashed));
    } catch (err) {
      if (isSvcError(err) && err.status === 401) {
        services.metrics.authFailures.inc();
        // never the token: only whether one was sent and how it was shaped
        services.log.warn('authentication failed', {
          route: routePattern(ctx),
          request_id: ctx.state.requestId,
          credential: header === undefined ? 'none' : bearer(header) ? 'bearer' : 'malformed',
          ip: ctx.ip,
        });
      }
      throw err;
    }
  };

  router.get('/metrics', (ctx) => {
    const presented = bearer(ctx.get('authorization') || undefined);
    if (!metricsTokenHash || !presented)
      throw metricsTokenHash ? errors.unauthorized() : errors.notFound(`route ${ctx.method} ${ctx.path}`);
    const hash = createHash('sha256').update(presented).digest();
    if (!timingSafeEqual(hash, metricsTokenHash)) throw errors.unauthorized();
    return serveMetrics(ctx, services);
  });

  const readBody = async (ctx: Koa.Context): Promise<unknown> =>
    BODY_METHODS.has(ctx.method) ? parseJsonBody(await readRawBody(ctx.req)) : undefined;

  const routeRequest = (ctx: Koa.Context, params: Record<string, string>, body: unknown): RouteRequest => {
    // the headers copied only when something reads them (few routes do; a copy per read was measurable)
    let headers: Record<string, string | undefined> | null = null;
    return {
      params,
      query: ctx.query as Record<string, string | string[] | undefined>,
      body,
      get headers() {
        return (headers ??= headersOf(ctx));
      },
    };
  };

  for (const plugin of services.host.plugins) {
    for (const route of plugin.routes ?? []) {
      const handler = async (ctx: Koa.Context & { params: Record<string, string> }) => {
        if (!route.htmlErrors) return handle(ctx);
        try {
          await handle(ctx);
        } catch (err) {
          if (!prefersHtml(ctx)) throw err;
          const svcErr = isSvcError(err) ? err : errors.internal();
          if (!isSvcError(err))
            services.log.error('unhandled error', {
              method: ctx.method,
              path: ctx.path,
              error: err instanceof Error ? (err.stack ?? err.message) : String(err),
            });
          sendErrorPage(ctx, svcErr);
        }
      };
      const handle = async (ctx: Koa.Context & { params: Record<string, string> }) => {
        const body = BODY_METHODS.has(ctx.method) ? await readBody(ctx) : undefined;
        const req = routeRequest(ctx, ctx.params ?? {}, body);
        // token routes authenticate synchronously; only ticket routes may need to await
        const identity =
          route.auth === 'ticket'
            ? await resolveIdentity(ctx, route, req)
            : services.bearerAuthenticators.length > 0
              ? await authenticateAny(ctx)
              : authenticate(ctx);
        if (!identity) throw errors.unauthorized();
        const { tenant, actor } = identity;
        if (!services.host.usable(tenant, plugin)) throw errors.notFound(`route ${ctx.method} ${ctx.path}`);
        // a client that leaves before the answer stops a waiting operation (GET /v1/events?wait=)
        const gone = clientGone(ctx.res);
        const opctx: OpContext = {
          tenant,
          actor,
          via: 'rest',
          services,
          get headers() {
            return req.headers;
          },
          get signal() {
            return gone();
          },
        };
        const op = route.operation;
        const result = await invoke(op, opctx, restInput(op, route, req));
        send(ctx, route, result);
      };
      const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
      if (/^\/v1\/:/.test(route.path)) throw new Error(`${plugin.name}: route ${route.path} needs a literal first segment after /v1/`);
      // the routers are grouped by path length (groupOf): a part that can match more or fewer segments would escape its group
      if (/[*?()+{}]/.test(route.path)) throw new Error(`${plugin.name}: route ${route.path} may not use wildcards or optional parts`);
      routerFor(route.path)[method](route.path, handler as unknown as Parameters<typeof router.get>[1]);
      services.registeredRoutes.push({ plugin: plugin.name, method: route.method, path: route.path });
    }
  }

  async function resolveIdentity(ctx: Koa.Context, route: RouteDef, req: RouteRequest): Promise<{ tenant: Tenant; actor: Actor } | null> {
    const auth = route.auth ?? 'token';
    if (auth === 'ticket' && !ctx.get('authorization')) {
      for (const authenticator of services.ticketAuthenticators) {
        const found = await authenticator({ ...req, path: ctx.path });
        if (found) return noteIdentity(ctx, found);
      }
    }
    return authenticateAny(ctx);
  }

  const sessions = new McpSessions(services);
  appSessions.set(app, sessions);

  router.all('/mcp', async (ctx) => {
    const { tenant, actor } = await authenticateAny(ctx);
    // `?toolsets=core,leases` lists a subset of the tools (default all); an unknown name is 400
    const toolsets = services.host.parseToolsets(tenant, ctx.query.toolsets as string | string[] | undefined);
    let body: unknown;
    if (ctx.method === 'POST') {
      const read = await readMcpBody(ctx.req);
      if (read.tooLarge) {
        // Over the request limit: answered as JSON-RPC (a tool error for tools/call) with the 413
        // envelope, so an MCP client sees an error result, not a failed transport.
        ctx.status = 200;
        ctx.type = 'application/json';
        ctx.body = serialize(tooLargeRpcAnswer(read.head, read.tail));
        return;
      }
      body = parseJsonBody(read.raw);
    }
    // a client that leaves before the answer stops a waiting tool (wait_for_events), also when the
    // call runs in a session whose transport outlives this request
    const gone = clientGone(ctx.res);
    const opctx: OpContext = {
      tenant,
      actor,
      via: 'mcp',
      services,
      headers: headersOf(ctx),
      get signal() {
        return gone();
      },
    };
    const log = (err: unknown) =>
      services.log.error('tool failed', { error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    const build = (context: () => OpContext, subscriptions: boolean, valid?: () => boolean) =>
      buildMcpServer({
        ctx: context,
        instructions: services.host.instructionsFor(tenant, toolsets),
        tools: () => services.host.toolsFor(context().tenant, toolsets),
        resources: () => services.host.resourcesFor(context().tenant),
        templates: () => services.host.resourceTemplatesFor(context().tenant),
        log,
        subscriptions,
        ...(valid ? { valid } : {}),
      });
    // An OAuth access token is bound by its grant (`parent`): a client that refreshes its token
    // mid-session keeps the session; every other credential by its own hash.
    const credential = actor.token.parent
      ? `grant:${actor.token.parent}`
      : credentialOf(bearer(ctx.get('authorization') || undefined) ?? '');

    // A session's request (docs/events.md, "MCP subscriptions"): only the token that opened it
    // (or a refresh of its OAuth grant) may use it; anyone else, an expired or unknown id alike,
    // gets 404 and starts a new one.
    const sessionId = ctx.get('mcp-session-id');
    if (sessionId) {
      const session = sessions.find(sessionId, credential, tenant, actor.token.hash);
      if (!session) throw errors.notFound('MCP session', { hint: 'the session ended or belongs to another token: initialize a new one' });
      ctx.respond = false;
      await sessions.handle(session, opctx, ctx.req, ctx.res, body);
      return;
    }
    if (ctx.method === 'POST' && isInitialize(body)) {
      // initialize opens a session: notifications need a stream that outlives one request
      const opened = sessions.open(
        { credential, ctx: opctx, build: (context, valid) => build(context, true, valid) },
        ctx.req,
        ctx.res,
        body,
      );
      ctx.respond = false;
      await opened.catch((err: unknown) => {
        // refused before the transport answered (429): the envelope, as every error of this route
        if (ctx.res.headersSent) throw err;
        ctx.respond = true;
        throw err;
      });
      return;
    }
    if (ctx.method !== 'POST') {
      // without a session there is no notification stream to open (GET) or session to end (DELETE)
      ctx.set('allow', 'POST');
      throw new SvcError(405, 'method_not_allowed', `${ctx.method} /mcp needs an Mcp-Session-Id (initialize opens a session)`);
    }
    // Stateless: a fresh server and transport per request, JSON responses.
    const server = await build(() => opctx, false);
    const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    ctx.respond = false;
    ctx.res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(ctx.req, ctx.res, body);
  });

  const chains = new Map<string, Koa.Middleware>();
  for (const [key, r] of groups) {
    const routes = r.routes();
    const allowed = r.allowedMethods({ throw: false });
    chains.set(key, (ctx, next) => routes(ctx as never, () => allowed(ctx as never, next)));
  }
  const rest = chains.get('')!;
  app.use((ctx, next) => (chains.get(groupOf(ctx.path)) ?? rest)(ctx, next));
  return app;
}

export type { PluginDef };
