/**
 * The OAuth endpoints as an attacker uses them (each finding of the security review, reproduced
 * through the real HTTP server): redirect URIs a stranger registers, authorize errors that
 * redirect without the person, client ID metadata documents aimed at the server's own network,
 * pending authorizations that cost more with each one, and requests without a rate limit.
 */
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:http';
import { addressKey } from '../../../plugins/oauth/rate-limit.js';
import { allPlugins } from '../../../scripts/plugins.js';
import { startTestServer, type TestServer } from '../../helpers/harness.js';
import { until } from '../../helpers/until.js';

const challenge = () => createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
const register = (t: TestServer, body: Record<string, unknown>) =>
  fetch(`${t.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token_endpoint_auth_method: 'none', ...body }),
  });
const authorizeUrl = (t: TestServer, params: Record<string, string>) =>
  `${t.url}/oauth/authorize?${new URLSearchParams({ response_type: 'code', code_challenge: challenge(), code_challenge_method: 'S256', state: 'st', ...params })}`;
const fileStore = (t: TestServer) => !t.server.services.globalStore;

/** Total bytes of the pending-authorization storage under SVC_DATA_DIR/oauth (one file or a directory of them). */
function pendingStorage(dataDir: string): { bytes: number; files: number } {
  const root = join(dataDir, 'oauth');
  let bytes = 0;
  let files = 0;
  const walk = (path: string) => {
    const st = statSync(path);
    if (st.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
    else {
      bytes += st.size;
      files++;
    }
  };
  for (const name of readdirSync(root)) if (name.startsWith('pending')) walk(join(root, name));
  return { bytes, files };
}

/** The status of a GET sent from a chosen local address (a second client on this machine). */
function statusFrom(url: string, localAddress: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { localAddress }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

/** A TCP listener that only counts who connects: proof the server did (or did not) reach it. */
async function countingListener(): Promise<{ server: TcpServer; port: number; connections: () => number }> {
  let n = 0;
  const server = createTcpServer((socket) => {
    n++;
    socket.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, connections: () => n };
}

describe('oauth hardening: redirect URIs, metadata documents, pending authorizations, rate limits', function () {
  this.timeout(120_000);

  describe('with the default configuration', () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ plugins: allPlugins });
    });
    after(async () => t.close());

    it('registration refuses redirect URIs other than https or http on loopback (invalid_redirect_uri), and oversized names', async () => {
      for (const uri of [
        'http://evil.example/cb',
        'javascript:alert(1)',
        'com.example.app:/cb',
        'https://app.example/cb#frag',
        'http://127.0.0.1.evil.example/cb',
        'ftp://127.0.0.1/cb',
      ]) {
        const res = await register(t, { client_name: 'Evil', redirect_uris: [uri] });
        const body = (await res.json()) as { error: string };
        expect(res.status, uri).to.equal(400);
        expect(body.error, uri).to.equal('invalid_redirect_uri');
      }
      for (const uri of ['https://app.example/cb', 'http://127.0.0.1/cb', 'http://localhost:8765/cb', 'http://[::1]/cb']) {
        const res = await register(t, { client_name: 'Fine', redirect_uris: [uri] });
        expect(res.status, uri).to.equal(201);
      }
      const big = await register(t, { client_name: 'x'.repeat(90_000), redirect_uris: ['http://127.0.0.1/cb'] });
      expect(big.status).to.equal(400);
      expect(((await big.json()) as { error: string }).error).to.equal('invalid_client_metadata');
    });

    it('an authorize error for an https redirect URI is a page, not a redirect the person did not ask for', async () => {
      const res = await register(t, { client_name: 'Web app', redirect_uris: ['https://app.example/cb'] });
      const { client_id } = (await res.json()) as { client_id: string };
      const bad = await fetch(authorizeUrl(t, { client_id, redirect_uri: 'https://app.example/cb', code_challenge_method: 'plain' }), {
        redirect: 'manual',
      });
      expect(bad.status).to.equal(400);
      expect(bad.headers.get('location')).to.equal(null);
      expect(bad.headers.get('content-type')).to.include('text/html');
      expect(await bad.text()).to.include('invalid_request');
      // the same request, well formed, shows the sign-in page, whose forms may lead to this server and that origin only
      const ok = await fetch(authorizeUrl(t, { client_id, redirect_uri: 'https://app.example/cb' }), { redirect: 'manual' });
      expect(ok.status).to.equal(200);
      const csp = ok.headers.get('content-security-policy')!;
      expect(csp)
        .to.include("form-action 'self' https://app.example;")
        .and.include("default-src 'none'")
        .and.include("frame-ancestors 'none'");
    });

    it('a client ID metadata document on loopback or a private address is never fetched', async () => {
      const listener = await countingListener();
      try {
        const port = listener.port;
        for (const id of [
          `http://127.0.0.1:${port}/client.json`,
          `https://127.0.0.1:${port}/client.json`,
          `https://localhost:${port}/client.json`,
          `https://[::ffff:127.0.0.1]:${port}/client.json`,
          `http://0x7f.1:${port}/client.json`,
        ]) {
          const res = await fetch(authorizeUrl(t, { client_id: id, redirect_uri: 'http://127.0.0.1:45999/callback' }), {
            redirect: 'manual',
          });
          expect(res.status, id).to.equal(400);
          expect(res.headers.get('location'), id).to.equal(null);
        }
        expect(listener.connections(), 'connections the server made to the loopback listener').to.equal(0);
      } finally {
        listener.server.close();
      }
    });
  });

  describe('a client stored before the redirect URI rule', () => {
    let t: TestServer;
    before(async function () {
      const dataDir = mkdtempSync(join(tmpdir(), 'wg-test-'));
      mkdirSync(join(dataDir, 'oauth'), { recursive: true });
      const legacy = {
        client_id: 'legacy-client',
        client_name: 'Legacy',
        redirect_uris: ['http://evil.example/cb'],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        response_types: ['code'],
      };
      writeFileSync(join(dataDir, 'oauth', 'clients.json'), JSON.stringify({ 'legacy-client': legacy }));
      t = await startTestServer({ plugins: allPlugins, dataDir });
      if (!fileStore(t)) this.skip(); // the legacy record is a file; PostgreSQL mode starts empty
    });
    after(async () => t?.close());

    it('is never redirected to its http://evil.example redirect URI, with or without a bad parameter', async () => {
      for (const extra of <Array<Record<string, string>>>[
        { redirect_uri: 'http://evil.example/cb', code_challenge_method: 'plain' },
        { code_challenge_method: 'plain' },
        { redirect_uri: 'http://evil.example/cb' },
      ]) {
        const res = await fetch(authorizeUrl(t, { client_id: 'legacy-client', ...extra }), { redirect: 'manual' });
        expect(res.status, JSON.stringify(extra)).to.equal(400);
        expect(res.headers.get('location'), JSON.stringify(extra)).to.equal(null);
        // the client is known (not an unknown-client page): its redirect URI is what is refused
        expect(await res.text(), JSON.stringify(extra))
          .to.include('redirect URI')
          .and.not.include('not registered here');
      }
      // its record moved to the one-file-per-client layout, and the old file was kept aside
      expect(readdirSync(join(t.dataDir, 'oauth')))
        .to.include('clients')
        .and.include('clients.json.imported')
        .and.not.include('clients.json');
    });
  });

  describe('rate limits (SVC_OAUTH_RATE lowered to 4 a minute)', () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ plugins: allPlugins, config: { oauthRatePerMinute: 4 } });
    });
    after(async () => t.close());

    const expectLimited = async (res: Response, what: string) => {
      expect(res.status, what).to.equal(429);
      expect(Number(res.headers.get('retry-after')), what).to.be.within(1, 60);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code, what).to.equal('rate_limited');
    };

    it('an address counts as itself (IPv4), its IPv4 form (mapped), or its /64 (IPv6)', () => {
      expect(addressKey('203.0.113.7')).to.equal('203.0.113.7');
      expect(addressKey('::ffff:203.0.113.7')).to.equal('203.0.113.7');
      expect(addressKey('2001:db8:1:2:aaaa::1')).to.equal(addressKey('2001:db8:1:2:bbbb::9'));
      expect(addressKey('2001:db8:1:2::1')).to.not.equal(addressKey('2001:db8:1:3::1'));
    });

    it('authorize, consent and registration answer 429 rate_limited with Retry-After past the limit', async () => {
      const reg = await register(t, { client_name: 'Limited', redirect_uris: ['http://127.0.0.1/cb'] });
      expect(reg.status).to.equal(201);
      const { client_id } = (await reg.json()) as { client_id: string };
      // registration: a quarter of the limit (1 a minute)
      await expectLimited(await register(t, { client_name: 'Limited 2', redirect_uris: ['http://127.0.0.1/cb'] }), 'registration');
      for (let i = 0; i < 4; i++)
        expect(
          (await fetch(authorizeUrl(t, { client_id, redirect_uri: 'http://127.0.0.1:1234/cb' }), { redirect: 'manual' })).status,
        ).to.equal(200);
      await expectLimited(
        await fetch(authorizeUrl(t, { client_id, redirect_uri: 'http://127.0.0.1:1234/cb' }), { redirect: 'manual' }),
        'authorize',
      );
      // per address: another client address (127.0.0.2, also loopback) is not limited
      expect(await statusFrom(authorizeUrl(t, { client_id, redirect_uri: 'http://127.0.0.1:1234/cb' }), '127.0.0.2')).to.equal(200);
      const consent = () =>
        fetch(`${t.url}/oauth/consent`, {
          method: 'POST',
          redirect: 'manual',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'pending=x&csrf=y&action=signin&token=svc_pat_guess',
        });
      for (let i = 0; i < 4; i++) expect((await consent()).status).to.equal(403);
      await expectLimited(await consent(), 'consent');
    });

    it('token and revoke answer 429 rate_limited past the limit: a guessed code or refresh token costs a request like any other', async () => {
      const form = (path: string, body: string) =>
        fetch(`${t.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
      const guess = 'grant_type=refresh_token&refresh_token=guess&client_id=nobody';
      for (let i = 0; i < 4; i++) expect((await form('/oauth/token', guess)).status, `token ${i}`).to.be.within(400, 401);
      await expectLimited(await form('/oauth/token', guess), 'token');
      const revoke = 'token=guess&client_id=nobody';
      for (let i = 0; i < 4; i++) expect((await form('/oauth/revoke', revoke)).status, `revoke ${i}`).to.not.equal(429);
      await expectLimited(await form('/oauth/revoke', revoke), 'revoke');
    });
  });

  describe('pending authorizations (a 60 KB client_name from a metadata document, under its 64 KB cap)', () => {
    let t: TestServer;
    let doc: Server;
    let docUrl = '';
    before(async () => {
      doc = createServer((_req, res) => {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({ client_id: docUrl, client_name: `Big ${'n'.repeat(60_000)}`, redirect_uris: ['http://127.0.0.1/callback'] }),
        );
      });
      await new Promise<void>((r) => doc.listen(0, '127.0.0.1', r));
      docUrl = `http://127.0.0.1:${(doc.address() as AddressInfo).port}/client.json`;
      t = await startTestServer({ plugins: allPlugins, config: { oauthAllowPrivateMetadata: true, oauthRatePerMinute: 10_000 } });
    });
    after(async () => {
      await t.close();
      doc.close();
    });

    it('cost O(1) each: storage stays small and grows linearly; they expire', async function () {
      if (!fileStore(t)) this.skip();
      const url = () => authorizeUrl(t, { client_id: docUrl, redirect_uri: 'http://127.0.0.1:4321/callback', state: 's'.repeat(500) });
      const sizes: number[] = [];
      for (let batch = 0; batch < 3; batch++) {
        await Promise.all(
          Array.from({ length: 50 }, async () => {
            const res = await fetch(url(), { redirect: 'manual' });
            const html = await res.text();
            expect(res.status, html.slice(0, 200)).to.equal(200);
          }),
        );
        sizes.push(pendingStorage(t.dataDir).bytes);
      }
      // a record holds a reference to its client and bounded fields: well under 2 KB each, not 90 KB
      expect(sizes[2], `pending storage after 150 requests: ${sizes.join(', ')} bytes`).to.be.below(150 * 2048);
      const growth = [sizes[0]!, sizes[1]! - sizes[0]!, sizes[2]! - sizes[1]!];
      expect(Math.max(...growth), `growth per batch ${growth.join(', ')}`).to.be.below(Math.min(...growth) * 1.5);
      expect(pendingStorage(t.dataDir).files).to.equal(150);
      // the page still names the client, cut to a bounded length
      const page = await (await fetch(url())).text();
      expect(page).to.include('Big nnn').and.not.include('n'.repeat(1000));
      // expired ones are swept (at most once a minute, on the next authorize)
      t.clock.advance(11 * 60_000);
      expect((await fetch(url(), { redirect: 'manual' })).status).to.equal(200);
      await until(() => pendingStorage(t.dataDir).files === 1, 'the expired pending authorizations to be swept');
    });
  });
});
