/**
 * DNS-rebinding protection (kernel/host-guard.ts) and the kernel's security headers, through
 * the real HTTP server: a request whose Host does not name the service, or whose Origin is not
 * trusted, is a 403 envelope on every route (MCP, REST, OAuth, the app), before any token or
 * form is looked at; loopback names, SVC_PUBLIC_URL and SVC_ALLOWED_HOSTS/ORIGINS pass.
 */
import { expect } from 'chai';
import { request } from 'node:http';
import { configFromEnv } from '../../kernel/config.js';
import { checkHostAndOrigin, hostRules } from '../../kernel/host-guard.js';
import { startTestServer, type TestServer } from '../helpers/harness.js';

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

/** node:http, so the Host header is whatever the test says (fetch does not let a caller set it). */
function raw(base: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Raw> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        headers: { ...(body ? { 'content-length': String(Buffer.byteLength(body)) } : {}), ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => {
          let json: any;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
});
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

describe('kernel: Host and Origin validation (DNS rebinding)', function () {
  this.timeout(30_000);
  let t: TestServer;
  let port: string;
  let auth: Record<string, string>;
  before(async () => {
    t = await startTestServer();
    port = new URL(t.url).port;
    auth = { authorization: `Bearer ${t.adminToken}` };
  });
  after(() => t.close());

  it('refuses POST /mcp with a valid token from a foreign Origin (403 forbidden_origin)', async () => {
    const r = await raw(t.url, 'POST', '/mcp', { ...MCP_HEADERS, ...auth, origin: 'http://evil.example' }, INIT);
    expect(r.status).to.equal(403);
    expect(r.json.error.code).to.equal('forbidden_origin');
  });

  it('refuses POST /mcp with a valid token and a foreign Host (403 forbidden_host)', async () => {
    const r = await raw(t.url, 'POST', '/mcp', { ...MCP_HEADERS, ...auth, host: 'evil.example' }, INIT);
    expect(r.status).to.equal(403);
    expect(r.json.error.code).to.equal('forbidden_host');
    expect(r.headers['x-content-type-options']).to.equal('nosniff');
  });

  it('refuses GET /v1/me with a valid token and a foreign Host', async () => {
    const r = await raw(t.url, 'GET', '/v1/me', { ...auth, host: 'evil.example' });
    expect(r.status).to.equal(403);
    expect(r.json.error.code).to.equal('forbidden_host');
  });

  it('refuses unauthenticated routes (OAuth registration, the app sign-in page) to a foreign Host', async () => {
    const reg = await raw(
      t.url,
      'POST',
      '/oauth/register',
      { 'content-type': 'application/json', host: `evil.example:${port}` },
      JSON.stringify({ redirect_uris: ['http://127.0.0.1:9/cb'] }),
    );
    expect(reg.status).to.equal(403);
    expect(reg.json.error.code).to.equal('forbidden_host');
    const page = await raw(t.url, 'GET', '/app/signin', { host: 'evil.example' });
    expect(page.status).to.equal(403);
    const wellKnown = await raw(t.url, 'GET', '/.well-known/oauth-authorization-server', { host: 'evil.example' });
    expect(wellKnown.status).to.equal(403);
  });

  it('refuses a sign-in form posted from another origin, even a local one on another port', async () => {
    const r = await raw(
      t.url,
      'POST',
      '/app/signin',
      { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://localhost:3000' },
      'token=x',
    );
    expect(r.status).to.equal(403);
    expect(r.json.error.code).to.equal('forbidden_origin');
    const nullOrigin = await raw(t.url, 'GET', '/v1/me', { ...auth, origin: 'null' });
    expect(nullOrigin.status).to.equal(403);
    const nullCrossSite = await raw(t.url, 'GET', '/v1/me', { ...auth, origin: 'null', 'sec-fetch-site': 'cross-site' });
    expect(nullCrossSite.status).to.equal(403);
  });

  it('accepts Origin: null on a same-origin form post (what Chromium sends under Referrer-Policy: no-referrer)', async () => {
    const r = await raw(t.url, 'GET', '/v1/me', { ...auth, origin: 'null', 'sec-fetch-site': 'same-origin' });
    expect(r.status).to.equal(200);
    const foreign = await raw(t.url, 'GET', '/v1/me', { ...auth, host: 'evil.example', origin: 'null', 'sec-fetch-site': 'same-origin' });
    expect(foreign.status).to.equal(403);
  });

  it('accepts loopback names (any port: cluster members forward the Host they got) and same-origin browsers', async () => {
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, '127.0.0.1:1', 'LOCALHOST']) {
      const r = await raw(t.url, 'GET', '/v1/me', { ...auth, host });
      expect(r.status, host).to.equal(200);
    }
    const same = await raw(t.url, 'GET', '/v1/me', { ...auth, host: `localhost:${port}`, origin: `http://localhost:${port}` });
    expect(same.status).to.equal(200);
    // a request forwarded by another member keeps that member's Host and its pages' Origin
    const forwarded = await raw(t.url, 'GET', '/v1/me', { ...auth, host: '127.0.0.1:41234', origin: 'http://127.0.0.1:41234' });
    expect(forwarded.status).to.equal(200);
    const cross = await raw(t.url, 'GET', '/v1/me', { ...auth, host: `127.0.0.1:${port}`, origin: `http://localhost:${port}` });
    expect(cross.status).to.equal(200);
  });

  it('answers MCP initialize to a loopback Host and Origin with a token', async () => {
    const r = await raw(
      t.url,
      'POST',
      '/mcp',
      { ...MCP_HEADERS, ...auth, host: `localhost:${port}`, origin: `http://localhost:${port}` },
      INIT,
    );
    expect(r.status).to.equal(200);
    expect(r.json.result.serverInfo.name).to.equal('workgraph');
  });

  it('lets /healthz answer whatever the Host (balancers probe by address), and still checks its Origin', async () => {
    expect((await raw(t.url, 'GET', '/healthz', { host: '10.1.2.3:8080' })).status).to.equal(200);
    expect((await raw(t.url, 'GET', '/healthz', { origin: 'http://evil.example' })).status).to.equal(403);
  });

  it('sends X-Content-Type-Options: nosniff on JSON answers, errors and the MCP endpoint', async () => {
    const ok = await t.api('GET', '/v1/me');
    expect(ok.headers.get('x-content-type-options')).to.equal('nosniff');
    const missing = await t.api('GET', '/v1/no-such-route');
    expect(missing.status).to.equal(404);
    expect(missing.headers.get('x-content-type-options')).to.equal('nosniff');
    const unauth = await t.api('GET', '/v1/me', { token: null });
    expect(unauth.headers.get('x-content-type-options')).to.equal('nosniff');
    const mcp = await raw(t.url, 'POST', '/mcp', { ...MCP_HEADERS, ...auth }, INIT);
    expect(mcp.headers['x-content-type-options']).to.equal('nosniff');
    expect((await t.api('GET', '/healthz')).headers.get('x-content-type-options')).to.equal('nosniff');
  });

  it("serves kernel HTML error pages with frame-ancestors 'none' and X-Frame-Options DENY", async () => {
    const r = await t.api('GET', '/v1/lens/no-such-lens/render?ticket=bogus', { token: null, headers: { accept: 'text/html' } });
    expect(r.headers.get('content-type')).to.match(/^text\/html/);
    expect(r.status).to.be.within(400, 499);
    expect(r.headers.get('content-security-policy')).to.contain("frame-ancestors 'none'");
    expect(r.headers.get('x-frame-options')).to.equal('DENY');
    expect(r.headers.get('x-content-type-options')).to.equal('nosniff');
  });
});

describe('kernel: Host and Origin validation with SVC_PUBLIC_URL and allow lists', function () {
  this.timeout(30_000);
  let t: TestServer;
  let auth: Record<string, string>;
  before(async () => {
    t = await startTestServer({
      config: {
        publicUrl: 'https://wg.example.com',
        allowedHosts: ['alt.example:8443', 'internal.example'],
        allowedOrigins: ['https://console.example'],
      },
    });
    auth = { authorization: `Bearer ${t.adminToken}` };
  });
  after(() => t.close());

  it('accepts the public host, the allowed hosts and origins; refuses the rest', async () => {
    const ok = async (headers: Record<string, string>) => (await raw(t.url, 'GET', '/v1/me', { ...auth, ...headers })).status;
    expect(await ok({ host: 'wg.example.com' })).to.equal(200);
    expect(await ok({ host: 'wg.example.com', origin: 'https://wg.example.com' })).to.equal(200);
    expect(await ok({ host: 'alt.example:8443' })).to.equal(200);
    expect(await ok({ host: 'internal.example:1234' })).to.equal(200);
    expect(await ok({ host: 'wg.example.com', origin: 'https://console.example' })).to.equal(200);
    expect(await ok({ host: 'alt.example:9' })).to.equal(403);
    expect(await ok({ host: 'evil.example' })).to.equal(403);
    expect(await ok({ host: 'wg.example.com', origin: 'https://evil.example' })).to.equal(403);
    expect(await ok({ host: 'wg.example.com', origin: 'http://wg.example.com.evil.example' })).to.equal(403);
  });
});

describe('kernel: host-guard rules and configuration', () => {
  it('does not check Host when bound to a non-loopback address with nothing configured, but still checks Origin', () => {
    const rules = hostRules({ host: '0.0.0.0', publicUrl: null, allowedHosts: [], allowedOrigins: [] }, 8080);
    expect(rules.anyPortNames).to.equal(null);
    expect(checkHostAndOrigin(rules, '/v1/me', 'anything.example', undefined)).to.equal(null);
    expect(checkHostAndOrigin(rules, '/v1/me', 'anything.example', 'http://anything.example')).to.equal(null);
    expect(checkHostAndOrigin(rules, '/v1/me', 'anything.example', 'http://evil.example')?.code).to.equal('forbidden_origin');
  });

  it('refuses a missing or malformed Host once Host is checked', () => {
    const rules = hostRules({ host: '127.0.0.1', publicUrl: null, allowedHosts: [], allowedOrigins: [] }, 8080);
    expect(checkHostAndOrigin(rules, '/mcp', undefined, undefined)?.code).to.equal('forbidden_host');
    expect(checkHostAndOrigin(rules, '/mcp', 'localhost/evil', undefined)?.code).to.equal('forbidden_host');
    expect(checkHostAndOrigin(rules, '/mcp', 'user@localhost', undefined)?.code).to.equal('forbidden_host');
  });

  it('rejects malformed SVC_ALLOWED_HOSTS and SVC_ALLOWED_ORIGINS at start', () => {
    expect(() => configFromEnv({ SVC_ALLOWED_HOSTS: 'a.example/path' })).to.throw(/SVC_ALLOWED_HOSTS/);
    expect(() => configFromEnv({ SVC_ALLOWED_ORIGINS: 'https://a.example/path' })).to.throw(/SVC_ALLOWED_ORIGINS/);
    expect(() => configFromEnv({ SVC_ALLOWED_ORIGINS: 'a.example' })).to.throw(/SVC_ALLOWED_ORIGINS/);
    expect(configFromEnv({ SVC_ALLOWED_HOSTS: ' A.example , b.example:81 ', SVC_ALLOWED_ORIGINS: 'https://C.example/' }))
      .to.include({})
      .and.satisfy(
        (c: { allowedHosts: string[]; allowedOrigins: string[] }) =>
          c.allowedHosts.join() === 'a.example,b.example:81' && c.allowedOrigins.join() === 'https://c.example',
      );
  });
});
