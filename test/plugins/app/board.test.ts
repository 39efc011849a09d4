/**
 * Issue 25 item 3 acceptance, in real Chromium: the board of a project (columns from the
 * types' statuses in order, cards with title, assignee and priority, WIP counts, filters as
 * links); drag a card onto a column (only the registry's moves are drop targets); move one
 * with the keyboard (announced); a 409 when another client changed the card between page
 * load and drop, shown as their change and leaving the board consistent; a move the schema
 * refuses shown as a message; the same moves without script; bad input as 4xx pages.
 */
import { expect } from 'chai';
import type { BrowserContext, Page } from 'playwright-core';
import { putNodes, type TestServer } from '../../helpers/harness.js';
import { axe, serious, signIn, useSeededApp, watch } from './browser.js';

describe('app: the board (Chromium)', function () {
  this.timeout(Number(process.env.BOARD_TIMEOUT ?? 120_000));
  let t: TestServer;
  let bob: { id: string; token: string };
  let context: BrowserContext;

  const app = useSeededApp();
  before(async () => {
    ({ t, bob } = app);
    await putNodes(t, [
      { id: 'proj-board', type: 'proj', title: 'Board project', summary: 'A project for the board tests' },
      { id: 'task-b-drag', title: 'Drag me across', summary: 'A card to drag', project: 'proj-board' },
      { id: 'task-b-key', title: 'Move me by keyboard', summary: 'A card to move with the keyboard', project: 'proj-board' },
      { id: 'task-b-race', title: 'Raced card', summary: 'Someone else changes it first', project: 'proj-board' },
      { id: 'task-b-nojs', title: 'No script card', summary: 'Moved without JavaScript', project: 'proj-board' },
      { id: 'issue-b-bug', title: 'A bug on the board', summary: 'An issue card', project: 'proj-board' },
      { id: 'dec-b-choice', title: 'A settled decision', summary: 'Accepted already', project: 'proj-board', status: 'accepted' },
    ]);
    await t.api('POST', '/v1/nodes/task-b-drag/edges', { body: { type: 'assigned', to: bob.id } });
    await t.api('POST', '/v1/nodes/task-b-drag/priority', { body: { priority: 'p1' } });
    await t.api('POST', '/v1/nodes/issue-b-bug/priority', { body: { priority: 'p2' } });
  });
  beforeEach(async () => {
    context = await app.browser.newContext({ viewport: { width: 1280, height: 800 } });
  });
  afterEach(async () => {
    await context.close();
  });

  const column = (page: Page, status: string) => page.locator(`.column[data-status="${status}"]`);
  const wip = async (page: Page) =>
    Object.fromEntries(
      await page
        .locator('.column')
        .evaluateAll((cols) => cols.map((c) => [(c as HTMLElement).dataset.status, Number(c.querySelector('.wip')?.textContent)])),
    ) as Record<string, number>;
  const statusOf = async (id: string) => (await t.api('GET', `/v1/nodes/${id}`)).body.frontmatter.status as string;

  async function openBoard(query = 'project=proj-board'): Promise<Page> {
    const page = await signIn(t, context, bob.token);
    await page.goto(`${t.url}/app/board?${query}`);
    return page;
  }

  it('chooses a project, then shows columns in the statuses’ order with cards, WIP counts and filters that are links', async () => {
    const page = await signIn(t, context, bob.token);
    const w = watch(page);
    await page.goto(`${t.url}/app/board`);
    expect(await page.textContent('h1')).to.equal('Board');
    await Promise.all([page.waitForURL(/project=proj-board/), page.click('a:has-text("Board project")')]);
    expect(await page.textContent('h1')).to.equal('Board: Board project');
    const order = await page.locator('.column').evaluateAll((cols) => cols.map((c) => (c as HTMLElement).dataset.status));
    // task, issue and dec together: open statuses first in the registry's order, finished ones after
    expect(order).to.deep.equal([
      'open',
      'in-progress',
      'blocked',
      'review',
      'proposed',
      'done',
      'cancelled',
      'resolved',
      'wontfix',
      'accepted',
      'rejected',
      'superseded',
    ]);
    const counts = await wip(page);
    expect(counts.open).to.equal(5);
    expect(counts.accepted).to.equal(1);
    const drag = page.locator('#card-task-b-drag');
    expect(await drag.locator('.card-title').textContent()).to.equal('Drag me across');
    expect(await drag.locator('.assignee').textContent()).to.equal('you');
    expect(await drag.locator('.prio-p1').count()).to.equal(1);
    // p1 sorts first in its column
    expect(await column(page, 'open').locator('.card').first().getAttribute('data-id')).to.equal('task-b-drag');

    await page.selectOption('select[name=type]', 'issue');
    await Promise.all([page.waitForURL(/type=issue/), page.click('form.filters button')]);
    expect(await page.locator('.column').evaluateAll((cols) => cols.map((c) => (c as HTMLElement).dataset.status))).to.deep.equal([
      'open',
      'in-progress',
      'blocked',
      'resolved',
      'wontfix',
    ]);
    expect(await page.locator('.card').evaluateAll((cs) => cs.map((c) => (c as HTMLElement).dataset.id))).to.deep.equal(['issue-b-bug']);
    // a board view is a link: the same address shows the same cards
    await page.goto(`${t.url}/app/board?project=proj-board&assignee=me`);
    expect(await page.locator('.card').evaluateAll((cs) => cs.map((c) => (c as HTMLElement).dataset.id))).to.deep.equal(['task-b-drag']);
    await page.goto(`${t.url}/app/board?project=proj-board&priority=p2`);
    expect(await page.locator('.card').evaluateAll((cs) => cs.map((c) => (c as HTMLElement).dataset.id))).to.deep.equal(['issue-b-bug']);
    await page.goto(`${t.url}/app/board?project=proj-board&assignee=none&type=task`);
    expect(await page.locator('.card').count()).to.equal(3);
    expect(serious(await axe(page))).to.deep.equal([]);
    expect(w.problems).to.deep.equal([]);
  });

  it('drags a card onto a column: only the allowed moves are drop targets; set_status runs with the revision', async () => {
    const page = await openBoard();
    const w = watch(page);
    const before = await wip(page);
    // a settled decision may only become superseded: that one column lights up while it is dragged
    await page.locator('#card-dec-b-choice').hover();
    await page.mouse.down();
    await column(page, 'superseded').hover();
    await column(page, 'superseded').hover({ position: { x: 20, y: 20 } });
    expect(await page.locator('.column.drop-ok').evaluateAll((cs) => cs.map((c) => (c as HTMLElement).dataset.status))).to.deep.equal([
      'superseded',
    ]);
    await column(page, 'open').hover();
    await page.mouse.up();
    expect(await column(page, 'accepted').locator('#card-dec-b-choice').count(), 'a refused drop leaves the card').to.equal(1);
    expect(await statusOf('dec-b-choice')).to.equal('accepted');
    expect(await page.locator('#card-task-b-drag').getAttribute('draggable')).to.equal('true');

    await page.dragAndDrop('#card-task-b-drag', '.column[data-status="in-progress"]');
    await column(page, 'in-progress').locator('#card-task-b-drag').waitFor();
    expect(await statusOf('task-b-drag')).to.equal('in-progress');
    const after = await wip(page);
    expect(after.open).to.equal(before.open - 1);
    expect(after['in-progress']).to.equal(before['in-progress'] + 1);
    await page.waitForFunction(() => document.getElementById('board-status')?.textContent?.includes('Moved to in-progress'));
    // moving to in-progress took the lease, like the claim route
    const lease = await t.api('POST', '/v1/nodes/task-b-drag/claim', { token: bob.token });
    expect(lease.body.lease.by).to.equal(bob.id);
    // the moved card carries the new revision: a second drag moves it again
    await page.dragAndDrop('#card-task-b-drag', '.column[data-status="review"]');
    await column(page, 'review').locator('#card-task-b-drag').waitFor();
    expect(await statusOf('task-b-drag')).to.equal('review');
    expect(w.problems).to.deep.equal([]);
  });

  it('moves a card with the keyboard (announced, focus kept); a terminal status releases the mover’s lease', async () => {
    const page = await openBoard();
    // from the card's title link: Tab to its "Move to" choice (in-progress comes first for an open task), Tab to Move, Enter
    await page.focus('#card-task-b-key a');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => (document.activeElement as HTMLSelectElement).value)).to.equal('in-progress');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await column(page, 'in-progress').locator('#card-task-b-key').waitFor();
    await page.waitForFunction(() =>
      document.getElementById('board-status')?.textContent?.includes('Move me by keyboard: Moved to in-progress'),
    );
    expect(await page.evaluate(() => document.activeElement?.closest('.card')?.id)).to.equal('card-task-b-key');
    expect(
      (await t.api('GET', '/v1/queue?limit=100', { token: bob.token })).body.items.find((i: { id: string }) => i.id === 'task-b-key').lease
        .by,
    ).to.equal(bob.id);

    // the focus is on the moved card's choice: type "d" for done, Tab to Move, Enter
    await page.keyboard.press('d');
    expect(await page.evaluate(() => (document.activeElement as HTMLSelectElement).value)).to.equal('done');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await column(page, 'done').locator('#card-task-b-key').waitFor();
    await page.waitForFunction(() => document.getElementById('board-status')?.textContent?.includes('your lease was released'));
    expect(await statusOf('task-b-key')).to.equal('done');
    const item = (await t.api('GET', '/v1/queue?limit=100', { token: bob.token })).body.items.find(
      (i: { id: string }) => i.id === 'task-b-key',
    );
    expect(item?.lease ?? null).to.equal(null);
  });

  it('a 409: another client changed the card after the page loaded; the card shows who and what, and the board stays consistent', async () => {
    const page = await openBoard();
    const w = watch(page);
    const before = await wip(page);
    // the admin moves it to blocked through the API while Bob's board still shows it open
    expect((await t.api('POST', '/v1/nodes/task-b-race/status', { body: { status: 'blocked' } })).status).to.equal(200);
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().includes('/app/board/move')),
      page.dragAndDrop('#card-task-b-race', '.column[data-status="review"]'),
    ]);
    expect(answer.status()).to.equal(409);
    const card = column(page, 'blocked').locator('#card-task-b-race');
    await card.waitFor();
    expect(await card.locator('.card-notice.error').textContent())
      .to.include('Admin changed this card')
      .and.include('now in blocked')
      .and.include('Your move to review was not made');
    expect(await statusOf('task-b-race')).to.equal('blocked');
    const after = await wip(page);
    expect(after.open).to.equal(before.open - 1);
    expect(after.blocked).to.equal(before.blocked + 1);
    expect(after.review).to.equal(before.review);
    await page.waitForFunction(() => document.getElementById('board-status')?.textContent?.includes('Admin changed this card'));
    // the card now carries their revision: the person can move it again
    await page.dragAndDrop('#card-task-b-race', '.column[data-status="review"]');
    await column(page, 'review').locator('#card-task-b-race').waitFor();
    expect(await statusOf('task-b-race')).to.equal('review');
    expect(w.problems.filter((p) => !/409 \(Conflict\)/.test(p))).to.deep.equal([]);
  });

  it('a move the schema refuses comes back as a message naming the moves it allows', async () => {
    const page = await openBoard();
    // a hand-made choice the registry does not offer (an old page, a crafted form)
    await page.locator('#card-dec-b-choice select').evaluate((sel) => sel.append(new Option('proposed', 'proposed')));
    await page.locator('#card-dec-b-choice select').selectOption('proposed');
    await page.click('#card-dec-b-choice button');
    const notice = column(page, 'accepted').locator('#card-dec-b-choice .card-notice.error');
    await notice.waitFor();
    expect(await notice.textContent())
      .to.include('Cannot move to proposed')
      .and.include('From accepted it can move to superseded');
    expect(await statusOf('dec-b-choice')).to.equal('accepted');
  });

  it('works without script: the move form posts, redirects to the same board view, and a 409 shows on the card', async () => {
    const plain = await app.browser.newContext({ viewport: { width: 390, height: 844 }, javaScriptEnabled: false });
    try {
      const page = await signIn(t, plain, bob.token);
      await page.goto(`${t.url}/app/board?project=proj-board&type=task`);
      await page.locator('#card-task-b-nojs select').selectOption('blocked');
      await Promise.all([page.waitForURL(/\/app\/board\?project=proj-board&type=task$/), page.click('#card-task-b-nojs button')]);
      expect(await page.textContent('.flash.ok')).to.include('No script card: Moved to blocked');
      expect(await column(page, 'blocked').locator('#card-task-b-nojs').count()).to.equal(1);
      await t.api('POST', '/v1/nodes/task-b-nojs/status', { body: { status: 'open' } });
      await page.locator('#card-task-b-nojs select').selectOption('review');
      const [res] = await Promise.all([page.waitForNavigation(), page.click('#card-task-b-nojs button')]);
      expect(res?.status()).to.equal(409);
      expect(await page.textContent('[role=alert]')).to.include('Admin changed this card');
      expect(await column(page, 'open').locator('#card-task-b-nojs .card-notice').textContent()).to.include('now in open');
      expect(await statusOf('task-b-nojs')).to.equal('open');
    } finally {
      await plain.close();
    }
  });

  it('answers bad input with 422/404 pages and JSON, never a 500, and changes nothing', async () => {
    const page = await signIn(t, context, bob.token);
    for (const q of [
      'project=Bad%20Name',
      'project=proj-board&type=person',
      'project=proj-board&priority=p9',
      'project=proj-board&assignee=task-b-key',
    ]) {
      const res = await page.goto(`${t.url}/app/board?${q}`);
      expect(res?.status(), q).to.equal(422);
    }
    const revision = (await t.api('GET', '/v1/nodes/task-b-nojs')).body.revision as string;
    const post = (form: Record<string, string>, accept = 'application/json') =>
      page.evaluate(
        async ({ form, accept }) => {
          const csrf = (document.querySelector('input[name=csrf]') as HTMLInputElement).value;
          const r = await fetch('/app/board/move', {
            method: 'POST',
            headers: { accept, 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ csrf, ...form }),
          });
          return { status: r.status, type: r.headers.get('content-type') ?? '', text: await r.text() };
        },
        { form, accept },
      );
    await page.goto(`${t.url}/app/board?project=proj-board`);
    const missing = await post({ id: 'task-b-nojs', status: 'review' });
    expect(missing.status, 'no revision').to.equal(422);
    expect(JSON.parse(missing.text).error).to.deep.include({ code: 'validation_failed' });
    expect(JSON.parse(missing.text).error.details.errors[0].field).to.equal('revision');
    const unknown = await post({ id: 'task-nowhere', status: 'done', revision });
    expect(unknown.status).to.equal(404);
    expect(JSON.parse(unknown.text).error.code).to.equal('not_found');
    expect((await post({ id: 'lens-open-work', status: 'retired', revision })).status, 'not a work item').to.equal(404);
    const badStatus = await post({ id: 'task-b-nojs', status: 'shipped', revision });
    expect(badStatus.status).to.equal(409);
    expect(JSON.parse(badStatus.text).message).to.include('Cannot move to shipped');
    const forged = await page.evaluate(async () => {
      const r = await fetch('/app/board/move', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf: 'forged', id: 'task-b-nojs', status: 'review', revision: 'x' }),
      });
      return r.status;
    });
    expect(forged).to.equal(403);
    expect(await statusOf('task-b-nojs')).to.equal('open');
  });
});
