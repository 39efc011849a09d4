/**
 * Issue 11: OAuth 2.1 sign-in for remote MCP clients and connector JWTs. The end-to-end test
 * drives the MCP SDK's own client-side OAuth (an OAuthClientProvider with `auth()`): discovery,
 * registration, sign-in and consent over HTTP, tokens, tool calls over Streamable HTTP, refresh,
 * and losing access when the parent PAT is revoked. Then every error path.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { hashToken } from '../../../kernel/auth.js';
import { allPlugins } from '../../../scripts/plugins.js';
import { addPerson, startTestServer, type TestServer } from '../../helpers/harness.js';
import { MemoryOAuthClient } from '../../helpers/oauth-client.js';

const REDIRECT = 'http://127.0.0.1:45999/callback';

/** The test's MCP client: registers `REDIRECT` (or uses a metadata document URL). */
class TestClient extends MemoryOAuthClient {
  constructor(name = 'Test MCP client', metadataUrl?: string) {
    super(REDIRECT, name, metadataUrl);
  }
}

/** The person's browser: opens the authorization URL, signs in with a PAT, approves (or not). Returns the redirect back to the client. */
async function consent(
  authorizationUrl: URL,
  pat: string,
  action: 'approve' | 'deny' = 'approve',
): Promise<{ location: URL; pages: string[] }> {
  const page = await fetch(authorizationUrl, { redirect: 'manual' });
  const html = await page.text();
  expect(page.status, html).to.equal(200);
  const cookie = /svc_oauth_csrf=[^;]+/.exec(page.headers.get('set-cookie') ?? '')![0];
  const field = (name: string, text: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(text)![1]!;
  const post = (body: Record<string, string>) =>
    fetch(new URL('/oauth/consent', authorizationUrl), {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: new URLSearchParams(body).toString(),
    });
  const signedIn = await post({ pending: field('pending', html), csrf: field('csrf', html), action: 'signin', token: pat });
  const approvePage = await signedIn.text();
  expect(signedIn.status, approvePage).to.equal(200);
  const done = await post({ pending: field('pending', approvePage), csrf: field('csrf', approvePage), action });
  expect(done.status).to.equal(302);
  return { location: new URL(done.headers.get('location')!), pages: [html, approvePage] };
}

async function signIn(t: TestServer, client: TestClient, pat: string): Promise<void> {
  expect(await auth(client, { serverUrl: `${t.url}/mcp` })).to.equal('REDIRECT');
  const { location } = await consent(client.authorizationUrl!, pat);
  const code = location.searchParams.get('code')!;
  expect(await auth(client, { serverUrl: `${t.url}/mcp`, authorizationCode: code })).to.equal('AUTHORIZED');
}

const form = (body: Record<string, string>) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(body).toString(),
});
const challengeOf = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

describe('oauth: remote MCP clients sign in (MCP SDK client auth end to end)', function () {
  this.timeout(60_000);
  let t: TestServer;
  let alice: { id: string; token: string };
  before(async () => {
    // the metadata-document test serves its document from loopback over http: the explicit escape hatch
    t = await startTestServer({ plugins: allPlugins, config: { oauthAllowPrivateMetadata: true } });
    alice = await addPerson(t, 'Alice Remote');
  });
  after(async () => t.close());

  it('discovery: protected resource and authorization server metadata; every 401 on /mcp and /v1 points at them', async () => {
    const prm = await (await fetch(`${t.url}/.well-known/oauth-protected-resource`)).json();
    expect(prm).to.include({ resource: `${t.url}/` });
    expect(prm.authorization_servers).to.deep.equal([t.url]);
    expect((await fetch(`${t.url}/.well-known/oauth-protected-resource/mcp`)).status).to.equal(200);
    const as = await (await fetch(`${t.url}/.well-known/oauth-authorization-server`)).json();
    expect(as).to.include({
      issuer: t.url,
      authorization_endpoint: `${t.url}/oauth/authorize`,
      token_endpoint: `${t.url}/oauth/token`,
      registration_endpoint: `${t.url}/oauth/register`,
      revocation_endpoint: `${t.url}/oauth/revoke`,
    });
    expect(as.code_challenge_methods_supported).to.deep.equal(['S256']);
    expect(as.grant_types_supported).to.not.include('password').and.not.include('implicit');
    for (const path of ['/v1/me', '/mcp']) {
      const res = await fetch(`${t.url}${path}`, { method: path === '/mcp' ? 'POST' : 'GET' });
      expect(res.status).to.equal(401);
      expect(res.headers.get('www-authenticate')).to.include(`resource_metadata="${t.url}/.well-known/oauth-protected-resource"`);
    }
  });

  it('discovers, registers, signs in, calls tools, refreshes, and loses access when the parent PAT is revoked', async () => {
    const client = new TestClient();
    await signIn(t, client, alice.token);
    expect(client.info!.client_id).to.be.a('string');
    const first = client.saved!;
    expect(first.access_token).to.match(/^svc_oat_/);
    expect(first.refresh_token).to.be.a('string');
    // REST and MCP with the access token, attributed to the person
    const me = await t.api('GET', '/v1/me', { token: first.access_token });
    expect(me.body).to.include({ person: alice.id, org: t.org });
    // a grant cannot mint a credential that would outlive its PAT
    expect((await t.api('POST', '/v1/me/tokens', { token: first.access_token, body: {} })).status).to.equal(403);
    const mcp = new Client({ name: 'oauth-e2e', version: '0.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { authProvider: client }));
    const put = (await mcp.callTool({
      name: 'put_node',
      arguments: { nodes: ['---\nid: task-oauth-made\ntype: task\nsummary: made over OAuth\n---\n'] },
    })) as { isError?: boolean; content: Array<{ text: string }> };
    expect(put.isError ?? false, put.content[0]!.text).to.equal(false);
    expect((await t.api('GET', '/v1/nodes/task-oauth-made')).body.frontmatter.author).to.equal(alice.id);
    // the access token expires; the SDK refreshes on the 401 and goes on
    t.clock.advance(2 * 3600_000);
    expect((await t.api('GET', '/v1/me', { token: first.access_token })).status).to.equal(401);
    const read = (await mcp.callTool({ name: 'get_node', arguments: { id: 'task-oauth-made' } })) as { isError?: boolean };
    expect(read.isError ?? false).to.equal(false);
    expect(client.saved!.access_token).to.not.equal(first.access_token);
    expect(client.saved!.refresh_token).to.not.equal(first.refresh_token);
    // revoking the PAT the grant came from ends it, and the count is real
    const revoked = await t.api('DELETE', `/v1/me/tokens/${hashToken(alice.token).slice(0, 12)}`, { token: alice.token });
    expect(revoked.status, revoked.text).to.equal(200);
    expect(revoked.body.oauth_grants_revoked).to.equal(1);
    expect((await t.api('GET', '/v1/me', { token: client.saved!.access_token })).status).to.equal(401);
    let failed = false;
    try {
      await mcp.callTool({ name: 'get_node', arguments: { id: 'task-oauth-made' } });
    } catch {
      failed = true;
    }
    expect(failed, 'the MCP client kept access after its PAT was revoked').to.equal(true);
    await mcp.close().catch(() => undefined);
  });

  it('offboarding and admin revoke end the grants too, with real counts', async () => {
    const bob = await addPerson(t, 'Bob Remote');
    for (const name of ['one', 'two']) await signIn(t, new TestClient(`client ${name}`), bob.token);
    const off = await t.api('DELETE', `/v1/admin/people/${bob.id}`);
    expect(off.status, off.text).to.equal(200);
    expect(off.body.oauth_grants_revoked).to.equal(2);
    const carol = await addPerson(t, 'Carol Remote');
    const client = new TestClient();
    await signIn(t, client, carol.token);
    const admin = await t.api('DELETE', `/v1/admin/tokens/${hashToken(carol.token).slice(0, 12)}`);
    expect(admin.status, admin.text).to.equal(200);
    expect((await t.api('GET', '/v1/me', { token: client.saved!.access_token })).status).to.equal(401);
  });

  describe('error paths', () => {
    let dave: { id: string; token: string };
    let clientId: string;
    before(async () => {
      dave = await addPerson(t, 'Dave Errors');
      const reg = await fetch(`${t.url}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Manual', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
      });
      expect(reg.status).to.equal(201);
      clientId = ((await reg.json()) as { client_id: string }).client_id;
    });

    const authorizeUrl = (verifier: string, extra: Record<string, string> = {}) =>
      new URL(
        `${t.url}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challengeOf(verifier), code_challenge_method: 'S256', state: 'st-1', resource: `${t.url}/`, ...extra })}`,
      );
    const codeFor = async (verifier: string) => {
      const { location } = await consent(authorizeUrl(verifier), dave.token);
      expect(location.searchParams.get('state')).to.equal('st-1');
      return location.searchParams.get('code')!;
    };
    const exchange = (code: string, verifier: string, extra: Record<string, string> = {}) =>
      fetch(
        `${t.url}/oauth/token`,
        form({
          grant_type: 'authorization_code',
          client_id: clientId,
          code,
          code_verifier: verifier,
          redirect_uri: REDIRECT,
          resource: `${t.url}/`,
          ...extra,
        }),
      );

    it('a bad PKCE verifier is invalid_grant', async () => {
      const verifier = randomBytes(32).toString('base64url');
      const code = await codeFor(verifier);
      const res = await exchange(code, randomBytes(32).toString('base64url'));
      expect(res.status).to.equal(400);
      expect(((await res.json()) as { error: string }).error).to.equal('invalid_grant');
    });

    it('a reused code is invalid_grant and revokes what the first use issued', async () => {
      const verifier = randomBytes(32).toString('base64url');
      const code = await codeFor(verifier);
      const first = await exchange(code, verifier);
      expect(first.status).to.equal(200);
      const tokens = (await first.json()) as OAuthTokens;
      expect((await t.api('GET', '/v1/me', { token: tokens.access_token })).status).to.equal(200);
      const again = await exchange(code, verifier);
      expect(again.status).to.equal(400);
      expect(((await again.json()) as { error: string }).error).to.equal('invalid_grant');
      expect((await t.api('GET', '/v1/me', { token: tokens.access_token })).status).to.equal(401);
    });

    it('an unregistered redirect URI is refused without a redirect; a wrong one at the token endpoint is invalid_grant', async () => {
      const verifier = randomBytes(32).toString('base64url');
      const res = await fetch(authorizeUrl(verifier, { redirect_uri: 'http://127.0.0.1:45999/elsewhere' }), { redirect: 'manual' });
      expect(res.status).to.equal(400);
      expect(res.headers.get('location')).to.equal(null);
      const code = await codeFor(verifier);
      const wrong = await exchange(code, verifier, { redirect_uri: 'http://127.0.0.1:45999/other' });
      expect(wrong.status).to.equal(400);
    });

    it('native clients: a loopback redirect URI matches on any port (RFC 8252), a different path or host does not', async () => {
      const reg = await fetch(`${t.url}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Native', redirect_uris: ['http://127.0.0.1/cb'], token_endpoint_auth_method: 'none' }),
      });
      const native = ((await reg.json()) as { client_id: string }).client_id;
      const verifier = randomBytes(32).toString('base64url');
      const url = (redirect: string) =>
        `${t.url}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: native, redirect_uri: redirect, code_challenge: challengeOf(verifier), code_challenge_method: 'S256' })}`;
      expect((await fetch(url('http://127.0.0.1:53123/cb'), { redirect: 'manual' })).status).to.equal(200);
      expect((await fetch(url('http://127.0.0.1:53123/other'), { redirect: 'manual' })).status).to.equal(400);
      expect((await fetch(url('http://localhost:53123/cb'), { redirect: 'manual' })).status).to.equal(400);
    });

    it('plain (non-S256) PKCE and the implicit flow are refused', async () => {
      const base = { client_id: clientId, redirect_uri: REDIRECT, code_challenge: 'abc', state: 's' };
      const plain = await fetch(
        `${t.url}/oauth/authorize?${new URLSearchParams({ ...base, response_type: 'code', code_challenge_method: 'plain' })}`,
        { redirect: 'manual' },
      );
      const implicit = await fetch(
        `${t.url}/oauth/authorize?${new URLSearchParams({ ...base, response_type: 'token', code_challenge_method: 'S256' })}`,
        { redirect: 'manual' },
      );
      for (const res of [plain, implicit]) {
        expect(res.status).to.equal(302);
        expect(new URL(res.headers.get('location')!).searchParams.get('error')).to.equal('invalid_request');
      }
      const password = await fetch(
        `${t.url}/oauth/token`,
        form({ grant_type: 'password', client_id: clientId, username: 'a', password: 'b' }),
      );
      expect(password.status).to.equal(400);
      expect(((await password.json()) as { error: string }).error).to.equal('unsupported_grant_type');
    });

    it('a resource other than this server is invalid_target', async () => {
      const verifier = randomBytes(32).toString('base64url');
      const res = await fetch(authorizeUrl(verifier, { resource: 'https://evil.example/' }), { redirect: 'manual' });
      expect(res.status).to.equal(302);
      expect(new URL(res.headers.get('location')!).searchParams.get('error')).to.equal('invalid_target');
      const code = await codeFor(verifier);
      const wrong = await exchange(code, verifier, { resource: 'https://evil.example/' });
      expect(wrong.status).to.equal(400);
      expect(((await wrong.json()) as { error: string }).error).to.equal('invalid_target');
    });

    it('expired and revoked access tokens are 401; a reused refresh token ends the grant', async () => {
      const verifier = randomBytes(32).toString('base64url');
      const tokens = (await (await exchange(await codeFor(verifier), verifier)).json()) as OAuthTokens;
      const refresh = (token: string) =>
        fetch(`${t.url}/oauth/token`, form({ grant_type: 'refresh_token', client_id: clientId, refresh_token: token }));
      const next = (await (await refresh(tokens.refresh_token!)).json()) as OAuthTokens;
      expect(next.access_token).to.match(/^svc_oat_/);
      const reuse = await refresh(tokens.refresh_token!);
      expect(reuse.status).to.equal(400);
      expect(((await reuse.json()) as { error: string }).error).to.equal('invalid_grant');
      expect((await t.api('GET', '/v1/me', { token: next.access_token })).status, 'reuse detection revokes the grant').to.equal(401);
      expect((await refresh(next.refresh_token!)).status).to.equal(400);
      // revocation endpoint, and expiry
      const fresh = (await (await exchange(await codeFor(verifier), verifier)).json()) as OAuthTokens;
      const rev = await fetch(`${t.url}/oauth/revoke`, form({ client_id: clientId, token: fresh.access_token }));
      expect(rev.status).to.equal(200);
      expect((await t.api('GET', '/v1/me', { token: fresh.access_token })).status).to.equal(401);
      const later = (await (await refresh(fresh.refresh_token!)).json()) as OAuthTokens;
      t.clock.advance(3600_000 + 1000);
      const expired = await t.api('GET', '/v1/me', { token: later.access_token });
      expect(expired.status).to.equal(401);
      expect(expired.headers.get('www-authenticate')).to.include('resource_metadata=');
    });

    it('a forged or expired sign-in page, a denied consent, and an agent token at sign-in', async () => {
      const verifier = randomBytes(32).toString('base64url');
      const noCsrf = await fetch(`${t.url}/oauth/consent`, { ...form({ pending: 'x', csrf: 'y', action: 'approve' }), redirect: 'manual' });
      expect(noCsrf.status).to.equal(403);
      const { location } = await consent(authorizeUrl(verifier), dave.token, 'deny');
      expect(location.searchParams.get('error')).to.equal('access_denied');
      const page = await fetch(authorizeUrl(verifier));
      const html = await page.text();
      const cookie = /svc_oauth_csrf=[^;]+/.exec(page.headers.get('set-cookie') ?? '')![0];
      const pending = /name="pending" value="([^"]+)"/.exec(html)![1]!;
      const csrf = /name="csrf" value="([^"]+)"/.exec(html)![1]!;
      const bad = await fetch(`${t.url}/oauth/consent`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
        body: new URLSearchParams({ pending, csrf, action: 'signin', token: 'svc_pat_not-a-real-token-at-all' }).toString(),
      });
      expect(bad.status).to.equal(401);
      expect(await bad.text()).to.include('not a valid personal access token');
      // the consent page names the client, and never puts a token in a URL
      expect(html)
        .to.include('Manual')
        .and.not.match(/svc_pat_[0-9A-Za-z]{10,}/);
      expect(bad.url).to.not.include('svc_pat_');
    });

    it('a client ID metadata document (an http loopback URL here) is a client without registration', async () => {
      let docUrl = '';
      const server: Server = createServer((_req, res) => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ client_id: docUrl, client_name: 'Doc Client', redirect_uris: [REDIRECT] }));
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      docUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/client.json`;
      try {
        const verifier = randomBytes(32).toString('base64url');
        const url = authorizeUrl(verifier, { client_id: docUrl });
        const { location, pages } = await consent(url, dave.token);
        expect(pages[0]).to.include('Doc Client');
        const res = await fetch(
          `${t.url}/oauth/token`,
          form({
            grant_type: 'authorization_code',
            client_id: docUrl,
            code: location.searchParams.get('code')!,
            code_verifier: verifier,
            redirect_uri: REDIRECT,
          }),
        );
        expect(res.status).to.equal(200);
      } finally {
        server.close();
      }
    });

    it('no token, code, refresh token or PAT reached a log line', () => {
      const all = t.logs.join('\n');
      expect(all).to.not.match(/svc_(pat|oat|ort)_[0-9A-Za-z]{10,}/);
      expect(all).to.not.include(dave.token).and.not.include(alice.token);
    });
  });
});

describe('oauth: connector JWTs', function () {
  let t: TestServer;
  let jwks: Server;
  let privateKey: CryptoKey;
  const sign = (claims: Record<string, unknown>, opts: { exp?: string; aud?: string; iss?: string; nbf?: number } = {}) => {
    const jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(opts.iss ?? 'https://idp.example')
      .setAudience(opts.aud ?? 'workgraph')
      .setIssuedAt()
      .setExpirationTime(opts.exp ?? '5m');
    if (opts.nbf) jwt.setNotBefore(opts.nbf);
    return jwt.sign(privateKey);
  };
  before(async () => {
    const pair = await generateKeyPair('ES256', { extractable: true });
    privateKey = pair.privateKey as CryptoKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' };
    jwks = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
    t = await startTestServer({
      plugins: allPlugins,
      config: {
        jwtIssuer: 'https://idp.example',
        jwtAudience: 'workgraph',
        jwtJwksUrl: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`,
      },
    });
  });
  after(async () => {
    await t.close();
    jwks.close();
  });

  it('a JWT signed by the configured issuer, for this org, maps to its person (sub or email), over REST and MCP', async () => {
    const bySub = await sign({ sub: t.adminPerson, org: t.org });
    const me = await t.api('GET', '/v1/me', { token: bySub });
    expect(me.status, me.text).to.equal(200);
    expect(me.body).to.include({ person: t.adminPerson, org: t.org });
    const byEmail = await sign({ sub: 'idp-user-1', email: 'ADMIN@localhost', org: t.org });
    expect((await t.api('GET', '/v1/me', { token: byEmail })).body.person).to.equal(t.adminPerson);
    const client = await t.mcp(bySub);
    expect((await t.tool(client, 'get_node', { id: 'proj-root' })).isError).to.equal(false);
    // it acts for the person, but cannot mint credentials that would outlive it
    const mint = await t.api('POST', '/v1/me/tokens', { token: bySub, body: {} });
    expect(mint.status).to.equal(403);
  });

  it('a foreign org, a wrong audience or issuer, an expired or not-yet-valid token, an unknown person, another key: 401', async () => {
    const { privateKey: other } = await generateKeyPair('ES256');
    const cases = [
      await sign({ sub: t.adminPerson, org: 'someone-else' }),
      await sign({ sub: t.adminPerson }),
      await sign({ sub: t.adminPerson, org: t.org }, { aud: 'another-api' }),
      await sign({ sub: t.adminPerson, org: t.org }, { iss: 'https://evil.example' }),
      await sign({ sub: t.adminPerson, org: t.org }, { exp: '-1m' }),
      await sign({ sub: t.adminPerson, org: t.org }, { nbf: Math.floor(Date.now() / 1000) + 3600 }),
      await sign({ sub: 'person-nobody', org: t.org }),
      await new SignJWT({ sub: t.adminPerson, org: t.org })
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .setIssuer('https://idp.example')
        .setAudience('workgraph')
        .setExpirationTime('5m')
        .sign(other),
    ];
    for (const [i, token] of cases.entries()) {
      const res = await t.api('GET', '/v1/me', { token });
      expect(res.status, `case ${i}`).to.equal(401);
    }
    expect(t.logs.join('\n')).to.not.include(cases[0]!);
  });
});
