/**
 * What running schema hooks in the sandbox costs (issue 3 acceptance): the per-call cost of a
 * transition hook through the sandbox against the same function called directly, and node
 * write throughput with a graph-resident hook active against without.
 *
 *   node --no-node-snapshot --import tsx scripts/bench/sandbox.ts     (or `npm run bench -- sandbox`)
 *
 * Part 1, per call. The docs/design.md §4 example transition hook (review gate), with inputs shaped
 * like the kernel's (`{node, from, to, actor}`, the node view of a ~600-byte task, ~650 B of
 * JSON), each input different:
 *   direct             the source compiled in this process with `new Function` (the reference;
 *                      only this benchmark does that) and called as a plain JS function;
 *   direct + JSON copy the same, with the input and result copied through JSON (the least any
 *                      out-of-heap call must do);
 *   sandbox.run        `createSandbox().run()` awaited one at a time, and with 64 calls in flight;
 *   HookRunner         `checkTransition` with only this hook registered: new inputs each call
 *                      (cache misses, every call crosses into the sandbox) and one input
 *                      repeated (cache hits, no sandbox call).
 * Every sandbox answer is checked against the direct answer, and the HookRunner's sandbox
 * crossings are counted (misses must cross once per call, hits never).
 *
 * Part 2, writes. The 10,000-node fixture (lib.ts), fsync on as in production, the kernel
 * with every plugin (`startKernel`), and `set_status` (the core operation the REST route and
 * MCP tool call) moving tasks open <-> review over a pool of nodes, one commit per write.
 * Two settings: no graph schema node (only the seed-pack hooks run), and the review gate active
 * as `schema-task-review-gate` (proposed by the admin, activated by a second person, per the
 * self-approval ban). Rounds alternate A B B A A B B A (the gate is retired and re-activated
 * between rounds, outside the timing) so drift on a loaded machine hits both alike. Every
 * sandbox call is counted per hook: each write must cross the graph hook once (a distinct
 * input, no cache hit) in the gated rounds and never in the others. Sandbox restarts, writes
 * denied because a hook failed to run (retried, and counted) and the host's event-loop delay
 * are printed: on a loaded machine a host stall past a call's timeout + 60 ms grace makes the
 * watchdog kill the child and fail a benign hook whose answer is already waiting.
 *
 * Env: BENCH_SANDBOX_ROUNDS (rounds per setting, default 6), BENCH_SANDBOX_WRITES (timed
 * writes per round, default 200), BENCH_SANDBOX_CALLS (sequential sandbox calls per round,
 * default 2000), BENCH_SANDBOX_FSYNC=0 (writes without fsync, to see the CPU-bound case).
 */
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { createLogger } from '../../kernel/config.js';
import { SvcError } from '../../kernel/errors.js';
import { HookRunner, type TransitionInput } from '../../kernel/hooks.js';
import type { OpContext } from '../../kernel/plugin.js';
import type { HookRef, Registry } from '../../kernel/registry.js';
import { startKernel } from '../../kernel/server.js';
import type { Tenant } from '../../kernel/tenant.js';
import type { WriteActor } from '../../kernel/write-draft.js';
import { actorFor, personIdForEmail } from '../../kernel/tenants.js';
import { IdentityAuthority } from '../../kernel/identity-guard.js';
import { setStatus } from '../../plugins/core/operations.js';
import { createSandbox } from '../../sandbox/index.js';
import type { Sandbox, SandboxEvent } from '../../sandbox/types.js';
import { allPlugins } from '../plugins.js';
import {
  benchConfig,
  benchId,
  benchNode,
  copyFixture,
  fixture,
  fmtRate,
  fmtRatio,
  machineNote,
  median,
  recordResult,
  runIfMain,
} from './lib.js';

/** docs/design.md §4, verbatim. */
const REVIEW_GATE = `(input) => input.to !== 'done' || input.from === 'review'
  ? { allow: true }
  : { allow: false, reason: 'move to review first' }`;
const GATE_ID = 'schema-task-review-gate';
const TENANT = 'bench';

const ROUNDS = Number(process.env.BENCH_SANDBOX_ROUNDS ?? 6);
const WRITES_PER_ROUND = Number(process.env.BENCH_SANDBOX_WRITES ?? 200);
const SEQ_CALLS = Number(process.env.BENCH_SANDBOX_CALLS ?? 2000);
const PAR_CALLS = SEQ_CALLS * 4;
const IN_FLIGHT = 64;
const CALL_ROUNDS = 5;
const NODES = 10_000;
const POOL = 200;
/** fsync on as in production; BENCH_SANDBOX_FSYNC=0 shows the CPU-bound case, where the hook's share is larger. */
const FSYNC = process.env.BENCH_SANDBOX_FSYNC !== '0';

type Verdict = { allow: boolean; reason?: string };
type HookFn = (input: TransitionInput) => Verdict;

const MOVES: Array<[string, string]> = [
  ['open', 'review'],
  ['review', 'done'],
  ['open', 'done'], // denied by the gate
  ['review', 'open'],
];

/** A distinct transition input per `i`: the kernel's node view of bench task `i`. */
function transitionInput(i: number, allowedOnly = false): TransitionInput {
  const { frontmatter, body } = benchNode(i, i);
  const moves = allowedOnly ? MOVES.filter(([f, t]) => t !== 'done' || f === 'review') : MOVES;
  const [from, to] = moves[i % moves.length]!;
  return { node: { ...frontmatter, status: from, body }, from, to, actor: 'person-bench' };
}

function us(ms: number, calls: number): number {
  return (ms * 1000) / calls;
}

function fmtUs(x: number): string {
  if (x < 0.1) return `${x.toFixed(4)} µs`;
  if (x < 10) return `${x.toFixed(2)} µs`;
  return `${x.toFixed(1)} µs`;
}

/** Ratios span 1x to ~10,000x here: 0.97x, 18.3x, 11,628x. */
function fmtBigRatio(x: number): string {
  return x >= 100 ? `${Math.round(x).toLocaleString('en-US')}x` : fmtRatio(x);
}

function spread(xs: number[], fmt: (x: number) => string): string {
  return `[${xs.map(fmt).join(', ')}]`;
}

/** Sandbox supervision events (child restarts) seen during the run; a benign hook killed by the watchdog shows here. */
const sandboxEvents: SandboxEvent[] = [];
const onEvent = (e: SandboxEvent): void => {
  if (e.type === 'restart') sandboxEvents.push(e);
};

function restartsNote(from: number): string {
  const rs = sandboxEvents.slice(from).filter((e): e is Extract<SandboxEvent, { type: 'restart' }> => e.type === 'restart');
  if (rs.length === 0) return 'sandbox restarts: 0';
  return `sandbox restarts: ${rs.length} (${rs.map((e) => `${e.reason}${e.reason === 'watchdog' ? `, call killed after ${e.cpuMs} ms of CPU in ${e.wallMs} ms` : ''}`).join('; ')})`;
}

// ---------------------------------------------------------------------------------------
// part 1: per call

interface PerCall {
  directUs: number;
  directJsonUs: number;
  seqUs: number;
  parUs: number;
  missUs: number;
  hitUs: number;
}

function measureDirect(fn: HookFn, inputs: TransitionInput[], json: boolean): number[] {
  const perRound: number[] = [];
  let allowed = 0;
  const iterations = json ? 40 : 4000; // ~100-300 ms per round either way
  for (let r = 0; r < CALL_ROUNDS + 1; r++) {
    const t0 = performance.now();
    for (let k = 0; k < iterations; k++) {
      for (const input of inputs) {
        if (json) {
          const copy = JSON.parse(JSON.stringify(input)) as TransitionInput;
          const v = JSON.parse(JSON.stringify(fn(copy))) as Verdict;
          if (v.allow) allowed++;
        } else if (fn(input).allow) allowed++;
      }
    }
    const ms = performance.now() - t0;
    if (r > 0) perRound.push(us(ms, iterations * inputs.length)); // round 0 warms the JIT
  }
  if (allowed === 0) throw new Error('direct calls allowed nothing'); // also keeps the calls live
  return perRound;
}

async function perCall(): Promise<PerCall> {
  const fn = new Function(`return (${REVIEW_GATE});`)() as HookFn;
  const inputs = Array.from({ length: 1000 }, (_, i) => transitionInput(i));
  const expected = inputs.map((input) => JSON.stringify(fn(input)));
  const inputBytes = median(inputs.map((x) => JSON.stringify(x).length));
  console.log(
    `part 1, per call: docs/design.md §4 review-gate transition hook, ${inputs.length} distinct inputs of ~${inputBytes} B JSON, ${CALL_ROUNDS} rounds each (median shown, rounds in brackets)`,
  );

  const direct = measureDirect(fn, inputs, false);
  console.log(`  direct JS call (new Function, in host)       ${fmtUs(median(direct)).padStart(12)}  ${spread(direct, fmtUs)}`);
  const directJson = measureDirect(fn, inputs, true);
  console.log(`  direct + JSON copy of input and result       ${fmtUs(median(directJson)).padStart(12)}  ${spread(directJson, fmtUs)}`);

  const inner = createSandbox({ onEvent });
  let crossings = 0;
  const counted: Sandbox = { ...inner, run: (call) => (crossings++, inner.run(call)) };
  try {
    await inner.ready();
    const call = (input: unknown) => inner.run({ tenant: TENANT, owner: GATE_ID, hook: 'transition', source: REVIEW_GATE, input });
    const check = async (k: number): Promise<void> => {
      const out = await call(inputs[k % inputs.length]);
      if (!out.ok) throw new Error(`sandbox call failed: ${out.kind}: ${out.message}`);
      if (JSON.stringify(out.value) !== expected[k % inputs.length])
        throw new Error(`sandbox answered ${JSON.stringify(out.value)}, direct ${expected[k % inputs.length]}`);
    };
    for (let k = 0; k < 300; k++) await check(k); // warm-up: owner context, compile, JIT on both sides

    const seq: number[] = [];
    for (let r = 0; r < CALL_ROUNDS; r++) {
      const t0 = performance.now();
      for (let k = 0; k < SEQ_CALLS; k++) await check(k);
      seq.push(us(performance.now() - t0, SEQ_CALLS));
    }
    console.log(`  sandbox.run, one at a time                   ${fmtUs(median(seq)).padStart(12)}  ${spread(seq, fmtUs)}`);

    const par: number[] = [];
    for (let r = 0; r < CALL_ROUNDS; r++) {
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (next < PAR_CALLS) await check(next++);
        }),
      );
      par.push(us(performance.now() - t0, PAR_CALLS));
    }
    console.log(`  sandbox.run, ${IN_FLIGHT} in flight (wall / calls)     ${fmtUs(median(par)).padStart(12)}  ${spread(par, fmtUs)}`);

    // HookRunner with only the gate registered (a stub registry: the kernel's checkTransition
    // asks it for nothing but hooksFor). Allowed moves only, so no call throws.
    const ref: HookRef = { owner: GATE_ID, hook: 'transition', source: REVIEW_GATE };
    const registry = {
      hooksFor: (type: string, hook: string): HookRef[] => (type === 'task' && hook === 'transition' ? [ref] : []),
    } as unknown as Registry;
    const runner = new HookRunner(counted, TENANT, () => ({ timeoutMs: 50, memoryMb: 16 }));
    let fresh = 1_000_000;
    const missInputs = (n: number) => Array.from({ length: n }, () => transitionInput(fresh++, true));
    for (const input of missInputs(200)) await runner.checkTransition(registry, 'task', input);

    const miss: number[] = [];
    for (let r = 0; r < CALL_ROUNDS; r++) {
      const batch = missInputs(SEQ_CALLS);
      const before = crossings;
      const t0 = performance.now();
      for (const input of batch) await runner.checkTransition(registry, 'task', input);
      miss.push(us(performance.now() - t0, batch.length));
      if (crossings - before !== batch.length)
        throw new Error(`cache misses crossed ${crossings - before} times for ${batch.length} calls`);
    }
    console.log(
      `  HookRunner.checkTransition, cache miss       ${fmtUs(median(miss)).padStart(12)}  ${spread(miss, fmtUs)}  (1 sandbox call each, checked)`,
    );

    const same = transitionInput(7, true);
    await runner.checkTransition(registry, 'task', same);
    const hit: number[] = [];
    const hitCalls = SEQ_CALLS * 10;
    for (let r = 0; r < CALL_ROUNDS; r++) {
      const before = crossings;
      const t0 = performance.now();
      for (let k = 0; k < hitCalls; k++) await runner.checkTransition(registry, 'task', same);
      hit.push(us(performance.now() - t0, hitCalls));
      if (crossings !== before) throw new Error('cache hits crossed into the sandbox');
    }
    console.log(
      `  HookRunner.checkTransition, cache hit        ${fmtUs(median(hit)).padStart(12)}  ${spread(hit, fmtUs)}  (0 sandbox calls, checked)`,
    );

    console.log(`  ${restartsNote(0)}`);
    return {
      directUs: median(direct),
      directJsonUs: median(directJson),
      seqUs: median(seq),
      parUs: median(par),
      missUs: median(miss),
      hitUs: median(hit),
    };
  } finally {
    await inner.close();
  }
}

// ---------------------------------------------------------------------------------------
// part 2: write throughput

interface CallStat {
  n: number;
  ms: number;
}

/** A sandbox that counts and times its calls per (owner, hook). */
function instrumented(inner: Sandbox): { sandbox: Sandbox; stats: Map<string, CallStat>; reset(): void } {
  const stats = new Map<string, CallStat>();
  const sandbox: Sandbox = {
    ...inner,
    run(call) {
      const t0 = performance.now();
      return inner.run(call).then((out) => {
        const key = `${call.owner}/${call.hook}`;
        const s = stats.get(key) ?? { n: 0, ms: 0 };
        s.n++;
        s.ms += performance.now() - t0;
        stats.set(key, s);
        return out;
      });
    },
  };
  return { sandbox, stats, reset: () => stats.clear() };
}

async function move(tenant: Tenant, actor: WriteActor, id: string, status: string): Promise<void> {
  await tenant.write(actor, { op: 'set_status', via: 'rest' }, async (draft) => {
    const node = draft.get(id);
    if (!node) throw new Error(`${id} missing`);
    node.frontmatter.status = status;
    draft.put(node);
  });
}

interface Round {
  gated: boolean;
  rate: number;
  ms: number;
  stats: Map<string, CallStat>;
}

async function writeThroughput(): Promise<{
  without: number;
  withGate: number;
  rounds: Round[];
  gateUsPerWrite: number;
  gateCallsPerWrite: number;
}> {
  const base = await fixture(NODES);
  const f = copyFixture(base, 'sandbox');
  const inner = createSandbox({ onEvent });
  const probe = instrumented(inner);
  const kernel = await startKernel({
    config: benchConfig(f.dataDir, { fsync: FSYNC }),
    plugins: allPlugins,
    log: createLogger(undefined, true),
    sandbox: probe.sandbox,
  });
  try {
    const tenant = kernel.services.tenants.get(f.org)!;
    if (tenant.index.size < NODES) throw new Error(`tenant has ${tenant.index.size} nodes`);
    const adminRecord = tenant.tokens.all().find((r) => r.person === f.person);
    if (!adminRecord) throw new Error('no admin token record');
    const ctx: OpContext = { tenant, actor: actorFor(tenant, adminRecord), via: 'rest', services: kernel.services, headers: {} };
    const admin: WriteActor = { personId: f.person, name: 'Admin', email: 'admin@localhost', agent: null, session: null };

    // the second identity that activates the admin's proposal (self-approval ban)
    const reviewerEmail = 'reviewer@example.test';
    const reviewer: WriteActor = {
      personId: personIdForEmail(reviewerEmail),
      name: 'Reviewer',
      email: reviewerEmail,
      agent: null,
      session: null,
    };
    // a person is an identity fact: the bench writes it as the identity plugin would
    await tenant.write(admin, { op: 'bench_add_person', via: 'rest', identity: IdentityAuthority.issue('bench') }, async (draft) => {
      draft.put({
        frontmatter: {
          id: reviewer.personId,
          type: 'person',
          status: 'active',
          title: 'Reviewer',
          summary: 'Reviewer',
          name: 'Reviewer',
          email: reviewerEmail,
        },
        body: '',
      });
    });
    await tenant.write(admin, { op: 'put_node', via: 'rest' }, async (draft) => {
      draft.put({
        frontmatter: {
          id: GATE_ID,
          type: 'schema',
          status: 'proposed',
          summary: 'Tasks may only move to done from review',
          applies_to: 'task',
          hooks: { transition: REVIEW_GATE },
        },
        body: 'Why this rule exists.\n',
      });
    });
    const gateCount = () => tenant.registry.hooksFor('task', 'transition').filter((h) => h.owner === GATE_ID).length;
    let gated = false;
    const setGate = async (on: boolean): Promise<void> => {
      if (on === gated) return;
      if (on) await move(tenant, reviewer, GATE_ID, 'active');
      else {
        await move(tenant, admin, GATE_ID, 'retired');
        await move(tenant, admin, GATE_ID, 'proposed');
      }
      gated = on;
      if (gateCount() !== (on ? 1 : 0)) throw new Error(`registry has ${gateCount()} gate hooks, expected ${on ? 1 : 0}`);
    };

    const pool = Array.from({ length: POOL }, (_, j) => benchId((j * 7919 + 4001) % NODES));
    let cursor = 0;
    const hookFailures: string[] = [];
    const write = async (): Promise<void> => {
      const id = pool[cursor++ % POOL]!;
      const to = tenant.index.get(id)!.status === 'open' ? 'review' : 'open';
      for (let attempt = 1; ; attempt++) {
        try {
          const r = await setStatus(ctx, { id, status: to });
          if (r.status !== 'updated') throw new Error(`set_status ${id} -> ${to}: ${r.status}`);
          return;
        } catch (err) {
          // A hook the sandbox failed to run (not one that answered) denies the write: count
          // it, retry, and report it; the benchmark's hooks never legitimately fail.
          const sandboxFailure = err instanceof SvcError && err.code === 'transition_denied' && / failed \(/.test(err.message);
          if (!sandboxFailure || attempt >= 3) throw err;
          hookFailures.push(err.message);
        }
      }
    };

    // warm-up: every pool node through both statuses (fills the validate-hook cache for both
    // states alike, JIT, ajv), then a check that the gate really governs writes.
    for (let k = 0; k < POOL * 2; k++) await write();
    await setGate(true);
    const victim = benchId([...Array(NODES).keys()].reverse().find((i) => !pool.includes(benchId(i)))!);
    let denied = '';
    try {
      await setStatus(ctx, { id: victim, status: 'done' });
    } catch (err) {
      denied = err instanceof Error ? err.message : String(err);
    }
    if (denied !== 'move to review first') throw new Error(`the active gate did not deny open -> done (${denied || 'allowed'})`);
    await setGate(false);
    await setStatus(ctx, { id: victim, status: 'done' }); // allowed again without the gate

    const rounds: Round[] = [];
    const restartsBefore = sandboxEvents.length;
    const failuresBefore = hookFailures.length;
    const loop = monitorEventLoopDelay({ resolution: 5 });
    loop.enable();
    const order = [false, true, true, false];
    for (let r = 0; r < ROUNDS * 2; r++) {
      const on = order[r % 4]!;
      await setGate(on);
      for (let k = 0; k < 5; k++) await write(); // untimed: first writes after a registry rebuild (ajv compile)
      await tenant.saveSnapshot(); // untimed: keeps the every-2000-commits snapshot out of the rounds
      probe.reset();
      const t0 = performance.now();
      for (let k = 0; k < WRITES_PER_ROUND; k++) await write();
      const ms = performance.now() - t0;
      const round: Round = {
        gated: on,
        rate: (WRITES_PER_ROUND * 1000) / ms,
        ms,
        stats: new Map([...probe.stats].map(([k, v]) => [k, { ...v }])),
      };
      rounds.push(round);
      const gate = round.stats.get(`${GATE_ID}/transition`);
      const gateCalls = gate?.n ?? 0;
      if (gateCalls !== (on ? WRITES_PER_ROUND : 0))
        throw new Error(`round ${r + 1}: ${gateCalls} gate calls for ${WRITES_PER_ROUND} writes (gate ${on ? 'on' : 'off'})`);
      const calls = [...round.stats.entries()].map(([k, s]) => `${k} ${(s.n / WRITES_PER_ROUND).toFixed(2)}`).join(', ');
      console.log(
        `  round ${String(r + 1).padStart(2)} ${on ? 'gate active  ' : 'no graph hook'}  ${fmtRate(round.rate).padStart(6)} writes/s  sandbox calls per write: ${calls || 'none'}`,
      );
    }
    loop.disable();
    console.log(
      `  during the rounds: ${restartsNote(restartsBefore)}; writes denied because a hook failed to run (retried): ${hookFailures.length - failuresBefore}` +
        `${hookFailures.length > failuresBefore ? ` (${hookFailures[failuresBefore]})` : ''}; host event-loop delay p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms, max ${(loop.max / 1e6).toFixed(1)} ms`,
    );
    if (hookFailures.length > 0 && failuresBefore > 0)
      console.log(`  before the rounds (warm-up): ${failuresBefore} writes denied because a hook failed to run`);
    const total = (on: boolean) => {
      const rs = rounds.filter((x) => x.gated === on);
      return (rs.length * WRITES_PER_ROUND * 1000) / rs.reduce((a, x) => a + x.ms, 0);
    };
    const gatedRounds = rounds.filter((x) => x.gated);
    const gateStat = gatedRounds.map((x) => x.stats.get(`${GATE_ID}/transition`)!);
    const gateUsPerWrite = (gateStat.reduce((a, s) => a + s.ms, 0) * 1000) / (gatedRounds.length * WRITES_PER_ROUND);
    const gateCallsPerWrite = gateStat.reduce((a, s) => a + s.n, 0) / (gatedRounds.length * WRITES_PER_ROUND);
    return { without: total(false), withGate: total(true), rounds, gateUsPerWrite, gateCallsPerWrite };
  } finally {
    await kernel.close();
    await inner.close();
    rmSync(dirname(f.dataDir), { recursive: true, force: true });
  }
}

export async function main(): Promise<void> {
  console.log(machineNote());
  const pc = await perCall();
  console.log(
    `sandbox: per call direct ${fmtUs(pc.directUs)}, sandbox sequential ${fmtUs(pc.seqUs)} (${fmtBigRatio(pc.seqUs / pc.directUs)} direct, ${fmtBigRatio(pc.seqUs / pc.directJsonUs)} direct+JSON), ` +
      `${IN_FLIGHT} in flight ${fmtUs(pc.parUs)} (${fmtBigRatio(pc.parUs / pc.directUs)}, ${fmtBigRatio(pc.parUs / pc.directJsonUs)}), HookRunner miss ${fmtUs(pc.missUs)} / hit ${fmtUs(pc.hitUs)}`,
  );

  console.log(machineNote());
  console.log(
    `part 2, writes: ${NODES} existing nodes, fsync ${FSYNC ? 'on' : 'OFF'}, set_status open <-> review over ${POOL} tasks, all plugins; ${ROUNDS} rounds x ${WRITES_PER_ROUND} writes per setting, order A B B A ...`,
  );
  const w = await writeThroughput();
  const ratio = w.withGate / w.without;
  const fmtR = (on: boolean) =>
    w.rounds
      .filter((r) => r.gated === on)
      .map((r) => fmtRate(r.rate))
      .join(', ');
  // rounds run A B B A ...: each consecutive pair holds one round of each setting
  const pairRatios: number[] = [];
  for (let i = 0; i + 1 < w.rounds.length; i += 2) {
    const [a, b] = [w.rounds[i]!, w.rounds[i + 1]!];
    pairRatios.push(a.gated ? a.rate / b.rate : b.rate / a.rate);
  }
  const perWriteDiffUs = (1000 / w.withGate - 1000 / w.without) * 1000;
  const gatedWriteUs = 1e6 / w.withGate;
  console.log(`  without: ${fmtR(false)} writes/s per round; with gate: ${fmtR(true)} writes/s per round`);
  console.log(
    `  with/without per adjacent pair of rounds: ${pairRatios.map(fmtRatio).join(', ')} (median ${fmtRatio(median(pairRatios))})`,
  );
  console.log(
    `  gate hook: ${w.gateCallsPerWrite.toFixed(2)} sandbox calls per gated write (distinct inputs, no cache hit), ${fmtUs(w.gateUsPerWrite)} awaited per call, ` +
      `${((100 * w.gateUsPerWrite) / gatedWriteUs).toFixed(1)}% of a gated write's ${(gatedWriteUs / 1000).toFixed(2)} ms`,
  );
  console.log(
    `sandbox: writes${FSYNC ? '' : ' (fsync OFF)'} without graph hook ${fmtRate(w.without)}/s, with active graph transition hook ${fmtRate(w.withGate)}/s (${fmtRatio(ratio)}, median per pair ${fmtRatio(median(pairRatios))}; ` +
      `${perWriteDiffUs >= 0 ? '+' : ''}${Math.round(perWriteDiffUs)} µs per write by difference, ${Math.round(w.gateUsPerWrite)} µs measured in the hook call)`,
  );
  console.log(machineNote());
  recordResult(FSYNC ? 'sandbox' : 'sandbox-nofsync', {
    hook: REVIEW_GATE,
    per_call_us: {
      direct: pc.directUs,
      direct_json_copy: pc.directJsonUs,
      sandbox_sequential: pc.seqUs,
      sandbox_64_in_flight: pc.parUs,
      hook_runner_miss: pc.missUs,
      hook_runner_hit: pc.hitUs,
    },
    ratio_sandbox_sequential_vs_direct: pc.seqUs / pc.directUs,
    ratio_sandbox_64_in_flight_vs_direct: pc.parUs / pc.directUs,
    writes: {
      nodes: NODES,
      fsync: FSYNC,
      rounds_per_setting: ROUNDS,
      writes_per_round: WRITES_PER_ROUND,
      without_graph_hook_per_s: w.without,
      with_graph_hook_per_s: w.withGate,
      ratio,
      ratio_median_per_pair: median(pairRatios),
      gate_call_us_in_write: w.gateUsPerWrite,
      rounds: w.rounds.map((r) => ({ gated: r.gated, per_s: r.rate })),
    },
  });
}

runIfMain(import.meta.url, main);
