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
import { FormClient } from '../app/form-client.js';

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
    const admin = new FormClient(t.url);
    await admin.signedIn(t.adminToken);
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
    const member = new FormClient(t.url);
    await member.signedIn(bob.token);
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
