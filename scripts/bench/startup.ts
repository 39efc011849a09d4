/**
 * Startup time with 10,000 and 100,000 nodes: from spawning the server process
 * (`node dist/workgraph.mjs serve`, what `npm start` runs) to its `listening on` line, which it
 * prints only after every tenant is open and its index built; and `npm start` itself to the first
 * node read, beside npm's own floor (`npm run env`) measured in the same run. The empty
 * server: its RSS after the first read, and that it started no sandbox worker.
 *
 *   warm   the index snapshot of HEAD is present (a normal restart)
 *   cold   the snapshot is deleted first: every node is read from git and parsed (the start
 *          also writes a fresh snapshot, durably, before it listens)
 *
 * Also measured, to split the total: the kernel started inside this process (`startKernel`:
 * sandbox, `Tenant.open` = git store, snapshot or full load, index, registry, then every
 * plugin's tenantOpen; modules already loaded, no HTTP), and a baseline server start on a data
 * directory with only the first-start nodes (node + tsx, module loading, sandbox, HTTP listen).
 * Fixture tenants have every plugin of scripts/plugins.ts enabled, as a new tenant would. Fixtures are built once under `.bench/fixtures/` (one bulk commit
 * through the git store, loose objects as the server writes them).
 *
 * Env: BENCH_STARTUP_RUNS (samples per cell, default 3; the median is reported),
 * BENCH_STARTUP_SIZES (default "10000,100000").
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { createLogger } from '../../kernel/config.js';
import { startKernel } from '../../kernel/server.js';
import { allPlugins } from '../plugins.js';
import {
  benchConfig,
  fixture,
  fmtMs,
  machineNote,
  median,
  nowMs,
  recordResult,
  rssKb,
  ROOT,
  runIfMain,
  startServerProcess,
  verdict,
  type Fixture,
} from './lib.js';

const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 3);
const SIZES = (process.env.BENCH_STARTUP_SIZES ?? '10000,100000').split(',').map(Number);
const TARGET_MS: Record<number, number> = { 10000: 1000, 100000: 5000 };

const cpuOf = new Map<number, number>();
/** An empty server process at most this RSS, MB (issue 27 item 2), with no sandbox worker started. */
const EMPTY_RSS_TARGET_MB = 80;
/** `npm start` to the first node read at 10,000 nodes, ms (issue 27 item 2). */
const NPM_START_TARGET_MS = 600;

/**
 * How many sandbox workers `pid` has started: its children running sandbox/worker.mjs. Not every
 * child: the server also runs git as children (a `git cat-file --batch` object reader, `git log`
 * when the commit index catches up), and counting every child made one start in eighteen report
 * a worker (docs/performance.md "Seventeenth session").
 */
function sandboxWorkers(pid: number): number {
  let n = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]) !== pid) continue;
      if (/sandbox[\\/]worker\.mjs/.test(readFileSync(`/proc/${entry}/cmdline`, 'utf8'))) n++;
    } catch {
      // the process ended meanwhile
    }
  }
  return n;
}

/**
 * The empty server (the 2-node first-start fixture, restarted): RSS after its first node read and
 * a second of idle, and whether it started a sandbox worker (it must not until a hook runs).
 */
async function emptyServer(f: Fixture): Promise<{ rssMb: number; workers: number }> {
  const s = await startServerProcess(f.dataDir);
  const res = await fetch(`${s.url}/v1/nodes/proj-root`, { headers: { authorization: `Bearer ${f.token}` } });
  if (res.status !== 200) throw new Error(`GET /v1/nodes/proj-root answered ${res.status}`);
  await res.text();
  await new Promise((r) => setTimeout(r, 1000));
  const out = { rssMb: rssKb(s.child.pid) / 1024, workers: sandboxWorkers(s.child.pid!) };
  await s.stop(true);
  return out;
}

/**
 * `npm start` as a newcomer runs it (npm, then scripts/start.mjs: the bundle's freshness check and
 * the server in one node process) to the first answered read of the fixture's last node. The
 * reference, measured in the same run: `npm run env` (npm's own start and its script runner, a
 * shell printing the environment: the floor under anything `npm start` runs).
 */
async function npmStart(f: Fixture): Promise<number> {
  const t0 = nowMs();
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', SVC_DATA_DIR: f.dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const last = `task-bench-${String(f.nodes - 1).padStart(6, '0')}`;
  try {
    for (;;) {
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (url) {
        const res = await fetch(`${url}/v1/nodes/${f.nodes > 0 ? last : 'proj-root'}`, { headers: { authorization: `Bearer ${f.token}` } });
        if (res.status !== 200) throw new Error(`first read answered ${res.status}`);
        await res.text();
        return nowMs() - t0;
      }
      if (child.exitCode !== null || nowMs() - t0 > 120_000) throw new Error(`npm start did not serve: ${out.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 2));
    }
  } finally {
    // npm and the server it exec'd, as a group; SIGKILL as serverStart does
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
    await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r)));
  }
}

function npmFloor(): number {
  const t0 = nowMs();
  const r = spawnSync('npm', ['run', '--silent', 'env'], { cwd: ROOT, stdio: 'ignore' });
  if (r.status !== 0) throw new Error(`npm run env failed (${r.status})`);
  return nowMs() - t0;
}

async function serverStart(f: Fixture, cold: boolean): Promise<number> {
  if (cold) rmSync(f.snapshot, { force: true });
  const s = await startServerProcess(f.dataDir);
  // sanity: the server answers and holds every node
  const res = await fetch(`${s.url}/v1/status`, { headers: { authorization: `Bearer ${f.token}` } });
  if (res.status !== 200) throw new Error(`GET /v1/status answered ${res.status}`);
  const probe = await fetch(`${s.url}/v1/nodes/task-bench-${String(f.nodes - 1).padStart(6, '0')}`, {
    headers: { authorization: `Bearer ${f.token}` },
  });
  if (f.nodes > 0 && probe.status !== 200) throw new Error(`the last bench node is missing (${probe.status})`);
  // SIGKILL: a clean close would rewrite the (unchanged) snapshot, disk traffic the next sample would feel
  await s.stop(true);
  cpuOf.set(s.readyMs, s.cpuMs);
  return s.readyMs;
}

/** In this process: `startKernel` (sandbox, every tenant opened, every plugin's tenantOpen), no HTTP. */
async function kernelStart(f: Fixture, cold: boolean): Promise<number> {
  if (cold) rmSync(f.snapshot, { force: true });
  const t0 = nowMs();
  const kernel = await startKernel({
    config: benchConfig(f.dataDir, { fsync: true }),
    plugins: allPlugins,
    log: createLogger(undefined, true),
  });
  const ms = nowMs() - t0;
  const n = kernel.services.tenants.get(f.org)?.index.size ?? 0;
  if (n !== f.nodes + 2) throw new Error(`opened ${n} nodes, expected ${f.nodes + 2}`);
  await kernel.close();
  return ms;
}

async function sample(fn: () => Promise<number>): Promise<{ median: number; all: number[] }> {
  const all: number[] = [];
  for (let i = 0; i < RUNS; i++) all.push(await fn());
  return { median: median(all), all };
}

const show = (xs: number[]) => xs.map((x) => (cpuOf.has(x) ? `${fmtMs(x)} (cpu ${fmtMs(cpuOf.get(x)!)})` : fmtMs(x))).join(', ');

export async function main(): Promise<void> {
  console.log(machineNote());
  const fixtures = new Map<number, Fixture>();
  for (const n of [0, ...SIZES]) fixtures.set(n, await fixture(n));

  // warm-up: tsx's transform cache and the page cache (not reported)
  await serverStart(fixtures.get(0)!, false);
  const base = await sample(() => serverStart(fixtures.get(0)!, false));
  console.log(`  baseline server start (2 nodes)         ${fmtMs(base.median)}  [${show(base.all)}]`);
  const empties: Array<{ rssMb: number; workers: number }> = [];
  for (let i = 0; i < RUNS; i++) empties.push(await emptyServer(fixtures.get(0)!));
  const emptyMb = median(empties.map((e) => e.rssMb));
  const workers = Math.max(...empties.map((e) => e.workers));
  const emptyLine = `empty server RSS ${emptyMb.toFixed(1)} MB after its first read (target <= ${EMPTY_RSS_TARGET_MB}: ${verdict(emptyMb <= EMPTY_RSS_TARGET_MB)}); sandbox workers started: ${workers} (target 0: ${verdict(workers === 0)})`;
  console.log(`  ${emptyLine}`);

  const results: Record<string, unknown> = { baseline_ms: base.median, empty_rss_mb: emptyMb, empty_workers: workers };
  const lines: string[] = [];
  for (const n of SIZES) {
    const f = fixtures.get(n)!;
    const target = TARGET_MS[n];
    // cold first: it leaves a fresh snapshot behind for the warm runs
    const cold = await sample(() => serverStart(f, true));
    const warm = await sample(() => serverStart(f, false));
    console.log(`  ${n} nodes, server, warm (snapshot)     ${fmtMs(warm.median)}  [${show(warm.all)}]`);
    console.log(`  ${n} nodes, server, cold (no snapshot)  ${fmtMs(cold.median)}  [${show(cold.all)}]`);
    const openCold = await sample(() => kernelStart(f, true));
    const openWarm = await sample(() => kernelStart(f, false));
    console.log(`  ${n} nodes, kernel start in-process, warm ${fmtMs(openWarm.median)}, cold ${fmtMs(openCold.median)}`);
    // npm start and its floor interleaved, sample by sample
    const viaNpm: number[] = [];
    const floor: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      floor.push(npmFloor());
      viaNpm.push(await npmStart(f));
    }
    const npmMs = median(viaNpm);
    const floorMs = median(floor);
    const npmTarget = n === 10000 ? `, target <= ${fmtMs(NPM_START_TARGET_MS)}: ${verdict(npmMs <= NPM_START_TARGET_MS)}` : '';
    const npmLine = `${n} nodes, npm start to first node read ${fmtMs(npmMs)} (npm's floor, npm run env: ${fmtMs(floorMs)}; above it ${fmtMs(npmMs - floorMs)})${npmTarget}`;
    console.log(`  ${npmLine}  [${viaNpm.map(fmtMs).join(', ')}]`);
    lines.push(`startup ${npmLine}`);
    const t =
      target !== undefined
        ? `, target <= ${fmtMs(target)}: warm ${verdict(warm.median <= target)}, cold ${verdict(cold.median <= target)}`
        : '';
    lines.push(
      `startup ${n}: warm ${fmtMs(warm.median)}, cold ${fmtMs(cold.median)} (process start to listening; in-process kernel start warm ${fmtMs(openWarm.median)}, cold ${fmtMs(openCold.median)}${t})`,
    );
    results[`n${n}`] = {
      warm_ms: warm.median,
      cold_ms: cold.median,
      warm_all: warm.all,
      cold_all: cold.all,
      open_warm_ms: openWarm.median,
      open_cold_ms: openCold.median,
      target_ms: target,
      npm_start_ms: npmMs,
      npm_floor_ms: floorMs,
    };
  }
  for (const l of lines) console.log(l);
  console.log(`startup: ${emptyLine}`);
  console.log(`startup: baseline process start to listening with 2 nodes ${fmtMs(base.median)}`);
  recordResult('startup', results);
}

runIfMain(import.meta.url, main);
