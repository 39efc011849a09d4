/**
 * Soak (issue 27 item 3): memory and latency of one server under a long mixed load of agents
 * and readers, on a graph held near 3,000 nodes. Run on request only (`npm run bench -- soak`),
 * it takes as long as it is told: BENCH_SOAK_MINUTES (default 60).
 *
 * The real server process (`workgraph serve`, exactly what `npm start` runs, fsync on) on a
 * fresh data directory, seeded with BENCH_SOAK_NODES task nodes (default 3,000) through
 * POST /v1/nodes. Then BENCH_SOAK_CLIENTS keep-alive clients (default 8) each loop over a
 * weighted mix, one request at a time:
 *
 *   reads   a node (40), the decision queue (8), the change feed (4), a node's history (4),
 *           analytics (1)
 *   writes  a priority (10), a status open <-> blocked (8), a `relates-to` edge to one of
 *           the node's next three added or removed (8): every write is one commit, so history
 *           grows by about a third of the requests while the graph stays the same size (no node
 *           is added, and each node has at most three such edges): what grows is history alone
 *
 * Every minute (BENCH_SOAK_SAMPLE_MS shortens it for a smoke run): the server's RSS and open file descriptors (/proc), the requests, commits and
 * 5xx answers of that minute, its p99 latency and the CPU a request of the server and of this
 * client process (a closed loop's latency moves with either: the two tell a slower server from a
 * slower machine or client). The client keeps the latencies of minutes 2-4 and of the last three
 * only, so its own memory does not grow with the run. The figures: RSS growth per 10 minutes and
 * per commit from the end of the second minute (warm) to the end, and p99 of the last three
 * minutes against minutes 2-4. Targets: RSS flat in history (growth per commit under
 * 0.1 KB, i.e. a year of commits costs nothing that a week does not) and p99 at the end
 * within 1.2x of the start; no 5xx.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  fmtRatio,
  machineNote,
  nowMs,
  processCpuMs,
  recordResult,
  rssKb,
  runIfMain,
  scratchDir,
  startServerProcess,
  verdict,
} from './lib.js';

const MINUTES = Number(process.env.BENCH_SOAK_MINUTES ?? 60);
const NODES = Number(process.env.BENCH_SOAK_NODES ?? 3000);
const CLIENTS = Number(process.env.BENCH_SOAK_CLIENTS ?? 8);
/** the sampling period, a minute unless a smoke run shortens it (BENCH_SOAK_SAMPLE_MS) */
const SAMPLE_MS = Number(process.env.BENCH_SOAK_SAMPLE_MS ?? 60_000);
const METRICS_TOKEN = `svc_pat_${'m'.repeat(32)}`;
/** growth per commit below this counts as flat (KB) */
const FLAT_KB_PER_COMMIT = 0.1;
const P99_TARGET = 1.2;

type OpName = 'node' | 'queue' | 'changes' | 'history' | 'analytics' | 'priority' | 'status' | 'edge';
const MIX: Array<[OpName, number]> = [
  ['node', 40],
  ['queue', 8],
  ['changes', 4],
  ['history', 4],
  ['analytics', 1],
  ['priority', 10],
  ['status', 8],
  ['edge', 8],
];
const WRITES = new Set<OpName>(['priority', 'status', 'edge']);
const TOTAL_WEIGHT = MIX.reduce((a, [, w]) => a + w, 0);

function pick(): OpName {
  let r = Math.random() * TOTAL_WEIGHT;
  for (const [name, w] of MIX) if ((r -= w) < 0) return name;
  return 'node';
}

const idOf = (i: number) => `task-soak-${String(i).padStart(6, '0')}`;

interface Minute {
  minute: number;
  rssMb: number;
  heapMb: number;
  fds: number;
  requests: number;
  commits: number;
  errors5xx: number;
  refused: number;
  p99: number;
  /** server and client (this process) CPU per request in the minute, µs */
  serverCpuUs?: number;
  clientCpuUs?: number;
}

function fdCount(pid: number | undefined): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return NaN;
  }
}

function p99Of(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)]!;
}

export async function main(): Promise<void> {
  console.log(machineNote());
  console.log(`soak: ${MINUTES} min, ${CLIENTS} clients, graph of ${NODES} task nodes, fsync on`);
  // BENCH_SOAK_DATA: a data directory a previous soak left (its history kept), to compare a
  // server with a long history against a new one; the graph is seeded only when it is not there
  const dataDir = process.env.BENCH_SOAK_DATA ?? join(scratchDir('soak'), 'data');
  const server = await startServerProcess(dataDir, { SVC_FSYNC: '1', SVC_METRICS_TOKEN: METRICS_TOKEN });
  /** the server's V8 heap in use (its own /metrics): RSS also moves with how much room V8 keeps */
  const heapMb = async (): Promise<number> => {
    const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    const m = /^workgraph_nodejs_heap_size_used_bytes (\S+)$/m.exec(await res.text());
    return m ? Number(m[1]) / 2 ** 20 : NaN;
  };
  const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const call = async (method: string, path: string, body?: unknown): Promise<number> => {
    const res = await fetch(server.url + path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    await res.arrayBuffer();
    return res.status;
  };

  try {
    // seed (unless a kept data directory already holds the graph)
    const seeded = (await call('GET', `/v1/nodes/${idOf(NODES - 1)}`)) === 200;
    for (let start = 0; start < (seeded ? 0 : NODES); start += 100) {
      const nodes = [];
      for (let i = start; i < Math.min(NODES, start + 100); i++)
        nodes.push({ node: { id: idOf(i), type: 'task', summary: `Soak task ${i}: rows dropped on DST boundaries` } });
      const status = await call('POST', '/v1/nodes', { nodes });
      if (status !== 200) throw new Error(`seeding answered ${status}`);
    }
    const blocked = new Set<number>();
    const edges = new Set<string>();
    const randomId = () => Math.floor(Math.random() * NODES);

    const run = async (op: OpName): Promise<number> => {
      const i = randomId();
      switch (op) {
        case 'node':
          return call('GET', `/v1/nodes/${idOf(i)}`);
        case 'queue':
          return call('GET', '/v1/queue?limit=20');
        case 'changes':
          return call('GET', '/v1/changes?limit=50');
        case 'history':
          return call('GET', `/v1/nodes/${idOf(i)}/history?limit=20`);
        case 'analytics':
          return call('GET', '/v1/analytics');
        case 'priority':
          return call('POST', `/v1/nodes/${idOf(i)}/priority`, { priority: ['p1', 'p2', 'p3'][i % 3] });
        case 'status': {
          const to = blocked.has(i) ? 'open' : 'blocked';
          const status = await call('POST', `/v1/nodes/${idOf(i)}/status`, { status: to });
          if (status === 200) {
            if (to === 'blocked') blocked.add(i);
            else blocked.delete(i);
          }
          return status;
        }
        case 'edge': {
          const to = idOf((i + 1 + Math.floor(Math.random() * 3)) % NODES);
          const key = `${i}>${to}`;
          const remove = edges.has(key);
          const status = await call(remove ? 'DELETE' : 'POST', `/v1/nodes/${idOf(i)}/edges`, { type: 'relates-to', to });
          if (status === 200) {
            if (remove) edges.delete(key);
            else edges.add(key);
          }
          return status;
        }
      }
    };

    const minutes: Minute[] = [];
    /** every request's latency, per minute */
    const latencies: number[][] = [];
    let lat: number[] = [];
    /** per operation: its latencies in the first sampled minutes (2-4) and in the last three */
    const byOp = new Map<OpName, number[][]>();
    let requests = 0;
    let commits = 0;
    let errors5xx = 0;
    let refused = 0;
    let minutesDone = 0;
    const t0 = nowMs();
    const end = t0 + MINUTES * 60_000 + SAMPLE_MS / 2;
    // CPU of the server process (/proc) and of this client process at the last sample, µs / ms
    const startCpu = process.cpuUsage();
    const cpuAt = { server: processCpuMs(server.child.pid), client: startCpu.user + startCpu.system };
    const loop = async () => {
      while (nowMs() < end) {
        const op = pick();
        const started = nowMs();
        let status: number;
        try {
          status = await run(op);
        } catch {
          status = 599; // the connection failed: counted with the 5xx
        }
        const took = nowMs() - started;
        lat.push(took);
        let perMinute = byOp.get(op);
        if (!perMinute) byOp.set(op, (perMinute = []));
        (perMinute[minutesDone] ??= []).push(took);
        requests++;
        if (status >= 500) errors5xx++;
        else if (status >= 400) refused++;
        else if (WRITES.has(op)) commits++;
      }
    };
    const sampler = setInterval(async () => {
      const heap = await heapMb().catch(() => NaN);
      const m: Minute = {
        minute: minutes.length + 1,
        rssMb: rssKb(server.child.pid) / 1024,
        heapMb: heap,
        fds: fdCount(server.child.pid),
        requests,
        commits,
        errors5xx,
        refused,
        p99: p99Of(lat),
      };
      const serverCpu = processCpuMs(server.child.pid);
      const clientCpu = process.cpuUsage();
      m.serverCpuUs = ((serverCpu - cpuAt.server) * 1000) / Math.max(1, requests);
      m.clientCpuUs = (clientCpu.user + clientCpu.system - cpuAt.client) / Math.max(1, requests);
      cpuAt.server = serverCpu;
      cpuAt.client = clientCpu.user + clientCpu.system;
      minutes.push(m);
      minutesDone = minutes.length;
      latencies.push(lat);
      lat = [];
      // the client keeps only the latencies the figures need (minutes 2-4 and the last three): a
      // minute that leaves the window is dropped, so its own memory and collections stay flat
      const leaving = latencies.length - 4;
      if (leaving >= 4) {
        latencies[leaving] = [];
        for (const perMinute of byOp.values()) if (perMinute[leaving]) perMinute[leaving] = [];
      }
      requests = commits = errors5xx = refused = 0;
      console.log(
        `  minute ${String(m.minute).padStart(3)}: RSS ${m.rssMb.toFixed(1)} MB, heap in use ${m.heapMb.toFixed(1)} MB, fds ${m.fds}, ${m.requests} requests (${m.commits} commits, ${m.refused} 4xx, ${m.errors5xx} 5xx), p99 ${m.p99.toFixed(1)} ms, CPU a request: server ${m.serverCpuUs.toFixed(0)} µs, client ${m.clientCpuUs.toFixed(0)} µs`,
      );
    }, SAMPLE_MS);
    await Promise.all(Array.from({ length: CLIENTS }, loop));
    clearInterval(sampler);

    if (minutes.length < 5) throw new Error('the soak needs at least 5 minutes (BENCH_SOAK_MINUTES)');
    const warm = minutes[1]!;
    const last = minutes[minutes.length - 1]!;
    const span = minutes.slice(2);
    const commitsAfterWarm = span.reduce((a, m) => a + m.commits, 0);
    const growthMb = last.rssMb - warm.rssMb;
    const heapPerCommitKb =
      ((last.heapMb - warm.heapMb) * 1024) /
      Math.max(
        1,
        span.reduce((a, m) => a + m.commits, 0),
      );
    const per10 = (growthMb / (((last.minute - warm.minute) * SAMPLE_MS) / 60_000)) * 10;
    const perCommitKb = (growthMb * 1024) / Math.max(1, commitsAfterWarm);
    const startP99 = p99Of(latencies.slice(1, 4).flat());
    const endP99 = p99Of(latencies.slice(-3).flat());
    const total5xx = minutes.reduce((a, m) => a + m.errors5xx, 0);
    const totalRequests = minutes.reduce((a, m) => a + m.requests, 0);
    const totalCommits = minutes.reduce((a, m) => a + m.commits, 0);
    // which operations got slower: each one's p99 and count, minutes 2-4 against the last three
    for (const [op, perMinute] of [...byOp].sort((a, b) => a[0].localeCompare(b[0]))) {
      const first = perMinute.slice(1, 4).flat();
      const lastOnes = perMinute.slice(minutes.length - 3, minutes.length).flat();
      console.log(
        `  ${op.padEnd(9)} p99 ${p99Of(first).toFixed(1)} -> ${p99Of(lastOnes).toFixed(1)} ms (${fmtRatio(p99Of(lastOnes) / p99Of(first))}), ` +
          `${first.length} -> ${lastOnes.length} requests`,
      );
    }
    console.log(
      `soak: ${MINUTES} min, ${totalRequests} requests, ${totalCommits} commits; RSS ${warm.rssMb.toFixed(1)} -> ${last.rssMb.toFixed(1)} MB ` +
        `(${per10.toFixed(1)} MB per 10 min, ${perCommitKb.toFixed(3)} KB per commit; target < ${FLAT_KB_PER_COMMIT} KB: ${verdict(perCommitKb < FLAT_KB_PER_COMMIT)}); ` +
        `heap in use ${warm.heapMb.toFixed(1)} -> ${last.heapMb.toFixed(1)} MB (${heapPerCommitKb.toFixed(3)} KB per commit); fds ${warm.fds} -> ${last.fds}; p99 ${startP99.toFixed(1)} -> ${endP99.toFixed(1)} ms (${fmtRatio(endP99 / startP99)}, target <= ${fmtRatio(P99_TARGET)}: ${verdict(endP99 / startP99 <= P99_TARGET)}); 5xx ${total5xx}`,
    );
    recordResult('soak', {
      minutes,
      rss_growth_mb_per_10min: per10,
      rss_growth_kb_per_commit: perCommitKb,
      p99_start_ms: startP99,
      p99_end_ms: endP99,
      errors5xx: total5xx,
      target_met: perCommitKb < FLAT_KB_PER_COMMIT && endP99 / startP99 <= P99_TARGET && total5xx === 0,
    });
  } finally {
    await server.stop();
  }
}

runIfMain(import.meta.url, main);
