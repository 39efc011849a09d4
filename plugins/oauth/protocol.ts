/**
 * The OAuth protocol endpoints (docs/design.md; the plugin's header in index.ts): the express
 * app that serves /oauth/* and the /.well-known/oauth-* documents over the MCP SDK's handlers
 * and provider.ts. Loaded on the first request to one of those paths (or the first routed
 * OAuth request of a cluster): express, the SDK's auth handlers and their schemas are about
 * 2 MB of bundled code a server that nobody signs in to never parses (docs/performance.md
 * "Empty server").
 */
import { InvalidRequestError, OAuthError, ServerError, TemporarilyUnavailableError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { redirectUriMatches } from '@modelcontextprotocol/sdk/server/auth/handlers/authorize.js';
import { metadataHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/metadata.js';
import { clientRegistrationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/register.js';
import { revocationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/revoke.js';
import { tokenHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/token.js';
import express from 'express';
import { timingSafeEqual } from 'node:crypto';
import { hashToken } from '../../kernel/auth.js';
import { isSvcError } from '../../kernel/errors.js';
import { serialize, type KernelServices } from '../../kernel/plugin.js';
import { errorPage, returnPage } from './pages.js';
import { rateLimit } from './rate-limit.js';
import { allowedRedirectUri, formActionSource, loopbackRedirectUri, MAX_URI, sendPage, SCOPE, WorkgraphOAuthProvider } from './provider.js';

function metadata(services: KernelServices) {
  const base = services.baseUrl!;
  return {
    authorizationServer: {
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      revocation_endpoint: `${base}/oauth/revoke`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none', 'client_secret_post', 'client_secret_basic'],
      revocation_endpoint_auth_methods_supported: ['none', 'client_secret_post', 'client_secret_basic'],
      scopes_supported: [SCOPE],
      client_id_metadata_document_supported: true,
      service_documentation: `${base}/`,
    },
    protectedResource: {
      resource: `${base}/`,
      authorization_servers: [base],
      bearer_methods_supported: ['header'],
      scopes_supported: [SCOPE],
      resource_name: 'workgraph',
    },
  };
}

const sameText = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** One provider per server (the app's handlers and the cluster router share its stores). */
const providers = new WeakMap<KernelServices, WorkgraphOAuthProvider>();
export function providerOf(services: KernelServices): WorkgraphOAuthProvider {
  let provider = providers.get(services);
  if (!provider) providers.set(services, (provider = new WorkgraphOAuthProvider(services)));
  return provider;
}

/**
 * Before the SDK's registration handler (which finds the body parsed): every redirect URI must
 * be allowed, else `invalid_redirect_uri` (RFC 7591), whatever the SDK's schema would say of it;
 * the body is at most 16 KB.
 */
const registrationPrecheck: express.RequestHandler = (req, res, next) => {
  const uris = (req.body as { redirect_uris?: unknown } | undefined)?.redirect_uris;
  const refused = Array.isArray(uris) ? uris.find((u) => typeof u !== 'string' || !allowedRedirectUri(u)) : undefined;
  if (refused === undefined) return next();
  res.setHeader('cache-control', 'no-store');
  res.status(400).json({
    error: 'invalid_redirect_uri',
    error_description:
      'redirect URIs must be https, or http on a loopback host (127.0.0.1, [::1], localhost) for a native app, without a fragment',
  });
};

/** A registration body that is not JSON or too large: the RFC 7591 error (400 invalid_client_metadata), not express's HTML page. */
const registrationBodyError: express.ErrorRequestHandler = (err: { status?: number; message?: string }, _req, res, _next) => {
  res.setHeader('cache-control', 'no-store');
  res.status(400).json({
    error: 'invalid_client_metadata',
    error_description: err.status === 413 ? 'the client metadata is at most 16 KB' : 'the body is not valid JSON',
  });
};

const MAX_STATE = 1024;
const MAX_SCOPE = 1024;
/** RFC 7636: an S256 challenge is 43 base64url characters; the verifier alphabet up to 128 */
const CHALLENGE = /^[A-Za-z0-9._~-]{43,128}$/;

/**
 * GET/POST /oauth/authorize, in place of the SDK's handler: the same checks (client, exact
 * redirect URI with the loopback port rule, PKCE S256, response_type code), plus bounded
 * fields, and errors are redirected back to the client only when its redirect URI is a
 * loopback one (a native app on the person's machine). An https redirect URI of an openly
 * registered client is whatever a stranger chose, so an error there is a page, not an
 * automatic redirect (RFC 9700 section 4.11.2); a redirect URI that is not the client's, or
 * not allowed (legacy records), never gets one.
 */
function authorizeHandler(services: KernelServices, provider: WorkgraphOAuthProvider): express.RequestHandler {
  const page = (res: express.Response, status: number, code: string, message: string) => {
    res.setHeader(
      'content-security-policy',
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
    );
    res.status(status).type('html').send(errorPage(code, message));
  };
  return async (req, res) => {
    res.setHeader('cache-control', 'no-store');
    if (req.method !== 'GET' && req.method !== 'POST') {
      res.setHeader('allow', 'GET, POST');
      return page(res, 405, 'method_not_allowed', `${req.method} is not allowed here`);
    }
    const source = (req.method === 'POST' ? req.body : req.query) as Record<string, unknown> | undefined;
    const text = (k: string) => (typeof source?.[k] === 'string' ? (source[k] as string) : undefined);
    // Phase 1: whom to answer. Nothing here is redirected.
    const clientId = text('client_id');
    if (!clientId) return page(res, 400, 'invalid_request', 'The request names no client (client_id).');
    let client: Awaited<ReturnType<typeof provider.clientsStore.getClient>>;
    try {
      client = await provider.clientsStore.getClient(clientId);
    } catch (err) {
      services.log.error('oauth client lookup failed', { error: err instanceof Error ? err.message : String(err) });
      return page(res, 500, 'server_error', 'The sign-in service could not look the application up. Try again in a moment.');
    }
    if (!client)
      return page(
        res,
        400,
        'invalid_client',
        'The application is not registered here, or its client metadata document could not be fetched from a public https address.',
      );
    let redirectUri = text('redirect_uri');
    if (redirectUri !== undefined) {
      const requested = redirectUri;
      if (!allowedRedirectUri(requested) || !client.redirect_uris.some((registered) => redirectUriMatches(requested, registered))) {
        return page(
          res,
          400,
          'invalid_request',
          'The redirect URI is not one this application registered (https, or http on a loopback address).',
        );
      }
    } else if (client.redirect_uris.length === 1) redirectUri = client.redirect_uris[0]!;
    else return page(res, 400, 'invalid_request', 'The application has no single registered redirect URI, and the request names none.');
    const back = redirectUri;
    // Phase 2: the request itself. Errors go back to a loopback client, else on a page.
    const rawState = text('state');
    const fail = (error: OAuthError) => {
      if (!loopbackRedirectUri(back))
        return page(res, error instanceof TemporarilyUnavailableError ? 503 : 400, error.errorCode, error.message);
      const url = new URL(back);
      url.searchParams.set('error', error.errorCode);
      url.searchParams.set('error_description', error.message);
      if (rawState !== undefined && rawState.length <= MAX_STATE) url.searchParams.set('state', rawState);
      res.redirect(302, url.href);
    };
    try {
      if (rawState !== undefined && rawState.length > MAX_STATE) throw new InvalidRequestError(`state is at most ${MAX_STATE} characters`);
      if (text('response_type') !== 'code') throw new InvalidRequestError('response_type must be code (the authorization code flow)');
      if (text('code_challenge_method') !== 'S256') throw new InvalidRequestError('code_challenge_method must be S256');
      const challenge = text('code_challenge');
      if (!challenge || !CHALLENGE.test(challenge))
        throw new InvalidRequestError('code_challenge must be an S256 PKCE challenge (43 to 128 characters of A-Z a-z 0-9 - . _ ~)');
      const scope = text('scope');
      if (scope !== undefined && scope.length > MAX_SCOPE) throw new InvalidRequestError(`scope is at most ${MAX_SCOPE} characters`);
      const resource = text('resource');
      if (resource !== undefined && (resource.length > MAX_URI || !URL.canParse(resource)))
        throw new InvalidRequestError(`resource must be a URL of at most ${MAX_URI} characters`);
      await provider.authorize(
        client,
        {
          state: rawState,
          scopes: scope ? scope.split(' ').filter(Boolean) : [],
          redirectUri: back,
          codeChallenge: challenge,
          resource: resource ? new URL(resource) : undefined,
        },
        res,
      );
    } catch (err) {
      if (err instanceof OAuthError) return fail(err);
      services.log.error('oauth authorize failed', { error: err instanceof Error ? err.message : String(err) });
      return fail(new ServerError('internal error'));
    }
  };
}

export function protocolApp(services: KernelServices): express.Express {
  const provider = providerOf(services);
  const meta = metadata(services);
  const app = express();
  app.disable('x-powered-by');
  // Our own limits per client address on the endpoints anyone can call to make the server store
  // something or fetch something (docs/decisions.md); the SDK's (express-rate-limit) are off.
  const perMinute = services.config.oauthRatePerMinute;
  app.use(
    '/oauth/authorize',
    rateLimit('authorize', perMinute),
    express.urlencoded({ extended: false, limit: '16kb' }),
    authorizeHandler(services, provider),
  );
  app.use('/oauth/token', rateLimit('token', perMinute), tokenHandler({ provider, rateLimit: false }));
  app.use(
    '/oauth/register',
    rateLimit('registration', Math.max(1, Math.floor(perMinute / 4))),
    express.json({ limit: '16kb' }),
    registrationPrecheck,
    clientRegistrationHandler({ clientsStore: provider.clientsStore, rateLimit: false }),
  );
  app.use('/oauth/register', registrationBodyError);
  app.use('/oauth/revoke', rateLimit('revoke', perMinute), revocationHandler({ provider, rateLimit: false }));
  app.use('/.well-known/oauth-authorization-server', metadataHandler(meta.authorizationServer as never));
  for (const path of ['', '/mcp', '/v1'])
    app.use(`/.well-known/oauth-protected-resource${path}`, metadataHandler(meta.protectedResource as never));

  app.post('/oauth/consent', rateLimit('consent', perMinute), express.urlencoded({ extended: false, limit: '16kb' }), async (req, res) => {
    const form = req.body as Record<string, string | undefined>;
    const pending = typeof form.pending === 'string' ? await provider.pendingOf(form.pending) : undefined;
    const cookie = /(?:^|;\s*)svc_oauth_csrf=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
    if (
      !pending ||
      pending.expires < services.clock.now() ||
      typeof form.csrf !== 'string' ||
      !cookie ||
      !sameText(form.csrf, pending.csrf) ||
      !sameText(cookie, pending.csrf)
    ) {
      res
        .status(403)
        .type('html')
        .send(
          '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign-in expired</title></head><body><main><h1>This sign-in page expired or was not sent by this server</h1><p>Start the connection again from your application.</p></main></body></html>',
        );
      return;
    }
    const back = async (params: Record<string, string>) => {
      const url = new URL(pending.params.redirectUri);
      for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
      if (pending.params.state !== undefined) url.searchParams.set('state', pending.params.state);
      await provider.dropPending(pending.id);
      res.setHeader('cache-control', 'no-store');
      if (formActionSource(url.href) !== null) return res.redirect(302, url.href);
      // an origin CSP cannot name (an IPv6 loopback): a page that navigates on, which form-action does not govern
      res.setHeader(
        'content-security-policy',
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
      );
      res.setHeader('referrer-policy', 'no-referrer');
      res.status(200).type('html').send(returnPage(url.href));
    };
    if (form.action === 'deny') return back({ error: 'access_denied', error_description: 'the person declined' });
    if (form.action === 'signin') {
      try {
        const { tenant, actor } = services.tenants.authenticate(typeof form.token === 'string' ? form.token.trim() : undefined);
        if (!actor.bound || actor.token.kind !== 'pat' || actor.token.parent !== null) throw new Error('not a personal access token');
        pending.signedIn = { org: tenant.org, person: actor.personId, name: actor.name, patHash: hashToken(form.token!.trim()) };
      } catch (err) {
        if (!(err instanceof Error) && !isSvcError(err)) throw err;
        return sendPage(
          res,
          pending,
          { error: 'That is not a valid personal access token. Check it and try again.' },
          services.baseUrl!.startsWith('https:'),
        );
      }
      // stored: the approval may reach another process
      await provider.savePending(pending);
      return sendPage(res, pending, null, services.baseUrl!.startsWith('https:'));
    }
    if (form.action === 'approve' && pending.signedIn) return back({ code: await provider.issueCode(pending) });
    res
      .status(400)
      .type('html')
      .send(
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Bad request</title></head><body><main><h1>Sign in first</h1></main></body></html>',
      );
  });
  app.use((req, res) => {
    res
      .status(404)
      .type('application/json')
      .send(serialize({ error: { code: 'not_found', message: `route ${req.method} ${req.path} not found`, details: {} } }));
  });
  return app;
}
