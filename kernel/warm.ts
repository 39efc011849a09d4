/**
 * Warm-ups: work a plugin would rather do before a request needs it (a tenant's ranked queue, its
 * analytics timelines, the commit index) but that no request may wait for. Each such cache is
 * built on first use anyway; a warm-up only makes that use cheap. Tasks queued while the kernel
 * starts run once it has been up WARM_DELAY_MS (so a restarted server answers its first reads
 * before a 100k-node tenant's aggregates take the event loop), one at a time in the order
 * queued, each on an event-loop turn of its own: a task that returns a promise holds the next
 * until it settles. A task queued later (a tenant opened at run time) runs on the next turn
 * after the one in progress. A failed task is logged and dropped (the cache is built on first
 * use instead). `busy` says whether a task is still queued or in progress.
 *
 * `afterEach` is told when a task has settled (the serving process collects the garbage a task
 * left there, kernel/idle-gc.ts, before the next task piles more on: with all four of a
 * 100,000-node tenant's warm-ups run together the process peaked at 486 MB against 263 MB
 * once collected; one at a time, each collected after it, at 360 MB).
 */
import type { Logger } from './config.js';

export const WARM_DELAY_MS = 1000;
/** the longest a task in progress holds the ones after it */
export const WARM_HOLD_MS = 60_000;

export class Warmer {
  private readonly tasks: Array<{ name: string; run: () => unknown }> = [];
  private timer: NodeJS.Timeout | null = null;
  private started = false;
  private stopped = false;
  /** a task is in progress (its promise has not settled) */
  private running = false;

  constructor(
    private readonly log: Logger,
    private readonly afterEach?: (name: string) => void,
    private readonly holdMs = WARM_HOLD_MS,
  ) {}

  /** Queues `run` (named in a failure's log line). */
  add(name: string, run: () => unknown): void {
    if (this.stopped) return;
    this.tasks.push({ name, run });
    if (this.started && !this.running) this.schedule(0);
  }

  /** Starts running the queue after `delayMs`. */
  start(delayMs = WARM_DELAY_MS): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.schedule(delayMs);
  }

  stop(): void {
    this.stopped = true;
    this.tasks.length = 0;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Tasks not yet run. */
  get pending(): number {
    return this.tasks.length;
  }

  /** A task is queued, or one is in progress. */
  get busy(): boolean {
    return !this.stopped && (this.tasks.length > 0 || this.running);
  }

  private schedule(delayMs: number): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => this.next(), delayMs);
    this.timer.unref();
  }

  private next(): void {
    this.timer = null;
    const task = this.tasks.shift();
    if (!task) return;
    const failed = (err: unknown) =>
      this.log.warn('warm-up failed; built on first use instead', {
        task: task.name,
        error: err instanceof Error ? err.message : String(err),
      });
    let result: unknown;
    try {
      result = task.run();
    } catch (err) {
      failed(err);
    }
    if (!(result instanceof Promise)) return this.settled(task.name);
    this.running = true;
    // a task that never settles (a store that hangs) holds the rest at most WARM_HOLD_MS
    let over = false;
    const release = () => {
      if (over) return;
      over = true;
      clearTimeout(guard);
      this.running = false;
      this.settled(task.name);
    };
    const guard = setTimeout(release, this.holdMs);
    guard.unref();
    result.catch(failed).finally(release);
  }

  /** A task is over: tell afterEach, then go on with the next. */
  private settled(name: string): void {
    if (this.stopped) return;
    try {
      this.afterEach?.(name);
    } catch (err) {
      this.log.warn('after a warm-up: failed', { task: name, error: err instanceof Error ? err.message : String(err) });
    }
    if (this.tasks.length > 0) this.schedule(0);
  }
}
