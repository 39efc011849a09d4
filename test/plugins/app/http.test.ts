/**
 * The app over plain HTTP: security headers on every answer, readable error pages (never a
 * 500 for bad input), CSRF on sign-in, no open redirect after sign-in, a tenant without the
 * plugin gets 404, and tenant switching across two signed-in tenants (org choices).
 */
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../../helpers/harness.js';
import { seedGraph } from './seed.js';

class Browserless {
  cookies = new Map<string, string>();
  constructor(readonly base: string) {}
  async request(method: string, path: string, form?: Record<string, string>, contentType = 'application/x-www-form-urlencoded') {
    const headers: Record<string, string> = { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
    if (form) headers['content-type'] = contentType;
    const res = await fetch(this.base + path, {
      method,
      headers,
      body: form ? new URLSearchParams(form).toString() : undefined,
      redirect: 'manual',
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const [k, v] = pair!.split('=');
      if (v) this.cookies.set(k!, v);
      else this.cookies.delete(k!);
    }
    return { status: res.status, location: res.headers.get('location'), headers: res.headers, text: await res.text() };
  }
  csrfOf(html: string): string {
    return /name="csrf" value="([^"]+)"/.exec(html)![1]!;
  }
  async signIn(token: string, next = '/app/queue') {
    const page = await this.request('GET', '/app/signin');
    return this.request('POST', '/app/signin', { csrf: this.csrfOf(page.text), token, next });
  }
}

describe('app: HTTP behaviour', function () {
  this.timeout(60_000);
  let t: TestServer;
  let acme: { token: string };
  let bare: { token: string };

  before(async () => {
    t = await startTestServer();
    await seedGraph(t);
    const tenants = t.server.services.tenants;
    acme = await tenants.create({ org: 'acme', adminName: 'Acme Admin', adminEmail: 'admin@acme.test', plugins: tenants.allPluginNames });
    bare = await tenants.create({ org: 'bare', adminName: 'Bare Admin', adminEmail: 'admin@bare.test', plugins: ['core'] });
    await tenants.scan();
  });
  after(async () => {
    await t?.close();
  });

  it('every answer carries the strict CSP and the usual hardening headers', async () => {
    const b = new Browserless(t.url);
    await b.signIn(t.adminToken);
    for (const path of ['/app/signin', '/app/queue', '/app/nodes/task-login', '/app/nodes/BAD', '/app/static/app.css']) {
      const res = await b.request('GET', path);
      const csp = res.headers.get('content-security-policy')!;
      expect(csp, path).to.include("default-src 'self'").and.include("script-src 'self'").and.include("frame-ancestors 'none'");
      expect(csp, path).to.not.include('unsafe-inline');
      expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
      expect(res.headers.get('referrer-policy')).to.equal('no-referrer');
    }
  });

  it('bad input gets a readable page with its status, never a 500', async () => {
    const b = new Browserless(t.url);
    await b.signIn(t.adminToken);
    const cases: Array<[string, string, number, string?]> = [
      ['GET', '/app/nodes/BAD%20ID', 422],
      ['GET', '/app/nodes/task-nowhere', 404],
      ['GET', '/app/queue?readiness=sometimes', 422],
      ['GET', '/app/queue?offset=-5', 200],
      ['GET', '/app/nodes/task-login/history/zzz', 422],
      ['GET', '/app/nodes/task-login/history/0000000', 404],
      ['GET', '/app/programs/task-nowhere', 404],
      ['GET', '/app/analytics?project=BAD!', 422],
      ['GET', '/app/analytics?weeks=lots', 422],
      ['GET', '/app/nodes/task-login/graph?depth=7', 200],
      ['GET', '/app/views/lens-nowhere', 404],
      ['GET', '/app/nothing-here', 404],
      ['GET', '/app/static/..%2F..%2Fpackage.json', 404],
      ['GET', '/app/static/vendor/lodash.js', 404],
      ['DELETE', '/app/queue', 405],
      ['GET', '/app/nodes/%E0%A4%A', 400],
    ];
    for (const [method, path, status] of cases) {
      const res = await b.request(method, path);
      expect(res.status, `${method} ${path}: ${res.text.slice(0, 300)}`).to.equal(status);
      if (status !== 200) {
        expect(res.headers.get('content-type'), path).to.match(/^text\/html/);
        expect(res.text, path)
          .to.match(/<h1>[^<]+<\/h1>/)
          .and.match(/code <code>[a-z_]+<\/code>/);
      }
    }
    const csrf = b.csrfOf((await b.request('GET', '/app/nodes/task-login')).text);
    const posts: Array<[string, Record<string, string>, number]> = [
      ['/app/nodes/task-login/status', { csrf, status: 'sideways' }, 409],
      ['/app/nodes/task-login/priority', { csrf, priority: 'urgent' }, 422],
      ['/app/nodes/task-login/edges', { csrf, type: 'loves', to: 'task-docs' }, 422],
      ['/app/nodes/task-login/edit', { csrf, body: 'x'.repeat(9000), revision: 'stale' }, 409],
      ['/app/nodes/proj-web/claim', { csrf }, 422],
    ];
    for (const [path, form, status] of posts) {
      const res = await b.request('POST', path, form);
      expect(res.status, `${path}: ${res.text.slice(0, 200)}`).to.equal(status);
      expect(res.text).to.include('role="alert"');
    }
    const json = await b.request('POST', '/app/nodes/task-login/claim', { csrf }, 'application/json');
    expect(json.status).to.equal(400);
    const huge = await b.request('POST', '/app/nodes/task-login/edit', { csrf, body: 'x'.repeat(70_000), revision: 'r' });
    expect(huge.status).to.equal(413);
  });

  it("a live page's background refresh neither shows nor takes the one-time message of a form post", async () => {
    const b = new Browserless(t.url);
    await b.signIn(t.adminToken);
    const csrf = b.csrfOf((await b.request('GET', '/app/nodes/task-docs')).text);
    const posted = await b.request('POST', '/app/nodes/task-docs/priority', { csrf, priority: 'p1' });
    expect(posted.status, posted.text).to.equal(303);
    // the page's live.js refreshes (an event of that very change) before the browser follows the redirect
    const refresh = await fetch(`${t.url}/app/nodes/task-docs`, {
      headers: { cookie: [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; '), 'x-workgraph-live': '1' },
    });
    expect(refresh.status).to.equal(200);
    expect(await refresh.text()).to.not.include('Priority set to p1');
    const page = await b.request('GET', posted.location!);
    expect(page.text).to.match(/class="flash[^"]*"[^>]*>[^<]*Priority set to p1/);
    // shown once
    expect((await b.request('GET', posted.location!)).text).to.not.include('Priority set to p1');
  });

  it('sign-in needs the form it was given (CSRF cookie), and never redirects off the app', async () => {
    const b = new Browserless(t.url);
    const forged = await b.request('POST', '/app/signin', { csrf: 'x', token: t.adminToken, next: '/app/queue' });
    expect(forged.status).to.equal(403);
    expect(b.cookies.has('svc_app_session')).to.equal(false);
    for (const next of ['https://evil.test/', '//evil.test/x', '/\\evil.test', '/v1/me']) {
      const c = new Browserless(t.url);
      const res = await c.signIn(t.adminToken, next);
      expect(res.status).to.equal(303);
      expect(res.location).to.equal('/app/queue');
    }
    const stale = new Browserless(t.url);
    stale.cookies.set('svc_app_session', 'made-up-session-id');
    expect((await stale.request('GET', '/app/queue')).location).to.match(/^\/app\/signin/);
  });

  it('an agent token cannot sign in to the app', async () => {
    const agent = await t.api('POST', '/v1/agents', { body: { label: 'helper bot' } });
    const minted = await t.api('POST', `/v1/agents/${agent.body.id}/token`, { body: { standing: true } });
    const b = new Browserless(t.url);
    const res = await b.signIn(minted.body.token);
    expect(res.status).to.equal(401);
    expect(b.cookies.has('svc_app_session')).to.equal(false);
  });

  it('a tenant without the app plugin gets 404 pages', async () => {
    const b = new Browserless(t.url);
    expect((await b.signIn(bare.token)).status).to.equal(303);
    const res = await b.request('GET', '/app/queue');
    expect(res.status).to.equal(404);
    expect(res.text).to.include('not enabled for this tenant');
  });

  it('two tenants in one session: org choices list them, a switch changes whose graph is shown', async () => {
    const b = new Browserless(t.url);
    await b.signIn(t.adminToken);
    await b.signIn(acme.token);
    let orgs = await b.request('GET', '/app/orgs');
    expect(orgs.text).to.include('acme').and.include(t.org);
    expect(orgs.text).to.match(/acme<\/code>[^<]*\s*<span class="badge">current/);
    expect((await b.request('GET', '/app/nodes/task-login')).status).to.equal(404);
    const res = await b.request('POST', '/app/orgs', { csrf: b.csrfOf(orgs.text), org: t.org });
    expect(res.location).to.equal('/app/queue');
    expect((await b.request('GET', '/app/nodes/task-login')).status).to.equal(200);
    orgs = await b.request('GET', '/app/orgs');
    const refused = await b.request('POST', '/app/orgs', { csrf: b.csrfOf(orgs.text), org: 'bare' });
    expect(refused.location).to.equal('/app/orgs');
    expect((await b.request('GET', '/app/orgs')).text).to.include('You are not signed in to bare');
  });

  it('a share ticket of another tenant opens its view for a person signed in elsewhere', async () => {
    const minted = await t.api('POST', '/v1/lens/lens-open-work/ticket', { body: {} });
    const b = new Browserless(t.url);
    await b.signIn(acme.token);
    const exchange = await b.request('GET', `/app/views/lens-open-work?ticket=${minted.body.ticket}`);
    expect(exchange.status).to.equal(302);
    expect(exchange.location).to.equal('/app/views/lens-open-work');
    const view = await b.request('GET', '/app/views/lens-open-work');
    expect(view.status).to.equal(200);
    expect(view.text).to.include('Shared by').and.include('Open work');
  });

  it('GET /app sends a visitor to sign in and a signed-in person to the queue', async () => {
    const b = new Browserless(t.url);
    expect((await b.request('GET', '/app')).location).to.equal('/app/signin');
    await b.signIn(t.adminToken);
    expect((await b.request('GET', '/app')).location).to.equal('/app/queue');
  });

  it('the access log names route patterns, never ids, tokens or tickets', async () => {
    const b = new Browserless(t.url);
    await b.signIn(t.adminToken);
    await b.request('GET', '/app/nodes/task-login');
    const lines = t.logs.filter((l) => l.includes('"request"') && l.includes('/app'));
    expect(lines.some((l) => l.includes('"route":"/app/nodes/:id"'))).to.equal(true);
    for (const l of t.logs) expect(l).to.not.include(t.adminToken).and.not.include(b.cookies.get('svc_app_session')!);
  });
});
