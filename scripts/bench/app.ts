/**
 * Benchmark of the app's page render time (issue 12): the queue page over a 5,000-item
 * queue, and the page of a node with 40 edges, each against the JSON API call(s) for the
 * same data measured in the same run (the reference), as medians over HTTP. The board
 * (issue 25) of a project with 500 cards, over HTTP and, when Debian's chromium is there,
 * as the browser's load time (navigation to the load event, board.js included).
 *
 *   node --no-node-snapshot --import tsx scripts/bench/app.ts [--items 5000] [--runs 30] [--only board]
 *   npm run bench -- app
 *
 * A real server with every plugin on a fresh data directory; the graph is written straight
 * through `tenant.write`; the app session is made through the real sign-in form.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { configFromEnv, createLogger } from '../../kernel/config.js';
import { startServer, type RunningServer } from '../../kernel/server.js';
import type { WriteActor } from '../../kernel/write-draft.js';
import { allPlugins } from '../plugins.js';
import { fmtRatio, machineNote, median, recordResult, runIfMain } from './lib.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

const ITEMS = Number(arg('items', '5000'));
const RUNS = Number(arg('runs', '30'));
const EDGES = 40;
const BOARD_CARDS = Number(arg('cards', '500'));
/** `board`: seed and measure the board only (a short run while others share the machine) */
const ONLY = arg('only', '');
const CHROMIUM = '/usr/bin/chromium';

async function timed(server: RunningServer, path: string, headers: Record<string, string>): Promise<{ ms: number; bytes: number }> {
  const start = performance.now();
  const res = await fetch(server.url + path, { headers, redirect: 'manual' });
  const text = await res.text();
  const ms = performance.now() - start;
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${text.slice(0, 300)}`);
  return { ms, bytes: Buffer.byteLength(text) };
}

/**
 * Medians of the page and of its reference, measured alternately (page, JSON, page, ...) so
 * both see the same machine load; five warm-up rounds first (JIT, caches).
 */
async function pairedMedians(
  server: RunningServer,
  page: string,
  cookie: Record<string, string>,
  json: string[],
  bearer: Record<string, string>,
) {
  const round = async (paths: string[], headers: Record<string, string>) => {
    let ms = 0;
    let bytes = 0;
    for (const p of paths) {
      const r = await timed(server, p, headers);
      ms += r.ms;
      bytes += r.bytes;
    }
    return { ms, bytes };
  };
  for (let i = 0; i < 5; i++) {
    await round([page], cookie);
    await round(json, bearer);
  }
  const pageMs: number[] = [];
  const jsonMs: number[] = [];
  let pageBytes = 0;
  let jsonBytes = 0;
  for (let i = 0; i < RUNS; i++) {
    const h = await round([page], cookie);
    const j = await round(json, bearer);
    pageMs.push(h.ms);
    jsonMs.push(j.ms);
    pageBytes = h.bytes;
    jsonBytes = j.bytes;
  }
  return { page: { ms: median(pageMs), bytes: pageBytes }, json: { ms: median(jsonMs), bytes: jsonBytes } };
}

async function seed(server: RunningServer, org: string, admin: WriteActor): Promise<void> {
  const tenant = server.services.tenants.get(org)!;
  tenant.config.limits.hook_timeout_ms = 2000; // thousands of hook calls per commit; not what this measures
  for (let start = 0; start < ITEMS; start += 2500) {
    await tenant.write(admin, { op: 'bench_seed', via: 'rest' }, async (draft) => {
      for (let n = start; n < Math.min(ITEMS, start + 2500); n++) {
        const edges = n > 0 && n % 3 === 0 ? [{ type: 'blocks', to: `task-bench-${n - 1}` }] : [];
        draft.put({
          frontmatter: {
            id: `task-bench-${n}`,
            type: 'task',
            status: n % 5 === 0 ? 'in-progress' : 'open',
            summary: `benchmark task number ${n}`,
            ...(n % 4 === 0 ? { priority: 'p2' } : {}),
            ...(edges.length ? { edges } : {}),
          },
          body: `Body of task ${n}.\n\n- a list\n- of **things**\n`,
        });
      }
    });
  }
  // the hub: 40 outbound edges, and inbound ones from the tasks that point at it
  await tenant.write(admin, { op: 'bench_hub', via: 'rest' }, async (draft) => {
    const edges = Array.from({ length: EDGES }, (_, i) => ({ type: i % 2 ? 'relates-to' : 'blocks', to: `task-bench-${i * 7 + 1}` }));
    draft.put({
      frontmatter: { id: 'task-hub', type: 'task', status: 'open', summary: 'A node with forty edges', edges },
      body: '# Hub\n\nA node many others point at.\n',
    });
  });
  for (let i = 0; i < 10; i++) {
    await tenant.write(admin, { op: 'bench_touch', via: 'rest' }, async (draft) => {
      const node = draft.get('task-hub')!;
      node.body = `# Hub\n\nRevision ${i}.\n`;
      draft.put(node);
    });
  }
}

/** A project with BOARD_CARDS tasks over every task status, a third assigned, most with a priority. */
async function seedBoard(server: RunningServer, org: string, admin: WriteActor): Promise<void> {
  const tenant = server.services.tenants.get(org)!;
  tenant.config.limits.hook_timeout_ms = 2000;
  const statuses = ['open', 'in-progress', 'blocked', 'review', 'done', 'cancelled'];
  await tenant.write(admin, { op: 'bench_board', via: 'rest' }, async (draft) => {
    draft.put({
      frontmatter: { id: 'proj-bench', type: 'proj', status: 'active', title: 'Bench board', summary: 'The board benchmark project' },
      body: '',
    });
    for (let n = 0; n < BOARD_CARDS; n++) {
      draft.put({
        frontmatter: {
          id: `task-card-${n}`,
          type: 'task',
          status: statuses[n % statuses.length]!,
          title: `Board card number ${n} with a title of ordinary length`,
          summary: `board card ${n}`,
          project: 'proj-bench',
          ...(n % 4 !== 3 ? { priority: `p${(n % 3) + 1}` } : {}),
          ...(n % 3 === 0 ? { edges: [{ type: 'assigned', to: admin.personId }] } : {}),
        },
        body: '',
      });
    }
  });
}

/** Medians of the board's load in Chromium (navigation start to the load event), signed in by the session cookie. */
async function browserLoad(server: RunningServer, cookie: string, path: string): Promise<{ dcl: number; load: number } | null> {
  if (!existsSync(CHROMIUM)) return null;
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--disable-dev-shm-usage'] });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const at = cookie.indexOf('=');
    await context.addCookies([{ name: cookie.slice(0, at), value: cookie.slice(at + 1), url: server.url, secure: true, httpOnly: true }]);
    const page = await context.newPage();
    const dcl: number[] = [];
    const load: number[] = [];
    for (let i = 0; i < 13; i++) {
      await page.goto(server.url + path, { waitUntil: 'load' });
      // a string: this file compiles without the DOM types
      const t = (await page.evaluate(
        "(() => { const n = performance.getEntriesByType('navigation')[0]; return { dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd }; })()",
      )) as { dcl: number; load: number };
      if (i >= 3) {
        dcl.push(t.dcl);
        load.push(t.load);
      }
    }
    return { dcl: median(dcl), load: median(load) };
  } finally {
    await browser.close();
  }
}

async function signIn(server: RunningServer, token: string): Promise<string> {
  const page = await fetch(`${server.url}/app/signin`);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  const res = await fetch(`${server.url}/app/signin`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `svc_app_csrf=${csrf}` },
    body: new URLSearchParams({ csrf, token, next: '/app/queue' }).toString(),
    redirect: 'manual',
  });
  const session = /svc_app_session=([^;]+)/.exec(res.headers.getSetCookie().join('\n'))?.[1];
  if (!session) throw new Error(`sign-in failed: ${res.status}`);
  return `svc_app_session=${session}`;
}

export async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'wg-bench-app-'));
  const config = { ...configFromEnv({}), host: '127.0.0.1', port: 0, dataDir, fsync: false, tenantPollMs: 60_000 };
  const server = await startServer({ config, plugins: allPlugins, log: createLogger(() => undefined, true) });
  try {
    const { org, token, person } = server.bootstrap!;
    const admin: WriteActor = { personId: person, name: 'Admin', email: 'admin@localhost', agent: null, session: null };
    const t0 = performance.now();
    if (ONLY !== 'board') await seed(server, org, admin);
    await seedBoard(server, org, admin);
    console.log(
      `app: seeded ${ONLY === 'board' ? 'only' : `${ITEMS} tasks, a 40-edge node and`} a ${BOARD_CARDS}-card board in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${machineNote()}`,
    );
    const cookie = { cookie: await signIn(server, token) };
    const bearer = { authorization: `Bearer ${token}` };
    const rows: Array<{ page: string; html_ms: number; html_kb: number; json_ms: number; json_kb: number; ratio: number }> = [];
    const measure = async (page: string, htmlPath: string, jsonPaths: string[]) => {
      const { page: h, json: j } = await pairedMedians(server, htmlPath, cookie, jsonPaths, bearer);
      rows.push({ page, html_ms: h.ms, html_kb: h.bytes / 1024, json_ms: j.ms, json_kb: j.bytes / 1024, ratio: h.ms / j.ms });
      console.log(
        `app ${page}: page ${h.ms.toFixed(1)} ms (${(h.bytes / 1024).toFixed(0)} KB) vs JSON ${j.ms.toFixed(1)} ms (${(j.bytes / 1024).toFixed(0)} KB): ${fmtRatio(h.ms / j.ms)}`,
      );
    };
    // no REST twin draws a board: the project's queue (100 ranked items) is the nearest JSON, a floor rather than a twin
    await measure(`board of ${BOARD_CARDS} cards (12 columns)`, '/app/board?project=proj-bench', [
      '/v1/queue?project=proj-bench&limit=100',
    ]);
    const loaded = await browserLoad(server, cookie.cookie, '/app/board?project=proj-bench');
    // the same browser measure of a small page, for the machine's load at the time
    const small = await browserLoad(server, cookie.cookie, '/app/board');
    if (loaded && small)
      console.log(
        `app board in Chromium: DOMContentLoaded ${loaded.dcl.toFixed(0)} ms, load ${loaded.load.toFixed(0)} ms (median of 10); the project chooser page: ${small.dcl.toFixed(0)} / ${small.load.toFixed(0)} ms`,
      );
    if (ONLY === 'board') {
      recordResult('app', { items: 0, runs: RUNS, rows, board_browser: loaded, chooser_browser: small });
      return;
    }
    await measure(`queue page 1 of ${ITEMS} items (50 a page)`, '/app/queue', ['/v1/queue?limit=50']);
    await measure(`queue last page of ${ITEMS}`, `/app/queue?offset=${ITEMS - 50}`, [`/v1/queue?limit=50&offset=${ITEMS - 50}`]);
    await measure('node with 40 edges (+history)', '/app/nodes/task-hub', ['/v1/nodes/task-hub', '/v1/nodes/task-hub/history?limit=20']);
    // no REST twin walks the neighborhood (explore_graph is MCP-only): the node read is only a floor here
    await measure('node neighborhood picture (vs the node read alone)', '/app/nodes/task-hub/graph', ['/v1/nodes/task-hub']);
    recordResult('app', { items: ITEMS, runs: RUNS, rows, board_browser: loaded, chooser_browser: small });
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, main);
