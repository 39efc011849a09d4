/**
 * History: memory that does not grow with history (issue 27 item 3), and node history latency.
 *
 * Fixtures (_history-fixture.ts, cached under .bench/fixtures/): the 10,000-node fixture with
 * 10,000 commits (1,000 of them on `task-bench-000000`), and the same with N commits in all,
 * the commits past 10,000 on ten `issue` nodes (their statuses cycle, so the analytics
 * timelines see a status change per commit).
 *
 * Measured:
 *   - RSS and heap (after a full GC) of a server process (core, history, analytics) on each
 *     fixture once its commit index and timelines are ready, and again after one write and one
 *     history entry (both read packed objects through the git store): at the first open (the
 *     indexes built from git) and after a restart (read back from disk). The target: RSS after
 *     N commits within 1.2x of RSS after 10,000 (the headline compares the restarts);
 *   - opening the on-disk commit index in-process: from scratch (the whole `git log`), from its
 *     files with the per-node snapshot, and from its files without it (one read of every
 *     record), and the heap one open index holds;
 *   - GET /v1/nodes/{id}/history (limit 50 and 200) on the 1,000-commit node and on a node with
 *     a handful, GET /v1/nodes/{id}/history/{sha}, GET /v1/changes (limit 100, and since a commit
 *     5,000 back), sequential requests, p50/p95/p99, on the 10,000-commit fixture;
 *   - for reference, what a per-request walk of the log would cost (`git log -- <path>`).
 *
 * Env: BENCH_HISTORY_COMMITS (N, default 200,000: the fixture builds in about a minute and
 * each server open of it takes well under a minute here; 1000000 for the issue's year of
 * history), BENCH_HISTORY_REQUESTS (default 300).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { cpSync, existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../../kernel/config.js';
import { nodePath } from '../../kernel/git/objects.js';
import { startKernel, startServer } from '../../kernel/server.js';
import type { Tenant } from '../../kernel/tenant.js';
import { analyticsPlugin } from '../../plugins/analytics/index.js';
import { corePlugin } from '../../plugins/core/index.js';
import { CommitIndex } from '../../plugins/history/commit-index.js';
import { historyPlugin } from '../../plugins/history/index.js';
import { BASE_COMMITS, baseHistory, HOT_COMMITS, issueId, longHistory } from './_history-fixture.js';
import {
  benchConfig,
  benchId,
  fmtMs,
  fmtRatio,
  gitAsync,
  machineNote,
  median,
  NODE_ARGS,
  nowMs,
  recordResult,
  ROOT,
  runIfMain,
  scratchDir,
  stopChild,
  verdict,
  type Fixture,
} from './lib.js';

const COMMITS = Number(process.env.BENCH_HISTORY_COMMITS ?? 200_000);
const REQUESTS = Number(process.env.BENCH_HISTORY_REQUESTS ?? 300);
const HOT = benchId(0);
const TARGET_RATIO = 1.2;
const log = (line: string) => process.stderr.write(line + '\n');

/** `history.ts --serve <dataDir>`: a server with history and analytics; prints `listening on URL`, answers `mem` on stdin. */
async function serve(dataDir: string): Promise<void> {
  const server = await startServer({
    config: benchConfig(dataDir, { fsync: false }),
    plugins: [corePlugin, historyPlugin, analyticsPlugin],
    log: createLogger(undefined, true),
  });
  process.stdout.write(`listening on ${server.url}\n`);
  const gc = (globalThis as { gc?: () => void }).gc;
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line.trim() !== 'mem') return;
    gc?.();
    const m = process.memoryUsage();
    process.stdout.write(
      `mem ${JSON.stringify({ rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers })}\n`,
    );
  });
  const stop = () => void server.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

interface Memory {
  rss: number;
  heapUsed: number;
  /** memory outside the JS heap: Buffers and the like */
  external: number;
  arrayBuffers: number;
}

interface Child {
  url: string;
  mem(): Promise<Memory>;
  stop(): Promise<void>;
}

function startChild(dataDir: string): Promise<Child> {
  const child: ChildProcess = spawn(process.execPath, [...NODE_ARGS, '--expose-gc', fileURLToPath(import.meta.url), '--serve', dataDir], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const waiting: Array<(line: string) => void> = [];
  lines.on('line', (line) => waiting.shift()?.(line));
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`history server exited (${code}) before listening`)));
    waiting.push((line) => {
      const m = /listening on (\S+)/.exec(line);
      if (!m) return reject(new Error(`unexpected server output: ${line}`));
      resolve({
        url: m[1]!,
        mem: () =>
          new Promise((res) => {
            waiting.push((l) => res(JSON.parse(l.replace(/^mem /, '')) as Memory));
            child.stdin!.write('mem\n');
          }),
        stop: () => stopChild(child),
      });
    });
  });
}

async function get(url: string, token: string, path: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url + path, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, text: await res.text() };
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function timeRequests(
  url: string,
  token: string,
  paths: string[],
): Promise<{ p50: number; p95: number; p99: number; bytes: number }> {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < Math.min(20, paths.length); i++) await get(url, token, paths[i]!);
  for (const path of paths) {
    const t0 = nowMs();
    const res = await get(url, token, path);
    times.push(nowMs() - t0);
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.text.slice(0, 200)}`);
    bytes = res.text.length;
  }
  return { p50: pct(times, 50), p95: pct(times, 95), p99: pct(times, 99), bytes };
}

const fmt = (r: { p50: number; p95: number; p99: number }) =>
  `p50 ${r.p50.toFixed(2)} ms  p95 ${r.p95.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms`;
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;

/** A private copy of a cached fixture (a server writes its indexes and snapshots into it). */
function copyOf(f: Fixture, label: string): Fixture {
  const dataDir = join(scratchDir(label), 'data');
  cpSync(f.dataDir, dataDir, { recursive: true });
  const tenantDir = join(dataDir, 'tenants', f.org);
  return { ...f, dataDir, gitdir: join(tenantDir, 'graph.git'), snapshot: join(tenantDir, 'state', 'index-snapshot.v8') };
}

type Opened = Memory & { readyMs: number; inUse: Memory };

/** The smallest RSS of three readings half a second apart, after a second: V8 gives memory back lazily, and a reading can meet buffers in flight. */
async function settled(child: Child): Promise<Memory> {
  let best: Memory | null = null;
  for (let k = 0; k < 3; k++) {
    await new Promise((r) => setTimeout(r, k === 0 ? 1000 : 500));
    const m = await child.mem();
    if (!best || m.rss < best.rss) best = m;
  }
  return best!;
}

/**
 * Server memory at the first open and after a restart: once both indexes are ready, and again
 * in use, after one write (it reads the HEAD trees) and one history entry (it reads an old
 * blob): both read packed objects through the git store.
 */
async function serverMemory(f: Fixture, probeNode: string): Promise<{ first: Opened; restart: Opened }> {
  let writes = 0;
  const once = async (): Promise<Opened> => {
    const t0 = nowMs();
    const child = await startChild(f.dataDir);
    try {
      // each read waits for its index
      const history = await get(child.url, f.token, `/v1/nodes/${probeNode}/history`);
      const analytics = await get(child.url, f.token, '/v1/analytics');
      if (history.status !== 200 || analytics.status !== 200) throw new Error(`not ready: ${history.status} ${analytics.status}`);
      const readyMs = nowMs() - t0;
      const ready = await settled(child);
      const id = `task-bench-probe-${++writes}`;
      const write = await fetch(`${child.url}/v1/nodes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${f.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ nodes: [`---\nid: ${id}\nsummary: a write while memory is measured\n---\n`] }),
      });
      if (write.status !== 200) throw new Error(`write: ${write.status} ${await write.text()}`);
      const entries = (JSON.parse(history.text) as { history: Array<{ sha: string }> }).history;
      const entry = await get(child.url, f.token, `/v1/nodes/${probeNode}/history/${entries[entries.length - 1]!.sha}`);
      if (entry.status !== 200) throw new Error(`history entry: ${entry.status}`);
      return { ...ready, readyMs, inUse: await settled(child) };
    } finally {
      await child.stop();
    }
  };
  const first = await once();
  const restart = await once();
  return { first, restart };
}

/** Opening the commit index in-process: from scratch, from its files with and without the per-node snapshot; and its heap. */
async function indexOpen(f: Fixture): Promise<{ scratchMs: number; snapshotMs: number; scanMs: number; heapBytes: number }> {
  // history is not among the kernel's plugins: the only index on the tenant is the one made here
  const kernel = await startKernel({
    config: benchConfig(f.dataDir, { fsync: false }),
    plugins: [corePlugin],
    log: createLogger(undefined, true),
  });
  const tenant: Tenant = kernel.services.tenants.get(f.org)!;
  const dir = join(tenant.dir, 'commit-index');
  const open = async () => {
    const t0 = nowMs();
    const idx = new CommitIndex(tenant);
    await idx.ready();
    return { idx, ms: nowMs() - t0 };
  };
  try {
    rmSync(dir, { recursive: true, force: true });
    const scratch = await open();
    if (scratch.idx.count !== Number((await gitAsync(['--git-dir', f.gitdir, 'rev-list', '--count', 'main'])).trim()))
      throw new Error(`index holds ${scratch.idx.count} commits`);
    await scratch.idx.close();
    const snapshotRuns: number[] = [];
    for (let r = 0; r < 3; r++) {
      const o = await open();
      snapshotRuns.push(o.ms);
      await o.idx.close();
    }
    rmSync(join(dir, 'nodes.snap'));
    const scan = await open();
    await scan.idx.close();
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    // collected twice over: what earlier opens left must not count for or against this one
    const settle = () => {
      for (let i = 0; i < 3; i++) gc();
    };
    settle();
    const before = process.memoryUsage().heapUsed;
    const held = await open();
    settle();
    const heapBytes = process.memoryUsage().heapUsed - before;
    await held.idx.close();
    return { scratchMs: scratch.ms, snapshotMs: median(snapshotRuns), scanMs: scan.ms, heapBytes };
  } finally {
    await kernel.close();
  }
}

async function latency(f: Fixture): Promise<Record<string, { p50: number; p95: number; p99: number; bytes: number }>> {
  const child = await startChild(f.dataDir);
  try {
    const token = f.token;
    const list = JSON.parse((await get(child.url, token, `/v1/nodes/${HOT}/history?limit=200`)).text) as {
      history: Array<{ sha: string }>;
    };
    const shas = list.history.map((h) => h.sha);
    const feed = JSON.parse((await get(child.url, token, '/v1/changes?limit=1')).text) as { head: string };
    const since = (await gitAsync(['--git-dir', f.gitdir, 'rev-parse', `${feed.head}~5000`])).trim();
    const r = {
      history50: await timeRequests(child.url, token, Array(REQUESTS).fill(`/v1/nodes/${HOT}/history`)),
      history200: await timeRequests(child.url, token, Array(REQUESTS).fill(`/v1/nodes/${HOT}/history?limit=200`)),
      historySmall: await timeRequests(child.url, token, Array(REQUESTS).fill(`/v1/nodes/${benchId(4321)}/history`)),
      detail: await timeRequests(
        child.url,
        token,
        Array.from({ length: Math.min(REQUESTS, 100) }, (_, k) => `/v1/nodes/${HOT}/history/${shas[(k * 37) % shas.length]!.slice(0, 10)}`),
      ),
      changes: await timeRequests(child.url, token, Array(100).fill('/v1/changes')),
      changesSince: await timeRequests(child.url, token, Array(100).fill(`/v1/changes?since=${since}&limit=500`)),
    };
    console.log(`  GET history of ${HOT} (${HOT_COMMITS} commits), limit 50:  ${fmt(r.history50)}  (${r.history50.bytes} bytes)`);
    console.log(`  GET history of ${HOT}, limit 200:                  ${fmt(r.history200)}  (${r.history200.bytes} bytes)`);
    console.log(`  GET history of a node with few commits:                ${fmt(r.historySmall)}`);
    console.log(`  GET history/{sha} (diff + content):                    ${fmt(r.detail)}`);
    console.log(`  GET /v1/changes (limit 100):                           ${fmt(r.changes)}`);
    console.log(`  GET /v1/changes since 5,000 commits back, limit 500:   ${fmt(r.changesSince)}`);
    return r;
  } finally {
    await child.stop();
  }
}

async function main(): Promise<void> {
  console.log(machineNote());
  const base = await baseHistory(log);
  const long = await longHistory(COMMITS, log);
  console.log(
    `fixtures: ${BASE_COMMITS.toLocaleString('en-US')} commits (${HOT} has ${HOT_COMMITS}); ${COMMITS.toLocaleString('en-US')} commits`,
  );
  const scratch: string[] = [];
  try {
    const a = copyOf(base, 'history-base');
    const b = copyOf(long, 'history-long');
    scratch.push(dirname(a.dataDir), dirname(b.dataDir));

    const memA = await serverMemory(a, HOT);
    const memB = await serverMemory(b, issueId(0));
    const ratio = memB.restart.rss / memA.restart.rss;
    const firstRatio = memB.first.rss / memA.first.rss;
    const inUseRatio = memB.restart.inUse.rss / memA.restart.inUse.rss;
    const figures = (m: Memory) => `RSS ${mb(m.rss)} (heap ${mb(m.heapUsed)}, external ${mb(m.external)})`;
    for (const [label, m] of [
      [`${BASE_COMMITS.toLocaleString('en-US')} commits`, memA],
      [`${COMMITS.toLocaleString('en-US')} commits`, memB],
    ] as const) {
      console.log(`  server on ${label}:`);
      for (const [when, o] of [
        ['first open (indexes built from git)', m.first],
        ['after a restart (indexes read back)', m.restart],
      ] as const)
        console.log(`    ${when}: ready in ${fmtMs(o.readyMs)}, ${figures(o)}; after a write and a history entry ${figures(o.inUse)}`);
    }

    const openA = await indexOpen(a);
    const openB = await indexOpen(b);
    for (const [label, o] of [
      [BASE_COMMITS, openA],
      [COMMITS, openB],
    ] as const) {
      console.log(
        `  commit index of ${label.toLocaleString('en-US')} commits: from scratch ${fmtMs(o.scratchMs)}, reopen ${fmtMs(o.snapshotMs)} ` +
          `(without the node snapshot ${fmtMs(o.scanMs)}), heap held ${(o.heapBytes / 1024).toFixed(0)} KB`,
      );
    }

    const walks: number[] = [];
    for (let r = 0; r < 5; r++) {
      const w0 = nowMs();
      await gitAsync([
        '--git-dir',
        a.gitdir,
        'log',
        '--format=%H%x00%an%x00%ae%x00%at%x00%B',
        '-n',
        '50',
        'main',
        '--',
        nodePath('task', HOT),
      ]);
      walks.push(nowMs() - w0);
    }
    console.log(`  reference: git log -n 50 -- <path> per request would cost median ${fmtMs(median(walks))}`);
    const lat = await latency(a);

    console.log(
      `history: server RSS after ${COMMITS.toLocaleString('en-US')} commits ${mb(memB.restart.rss)} vs ${mb(memA.restart.rss)} after ` +
        `${BASE_COMMITS.toLocaleString('en-US')}: ${fmtRatio(ratio)}, first open ${fmtRatio(firstRatio)}, in use (after a write and an old ` +
        `version read) ${fmtRatio(inUseRatio)} (target <= ${TARGET_RATIO}x for all three: ${verdict(Math.max(ratio, firstRatio, inUseRatio) <= TARGET_RATIO)}); node with ${HOT_COMMITS} commits p50 ${lat.history50!.p50.toFixed(2)} ms, p99 ${lat.history50!.p99.toFixed(2)} ms (limit 50)`,
    );
    recordResult('history', {
      commits: COMMITS,
      base_commits: BASE_COMMITS,
      rss_ratio: ratio,
      rss_ratio_first_open: firstRatio,
      rss_ratio_in_use: inUseRatio,
      target_ratio: TARGET_RATIO,
      target_met: Math.max(ratio, firstRatio, inUseRatio) <= TARGET_RATIO,
      server_base: memA,
      server_long: memB,
      index_open_base: openA,
      index_open_long: openB,
      hot_node_commits: HOT_COMMITS,
      requests: REQUESTS,
      log_walk_ms: median(walks),
      ...lat,
    });
  } finally {
    for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--serve') {
  const dir = process.argv[3];
  if (!dir || !existsSync(join(dir, 'tenants'))) throw new Error('usage: history.ts --serve <dataDir>');
  void serve(dir);
} else {
  runIfMain(import.meta.url, main);
}
