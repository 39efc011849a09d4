/**
 * Node history latency on a node with 1,000 commits in a repository of 10,000 commits.
 *
 * Fixture: the shared 10,000-node data directory (lib.ts `fixture`, two commits: bootstrap and
 * the bulk load), copied, then 9,998 more commits appended with `git fast-import` so `main`
 * holds exactly 10,000 commits: 999 of them edit `task-bench-000000` (which the bulk load
 * created, so it has 1,000 commits), the other 8,999 each edit one of the other nodes. Every
 * commit carries the server's `Svc-*` trailers. fast-import writes a pack, as a repository
 * looks after `git gc`.
 *
 * Measured:
 *   - building the per-node commit index from git at tenant open (median of 3 builds);
 *   - GET /v1/nodes/{id}/history against `workgraph`-style server child process running the
 *     history plugin (default limit 50 and limit 200) on the 1,000-commit node, and on a node
 *     with a handful of commits for contrast; sequential requests, p50/p95/p99;
 *   - GET /v1/nodes/{id}/history/{sha} (one git diff + one blob read per request);
 *   - GET /v1/changes (limit 100, and since a commit 5,000 commits back);
 *   - for reference, what a per-request walk of the log would cost: `git log -- <path>` for the
 *     same node.
 *
 * Env: BENCH_HISTORY_REQUESTS (default 300).
 */
import { spawn } from 'node:child_process';
import { setFlagsFromString, writeHeapSnapshot } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../../kernel/config.js';
import { nodePath } from '../../kernel/git/objects.js';
import { startKernel, startServer } from '../../kernel/server.js';
import { corePlugin } from '../../plugins/core/index.js';
import { CommitIndex } from '../../plugins/history/commit-index.js';
import { historyPlugin } from '../../plugins/history/index.js';
import {
  benchConfig,
  benchId,
  benchMarkdown,
  copyFixture,
  fixture,
  fmtMs,
  gitAsync,
  gitEnv,
  gitSync,
  machineNote,
  median,
  NODE_ARGS,
  nowMs,
  recordResult,
  ROOT,
  runIfMain,
  stopChild,
  type Fixture,
} from './lib.js';

const REQUESTS = Number(process.env.BENCH_HISTORY_REQUESTS ?? 300);
const TOTAL_COMMITS = 10_000;
const HOT_COMMITS = 1_000;
const NODES = 10_000;
const HOT = benchId(0);
const PLUGINS = [corePlugin, historyPlugin];

/** `history.ts --serve <dataDir>`: a server with the history plugin, prints `listening on URL`. */
async function serve(dataDir: string): Promise<void> {
  const server = await startServer({
    config: benchConfig(dataDir, { fsync: false }),
    plugins: PLUGINS,
    log: createLogger(undefined, true),
  });
  process.stdout.write(`listening on ${server.url}\n`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

function startChild(dataDir: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [...NODE_ARGS, fileURLToPath(import.meta.url), '--serve', dataDir], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const m = /listening on (\S+)/.exec(out);
      if (m) {
        child.stdout!.removeAllListeners('data');
        child.stdout!.resume();
        resolve({ url: m[1]!, stop: () => stopChild(child) });
      }
    });
    child.on('exit', (code) => reject(new Error(`history server exited (${code}) before listening`)));
  });
}

/** The shared fixture's tenant was created with the composition root's plugins; switch ours on. */
export function enablePlugins(f: Fixture, names: string[]): void {
  const file = join(f.dataDir, 'tenants', f.org, 'tenant.json');
  const config = JSON.parse(readFileSync(file, 'utf8')) as { plugins: string[] };
  config.plugins = [...new Set([...config.plugins, ...names])];
  writeFileSync(file, JSON.stringify(config, null, 2) + '\n');
}

/** Appends commits with one streamed `git fast-import` until main holds TOTAL_COMMITS commits. */
async function appendCommits(f: Fixture): Promise<void> {
  const existing = Number(gitSync(['--git-dir', f.gitdir, 'rev-list', '--count', 'main']).trim());
  const head = gitSync(['--git-dir', f.gitdir, 'rev-parse', 'main']).trim();
  const toAdd = TOTAL_COMMITS - existing;
  const hotEdits = HOT_COMMITS - 1;
  // spread the hot node's edits evenly through the appended history
  const every = Math.floor(toAdd / hotEdits);
  const revs = new Map<number, number>();
  const chunks: string[] = [];
  let ts = 1_735_787_045 + 60;
  let hotDone = 0;
  let other = 1;
  for (let k = 0; k < toAdd; k++) {
    const hot = hotDone < hotEdits && k % every === 0;
    const i = hot ? 0 : other;
    if (hot) hotDone++;
    else other = (other % (NODES - 1)) + 1;
    const rev = (revs.get(i) ?? 0) + 1;
    revs.set(i, rev);
    const content = Buffer.from(benchMarkdown(i, rev, f.person), 'utf8');
    const message = Buffer.from(`bench_edit: ${benchId(i)}\n\nSvc-Op: bench_edit\nSvc-Via: rest\nSvc-Person: ${f.person}\n`, 'utf8');
    chunks.push(
      `commit refs/heads/main\nauthor Bench Author <bench@localhost> ${ts} +0000\ncommitter Bench Author <bench@localhost> ${ts} +0000\n` +
        `data ${message.length}\n${message.toString('utf8')}\n` +
        (k === 0 ? `from ${head}\n` : '') +
        `M 100644 inline ${nodePath('task', benchId(i))}\ndata ${content.length}\n${content.toString('utf8')}\n\n`,
    );
    ts += 1;
  }
  if (hotDone !== hotEdits) throw new Error(`planned ${hotDone} hot edits, wanted ${hotEdits}`);
  await gitAsync(['--git-dir', f.gitdir, 'fast-import', '--quiet'], { input: chunks.join(''), env: gitEnv() });
  const count = Number(gitSync(['--git-dir', f.gitdir, 'rev-list', '--count', 'main']).trim());
  if (count !== TOTAL_COMMITS) throw new Error(`main has ${count} commits, expected ${TOTAL_COMMITS}`);
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
  for (let i = 0; i < Math.min(20, paths.length); i++)
    await (await fetch(url + paths[i]!, { headers: { authorization: `Bearer ${token}` } })).text();
  for (const path of paths) {
    const t0 = nowMs();
    const res = await fetch(url + path, { headers: { authorization: `Bearer ${token}` } });
    const text = await res.text();
    times.push(nowMs() - t0);
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${text.slice(0, 200)}`);
    bytes = text.length;
  }
  return { p50: pct(times, 50), p95: pct(times, 95), p99: pct(times, 99), bytes };
}

const fmt = (r: { p50: number; p95: number; p99: number }) =>
  `p50 ${r.p50.toFixed(2)} ms  p95 ${r.p95.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms`;

async function main(): Promise<void> {
  console.log(machineNote());
  const base = await fixture(NODES);
  const f = copyFixture(base, 'history');
  const t0 = nowMs();
  await appendCommits(f);
  enablePlugins(f, ['history']);
  console.log(`fixture: ${TOTAL_COMMITS} commits (${HOT} has ${HOT_COMMITS}) appended in ${fmtMs(nowMs() - t0)}`);

  // Index build at tenant open, measured on the kernel directly.
  const kernel = await startKernel({
    config: benchConfig(f.dataDir, { fsync: false }),
    plugins: PLUGINS,
    log: createLogger(undefined, true),
  });
  const tenant = kernel.services.tenants.get(f.org)!;
  const builds: number[] = [];
  let built: CommitIndex | null = null;
  for (let r = 0; r < 3; r++) {
    const b0 = nowMs();
    const idx = new CommitIndex(tenant);
    await idx.ready();
    builds.push(nowMs() - b0);
    built?.close();
    built = idx;
  }
  const hotCount = built!.changesOf(HOT)?.length ?? 0;
  if (built!.commits.length !== TOTAL_COMMITS || hotCount !== HOT_COMMITS) {
    throw new Error(`index holds ${built!.commits.length} commits, ${hotCount} for ${HOT}`);
  }
  const hotShas = built!.changesOf(HOT)!.map((c) => c.commit.sha);
  const sinceSha = built!.commits[TOTAL_COMMITS - 5000]!.sha;
  // What one index holds per commit: the heap after a full GC with one more index built, less before
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const measured = new CommitIndex(tenant);
  await measured.ready();
  gc();
  const indexBytesPerCommit = (process.memoryUsage().heapUsed - heapBefore) / TOTAL_COMMITS;
  if (process.env.BENCH_HISTORY_HEAPSNAPSHOT) writeHeapSnapshot(process.env.BENCH_HISTORY_HEAPSNAPSHOT);
  measured.close();
  built!.close();
  await kernel.close();
  console.log(
    `  commit index build (git log of ${TOTAL_COMMITS} commits + parse): median ${fmtMs(median(builds))} (${builds.map((b) => Math.round(b)).join(', ')} ms)`,
  );
  console.log(`  commit index heap: ${Math.round(indexBytesPerCommit)} bytes a commit (one change each)`);

  // The naive alternative: one log walk per request.
  const walks: number[] = [];
  for (let r = 0; r < 5; r++) {
    const w0 = nowMs();
    await gitAsync([
      '--git-dir',
      f.gitdir,
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

  const server = await startChild(f.dataDir);
  try {
    const token = f.token;
    const hist50 = await timeRequests(server.url, token, Array(REQUESTS).fill(`/v1/nodes/${HOT}/history`));
    const hist200 = await timeRequests(server.url, token, Array(REQUESTS).fill(`/v1/nodes/${HOT}/history?limit=200`));
    const cold = await timeRequests(server.url, token, Array(REQUESTS).fill(`/v1/nodes/${benchId(4321)}/history`));
    const detailPaths = Array.from(
      { length: Math.min(REQUESTS, 100) },
      (_, k) => `/v1/nodes/${HOT}/history/${hotShas[(k * 37) % hotShas.length]!.slice(0, 10)}`,
    );
    const detail = await timeRequests(server.url, token, detailPaths);
    const changes = await timeRequests(server.url, token, Array(100).fill('/v1/changes'));
    const changesSince = await timeRequests(server.url, token, Array(100).fill(`/v1/changes?since=${sinceSha}&limit=500`));
    console.log(`  GET history of ${HOT} (${HOT_COMMITS} commits), limit 50:  ${fmt(hist50)}  (${hist50.bytes} bytes)`);
    console.log(`  GET history of ${HOT}, limit 200:                  ${fmt(hist200)}  (${hist200.bytes} bytes)`);
    console.log(`  GET history of a node with few commits:                ${fmt(cold)}`);
    console.log(`  GET history/{sha} (diff + content):                    ${fmt(detail)}`);
    console.log(`  GET /v1/changes (limit 100):                           ${fmt(changes)}`);
    console.log(`  GET /v1/changes since 5,000 commits back, limit 500:   ${fmt(changesSince)}`);
    console.log(
      `history: node with ${HOT_COMMITS} commits in a ${TOTAL_COMMITS}-commit repository: p50 ${hist50.p50.toFixed(2)} ms, p99 ${hist50.p99.toFixed(2)} ms (limit 50); ` +
        `index build at open ${fmtMs(median(builds))}; a per-request log walk would be ${fmtMs(median(walks))}`,
    );
    recordResult('history', {
      commits: TOTAL_COMMITS,
      hot_node_commits: HOT_COMMITS,
      requests: REQUESTS,
      index_build_ms: median(builds),
      index_bytes_per_commit: indexBytesPerCommit,
      index_builds_ms: builds,
      log_walk_ms: median(walks),
      history_limit50: hist50,
      history_limit200: hist200,
      history_small_node: cold,
      history_detail: detail,
      changes,
      changes_since: changesSince,
    });
  } finally {
    await server.stop();
    rmSync(dirname(f.dataDir), { recursive: true, force: true });
  }
}

if (process.argv[2] === '--serve') {
  const dir = process.argv[3];
  if (!dir || !existsSync(join(dir, 'tenants'))) throw new Error('usage: history.ts --serve <dataDir>');
  void serve(dir);
} else {
  runIfMain(import.meta.url, main);
}
