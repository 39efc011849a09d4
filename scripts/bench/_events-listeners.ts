/**
 * The receiving side of the events benchmark (scripts/bench/events.ts), run as its own child
 * process so the work of reading 200 streams and answering webhook POSTs does not slow the
 * writers whose rate is measured (the writers' process is the same with and without them).
 * Not a benchmark itself (the leading `_`; see scripts/bench/lib.ts).
 *
 * Driven over the IPC channel by the parent: it starts local webhook receivers (they answer 204
 * at once), opens SSE streams on GET /v1/events with the `eventsource` package, and records,
 * per node revision, when each stream and each receiver got the event carrying it. Times are
 * wall-clock milliseconds with sub-millisecond resolution (`performance.timeOrigin +
 * performance.now()`), the same clock the parent stamps its writes with: both processes run on
 * this machine.
 */
import { createServer, type Server } from 'node:http';
import { performance } from 'node:perf_hooks';
import { EventSource } from 'eventsource';

export type ParentMessage =
  | { cmd: 'hooks'; n: number }
  | { cmd: 'streams'; url: string; token: string; n: number }
  | { cmd: 'await'; revisions: string[]; timeoutMs: number }
  | { cmd: 'detach' }
  | { cmd: 'stop' };

/** Per revision: the receipt times at the streams and at the webhook receivers. */
export type Receipts = Record<string, { stream: number[]; hook: number[] }>;

export type ChildMessage =
  | { ok: 'hooks'; urls: string[] }
  | { ok: 'streams'; open: number }
  | { ok: 'await'; receipts: Receipts; complete: boolean; cut: number; hookBad: number }
  | { ok: 'detach' }
  | { error: string };

export function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

const receipts = new Map<string, { stream: number[]; hook: number[] }>();
let servers: Server[] = [];
let streams: EventSource[] = [];
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

async function openStreams(url: string, token: string, n: number): Promise<number> {
  const opened: Array<Promise<void>> = [];
  for (let i = 0; i < n; i++) {
    const es = new EventSource(`${url}/v1/events`, {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, authorization: `Bearer ${token}` } }),
    });
    streams.push(es);
    // node updates are the events the writers make; the revision ties them to a write
    es.addEventListener('node.updated', (e) => {
      const t = wallMs();
      try {
        record((JSON.parse(e.data) as { revision?: unknown }).revision, 'stream', t);
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
  return streams.length;
}

/** Resolves once every revision reached every stream and every receiver (or at the timeout). */
async function awaitAll(revisions: string[], timeoutMs: number): Promise<{ receipts: Receipts; complete: boolean }> {
  const deadline = wallMs() + timeoutMs;
  const done = (): boolean =>
    revisions.every((r) => {
      const got = receipts.get(r);
      return (got?.stream.length ?? 0) >= streams.length && (got?.hook.length ?? 0) >= servers.length;
    });
  let complete = done();
  while (!complete && wallMs() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    complete = done();
  }
  const out: Receipts = {};
  for (const r of revisions) out[r] = receipts.get(r) ?? { stream: [], hook: [] };
  for (const r of revisions) receipts.delete(r);
  return { receipts: out, complete };
}

async function detach(): Promise<void> {
  for (const es of streams) es.close();
  streams = [];
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
        send({ ok: 'streams', open: await openStreams(m.url, m.token, m.n) });
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
