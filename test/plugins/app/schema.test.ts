/**
 * Issue 25 item 5 acceptance, in real Chromium: a schema author writes a transition hook in the
 * CodeMirror editor (highlighted, under the app's CSP), dry-runs the draft, proposes it, dry-runs
 * the proposal against nodes picked on its page (verdict, CPU time, heap), is refused when
 * approving it themself (the self-approval ban's message on the page), a second person approves
 * it, and the hook then refuses a bad write over REST. axe on the editor and proposal pages.
 */
import { expect } from 'chai';
import type { BrowserContext } from 'playwright-core';
import { addPerson, putNodes, type TestServer } from '../../helpers/harness.js';
import { axe, serious, signIn, useSeededApp, watch } from './browser.js';

const HOOK = "(input) => input.to !== 'done' || input.from === 'review' ? { allow: true } : { allow: false, reason: 'review before done' }";

describe('app: a schema author ships a hook (Chromium)', function () {
  this.timeout(Number(process.env.SCHEMA_TIMEOUT ?? 120_000));
  let t: TestServer;
  let bob: { id: string; token: string };
  let ada: { id: string; token: string };
  let contexts: BrowserContext[] = [];

  const app = useSeededApp();
  before(async () => {
    ({ t, bob } = app);
    ada = await addPerson(t, 'Ada Author');
    await putNodes(t, [
      { id: 'task-sc-open', title: 'Open work for the gate', summary: 'Still open', project: 'proj-web' },
      { id: 'task-sc-review', title: 'Work in review for the gate', summary: 'In review', project: 'proj-web', status: 'review' },
    ]);
  });
  afterEach(async () => {
    for (const c of contexts) await c.close();
    contexts = [];
  });
  const newContext = async (width = 1280) => {
    const c = await app.browser.newContext({ viewport: { width, height: 900 } });
    contexts.push(c);
    return c;
  };

  it('proposes a hook in the editor, dry-runs it, is refused self-approval; another person approves; the hook refuses a bad write', async () => {
    const page = await signIn(t, await newContext(), ada.token);
    const w = watch(page);
    await page.goto(`${t.url}/app/schema/editor?applies_to=task`);
    expect(await page.textContent('h1')).to.equal('Write a new schema');
    // CodeMirror replaced both hook textareas (kept hidden in the form) with highlighted editors
    // each editor in its own shadow root (playwright's CSS locators pierce open ones)
    await page.locator('.cm-editor').first().waitFor();
    expect(await page.locator('.schema-editor .code-editor .cm-editor').count()).to.equal(2);
    expect(await page.locator('#hook-transition').isHidden()).to.equal(true);
    expect(serious(await axe(page)), 'editor page').to.deep.equal([]);

    await page.fill('#schema-id', 'schema-sc-gate');
    await page.fill('#schema-summary', 'Work is reviewed before it is done');
    // typing into the editor by keyboard, as a person does: the label focuses the editor
    await page.click('label[for="hook-transition"]');
    await page.keyboard.type(HOOK);
    expect(await page.locator('#hook-transition').inputValue()).to.equal(HOOK);
    // highlighted: the string and keyword tokens are spans with CodeMirror's highlight classes
    const tokens = await page.locator('.code-editor[data-for="hook-transition"] .cm-line span').count();
    expect(tokens).to.be.greaterThan(3);

    // a dry run of the draft as typed: nothing saved
    await page.fill('#schema-nodes', 'task-sc-open, task-sc-review');
    await Promise.all([page.waitForURL(/\/app\/schema\/editor\/dry-run/), page.click('button:has-text("Dry run the draft")')]);
    expect(await page.textContent('#dry-run-result')).to.include('review before done');
    expect((await t.api('GET', '/v1/nodes/schema-sc-gate')).status).to.equal(404);
    // the draft survived the round trip into the editor
    expect(await page.locator('#hook-transition').inputValue()).to.equal(HOOK);

    await Promise.all([page.waitForURL(/\/app\/schema\/proposals\/schema-sc-gate$/), page.click('button:has-text("Propose")')]);
    expect(await page.textContent('.flash.ok')).to.include('another person must approve');
    expect((await t.api('GET', '/v1/nodes/schema-sc-gate')).body.frontmatter.status).to.equal('proposed');
    expect(await page.locator('pre.diff .add', { hasText: 'review before done' }).count()).to.equal(1);

    // the proposal's dry run against nodes picked on its page
    await page.selectOption('#dry-nodes', ['task-sc-open', 'task-sc-review']);
    await page.selectOption('#dry-to', 'done');
    await Promise.all([page.waitForURL(/\/dry-run$/), page.click('button:has-text("Dry run")')]);
    const rows = await page.locator('table.dry-run tbody tr').allTextContents();
    expect(rows).to.have.length(2);
    expect(rows[0]).to.match(/task-sc-open[\s\S]*deny[\s\S]*review before done[\s\S]*\d+(\.\d+)? ms[\s\S]*KiB/);
    expect(rows[1]).to.match(/task-sc-review[\s\S]*allow/);
    expect(serious(await axe(page)), 'proposal page').to.deep.equal([]);

    // the author may not approve their own proposal: the ban's message on the page
    await page.click('button:has-text("Approve")');
    await page.locator('.flash.error').waitFor();
    expect(await page.textContent('.flash.error')).to.include('self-approval ban');
    expect((await t.api('GET', '/v1/nodes/schema-sc-gate')).body.frontmatter.status).to.equal('proposed');
    expect(w.problems.filter((x) => !/409 \(Conflict\)/.test(x))).to.deep.equal([]);

    // a second person approves it
    const other = await signIn(t, await newContext(), bob.token);
    await other.goto(`${t.url}/app/schema/proposals/schema-sc-gate`);
    expect(await other.textContent('#decide-h')).to.equal('Approve or reject');
    await Promise.all([other.waitForURL(/\/app\/schema\/proposals\/schema-sc-gate$/), other.click('button:has-text("Approve")')]);
    expect(await other.textContent('.flash.ok')).to.include('live now');
    expect((await t.api('GET', '/v1/nodes/schema-sc-gate')).body.frontmatter.status).to.equal('active');
    await other.goto(`${t.url}/app/schema/task`);
    expect(await other.locator('figure.hook', { hasText: 'schema-sc-gate' }).count()).to.equal(1);

    // and the hook refuses a bad write over REST, while the good one passes
    const bad = await t.api('POST', '/v1/nodes/task-sc-open/status', { body: { status: 'done' } });
    expect(bad.status).to.equal(409);
    expect(bad.body.error).to.include({ code: 'transition_denied', message: 'review before done' });
    expect((await t.api('POST', '/v1/nodes/task-sc-review/status', { body: { status: 'done' } })).status).to.equal(200);
  });

  it('the editor works at phone width and from the keyboard alone (Tab into the editor, Escape then Tab out)', async () => {
    const page = await signIn(t, await newContext(390), ada.token);
    const w = watch(page);
    await page.goto(`${t.url}/app/schema/editor?id=schema-task-review-gate`);
    await page.locator('.cm-editor').first().waitFor();
    expect(serious(await axe(page))).to.deep.equal([]);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).to.be.at.most(0);
    // the editor with the focus: its host's textarea id, when the focus is in an editor's content
    const focusedEditor = () =>
      page.evaluate(() => {
        const host = document.activeElement as HTMLElement | null;
        return host?.shadowRoot?.activeElement?.classList.contains('cm-content') ? (host.dataset.for ?? null) : null;
      });
    await page.focus('#schema-applies');
    await page.keyboard.press('Tab');
    expect(await focusedEditor()).to.equal('hook-transition');
    // Tab indents inside the editor; Escape then Tab moves on to the next editor
    await page.keyboard.press('Tab');
    expect(await focusedEditor()).to.equal('hook-transition');
    await page.keyboard.press('Escape');
    await page.keyboard.press('Tab');
    expect(await focusedEditor()).to.equal('hook-validate');
    expect(w.problems).to.deep.equal([]);
  });
});
