/**
 * The hook sandbox host (docs/design.md §1 "Hooks run only in the sandbox").
 *
 * Hook sources run in isolated-vm isolates inside a supervised child process (`worker.mjs`), never in this process:
 * isolated-vm can abort the whole process it lives in (a Map grown past the memory limit, FACTS.md), so only the child
 * may die. This module multiplexes calls to the child over IPC, keeps a watchdog over each call (CPU time, with a
 * wall-time backstop: the same rule the child applies, see sandbox/README.md "Limits"), restarts the child after a
 * crash or a kill, and answers every call with a HookOutcome: `run()` never rejects and never throws.
 *
 * Nothing outside `sandbox/` imports isolated-vm; this file does not either. The contract: sandbox/types.ts.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { EXIT_GRACE_MS, readCpuMs, usageOf, wallBackstopMs, type Measured } from './limits.js';
import type { HookCall, HookFailureKind, HookOutcome, Sandbox, SandboxEvent, SandboxLimits, SandboxOptions } from './types.js';

export { wallBackstopMs };

const DEFAULT_LIMITS: SandboxLimits = { timeoutMs: 50, memoryMb: 16 };
const MAX_TIMEOUT_MS = 60_000;
const MIN_MEMORY_MB = 8;
const MAX_MEMORY_MB = 2048;
/** A call caught in this many child deaths, none of which it was running, gives up. */
const MAX_ATTEMPTS = 3;
const BOOT_FAILURES_BEFORE_GIVING_UP = 3;
/** The watchdog re-reads the child's CPU time at most this often while a call runs long. */
const MIN_CPU_CHECK_MS = 5;
const STDERR_TAIL_CHARS = 2048;
const FAILURE_KINDS: ReadonlySet<string> = new Set<HookFailureKind>(['timeout', 'memory', 'threw', 'compile', 'crashed', 'malformed']);
// '../sandbox/': the same file from sandbox/index.ts and from the dist/ bundle
const WORKER_PATH = fileURLToPath(new URL('../sandbox/worker.mjs', import.meta.url));

interface WorkerRequest {
  i: number;
  t: string;
  o: string;
  h: string;
  s: string;
  in: string;
  /** CPU time limit, ms */
  to: number;
  /** wall-time backstop, ms */
  wb: number;
  mb: number;
  /** 1: answer the call's CPU time and the isolate's heap (HookCall.measure) */
  u?: 1;
}

type WorkerReply =
  | { ready: true }
  | ({ i: number; k: 'ok'; v: string; n?: number } & Measured)
  | ({ i: number; k: HookFailureKind; m: string; n?: number } & Measured);

interface Pending {
  request: WorkerRequest;
  attempts: number;
  resolve: (outcome: HookOutcome) => void;
  /** the watchdog found it past its budget once and is giving the IPC channel one poll to answer */
  confirming?: boolean;
}

interface Incident {
  count: number;
  last: number;
  kind: HookFailureKind;
}

interface ChildState {
  process: ChildProcess;
  ready: boolean;
  gone: boolean;
  disconnected: boolean;
  killedByWatchdog: boolean;
  exit: { code: number | null; signal: string | null } | null;
  stderr: string;
  spawnedAt: number;
  /**
   * The child's CPU time (ms, all threads) and when it was read. Only a reading taken after
   * the running call started measures that call (see checkWatchdog).
   */
  cpuBaseline: { cpuMs: number; at: number } | null;
  /** For a watchdog kill: what the killed call had used. */
  killed: { cpuMs: number; wallMs: number } | null;
}

/** Create a sandbox; its child process starts at once, so boot overlaps the caller's own start-up. */
export function createSandbox(opts: SandboxOptions = {}): Sandbox {
  const defaults: SandboxLimits = { ...DEFAULT_LIMITS, ...definedOnly(opts.defaults) };
  const maxSourceBytes = opts.maxSourceBytes ?? 16 * 1024;
  const maxInputBytes = opts.maxInputBytes ?? 2 * 1024 * 1024;
  const graceMs = opts.watchdogGraceMs ?? 60;
  const quarantine = opts.quarantine === false ? null : (opts.quarantine ?? { after: 3, windowMs: 60_000 });
  const workerConfig = JSON.stringify({
    maxIsolates: opts.maxIsolates ?? 64,
    maxContextsPerIsolate: opts.maxContextsPerIsolate ?? 32,
    maxResultBytes: opts.maxResultBytes ?? 64 * 1024,
    testMode: opts.testMode === true,
  });

  let child: ChildState | null = null;
  let closed = false;
  let nextId = 1;
  let restarts = 0;
  let isolates = 0;
  let bootFailures = 0;
  /** Calls not yet handed to a ready child, in order. */
  let waiting: Pending[] = [];
  /** Calls handed to the current child; Map order is the order the child answers in. */
  const inflight = new Map<number, Pending>();
  /** When the oldest in-flight call started running (the child runs calls one by one). */
  let headStartedAt = 0;
  let watchdog: NodeJS.Timeout | null = null;
  let watchdogAt = Infinity;
  const readyWaiters: Array<() => void> = [];
  let spawnScheduled = false;
  const incidents = new Map<string, Incident>();

  const emit = (event: SandboxEvent): void => {
    try {
      opts.onEvent?.(event);
    } catch {
      // a faulty logger must not break supervision
    }
  };

  function spawn(): void {
    const proc = fork(WORKER_PATH, [workerConfig], {
      execArgv: ['--no-node-snapshot'],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'json',
    });
    const state: ChildState = {
      process: proc,
      ready: false,
      gone: false,
      disconnected: false,
      killedByWatchdog: false,
      exit: null,
      stderr: '',
      spawnedAt: performance.now(),
      cpuBaseline: null,
      killed: null,
    };
    child = state;
    proc.stderr?.setEncoding('utf8');
    proc.stderr?.on('data', (chunk: string) => {
      state.stderr = (state.stderr + chunk).slice(-STDERR_TAIL_CHARS);
    });
    proc.stderr?.on('error', () => {});
    proc.on('error', () => {
      // spawn failure or a send on a closed channel; 'exit'/'disconnect' do the recovery
      if (proc.exitCode === null && proc.signalCode === null && !proc.connected) onGone(state);
    });
    proc.on('message', (reply: WorkerReply) => onReply(state, reply));
    // Every message the child sent is read before 'disconnect'; 'exit' may come before or
    // after it. Recover once both happened (or shortly after either, to be safe).
    proc.on('disconnect', () => {
      state.disconnected = true;
      if (state.exit) onGone(state);
      else setTimeout(() => onGone(state), 50);
    });
    proc.on('exit', (code, signal) => {
      state.exit = { code, signal };
      if (state.disconnected) onGone(state);
      else setTimeout(() => onGone(state), 50);
    });
  }

  function onReply(state: ChildState, reply: WorkerReply): void {
    if (state !== child || state.gone) return;
    if ('ready' in reply) {
      state.ready = true;
      bootFailures = 0;
      isolates = 0;
      emit({ type: 'ready', bootMs: Math.round(performance.now() - state.spawnedAt), pid: state.process.pid });
      const woken = readyWaiters.splice(0);
      const queued = waiting;
      waiting = [];
      for (const p of queued) dispatch(p);
      updateRef();
      for (const wake of woken) wake();
      return;
    }
    if (reply.n !== undefined) isolates = reply.n;
    const pending = inflight.get(reply.i);
    if (!pending) return;
    const wasHead = inflight.keys().next().value === reply.i;
    inflight.delete(reply.i);
    if (wasHead) {
      headStartedAt = performance.now();
      armWatchdog();
    }
    const usage = usageOf(reply);
    if (reply.k === 'ok') {
      let value: unknown;
      try {
        value = JSON.parse(reply.v);
      } catch {
        settle(pending, { ok: false, kind: 'malformed', message: 'hook result is not JSON data', ...usage });
        return;
      }
      settle(pending, { ok: true, value, ...usage });
    } else if (FAILURE_KINDS.has(reply.k)) {
      settle(pending, { ok: false, kind: reply.k, message: String(reply.m), ...usage });
    } else {
      settle(pending, { ok: false, kind: 'crashed', message: 'sandbox process sent an unreadable answer' });
    }
  }

  function settle(pending: Pending, outcome: HookOutcome): void {
    pending.resolve(outcome);
    if (inflight.size === 0 && waiting.length === 0) updateRef();
  }

  function dispatch(pending: Pending): void {
    const state = child;
    if (!state || !state.ready || state.gone || !state.process.connected) {
      waiting.push(pending);
      return;
    }
    if (inflight.size === 0) headStartedAt = performance.now();
    inflight.set(pending.request.i, pending);
    state.process.send(pending.request);
    armWatchdog();
  }

  /**
   * Keep one timer aimed at the earliest moment the oldest in-flight call can be over its
   * budget: its CPU limit plus grace, as wall time since it started (a hook is one thread, so
   * it cannot use CPU faster than that). Arming a timer also reads the child's CPU time (see
   * checkWatchdog); that is a few /proc reads, done at most once per such period rather
   * than once per call.
   */
  function armWatchdog(): void {
    const head = inflight.values().next().value;
    if (!head) return;
    const deadline = headStartedAt + watchdogCpuBudget(head.request.to);
    if (watchdog && watchdogAt <= deadline) return; // fires early, re-checks then
    if (child) sampleCpu(child, performance.now());
    setWatchdog(deadline);
  }

  /**
   * The CPU a call may use before the watchdog kills the child: twice its limit plus grace,
   * because the child may have spent up to 0.9x the limit on a starved first attempt that it
   * does not charge before running the call again (sandbox/worker.mjs, "CPU-time limits").
   */
  function watchdogCpuBudget(timeoutMs: number): number {
    return 2 * timeoutMs + graceMs;
  }

  function sampleCpu(state: ChildState, at: number): number | null {
    const cpuMs = readCpuMs(state.process.pid);
    state.cpuBaseline = cpuMs === null ? null : { cpuMs, at };
    return cpuMs;
  }

  function setWatchdog(at: number): void {
    if (watchdog) clearTimeout(watchdog);
    watchdogAt = at;
    watchdog = setTimeout(checkWatchdog, Math.max(0, at - performance.now()));
  }

  /**
   * The child enforces a call's limits itself; this catches what it cannot: host code stuck,
   * a builtin that ignores isolated-vm's termination, a hung child. The rule is the child's:
   * a call is over when it has used its CPU limit (plus grace), or when it has run for its
   * wall backstop (plus grace) whatever its CPU. CPU is the child's (all threads, Linux
   * /proc), counted from a reading taken while the call was already running, so time the
   * call spent waiting for a CPU, or the work of calls before it, is never charged to it; it
   * may be charged a little late instead (at most the wall time before that reading).
   * Elsewhere than Linux that CPU budget is applied as wall time.
   */
  function checkWatchdog(): void {
    watchdog = null;
    watchdogAt = Infinity;
    const head = inflight.values().next().value;
    const state = child;
    if (!head || !state) return;
    const now = performance.now();
    const elapsed = now - headStartedAt;
    const cpuBudget = watchdogCpuBudget(head.request.to);
    const wallBudget = head.request.wb + graceMs;
    if (elapsed < cpuBudget) {
      armWatchdog();
      return;
    }
    let usedMs = elapsed;
    let over: 'cpu' | 'wall' | 'time' = 'time';
    if (elapsed >= wallBudget) {
      over = 'wall';
      const cpuNow = readCpuMs(state.process.pid);
      const base = state.cpuBaseline;
      usedMs = cpuNow !== null && base !== null && base.at >= headStartedAt ? cpuNow - base.cpuMs : 0;
    } else {
      const base = state.cpuBaseline;
      const valid = base !== null && base.at >= headStartedAt;
      const cpuNow = valid ? readCpuMs(state.process.pid) : sampleCpu(state, now);
      if (cpuNow !== null) {
        usedMs = valid ? cpuNow - base.cpuMs : 0;
        if (usedMs < cpuBudget) {
          const wallDeadline = headStartedAt + wallBudget;
          setWatchdog(Math.min(now + Math.max(MIN_CPU_CHECK_MS, cpuBudget - usedMs), wallDeadline));
          return;
        }
        over = 'cpu';
      }
    }
    // Past its budget. The host's own event loop may have stalled (a long synchronous task),
    // so the child's answer may already be waiting on the IPC channel: let one poll phase
    // read it (setImmediate runs after poll) before deciding the child is stuck.
    if (!head.confirming) {
      head.confirming = true;
      setImmediate(() => {
        if (inflight.get(head.request.i) === head && child === state) checkWatchdog();
      });
      return;
    }
    // The child is stuck past the call's limit where its own limits cannot reach it.
    inflight.delete(head.request.i);
    recordIncident(head, 'timeout');
    const why =
      over === 'cpu'
        ? `hook used more than ${head.request.to} ms of CPU without finishing`
        : over === 'wall'
          ? `hook did not finish within ${head.request.wb} ms of wall time`
          : `hook did not finish within ${head.request.to} ms`;
    settle(head, { ok: false, kind: 'timeout', message: `${why}; sandbox process restarted` });
    state.killedByWatchdog = true;
    state.killed = { cpuMs: Math.round(Math.max(0, usedMs)), wallMs: Math.round(elapsed) };
    state.process.kill('SIGKILL');
    onGone(state);
  }

  /** The child died or was killed: answer the call it was running, retry the rest on a new child. */
  function onGone(state: ChildState): void {
    if (state.gone) return;
    state.gone = true;
    if (state !== child) return;
    child = null;
    if (watchdog) clearTimeout(watchdog);
    watchdog = null;
    watchdogAt = Infinity;
    isolates = 0;
    const proc = state.process;
    const done = proc.exitCode !== null || proc.signalCode !== null;
    const ended = state.exit ?? (done ? { code: proc.exitCode, signal: proc.signalCode } : null);
    if (!ended) setTimeout(() => proc.kill('SIGKILL'), state.killedByWatchdog ? 0 : EXIT_GRACE_MS).unref();
    const exit = ended ?? { code: null, signal: null };
    const orphans = [...inflight.values()];
    inflight.clear();
    if (closed) return;

    if (!state.ready) {
      bootFailures++;
      emit({ type: 'restart', reason: 'boot-failed', code: exit.code, signal: exit.signal, stderr: state.stderr, cpuMs: 0, wallMs: 0 });
      if (bootFailures >= BOOT_FAILURES_BEFORE_GIVING_UP) {
        // Starting again right away would just loop; fail what waits and retry on the next call.
        for (const wake of readyWaiters.splice(0)) wake();
        const failed = waiting.splice(0);
        for (const p of failed) {
          settle(p, {
            ok: false,
            kind: 'crashed',
            message: `sandbox process cannot start: ${lastLine(state.stderr) || describeExit(exit)}`,
          });
        }
        return;
      }
    } else {
      restarts++;
      const tell = (end: typeof exit) =>
        emit({
          type: 'restart',
          reason: state.killedByWatchdog ? 'watchdog' : 'crashed',
          code: end.code,
          signal: end.signal,
          stderr: state.stderr,
          cpuMs: state.killed?.cpuMs ?? 0,
          wallMs: state.killed?.wallMs ?? 0,
        });
      if (ended || state.killedByWatchdog)
        tell(exit); // else once it exits: by itself (SIGABRT) within EXIT_GRACE_MS
      else proc.once('exit', (code, signal) => tell({ code, signal }));
    }

    const retry: Pending[] = [];
    orphans.forEach((p, index) => {
      p.attempts++;
      if (index === 0 && !state.killedByWatchdog) {
        // The oldest unanswered call is the one the child was running when it died.
        recordIncident(p, 'crashed');
        settle(p, {
          ok: false,
          kind: 'crashed',
          message: `sandbox process died running this hook (${describeExit(exit)}); it was restarted`,
        });
      } else if (p.attempts >= MAX_ATTEMPTS) {
        settle(p, { ok: false, kind: 'crashed', message: 'sandbox process died repeatedly before this hook could run' });
      } else {
        retry.push(p);
      }
    });
    waiting = retry.concat(waiting);
    scheduleSpawn();
  }

  /**
   * Start a child on the next turn of the event loop: fork() blocks for 2-9 ms, and the
   * answers just settled should reach their callers first.
   */
  function scheduleSpawn(): void {
    if (spawnScheduled || child || closed) return;
    spawnScheduled = true;
    setImmediate(() => {
      spawnScheduled = false;
      if (!child && !closed) {
        spawn();
        updateRef();
      }
    });
  }

  function recordIncident(pending: Pending, kind: HookFailureKind): void {
    if (!quarantine) return;
    const now = Date.now();
    const key = incidentKey(pending.request.t, pending.request.s);
    const prior = incidents.get(key);
    const fresh = !prior || now - prior.last > quarantine.windowMs;
    incidents.delete(key);
    incidents.set(key, { count: fresh ? 1 : prior.count + 1, last: now, kind });
    if (incidents.size > 1000) incidents.delete(incidents.keys().next().value as string);
  }

  function quarantined(tenant: string, source: string): HookOutcome | null {
    if (!quarantine || incidents.size === 0) return null; // the common case costs no hashing
    const key = incidentKey(tenant, source);
    const incident = incidents.get(key);
    if (!incident) return null;
    if (Date.now() - incident.last > quarantine.windowMs) {
      incidents.delete(key);
      return null;
    }
    if (incident.count < quarantine.after) return null;
    return {
      ok: false,
      kind: incident.kind,
      message: `hook quarantined: it brought down the sandbox process ${incident.count} times recently (last: ${incident.kind})`,
    };
  }

  /** Let an idle sandbox not keep the host process alive; hold it while calls are pending. */
  function updateRef(): void {
    const proc = child?.process;
    if (!proc) return;
    const busy = inflight.size > 0 || waiting.length > 0 || readyWaiters.length > 0;
    const handles = [proc.channel, proc.stderr] as Array<{ ref?: () => void; unref?: () => void } | null | undefined>;
    if (busy) {
      proc.ref();
      for (const handle of handles) handle?.ref?.();
    } else {
      proc.unref();
      for (const handle of handles) handle?.unref?.();
    }
  }

  function run(call: HookCall): Promise<HookOutcome> {
    try {
      return runChecked(call);
    } catch (error) {
      return Promise.resolve({
        ok: false,
        kind: 'crashed',
        message: `sandbox error: ${error instanceof Error ? error.message : String(error)}`,
      });
    }
  }

  function runChecked(call: HookCall): Promise<HookOutcome> {
    if (closed) return Promise.resolve({ ok: false, kind: 'crashed', message: 'sandbox is closed' });
    const source = call.source;
    if (typeof source !== 'string' || source.trim() === '') {
      return Promise.resolve({ ok: false, kind: 'compile', message: 'hook source is empty' });
    }
    if (Buffer.byteLength(source, 'utf8') > maxSourceBytes) {
      return Promise.resolve({ ok: false, kind: 'compile', message: `hook source is larger than ${maxSourceBytes} bytes` });
    }
    let inputJson: string | undefined;
    try {
      inputJson = JSON.stringify(call.input === undefined ? null : call.input);
    } catch (error) {
      return Promise.resolve({
        ok: false,
        kind: 'malformed',
        message: `hook input is not JSON data: ${error instanceof Error ? error.message : String(error)}`,
      });
    }
    if (inputJson === undefined) return Promise.resolve({ ok: false, kind: 'malformed', message: 'hook input is not JSON data' });
    if (inputJson.length > maxInputBytes) {
      return Promise.resolve({ ok: false, kind: 'malformed', message: `hook input is larger than ${maxInputBytes} bytes of JSON` });
    }
    const limits = { ...defaults, ...definedOnly(call.limits) };
    const timeoutMs = clamp(Math.ceil(limits.timeoutMs), 1, MAX_TIMEOUT_MS);
    const memoryMb = clamp(Math.ceil(limits.memoryMb), MIN_MEMORY_MB, MAX_MEMORY_MB);
    const tenant = String(call.tenant);
    const held = quarantined(tenant, source);
    if (held) return Promise.resolve(held);

    return new Promise<HookOutcome>((resolve) => {
      const pending: Pending = {
        request: {
          i: nextId++,
          t: tenant,
          o: String(call.owner),
          h: String(call.hook),
          s: source,
          in: inputJson,
          to: timeoutMs,
          wb: wallBackstopMs(timeoutMs),
          mb: memoryMb,
          ...(call.measure === true ? { u: 1 as const } : {}),
        },
        attempts: 0,
        resolve,
      };
      const wasIdle = inflight.size === 0 && waiting.length === 0;
      if (!child) scheduleSpawn(); // after boot failures the next call tries again
      dispatch(pending);
      if (wasIdle) updateRef();
    });
  }

  function ready(): Promise<void> {
    if (closed || child?.ready) return Promise.resolve();
    if (!child) scheduleSpawn();
    return new Promise((resolve) => {
      readyWaiters.push(resolve);
      updateRef();
    });
  }

  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    if (watchdog) clearTimeout(watchdog);
    watchdog = null;
    const failed = [...inflight.values(), ...waiting];
    inflight.clear();
    waiting = [];
    for (const p of failed) p.resolve({ ok: false, kind: 'crashed', message: 'sandbox is closed' });
    for (const wake of readyWaiters.splice(0)) wake();
    const state = child;
    child = null;
    if (!state) return;
    const proc = state.process;
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => proc.kill('SIGKILL'), 1000);
      proc.once('exit', () => {
        clearTimeout(force);
        resolve();
      });
      proc.kill('SIGTERM');
    });
  }

  // no child until a hook first runs (run or ready): a server whose graph has no hook never
  // pays the worker's memory (about 49 MB) or its start
  return { run, stats: () => ({ restarts, isolates }), ready, close };
}

function definedOnly<T extends object>(value: Partial<T> | undefined): Partial<T> {
  const out: Partial<T> = {};
  if (!value) return out;
  for (const [key, v] of Object.entries(value)) {
    if (typeof v === 'number' && Number.isFinite(v)) (out as Record<string, unknown>)[key] = v;
  }
  return out;
}

/** Quarantine key: a digest, so remembering 1,000 incidents never holds 1,000 sources. */
function incidentKey(tenant: string, source: string): string {
  return createHash('sha256').update(tenant).update('\0').update(source).digest('base64url');
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

function describeExit(exit: { code: number | null; signal: string | null }): string {
  if (exit.signal) return `signal ${exit.signal}`;
  if (exit.code !== null) return `exit code ${exit.code}`;
  return 'connection lost';
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return (lines[lines.length - 1] ?? '').slice(0, 200);
}
