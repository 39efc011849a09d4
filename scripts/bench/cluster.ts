/**
 * Cluster load (issue 15): the same load against one process and against three, measured in
 * the same run, on a durable PostgreSQL (the test launcher with PostgreSQL's default fsync and
 * synchronous commit) and one shared data directory.
 *
 * Phases, each on its own fresh data (servers exactly as `npm start` runs them, fsync on):
 *   embedded   one process, no PostgreSQL (the default deployment): the reference
 *   cluster-1  SVC_DATABASE_URL, one member
 *   cluster-3  the same data and database, two more members joined; the load waits until the
 *              tenants are spread (rebalanced) over the three
 * Load: TENANTS tenants (the first-start one plus `workgraph tenant add`), autocannon with
 * CONNECTIONS connections split evenly over the members (so in cluster-3 two thirds of the
 * requests land on a member that does not own their tenant and are forwarded), every request
 * for a tenant picked round robin:
 *   writes  POST /v1/nodes, one new task node a request (a durable commit each)
 *   reads   GET /v1/nodes/{id} of nodes the write phase made
 * Printed: requests/s of each phase and the ratios cluster-3 / cluster-1 (scale-out) and
 * cluster-1 / embedded (the cost of PostgreSQL's acknowledgements and routing; target >= 0.9x
 * each), plus one tenant's reads sent to its owner and then to a member that forwards them: the
 * latency of each, and the forwarding member's CPU per forwarded read (it serves none of that
 * tenant's reads itself, so its CPU meanwhile is the forwarding's; target <= 50 µs), next to
 * its reference in the same run: a bare Node reverse proxy in front of the same owner (this
 * file run with `--bare-proxy URL`: node:http, a keep-alive agent, the answer piped back, no
 * routing, no checks), probed the same way. That is the floor of forwarding over HTTP in Node.
 *
 * embedded and cluster-1 run side by side in ROUNDS alternating rounds (their order swapped each
 * round, the machine quiet for 10 s before each), so the ratio compares the same minutes of this
 * shared VM.
 *
 * Env: BENCH_CLUSTER_SECONDS (default 6), BENCH_CLUSTER_CONNECTIONS (default 24),
 * BENCH_CLUSTER_TENANTS (default 6), BENCH_CLUSTER_ROUNDS (default 4).
 */
import { spawnSync } from 'node:child_process';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { freshSchemaUrl, startPostgres } from '../../test/helpers/postgres.js';
import {
  fmtRate,
  fmtRatio,
  machineNote,
  processCpuMs,
  recordResult,
  ROOT,
  runIfMain,
  scratchDir,
  startReference,
  startServerProcess,
  waitQuiet,
  verdict,
  type ServerChild,
} from './lib.js';

const SECONDS = Number(process.env.BENCH_CLUSTER_SECONDS ?? 6);
const CONNECTIONS = Number(process.env.BENCH_CLUSTER_CONNECTIONS ?? 24);
const TENANTS = Number(process.env.BENCH_CLUSTER_TENANTS ?? 6);
const LEASE_MS = 3000;
/** rounds of embedded and cluster-1, alternating (contenders interleaved, as every bench here runs them) */
const ROUNDS = Number(process.env.BENCH_CLUSTER_ROUNDS ?? 4);
/** issue 27 item 7: a forwarded request costs the forwarding member at most this much CPU */
const FORWARD_CPU_TARGET_US = 50;
/** issue 27 item 7: a one-member cluster serves reads and writes at least this fraction of the embedded rate */
const ONE_MEMBER_TARGET = 0.9;

/** `cluster.ts --bare-proxy URL`: the reference forwarder, one process, prints `listening on URL`. */
async function bareProxy(target: string): Promise<void> {
  const to = new URL(target);
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const server = createServer((req, res) => {
    const upstream = request(
      { host: to.hostname, port: to.port, path: req.url, method: req.method, headers: req.headers, agent },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  process.stdout.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

function startBareProxy(target: string): Promise<ServerChild> {
  return startReference(import.meta.url, ['--bare-proxy', target], 'bare proxy');
}

interface AutocannonRequest {
  method?: string;
  path?: string;
  setupRequest?: (req: { method?: string; path: string; headers?: Record<string, string>; body?: string }) => { path: string };
}
interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodeStats?: Record<string, { count: number }>;
}
type Autocannon = (opts: {
  url: string;
  connections: number;
  pipelining: number;
  duration: number;
  requests: AutocannonRequest[];
}) => Promise<AutocannonResult>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const BOOTSTRAP = `svc_pat_${'b'.repeat(32)}`;

function cli(args: string[], env: Record<string, string>): string {
  const r = spawnSync(process.execPath, ['--no-node-snapshot', join(ROOT, 'dist', 'workgraph.mjs'), ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`workgraph ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

/** The tenants' tokens: the first-start one plus TENANTS - 1 added with the CLI. */
function addTenants(env: Record<string, string>): Array<{ org: string; token: string }> {
  const out = [{ org: 'local', token: BOOTSTRAP }];
  for (let i = 1; i < TENANTS; i++) {
    const org = `bench-${i}`;
    out.push({ org, token: JSON.parse(cli(['tenant', 'add', org, '--admin-email', `admin@${org}.test`], env)).token });
  }
  return out;
}

interface Phase {
  writes: number;
  reads: number;
  /** server CPU (all members) per request, microseconds */
  writeCpuUs: number;
  readCpuUs: number;
  readP50: number;
  forwardedP50: number | null;
  ownerP50: number | null;
  /** CPU of the member that only forwards, per forwarded read, microseconds (issue 27 item 7) */
  forwardCpuUs: number | null;
  /** the owner's CPU per read it serves directly / per read forwarded to it, microseconds */
  ownerDirectCpuUs: number | null;
  ownerForwardedCpuUs: number | null;
  /** the reference: a bare Node reverse proxy's CPU per read it forwards to the same owner, and that read's p50 */
  bareProxyCpuUs: number | null;
  bareProxyP50: number | null;
  errors: number;
}

async function drive(
  members: ServerChild[],
  tenants: Array<{ org: string; token: string }>,
  label: string,
  owners: Map<string, string> | null,
): Promise<Phase> {
  const per = Math.max(1, Math.floor(CONNECTIONS / members.length));
  const made: Array<{ token: string; id: string }> = [];
  let n = 0;
  const cpu = () => members.reduce((a, m) => a + processCpuMs(m.child.pid), 0);
  /** One autocannon run per member at once, every request built by `setup`. */
  const loadAll = (method: string, setup: (req: { path: string }) => { path: string }) =>
    Promise.all(
      members.map((m) =>
        autocannon({ url: m.url, connections: per, pipelining: 1, duration: SECONDS, requests: [{ method, setupRequest: setup }] }),
      ),
    );
  const cpu0 = cpu();
  const w = await loadAll('POST', (req) => {
    const i = n++;
    const t = tenants[i % tenants.length]!;
    const id = `task-${label}-${i}`;
    made.push({ token: t.token, id });
    return {
      ...req,
      method: 'POST',
      path: '/v1/nodes',
      headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ nodes: [{ id, type: 'task', summary: `bench ${i}` }] }),
    };
  });
  const cpu1 = cpu();
  const ids = made.slice(0, Math.max(1, made.length - CONNECTIONS * 2)); // the last ones may not have been acknowledged
  let r = 0;
  const rd = await loadAll('GET', (req) => {
    const x = ids[r++ % ids.length]!;
    return { ...req, method: 'GET', path: `/v1/nodes/${x.id}`, headers: { authorization: `Bearer ${x.token}` } };
  });
  const cpu2 = cpu();
  // latency of one tenant's reads, from its owner and from a member that forwards
  let forwardedP50: number | null = null;
  let ownerP50: number | null = null;
  let forwardCpuUs: number | null = null;
  let ownerDirectCpuUs: number | null = null;
  let ownerForwardedCpuUs: number | null = null;
  let bareProxyCpuUs: number | null = null;
  let bareProxyP50: number | null = null;
  if (owners && members.length > 1) {
    const t = tenants[0]!;
    const ownerUrl = owners.get(t.org)!;
    const owner = members.find((m) => m.url === ownerUrl)!;
    const forwarder = members.find((m) => m.url !== ownerUrl)!;
    const one = ids.find((x) => x.token === t.token)!;
    /**
     * Each member's CPU a second while no request comes (what the write phases left behind:
     * pack write-outs, history indexing, lease renewals), measured over `ms` right before a
     * probe and subtracted from it, so the probe counts the reads' CPU, not the background's.
     */
    const idleCpuMsPerS = async (ms: number): Promise<number[]> => {
      const before = members.map((m) => processCpuMs(m.child.pid));
      await new Promise((resolve) => setTimeout(resolve, ms));
      return members.map((m, i) => ((processCpuMs(m.child.pid) - before[i]!) * 1000) / ms);
    };
    /**
     * One tenant's reads sent to `url`; the CPU each member spent meanwhile above its idle rate,
     * per request (and `proxy`'s, the reference forwarder, when given).
     */
    const probe = async (url: string, proxy?: ServerChild) => {
      await waitQuiet('cluster probe', 30_000);
      const idle = await idleCpuMsPerS(2000);
      const started = performance.now();
      const before = members.map((m) => processCpuMs(m.child.pid));
      const proxyBefore = proxy ? processCpuMs(proxy.child.pid) : 0;
      const res = await autocannon({
        url,
        connections: 4,
        pipelining: 1,
        duration: Math.max(2, Math.floor(SECONDS / 2)),
        requests: [
          {
            method: 'GET',
            setupRequest: (req) => ({
              ...req,
              method: 'GET',
              path: `/v1/nodes/${one.id}`,
              headers: { authorization: `Bearer ${t.token}` },
            }),
          },
        ],
      });
      const count = Math.max(1, res.requests.total);
      const seconds = (performance.now() - started) / 1000;
      const cpuUs = (m: ServerChild) => {
        const i = members.indexOf(m);
        return (Math.max(0, processCpuMs(m.child.pid) - before[i]! - idle[i]! * seconds) * 1000) / count;
      };
      const proxyUs = proxy ? ((processCpuMs(proxy.child.pid) - proxyBefore) * 1000) / count : null;
      return { p50: res.latency.p50, owner: cpuUs(owner), forwarder: cpuUs(forwarder), proxy: proxyUs };
    };
    const direct = await probe(ownerUrl);
    const forwarded = await probe(forwarder.url);
    const bare = await startBareProxy(ownerUrl);
    try {
      const viaBare = await probe(bare.url, bare);
      bareProxyCpuUs = viaBare.proxy;
      bareProxyP50 = viaBare.p50;
    } finally {
      await bare.stop();
    }
    ownerP50 = direct.p50;
    forwardedP50 = forwarded.p50;
    ownerDirectCpuUs = direct.owner;
    ownerForwardedCpuUs = forwarded.owner;
    // the forwarding member serves none of this tenant's reads itself: its CPU is the forwarding's
    forwardCpuUs = forwarded.forwarder;
  }
  const sum = (xs: AutocannonResult[]) => xs.reduce((a, x) => a + x.requests.average, 0);
  const errors = [...w, ...rd].reduce((a, x) => a + x.errors + x.timeouts + x.non2xx, 0);
  if (errors > 0) {
    const codes: Record<string, number> = {};
    for (const x of [...w, ...rd])
      for (const [code, v] of Object.entries(x.statusCodeStats ?? {}))
        if (!code.startsWith('2')) codes[code] = (codes[code] ?? 0) + v.count;
    console.log(
      `  ${label}: not 2xx by status ${JSON.stringify(codes)}, connection errors ${[...w, ...rd].reduce((a, x) => a + x.errors, 0)}, timeouts ${[...w, ...rd].reduce((a, x) => a + x.timeouts, 0)}`,
    );
  }
  const total = (xs: AutocannonResult[]) =>
    Math.max(
      1,
      xs.reduce((a, x) => a + x.requests.total, 0),
    );
  return {
    writes: sum(w),
    reads: sum(rd),
    writeCpuUs: ((cpu1 - cpu0) * 1000) / total(w),
    readCpuUs: ((cpu2 - cpu1) * 1000) / total(rd),
    readP50: rd[0]!.latency.p50,
    forwardedP50,
    ownerP50,
    forwardCpuUs,
    ownerDirectCpuUs,
    ownerForwardedCpuUs,
    bareProxyCpuUs,
    bareProxyP50,
    errors,
  };
}

/** The rounds of one contender as one phase: mean rates and CPU a request, the worst p50, every error. */
function combine(rounds: Phase[]): Phase & { rounds: Array<{ writes: number; reads: number }> } {
  const mean = (f: (p: Phase) => number) => rounds.reduce((a, p) => a + f(p), 0) / rounds.length;
  return {
    ...rounds[0]!,
    writes: mean((p) => p.writes),
    reads: mean((p) => p.reads),
    writeCpuUs: mean((p) => p.writeCpuUs),
    readCpuUs: mean((p) => p.readCpuUs),
    readP50: Math.max(...rounds.map((p) => p.readP50)),
    errors: rounds.reduce((a, p) => a + p.errors, 0),
    rounds: rounds.map((p) => ({ writes: p.writes, reads: p.reads })),
  };
}

function status(env: Record<string, string>): {
  members: Array<{ id: string; url: string; live: boolean }>;
  tenants: Array<{ org: string; url: string | null; expired: boolean; preferred: string | null }>;
} {
  return JSON.parse(cli(['cluster', 'status'], env));
}

async function spread(env: Record<string, string>, members: ServerChild[], orgs: string[]): Promise<Map<string, string>> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const s = status(env);
    const owners = new Map(s.tenants.filter((t) => !t.expired && t.url).map((t) => [t.org, t.url!]));
    const urlOf = new Map(s.members.map((m) => [m.id, m.url]));
    const placed = s.tenants.every((t) => owners.get(t.org) === urlOf.get(t.preferred ?? ''));
    if (orgs.every((o) => owners.has(o)) && s.members.filter((m) => m.live).length === members.length && placed) return owners;
    if (Date.now() > deadline) throw new Error(`tenants never spread over the members: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

export async function main(): Promise<void> {
  console.log(`cluster load: ${TENANTS} tenants, ${CONNECTIONS} connections, ${SECONDS} s a run; ${machineNote()}`);
  const pg = await startPostgres({ durable: true });
  const dirs: string[] = [];
  const children: ServerChild[] = [];
  try {
    // embedded reference and a one-member cluster, both up, driven in alternating rounds
    const embeddedDir = scratchDir('cluster-embedded');
    dirs.push(embeddedDir);
    const embeddedEnv = { SVC_DATA_DIR: embeddedDir, SVC_BOOTSTRAP_TOKEN: BOOTSTRAP };
    const single = await startServerProcess(embeddedDir, embeddedEnv);
    children.push(single);
    const embeddedTenants = addTenants(embeddedEnv);
    await new Promise((r) => setTimeout(r, 1500)); // the CLI's tenants are picked up by the server's scan

    const clusterDir = scratchDir('cluster-shared');
    dirs.push(clusterDir);
    const clusterEnv = {
      SVC_DATA_DIR: clusterDir,
      SVC_BOOTSTRAP_TOKEN: BOOTSTRAP,
      SVC_DATABASE_URL: await freshSchemaUrl(pg.url),
      SVC_CLUSTER_LEASE_MS: String(LEASE_MS),
    };
    const first = await startServerProcess(clusterDir, clusterEnv);
    children.push(first);
    const clusterTenants = addTenants(clusterEnv);
    await spread(
      clusterEnv,
      [first],
      clusterTenants.map((t) => t.org),
    );
    const embeddedRounds: Phase[] = [];
    const oneRounds: Phase[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      // the order alternates, and the machine stays quiet for 10 s before each: the server driven
      // before has written its packs out and run its idle collections (kernel/idle-gc.ts, a few
      // seconds after its load ends), which otherwise took CPU from the next one's drive
      for (const which of r % 2 === 0 ? ['e', 'c1'] : ['c1', 'e']) {
        await waitQuiet(`cluster round ${r + 1}`, 60_000, 0.25, 40);
        if (which === 'e') embeddedRounds.push(await drive([single], embeddedTenants, `e${r}`, null));
        else oneRounds.push(await drive([first], clusterTenants, `c1r${r}`, null));
      }
    }
    const embedded = combine(embeddedRounds);
    const one = combine(oneRounds);
    await single.stop();
    const more = [await startServerProcess(clusterDir, clusterEnv), await startServerProcess(clusterDir, clusterEnv)];
    children.push(...more);
    const members = [first, ...more];
    const owners = await spread(
      clusterEnv,
      members,
      clusterTenants.map((t) => t.org),
    );
    const three = await drive(members, clusterTenants, 'c3', owners);

    // failover: kill -9 the owner of one tenant, then write to it through another member until one is acknowledged
    const victimUrl = owners.get(clusterTenants[0]!.org)!;
    const victim = members.find((m) => m.url === victimUrl)!;
    const survivor = members.find((m) => m !== victim)!;
    const killedAt = performance.now();
    await victim.stop(true);
    let failoverMs = NaN;
    for (let i = 0; performance.now() - killedAt < 60_000; i++) {
      const res = await fetch(`${survivor.url}/v1/nodes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${clusterTenants[0]!.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ nodes: [{ id: `task-failover-${i}`, type: 'task', summary: 'after the kill' }] }),
      }).catch(() => null);
      if (res?.status === 200) {
        failoverMs = performance.now() - killedAt;
        break;
      }
    }

    const row = (name: string, p: Phase) =>
      console.log(
        `  ${name.padEnd(10)} writes ${fmtRate(p.writes).padStart(7)}/s (${Math.round(p.writeCpuUs)} us CPU each)   reads ${fmtRate(p.reads).padStart(7)}/s (${Math.round(p.readCpuUs)} us CPU each)   read p50 ${p.readP50} ms   errors ${p.errors}`,
      );
    row('embedded', embedded);
    row('cluster-1', one);
    row('cluster-3', three);
    console.log(
      `  read p50 of one tenant: from its owner ${three.ownerP50} ms, forwarded by another member ${three.forwardedP50} ms, through a bare Node proxy ${three.bareProxyP50} ms`,
    );
    const us = (x: number | null) => (x === null ? 'n/a' : `${Math.round(x)} µs`);
    console.log(
      `  forwarding: the forwarding member's CPU per forwarded read ${us(three.forwardCpuUs)} (target <= ${FORWARD_CPU_TARGET_US} µs: ${verdict(three.forwardCpuUs !== null && three.forwardCpuUs <= FORWARD_CPU_TARGET_US)}); the owner's per read served directly ${us(three.ownerDirectCpuUs)}, per read forwarded to it ${us(three.ownerForwardedCpuUs)}`,
    );
    console.log(
      `  reference: a bare Node reverse proxy (node:http, keep-alive agent, piped, no routing) in front of the same owner: ${us(three.bareProxyCpuUs)} CPU a forwarded read; ours / bare ${three.forwardCpuUs !== null && three.bareProxyCpuUs ? fmtRatio(three.forwardCpuUs / three.bareProxyCpuUs) : 'n/a'}`,
    );
    console.log(
      `  failover: kill -9 of a tenant's owner to its first acknowledged write through another member: ${Math.round(failoverMs)} ms (lease ${LEASE_MS} ms)`,
    );
    console.log(
      `  server CPU per request, 3 processes / 1: writes ${fmtRatio(three.writeCpuUs / one.writeCpuUs)}, reads ${fmtRatio(three.readCpuUs / one.readCpuUs)} (forwarding two thirds of the requests)`,
    );
    const oneWrites = one.writes / embedded.writes;
    const oneReads = one.reads / embedded.reads;
    console.log(
      `  cluster-1 / embedded by round: writes ${one.rounds.map((x, i) => fmtRatio(x.writes / embedded.rounds[i]!.writes)).join(', ')}; reads ${one.rounds.map((x, i) => fmtRatio(x.reads / embedded.rounds[i]!.reads)).join(', ')}`,
    );
    console.log(
      `cluster: 3 processes / 1: writes ${fmtRatio(three.writes / one.writes)}, reads ${fmtRatio(three.reads / one.reads)}; cluster-1 / embedded: writes ${fmtRatio(oneWrites)}, reads ${fmtRatio(oneReads)} (target >= ${fmtRatio(ONE_MEMBER_TARGET)} each: ${verdict(oneWrites >= ONE_MEMBER_TARGET && oneReads >= ONE_MEMBER_TARGET)}); forwarding ${us(three.forwardCpuUs)} CPU a forwarded read (target <= ${FORWARD_CPU_TARGET_US} µs)`,
    );
    recordResult('cluster', {
      embedded,
      one,
      three,
      failoverMs,
      leaseMs: LEASE_MS,
      tenants: TENANTS,
      connections: CONNECTIONS,
      seconds: SECONDS,
      rounds: ROUNDS,
    });
  } finally {
    for (const c of children) await c.stop().catch(() => undefined);
    await pg.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--bare-proxy') {
  bareProxy(process.argv[3]!).catch((err: unknown) => {
    process.stderr.write(`${String(err)}\n`);
    process.exit(1);
  });
} else {
  runIfMain(import.meta.url, main);
}
