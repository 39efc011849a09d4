/**
 * `workgraph login <server>`: the server's OAuth (plugins/oauth) from a terminal, as RFC 8252
 * asks of a native app: discovery (RFC 8414), dynamic registration of a public client
 * (RFC 7591), the authorization code flow with PKCE S256 through the system browser and a
 * loopback redirect (http://127.0.0.1:<port>/callback), then the token exchange. The person
 * signs in on the server's consent page with a personal access token; the CLI never sees it.
 *
 * Tokens travel only in request bodies and headers: never in a URL, never on a child process's
 * command line (the browser is given the authorization URL, which holds no secret).
 */
import * as oauth from 'oauth4webapi';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CliFailure, EXIT, trimServer } from './connection.js';

const SCOPE = 'workgraph';

/** plain http is accepted for servers the person typed as http:// (a local install, loopback) */
function insecure(server: string): { [oauth.allowInsecureRequests]?: boolean } {
  return server.startsWith('http:') ? { [oauth.allowInsecureRequests]: true } : {};
}

async function discover(server: string): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(server);
  let res: Response;
  try {
    res = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure(server) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause;
    throw new CliFailure(EXIT.other, `cannot reach ${server}: ${cause?.code ?? (err as Error).message}`);
  }
  return oauth.processDiscoveryResponse(issuer, res);
}

/** The resource the tokens are for: the server itself (its protected-resource metadata says `${base}/`). */
const resourceOf = (server: string) => `${trimServer(server)}/`;

export async function refresh(server: string, clientId: string, refreshToken: string): Promise<oauth.TokenEndpointResponse> {
  const as = await discover(server);
  const client: oauth.Client = { client_id: clientId, token_endpoint_auth_method: 'none' };
  const res = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), refreshToken, {
    ...insecure(server),
    additionalParameters: { resource: resourceOf(server) },
  });
  return oauth.processRefreshTokenResponse(as, client, res);
}

export interface LoginResult {
  client_id: string;
  tokens: oauth.TokenEndpointResponse;
}

/** Opens `url` in the person's browser, if one can be found; the URL is printed either way. */
function openBrowser(url: string): void {
  const opener = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
  try {
    const child = spawn(opener, [url], { stdio: 'ignore', detached: true });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    /* no browser: the printed URL is the way */
  }
}

const PAGE = (title: string, text: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head><body><main><h1>${title}</h1><p>${text}</p></main></body></html>`;

export async function login(
  serverArg: string,
  opts: { browser: boolean; timeoutMs: number; log: (line: string) => void },
): Promise<LoginResult> {
  const server = trimServer(serverArg);
  const as = await discover(server);
  if (!as.authorization_endpoint || !as.token_endpoint || !as.registration_endpoint)
    throw new CliFailure(EXIT.other, `${server} does not offer OAuth sign-in with client registration`);
  if (!as.code_challenge_methods_supported?.includes('S256')) throw new CliFailure(EXIT.other, `${server} does not support PKCE S256`);

  // The loopback listener first: its port is part of the registered redirect URI.
  let callback!: (url: URL) => void;
  const arrived = new Promise<URL>((resolve) => (callback = resolve));
  const listener: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/callback') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const failed = url.searchParams.has('error');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(
      failed
        ? PAGE('Sign-in not completed', 'You can close this tab; the terminal says why.')
        : PAGE('Signed in', 'You can close this tab and return to the terminal.'),
    );
    callback(url);
  });
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(0, '127.0.0.1', () => resolve());
  });
  try {
    const redirectUri = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/callback`;
    const reg = await oauth.dynamicClientRegistrationRequest(
      as,
      {
        client_name: 'workgraph CLI',
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        scope: SCOPE,
      },
      insecure(server),
    );
    const client = (await oauth.processDynamicClientRegistrationResponse(reg)) as oauth.Client;

    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const authorize = new URL(as.authorization_endpoint);
    authorize.searchParams.set('response_type', 'code');
    authorize.searchParams.set('client_id', client.client_id);
    authorize.searchParams.set('redirect_uri', redirectUri);
    authorize.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
    authorize.searchParams.set('code_challenge_method', 'S256');
    authorize.searchParams.set('state', state);
    authorize.searchParams.set('scope', SCOPE);
    authorize.searchParams.set('resource', resourceOf(server));
    opts.log(`Sign in to ${server} in your browser:\n\n  ${authorize.href}\n`);
    if (opts.browser) openBrowser(authorize.href);
    opts.log('Waiting for the browser to come back...');

    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new CliFailure(EXIT.other, `no answer from the browser within ${Math.round(opts.timeoutMs / 1000)} s`)),
        opts.timeoutMs,
      );
    });
    const back = await Promise.race([arrived, timeout]).finally(() => clearTimeout(timer));
    let params: URLSearchParams;
    try {
      params = oauth.validateAuthResponse(as, client, back, state);
    } catch (err) {
      const description = back.searchParams.get('error_description') ?? back.searchParams.get('error');
      throw new CliFailure(EXIT.unauthorized, `sign-in failed: ${description ?? (err as Error).message}`);
    }
    const tokenRes = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, verifier, {
      ...insecure(server),
      additionalParameters: { resource: resourceOf(server) },
    });
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, tokenRes);
    return { client_id: client.client_id, tokens };
  } finally {
    listener.close();
    listener.closeAllConnections?.();
  }
}
