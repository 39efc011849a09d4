/**
 * Sign-in without a token in Chromium (issue 25 item 6): an invited person opens the one-time
 * link and is signed in; the same link in another browser is refused; single sign-on against a
 * real OpenID Connect provider started here (test/helpers/oidc-provider.ts). axe-core on the
 * link page at 1280 and 390 px; no script error, CSP violation, or the link's secret in any
 * address the browser asks for or any server log line. HTTP edge cases:
 * test/plugins/app/invite-http.test.ts and test/plugins/app/oidc-http.test.ts.
 */
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { addPerson, startTestServer, type TestServer } from '../../helpers/harness.js';
import { startOidcProvider, type TestOidcProvider } from '../../helpers/oidc-provider.js';
import { axe, launch, serious, watch } from './browser.js';

describe('app in Chromium: sign-in link and single sign-on', function () {
  this.timeout(120_000);
  let t: TestServer;
  let idp: TestOidcProvider;
  let browser: Browser;
  let ada: { id: string; token: string };

  before(async () => {
    idp = await startOidcProvider();
    t = await startTestServer({ config: { oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret } } });
    idp.configure(`${t.url}/app/signin/oidc/callback`);
    ada = await addPerson(t, 'Ada Lovelace');
    await addPerson(t, 'Grace Hopper');
    idp.accounts.set('grace', { email: 'grace.hopper@example.test', email_verified: true, name: 'Grace' });
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await idp?.close();
  });

  it('an invited person signs in through the one-time link; a second use is refused', async () => {
    const res = await t.api('POST', `/v1/admin/people/${ada.id}/invite`);
    expect(res.status, res.text).to.equal(201);
    const link = res.body.url as string;
    const secret = new URL(link).hash.slice(1);

    const context = await browser.newContext();
    const page = await context.newPage();
    const w = watch(page);
    const failed: string[] = [];
    page.on('response', (r) => {
      if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
    });
    await page.goto(link);
    await page.locator('#invite-form').waitFor({ state: 'visible' });
    // the secret left the address bar (and history) as soon as the page read it
    expect(page.url()).to.equal(`${t.url}/app/invite/${t.org}`);
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      expect(serious(await axe(page)), `axe at ${width}px`).to.deep.equal([]);
    }
    await Promise.all([page.waitForURL(/\/app\/queue$/), page.getByRole('button', { name: 'Sign in' }).click()]);
    expect(await page.locator('.who').innerText()).to.contain('Ada Lovelace');
    // Chromium asks for /favicon.ico on its own (no page asks for it and Playwright does not show
    // the request): its 404 is the one console line let through; every request of the page succeeded
    expect(w.problems.filter((p) => !/Failed to load resource: .* 404/.test(p))).to.deep.equal([]);
    expect(failed).to.deep.equal([]);
    for (const url of w.urls) expect(url).not.to.contain(secret);

    const other = await browser.newContext();
    const again = await other.newPage();
    await again.goto(link);
    await again.locator('#invite-form').waitFor({ state: 'visible' });
    await Promise.all([
      again.waitForResponse((r) => r.request().method() === 'POST'),
      again.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    await again.getByRole('alert').filter({ hasText: 'already used' }).waitFor();
    expect(again.url()).to.contain(`/app/invite/${t.org}`);
    expect((await other.cookies()).some((c) => c.name === 'svc_app_session')).to.equal(false);
    for (const line of t.logs) expect(line).not.to.contain(secret);
    await context.close();
    await other.close();
  });

  it('a page opened without the secret says what is missing', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${t.url}/app/invite/${t.org}`);
    await page.locator('#invite-missing').waitFor({ state: 'visible' });
    expect(await page.locator('#invite-form').isHidden()).to.equal(true);
    expect(serious(await axe(page))).to.deep.equal([]);
    await context.close();
  });

  it('single sign-on: the provider vouches for an email and the app signs its person in', async () => {
    idp.signInAs('grace');
    const context = await browser.newContext();
    const page = await context.newPage();
    const w = watch(page);
    await page.goto(`${t.url}/app/queue`);
    await page.waitForURL(/\/app\/signin/);
    expect(serious(await axe(page))).to.deep.equal([]);
    await Promise.all([page.waitForURL(/\/app\/queue$/), page.getByRole('link', { name: 'Sign in with your identity provider' }).click()]);
    expect(await page.locator('.who').innerText()).to.contain('Grace Hopper');
    expect(w.problems.filter((p) => !/Failed to load resource: .* 404/.test(p))).to.deep.equal([]);
    expect(w.urls.some((u) => u.startsWith(idp.issuer))).to.equal(true);
    await context.close();
  });
});
