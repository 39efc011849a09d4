/**
 * Issue 12 acceptance, in real Chromium: every page passes axe-core without serious or
 * critical violations, runs under the strict CSP without a single violation or script error
 * (charts by chart.js, the neighborhood by cytoscape), fits 1280x800 and a phone width without
 * sideways scrolling, and a share ticket is exchanged once into a cookie and leaves the URL.
 */
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import type { TestServer } from '../../helpers/harness.js';
import { axe, serious, signIn, useSeededApp, watch } from './browser.js';
import { PAGES } from './pages-list.js';

describe('app: every page in Chromium (axe, CSP, layout, share tickets)', function () {
  this.timeout(180_000);
  let t: TestServer;
  let browser: Browser;
  let bob: { id: string; token: string };

  const app = useSeededApp();
  before(() => {
    ({ t, browser, bob } = app);
  });

  async function visit(page: Page, path: string): Promise<void> {
    await page.goto(t.url + path);
    await page.waitForLoadState('networkidle');
  }

  for (const width of [1280, 390]) {
    it(`each page at ${width}px: axe finds nothing serious, no CSP violation or script error, no sideways scroll`, async () => {
      const context = await browser.newContext({ viewport: { width, height: width === 1280 ? 800 : 844 } });
      const member = await signIn(t, context, bob.token);
      // the operator console's pages: the tenant admin's session, in a context of its own
      const adminContext = await browser.newContext({ viewport: { width, height: width === 1280 ? 800 : 844 } });
      const admin = await signIn(t, adminContext, t.adminToken);
      const w = watch(member);
      const wa = watch(admin);
      const signinContext = await browser.newContext({ viewport: { width, height: 800 } });
      const anon = await signinContext.newPage();
      await anon.goto(`${t.url}/app/signin`);
      expect(serious(await axe(anon)), 'sign-in page').to.deep.equal([]);
      await signinContext.close();
      for (const p of PAGES) {
        const page = p.admin ? admin : member;
        await visit(page, p.path);
        expect(await page.textContent('h1'), p.name).to.match(p.heading);
        const bad = serious(await axe(page));
        expect(bad, `${p.name}: ${JSON.stringify(bad, null, 1)}`).to.deep.equal([]);
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        expect(overflow, `${p.name} scrolls sideways at ${width}px`).to.be.at.most(0);
      }
      expect(w.problems.filter((x) => !/404 \(Not Found\)/.test(x))).to.deep.equal([]);
      expect(wa.problems).to.deep.equal([]);
      await context.close();
      await adminContext.close();
    });
  }

  it('draws the analytics charts with chart.js and the neighborhood with cytoscape under the CSP', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await signIn(t, context, bob.token);
    const w = watch(page);
    await visit(page, '/app/analytics');
    const charts = await page.evaluate(() => {
      const C = (window as unknown as { Chart: { getChart: (id: string) => { data: { datasets: unknown[] } } | undefined } }).Chart;
      return ['chart-weekly', 'chart-wip'].map((id) => C.getChart(id)?.data.datasets.length ?? 0);
    });
    expect(charts).to.deep.equal([2, 1]);
    await visit(page, '/app/nodes/task-launch/graph');
    const drawn = await page.evaluate(() => document.querySelectorAll('#graph canvas').length);
    expect(drawn).to.be.greaterThan(0);
    const csp = await page.evaluate(async () => (await fetch(location.href)).headers.get('content-security-policy'));
    expect(csp).to.include("script-src 'self'").and.not.include('unsafe-inline');
    expect(w.problems).to.deep.equal([]);
    await context.close();
  });

  it('is usable from the keyboard: a skip link first, then the navigation, forms reachable by Tab', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await signIn(t, context, bob.token);
    await visit(page, '/app/nodes/task-docs');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).to.equal('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal('main');
    const reached = new Set<string>();
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press('Tab');
      reached.add(await page.evaluate(() => document.activeElement?.id || document.activeElement?.textContent?.trim() || ''));
    }
    for (const control of ['status-sel', 'prio-sel', 'edge-type', 'edge-to', 'Claim']) expect([...reached], control).to.include(control);
    await context.close();
  });

  it('a share ticket is exchanged once into an HttpOnly cookie; the view shows the sharer and nothing else opens', async () => {
    // SVC_APP_URL names this server's app: minted links land on it (docs/spec.md Lenses rule 4)
    (t.server.services.config as { appUrl: string | null }).appUrl = `${t.url}/app`;
    const minted = await t.api('POST', '/v1/lens/lens-open-work/ticket', { body: { expires: '2d', label: 'for the board' } });
    (t.server.services.config as { appUrl: string | null }).appUrl = null;
    expect(minted.status).to.equal(200);
    const ticket: string = minted.body.ticket;
    expect(minted.body.url).to.equal(`${t.url}/app/views/lens-open-work?ticket=${ticket}`);
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const w = watch(page);
    for (const entry of [minted.body.url as string, `${t.url}/views/lens-open-work?ticket=${ticket}`]) {
      await page.goto(entry);
      expect(page.url()).to.equal(`${t.url}/app/views/lens-open-work`);
      expect(await page.textContent('.banner'))
        .to.include('Shared by')
        .and.include('Admin')
        .and.include('for the board');
      expect(await page.locator('table tbody tr').count()).to.be.greaterThan(0);
      expect(await page.locator('main form').count()).to.equal(0);
      expect(await page.content()).to.not.include(ticket);
    }
    const cookie = (await context.cookies()).find((c) => c.name === 'svc_render_ticket');
    expect(cookie?.httpOnly).to.equal(true);
    expect(cookie?.path).to.equal('/app/views/lens-open-work');
    expect(await page.evaluate(() => document.cookie)).to.equal('');
    expect(serious(await axe(page))).to.deep.equal([]);
    // the ticket opens this view only
    await page.goto(`${t.url}/app/queue`);
    expect(page.url()).to.include('/app/signin');
    await page.goto(`${t.url}/app/views/lens-open-work?ticket=${ticket.slice(0, -4)}AAAA`);
    expect(await page.textContent('h1')).to.equal('Please sign in');
    // requests after the first hop never carry the ticket
    const carrying = w.urls.filter((u) => u.includes(ticket));
    expect(carrying.every((u) => /\/views\/lens-open-work\?ticket=/.test(u))).to.equal(true);
    await context.close();
  });

  it('a live signed-in session outranks the ticket cookie', async () => {
    const minted = await t.api('POST', '/v1/lens/lens-open-work/ticket', { body: {} });
    const context = await browser.newContext();
    const page = await signIn(t, context, bob.token);
    await page.goto(`${t.url}/app/views/lens-open-work?ticket=${minted.body.ticket}`);
    expect(page.url()).to.equal(`${t.url}/app/views/lens-open-work`);
    expect(await page.locator('.banner').count()).to.equal(0);
    expect(await page.textContent('header')).to.include('Bob Builder');
    await context.close();
  });

  it('search finds nodes by summary and body words', async () => {
    const context = await browser.newContext();
    const page = await signIn(t, context, bob.token);
    await visit(page, '/app/search');
    await page.fill('#q', 'deep link');
    await Promise.all([page.waitForURL(/q=deep\+link/), page.press('#q', 'Enter')]);
    expect(await page.locator('ol.results a').first().getAttribute('href')).to.equal('/app/nodes/task-login');
    await visit(page, '/app/search?q=zebra+quantum');
    expect(await page.textContent('[role=status]')).to.include('No match');
    await context.close();
  });
});
