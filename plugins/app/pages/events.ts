/**
 * GET /app/events: the app's same-origin door to the event stream (GET /v1/events). A page's
 * EventSource carries only the session cookie, never a token in its URL; the stream is the
 * events operation of plugins/events run with the session's person, exactly as the API
 * route runs it for their token (filters, Last-Event-ID and `since` resume, heartbeats, the
 * bounded buffer per client, the per-token and per-tenant stream limits).
 *
 * The `event:` lines are left out on the way: the page listens with one `message` handler
 * (the event's JSON names its type), where named events would need a listener per type.
 */
import type { ServerResponse } from 'node:http';
import { Transform, pipeline } from 'node:stream';
import { errors } from '../../../kernel/errors.js';
import type { AppRequest, AppResult, Signed } from '../host.js';

/** Drops the `event:` field of every SSE frame; ids, data, comments and `retry:` pass unchanged. */
export function withoutEventNames(): Transform {
  let partial = '';
  return new Transform({
    // the stream's own buffer bounds memory; this keeps at most one incomplete line
    decodeStrings: true,
    transform(chunk: Buffer, _enc, done) {
      const text = partial + chunk.toString('utf8');
      const cut = text.lastIndexOf('\n');
      partial = cut === -1 ? text : text.slice(cut + 1);
      const whole = cut === -1 ? '' : text.slice(0, cut + 1);
      done(null, whole.replace(/^event:[^\n]*\n/gm, ''));
    },
    flush(done) {
      done(null, partial.startsWith('event:') ? '' : partial);
    },
  });
}

const FILTERS = ['types', 'project', 'node', 'assignee', 'since'] as const;

export async function streamEvents(req: AppRequest, s: Signed): Promise<AppResult> {
  const q = req.query;
  for (const key of q.keys()) if (!(FILTERS as readonly string[]).includes(key)) throw errors.badRequest(`unknown stream parameter ${key}`);
  const since = q.get('since');
  if (since !== null && !/^\d{1,15}$/.test(since)) throw errors.badRequest('since is an event id (a whole number)');
  const assignee = q.get('assignee');
  if (assignee !== null && assignee !== 'me') throw errors.badRequest('assignee is me');
  const types = q.get('types');
  const raw = await s.bridge.openEventStream(
    {
      since: since === null ? undefined : Number(since),
      types: types ? types.split(',') : undefined,
      project: q.get('project') ?? undefined,
      node: q.get('node') ?? undefined,
      assignee: assignee === 'me' ? 'me' : undefined,
    },
    req.headers['last-event-id'],
  );
  let response: ServerResponse | null = null;
  // a client cut for not reading (or a failed stream) is disconnected, not left open without a body
  const source = raw.readable!(() => response?.destroy());
  const out = withoutEventNames();
  // either side ending (the client left, the server stops) ends both and releases the stream's slot
  pipeline(source, out, (err) => {
    if (err) response?.destroy();
  });
  return {
    status: raw.status,
    type: raw.headers['content-type'],
    cache: raw.headers['cache-control'],
    headers: { 'x-accel-buffering': 'no' },
    body: out,
    attach: (res) => {
      response = res;
    },
  };
}
