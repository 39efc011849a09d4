/**
 * One-time sign-in links over plain HTTP (issue 25 item 6): `invite_person` over REST and MCP
 * (admins only), and redeeming a link at POST /app/invite/{org}: one use, 24 hours (or
 * `expires_in_hours`, 1 to 168), never in
 * another tenant, dead after a re-invite or offboarding; the secret reaches no log line.
 * The browser walk is test/plugins/app/invite.test.ts.
 */
import { expect } from 'chai';
import type { IncomingMessage } from 'node:http';
import { appRouter } from '../../../plugins/app/router.js';
import { addPerson, startTestServer, type TestServer } from '../../helpers/harness.js';
import { FormClient } from './form-client.js';

/** A browser following an invite link: GET the page (no fragment is sent), then post the secret with the form's CSRF token. */
class InviteBrowser extends FormClient {
  async redeem(link: string) {
    const url = new URL(link);
    const page = await this.request('GET', url.pathname);
    expect(page.status).to.equal(200);
    return this.request('POST', url.pathname, { csrf: this.csrfOf(page.text), secret: url.hash.slice(1) });
  }
}

describe('app: one-time sign-in links (invite_person, POST /app/invite/{org})', function () {
  this.timeout(60_000);
  let t: TestServer;
  let ada: { id: string; token: string };
  let bob: { id: string; token: string };

  before(async () => {
    t = await startTestServer();
    ada = await addPerson(t, 'Ada Lovelace');
    bob = await addPerson(t, 'Bob Builder');
  });
  after(() => t?.close());

  const invite = async (id: string, token = t.adminToken) => t.api('POST', `/v1/admin/people/${id}/invite`, { token });

  it('an admin gets a link shown once: secret in the fragment, 24 hours, only its hash stored', async () => {
    const before = t.clock.now();
    const res = await invite(ada.id);
    expect(res.status, res.text).to.equal(201);
    expect(res.body.person).to.equal(ada.id);
    const url = new URL(res.body.url);
    expect(url.pathname).to.equal(`/app/invite/${t.org}`);
    expect(url.search).to.equal('');
    const secret = url.hash.slice(1);
    expect(secret).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(res.body.expires_at)).to.be.within(before + 24 * 3600 * 1000, t.clock.now() + 24 * 3600 * 1000);
    const stored = t.server.services.tenants.get(t.org)!.state.collection<{ hash: string }>('signin-links').get(ada.id)!;
    expect(JSON.stringify(stored)).not.to.contain(secret);
    expect(stored.hash).to.match(/^[0-9a-f]{64}$/);
  });

  it('the link signs the person in once; a second use is refused (403) and changes nothing', async () => {
    const link = (await invite(ada.id)).body.url as string;
    const browser = new InviteBrowser(t.url);
    const res = await browser.redeem(link);
    expect(res.status, res.text).to.equal(303);
    expect(res.location).to.equal('/app/queue');
    const queue = await browser.request('GET', '/app/queue');
    expect(queue.status).to.equal(200);
    expect(queue.text).to.contain('Ada Lovelace');

    const other = new InviteBrowser(t.url);
    const again = await other.redeem(link);
    expect(again.status).to.equal(403);
    expect(again.text).to.contain('already used');
    expect(other.cookies.has('svc_app_session')).to.equal(false);
    // the session stands on a token record of its own, listed with the person's tokens
    const own = (await t.api('GET', '/v1/me/tokens', { token: ada.token })).body.tokens as Array<{ label: string | null }>;
    expect(own.map((o) => o.label)).to.include('app sign-in (invite link)');
    for (const line of t.logs) expect(line).not.to.contain(new URL(link).hash.slice(1));
  });

  it('an expired link is refused (410); a wrong or empty secret is 403', async () => {
    const link = (await invite(bob.id)).body.url as string;
    t.clock.advance(24 * 3600 * 1000 + 1);
    const res = await new InviteBrowser(t.url).redeem(link);
    expect(res.status).to.equal(410);
    expect(res.text).to.contain('expired');
    const wrong = new URL(link);
    wrong.hash = 'A'.repeat(43);
    expect((await new InviteBrowser(t.url).redeem(wrong.href)).status).to.equal(403);
    wrong.hash = '';
    expect((await new InviteBrowser(t.url).redeem(wrong.href)).status).to.equal(403);
  });

  it('`expires_in_hours` (1 to 168) sets the lifetime: a 3-day link opens after 2 days, not after 3; out of range is 422 over REST and MCP', async () => {
    const before = t.clock.now();
    const res = await t.api('POST', `/v1/admin/people/${bob.id}/invite`, { body: { expires_in_hours: 72 } });
    expect(res.status, res.text).to.equal(201);
    expect(Date.parse(res.body.expires_at)).to.be.within(before + 72 * 3600 * 1000, t.clock.now() + 72 * 3600 * 1000);
    t.clock.advance(48 * 3600 * 1000);
    expect((await new InviteBrowser(t.url).redeem(res.body.url as string)).status).to.equal(303);
    const late = (await t.api('POST', `/v1/admin/people/${bob.id}/invite`, { body: { expires_in_hours: 72 } })).body.url as string;
    t.clock.advance(72 * 3600 * 1000 + 1);
    expect((await new InviteBrowser(t.url).redeem(late)).status).to.equal(410);
    for (const hours of [0, 169, 1.5]) {
      const bad = await t.api('POST', `/v1/admin/people/${bob.id}/invite`, { body: { expires_in_hours: hours } });
      expect(bad.status, `${hours} hours`).to.equal(422);
      expect(bad.body.error.code).to.equal('validation_failed');
    }
    const admin = await t.mcp();
    const week = await t.tool(admin, 'invite_person', { id: bob.id, expires_in_hours: 168 });
    expect(week.isError, week.text).to.equal(false);
    expect(Date.parse(week.json.expires_at) - t.clock.now()).to.be.within(168 * 3600 * 1000 - 60_000, 168 * 3600 * 1000);
    const tooLong = await t.tool(admin, 'invite_person', { id: bob.id, expires_in_hours: 169 });
    expect(tooLong.isError).to.equal(true);
    expect(tooLong.text).to.contain('validation_failed');
  });

  it('a re-invite kills the older link; offboarding kills the newest and ends the session it made', async () => {
    const first = (await invite(bob.id)).body.url as string;
    const second = (await invite(bob.id)).body.url as string;
    expect((await new InviteBrowser(t.url).redeem(first)).status).to.equal(403);
    const browser = new InviteBrowser(t.url);
    expect((await browser.redeem(second)).status).to.equal(303);
    expect((await browser.request('GET', '/app/queue')).status).to.equal(200);

    const third = (await invite(bob.id)).body.url as string;
    const off = await t.api('DELETE', `/v1/admin/people/${bob.id}`);
    expect(off.status, off.text).to.equal(200);
    expect((await new InviteBrowser(t.url).redeem(third)).status).to.equal(403);
    // the session's token record was revoked with the person's tokens
    const after = await browser.request('GET', '/app/queue');
    expect(after.status).to.equal(303);
    expect(after.location).to.match(/^\/app\/signin/);
  });

  it("a link of one tenant does not open another tenant's door", async () => {
    const tenants = t.server.services.tenants;
    await tenants.create({ org: 'acme', adminName: 'Acme Admin', adminEmail: 'admin@acme.test', plugins: tenants.allPluginNames });
    await tenants.scan();
    const link = new URL((await invite(ada.id)).body.url as string);
    link.pathname = '/app/invite/acme';
    expect((await new InviteBrowser(t.url).redeem(link.href)).status).to.equal(403);
    link.pathname = '/app/invite/nowhere';
    expect((await new InviteBrowser(t.url).redeem(link.href)).status).to.equal(403);
  });

  it('a member may not invite (403); unknown people 404; the MCP twin answers the same', async () => {
    const res = await invite(ada.id, ada.token);
    expect(res.status).to.equal(403);
    expect(res.body.error.code).to.equal('forbidden');
    expect((await invite('person-nobody')).status).to.equal(404);
    expect((await invite('task-x')).status).to.equal(422);

    const admin = await t.mcp();
    const ok = await t.tool(admin, 'invite_person', { id: ada.id });
    expect(ok.isError, ok.text).to.equal(false);
    expect(ok.json.url).to.match(new RegExp(`/app/invite/${t.org}#`));
    const member = await t.mcp(ada.token);
    const denied = await t.tool(member, 'invite_person', { id: bob.id });
    expect(denied.isError).to.equal(true);
    expect(denied.text).to.contain('forbidden');
  });

  it('without SVC_OIDC_* the sign-in page offers no single sign-on and its address is a 404 page', async () => {
    const w = new InviteBrowser(t.url);
    expect((await w.request('GET', '/app/signin')).text).not.to.contain('/app/signin/oidc');
    const res = await w.request('GET', '/app/signin/oidc');
    expect(res.status).to.equal(404);
    expect(res.text).to.contain('Single sign-on is not set up');
  });

  it("cluster mode routes a link's form, and a provider sign-in naming a tenant, to that tenant's owner", async () => {
    const router = appRouter(t.server.services);
    const req = (method: string, url: string) => ({ method, url, headers: {} }) as IncomingMessage;
    expect(router.applies(req('POST', '/app/invite/acme'))).to.equal('headers');
    expect(await router.route(req('POST', '/app/invite/acme'), null)).to.deep.equal({ org: 'acme' });
    expect(await router.route(req('GET', '/app/signin/oidc?org=acme&next=%2Fapp%2Fqueue'), null)).to.deep.equal({ org: 'acme' });
    // the link's page itself holds nothing of the tenant's: any process serves it
    expect(router.applies(req('GET', '/app/invite/acme'))).to.equal(false);
    expect(router.applies(req('GET', '/app/signin/oidc'))).to.equal(false);
  });

  it('a form not from this app (no CSRF cookie) is refused and uses nothing up', async () => {
    const link = new URL((await invite(ada.id)).body.url as string);
    const stranger = new InviteBrowser(t.url);
    const res = await stranger.request('POST', link.pathname, { csrf: 'x'.repeat(43), secret: link.hash.slice(1) });
    expect(res.status).to.equal(403);
    expect((await new InviteBrowser(t.url).redeem(link.href)).status).to.equal(303);
  });
});
