/**
 * What the event log and its ways out (issue 24) cost the writes, and how soon an event gets
 * out: the real server process (`workgraph serve`, fsync on, SVC_WEBHOOK_ALLOW_PRIVATE=1) is
 * written to over HTTP (POST /v1/nodes, one node update per request, a few concurrent
 * keep-alive clients, as scripts/bench/writes.ts does), in rounds that alternate two blocks:
 *
 *   without   no webhook subscription and no open stream;
 *   with      10 webhook subscriptions (created by the admin through POST /v1/webhooks, each
 *             pointing at its own local receiver that answers 204 at once) and 200 open SSE
 *             streams on GET /v1/events: 10 `eventsource` clients that parse every event (the
 *             latency figures) and 190 light readers (raw HTTP requests that take every byte
 *             but look only for the last `id:` line), so the ratio measures what 200 open
 *             streams cost the server, not what 200 parsers on the same 2 cores cost.
 *
 * Before each "with" block the subscriptions are created and the streams opened, after it the
 * block's events are awaited at every stream and receiver, then the subscriptions are deleted
 * and the streams closed (none of that is timed). The receivers and the stream clients run in
 * two child processes (scripts/bench/_events-listeners.ts, one instance each), so the writers'
 * process does the same work in both blocks and a receiver's answer does not wait behind 200
 * streams' reads. On a machine with 2 cores or more the server and the writers are pinned to
 * core 0 and the receivers and stream readers to core 1 (taskset; BENCH_EVENTS_PIN=0 turns it
 * off): the listeners' CPU is not taken from the server, as with listeners on other machines. The write-rate ratio is
 * total "with" rate / total "without" rate.
 *
 * Latency: each write's revision (from its answer) ties it to the `node.updated` event carrying
 * that revision. The writer stamps when it sent the request and when its answer arrived (the
 * acknowledgement: the commit is durable then); each stream and receiver stamps when the event
 * arrived. All stamps are wall-clock ms on this machine (one clock, both processes). The
 * headline is receipt minus acknowledgement (an event can arrive before the writer has read its
 * answer: a negative value, kept as measured); receipt minus send is shown too, an upper bound
 * that includes the write itself. The commit's own time is not observable from outside with
 * better precision than the acknowledgement.
 *
 * Env: BENCH_EVENTS_QUICK=1 (or the argument `quick`) for a smoke run with small sizes;
 * BENCH_EVENTS_N (writes per block, default 100), BENCH_EVENTS_ROUNDS (default 3),
 * BENCH_EVENTS_CLIENTS (concurrent writers, default 4), BENCH_EVENTS_STREAMS (default 200),
 * BENCH_EVENTS_TIMED (of those, full `eventsource` clients, default 10, at least 1),
 * BENCH_EVENTS_HOOKS (default 10), BENCH_EVENTS_NODES (fixture size, default 2,000).
 */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import type { ChildMessage, ParentMessage, Receipts } from './_events-listeners.js';
import {
  benchId,
  copyFixture,
  fixture,
  fmtRate,
  fmtRatio,
  machineNote,
  NODE_ARGS,
  processCpuMs,
  recordResult,
  runIfMain,
  startServerProcess,
  verdict,
  waitQuiet,
  type ServerChild,
} from './lib.js';

const QUICK = process.env.BENCH_EVENTS_QUICK === '1' || process.argv.includes('quick');
const num = (name: string, full: number, quick: number): number => Number(process.env[name] ?? (QUICK ? quick : full));
const N = num('BENCH_EVENTS_N', 100, 20);
const ROUNDS = Math.max(1, num('BENCH_EVENTS_ROUNDS', 3, 1));
const CLIENTS = Math.max(1, num('BENCH_EVENTS_CLIENTS', 4, 2));
const STREAMS = num('BENCH_EVENTS_STREAMS', 200, 20);
/** streams that parse every event and time it; the rest are light readers */
const TIMED = Math.min(STREAMS, Math.max(1, num('BENCH_EVENTS_TIMED', 10, 5)));
const HOOKS = num('BENCH_EVENTS_HOOKS', 10, 2);
const NODES = num('BENCH_EVENTS_NODES', 2000, 200);
const WARMUP = 20;
/** BENCH_EVENTS_PIN=0 lets every process run on every core (default: server on core 0, clients on core 1) */
const PIN = process.env.BENCH_EVENTS_PIN !== '0' && availableParallelism() >= 2;
/** how long a block's events may take to reach everyone before the run counts them missing */
const AWAIT_MS = 60_000;

const TARGET_RATIO = 0.9;
const TARGET_STREAM_P99 = 100;
const TARGET_HOOK_P99 = 250;

/** Wall-clock ms, sub-ms resolution: the clock the listeners' process stamps receipts with. */
function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

interface Stamp {
  sent: number;
  acked: number;
}

/** Node updates over HTTP, each to its own node, stamped with send and answer times. */
class Writer {
  private state = new Map<string, { markdown: string; revision: string }>();
  private seq = 0;
  /** revision -> its write's stamps */
  readonly stamps = new Map<string, Stamp>();

  constructor(
    private readonly url: string,
    private readonly token: string,
  ) {}

  get auth(): Record<string, string> {
    return { authorization: `Bearer ${this.token}` };
  }

  async load(ids: string[]): Promise<void> {
    for (const id of ids) {
      const r = await fetch(`${this.url}/v1/nodes/${id}`, { headers: this.auth });
      if (r.status !== 200) throw new Error(`GET /v1/nodes/${id}: ${r.status}`);
      const j = (await r.json()) as { markdown: string; revision: string };
      this.state.set(id, { markdown: j.markdown, revision: j.revision });
    }
  }

  private async post(id: string): Promise<string> {
    const s = this.state.get(id);
    if (!s) throw new Error(`no state for ${id}`);
    const markdown = s.markdown.replace(/^summary: .*$/m, `summary: Importer drops rows on DST boundaries (events ${this.seq++})`);
    const sent = wallMs();
    const res = await fetch(`${this.url}/v1/nodes`, {
      method: 'POST',
      headers: { ...this.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ nodes: [{ node: markdown, if_exists: 'update', revision: s.revision }] }),
    });
    const body = (await res.json()) as { results: Array<{ status: string; revision: string }> };
    const acked = wallMs();
    const result = body.results?.[0];
    if (res.status !== 200 || result?.status !== 'updated') throw new Error(`POST /v1/nodes: ${res.status} ${JSON.stringify(body)}`);
    s.revision = result.revision;
    s.markdown = markdown;
    this.stamps.set(result.revision, { sent, acked });
    return result.revision;
  }

  /** `ids` split round-robin over `clients` concurrent clients; resolves with the revisions written. */
  async run(ids: string[], clients: number): Promise<{ ms: number; revisions: string[] }> {
    const lanes: string[][] = Array.from({ length: clients }, () => []);
    ids.forEach((id, k) => lanes[k % clients]?.push(id));
    const revisions: string[] = [];
    const t0 = wallMs();
    await Promise.all(
      lanes.map(async (lane) => {
        for (const id of lane) revisions.push(await this.post(id));
      }),
    );
    return { ms: wallMs() - t0, revisions };
  }
}

/** The listeners' child process, with a request/answer helper over IPC. */
class Listeners {
  private waiting: ((m: ChildMessage) => void) | null = null;

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (m: ChildMessage) => {
      const w = this.waiting;
      this.waiting = null;
      w?.(m);
    });
  }

  static start(): Listeners {
    const file = join(dirname(fileURLToPath(import.meta.url)), '_events-listeners.ts');
    return new Listeners(fork(file, [], { execArgv: NODE_ARGS, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  }

  ask<K extends Extract<ChildMessage, { ok: string }>['ok']>(m: ParentMessage, expect: K): Promise<Extract<ChildMessage, { ok: K }>> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null): void => reject(new Error(`listeners exited (${code})`));
      this.child.once('exit', onExit);
      this.waiting = (answer) => {
        this.child.off('exit', onExit);
        if ('error' in answer) reject(new Error(`listeners: ${answer.error}`));
        else if (answer.ok !== expect) reject(new Error(`listeners answered ${answer.ok}, expected ${expect}`));
        else resolve(answer as Extract<ChildMessage, { ok: K }>);
      };
      this.child.send(m);
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      if (this.child.exitCode !== null) return resolve();
      this.child.once('exit', () => resolve());
      this.child.send({ cmd: 'stop' } satisfies ParentMessage);
    });
  }
}

/** Pins every thread of `pid` to the cores in `cpus` (taskset from util-linux); a failure only warns. */
function pin(pid: number | undefined, cpus: string): void {
  if (pid === undefined) return;
  const r = spawnSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { encoding: 'utf8' });
  if (r.status !== 0) console.log(`  (could not pin ${pid} to core ${cpus}: ${(r.stderr || r.error?.message || '').trim()})`);
}

function pct(xs: number[], p: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
}

const ms = (x: number): string => (Number.isFinite(x) ? `${x.toFixed(1)} ms` : String(x));

async function api(server: ServerChild, token: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? (JSON.parse(text) as unknown) : null;
}

export async function main(): Promise<void> {
  console.log(machineNote());
  if (PIN)
    console.log('  server and writers pinned to core 0, webhook receivers and stream clients to core 1 (BENCH_EVENTS_PIN=0: unpinned)');
  console.log(
    `  ${QUICK ? 'QUICK smoke run; ' : ''}${NODES} existing nodes, fsync on; ${ROUNDS} rounds of ${N} POST /v1/nodes updates by ${CLIENTS} clients ` +
      `without, then with ${HOOKS} webhook subscriptions and ${STREAMS} open SSE streams ` +
      `(${TIMED} timed eventsource clients, ${STREAMS - TIMED} light readers; order alternating per round)`,
  );
  const base = await fixture(NODES);
  const f = copyFixture(base, 'events');
  const total = WARMUP + 2 * ROUNDS * N;
  if (total > NODES) throw new Error(`${total} writes need as many nodes; the fixture has ${NODES} (raise BENCH_EVENTS_NODES)`);
  const server = await startServerProcess(f.dataDir, {
    SVC_FSYNC: '1',
    SVC_WEBHOOK_ALLOW_PRIVATE: '1',
    // one admin token holds every stream here; the default (20) guards a real tenant's fleet
    SVC_EVENTS_STREAMS_PER_TOKEN: String(STREAMS + 10),
  });
  // webhook receivers and stream clients in two processes: a receiver is its own service, and
  // one event loop reading 200 streams would answer the webhook POSTs late (the delivery loops
  // of the server would then wait on the bench, not on the server)
  const receivers = Listeners.start();
  const listeners = Listeners.start();
  if (PIN) {
    // the server and the writers (the same work in both blocks) get core 0, the webhook receivers
    // and stream readers core 1: what a server sees whose listeners run on other machines, on a
    // 2-core machine (the writers beside the listeners were starved by them, not by the server)
    for (const pid of [server.child.pid, process.pid]) pin(pid, '0');
    for (const pid of [receivers.pid, listeners.pid]) pin(pid, '1');
  }
  const writer = new Writer(server.url, f.token);
  const ids = Array.from({ length: total }, (_, k) => benchId(k));
  let next = 0;
  const take = (n: number): string[] => ids.slice(next, (next += n));
  // CPU (from /proc) of the server and of the listeners' process during each block: on a
  // shared 2-core machine the listeners' CPU is taken from the server, which a wall rate counts
  const rate = { without: { writes: 0, ms: 0, serverCpu: 0, listenersCpu: 0 }, with: { writes: 0, ms: 0, serverCpu: 0, listenersCpu: 0 } };
  const timed = async (which: 'without' | 'with', ids: string[]): Promise<{ ms: number; revisions: string[] }> => {
    const s0 = processCpuMs(server.child.pid);
    const l0 = processCpuMs(listeners.pid) + processCpuMs(receivers.pid);
    const r = await writer.run(ids, CLIENTS);
    rate[which].writes += ids.length;
    rate[which].ms += r.ms;
    rate[which].serverCpu += processCpuMs(server.child.pid) - s0;
    rate[which].listenersCpu += processCpuMs(listeners.pid) + processCpuMs(receivers.pid) - l0;
    return r;
  };
  const perRound: Array<{ without: number; with: number }> = [];
  const stream: { ack: number[]; sent: number[] } = { ack: [], sent: [] };
  const hook: { ack: number[]; sent: number[] } = { ack: [], sent: [] };
  let missing = 0;
  let cutStreams = 0;
  /** bytes the light readers took (a check that they really read every event) */
  let lightBytes = 0;
  try {
    await writer.load(ids);
    await writer.run(take(WARMUP), CLIENTS); // JIT, the sandbox child, ajv
    await waitQuiet('events');

    const blockWithout = async (): Promise<number> => {
      const r = await timed('without', take(N));
      return (N * 1000) / r.ms;
    };
    const blockWith = async (): Promise<number> => {
      const { urls } = await receivers.ask({ cmd: 'hooks', n: HOOKS }, 'hooks');
      const hookIds: string[] = [];
      for (const url of urls) {
        const created = (await api(server, f.token, 'POST', '/v1/webhooks', { url, description: 'events bench receiver' })) as {
          webhook: { id: string };
        };
        hookIds.push(created.webhook.id);
      }
      await listeners.ask({ cmd: 'streams', url: server.url, token: f.token, n: STREAMS, full: TIMED }, 'streams');
      const r = await timed('with', take(N));
      const [got, hooksGot] = await Promise.all([
        listeners.ask({ cmd: 'await', revisions: r.revisions, timeoutMs: AWAIT_MS }, 'await'),
        receivers.ask({ cmd: 'await', revisions: r.revisions, timeoutMs: AWAIT_MS }, 'await'),
      ]);
      // the stream times from one process, the receivers' from the other
      for (const [revision, h] of Object.entries(hooksGot.receipts)) {
        const entry = got.receipts[revision] ?? (got.receipts[revision] = { stream: [], hook: [] });
        entry.hook.push(...h.hook);
      }
      if (!hooksGot.complete) got.complete = false;
      collect(got.receipts);
      cutStreams += got.cut;
      missing += got.lightBehind;
      lightBytes += got.lightBytes;
      if (!got.complete) console.log(`  (some events did not reach every stream and receiver within ${AWAIT_MS / 1000} s)`);
      for (const id of hookIds) await api(server, f.token, 'DELETE', `/v1/webhooks/${id}`);
      await Promise.all([listeners.ask({ cmd: 'detach' }, 'detach'), receivers.ask({ cmd: 'detach' }, 'detach')]);
      return (N * 1000) / r.ms;
    };
    const collect = (receipts: Receipts): void => {
      for (const [revision, got] of Object.entries(receipts)) {
        const st = writer.stamps.get(revision);
        if (!st) throw new Error(`a receipt for revision ${revision} that no write made`);
        missing += Math.max(0, TIMED - got.stream.length) + Math.max(0, HOOKS - got.hook.length);
        for (const t of got.stream) {
          stream.ack.push(t - st.acked);
          stream.sent.push(t - st.sent);
        }
        for (const t of got.hook) {
          hook.ack.push(t - st.acked);
          hook.sent.push(t - st.sent);
        }
      }
    };

    for (let r = 0; r < ROUNDS; r++) {
      let without: number;
      let withRate: number;
      if (r % 2 === 0) {
        without = await blockWithout();
        withRate = await blockWith();
      } else {
        withRate = await blockWith();
        without = await blockWithout();
      }
      perRound.push({ without, with: withRate });
      console.log(
        `  round ${r + 1}: without ${fmtRate(without)}/s, with ${HOOKS} webhooks + ${STREAMS} streams ${fmtRate(withRate)}/s (${fmtRatio(withRate / without)})`,
      );
    }
  } finally {
    await Promise.all([listeners.stop(), receivers.stop()]);
    await server.stop();
  }

  const rWithout = (rate.without.writes * 1000) / rate.without.ms;
  const rWith = (rate.with.writes * 1000) / rate.with.ms;
  const ratio = rWith / rWithout;
  const s50 = pct(stream.ack, 50);
  const s99 = pct(stream.ack, 99);
  const h50 = pct(hook.ack, 50);
  const h99 = pct(hook.ack, 99);
  const cpuWithout = rate.without.serverCpu / rate.without.writes;
  const cpuWith = rate.with.serverCpu / rate.with.writes;
  const cpuRatio = cpuWithout / cpuWith;
  console.log(`  writes without listeners              ${fmtRate(rWithout)}/s, server CPU ${cpuWithout.toFixed(1)} ms a write`);
  console.log(
    `  writes with ${HOOKS} webhooks + ${STREAMS} streams  ${fmtRate(rWith)}/s, server CPU ${cpuWith.toFixed(1)} ms a write ` +
      `(listeners' process meanwhile: ${(rate.with.listenersCpu / rate.with.writes).toFixed(1)} ms CPU a write, taken from the same 2 cores)`,
  );
  console.log(
    `  ack -> stream client    p50 ${ms(s50)}  p99 ${ms(s99)}  max ${ms(pct(stream.ack, 100))}  (send -> stream p50 ${ms(pct(stream.sent, 50))}, p99 ${ms(pct(stream.sent, 99))}; ${stream.ack.length} receipts)`,
  );
  console.log(
    `  ack -> webhook receiver p50 ${ms(h50)}  p99 ${ms(h99)}  max ${ms(pct(hook.ack, 100))}  (send -> receiver p50 ${ms(pct(hook.sent, 50))}, p99 ${ms(pct(hook.sent, 99))}; ${hook.ack.length} receipts)`,
  );
  // What the target asks of this machine, from this run's own figures (cpus(), not
  // availableParallelism(): this process is pinned to one core): the cores the server and
  // the listeners would need together at the target rate (each at its per-write cost measured
  // with listeners; the writers' own CPU comes on top), and what is left of the server's one
  // JavaScript thread a write for the listeners once a write's own cost is paid
  const targetRate = TARGET_RATIO * rWithout;
  const listenersCpu = rate.with.listenersCpu / rate.with.writes;
  const coresNeeded = (targetRate * (cpuWith + listenersCpu)) / 1000;
  const threadMs = 1000 / targetRate;
  console.log(
    `  at ${TARGET_RATIO}x (${fmtRate(targetRate)}/s) the server and the listeners would need ${coresNeeded.toFixed(2)} of this machine's ${cpus().length} cores (the writers' CPU on top); ` +
      `the server's JavaScript thread would have ${threadMs.toFixed(1)} ms a write, ${(threadMs - cpuWithout).toFixed(1)} ms above a write without listeners ` +
      `for ${HOOKS} deliveries and ${STREAMS} streams (they take ${(cpuWith - cpuWithout).toFixed(1)} ms now)`,
  );
  if (STREAMS > TIMED)
    console.log(
      `  light readers took ${(lightBytes / 1e6).toFixed(1)} MB in all (${(lightBytes / (STREAMS - TIMED) / rate.with.writes).toFixed(0)} bytes a stream and write)`,
    );
  if (missing || cutStreams) console.log(`  ${missing} expected receipts missing, ${cutStreams} stream cuts or errors`);
  const complete = missing === 0 && cutStreams === 0;
  console.log(
    `events: writes with ${HOOKS} webhooks + ${STREAMS} streams ${fmtRate(rWith)}/s vs ${fmtRate(rWithout)}/s without (${fmtRatio(ratio)}, target >= ${TARGET_RATIO}x: ${verdict(ratio >= TARGET_RATIO)}); ` +
      `by server CPU a write ${fmtRatio(cpuRatio)}`,
  );
  console.log(
    `events: p99 ack -> stream ${ms(s99)} (p50 ${ms(s50)}; target <= ${TARGET_STREAM_P99} ms: ${STREAMS ? verdict(complete && s99 <= TARGET_STREAM_P99) : 'not measured'}), ` +
      `ack -> webhook ${ms(h99)} (p50 ${ms(h50)}; target <= ${TARGET_HOOK_P99} ms: ${HOOKS ? verdict(complete && h99 <= TARGET_HOOK_P99) : 'not measured'})` +
      (complete ? '' : '; NOT every event reached every client, see above'),
  );
  recordResult('events', {
    quick: QUICK,
    pinned: PIN,
    nodes: NODES,
    writes_per_block: N,
    rounds: ROUNDS,
    clients: CLIENTS,
    streams: STREAMS,
    timed_streams: TIMED,
    light_reader_bytes: lightBytes,
    webhooks: HOOKS,
    writes_without_per_s: rWithout,
    writes_with_per_s: rWith,
    per_round: perRound,
    ratio,
    server_cpu_ms_per_write_without: cpuWithout,
    server_cpu_ms_per_write_with: cpuWith,
    ratio_by_server_cpu: cpuRatio,
    listeners_cpu_ms_per_write_with: listenersCpu,
    cores_needed_at_target: coresNeeded,
    stream_ack_p50_ms: s50,
    stream_ack_p99_ms: s99,
    stream_sent_p99_ms: pct(stream.sent, 99),
    webhook_ack_p50_ms: h50,
    webhook_ack_p99_ms: h99,
    webhook_sent_p99_ms: pct(hook.sent, 99),
    receipts_missing: missing,
    stream_cuts: cutStreams,
    target_ratio_met: ratio >= TARGET_RATIO,
    target_stream_p99_met: complete && s99 <= TARGET_STREAM_P99,
    target_webhook_p99_met: complete && h99 <= TARGET_HOOK_P99,
  });
  rmSync(dirname(f.dataDir), { recursive: true, force: true });
}

runIfMain(import.meta.url, main);
