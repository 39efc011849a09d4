/**
 * Issue 16: cost as the graph grows, measured as a new user would. One fresh tenant (the
 * real server process, `npm start`'s bundle, fsync on) is seeded over HTTP with N task nodes,
 * 100 per POST /v1/nodes, and the run prints, all measured in the same run:
 *   - seed rate and ms per request (one commit each) in the first and last tenth, and the ratio;
 *   - server RSS: empty, peak during the seed, steady after it (KB per node above empty), peak
 *     during a restart, and the peak/steady ratio;
 *   - durable writes/s with 1 and 8 concurrent writers (one new node per POST) and the ratio;
 *   - the data directory's size against a copy of its repository after `git gc --aggressive`;
 *   - GET /v1/nodes/{id}, /v1/queue and /v1/analytics medians at N;
 *   - restart: spawn to `listening on`, and to the first node read.
 * Knobs: BENCH_SCALE_N (100000), BENCH_SCALE_BATCH (100), BENCH_SCALE_WRITES (200 per contender).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fmtMs, fmtRate, fmtRatio, gitSync, machineNote, median, nowMs, recordResult, runIfMain, scratchDir, startServerProcess, waitQuiet, type ServerChild } from './lib.js';

const N = Number(process.env.BENCH_SCALE_N ?? 100_000);
const BATCH = Number(process.env.BENCH_SCALE_BATCH ?? 100);
const WRITES = Number(process.env.BENCH_SCALE_WRITES ?? 200);

/** Resident set size of a live process in KB (VmRSS), NaN where /proc is missing. */
function rssKb(pid: number | undefined): number {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

/** Samples a process's RSS every `everyMs` until stopped; returns the peak seen. */
function rssSampler(pid: number | undefined, everyMs = 100): { stop(): number } {
  let peak = rssKb(pid);
  const timer = setInterval(() => {
    const v = rssKb(pid);
    if (v > peak || !Number.isFinite(peak)) peak = v;
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, rssKb(pid) || 0);
    },
  };
}

function duKb(path: string): number {
  const r = spawnSync('du', ['-sk', path], { encoding: 'utf8' });
  return Number(r.stdout.split(/\s+/)[0]);
}

const scaleId = (i: number): string => `task-scale-${String(i).padStart(6, '0')}`;

class Api {
  constructor(
    readonly server: ServerChild,
    private readonly token: string,
  ) {}

  async call(method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
    const res = await fetch(this.server.url + path, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  }

  async create(ids: string[]): Promise<void> {
    const r = await this.call('POST', '/v1/nodes', {
      nodes: ids.map((id, k) => ({ node: { id, type: 'task', summary: `Scale task ${id}: importer drops rows on DST boundaries (${k})` } })),
    });
    if (r.status !== 200) throw new Error(`POST /v1/nodes: ${r.status} ${r.text.slice(0, 500)}`);
  }

  /** Median ms of `runs` GETs of `path` (after one untimed warm-up). */
  async timeGet(path: (k: number) => string, runs: number): Promise<number> {
    const first = await this.call('GET', path(0));
    if (first.status !== 200) throw new Error(`GET ${path(0)}: ${first.status} ${first.text.slice(0, 300)}`);
    const xs: number[] = [];
    for (let k = 1; k <= runs; k++) {
      const t0 = nowMs();
      const r = await this.call('GET', path(k));
      xs.push(nowMs() - t0);
      if (r.status !== 200) throw new Error(`GET ${path(k)}: ${r.status}`);
    }
    return median(xs);
  }
}

/** `count` single-node creates split over `writers` concurrent clients; returns writes/s. */
async function concurrentWrites(api: Api, start: number, count: number, writers: number): Promise<number> {
  const lanes: number[][] = Array.from({ length: writers }, () => []);
  for (let k = 0; k < count; k++) lanes[k % writers]!.push(start + k);
  const t0 = nowMs();
  await Promise.all(lanes.map(async (lane) => {
    for (const i of lane) await api.create([scaleId(i)]);
  }));
  return count / ((nowMs() - t0) / 1000);
}

export async function main(): Promise<void> {
  console.log(machineNote());
  console.log(`scale: ${N.toLocaleString('en-US')} nodes over HTTP, ${BATCH} per request, fsync on`);
  const dataDir = join(scratchDir('scale'), 'data');
  let server = await startServerProcess(dataDir, { SVC_FSYNC: '1' });
  const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  let api = new Api(server, token);
  await waitQuiet('scale: empty server');
  const emptyKb = rssKb(server.child.pid);

  // seed
  const requests = Math.ceil(N / BATCH);
  const perRequest: number[] = [];
  const sampler = rssSampler(server.child.pid);
  const seed0 = nowMs();
  for (let r = 0; r < requests; r++) {
    const ids: string[] = [];
    for (let i = r * BATCH; i < Math.min(N, (r + 1) * BATCH); i++) ids.push(scaleId(i));
    const t0 = nowMs();
    await api.create(ids);
    perRequest.push(nowMs() - t0);
    if ((r + 1) % Math.max(1, Math.floor(requests / 10)) === 0) {
      console.log(`  seeded ${((r + 1) * BATCH).toLocaleString('en-US')}: ${fmtMs(nowMs() - seed0)}, RSS ${Math.round(rssKb(server.child.pid) / 1024)} MB`);
    }
  }
  const seedPeakKb = sampler.stop();
  const tenth = Math.max(1, Math.floor(requests / 10));
  const firstMs = perRequest.slice(0, tenth).reduce((a, b) => a + b, 0);
  const lastMs = perRequest.slice(-tenth).reduce((a, b) => a + b, 0);
  const firstRate = (tenth * BATCH) / (firstMs / 1000);
  const lastRate = (tenth * BATCH) / (lastMs / 1000);
  const commitFirst = median(perRequest.slice(0, tenth));
  const commitLast = median(perRequest.slice(-tenth));

  await waitQuiet('scale: after seed');
  const steadyKb = rssKb(server.child.pid);
  const perNodeKb = (steadyKb - emptyKb) / N;

  // concurrent writers (new nodes after the seeded ones)
  const w1 = await concurrentWrites(api, N, WRITES, 1);
  const w8 = await concurrentWrites(api, N + WRITES, WRITES, 8);
  const w1b = await concurrentWrites(api, N + 2 * WRITES, WRITES, 1);
  const w8b = await concurrentWrites(api, N + 3 * WRITES, WRITES, 8);
  const one = (w1 + w1b) / 2;
  const eight = (w8 + w8b) / 2;

  // reads
  const nodeMs = await api.timeGet((k) => `/v1/nodes/${scaleId((k * 7919) % N)}`, 200);
  const queueMs = await api.timeGet(() => '/v1/queue', 20);
  const analyticsMs = await api.timeGet(() => '/v1/analytics', 10);

  // restart
  await server.stop();
  const t0 = nowMs();
  server = await startServerProcess(dataDir, { SVC_FSYNC: '1' });
  const restartSampler = rssSampler(server.child.pid, 50);
  api = new Api(server, token);
  const listenMs = server.readyMs;
  const firstRead = await api.call('GET', `/v1/nodes/${scaleId(1)}`);
  const firstReadMs = nowMs() - t0;
  if (firstRead.status !== 200) throw new Error(`first read after restart: ${firstRead.status}`);
  await waitQuiet('scale: after restart');
  const restartPeakKb = restartSampler.stop();
  const restartSteadyKb = rssKb(server.child.pid);
  await server.stop();

  // disk
  const dataKb = duKb(dataDir);
  const gitdir = join(dataDir, 'tenants', 'local', 'graph.git');
  const gcCopy = join(scratchDir('scale-gc'), 'graph.git');
  cpSync(gitdir, gcCopy, { recursive: true });
  const gc0 = nowMs();
  gitSync(['-C', gcCopy, 'gc', '--aggressive', '--prune=now', '--quiet']);
  const gcMs = nowMs() - gc0;
  const gcKb = duKb(gcCopy);

  const mb = (kb: number): string => `${Math.round(kb / 1024)} MB`;
  const lines = [
    `seed rate, first / last tenth: ${fmtRate(firstRate)} / ${fmtRate(lastRate)} nodes/s (last/first ${fmtRatio(lastRate / firstRate)})`,
    `per-commit cost (${BATCH} nodes), median first / last tenth: ${commitFirst.toFixed(1)} / ${commitLast.toFixed(1)} ms (${fmtRatio(commitLast / commitFirst)}; target <= 1.3x: ${commitLast / commitFirst <= 1.3 ? 'met' : 'NOT met'})`,
    `RSS empty ${mb(emptyKb)}, seed peak ${mb(seedPeakKb)}, steady ${mb(steadyKb)}: ${perNodeKb.toFixed(2)} KB/node above empty (target <= 2: ${perNodeKb <= 2 ? 'met' : 'NOT met'}); seed peak/steady ${fmtRatio(seedPeakKb / steadyKb)}`,
    `restart: RSS peak ${mb(restartPeakKb)}, steady ${mb(restartSteadyKb)} (peak/steady ${fmtRatio(restartPeakKb / restartSteadyKb)}; target <= 1.5x for both peaks)`,
    `writes, 1 / 8 concurrent writers: ${fmtRate(one)} / ${fmtRate(eight)} per s (8/1 ${fmtRatio(eight / one)}; target >= 3x: ${eight / one >= 3 ? 'met' : 'NOT met'})`,
    `reads at ${N.toLocaleString('en-US')}: node ${nodeMs.toFixed(2)} ms, queue ${queueMs.toFixed(1)} ms, analytics ${analyticsMs.toFixed(1)} ms (target <= 100 ms: ${analyticsMs <= 100 ? 'met' : 'NOT met'})`,
    `restart: listening after ${fmtMs(listenMs)}, first node read after ${fmtMs(firstReadMs)}`,
    `disk: data dir ${mb(dataKb)}, repository after git gc --aggressive ${mb(gcKb)} (${fmtMs(gcMs)}): ${fmtRatio(dataKb / gcKb)} (target <= 3x: ${dataKb / gcKb <= 3 ? 'met' : 'NOT met'})`,
  ];
  for (const l of lines) console.log(`  ${l}`);
  console.log(`scale: ${N} nodes, per-commit last/first ${fmtRatio(commitLast / commitFirst)}, ${perNodeKb.toFixed(2)} KB/node, 8/1 writers ${fmtRatio(eight / one)}, analytics ${analyticsMs.toFixed(0)} ms, disk/gc ${fmtRatio(dataKb / gcKb)}`);
  recordResult('scale', {
    nodes: N, batch: BATCH, firstRate, lastRate, commitFirst, commitLast, emptyKb, seedPeakKb, steadyKb, perNodeKb,
    restartPeakKb, restartSteadyKb, writers1: one, writers8: eight, nodeMs, queueMs, analyticsMs, listenMs, firstReadMs, dataKb, gcKb, gcMs,
  });
}

runIfMain(import.meta.url, main);
