/**
 * Issue 25 acceptance "comment with a mention", in real Chromium: Ada posts a comment on a node
 * page naming `@bob-builder`; the comment shows with her name, its time and the mention as a
 * link to Bob; Bob, whose inbox is open meanwhile, sees "Mentioned you in a comment" arrive
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
    // not his comment: no delete button for Bob
    expect(await bobPage.locator(`li.comment#${commentId} button`).count()).to.equal(0);

    expect(adaWatch.problems).to.deep.equal([]);
    expect(bobWatch.problems).to.deep.equal([]);
    await adaContext.close();
    await bobContext.close();
  });
});
