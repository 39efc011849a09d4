/**
 * The whole MCP OAuth sign-in in a real browser (Debian's Chromium driven by playwright-core):
 * the MCP SDK's client discovers the server's metadata and registers, the authorization URL is
 * opened in Chromium, the person signs in with a PAT on the consent page and presses Approve,
 * Chromium follows the redirect to the client's loopback HTTP server (RFC 8252), which receives
 * the code; the client exchanges it and calls a tool. Chromium enforces the page's CSP
 * `form-action` on the redirect that answers the form, so this fails if the consent page's
 * policy does not allow the client's redirect URI.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { allPlugins } from '../../../scripts/plugins.js';
import { addPerson, startTestServer, type TestServer } from '../../helpers/harness.js';
import { MemoryOAuthClient } from '../../helpers/oauth-client.js';
import { launch, watch } from '../app/browser.js';

/** The MCP client's side: what a desktop MCP client keeps between the steps of the flow. */
class BrowserClient extends MemoryOAuthClient {
  constructor(redirect: string) {
    super(redirect, 'Browser MCP client');
  }
}

/** The client's loopback redirect receiver: resolves with the query of the first /callback request. */
async function callbackServer(host = '127.0.0.1'): Promise<{ server: Server; url: string; received: Promise<URLSearchParams> }> {
  let deliver!: (q: URLSearchParams) => void;
  const received = new Promise<URLSearchParams>((r) => (deliver = r));
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/callback') {
      res.statusCode = 404;
      res.end();
      return;
    }
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(
      '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Connected</title></head><body><main><h1>You can close this window</h1></main></body></html>',
    );
    deliver(url.searchParams);
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  const name = host.includes(':') ? `[${host}]` : host;
  return { server, url: `http://${name}:${(server.address() as AddressInfo).port}/callback`, received };
}

/** Resolves with the promise's value, or fails naming what never happened. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms))).finally(() =>
      clearTimeout(timer),
    ),
  ]).finally(() => clearTimeout(timer));
}

describe('oauth: the MCP OAuth sign-in in Chromium (consent page, CSP, loopback redirect)', function () {
  this.timeout(90_000);
  let t: TestServer;
  let browser: Browser;
  let alice: { id: string; token: string };
  before(async () => {
    t = await startTestServer({ plugins: allPlugins });
    alice = await addPerson(t, 'Alice Browser');
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  it('discovers, registers, signs in and approves in the browser, receives the code on loopback, exchanges it, and calls a tool', async () => {
    const cb = await callbackServer();
    try {
      const client = new BrowserClient(cb.url);
      expect(await auth(client, { serverUrl: `${t.url}/mcp` })).to.equal('REDIRECT');
      expect(client.info?.client_id, 'registered').to.be.a('string');
      const authorizationUrl = client.authorizationUrl!;
      expect(authorizationUrl.origin).to.equal(t.url);

      const context = await browser.newContext();
      const page = await context.newPage();
      const w = watch(page);
      await page.goto(authorizationUrl.href);
      expect(await page.title()).to.include('Browser MCP client');
      // the consent page's sign-in step: a personal access token
      await page.fill('#token', alice.token);
      await Promise.all([page.waitForSelector('button[value=approve]'), page.click('button[value=signin]')]);
      expect(await page.textContent('main'))
        .to.include('Alice Browser')
        .and.include(t.org);
      await page.click('button[value=approve]');
      const query = await within(cb.received, 15_000, 'the browser did not reach the client redirect URI (a CSP form-action block?)');
      await page.waitForURL((u) => u.href.startsWith(cb.url));
      expect(query.get('error')).to.equal(null);
      const code = query.get('code');
      expect(code).to.be.a('string');
      expect(w.problems.filter((p) => /Content Security Policy|form-action/i.test(p))).to.deep.equal([]);
      await context.close();

      expect(await auth(client, { serverUrl: `${t.url}/mcp`, authorizationCode: code! })).to.equal('AUTHORIZED');
      expect(client.saved?.access_token).to.match(/^svc_oat_/);
      const mcp = new Client({ name: 'oauth-browser', version: '0.0.0' });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { authProvider: client }));
      const read = (await mcp.callTool({ name: 'get_node', arguments: { id: 'proj-root' } })) as {
        isError?: boolean;
        content: Array<{ text: string }>;
      };
      expect(read.isError ?? false, read.content[0]?.text).to.equal(false);
      expect(read.content[0]!.text).to.include('proj-root');
      await mcp.close();
    } finally {
      cb.server.close();
    }
  });

  it('an IPv6 loopback redirect URI (which CSP cannot name) is reached too, through a page that navigates on', async () => {
    const cb = await callbackServer('::1');
    try {
      const client = new BrowserClient(cb.url);
      expect(await auth(client, { serverUrl: `${t.url}/mcp` })).to.equal('REDIRECT');
      const context = await browser.newContext();
      const page = await context.newPage();
      const w = watch(page);
      await page.goto(client.authorizationUrl!.href);
      await page.fill('#token', alice.token);
      await Promise.all([page.waitForSelector('button[value=approve]'), page.click('button[value=signin]')]);
      await page.click('button[value=approve]');
      const query = await within(cb.received, 15_000, 'the browser did not reach the [::1] redirect URI');
      expect(query.get('code')).to.be.a('string');
      expect(w.problems.filter((p) => /Content Security Policy|form-action/i.test(p))).to.deep.equal([]);
      await context.close();
      expect(await auth(client, { serverUrl: `${t.url}/mcp`, authorizationCode: query.get('code')! })).to.equal('AUTHORIZED');
    } finally {
      cb.server.close();
    }
  });

  it('Deny in the browser returns access_denied to the client redirect URI', async () => {
    const cb = await callbackServer();
    try {
      const client = new BrowserClient(cb.url);
      expect(await auth(client, { serverUrl: `${t.url}/mcp` })).to.equal('REDIRECT');
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(client.authorizationUrl!.href);
      await page.click('button[value=deny]');
      const query = await within(cb.received, 15_000, 'the browser did not reach the client redirect URI');
      expect(query.get('error')).to.equal('access_denied');
      await context.close();
    } finally {
      cb.server.close();
    }
  });
});
