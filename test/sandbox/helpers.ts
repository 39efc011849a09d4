import { readFileSync, readdirSync } from 'node:fs';
import { expect } from 'chai';
import { createSandbox, wallBackstopMs } from '../../sandbox/index.js';
import type { HookCall, HookOutcome, Sandbox, SandboxEvent, SandboxOptions } from '../../sandbox/types.js';

export interface Timed {
  outcome: HookOutcome;
  /** wall time, ms */
  ms: number;
  /**
   * CPU time (ms) the sandbox child used while the call ran: read from /proc before and
   * after, or for a child the watchdog killed, what the watchdog measured. null when it cannot
   * be known (not Linux, or the child died on its own, e.g. SIGABRT).
   */
  cpuMs: number | null;
}

export interface TestSandbox {
  sandbox: Sandbox;
  events: SandboxEvent[];
  /** pid of the child that is up now (from the last 'ready' event). */
  pid(): number | undefined;
  run(source: string, input?: unknown, extra?: Partial<HookCall>): Promise<HookOutcome>;
  /** run(), the wall-clock milliseconds it took, and the CPU time the child used meanwhile. */
  timed(source: string, input?: unknown, extra?: Partial<HookCall>): Promise<Timed>;
}

/** Sandboxes made for one suite; `after(scope.closeAll)` stops exactly those. */
export interface SandboxScope {
  make(opts?: SandboxOptions): TestSandbox;
  closeAll(): Promise<void>;
}

export function sandboxScope(): SandboxScope {
  const open: Sandbox[] = [];
  return {
    make(opts = {}) {
      const t = makeSandbox(opts);
      open.push(t.sandbox);
      return t;
    },
    async closeAll() {
      await Promise.all(open.splice(0).map((sandbox) => sandbox.close()));
    },
  };
}

/** A sandbox with its events recorded. */
function makeSandbox(opts: SandboxOptions): TestSandbox {
  const events: SandboxEvent[] = [];
  const sandbox = createSandbox({
    ...opts,
    onEvent: (event) => {
      events.push(event);
      opts.onEvent?.(event);
    },
  });
  const run = (source: string, input: unknown = {}, extra: Partial<HookCall> = {}) =>
    sandbox.run({ tenant: 'acme', owner: 'schema-test', hook: 'transition', source, input, ...extra });
  const currentPid = (): number | undefined => {
    for (let i = events.length - 1; i >= 0; i--) {
      const event = events[i]!;
      if (event.type === 'ready') return event.pid;
    }
    return undefined;
  };
  return {
    sandbox,
    events,
    pid: currentPid,
    run,
    async timed(source, input = {}, extra = {}) {
      const pid = currentPid();
      const cpuBefore = childCpuMs(pid);
      const started = performance.now();
      const seen = events.length;
      const outcome = await run(source, input, extra);
      const ms = performance.now() - started;
      const restarts = events.slice(seen).filter((e) => e.type === 'restart');
      let cpuMs: number | null = null;
      if (restarts.length === 0) {
        const cpuAfter = childCpuMs(pid);
        if (cpuBefore !== null && cpuAfter !== null) cpuMs = cpuAfter - cpuBefore;
      } else if (restarts.every((e) => e.type === 'restart' && e.reason === 'watchdog')) {
        cpuMs = restarts.reduce((sum, e) => sum + (e.type === 'restart' ? e.cpuMs : 0), 0);
      }
      return { outcome, ms, cpuMs };
    },
  };
}

/** CPU time (ms) process `pid` has used on all its threads (Linux /proc schedstat); null elsewhere or when gone. */
export function childCpuMs(pid: number | undefined): number | null {
  if (pid === undefined || process.platform !== 'linux') return null;
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    }
    return ns / 1e6;
  } catch {
    return null;
  }
}

export function isAlive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export const BENIGN =
  "(input) => input.to !== 'done' || input.from === 'review' ? { allow: true } : { allow: false, reason: 'move to review first' }";
export const TRANSITION_INPUT = {
  node: { id: 'task-a', type: 'task', status: 'review', title: 'A' },
  from: 'review',
  to: 'done',
  actor: 'person-ann',
};

/**
 * Expect a call cut for time, and say by which rule: its CPU limit (`limitMs` ms of CPU), or
 * its wall backstop, which comes first only when the machine gave the call under a twentieth
 * of a CPU (sandbox/limits.ts wallBackstopMs). Either the child cut it or the watchdog did.
 */
export function cutBy(outcome: HookOutcome, limitMs: number): 'cpu' | 'wall' {
  expect(outcome.ok === false && outcome.kind, JSON.stringify(outcome)).to.equal('timeout');
  const message = outcome.ok ? '' : outcome.message;
  if (new RegExp(`\\b${limitMs} ms of CPU`).test(message)) return 'cpu';
  expect(message).to.match(new RegExp(`\\b${wallBackstopMs(limitMs)} ms of wall time`));
  return 'wall';
}

/** Every outcome must be answered within the call's timeout plus this much (brief: ~100 ms). */
export const ANSWER_SLACK_MS = 100;
