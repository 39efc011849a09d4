/**
 * One Server-Sent Events stream of GET /v1/events: the events after a cursor from the log
 * (catch-up), then live ones as they are appended, each as `id`, `event` (its type) and `data`
 * (the event as JSON); a comment line as heartbeat.
 *
 * Memory per client is bounded: events wait in this stream's own queue only while the socket
 * does not take them (backpressure reaches here through the response and the Readable's
 * buffer); a queue beyond `bufferEvents` or `bufferBytes` cuts the client with a final
 * `overflow` event carrying the id to resume from, and a client that does not take even that
 * within `cutGraceMs` is disconnected. Catch-up reads the log a page at a time and only when
 * the queue is empty, so resuming from far back never loads more than a page.
 */
import type { ServerResponse } from 'node:http';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import type { EventStreamConfig, Logger } from '../../kernel/config.js';
import type { WorkEvent } from '../../kernel/events/types.js';
import { PAGE, type Selection } from './select.js';

/** what EventSource clients wait before reconnecting (ms): longer than a graceful stop's quiet period */
export const RETRY_MS = 3000;
/** a client that takes nothing for this long while it catches up is cut like an overflowing one */
const STALL_MS = 30_000;

export interface StreamOptions {
  sel: Selection;
  /** the id after which events are sent */
  cursor: number;
  /** events after the cursor were pruned: say so first, then continue from the oldest retained */
  gap: { since: number; first_id: number } | null;
  config: EventStreamConfig;
  stopSignal: AbortSignal;
  /** aborted when the tenant closes in this process (cluster hand-off, lost lease): the stream ends at once, the reconnect reaches the new owner */
  endSignal?: AbortSignal;
  log: Logger;
  /** called once when the stream is gone (its slot is released) */
  onClose: () => void;
  /** called when the client is cut for not reading */
  onCut: () => void;
  /** called with the queue's size in bytes after each event queued while it waits */
  onBacklog: (bytes: number) => void;
  /**
   * Asked at each heartbeat: false when the caller's token was revoked or expired, or this
   * process no longer serves the tenant (cluster fail-over): the stream ends, and the client's
   * reconnect is refused (401) or reaches the new owner.
   */
  alive: () => boolean;
}

interface Queued {
  id: number | null;
  chunk: Buffer;
  /** the same frame with its HTTP/1.1 chunk framing, shared by every stream (events only) */
  framed?: Buffer;
}

/** Where a stream's bytes go: the response's socket, or a Readable for an in-process consumer. */
interface Target {
  out: Writable;
  /** each write is one chunk of the response's chunked encoding */
  framing: boolean;
  /** after the last bytes: the response ends */
  end(): void;
  /** disconnects at once */
  cut(): void;
  /** the end reached the client */
  finished(): boolean;
}

const CRLF = Buffer.from('\r\n');

/** `bytes` as one HTTP/1.1 chunk: its size in hex, CRLF, the bytes, CRLF. */
function chunked(bytes: Buffer): Buffer {
  const head = Buffer.from(`${bytes.length.toString(16)}\r\n`);
  return Buffer.concat([head, bytes, CRLF], head.length + bytes.length + 2);
}

/**
 * Frames by event, encoded to bytes once: the log hands every listener the same object, so 200
 * streams share one Buffer (and one chunk-framed Buffer; pushing a string would UTF-8 encode it
 * again for every stream).
 */
const frames = new WeakMap<WorkEvent, { chunk: Buffer; framed: Buffer }>();

function framesOf(event: WorkEvent): { chunk: Buffer; framed: Buffer } {
  let f = frames.get(event);
  if (f === undefined) {
    // JSON.stringify never emits a raw newline, so the data is one `data:` line
    const chunk = Buffer.from(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    f = { chunk, framed: chunked(chunk) };
    frames.set(event, f);
  }
  return f;
}

export function frame(event: WorkEvent): Buffer {
  return framesOf(event).chunk;
}

/**
 * Most bytes one flush writes at once (coalesced frames), and the queue at which enqueue
 * flushes at once instead of waiting for the shared flush: a big burst in one turn (a batch
 * commit's events) goes out as before rather than piling up against the buffer limits.
 */
const COALESCE_BYTES = 16 * 1024;
const COALESCE_EVENTS = 32;

/**
 * Streams with queued bytes, flushed together once the current turn (the log's append and its
 * synchronous fan-out) is over: the events of one append, or of appends in the same turn, leave
 * in one socket write per stream, and the appending write does not pay for 200 socket writes
 * before it answers. One shared immediate, not a timer or closure per stream and event.
 *
 * While events keep coming, the flushes are at least FLUSH_WINDOW_MS apart: an event after a
 * quiet spell leaves at once, and the events of a busy spell leave in one write per stream and
 * window instead of one per commit (every socket write costs the server 15-20 µs of CPU a stream,
 * most of it in the kernel). The window adds at most its length to an event's way out.
 */
export const FLUSH_WINDOW_MS = 20;
const dirty = new Set<EventStream>();
let flushScheduled = false;
let lastFlush = -Infinity;
function flushDirty(): void {
  flushScheduled = false;
  lastFlush = performance.now();
  const streams = [...dirty];
  dirty.clear();
  for (const s of streams) s.flushNow();
}
function scheduleFlush(stream: EventStream): void {
  dirty.add(stream);
  if (flushScheduled) return;
  flushScheduled = true;
  const wait = lastFlush + FLUSH_WINDOW_MS - performance.now();
  if (wait <= 0) setImmediate(flushDirty);
  else setTimeout(flushDirty, wait);
}

/**
 * The stream writes to the response's socket itself, each flush one `socket.write` of bytes
 * framed once (a chunk of the response's chunked encoding, or raw for an HTTP/1.0 client):
 * through a Readable piped into the response, every frame and stream also went through the
 * Readable's buffer, the pipe, the response's chunk framing and a cork per write, which cost
 * more CPU than the socket write itself (docs/performance.md, "Events, round three").
 * Backpressure is the socket's: a write that fills its buffer stops the flushing until `drain`.
 */
export class EventStream {
  private queue: Queued[] = [];
  private queuedBytes = 0;
  /** the id of the newest event handed to the socket: what a cut client resumes from */
  private pushedId: number;
  /** the id of the newest event queued (dedupes catch-up against live events) */
  private cursor: number;
  private live = false;
  /** matching live events that arrive while catching up (bounded; dropped ones are read again) */
  private pending: WorkEvent[] = [];
  private pendingDropped = false;
  /** attached, headers sent, and the socket takes more */
  private wanting = false;
  private roomWaiter: (() => void) | null = null;
  /** finish() ran: nothing more is queued */
  private ended = false;
  /** the response is gone (or never came): nothing more is written */
  private destroyed = false;
  private target: Target | null = null;
  /** finish() ran before the stream was attached: end the response once attached */
  private endOnAttach = false;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly unsubscribe: () => void;
  private readonly onStop = () => this.finish('stop');
  private readonly onDrain = () => {
    this.wanting = true;
    this.flush();
  };

  constructor(private readonly o: StreamOptions) {
    this.cursor = this.pushedId = o.cursor;
    this.unsubscribe = o.sel.log.subscribe((event) => this.onLive(event));
    // the first bytes go out at once, so the client sees the stream open (and its headers)
    this.enqueue(null, `retry: ${RETRY_MS}\n: events after ${o.cursor}\n\n`);
    if (o.gap) {
      // the gap moves the client's cursor past what was pruned, so a reconnect does not report it again
      const resume = o.gap.first_id - 1;
      this.cursor = resume;
      this.enqueue(resume, `id: ${resume}\nevent: gap\ndata: ${JSON.stringify({ ...o.gap, resume_id: resume })}\n\n`);
    }
    this.heartbeat = setInterval(() => {
      if (!o.alive()) return this.finish('stop');
      if (this.queue.length === 0) this.enqueue(null, ': heartbeat\n\n');
    }, o.config.heartbeatMs);
    this.heartbeat.unref();
    if (o.stopSignal.aborted) queueMicrotask(this.onStop);
    else o.stopSignal.addEventListener('abort', this.onStop, { once: true });
    if (o.endSignal?.aborted) queueMicrotask(this.onStop);
    else o.endSignal?.addEventListener('abort', this.onStop, { once: true });
    void this.catchUp();
  }

  /**
   * The response this stream writes: its status and headers are set, and nothing else will
   * write it (the kernel leaves it to us). Sends the headers and starts flushing.
   */
  attach(res: ServerResponse): void {
    res.once('close', () => this.close());
    const socket = res.socket;
    if (this.destroyed || res.destroyed || !socket || socket.destroyed) return this.close();
    // HEAD: the headers alone (res.end sends no body for it; its close releases the stream)
    if (res.req.method === 'HEAD') return void res.end();
    res.flushHeaders();
    this.start({
      out: socket,
      framing: res.chunkedEncoding,
      end: () => res.end(),
      cut: () => res.destroy(),
      finished: () => res.writableFinished,
    });
  }

  /**
   * The stream's bytes as a Readable (no chunk framing), for an in-process consumer that
   * passes them on (the app's same-origin stream); `onCut` disconnects its client.
   */
  readable(onCut: () => void): Readable {
    const pass = new PassThrough({ highWaterMark: 16 * 1024 });
    pass.once('close', () => this.close());
    this.start({
      out: pass,
      framing: false,
      end: () => pass.end(),
      cut: () => {
        pass.destroy();
        onCut();
      },
      finished: () => pass.readableEnded,
    });
    return pass;
  }

  private start(target: Target): void {
    this.target = target;
    target.out.on('drain', this.onDrain);
    this.wanting = true;
    this.flush();
    if (this.endOnAttach) this.end();
  }

  /** bytes and events waiting in the queue (tests: bounded by the configured buffer) */
  get backlog(): { events: number; bytes: number } {
    return { events: this.queue.length, bytes: this.queuedBytes };
  }

  /** the shared flush (scheduleFlush): writes the queue if the socket takes it */
  flushNow(): void {
    if (this.wanting) this.flush();
  }

  /** The response is gone: the client left, or the stream ended and its last bytes went out. */
  private close(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.wanting = false;
    this.target?.out.off('drain', this.onDrain);
    clearInterval(this.heartbeat);
    this.unsubscribe();
    dirty.delete(this);
    this.o.stopSignal.removeEventListener('abort', this.onStop);
    this.o.endSignal?.removeEventListener('abort', this.onStop);
    this.queue = [];
    this.queuedBytes = 0;
    this.pending = [];
    this.roomWaiter?.();
    this.roomWaiter = null;
    this.o.onClose();
  }

  private enqueue(id: number | null, data: string | Buffer, framed?: Buffer): void {
    if (this.ended || this.destroyed) return;
    const chunk = typeof data === 'string' ? Buffer.from(data) : data;
    this.queue.push(framed ? { id, chunk, framed } : { id, chunk });
    this.queuedBytes += chunk.length;
    if (this.wanting) {
      if (this.queuedBytes >= COALESCE_BYTES || this.queue.length >= COALESCE_EVENTS) this.flush();
      else scheduleFlush(this);
    }
    if (this.queuedBytes > 0) this.o.onBacklog(this.queuedBytes);
    // live events are pushed at us: too many waiting means a client that does not read (catch-up
    // instead waits for room before its next page, so its queue is one page at most)
    if (this.live && (this.queue.length > this.o.config.bufferEvents || this.queuedBytes > this.o.config.bufferBytes))
      this.finish('overflow');
  }

  /** One socket write: `bytes` framed as a chunk when the response is chunked. */
  private write(bytes: Buffer, framed?: Buffer): boolean {
    const target = this.target!;
    return target.out.write(target.framing ? (framed ?? chunked(bytes)) : bytes);
  }

  private flush(): void {
    while (this.queue.length > 0 && this.wanting && !this.destroyed) {
      // coalesce queued frames into one socket write up to COALESCE_BYTES
      let n = 0;
      let bytes = 0;
      for (const item of this.queue) {
        if (n > 0 && bytes + item.chunk.length > COALESCE_BYTES) break;
        bytes += item.chunk.length;
        n++;
        if (item.id !== null) this.pushedId = item.id;
      }
      const items = this.queue.splice(0, n);
      this.queuedBytes -= bytes;
      const first = items[0];
      this.wanting =
        n === 1 && first
          ? this.write(first.chunk, first.framed)
          : this.write(
              Buffer.concat(
                items.map((q) => q.chunk),
                bytes,
              ),
            );
    }
    if (this.queue.length === 0 && this.roomWaiter) {
      const wake = this.roomWaiter;
      this.roomWaiter = null;
      wake();
    }
  }

  /** Resolves once the queue is empty (the client took what was sent); false when the stream ended or stalled. */
  private room(): Promise<boolean> {
    if (this.ended || this.destroyed) return Promise.resolve(false);
    if (this.queue.length === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const stalled = setTimeout(() => {
        this.roomWaiter = null;
        this.finish('overflow');
        resolve(false);
      }, STALL_MS);
      stalled.unref();
      this.roomWaiter = () => {
        clearTimeout(stalled);
        resolve(!this.ended && !this.destroyed);
      };
    });
  }

  private enqueueEvent(event: WorkEvent): void {
    if (event.id <= this.cursor) return;
    this.cursor = event.id;
    const f = framesOf(event);
    this.enqueue(event.id, f.chunk, f.framed);
  }

  private onLive(event: WorkEvent): void {
    if (this.ended || this.destroyed || !this.o.sel.matches(event)) return;
    if (this.live) return this.enqueueEvent(event);
    if (this.pending.length >= this.o.config.bufferEvents) {
      // catch-up is far behind: drop the buffered ones, the next page reads them from the log
      this.pending = [];
      this.pendingDropped = true;
    }
    this.pending.push(event);
  }

  private async catchUp(): Promise<void> {
    const { sel } = this.o;
    let after = this.cursor;
    try {
      for (;;) {
        const page = await sel.log.read(after, sel.filter, PAGE);
        if (this.ended || this.destroyed) return;
        for (const event of page) {
          after = event.id;
          if (sel.accepts(event)) this.enqueueEvent(event);
        }
        if (!(await this.room())) return;
        if (page.length === PAGE) continue;
        if (this.pendingDropped) {
          this.pendingDropped = false;
          this.pending = [];
          continue;
        }
        break;
      }
      this.live = true;
      const pending = this.pending;
      this.pending = [];
      for (const event of pending) this.enqueueEvent(event);
    } catch (err) {
      this.o.log.error('event stream: reading the log failed', { error: err instanceof Error ? err.message : String(err) });
      // the response is cut (not ended): the client sees the failure and reconnects with its last id
      this.target?.cut();
      this.close();
    }
  }

  /**
   * Ends the stream. 'stop' (the server stops, the token is gone, the tenant moved): what is
   * queued goes out, then the end; the client reconnects with its last id. 'overflow': the queue is dropped and a final `overflow`
   * event names the id to resume from (the client's EventSource reconnects from it by itself).
   */
  private finish(why: 'stop' | 'overflow'): void {
    if (this.ended || this.destroyed) return;
    let tail: Buffer;
    if (why === 'overflow') {
      this.o.onCut();
      const resume = this.pushedId;
      tail = Buffer.from(
        `id: ${resume}\nevent: overflow\ndata: ${JSON.stringify({ resume_id: resume, reason: 'the client did not keep up; reconnect with this id' })}\n\n`,
      );
    } else {
      tail = Buffer.concat([
        ...this.queue.map((q) => q.chunk),
        Buffer.from(': stream ended by the server; reconnect with your last event id\n\n'),
      ]);
    }
    this.queue = [];
    this.queuedBytes = 0;
    this.ended = true;
    clearInterval(this.heartbeat);
    this.unsubscribe();
    dirty.delete(this);
    this.roomWaiter?.();
    this.roomWaiter = null;
    this.queue.push({ id: null, chunk: tail });
    if (this.target) this.end();
    else this.endOnAttach = true;
  }

  /** Writes the tail (whatever the socket's buffer holds), ends the response, and disconnects a client that does not take it in time. */
  private end(): void {
    const target = this.target!;
    const tail = this.queue.shift();
    this.queue = [];
    if (tail && !this.destroyed) this.write(tail.chunk);
    target.end();
    // a client that does not take its last bytes in time is disconnected (its socket and buffers freed)
    const cut = setTimeout(() => {
      if (!target.finished() || !this.destroyed) target.cut();
    }, this.o.config.cutGraceMs);
    cut.unref();
  }
}
