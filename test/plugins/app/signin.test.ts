/**
 * The app's sign-in against the security review's findings, over plain HTTP: a session cookie
 * present before the sign-in never becomes the signed-in session (session fixation); a crafted
 * `next` is a safe same-app path or the default page, never a 500; wrong tokens from one
 * address are rate-limited (429, Retry-After, a readable page).
 */
import { expect } from 'chai';
import { request } from 'node:http';
import { safeNext } from '../../../plugins/app/pages/auth.js';
import { startTestServer, type TestServer } from '../../helpers/harness.js';
import { FormClient } from './form-client.js';

/** A GET with a raw (not re-encoded) request target, as a hostile client sends it. */
function rawGet(base: string, target: string, cookie = ''): Promise<{ status: number; location: string | undefined }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: target, headers: cookie ? { cookie } : {} }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('app: sign-in hardening', function () {
  this.timeout(60_000);
  let t: TestServer;
  let acme: { token: string };

  before(async () => {
    t = await startTestServer();
    const tenants = t.server.services.tenants;
    acme = await tenants.create({ org: 'acme', adminName: 'Acme Admin', adminEmail: 'admin@acme.test', plugins: tenants.allPluginNames });
    await tenants.scan();
  });
  after(() => t?.close());

  it('signing in with a planted session cookie issues a new session id and CSRF token; the planted id is dead', async () => {
    const attacker = new FormClient(t.url);
    expect((await attacker.signIn(acme.token)).status).to.equal(303);
    const planted = attacker.cookies.get('svc_app_session')!;
    const attackerCsrf = attacker.csrfOf((await attacker.request('GET', '/app/orgs')).text);

    const victim = new FormClient(t.url);
    victim.cookies.set('svc_app_session', planted);
    const res = await victim.signIn(t.adminToken);
    expect(res.status).to.equal(303);
    const fresh = victim.cookies.get('svc_app_session')!;
    expect(fresh).to.be.a('string').and.not.equal(planted);
    const victimPage = await victim.request('GET', '/app/orgs');
    expect(victimPage.status).to.equal(200);
    expect(victim.csrfOf(victimPage.text)).to.not.equal(attackerCsrf);

    // the attacker's copy of the old id no longer opens anything
    const riding = await attacker.request('GET', '/app/queue');
    expect(riding.status).to.equal(303);
    expect(riding.location).to.match(/^\/app\/signin/);
  });

  it('a second sign-in in the same browser also rotates the id and keeps both tenants', async () => {
    const b = new FormClient(t.url);
    await b.signIn(t.adminToken);
    const first = b.cookies.get('svc_app_session')!;
    await b.signIn(acme.token);
    const second = b.cookies.get('svc_app_session')!;
    expect(second).to.not.equal(first);
    const orgs = await b.request('GET', '/app/orgs');
    expect(orgs.text).to.include('acme').and.include(t.org);
    const old = new FormClient(t.url);
    old.cookies.set('svc_app_session', first);
    expect((await old.request('GET', '/app/queue')).status).to.equal(303);
  });

  it('a crafted next is never a 500: encoded when it is a path of the app, else the default page', async () => {
    const cases: Array<[string, string]> = [
      ['/app/\u007f', '/app/queue'],
      ['/app/\u0000', '/app/queue'],
      ['/app/%7F', '/app/%7F'],
      ['/app/\u0100', '/app/%C4%80'],
      ['/app/nodes/t\u00e2che?x=\u0100', '/app/nodes/t%C3%A2che?x=%C4%80'],
      ['/app/\ud800', '/app/%EF%BF%BD'],
      ['//evil.example', '/app/queue'],
      ['/\\evil', '/app/queue'],
      ['/app/\\..\\..\\evil', '/app/queue'],
      ['/\t/evil.example', '/app/queue'],
      ['/app/../v1/me', '/app/queue'],
      ['/app/%2e%2e/v1/me', '/app/queue'],
      ['/appx', '/app/queue'],
      ['https://evil.example/app', '/app/queue'],
      ['/app/views/lens-x?ticket=a b', '/app/views/lens-x?ticket=a%20b'],
    ];
    for (const [next, expected] of cases) {
      const b = new FormClient(t.url);
      const res = await b.signIn(t.adminToken, next);
      expect(res.status, JSON.stringify(next)).to.equal(303);
      expect(res.location, JSON.stringify(next)).to.equal(expected);
      expect(safeNext(next), JSON.stringify(next)).to.equal(expected);
    }
    // the sign-in page itself with such a next in its address
    for (const target of [
      '/app/signin?next=/app/%7F',
      '/app/signin?next=/app/%00',
      '/app/signin?next=/app/%C4%80',
      '/app/signin?next=%2F%2Fevil.example',
    ]) {
      expect((await rawGet(t.url, target)).status, target).to.equal(200);
    }
  });

  it('a redirect built from a decoded address (a share link with non-ASCII in it) is encoded, never a 500', async () => {
    const b = new FormClient(t.url);
    await b.signIn(t.adminToken);
    const cookie = `svc_app_session=${b.cookies.get('svc_app_session')}`;
    for (const target of ['/app/views/%C4%80?ticket=abc', '/views/%C4%80', '/app/views/%7F?ticket=abc', '/app/nodes/%C4%80/claim']) {
      const res = await rawGet(t.url, target, cookie);
      expect(res.status, target).to.be.below(500);
      if (res.location) expect(res.location, target).to.match(/^[\x21-\x7e]+$/);
    }
  });
});

describe('app: sign-in rate limit', function () {
  this.timeout(60_000);
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ config: { signinRatePerMinute: 3 } });
  });
  after(() => t?.close());

  it('wrong tokens from one address are answered 429 with Retry-After and a readable page; successes do not count', async () => {
    const b = new FormClient(t.url);
    const wrong = 'svc_pat_' + 'x'.repeat(40);
    expect((await b.signIn(wrong)).status).to.equal(401);
    expect((await b.signIn(wrong)).status).to.equal(401);
    expect((await b.signIn(t.adminToken)).status).to.equal(303);
    expect((await b.signIn(wrong)).status).to.equal(401);
    const limited = await b.signIn(wrong);
    expect(limited.status).to.equal(429);
    expect(Number(limited.headers.get('retry-after'))).to.be.within(1, 60);
    expect(limited.headers.get('content-type')).to.match(/^text\/html/);
    expect(limited.text).to.include('Too many sign-in attempts').and.include('role="alert"');
    // while limited, even the right token waits (the limit is on attempts, not on what they guess)
    expect((await b.signIn(t.adminToken)).status).to.equal(429);
  });
});
