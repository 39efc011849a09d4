/**
 * The receiving side of the events benchmark (scripts/bench/events.ts), run as its own child
 * process so the work of reading 200 streams and answering webhook POSTs does not slow the
 * writers whose rate is measured (the writers' process is the same with and without them).
 * Not a benchmark itself (the leading `_`; see scripts/bench/lib.ts).
 *
 * Driven over the IPC channel by the parent: it starts local webhook receivers (they answer 204
 * at once), opens SSE streams on GET /v1/events, and records, per node revision, when each
 * timed stream and each receiver got the event carrying it.
 *
 * Streams come in two kinds. A few (`full`, default 10) are `eventsource` clients that parse
 * every event: they give the latency figures. The rest are light readers: plain HTTP requests
 * that take the bytes and look only for the last complete `id:` line and an `overflow` event,
 * so they hold a real open stream (the server does all its per-stream work for them) without
 * 200 full parsers competing with the server for this machine's 2 cores; a separate client
 * fleet would not. A light reader counts as complete once its last id reaches the newest event
 * id the timed clients saw for the block. Times are
 * wall-clock milliseconds with sub-millisecond resolution (`performance.timeOrigin +
 * performance.now()`), the same clock the parent stamps its writes with: both processes run on
 * this machine.
 */
import { createServer, request, type ClientRequest, type Server } from 'node:http';
import { performance } from 'node:perf_hooks';
import { EventSource } from 'eventsource';

export type ParentMessage =
  | { cmd: 'hooks'; n: number }
  | { cmd: 'streams'; url: string; token: string; n: number; full: number }
  | { cmd: 'await'; revisions: string[]; timeoutMs: number }
  | { cmd: 'detach' }
  | { cmd: 'stop' };

/** Per revision: the receipt times at the streams and at the webhook receivers. */
export type Receipts = Record<string, { stream: number[]; hook: number[] }>;

export type ChildMessage =
  | { ok: 'hooks'; urls: string[] }
  | { ok: 'streams'; open: number }
  | { ok: 'await'; receipts: Receipts; complete: boolean; cut: number; hookBad: number; lightBehind: number; lightBytes: number }
  | { ok: 'detach' }
  | { error: string };

export function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

const receipts = new Map<string, { stream: number[]; hook: number[] }>();
let servers: Server[] = [];
let streams: EventSource[] = [];
/** the light readers: the last complete event id each has read */
let light: Array<{ req: ClientRequest; lastId: number; bytes: number; closed: boolean }> = [];
/** event id by revision, as the timed clients saw it (to know when light readers are complete) */
const idByRevision = new Map<string, number>();

/** streams the server cut (`overflow`) or that errored: reported, so a drop is never silent */
let cut = 0;
/** webhook bodies that were not a node event (pings, admin events): counted, not timed */
let hookBad = 0;

function record(revision: unknown, kind: 'stream' | 'hook', t: number): void {
  if (typeof revision !== 'string') return;
  let r = receipts.get(revision);
  if (!r) receipts.set(revision, (r = { stream: [], hook: [] }));
  r[kind].push(t);
}

function send(m: ChildMessage): void {
  process.send?.(m);
}

async function startHooks(n: number): Promise<string[]> {
  const urls: string[] = [];
  for (let i = 0; i < n; i++) {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const t = wallMs();
        // answer first, as a well-behaved receiver does; parse after
        res.statusCode = 204;
        res.end();
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: { revision?: unknown } };
          if (typeof body.data?.revision === 'string') record(body.data.revision, 'hook', t);
          else hookBad++;
        } catch {
          hookBad++;
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const addr = server.address();
    if (!addr || typeof addr === 'string') throw new Error('receiver has no port');
    servers.push(server);
    urls.push(`http://127.0.0.1:${addr.port}/hook/${i}`);
  }
  return urls;
}

/** One light reader: a raw GET /v1/events that keeps only the last complete `id:` line's number. */
function openLight(url: string, token: string, i: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    // the tail of the previous chunk, so an `id:` line split across chunks is still seen
    let carry = '';
    const req = request(`${url}/v1/events`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return reject(new Error(`light stream ${i}: ${res.statusCode}`));
      }
      resolve();
      res.on('data', (chunk: Buffer) => {
        r.bytes += chunk.length;
        const text = carry + chunk.toString('latin1');
        let end = text.length;
        for (;;) {
          const at = text.lastIndexOf('\nid: ', end - 1);
          if (at < 0) break;
          const eol = text.indexOf('\n', at + 5);
          if (eol >= 0 && eol < text.length) {
            const id = Number(text.slice(at + 5, eol));
            if (id > r.lastId) r.lastId = id;
            break;
          }
          end = at;
        }
        if (text.includes('event: overflow')) cut++;
        carry = text.slice(-40);
      });
      // an end or error we did not cause (detach sets `closed` first) is a cut stream
      res.on('end', () => {
        if (!r.closed) cut++;
      });
      res.on('error', () => {
        if (!r.closed) cut++;
      });
    });
    const r = { req, lastId: 0, bytes: 0, closed: false };
    req.on('error', (err) => {
      if (!r.closed) cut++;
      reject(err);
    });
    req.end();
    light.push(r);
  });
}

async function openStreams(url: string, token: string, n: number, full: number): Promise<number> {
  const opened: Array<Promise<void>> = [];
  for (let i = full; i < n; i++) opened.push(openLight(url, token, i));
  for (let i = 0; i < Math.min(full, n); i++) {
    const es = new EventSource(`${url}/v1/events`, {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, authorization: `Bearer ${token}` } }),
    });
    streams.push(es);
    // node updates are the events the writers make; the revision ties them to a write
    es.addEventListener('node.updated', (e) => {
      const t = wallMs();
      try {
        const revision = (JSON.parse(e.data) as { revision?: unknown }).revision;
        record(revision, 'stream', t);
        if (typeof revision === 'string') idByRevision.set(revision, Number(e.lastEventId));
      } catch {
        cut++;
      }
    });
    es.addEventListener('overflow', () => cut++);
    opened.push(
      new Promise<void>((resolve, reject) => {
        es.addEventListener('open', () => resolve(), { once: true });
        es.addEventListener('error', (e) => reject(new Error(`stream ${i} failed to open: ${e.message ?? 'error'}`)), { once: true });
      }),
    );
  }
  await Promise.all(opened);
  for (const es of streams) es.addEventListener('error', () => cut++);
  return streams.length + light.length;
}

/** Resolves once every revision reached every stream and every receiver (or at the timeout). */
async function awaitAll(
  revisions: string[],
  timeoutMs: number,
): Promise<{ receipts: Receipts; complete: boolean; lightBehind: number; lightBytes: number }> {
  const deadline = wallMs() + timeoutMs;
  const newest = (): number => Math.max(0, ...revisions.map((r) => idByRevision.get(r) ?? 0));
  const behind = (): number => {
    const top = newest();
    return top === 0 ? light.length : light.filter((l) => l.lastId < top).length;
  };
  const done = (): boolean =>
    revisions.every((r) => {
      const got = receipts.get(r);
      return (got?.stream.length ?? 0) >= streams.length && (got?.hook.length ?? 0) >= servers.length;
    }) && behind() === 0;
  let complete = done();
  while (!complete && wallMs() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    complete = done();
  }
  const out: Receipts = {};
  for (const r of revisions) out[r] = receipts.get(r) ?? { stream: [], hook: [] };
  for (const r of revisions) receipts.delete(r);
  const lightBehind = behind();
  const lightBytes = light.reduce((n, l) => n + l.bytes, 0);
  for (const l of light) l.bytes = 0;
  return { receipts: out, complete, lightBehind, lightBytes };
}

async function detach(): Promise<void> {
  for (const es of streams) es.close();
  streams = [];
  for (const l of light) {
    l.closed = true;
    l.req.destroy();
  }
  light = [];
  idByRevision.clear();
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  for (const s of servers) s.closeAllConnections();
  servers = [];
  receipts.clear();
  cut = 0;
  hookBad = 0;
}

process.on('message', (m: ParentMessage) => {
  const run = async (): Promise<void> => {
    switch (m.cmd) {
      case 'hooks':
        send({ ok: 'hooks', urls: await startHooks(m.n) });
        return;
      case 'streams':
        send({ ok: 'streams', open: await openStreams(m.url, m.token, m.n, m.full) });
        return;
      case 'await': {
        const r = await awaitAll(m.revisions, m.timeoutMs);
        send({ ok: 'await', ...r, cut, hookBad });
        return;
      }
      case 'detach':
        await detach();
        send({ ok: 'detach' });
        return;
      case 'stop':
        await detach();
        process.exit(0);
    }
  };
  run().catch((err: unknown) => send({ error: err instanceof Error ? (err.stack ?? err.message) : String(err) }));
});
// the parent died: do not linger
process.on('disconnect', () => process.exit(0));
