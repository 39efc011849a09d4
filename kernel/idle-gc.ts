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
 * nearly idle over the last interval (utilization below `idleUtilization`: background work), no
 * warm-up is under way (`busy`),
 * and the heap plus ArrayBuffers grew since the last collection this started by at least
 * `minGrowthBytes` and `minGrowthRatio` of what that collection left, it asks V8 for one full
 * collection (which also gives back the young generation's room: 34 MB at 100,000 nodes).
 *
 * The collection compacts the old space (compactingGc) only when that cannot take the process
 * above the most memory it has held (its RSS high-water mark): a compaction copies every live
 * object to new pages before it gives the old ones back, so for a moment the process holds its
 * RSS plus its live heap. Compacting whatever the room, a restart at 100,000 nodes peaked at
 * 672 MB against 292 MB steady and a seed at 639 against 356 (issue 16 holds peaks within 1.5x
 * of steady); without compaction the old space keeps the pages its garbage was spread over
 * (445 MB after that seed), which V8's own memory reducer gives back only when it comes round.
 *
 A collection that does not compact runs with V8's `--optimize-for-size` set
 * around it, which has it move the live objects off the emptiest pages (a few MB of them each
 * time) and give those pages back.
 *
 * A collection that gave back at least `followUpBytes` (of heap in use plus ArrayBuffers, or of
 * the heap's committed pages) is followed by another at the next quiet interval, whatever the
 * growth, up to `maxRun` in a row, and a run goes on for `settleMs` after its first collection
 * whatever they give back (V8 returns the young generation's room only at a full collection that
 * finds the allocation rate of the last 5 s low: 34 MB at 100,000 nodes): objects released only by what a collection ran (weak
 * callbacks and finalizers, which run after it) are garbage only at the next one, and each
 * non-compacting one empties a few more pages. After a restart at 100,000 nodes: the first
 * collection took the heap in use from 334 to 255 MB, the second to 198 MB (and 80 MB of
 * external memory with it), the next ones its committed pages from 311 to 207 MB: RSS 490 ->
 * 276 MB without going above the start's peak (V8's own memory reducer got there only about
 * 20 s later). A collection pauses the process (90-150 ms at 100,000 nodes without compaction,
 * 300-400 ms compacting), which is why it waits for quiet and runs only after growth.
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
  /**
   * work under way that will leave garbage when it ends (the kernel's warm-ups after a start):
   * no collection while it says so; collecting before it ends pauses the process for garbage
   * that is not there yet.
   */
  busy?: () => boolean;
  /** tests: the collection (`compact`: the old space compacted), the footprint and the utilization probes */
  gc?: (compact: boolean) => void;
  /** tests: whether a compaction fits under the high-water mark now */
  compactFits?: () => boolean;
  /** tests: the heap's committed bytes */
  committed?: () => number;
  /** a collection that gave back at least this many bytes is followed by another (default 4 MB) */
  followUpBytes?: number;
  /**
   * a run goes on, whatever each collection gives back, until this long after its first
   * collection (default 6 s): V8 gives back the young generation's room (34 MB at 100,000 nodes)
   * only at a full collection that finds the allocation rate of the last 5 s low
   */
  settleMs?: number;
  /** collections in a row at most, the first included (default 8) */
  maxRun?: number;
  footprint?: () => number;
  utilization?: () => number;
  /** told after each collection: footprint before and after, and how long it took */
  onCollect?: (info: { beforeBytes: number; afterBytes: number; ms: number; compacted: boolean }) => void;
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
 * How the process itself set a V8 flag (`--name` or `--no-name` on its command line or in
 * NODE_OPTIONS, the last one winning, underscores as dashes), else `fallback` (V8's default):
 * what a flag set around a collection goes back to, so an operator's own choice survives it.
 */
export function startupSetting(name: string, fallback: string, args: string[] = processArgs()): string {
  let found = fallback;
  for (const a of args) {
    const flag = a.replace(/_/g, '-');
    if (flag === `--${name}` || flag === `--no-${name}`) found = flag;
  }
  return found;
}

function processArgs(): string[] {
  return [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean)];
}

/** Runs `fn` with V8 flags set, each pair's first, and each pair's second (the process's own setting) after it. */
function withFlags(flags: Array<[string, string]>, fn: () => void): void {
  for (const [set] of flags) setFlagsFromString(set);
  try {
    fn();
  } finally {
    for (const [, reset] of flags) setFlagsFromString(reset);
  }
}

/**
 * Set around every collection this module asks for (V8 reads it at each collection; no
 * JavaScript runs in between): `--flush-bytecode` off. A full collection ages the compiled code
 * of every function not run since the previous one and V8 drops it at age five
 * (`--bytecode-old-age`); a run of up to eight collections in a quiet process would otherwise
 * throw away the compiled and optimized code of everything, and the next requests would run cold.
 */
const KEEP_CODE: [string, string] = ['--no-flush-bytecode', startupSetting('flush-bytecode', '--flush-bytecode')];

/**
 * V8's full collection with every old-space page compacted: a plain one frees objects but keeps
 * the pages they were spread over (after a 100,000-node seed the old space stays committed at
 * twice what is in use; in an isolated test 243 MB committed for 83 MB live, 85 MB after a
 * compacting one, RSS 398 -> 186 MB, in 227 ms).
 */
export function compactingGc(): (() => void) | null {
  const gc = v8Gc();
  if (!gc) return null;
  return () =>
    withFlags([['--compact-on-every-full-gc', startupSetting('compact-on-every-full-gc', '--no-compact-on-every-full-gc')], KEEP_CODE], gc);
}

/**
 * A compaction's moment of most memory (RSS now plus the live heap it copies; heap in use is an
 * upper bound of what is live) stays within the process's RSS high-water mark.
 */
function compactionFits(): boolean {
  const m = process.memoryUsage();
  return m.rss + m.heapUsed <= process.resourceUsage().maxRSS * 1024;
}

/** V8's full collection, compacting, or favouring memory over speed (`--optimize-for-size` set around it); null where it cannot be had. */
function v8Collection(): ((compact: boolean) => void) | null {
  const gc = v8Gc();
  const compacting = compactingGc();
  if (!gc || !compacting) return null;
  return (compact) =>
    compact
      ? compacting()
      : withFlags([['--optimize-for-size', startupSetting('optimize-for-size', '--no-optimize-for-size')], KEEP_CODE], gc);
}

/** heap in use plus ArrayBuffers: what a collection can give back */
function processFootprint(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

export interface IdleGc {
  stop(): void;
  /**
   * A piece of background work just ended (a warm-up): collect now, without waiting for quiet,
   * if the footprint grew enough since the last collection (the same rule), so the next piece
   * does not pile its garbage on this one's.
   */
  afterWork(): void;
}

/** Starts the monitor. */
export function startIdleGc(opts: IdleGcOptions = {}): IdleGc {
  const gc = opts.gc ?? v8Collection();
  if (!gc) return { stop: () => undefined, afterWork: () => undefined };
  const fits = opts.compactFits ?? compactionFits;
  const committed = opts.committed ?? (() => process.memoryUsage().heapTotal);
  const followUpBytes = opts.followUpBytes ?? 4 * 1024 * 1024;
  const maxRun = opts.maxRun ?? 8;
  const settleMs = opts.settleMs ?? 6000;
  const intervalMs = opts.intervalMs ?? 2000;
  const idle = opts.idleUtilization ?? 0.05;
  const minGrowth = opts.minGrowthBytes ?? 16 * 1024 * 1024;
  const minRatio = opts.minGrowthRatio ?? 0.25;
  const footprint = opts.footprint ?? processFootprint;
  const quietMs = opts.quietMs ?? 2000;
  const lastRequestAt = opts.lastRequestAt ?? (() => 0);
  const busy = opts.busy ?? (() => false);
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
  // collections so far in the current run (0: none; the next quiet interval continues a run)
  let run = 0;
  let runStartedAt = 0;
  const grown = (before: number) => before - baseline >= Math.max(minGrowth, baseline * minRatio);
  const collect = (before: number) => {
    if (run === 0) runStartedAt = performance.now();
    const committedBefore = committed();
    const started = performance.now();
    const compacted = fits();
    gc(compacted);
    baseline = footprint();
    const gaveBack = Math.max(before - baseline, committedBefore - committed());
    const settling = performance.now() - runStartedAt < settleMs;
    run = (gaveBack >= followUpBytes || settling) && run + 1 < maxRun ? run + 1 : 0;
    opts.onCollect?.({ beforeBytes: before, afterBytes: baseline, ms: performance.now() - started, compacted });
    // the collection itself is not load: the next interval is measured from here
    if (!opts.utilization) last = performance.eventLoopUtilization();
  };
  const timer = setInterval(() => {
    if (utilization() >= idle) return;
    if (performance.now() - lastRequestAt() < quietMs) return;
    if (busy()) return;
    const before = footprint();
    if (run === 0 && !grown(before)) return;
    collect(before);
  }, intervalMs);
  timer.unref();
  let stopped = false;
  return {
    stop() {
      stopped = true;
      clearInterval(timer);
    },
    afterWork() {
      if (stopped) return;
      const before = footprint();
      if (grown(before)) collect(before);
    },
  };
}
