/**
 * The JSON form shared by GET /v1/events (without an event-stream Accept) and the MCP tool
 * `wait_for_events`: the matching events after a cursor, answered as soon as at least one
 * exists, or empty when the wait runs out. Both call `answerAfter`, so REST and MCP answer
 * the same bytes.
 */
import type { WorkEvent } from '../../kernel/events/types.js';
import type { OpContext } from '../../kernel/plugin.js';
import { missedBefore, prunedError, scan, selectionFor, startCursor, type EventQuery } from './select.js';
import { acquireSlot } from './slots.js';

export const MAX_WAIT_S = 60;
export const MAX_LIMIT = 500;
export const DEFAULT_LIMIT = 100;

export interface WaitInput extends EventQuery {
  wait?: number;
  limit?: number;
}

export interface WaitAnswer {
  events: WorkEvent[];
  count: number;
  /** the cursor for the next call (`since`): the last event returned, or how far the log was looked at */
  last_id: number;
  /** true when the answer stopped at `limit` (or its scan budget): call again at once */
  more: boolean;
}

export async function answerAfter(ctx: OpContext, input: WaitInput, defaultWaitS: number): Promise<WaitAnswer> {
  const sel = selectionFor(ctx, input);
  const cursor = startCursor(sel.log, input.since);
  if (missedBefore(sel.log, cursor)) throw prunedError(sel.log, cursor);
  const limit = Math.min(Math.max(Math.trunc(input.limit ?? DEFAULT_LIMIT), 1), MAX_LIMIT);
  const waitMs = Math.min(Math.max(input.wait ?? defaultWaitS, 0), MAX_WAIT_S) * 1000;

  let result = await scan(sel, cursor, limit);
  if (result.events.length > 0 || result.more || waitMs === 0) return answerOf(result, cursor);

  const release = acquireSlot(ctx);
  // woken by the log's listener (synchronous, in id order) as soon as a matching event is appended
  let wake: (() => void) | null = null;
  let woken = false;
  const unsubscribe = sel.log.subscribe((event) => {
    if (event.id > cursor && sel.matches(event)) {
      woken = true;
      wake?.();
    }
  });
  const done = new AbortController();
  const stop = () => done.abort();
  ctx.signal?.addEventListener('abort', stop, { once: true });
  ctx.services.stopSignal.addEventListener('abort', stop, { once: true });
  const timer = setTimeout(stop, waitMs);
  try {
    // subscribed before this second look: an event appended after the first scan wakes us or is found now
    let after = result.scannedTo;
    result = await scan(sel, after, limit);
    while (result.events.length === 0 && !result.more && !done.signal.aborted && !ctx.services.stopSignal.aborted) {
      after = result.scannedTo;
      if (!woken) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          done.signal.addEventListener('abort', () => resolve(), { once: true });
        });
        wake = null;
      }
      woken = false;
      const next = await scan(sel, after, limit);
      result = { ...next, scannedTo: Math.max(next.scannedTo, after) };
    }
    return answerOf(result, cursor);
  } finally {
    clearTimeout(timer);
    unsubscribe();
    ctx.signal?.removeEventListener('abort', stop);
    ctx.services.stopSignal.removeEventListener('abort', stop);
    release();
  }
}

function answerOf(result: { events: WorkEvent[]; scannedTo: number; more: boolean }, cursor: number): WaitAnswer {
  // everything up to scannedTo was considered (it is the last event returned when `more`)
  return { events: result.events, count: result.events.length, last_id: Math.max(result.scannedTo, cursor), more: result.more };
}
