import { createSandbox } from '../../sandbox/index.js';
import type { HookCall, HookOutcome, Sandbox, SandboxEvent, SandboxOptions } from '../../sandbox/types.js';

export interface Timed {
  outcome: HookOutcome;
  ms: number;
  starvedMs: number;
}

export interface TestSandbox {
  sandbox: Sandbox;
  events: SandboxEvent[];
  /** pid of the child that is up now (from the last 'ready' event). */
  pid(): number | undefined;
  run(source: string, input?: unknown, extra?: Partial<HookCall>): Promise<HookOutcome>;
  /**
   * run(), the wall-clock milliseconds it took, and how much of that the watchdog forgave
   * because the child was waiting for a CPU (nonzero only on an overloaded machine).
   */
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
  return {
    sandbox,
    events,
    pid() {
      for (let i = events.length - 1; i >= 0; i--) {
        const event = events[i]!;
        if (event.type === 'ready') return event.pid;
      }
      return undefined;
    },
    run,
    async timed(source, input = {}, extra = {}) {
      const started = performance.now();
      const seen = events.length;
      const outcome = await run(source, input, extra);
      const ms = performance.now() - started;
      const starvedMs = events.slice(seen).reduce((sum, e) => sum + (e.type === 'restart' ? e.starvedMs : 0), 0);
      return { outcome, ms, starvedMs };
    },
  };
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

/** Every outcome must be answered within the call's timeout plus this much (brief: ~100 ms). */
export const ANSWER_SLACK_MS = 100;
