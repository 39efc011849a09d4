/**
 * The hook sandbox's contract: `Sandbox` (what the kernel calls), one hook invocation
 * (`HookCall`), its answer (`HookOutcome`, never an exception), its limits and options, and
 * the supervision events. The host that implements it: sandbox/index.ts (`createSandbox`).
 * Type-only: nothing here loads isolated-vm.
 */

/** Per-call resource limits. */
export interface SandboxLimits {
  /**
   * CPU time one call may use, including compiling its source on first use. Default 50. Its
   * wall time is bounded too, by a backstop: `wallBackstopMs(timeoutMs)` in sandbox/limits.ts
   * (2,050 ms for 50).
   */
  timeoutMs: number;
  /** Heap limit of the tenant's isolate, in MB (isolated-vm's minimum is 8). Default 16. */
  memoryMb: number;
}

/** One hook invocation. `input` must be plain JSON data; it is copied into the isolate. */
export interface HookCall {
  tenant: string;
  /** Who wrote the hook, e.g. 'seed:task' or 'schema-task-review-gate'. Each owner gets its own context. */
  owner: string;
  /** Which hook of the owner: 'transition', 'validate', ... (used in stack traces). */
  hook: string;
  /** A JS function expression, e.g. `(input) => ({ allow: true })`. */
  source: string;
  input: unknown;
  limits?: Partial<SandboxLimits>;
  /**
   * Answer what the call used (`HookOutcome.usage`): a schema dry run shows it to the hook's
   * author. Off for the kernel's own calls, which do not pay for the heap reading.
   */
  measure?: boolean;
}

/** What a measured call used. */
export interface HookUsage {
  /** CPU time of the call in the child, compile included; a call cut at its limit counts the limit */
  cpuMs: number;
  /** the tenant isolate's heap in use after the call (its hooks share it; the memory limit applies to it), bytes */
  heapUsedBytes: number | null;
  /** that heap's limit, bytes */
  heapLimitBytes: number | null;
}

export type HookFailureKind = 'timeout' | 'memory' | 'threw' | 'compile' | 'crashed' | 'malformed';

/** `usage` only on a call that asked (`measure`) and reached the child: a watchdog kill or a refused call has none. */
export type HookOutcome =
  { ok: true; value: unknown; usage?: HookUsage } | { ok: false; kind: HookFailureKind; message: string; usage?: HookUsage };

/** Supervision events, for the kernel's log. */
export type SandboxEvent =
  | { type: 'ready'; bootMs: number; pid: number | undefined }
  | {
      type: 'restart';
      reason: 'crashed' | 'watchdog' | 'boot-failed';
      code: number | null;
      signal: string | null;
      /** The last lines the child wrote to stderr (V8's OOM report, for instance). */
      stderr: string;
      /** For 'watchdog': the CPU time (ms) the killed call was measured to have used; else 0. */
      cpuMs: number;
      /** For 'watchdog': the wall time (ms) the killed call had run; else 0. */
      wallMs: number;
    };

export interface SandboxOptions {
  defaults?: Partial<SandboxLimits>;
  /** Longest hook source accepted, in UTF-8 bytes. Default 16 KB. */
  maxSourceBytes?: number;
  /** Longest input accepted, as JSON text. Default 2 MB. */
  maxInputBytes?: number;
  /**
   * Longest result accepted, as JSON text. Default 64 KB. The check runs inside the call's
   * time limit, and writing 256 KB of small values costs 10-40 ms on a cold isolate.
   */
  maxResultBytes?: number;
  /**
   * How much CPU time past its limit (and wall time past its backstop) a call may go
   * unanswered before the parent kills the child. Default 60 ms.
   */
  watchdogGraceMs?: number;
  /** Live isolates kept in the child (least recently used are disposed). Default 64. */
  maxIsolates?: number;
  /** Owner contexts kept per isolate (each costs ~165 KB of that isolate's heap). Default 32. */
  maxContextsPerIsolate?: number;
  /**
   * A (tenant, source) that killed the child `after` times within `windowMs` is answered at
   * once with its last failure kind until `windowMs` passes without an incident, so one
   * hostile hook cannot keep every tenant waiting on restarts. `false` disables. Default
   * `{ after: 3, windowMs: 60_000 }`.
   */
  quarantine?: { after: number; windowMs: number } | false;
  onEvent?: (event: SandboxEvent) => void;
  /**
   * Test only: lets owner '__test:block' hold the child in host code for `input.ms`, spinning
   * on a CPU, or asleep without using one when `input.sleep` is true.
   */
  testMode?: boolean;
}

export interface Sandbox {
  /** Run one hook. Always resolves; failures are outcomes, not exceptions. */
  run(call: HookCall): Promise<HookOutcome>;
  /** `restarts`: child restarts after a crash or watchdog kill; `isolates`: live isolates in the child. */
  stats(): { restarts: number; isolates: number };
  /**
   * Resolves once a child is up and accepting calls (calls made earlier simply wait), or
   * when starting one failed repeatedly (calls then answer `crashed`).
   */
  ready(): Promise<void>;
  /** Fail pending calls with `crashed`, stop the child and wait for it to exit. */
  close(): Promise<void>;
}
