/**
 * Browser helpers for the app's tests: Debian's chromium driven by playwright-core, sign-in
 * through the real form, an axe-core check inside the page, and a watch on every request,
 * response and console message of a page (CSP violations, script errors, credentials in URLs).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { addPerson, startTestServer, type TestServer } from '../../helpers/harness.js';
import { seedGraph } from './seed.js';

export const CHROMIUM = '/usr/bin/chromium';

export function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--disable-dev-shm-usage'] });
}

export interface Watch {
  urls: string[];
  problems: string[];
}

/** Records every URL the page asks for and every console error, page error or failed request. */
export function watch(page: Page): Watch {
  const w: Watch = { urls: [], problems: [] };
  page.on('request', (r) => w.urls.push(r.url()));
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) w.problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => w.problems.push(`pageerror: ${e.message}`));
  page.on('requestfailed', (r) => {
    // leaving a live page ends its event stream: the browser reports the open request as aborted
    if (r.resourceType() === 'eventsource' && r.failure()?.errorText === 'net::ERR_ABORTED') return;
    // the browser fetches the favicon on its own after the load; leaving the page at once aborts it
    if (r.url().endsWith('/app/static/favicon.svg') && r.failure()?.errorText === 'net::ERR_ABORTED') return;
    // a page load cut short by the next navigation (a form's redirect still loading when the test
    // moves on, seen on a loaded machine): the browser's own doing; a server that fails answers a
    // status (which the tests check) or breaks the connection (another error text, still counted)
    if (r.resourceType() === 'document' && r.failure()?.errorText === 'net::ERR_ABORTED') return;
    // a picker's suggestions (static/pickers.js asks /app/lookup 150 ms after a keystroke) still
    // loading when the form is submitted: the navigation cuts the fetch, as it would for anyone
    if (r.resourceType() === 'fetch' && new URL(r.url()).pathname === '/app/lookup' && r.failure()?.errorText === 'net::ERR_ABORTED')
      return;
    // a live page's redraw (static/live.js fetches a fresh copy of the page) cut by leaving the page
    if (r.resourceType() === 'fetch' && r.headers().accept === 'text/html' && r.failure()?.errorText === 'net::ERR_ABORTED') return;
    w.problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  return w;
}

export async function signIn(t: TestServer, context: BrowserContext, token: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${t.url}/app/queue`);
  if (!page.url().includes('/app/signin')) throw new Error(`expected the sign-in page, got ${page.url()}`);
  await page.fill('#token', token);
  await Promise.all([page.waitForURL(/\/app\/queue/), page.click('button[type=submit]')]);
  return page;
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

/** Runs axe-core in the page (evaluated through the debugger protocol, so the page's CSP stays on). */
export async function axe(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource);
  const result = await page.evaluate(async () => {
    const w = window as unknown as { axe: { run: (ctx: Document, opts: unknown) => Promise<{ violations: AxeViolation[] }> } };
    const r = await w.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }));
  });
  return result;
}

export function serious(violations: AxeViolation[]): AxeViolation[] {
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

export interface SeededApp {
  t: TestServer;
  browser: Browser;
  /** a second person, for the pages that show someone else's lease or share */
  bob: { id: string; token: string };
}

/** Registers the suite's hooks: a real server with the seeded graph, Bob, and Chromium; closed after. */
export function useSeededApp(config?: NonNullable<Parameters<typeof startTestServer>[0]>['config']): SeededApp {
  const app = {} as SeededApp;
  before(async () => {
    app.t = await startTestServer(config ? { config } : {});
    await seedGraph(app.t);
    app.bob = await addPerson(app.t, 'Bob Builder');
    app.browser = await launch();
  });
  after(async () => {
    await app.browser?.close();
    await app.t?.close();
  });
  return app;
}
