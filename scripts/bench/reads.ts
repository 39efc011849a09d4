/**
 * `GET /v1/nodes/{id}` requests per second against the real server, compared with a bare
 * koa + @koa/router route serving the very same JSON bytes from a Map (the HTTP ceiling of
 * the framework the server is built on).
 *
 * Both servers are one process each (the real one is `workgraph serve`, exactly `npm start`,
 * on a 10,000-node data directory; the bare one is this file run with `--bare`), started one
 * at a time; autocannon runs in this process with the same settings against each: 50
 * connections, no pipelining, the same duration, the same rotation over 1,000 node ids
 * (setupRequest rewrites the path of every request). The real server also checks the bearer
 * token on each request, which the bare route does not. Rounds alternate (ours, bare, ours,
 * bare, ...) so a change in machine load hits both; each run is preceded by a 2 s warm-up. The
 * reported ratio is the median of the per-round ratios (robust to load swings on a shared
 * machine); the medians of each side's rates are printed too. Because other work on a shared
 * machine moves req/s a lot, the server processes' CPU time per request is measured as well
 * (from /proc): bare CPU/request over ours is the throughput ratio both would reach with a core
 * each to themselves.
 *
 * Env: BENCH_READS_SECONDS (default 4), BENCH_READS_ROUNDS (default 8),
 * BENCH_READS_CONNECTIONS (default 50).
 */
import Router from '@koa/router';
import Koa from 'koa';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  benchId,
  fixture,
  fmtRate,
  fmtRatio,
  machineNote,
  median,
  recordResult,
  processCpuMs,
  runIfMain,
  scratchDir,
  startReference,
  startServerProcess,
  verdict,
  waitQuiet,
  type ServerChild,
} from './lib.js';

const SECONDS = Number(process.env.BENCH_READS_SECONDS ?? 4);
const ROUNDS = Number(process.env.BENCH_READS_ROUNDS ?? 8);
const CONNECTIONS = Number(process.env.BENCH_READS_CONNECTIONS ?? 50);
const IDS = 1000;
/** issue 27 item 1: at least 0.8x bare koa's requests/s, and at most 30 µs of server CPU a read */
const TARGET_RATIO = 0.8;
const TARGET_CPU_US = 30;
const WARMUP_SECONDS = 2;

/** The slice of autocannon's programmatic API used here (the package ships no types). */
interface AutocannonRequest {
  method?: string;
  path?: string;
  setupRequest?: (req: { path: string }) => { path: string };
}
interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  errors: number;
  timeouts: number;
  non2xx: number;
}
type Autocannon = (opts: {
  url: string;
  connections: number;
  pipelining: number;
  duration: number;
  headers: Record<string, string>;
  requests: AutocannonRequest[];
}) => Promise<AutocannonResult>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

/** `reads.ts --bare <map.json>`: the bare koa route, one process, prints `listening on URL`. */
async function bareServer(mapFile: string): Promise<void> {
  const bodies = new Map<string, string>(Object.entries(JSON.parse(readFileSync(mapFile, 'utf8')) as Record<string, string>));
  const app = new Koa();
  const router = new Router();
  router.get('/v1/nodes/:id', (ctx) => {
    const body = bodies.get(ctx.params.id!);
    if (body === undefined) {
      ctx.status = 404;
      return;
    }
    ctx.type = 'application/json';
    ctx.body = body;
  });
  app.use(router.routes());
  const server = createServer(app.callback());
  server.keepAliveTimeout = 5000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  process.stdout.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

function startBare(mapFile: string): Promise<ServerChild> {
  return startReference(import.meta.url, ['--bare', mapFile], 'bare server');
}

interface Load {
  rps: number;
  /** server CPU (user + system) per request, µs */
  cpuUs: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  total: number;
}

async function load(server: ServerChild, paths: string[], seconds: number, headers: Record<string, string>): Promise<Load> {
  let i = 0;
  const url = server.url;
  const cpu0 = processCpuMs(server.child.pid);
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    pipelining: 1,
    duration: seconds,
    headers,
    requests: [
      {
        method: 'GET',
        setupRequest: (req) => {
          req.path = paths[i++ % paths.length]!;
          return req;
        },
      },
    ],
  });
  const cpuMs = processCpuMs(server.child.pid) - cpu0;
  return {
    rps: result.requests.average,
    cpuUs: (cpuMs * 1000) / Math.max(1, result.requests.total),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    total: result.requests.total,
  };
}

export async function main(): Promise<void> {
  console.log(machineNote());
  const f = await fixture(10_000);
  const auth = { authorization: `Bearer ${f.token}` };
  const paths = Array.from({ length: IDS }, (_, k) => `/v1/nodes/${benchId((k * 7919 + 1) % f.nodes)}`);

  // Collect the real server's exact response bodies for the bare route.
  const ours = await startServerProcess(f.dataDir);
  const scratch = scratchDir('reads');
  let bare: ServerChild | undefined;
  const oursRuns: Load[] = [];
  const bareRuns: Load[] = [];
  try {
    const bodies: Record<string, string> = {};
    for (const p of paths) {
      const res = await fetch(ours.url + p, { headers: auth });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`GET ${p}: ${res.status} ${text}`);
      bodies[p.slice('/v1/nodes/'.length)] = text;
    }
    const avgBytes = Object.values(bodies).reduce((a, x) => a + Buffer.byteLength(x), 0) / IDS;
    const mapFile = join(scratch, 'bodies.json');
    writeFileSync(mapFile, JSON.stringify(bodies));
    console.log(
      `  GET /v1/nodes/{id} over ${IDS} ids of a ${f.nodes}-node graph, ~${Math.round(avgBytes)}-byte JSON, ${CONNECTIONS} connections, ${SECONDS} s x ${ROUNDS} rounds each`,
    );

    bare = await startBare(mapFile);
    const check = await fetch(bare.url + paths[0]!);
    if ((await check.text()) !== bodies[paths[0]!.slice('/v1/nodes/'.length)]) throw new Error('bare server answers different bytes');

    // the real server has just opened the tenant: let its start-up indexing finish first
    await waitQuiet('reads');
    for (let r = 0; r < ROUNDS; r++) {
      await load(ours, paths, WARMUP_SECONDS, auth);
      const o = await load(ours, paths, SECONDS, auth);
      oursRuns.push(o);
      await load(bare, paths, WARMUP_SECONDS, {});
      const b = await load(bare, paths, SECONDS, {});
      bareRuns.push(b);
      const line = (x: Load) => `${fmtRate(x.rps)} req/s p99 ${x.p99} ms cpu ${Math.round(x.cpuUs)} µs/req`;
      console.log(
        `  round ${r + 1}: ours ${line(o)} | bare koa ${line(b)} | ratio ${fmtRatio(o.rps / b.rps)}${o.non2xx + o.errors + b.non2xx + b.errors ? ` (${o.non2xx + o.errors}/${b.non2xx + b.errors} failed)` : ''}`,
      );
    }
  } finally {
    await ours.stop();
    await bare?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
  if (oursRuns.some((o) => o.non2xx > 0 || o.errors > 0)) throw new Error('the real server answered errors under load');
  const o = median(oursRuns.map((x) => x.rps));
  const b = median(bareRuns.map((x) => x.rps));
  const ratios = oursRuns.map((x, k) => x.rps / bareRuns[k]!.rps);
  const ratio = median(ratios);
  const oCpu = median(oursRuns.map((x) => x.cpuUs));
  const bCpu = median(bareRuns.map((x) => x.cpuUs));
  const cpuRatio = bCpu / oCpu;
  console.log(
    `reads: ours ${fmtRate(o)} req/s (p99 ${median(oursRuns.map((x) => x.p99))} ms), bare koa ${fmtRate(b)} req/s (p99 ${median(bareRuns.map((x) => x.p99))} ms), ` +
      `ratio ${fmtRatio(ratio)} (median of rounds ${ratios.map(fmtRatio).join(', ')}), target >= ${fmtRatio(TARGET_RATIO)}: ${verdict(ratio >= TARGET_RATIO)}`,
  );
  console.log(
    `reads CPU: ours ${Math.round(oCpu)} µs/request (target <= ${TARGET_CPU_US} µs: ${verdict(oCpu <= TARGET_CPU_US)}), bare koa ${Math.round(bCpu)} µs/request of server CPU: capacity ratio ${fmtRatio(cpuRatio)}`,
  );
  recordResult('reads', {
    ours_rps: o,
    bare_rps: b,
    ratio,
    per_round: ratios,
    ours_cpu_us_per_req: oCpu,
    bare_cpu_us_per_req: bCpu,
    cpu_ratio: cpuRatio,
    ours: oursRuns,
    bare: bareRuns,
    connections: CONNECTIONS,
    seconds: SECONDS,
    target_met: ratio >= TARGET_RATIO && oCpu <= TARGET_CPU_US,
  });
}

if (process.argv[2] === '--bare') {
  bareServer(process.argv[3]!).catch((err: unknown) => {
    process.stderr.write(`${String(err)}\n`);
    process.exit(1);
  });
} else {
  runIfMain(import.meta.url, main);
}
