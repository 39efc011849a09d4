/**
 * The app's OpenID Connect sign-in over plain HTTP against a real provider (oidc-provider,
 * test/helpers/oidc-provider.ts): a verified email signs in its person; an unknown or unverified
 * email, an offboarded person, an answer for a sign-in another browser started and a replayed
 * answer are refused with a page, and make no session. The browser walk is
 * test/plugins/app/invite.test.ts.
 */
import { expect } from 'chai';
import { addPerson, startTestServer, type TestServer } from '../../helpers/harness.js';
import { startOidcProvider, type TestOidcProvider } from '../../helpers/oidc-provider.js';

/** A cookie jar per origin and redirects followed by hand, as a browser crosses from the app to the provider and back. */
class Walker {
  jars = new Map<string, Map<string, string>>();
  jar(origin: string): Map<string, string> {
    let jar = this.jars.get(origin);
    if (!jar) this.jars.set(origin, (jar = new Map()));
    return jar;
  }
  async get(url: string) {
    const u = new URL(url);
    const jar = this.jar(u.origin);
    const res = await fetch(u, { headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') }, redirect: 'manual' });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const [k, v] = [pair!.slice(0, eq), pair!.slice(eq + 1)];
      if (v && !/max-age=0|expires=thu, 01 jan 1970/i.test(c)) jar.set(k, v);
      else jar.delete(k);
    }
    const location = res.headers.get('location');
    return { status: res.status, location: location ? new URL(location, u).href : null, text: await res.text() };
  }
  /** Follows redirects until one leaves for `stopAt` (returned unfollowed) or a page answers. */
  async follow(url: string, stopAt: string) {
    let res = await this.get(url);
    for (let hops = 0; res.location && !res.location.startsWith(stopAt); hops++) {
      if (hops > 15) throw new Error('too many redirects');
      res = await this.get(res.location);
    }
    return res;
  }
}

describe('app: OpenID Connect sign-in (GET /app/signin/oidc, /app/signin/oidc/callback)', function () {
  this.timeout(60_000);
  let t: TestServer;
  let idp: TestOidcProvider;
  let ada: { id: string; token: string };
  let bob: { id: string; token: string };

  before(async () => {
    idp = await startOidcProvider();
    t = await startTestServer({ config: { oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret } } });
    idp.configure(`${t.url}/app/signin/oidc/callback`);
    ada = await addPerson(t, 'Ada Lovelace');
    bob = await addPerson(t, 'Bob Builder');
    idp.accounts.set('ada-sub', { email: 'Ada.Lovelace@example.test', email_verified: true, name: 'Ada' });
    idp.accounts.set('bob-sub', { email: 'bob.builder@example.test', email_verified: true, name: 'Bob' });
    idp.accounts.set('eve-sub', { email: 'eve@example.test', email_verified: true, name: 'Eve' });
    idp.accounts.set('unverified-sub', { email: 'ada.lovelace@example.test', email_verified: false, name: 'Not Ada' });
  });
  after(async () => {
    await t?.close();
    await idp?.close();
  });

  /** Starts a sign-in at the app and walks the provider until it sends the browser back to the callback. */
  async function toCallback(w: Walker, sub: string): Promise<string> {
    idp.signInAs(sub);
    const res = await w.follow(`${t.url}/app/signin/oidc?next=${encodeURIComponent('/app/inbox')}`, `${t.url}/app/signin/oidc/callback`);
    expect(res.location, res.text).to.be.a('string');
    return res.location!;
  }

  it('the sign-in page offers single sign-on; a verified email signs in its person (case-insensitive), to `next`', async () => {
    const w = new Walker();
    expect((await w.get(`${t.url}/app/signin`)).text).to.contain('/app/signin/oidc?next=');
    const callback = await toCallback(w, 'ada-sub');
    const url = new URL(callback);
    expect(url.searchParams.get('code')).to.be.a('string');
    expect(url.searchParams.get('state')).to.be.a('string');
    const done = await w.get(callback);
    expect(done.status, done.text).to.equal(303);
    expect(done.location).to.equal(`${t.url}/app/inbox`);
    const page = await w.get(`${t.url}/app/queue`);
    expect(page.status).to.equal(200);
    expect(page.text).to.contain('Ada Lovelace');
    const own = (await t.api('GET', '/v1/me/tokens', { token: ada.token })).body.tokens as Array<{ label: string | null }>;
    expect(own.map((o) => o.label)).to.include('app sign-in (OpenID Connect)');
    // the server logs route patterns only: neither the code nor the state reaches a log line
    for (const line of t.logs) {
      expect(line).not.to.contain(url.searchParams.get('code'));
      expect(line).not.to.contain(url.searchParams.get('state'));
    }
    // the code is single use: the same answer again is refused and signs no one in
    const replay = new Walker();
    replay.jar(t.url).set('svc_app_oidc', url.searchParams.get('state')!);
    const again = await replay.get(callback);
    expect(again.status).to.equal(403);
    expect(replay.jar(t.url).has('svc_app_session')).to.equal(false);
  });

  it('an email no person has, and an unverified email, are refused with a clear page', async () => {
    const w = new Walker();
    const unknown = await w.get(await toCallback(w, 'eve-sub'));
    expect(unknown.status).to.equal(403);
    expect(unknown.text).to.contain('No account for this email');
    expect(unknown.text).to.contain('eve@example.test');
    const w2 = new Walker();
    const unverified = await w2.get(await toCallback(w2, 'unverified-sub'));
    expect(unverified.status).to.equal(403);
    expect(unverified.text).to.contain('did not vouch');
    expect(w.jar(t.url).has('svc_app_session') || w2.jar(t.url).has('svc_app_session')).to.equal(false);
  });

  it("an answer to a sign-in another browser started is refused (login CSRF): the victim's browser gets no session", async () => {
    const attacker = new Walker();
    const callback = await toCallback(attacker, 'eve-sub');
    const victim = new Walker();
    const res = await victim.get(callback);
    expect(res.status).to.equal(403);
    expect(res.text).to.contain('not started here');
    expect(victim.jar(t.url).has('svc_app_session')).to.equal(false);
  });

  it('an offboarded person is refused until an admin invites them again', async () => {
    expect((await t.api('DELETE', `/v1/admin/people/${bob.id}`)).status).to.equal(200);
    const w = new Walker();
    const refused = await w.get(await toCallback(w, 'bob-sub'));
    expect(refused.status).to.equal(403);
    expect((await t.api('POST', `/v1/admin/people/${bob.id}/invite`)).status).to.equal(201);
    const w2 = new Walker();
    const ok = await w2.get(await toCallback(w2, 'bob-sub'));
    expect(ok.status, ok.text).to.equal(303);
    expect((await w2.get(`${t.url}/app/queue`)).text).to.contain('Bob Builder');
  });
});
