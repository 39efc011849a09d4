/**
 * Startup time with 10,000 and 100,000 nodes: from spawning the server process
 * (`node --no-node-snapshot --import tsx scripts/workgraph.ts serve`, exactly `npm start`) to its
 * `listening on` line, which it prints only after every tenant is open and its index built.
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
import { rmSync } from 'node:fs';
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
  runIfMain,
  startServerProcess,
  verdict,
  type Fixture,
} from './lib.js';

const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 3);
const SIZES = (process.env.BENCH_STARTUP_SIZES ?? '10000,100000').split(',').map(Number);
const TARGET_MS: Record<number, number> = { 10000: 1000, 100000: 5000 };

const cpuOf = new Map<number, number>();

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

  const results: Record<string, unknown> = { baseline_ms: base.median };
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
    };
  }
  for (const l of lines) console.log(l);
  console.log(`startup: baseline process start to listening with 2 nodes ${fmtMs(base.median)}`);
  recordResult('startup', results);
}

runIfMain(import.meta.url, main);
