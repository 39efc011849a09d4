/**
 * Issue 24 part 5 acceptance, in real Chromium: Bob's inbox shows a question another client
 * routes to him through the API and the header counts it, without a reload; the queue page
 * shows another client's claim without a reload; when the stream drops, the page says "live
 * updates paused, retrying", and once it reconnects it shows what happened meanwhile (resumed
 * after the last event it saw).
 */
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { rmSync } from 'node:fs';
import { createLogger } from '../../../kernel/config.js';
import { startServer, type RunningServer } from '../../../kernel/server.js';
import { allPlugins } from '../../../scripts/plugins.js';
import { addPerson, startTestServer, type TestServer, testServerConfig } from '../../helpers/harness.js';
import { signIn, useSeededApp, watch } from './browser.js';
import { seedGraph } from './seed.js';

/** A mark in the page's JavaScript world: a reload or navigation would lose it. */
async function markPage(page: Page): Promise<() => Promise<boolean>> {
  await page.evaluate(() => ((window as unknown as { __kept: number }).__kept = 42));
  return () => page.evaluate(() => (window as unknown as { __kept?: number }).__kept === 42);
}

/** The page's stream is open (live.js sets data-live on <html>). */
const streamOpen = (page: Page) => page.waitForFunction(() => document.documentElement.dataset.live === 'open');

describe('app: live pages and the inbox (Chromium)', function () {
  this.timeout(120_000);
  let t: TestServer;
  let browser: Browser;
  let bob: { id: string; token: string };

  const app = useSeededApp();
  before(async () => {
    ({ t, browser, bob } = app);
    const r = await t.api('POST', `/v1/nodes/${bob.id}/edges`, { body: { type: 'stewards', to: 'task-launch' } });
    expect(r.status, r.text).to.equal(200);
  });

  it("Bob's inbox shows a question routed to him by another client, counted in the header, without a reload", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await signIn(t, context, bob.token);
    const w = watch(page);
    await page.goto(`${t.url}/app/inbox`);
    await streamOpen(page);
    const kept = await markPage(page);
    const before = Number(await page.textContent('#inbox-count'));
    const q = await t.api('POST', '/v1/questions', { body: { text: 'Which DNS provider do we launch on?', mentions: ['task-launch'] } });
    expect(q.status, q.text).to.equal(201);
    expect(q.body.routed_to).to.equal(bob.id);
    const item = page.locator('li.inbox-item.unread', { hasText: 'Which DNS provider do we launch on?' });
    await item.waitFor();
    expect(await item.textContent()).to.include('Question for you');
    await page.waitForFunction((n) => Number(document.getElementById('inbox-count')?.textContent) === n, before + 1);
    expect(await kept(), 'the page was not reloaded').to.equal(true);
    // the link goes to the question; marking it read takes it off the count
    expect(await item.locator('a').first().getAttribute('href')).to.equal(`/app/nodes/${q.body.id}`);
    await Promise.all([page.waitForURL(/\/app\/inbox$/), item.getByRole('button', { name: /Mark read/ }).click()]);
    expect(await page.locator('li.inbox-item', { hasText: 'Which DNS provider' }).getAttribute('class')).to.not.include('unread');
    expect(Number(await page.textContent('#inbox-count'))).to.equal(before);
    expect(w.problems).to.deep.equal([]);
    await context.close();
  });

  it('the queue page shows a claim by another client without a reload', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await signIn(t, context, bob.token);
    await page.goto(`${t.url}/app/queue`);
    await streamOpen(page);
    const kept = await markPage(page);
    const row = (title: string) => page.locator('table.queue tbody tr', { hasText: title });
    expect(await row('New sign-up form').textContent()).to.not.include('held by');
    const claim = await t.api('POST', '/v1/nodes/task-signup/claim');
    expect(claim.status, claim.text).to.equal(200);
    await page.waitForFunction(() =>
      [...document.querySelectorAll('table.queue tbody tr')].some(
        (tr) => /New sign-up form/.test(tr.textContent ?? '') && /held by/.test(tr.textContent ?? ''),
      ),
    );
    expect(await kept(), 'the page was not reloaded').to.equal(true);

    await context.close();
  });

  it('when the server goes away the page says live updates are paused, and after it is back it shows what happened meanwhile', async () => {
    const own = await startTestServer({ keepData: true });
    let second: RunningServer | null = null;
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      await seedGraph(own);
      const carol = await addPerson(own, 'Carol Claimer');
      const page = await signIn(own, context, carol.token);
      await page.goto(`${own.url}/app/nodes/task-docs`);
      await streamOpen(page);
      const kept = await markPage(page);
      // hold the reconnects off until the server is back and something happened
      await page.route('**/app/events**', (route) => route.abort('connectionrefused'));
      await own.server.close();
      const banner = page.locator('#live-banner');
      await banner.waitFor({ state: 'visible' });
      expect(await banner.textContent()).to.match(/live updates paused, retrying/i);
      second = await startServer({
        config: await testServerConfig(own.dataDir, { port: own.server.port }),
        plugins: allPlugins,
        clock: own.clock,
        log: createLogger(() => undefined),
      });
      const claim = await fetch(`${second.url}/v1/nodes/task-docs/claim`, {
        method: 'POST',
        headers: { authorization: `Bearer ${own.adminToken}` },
      });
      expect(claim.status, await claim.text()).to.equal(200);
      await page.unroute('**/app/events**');
      await banner.waitFor({ state: 'hidden', timeout: 30_000 });
      await page.waitForFunction(() => /Held by/.test(document.querySelector('[data-live="lease"]')?.textContent ?? ''));
      expect(await kept(), 'the page was not reloaded').to.equal(true);
    } finally {
      await context.close();
      await second?.close();
      rmSync(own.dataDir, { recursive: true, force: true });
    }
  });
});
