/**
 * The time rule a hook call lives under, host side: its limit is CPU time, its wall time is
 * bounded by a backstop (sandbox/README.md "Limits"). The child applies the same rule to
 * itself (sandbox/worker.mjs); sandbox/index.ts's watchdog applies it from outside, reading
 * the child's CPU time here. Also the figures a measured call (a schema dry run) answers with.
 */
import { readFileSync, readdirSync } from 'node:fs';
import type { HookUsage } from './types.js';

/**
 * The wall-time backstop of a call with CPU limit `timeoutMs`: 20x the limit, at least the
 * limit + 2 s, at most the limit + 60 s (2,050 ms for the default 50). It bounds a call that
 * does not finish yet uses no CPU: a hung child, or a machine so loaded that the call gets
 * under a twentieth of a CPU. Hooks cannot sleep (no timers, no Atomics), so a benign hook
 * meets it only in that second case. A call cut by it answers `timeout`.
 */
export function wallBackstopMs(timeoutMs: number): number {
  return timeoutMs + Math.min(Math.max(19 * timeoutMs, 2000), 60_000);
}

/**
 * CPU time (ms) a process has used so far on all its threads, the sum of the first field
 * ("<on-cpu ns> <run-queue wait ns> <timeslices>") of Linux's /proc/<pid>/task/<tid>/schedstat;
 * null elsewhere. A thread that exited drops out of the sum, which can only make a reading
 * lower (the watchdog late, never early); the child's threads live as long as it does.
 */
export function readCpuMs(pid: number | undefined): number | null {
  if (pid === undefined || process.platform !== 'linux') return null;
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // the thread exited between the listing and the read
      }
    }
    return Number.isFinite(ns) ? ns / 1e6 : null;
  } catch {
    return null;
  }
}

/** `c`, `hu`, `hl`: what a measured call used (HookUsage), present only when it asked */
export interface Measured {
  c?: number;
  hu?: number;
  hl?: number;
}

/** The usage figures of a measured call's reply, as a HookOutcome carries them (nothing when it did not ask). */
export function usageOf(reply: Measured): { usage?: HookUsage } {
  if (typeof reply.c !== 'number') return {};
  return {
    usage: {
      cpuMs: reply.c,
      heapUsedBytes: typeof reply.hu === 'number' ? reply.hu : null,
      heapLimitBytes: typeof reply.hl === 'number' ? reply.hl : null,
    },
  };
}

/**
 * A child whose channel closed but that has not exited (an abort still writing its report, on a
 * loaded machine) is left this long to end by itself before it is killed, so its restart event
 * names how it ended (SIGABRT), not the parent's SIGKILL.
 */
export const EXIT_GRACE_MS = 1000;
