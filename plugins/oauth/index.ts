/**
 * The `oauth` plugin: sign-in for remote clients (the authorization side of the MCP
 * authorization spec) and connector JWTs.
 *
 * - Discovery: `/.well-known/oauth-protected-resource` (RFC 9728; also under `/mcp` and
 *   `/v1`), `/.well-known/oauth-authorization-server` (RFC 8414), and a
 *   `WWW-Authenticate: Bearer resource_metadata=...` on every 401 from /mcp and /v1/*.
 * - `/oauth/token`, `/oauth/register` (RFC 7591), `/oauth/revoke` (RFC 7009): the MCP SDK's
 *   handlers (PKCE S256, client authentication) over provider.ts; `/oauth/authorize`: ours
 *   (the SDK's checks plus bounded fields, and errors redirected to loopback clients only);
 *   `/oauth/consent`: the sign-in and consent forms (pages.ts). Authorize, consent and
 *   registration are rate limited per client address.
 * - Connector JWTs (SVC_JWT_ISSUER, SVC_JWT_AUDIENCE, SVC_JWT_JWKS_URL or SVC_JWT_JWKS),
 *   verified with jose; the `org` claim picks the tenant, `sub` (a person id) or `email` the
 *   person.
 * Server-wide, not per tenant: a client signs in before a tenant is chosen.
 */
import { hashToken } from '../../kernel/auth.js';
import type { IncomingMessage } from 'node:http';
import { definePlugin, type KernelServices, type RequestRouter } from '../../kernel/plugin.js';
import { connectorJwtAuthenticator } from './jwt.js';
import { SCOPE } from './provider.js';
import type { Express } from 'express';
import type * as ProtocolModule from './protocol.js';

/** The protocol module (protocol.ts), imported once, on first use. */
let protocol: Promise<typeof ProtocolModule> | null = null;
const loadProtocol = () =>
  (protocol ??= import('./protocol.js').catch((err: unknown) => {
    protocol = null; // the next request tries again
    throw err;
  }));

/** The form of a POST (urlencoded; JSON too, as the token endpoint of some clients sends it). */
function formOf(req: IncomingMessage, body: Buffer | null): Record<string, string> {
  if (!body) return {};
  const type = String(req.headers['content-type'] ?? '');
  try {
    if (type.startsWith('application/json')) {
      const parsed = JSON.parse(body.toString('utf8')) as unknown;
      if (!parsed || typeof parsed !== 'object') return {};
      return Object.fromEntries(Object.entries(parsed).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
    }
    return Object.fromEntries(new URLSearchParams(body.toString('utf8')));
  } catch {
    return {};
  }
}

/**
 * Cluster mode: the OAuth requests that act on a tenant are served by its owner (docs/scale-out.md).
 * The sign-in on the consent page by the PAT's tenant, the approval by the tenant signed in to,
 * the code exchange by the code's tenant, a refresh or a revocation by the token's tenant.
 * Authorize, registration and metadata need no tenant: served where they arrive.
 */
export function oauthRouter(services: KernelServices): RequestRouter {
  const ROUTED = new Set(['/oauth/consent', '/oauth/token', '/oauth/revoke']);
  return {
    applies: (req) => (req.method === 'POST' && ROUTED.has((req.url ?? '').split('?')[0]!) ? 'body' : false),
    async route(req, body) {
      const path = (req.url ?? '').split('?')[0]!;
      const form = formOf(req, body);
      const provider = (await loadProtocol()).providerOf(services);
      if (path === '/oauth/consent') {
        if (form.action === 'signin' && form.token) return { tokenHash: hashToken(form.token.trim()) };
        if (form.action === 'approve' && form.pending) {
          const org = (await provider.pendingOf(form.pending))?.signedIn?.org;
          return org ? { org } : null;
        }
        return null;
      }
      if (path === '/oauth/token') {
        if (form.grant_type === 'authorization_code' && form.code) {
          const org = await provider.orgOfCode(form.code);
          return org ? { org } : null;
        }
        if (form.grant_type === 'refresh_token' && form.refresh_token) return { tokenHash: hashToken(form.refresh_token) };
        return null;
      }
      return form.token ? { tokenHash: hashToken(form.token) } : null;
    },
  };
}

export const oauthPlugin = definePlugin({
  name: 'oauth',
  description: 'OAuth sign-in for remote MCP clients and connector JWTs.',
  version: '1.0.0',
  dependsOn: ['identity'],
  init(services) {
    services.requestRouters.push(oauthRouter(services));
    services.authChallenge = () => `Bearer resource_metadata="${services.baseUrl}/.well-known/oauth-protected-resource", scope="${SCOPE}"`;
    const jwt = connectorJwtAuthenticator(services);
    if (jwt) services.bearerAuthenticators.push(jwt);
  },
  middlewarePaths: ['/oauth/', '/.well-known/oauth-'],
  middleware(services) {
    let app: Promise<Express> | null = null;
    return async (ctx, next) => {
      if (!ctx.path.startsWith('/oauth/') && !ctx.path.startsWith('/.well-known/oauth-')) return next();
      // built on first use: the issuer is the server's public URL, known once it listens
      app ??= loadProtocol().then((m) => m.protocolApp(services));
      const handle = await app;
      // these paths carry no ids or secrets: the path is the access log's route
      (ctx as typeof ctx & { _matchedRoute?: string })._matchedRoute = ctx.path;
      ctx.respond = false;
      await new Promise<void>((resolve) => {
        ctx.res.once('close', resolve);
        handle(ctx.req, ctx.res);
      });
    };
  },
});
