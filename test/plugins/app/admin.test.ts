/**
 * Issue 25 acceptance for the operator console, in real Chromium: an operator disables a
 * plugin and its pages and tools disappear for the tenant (an app page 404s, MCP tools/list
 * over the real transport loses its tools), then re-enables it; creates a person (the sign-in
 * token shown once) and grants admin; revokes a token, which ends its use at once. A member
 * gets the 403 page and no Admin link. axe runs on the console pages it passes through.
 */
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import type { TestServer } from '../../helpers/harness.js';
import { axe, serious, signIn, useSeededApp, watch } from './browser.js';

describe('app: the operator console in Chromium (/app/admin)', function () {
  this.timeout(180_000);
  let t: TestServer;
  let browser: Browser;
  let bob: { id: string; token: string };

  // a webhook to a local address (never reached: created disabled) for its detail page
  const app = useSeededApp({ webhookAllowPrivate: true });
  before(() => {
    ({ t, browser, bob } = app);
  });

  const toolNames = async () => {
    const client = await t.mcp();
    return (await client.listTools()).tools.map((x) => x.name);
  };
  /** clicks a form's button and waits for the page the form's answer (or its redirect) loads */
  const submit = async (page: Page, selector: string) => {
    await Promise.all([page.waitForEvent('framenavigated', (f) => f === page.mainFrame()), page.click(selector)]);
    await page.waitForLoadState('load');
  };
  const flashText = (page: Page) => page.locator('main .flash').first().textContent();
  const noSerious = async (page: Page, what: string) => {
    const bad = serious(await axe(page));
    expect(bad, `${what}: ${JSON.stringify(bad)}`).to.deep.equal([]);
  };

  it("a webhook's detail page (its delivery log) has no serious axe finding at 1280 and 390 px", async () => {
    const made = await t.api('POST', '/v1/webhooks', { body: { url: 'http://127.0.0.1:9/hook', enabled: false, description: 'axe' } });
    expect(made.status, made.text).to.equal(201);
    const id = made.body.webhook.id as string;
    for (const width of [1280, 390]) {
      const context = await browser.newContext({ viewport: { width, height: 800 } });
      const page = await signIn(t, context, t.adminToken);
      const res = await page.goto(`${t.url}/app/admin/webhooks/${id}`);
      expect(res?.status()).to.equal(200);
      expect(await page.content()).to.not.include(made.body.secret as string);
      await noSerious(page, `webhook detail at ${width} px`);
      await context.close();
    }
    expect((await t.api('DELETE', `/v1/webhooks/${id}`)).status).to.be.oneOf([200, 204]);
  });

  it('a member has no Admin link and gets the 403 page', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await signIn(t, context, bob.token);
    expect(await page.locator('header nav a[href="/app/admin"]').count()).to.equal(0);
    const res = await page.goto(`${t.url}/app/admin/plugins`);
    expect(res?.status()).to.equal(403);
    expect(await page.textContent('h1')).to.equal('Not allowed');
    await context.close();
  });

  it('an operator disables a plugin: its pages and tools disappear for the tenant; re-enabling brings them back', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await signIn(t, context, t.adminToken);
    const w = watch(page);
    await Promise.all([page.waitForURL(/\/app\/admin\/plugins$/), page.click('header nav a[href="/app/admin"]')]);
    expect(await page.textContent('h1')).to.equal('Plugins');
    await noSerious(page, 'plugins');
    expect(await toolNames()).to.include('show_queue');

    // a plugin another one needs: refused, naming it
    await submit(page, '#plugin-leases button:has-text("Disable")');
    expect(await flashText(page)).to.equal("'leases' is needed by queue: disable that first");

    await submit(page, '#plugin-queue button:has-text("Disable")');
    expect(await flashText(page)).to.equal('queue is off for this tenant');
    expect(await page.locator('#plugin-queue').textContent()).to.include('off');
    const gone = await page.goto(`${t.url}/app/queue`);
    expect(gone?.status()).to.equal(404);
    expect(await page.textContent('main')).to.include('the queue plugin is not enabled for this tenant');
    expect(await toolNames()).to.not.include('show_queue');
    expect((await t.api('GET', '/v1/queue')).status).to.equal(404);

    await page.goto(`${t.url}/app/admin/plugins`);
    await submit(page, '#plugin-queue button:has-text("Enable")');
    expect(await flashText(page)).to.equal('queue is on for this tenant');
    expect((await page.goto(`${t.url}/app/queue`))?.status()).to.equal(200);
    expect(await toolNames()).to.include('show_queue');

    // the web app itself: the browser will not send the form without its confirmation box
    await page.goto(`${t.url}/app/admin/plugins`);
    await page.click('#plugin-app button:has-text("Disable")');
    expect(
      await page.evaluate(() => (document.querySelector('#plugin-app input[name=confirm]') as HTMLInputElement).validity.valueMissing),
    ).to.equal(true);
    expect(page.url()).to.match(/\/app\/admin\/plugins$/);
    expect((await t.api('GET', '/v1/tenant/plugins')).body.plugins.find((p: { name: string }) => p.name === 'app').enabled).to.equal(true);
    expect(w.problems.filter((x) => !/404 \(Not Found\)/.test(x))).to.deep.equal([]);
    await context.close();
  });

  it('creates a person with a sign-in token shown once, and grants them admin', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await signIn(t, context, t.adminToken);
    await page.goto(`${t.url}/app/admin/people`);
    await page.fill('#person-name', 'Dana Ops');
    await page.fill('#person-email', 'dana@example.test');
    await page.check('#person-token');
    await submit(page, 'button:has-text("Add person")');
    expect(await flashText(page)).to.equal('Added Dana Ops (dana@example.test).');
    const secret = await page.inputValue('#secret-value');
    expect(secret).to.match(/^svc_pat_/);
    await noSerious(page, 'people with a new token');
    const me = await t.api('GET', '/v1/me', { token: secret });
    expect(me.body).to.include({ name: 'Dana Ops', is_admin: false });
    const dana = me.body.person as string;

    await submit(page, `button[aria-label="Make admin: Dana Ops"]`);
    expect(await flashText(page)).to.equal('Dana Ops is now an admin');
    expect(await page.locator(`tr[id="${dana}"]`).textContent()).to.include('admin');
    expect(await page.content()).to.not.include(secret);
    expect((await t.api('GET', '/v1/me', { token: secret })).body.is_admin).to.equal(true);
    await context.close();
  });

  it('revokes a token: the person it belonged to is signed out of the API at once', async () => {
    const victim = (await t.api('POST', '/v1/admin/tokens', { body: { person: bob.id, label: 'laptop' } })).body as {
      token: string;
      hash_prefix: string;
    };
    expect((await t.api('GET', '/v1/me', { token: victim.token })).status).to.equal(200);
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await signIn(t, context, t.adminToken);
    await page.goto(`${t.url}/app/admin/tokens`);
    await noSerious(page, 'tokens at 390px');
    expect(await page.content()).to.not.include(victim.token);
    await submit(page, `#token-${victim.hash_prefix} button:has-text("Revoke")`);
    expect(await flashText(page)).to.equal(`Token ${victim.hash_prefix} is revoked`);
    expect(await page.locator(`#token-${victim.hash_prefix}`).count()).to.equal(0);
    expect((await t.api('GET', '/v1/me', { token: victim.token })).status).to.equal(401);
    await context.close();
  });
});
