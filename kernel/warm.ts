/**
 * Warm-ups: work a plugin would rather do before a request needs it (a tenant's ranked queue, its
 * analytics timelines, the commit index) but that no request may wait for. Each such cache is
 * built on first use anyway; a warm-up only makes that use cheap. Tasks queued while the kernel
 * starts run once it has been up WARM_DELAY_MS (so a restarted server answers its first reads
 * before a 100k-node tenant's aggregates take the event loop), one task per event-loop turn,
 * in the order queued; a task queued later (a tenant opened at run time) runs on the next turn.
 * A failed task is logged and dropped (the cache is built on first use instead).
 */
import type { Logger } from './config.js';

export const WARM_DELAY_MS = 1000;

export class Warmer {
  private readonly tasks: Array<{ name: string; run: () => unknown }> = [];
  private timer: NodeJS.Timeout | null = null;
  private started = false;
  private stopped = false;

  constructor(private readonly log: Logger) {}

  /** Queues `run` (named in a failure's log line). */
  add(name: string, run: () => unknown): void {
    if (this.stopped) return;
    this.tasks.push({ name, run });
    if (this.started) this.schedule(0);
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
    try {
      const result = task.run();
      if (result instanceof Promise) result.catch(failed);
    } catch (err) {
      failed(err);
    }
    if (this.tasks.length > 0) this.schedule(0);
  }
}
