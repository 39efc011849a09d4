/**
 * The operator console's GitHub page (plugins/app/pages/admin/github.ts) over plain HTTP with a
 * real session: an admin sees each link (repository, state, synced issues, inbound queue, the
 * webhook URL) and never a credential, and disables and enables a link with its form; a member
 * gets the 403 page and the form changes nothing. In Chromium, with a link listed: axe finds
 * nothing serious, no CSP violation or script error, no sideways scroll at a phone's width.
 */
import { expect } from 'chai';
import { addPerson, runSecrets, startTestServer, type TestServer } from '../../helpers/harness.js';
import { axe, launch, serious, signIn, watch } from '../app/browser.js';

/** A browser-like session: cookies kept, the page's CSRF token read from its forms. */
class Session {
  cookies = new Map<string, string>();
  csrf = '';
  constructor(readonly base: string) {}
  async request(method: string, path: string, form?: Record<string, string>) {
    const headers: Record<string, string> = { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
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
    const text = await res.text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(text)?.[1];
    if (csrf) this.csrf = csrf;
    return { status: res.status, location: res.headers.get('location'), text };
  }
  async signIn(token: string) {
    await this.request('GET', '/app/signin');
    await this.request('POST', '/app/signin', { csrf: this.csrf, token, next: '/app/queue' });
    await this.request('GET', '/app/queue');
  }
}

describe('github: the operator console page', function () {
  this.timeout(60_000);
  let t: TestServer;
  const TOKEN = 'github_pat_console_test_0123456789';

  before(async () => {
    t = await startTestServer();
    runSecrets.add(TOKEN);
  });
  after(async () => {
    await t.close();
  });

  it('lists the links without credentials; an admin disables and enables one; a member gets 403', async () => {
    const created = await t.api('POST', '/v1/integrations/github/links', {
      body: { repo: 'acme/console', token: TOKEN, first_sync: false },
    });
    expect(created.status, created.text).to.equal(201);
    const secret: string = created.body.webhook_secret;
    runSecrets.add(secret);
    const id: string = created.body.link.id;
    const admin = new Session(t.url);
    await admin.signIn(t.adminToken);
    const page = await admin.request('GET', '/app/admin/github');
    expect(page.status).to.equal(200);
    expect(page.text).to.match(/<h1>GitHub<\/h1>/);
    expect(page.text).to.include('acme/console');
    expect(page.text).to.include(`/v1/integrations/github/webhook?tenant=${t.org}`);
    expect(page.text).to.include('href="/app/admin/github"');
    expect(page.text).to.not.include(TOKEN);
    expect(page.text).to.not.include(secret);

    const off = await admin.request('POST', `/app/admin/github/${id}/enabled`, { csrf: admin.csrf, enabled: 'false' });
    expect(off.status).to.equal(303);
    const after = await admin.request('GET', off.location!);
    expect(after.text).to.include('The link of acme/console is disabled');
    expect((await t.api('GET', `/v1/integrations/github/links/${id}`)).body.enabled).to.equal(false);
    const on = await admin.request('POST', `/app/admin/github/${id}/enabled`, { csrf: admin.csrf, enabled: 'true' });
    expect(on.status).to.equal(303);
    expect((await t.api('GET', `/v1/integrations/github/links/${id}`)).body.enabled).to.equal(true);

    const bob = await addPerson(t, 'Bob Builder');
    const member = new Session(t.url);
    await member.signIn(bob.token);
    expect((await member.request('GET', '/app/admin/github')).status).to.equal(403);
    const refused = await member.request('POST', `/app/admin/github/${id}/enabled`, { csrf: member.csrf, enabled: 'false' });
    expect(refused.status).to.equal(403);
    expect((await t.api('GET', `/v1/integrations/github/links/${id}`)).body.enabled).to.equal(true);
  });

  it('in Chromium, with a link listed: accessible, under the CSP, no sideways scroll at 1280 and 390 px', async () => {
    const browser = await launch();
    try {
      for (const width of [1280, 390]) {
        const context = await browser.newContext({ viewport: { width, height: 800 } });
        const page = await signIn(t, context, t.adminToken);
        const w = watch(page);
        await page.goto(`${t.url}/app/admin/github`);
        await page.waitForLoadState('networkidle');
        expect(await page.textContent('h1')).to.equal('GitHub');
        expect(await page.textContent('table')).to.include('acme/console');
        expect(serious(await axe(page)), `${width}px`).to.deep.equal([]);
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        expect(overflow, `scrolls sideways at ${width}px`).to.be.at.most(0);
        expect(w.problems).to.deep.equal([]);
        await context.close();
      }
    } finally {
      await browser.close();
    }
  });
});
