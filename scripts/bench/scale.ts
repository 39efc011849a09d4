/**
 * Issue 16: cost as the graph grows, measured as a new user would. One fresh tenant (the
 * real server process, `npm start`'s bundle, fsync on) is seeded over HTTP with N task nodes,
 * 100 per POST /v1/nodes, and the run prints, all measured in the same run:
 *   - seed rate and ms per request (one commit each) in the first and last tenth, and the ratio;
 *   - server RSS: empty, peak during the seed and until it settles (the idle collections
 *     included), steady after it (KB per node above empty), the same for a restart, and the
 *     peak/steady ratios;
 *   - durable writes/s with 1 and 8 concurrent writers (one new node per POST) and the ratio;
 *   - the data directory's size against a copy of its repository after `git gc --aggressive`;
 *   - GET /v1/nodes/{id}, /v1/queue and /v1/analytics medians at N;
 *   - restart: spawn to `listening on`, and to the first node read;
 *   - GET /v1/queue?limit=20 and /v1/analytics once the seed passes 10,000 nodes and again at N,
 *     with the queue's N/10k ratio (target <= 1.5x) and the analytics verdict (<= 100 ms).
 * Knobs: BENCH_SCALE_N (100000), BENCH_SCALE_BATCH (100), BENCH_SCALE_WRITES (1000 per contender),
 * BENCH_SCALE_READS_ONLY=1 (seed and reads only: no writers, restart, fast-import or gc).
 */
import { spawnSync } from 'node:child_process';
import { Agent, request } from 'node:http';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { nodePath } from '../../kernel/git/objects.js';
import {
  fmtMs,
  fmtRate,
  fmtRatio,
  gitEnv,
  gitSync,
  machineNote,
  median,
  nowMs,
  recordResult,
  rssKb,
  settledRssKb,
  runIfMain,
  scratchDir,
  startServerProcess,
  waitQuiet,
  type ServerChild,
} from './lib.js';

const N = Number(process.env.BENCH_SCALE_N ?? 100_000);
const BATCH = Number(process.env.BENCH_SCALE_BATCH ?? 100);
const WRITES = Number(process.env.BENCH_SCALE_WRITES ?? 1000);
const HOOK_TIMEOUT_MS = Number(process.env.BENCH_SCALE_HOOK_TIMEOUT_MS ?? 2000);
const READS_ONLY = process.env.BENCH_SCALE_READS_ONLY === '1';
/** the reference size for the queue and analytics reads (timed when the seed passes it) */
const REF_N = 10_000;
const QUEUE_PATH = '/v1/queue?limit=20';

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

const METRICS_TOKEN = 'scale-bench-metrics-token';

/** Sum and count of the server's write-queue and journal fdatasync histograms (GET /metrics). */
async function writeTimings(url: string): Promise<{ queueS: number; writes: number; fsyncS: number; fsyncs: number }> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  const num = (name: string): number => Number(new RegExp(`^${name}\\{tenant="local"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return {
    queueS: num('workgraph_commit_duration_seconds_sum'),
    writes: num('workgraph_commit_duration_seconds_count'),
    fsyncS: num('workgraph_journal_fsync_duration_seconds_sum'),
    fsyncs: num('workgraph_journal_fsync_duration_seconds_count'),
  };
}

const scaleId = (i: number): string => `task-scale-${String(i).padStart(6, '0')}`;

/**
 * The bench's client: node:http over kept-alive connections. fetch (undici) spent about 0.5 ms of
 * CPU a request on this VM's 2 cores, against 0.14 ms for this, and the writers' figures measured
 * the client as much as the server (docs/performance.md "Tenth session").
 */
class Api {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 16 });
  constructor(
    readonly server: ServerChild,
    private readonly token: string,
  ) {}

  call(method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
    const payload = body === undefined ? null : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string | number> = { authorization: `Bearer ${this.token}` };
    if (payload) Object.assign(headers, { 'content-type': 'application/json', 'content-length': payload.length });
    return new Promise((resolve, reject) => {
      const req = request(this.server.url + path, { method, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(payload ?? undefined);
    });
  }

  /** closes the kept-alive connections (before the server is stopped or restarted) */
  close(): void {
    this.agent.destroy();
  }

  /** entries of a batch the server refused and that were sent again (printed: load can time out a hook) */
  retried: string[] = [];

  async create(ids: string[], retry = true): Promise<void> {
    const r = await this.call('POST', '/v1/nodes', {
      nodes: ids.map((id, k) => ({
        node: { id, type: 'task', summary: `Scale task ${id}: importer drops rows on DST boundaries (${k})` },
      })),
    });
    if (r.status === 200) return;
    let failed: Array<{ id?: string; status: string; error?: { code?: string; message?: string } }> | null = null;
    try {
      failed = (
        JSON.parse(r.text) as { results: Array<{ id?: string; status: string; error?: { code?: string; message?: string } }> }
      ).results.filter((x) => x.status !== 'created');
    } catch {
      // not the batch envelope
    }
    if (!retry || !failed || failed.length === 0 || failed.some((f) => !f.id))
      throw new Error(`POST /v1/nodes: ${r.status} ${failed ? JSON.stringify(failed).slice(0, 1500) : r.text.slice(0, 500)}`);
    for (const f of failed) this.retried.push(`${f.id}: ${f.error?.code ?? f.status} ${(f.error?.message ?? '').slice(0, 120)}`);
    await this.create(
      failed.map((f) => f.id!),
      false,
    );
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
  await Promise.all(
    lanes.map(async (lane) => {
      for (const i of lane) await api.create([scaleId(i)]);
    }),
  );
  return count / ((nowMs() - t0) / 1000);
}

/** Median ms of the first GET /v1/analytics after a one-node write, five times (nodes from `first`). */
async function analyticsAfterWrite(api: Api, first: number): Promise<number> {
  const afterWrite: number[] = [];
  for (let k = 0; k < 5; k++) {
    await api.create([scaleId(first + k)]);
    const t0 = nowMs();
    const r = await api.call('GET', '/v1/analytics');
    afterWrite.push(nowMs() - t0);
    if (r.status !== 200) throw new Error(`GET /v1/analytics: ${r.status}`);
  }
  return median(afterWrite);
}

export async function main(): Promise<void> {
  console.log(machineNote());
  console.log(`scale: ${N.toLocaleString('en-US')} nodes over HTTP, ${BATCH} per request, fsync on`);
  const dataDir = join(scratchDir('scale'), 'data');
  const serverEnv = { SVC_FSYNC: '1', SVC_METRICS_TOKEN: METRICS_TOKEN };
  let server = await startServerProcess(dataDir, serverEnv);
  const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  // The seed pack's transition hook runs in the sandbox with a 50 ms limit; on a 2-core machine
  // shared with other test runs (load average 20+) a starved sandbox process times out, and
  // three timeouts quarantine the hook, denying every create. The limit is raised for the run
  // (a tenant setting; the work per write is unchanged).
  if (HOOK_TIMEOUT_MS > 0) {
    await server.stop();
    const configFile = join(dataDir, 'tenants', 'local', 'tenant.json');
    const config = JSON.parse(readFileSync(configFile, 'utf8')) as { limits?: Record<string, number> };
    config.limits = { ...(config.limits ?? {}), hook_timeout_ms: HOOK_TIMEOUT_MS };
    writeFileSync(configFile, JSON.stringify(config, null, 2) + '\n');
    server = await startServerProcess(dataDir, serverEnv);
  }
  let api = new Api(server, token);
  await waitQuiet('scale: empty server');
  const emptyKb = await settledRssKb(server.child.pid);

  // seed
  const requests = Math.ceil(N / BATCH);
  const perRequest: number[] = [];
  const sampler = rssSampler(server.child.pid);
  const seed0 = nowMs();
  let ref: { nodes: number; queueMs: number; analyticsMs: number; analyticsAfterWriteMs: number } | null = null;
  for (let r = 0; r < requests; r++) {
    const ids: string[] = [];
    for (let i = r * BATCH; i < Math.min(N, (r + 1) * BATCH); i++) ids.push(scaleId(i));
    const t0 = nowMs();
    await api.create(ids);
    perRequest.push(nowMs() - t0);
    if ((r + 1) % Math.max(1, Math.floor(requests / 10)) === 0) {
      console.log(
        `  seeded ${((r + 1) * BATCH).toLocaleString('en-US')}: ${fmtMs(nowMs() - seed0)}, RSS ${Math.round(rssKb(server.child.pid) / 1024)} MB`,
      );
    }
    if (!ref && (r + 1) * BATCH >= REF_N && N > REF_N) {
      // the reference reads, same run: queue and analytics with 10,000 nodes seeded
      await waitQuiet('scale: reads at 10k');
      const nodes = Math.min(N, (r + 1) * BATCH);
      // untimed rounds first: at 10k the code is cold, at N it has run these paths already
      await api.timeGet(() => QUEUE_PATH, 10);
      await api.timeGet(() => '/v1/analytics', 5);
      ref = {
        nodes,
        queueMs: await api.timeGet(() => QUEUE_PATH, 20),
        analyticsMs: await api.timeGet(() => '/v1/analytics', 10),
        analyticsAfterWriteMs: 0,
      };
      ref.analyticsAfterWriteMs = await analyticsAfterWrite(api, 1_000_000);
      console.log(
        `  reads at ${nodes.toLocaleString('en-US')}: queue ${ref.queueMs.toFixed(2)} ms, analytics ${ref.analyticsMs.toFixed(1)} ms, first analytics after a write ${ref.analyticsAfterWriteMs.toFixed(1)} ms`,
      );
    }
  }
  const tenth = Math.max(1, Math.floor(requests / 10));
  const firstMs = perRequest.slice(0, tenth).reduce((a, b) => a + b, 0);
  const lastMs = perRequest.slice(-tenth).reduce((a, b) => a + b, 0);
  const firstRate = (tenth * BATCH) / (firstMs / 1000);
  const lastRate = (tenth * BATCH) / (lastMs / 1000);
  // per-commit cost "at 1k": the requests that wrote nodes 500..1,499 (the first tenth when N < 3,000)
  const at1k = N >= 3000 ? perRequest.slice(Math.floor(500 / BATCH), Math.ceil(1500 / BATCH)) : perRequest.slice(0, tenth);
  const commitFirst = median(at1k);
  const commitLast = median(perRequest.slice(-tenth));
  const commitFirstTenth = median(perRequest.slice(0, tenth));
  if (api.retried.length)
    console.log(`  ${api.retried.length} seed entries refused once and sent again, e.g. ${api.retried.slice(0, 3).join('; ')}`);

  await waitQuiet('scale: after seed');
  const steadyKb = await settledRssKb(server.child.pid);
  // the peak includes the settling: the idle collections (kernel/idle-gc.ts) compact, and a
  // compaction holds the live objects' new pages and the old ones at once for a moment
  const seedPeakKb = sampler.stop();
  const perNodeKb = (steadyKb - emptyKb) / N;

  // concurrent writers (new nodes after the seeded ones)
  // with one writer: how much of each write is spent in the tenant's write queue (serial), and
  // how much of that in the journal fdatasync (what group commit could share)
  let [w1WallMs, queueMs, fsyncMs, one, eight] = [NaN, NaN, NaN, NaN, NaN];
  if (!READS_ONLY) {
    const m0 = await writeTimings(server.url);
    const w1t0 = nowMs();
    const w1 = await concurrentWrites(api, N, WRITES, 1);
    w1WallMs = (nowMs() - w1t0) / WRITES;
    const m1 = await writeTimings(server.url);
    queueMs = ((m1.queueS - m0.queueS) * 1000) / (m1.writes - m0.writes);
    fsyncMs = ((m1.fsyncS - m0.fsyncS) * 1000) / (m1.fsyncs - m0.fsyncs);
    const w8 = await concurrentWrites(api, N + WRITES, WRITES, 8);
    const w1b = await concurrentWrites(api, N + 2 * WRITES, WRITES, 1);
    const w8b = await concurrentWrites(api, N + 3 * WRITES, WRITES, 8);
    one = (w1 + w1b) / 2;
    eight = (w8 + w8b) / 2;
  }

  // reads, once the writes' background work (pack write-outs) is done, as the 10k reference waits for
  await waitQuiet('scale: reads at N');
  const nodeMs = await api.timeGet((k) => `/v1/nodes/${scaleId((k * 7919) % N)}`, 200);
  const decisionQueueMs = await api.timeGet(() => QUEUE_PATH, 20);
  const analyticsMs = await api.timeGet(() => '/v1/analytics', 10);
  const analyticsAfterWriteMs = await analyticsAfterWrite(api, N + 4 * WRITES);
  // a program tree: a root blocked by 5 nodes, each blocked by 40 seeded nodes (blocked-by edges;
  // a node carries at most 40 edges)
  const parts = Array.from({ length: 5 }, (_, j) => ({
    node: {
      id: `task-scale-program-${j}`,
      type: 'task',
      summary: `Scale program part ${j}`,
      edges: Array.from({ length: 40 }, (_, k) => ({ type: 'blocked-by', to: scaleId(((j * 40 + k) * 4999) % N) })),
    },
  }));
  const rootNode = {
    node: {
      id: 'task-scale-program',
      type: 'task',
      summary: 'Scale program root',
      edges: parts.map((p) => ({ type: 'blocked-by', to: p.node.id })),
    },
  };
  const root = await api.call('POST', '/v1/nodes', { nodes: [...parts, rootNode] });
  if (root.status !== 200) throw new Error(`program root: ${root.status} ${root.text.slice(0, 300)}`);
  const programMs = await api.timeGet(() => '/v1/program/task-scale-program', 10);
  // issue 27 item 5: queue and analytics at N against the same run's reads at 10,000 nodes
  const queueRatio = ref ? decisionQueueMs / ref.queueMs : NaN;
  const worstAnalytics = Math.max(analyticsMs, analyticsAfterWriteMs);
  const refLine = ref
    ? `queue (limit=20) at ${N.toLocaleString('en-US')} / at ${ref.nodes.toLocaleString('en-US')}: ${decisionQueueMs.toFixed(2)} / ${ref.queueMs.toFixed(2)} ms (${fmtRatio(queueRatio)}; target <= 1.5x: ${queueRatio <= 1.5 ? 'met' : 'NOT met'}); analytics repeated / first after a write at ${N.toLocaleString('en-US')}: ${analyticsMs.toFixed(1)} / ${analyticsAfterWriteMs.toFixed(1)} ms (at ${ref.nodes.toLocaleString('en-US')}: ${ref.analyticsMs.toFixed(1)} / ${ref.analyticsAfterWriteMs.toFixed(1)} ms; target <= 100 ms: ${worstAnalytics <= 100 ? 'met' : 'NOT met'})`
    : `queue (limit=20) ${decisionQueueMs.toFixed(2)} ms, analytics ${analyticsMs.toFixed(1)} / ${analyticsAfterWriteMs.toFixed(1)} ms (no 10,000-node reference: N <= ${REF_N})`;
  const item5 = {
    queueRefMs: ref?.queueMs ?? NaN,
    analyticsRefMs: ref?.analyticsMs ?? NaN,
    analyticsAfterWriteRefMs: ref?.analyticsAfterWriteMs ?? NaN,
    queueRatio,
  };
  if (READS_ONLY) {
    api.close();
    await server.stop();
    console.log(`  reads at ${N.toLocaleString('en-US')}: node ${nodeMs.toFixed(2)} ms, program (200 blockers) ${programMs.toFixed(1)} ms`);
    console.log(`  ${refLine}`);
    console.log(`scale: ${N} nodes (reads only), ${refLine}`);
    recordResult('scale', {
      nodes: N,
      readsOnly: true,
      nodeMs,
      queueMs: decisionQueueMs,
      analyticsMs,
      analyticsAfterWriteMs,
      programMs,
      ...item5,
    });
    return;
  }

  // restart
  api.close();
  await server.stop();
  const t0 = nowMs();
  server = await startServerProcess(dataDir, serverEnv);
  const restartSampler = rssSampler(server.child.pid, 50);
  api = new Api(server, token);
  const listenMs = server.readyMs;
  const firstRead = await api.call('GET', `/v1/nodes/${scaleId(1)}`);
  const firstReadMs = nowMs() - t0;
  if (firstRead.status !== 200) throw new Error(`first read after restart: ${firstRead.status}`);
  await waitQuiet('scale: after restart');
  const restartSteadyKb = await settledRssKb(server.child.pid);
  const restartPeakKb = restartSampler.stop();
  api.close();
  await server.stop();

  // disk
  const dataKb = duKb(dataDir);
  const gitdir = join(dataDir, 'tenants', 'local', 'graph.git');

  // reference: `git fast-import` appending one-node commits to a copy of the same repository
  // (same shard trees), one process, streamed, wall time including its start
  const fiCopy = join(scratchDir('scale-fi'), 'graph.git');
  cpSync(gitdir, fiCopy, { recursive: true });
  const fiN = 2 * WRITES;
  let stream = '';
  for (let k = 0; k < fiN; k++) {
    const id = scaleId(10_000_000 + k);
    const content = `---\nid: ${id}\ntype: task\nstatus: open\nsummary: Scale task ${id}: importer drops rows on DST boundaries (fast-import)\n---\n`;
    stream += `commit refs/heads/main\ncommitter Bench <b@x> ${1_700_000_000 + k} +0000\ndata 12\nfast-import\n${k === 0 ? 'from refs/heads/main^0\n' : ''}M 100644 inline ${nodePath('task', id)}\ndata ${Buffer.byteLength(content)}\n${content}\n`;
  }
  const fi0 = nowMs();
  const fi = spawnSync('git', ['--git-dir', fiCopy, '-c', 'core.fsync=all', 'fast-import', '--quiet'], {
    input: stream + 'done\n',
    maxBuffer: 1 << 30,
    env: gitEnv(),
  });
  if (fi.status !== 0) throw new Error(`fast-import failed: ${fi.stderr}`);
  const fastImportRate = fiN / ((nowMs() - fi0) / 1000);
  const gcCopy = join(scratchDir('scale-gc'), 'graph.git');
  cpSync(gitdir, gcCopy, { recursive: true });
  const gc0 = nowMs();
  gitSync(['-C', gcCopy, 'gc', '--aggressive', '--prune=now', '--quiet']);
  const gcMs = nowMs() - gc0;
  const gcKb = duKb(gcCopy);

  const mb = (kb: number): string => `${Math.round(kb / 1024)} MB`;
  const lines = [
    `seed rate, first / last tenth: ${fmtRate(firstRate)} / ${fmtRate(lastRate)} nodes/s (last/first ${fmtRatio(lastRate / firstRate)})`,
    `per-commit cost (${BATCH} nodes), median at 1k / last tenth: ${commitFirst.toFixed(1)} / ${commitLast.toFixed(1)} ms (${fmtRatio(commitLast / commitFirst)}; target <= 1.3x: ${commitLast / commitFirst <= 1.3 ? 'met' : 'NOT met'}); first tenth ${commitFirstTenth.toFixed(1)} ms`,
    `RSS empty ${mb(emptyKb)}, seed peak ${mb(seedPeakKb)}, steady ${mb(steadyKb)}: ${perNodeKb.toFixed(2)} KB/node above empty (target <= 2: ${perNodeKb <= 2 ? 'met' : 'NOT met'}); seed peak/steady ${fmtRatio(seedPeakKb / steadyKb)}`,
    `restart: RSS peak ${mb(restartPeakKb)}, steady ${mb(restartSteadyKb)} (peak/steady ${fmtRatio(restartPeakKb / restartSteadyKb)}; target <= 1.5x for both peaks)`,
    `writes, 1 / 8 concurrent writers: ${fmtRate(one)} / ${fmtRate(eight)} per s (8/1 ${fmtRatio(eight / one)}; target >= 3x: ${eight / one >= 3 ? 'met' : 'NOT met'}); git fast-import on the same repository ${fmtRate(fastImportRate)} commits/s: 8 writers ${fmtRatio(eight / fastImportRate)} of it (target >= 0.5x: ${eight / fastImportRate >= 0.5 ? 'met' : 'NOT met'})`,
    `reads at ${N.toLocaleString('en-US')}: node ${nodeMs.toFixed(2)} ms, queue ${decisionQueueMs.toFixed(1)} ms, analytics ${analyticsMs.toFixed(1)} ms, first analytics after a write ${analyticsAfterWriteMs.toFixed(1)} ms, program (200 blockers) ${programMs.toFixed(1)} ms (target <= 100 ms: ${Math.max(analyticsMs, analyticsAfterWriteMs, programMs) <= 100 ? 'met' : 'NOT met'})`,
    `one writer: ${w1WallMs.toFixed(2)} ms per write, ${queueMs.toFixed(2)} ms of it in the tenant write queue (serial), ${fsyncMs.toFixed(2)} ms of that the journal append + fdatasync: queued writes can run at most ${fmtRatio(w1WallMs / queueMs)} faster than one writer, with fsyncs shared at most ${fmtRatio(w1WallMs / Math.max(0.001, queueMs - fsyncMs))}`,
    `restart: listening after ${fmtMs(listenMs)}, first node read after ${fmtMs(firstReadMs)}`,
    refLine,
    `disk: data dir ${mb(dataKb)}, repository after git gc --aggressive ${mb(gcKb)} (${fmtMs(gcMs)}): ${fmtRatio(dataKb / gcKb)} (target <= 3x: ${dataKb / gcKb <= 3 ? 'met' : 'NOT met'})`,
  ];
  for (const l of lines) console.log(`  ${l}`);
  console.log(
    `scale: ${N} nodes, per-commit last/first ${fmtRatio(commitLast / commitFirst)}, ${perNodeKb.toFixed(2)} KB/node, 8/1 writers ${fmtRatio(eight / one)}, analytics ${analyticsMs.toFixed(0)} ms, queue N/10k ${fmtRatio(queueRatio)}, disk/gc ${fmtRatio(dataKb / gcKb)}`,
  );
  recordResult('scale', {
    nodes: N,
    batch: BATCH,
    firstRate,
    lastRate,
    commitFirst,
    commitLast,
    emptyKb,
    seedPeakKb,
    steadyKb,
    perNodeKb,
    restartPeakKb,
    restartSteadyKb,
    writers1: one,
    writers8: eight,
    fastImportRate,
    w1WallMs,
    writeQueueMs: queueMs,
    fsyncMs,
    nodeMs,
    queueMs: decisionQueueMs,
    analyticsMs,
    analyticsAfterWriteMs,
    programMs,
    commitFirstTenth,
    retried: api.retried.length,
    listenMs,
    firstReadMs,
    dataKb,
    gcKb,
    gcMs,
    ...item5,
  });
}

runIfMain(import.meta.url, main);
