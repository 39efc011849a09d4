/**
 * A full garbage collection once the serving process goes quiet after it allocated a lot.
 *
 * V8 collects the old generation when allocation pushes the heap to its limit; a server that
 * stops allocating (a restart that loaded 100,000 nodes and built its indexes, a bulk import
 * that then went quiet) keeps what became garbage meanwhile, and the ArrayBuffers only that
 * garbage refers to (a snapshot's inflated bytes, parsed git objects), for as long as it stays
 * quiet. Measured at 105,000 nodes: 631 MB of RSS ten seconds after a restart, 399 MB after one
 * full collection (164 MB of ArrayBuffers were garbage; docs/performance.md "Memory, seed rate,
 * disk and restart, seventh session"). Browsers have V8 collect in idle time; Node has no idle
 * notifications.
 *
 * So the serving process (`workgraph serve`, not every in-process kernel) checks every
 * `intervalMs`: when no request started or finished for `quietMs` (a server waiting on
 * fdatasync between requests has a nearly idle event loop: the first version, deciding on
 * event-loop utilization alone, could collect between a writer's requests), the event loop was
 * nearly idle over the last interval (utilization below `idleUtilization`: background work),
 * and the heap plus ArrayBuffers grew since the last collection this started by at least
 * `minGrowthBytes` and `minGrowthRatio` of what that collection left, it asks V8 for one full
 * collection (which also gives back the young generation's room: 34 MB at 100,000 nodes),
 * compacting the old space (compactingGc). It pauses the process (400 ms at 103,000 nodes,
 * 190 ms at 20,000), which is why it waits for quiet and runs at most once per growth.
 * `SVC_IDLE_GC=0` turns it off (docs/operator.md).
 *
 * V8's `gc` is reached the way jest's leak detector reaches it: the `--expose-gc` flag set at
 * run time, the function read from a new context. When that is not available the monitor does
 * nothing.
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface IdleGcOptions {
  /** how often the process is looked at */
  intervalMs?: number;
  /** event-loop utilization over an interval below which the process counts as quiet */
  idleUtilization?: number;
  /** growth of heap used plus ArrayBuffers since the last collection that makes one worthwhile: at least this many bytes */
  minGrowthBytes?: number;
  /** and at least this share of what the last collection left */
  minGrowthRatio?: number;
  /**
   * when the process last served a request (performance.now() time): it counts as quiet only
   * `quietMs` after that. A server waiting on fdatasync between requests has a nearly idle event
   * loop; a full collection then would stall the requests in flight.
   */
  lastRequestAt?: () => number;
  quietMs?: number;
  /** tests: the collection, the footprint and the utilization probes */
  gc?: () => void;
  footprint?: () => number;
  utilization?: () => number;
  /** told after each collection: footprint before and after, and how long it took */
  onCollect?: (info: { beforeBytes: number; afterBytes: number; ms: number }) => void;
}

let exposed: (() => void) | null | undefined;

/** V8's full collection as a function, or null where it cannot be had. */
export function v8Gc(): (() => void) | null {
  if (exposed !== undefined) return exposed;
  try {
    const existing = (globalThis as { gc?: () => void }).gc;
    if (typeof existing === 'function') return (exposed = existing);
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as unknown;
    exposed = typeof gc === 'function' ? (gc as () => void) : null;
  } catch {
    exposed = null;
  }
  return exposed;
}

/**
 * V8's full collection with every old-space page compacted: a plain one frees objects but keeps
 * the pages they were spread over (after a 100,000-node seed the old space stays committed at
 * twice what is in use; in an isolated test 243 MB committed for 83 MB live, 85 MB after a
 * compacting one, RSS 398 -> 186 MB, in 227 ms). The flag is read at each collection and set only
 * around this one (no JavaScript runs in between).
 */
export function compactingGc(): (() => void) | null {
  const gc = v8Gc();
  if (!gc) return null;
  return () => {
    setFlagsFromString('--compact-on-every-full-gc');
    try {
      gc();
    } finally {
      setFlagsFromString('--no-compact-on-every-full-gc');
    }
  };
}

/** heap in use plus ArrayBuffers: what a collection can give back */
function processFootprint(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** Starts the monitor; the returned function stops it. */
export function startIdleGc(opts: IdleGcOptions = {}): () => void {
  const gc = opts.gc ?? compactingGc();
  if (!gc) return () => undefined;
  const intervalMs = opts.intervalMs ?? 2000;
  const idle = opts.idleUtilization ?? 0.05;
  const minGrowth = opts.minGrowthBytes ?? 16 * 1024 * 1024;
  const minRatio = opts.minGrowthRatio ?? 0.25;
  const footprint = opts.footprint ?? processFootprint;
  const quietMs = opts.quietMs ?? 2000;
  const lastRequestAt = opts.lastRequestAt ?? (() => 0);
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  const utilization =
    opts.utilization ??
    (() => {
      const now = performance.eventLoopUtilization();
      const u = performance.eventLoopUtilization(now, last).utilization;
      last = now;
      return u;
    });
  // the footprint right after the last collection (none yet: what the process started with)
  let baseline = 0;
  const timer = setInterval(() => {
    if (utilization() >= idle) return;
    if (performance.now() - lastRequestAt() < quietMs) return;
    const before = footprint();
    if (before - baseline < Math.max(minGrowth, baseline * minRatio)) return;
    const started = performance.now();
    gc();
    baseline = footprint();
    opts.onCollect?.({ beforeBytes: before, afterBytes: baseline, ms: performance.now() - started });
    // the collection itself is not load: the next interval is measured from here
    if (!opts.utilization) last = performance.eventLoopUtilization();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
