/**
 * Issue 25 acceptance "comment with a mention", in real Chromium: Ada posts a comment on a node
 * page naming `@bob-builder`; the comment shows with her name, its time and the mention as a
 * link to Bob, and she edits it from its fold; Bob, whose inbox is open meanwhile, sees "Mentioned you in a comment" arrive
 * without a reload, and its link takes him to the comment. No serious axe violations on the
 * node page with comments at 1280 and 390 px.
 */
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { addPerson } from '../../helpers/harness.js';
import { axe, serious, signIn, useSeededApp, watch } from './browser.js';

/** A mark in the page's JavaScript world: a reload or navigation would lose it. */
async function markPage(page: Page): Promise<() => Promise<boolean>> {
  await page.evaluate(() => ((window as unknown as { __kept: number }).__kept = 42));
  return () => page.evaluate(() => (window as unknown as { __kept?: number }).__kept === 42);
}

describe('app: comments with a mention (Chromium)', function () {
  this.timeout(120_000);
  const app = useSeededApp();

  it('Ada comments with @bob-builder on a node page; Bob sees it arrive in his inbox and follows it to the comment', async () => {
    const { t, browser, bob } = app;
    const ada = await addPerson(t, 'Ada Lovelace');

    const bobContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const bobPage = await signIn(t, bobContext, bob.token);
    const bobWatch = watch(bobPage);
    await bobPage.goto(`${t.url}/app/inbox`);
    await bobPage.waitForFunction(() => document.documentElement.dataset.live === 'open');
    const kept = await markPage(bobPage);

    const adaContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const adaPage = await signIn(t, adaContext, ada.token);
    const adaWatch = watch(adaPage);
    await adaPage.goto(`${t.url}/app/nodes/task-launch`);
    await adaPage.getByLabel(/Add a comment/).fill('Can you check the **DNS** plan, @bob-builder? Launch is close.');
    await Promise.all([
      adaPage.waitForURL(/\/app\/nodes\/task-launch#comment-[0-9a-f]{16}$/),
      adaPage.getByRole('button', { name: 'Post comment' }).click(),
    ]);
    const commentId = new URL(adaPage.url()).hash.slice(1);
    const comment = adaPage.locator(`li.comment#${commentId}`);
    await comment.waitFor();
    expect(await comment.locator('.meta a').first().textContent()).to.equal('Ada Lovelace');
    expect(await comment.locator('time').getAttribute('datetime')).to.match(/^\d{4}-\d\d-\d\dT/);
    expect(await comment.locator('strong').textContent()).to.equal('DNS');
    const mention = comment.getByRole('link', { name: '@bob-builder' });
    expect(await mention.getAttribute('href')).to.equal(`/app/nodes/${bob.id}`);
    expect(await adaPage.locator('.flash').first().textContent()).to.include('mentioned Bob Builder');
    for (const width of [1280, 390]) {
      await adaPage.setViewportSize({ width, height: 800 });
      expect(serious(await axe(adaPage)), `axe at ${width} px`).to.deep.equal([]);
    }
    // her own comment unfolds into its edit form; the saved text replaces the old one, marked edited
    await comment.locator('summary', { hasText: 'Edit' }).click();
    await comment.getByLabel(/Edit your comment/).fill('Can you check the **DNS** plan, @bob-builder? Launch is close: Friday.');
    expect(serious(await axe(adaPage)), 'axe with the edit form open').to.deep.equal([]);
    await Promise.all([
      adaPage.waitForURL(new RegExp(`/app/nodes/task-launch#${commentId}$`)),
      comment.getByRole('button', { name: 'Save comment' }).click(),
    ]);
    await adaPage.locator('.flash', { hasText: 'Comment saved' }).waitFor();
    expect(await adaPage.locator(`li.comment#${commentId} .markdown`).textContent()).to.include('Launch is close: Friday.');
    expect(await adaPage.locator(`li.comment#${commentId} .meta`).textContent()).to.include('edited');

    // an unfolded edit form is not redrawn under her by the live refresh; folded again, the page catches up
    await adaPage.waitForFunction(() => document.documentElement.dataset.live === 'open');
    await comment.locator('summary', { hasText: 'Edit' }).click();
    await adaPage.locator('#comments-h').click(); // the form open, no field focused
    const refreshes = () => adaPage.evaluate(() => Number(document.documentElement.dataset.liveRefreshes ?? '0'));
    // the refresh that fetched Bob's reply: the count when its copy of the page arrived
    await adaPage.evaluate(() => {
      const w = window as unknown as { __replyAt?: number };
      const original = window.fetch.bind(window);
      window.fetch = async (...args: Parameters<typeof fetch>) => {
        const res = await original(...args);
        const at = Number(document.documentElement.dataset.liveRefreshes ?? '0');
        void res
          .clone()
          .text()
          .then((text) => {
            if (w.__replyAt === undefined && text.includes('On it: the DNS records')) w.__replyAt = at;
          });
        return res;
      };
    });
    const reply = await fetch(`${t.url}/v1/nodes/task-launch/comments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bob.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ body: 'On it: the DNS records go in on Thursday.' }),
    });
    expect(reply.status).to.equal(201);
    await adaPage.waitForFunction(() => {
      const at = (window as unknown as { __replyAt?: number }).__replyAt;
      return at !== undefined && Number(document.documentElement.dataset.liveRefreshes ?? '0') > at;
    });
    expect(await comment.locator('details[open]').count(), 'the open fold was kept').to.equal(1);
    expect(await adaPage.locator('li.comment', { hasText: 'On it: the DNS records' }).count()).to.equal(0);
    await comment.locator('summary', { hasText: 'Edit' }).click();
    const folded = await refreshes();
    await fetch(`${t.url}/v1/nodes/task-launch/comments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bob.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ body: 'And the certificates on Friday.' }),
    });
    await adaPage.waitForFunction((n) => Number(document.documentElement.dataset.liveRefreshes ?? '0') > n, folded);
    await adaPage.locator('li.comment', { hasText: 'On it: the DNS records' }).waitFor();

    const item = bobPage.locator('li.inbox-item.unread', { hasText: 'Mentioned you in a comment' });
    await item.waitFor();
    expect(await item.textContent())
      .to.include('Launch the new site')
      .and.include('by Ada Lovelace');
    expect(await kept(), 'the inbox updated without a reload').to.equal(true);
    await Promise.all([
      bobPage.waitForURL(new RegExp(`/app/nodes/task-launch#${commentId}$`)),
      item.getByRole('link', { name: 'Launch the new site' }).click(),
    ]);
    expect(await bobPage.locator(`li.comment#${commentId}`).textContent()).to.include('Can you check the DNS plan');
    // not his comment: no delete button and no edit fold for Bob
    expect(await bobPage.locator(`li.comment#${commentId} button`).count()).to.equal(0);
    expect(await bobPage.locator(`li.comment#${commentId} details`).count()).to.equal(0);

    expect(adaWatch.problems).to.deep.equal([]);
    expect(bobWatch.problems).to.deep.equal([]);
    await adaContext.close();
    await bobContext.close();
  });
});
