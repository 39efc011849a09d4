/**
 * The events plugin's operations, each declared once: GET /v1/events (a Server-Sent Events
 * stream, or the `wait` JSON form) and the MCP tool `wait_for_events` (the JSON form).
 */
import { setMaxListeners } from 'node:events';
import { isLive } from '../../kernel/auth.js';
import { answer, defineOperation, NodeId, object, s } from '../../kernel/operation.js';
import { RawResponse } from '../../kernel/plugin.js';
import type { OpContext } from '../../kernel/plugin.js';
import type { Tenant } from '../../kernel/tenant.js';
import { missedBefore, selectionFor, startCursor, type EventQuery } from './select.js';
import { EventStream } from './sse.js';
import { acquireSlot, streamCounts } from './slots.js';
import { answerAfter, DEFAULT_LIMIT, MAX_LIMIT, MAX_WAIT_S } from './wait.js';

const EventActor = s.nullable(
  answer({
    person: s.stringOrNull(),
    agent: s.stringOrNull(),
    name: s.string(),
    via: s.string(),
  }),
);

/** One event (kernel/events/types.ts `WorkEvent`; the catalogue of types is docs/events.md). */
export const WorkEventSchema = answer(
  {
    id: s.integer('per tenant, strictly increasing; the resume cursor'),
    type: s.string('dotted type, e.g. node.created, lease.claimed'),
    time: s.string('ISO-8601 UTC'),
    org: s.string(),
    actor: EventActor,
    nodes: s.array(s.string(), 'the node ids the event is about, the main one first'),
    project: s.stringOrNull(),
    commit: s.string(),
    revision: s.string(),
    audience: s.const('admins'),
    payload: s.object('small, type-specific; links are relative paths'),
  },
  ['id', 'type', 'time', 'org', 'actor', 'nodes', 'project', 'payload'],
);

export const EventsAnswer = answer({
  events: s.array(WorkEventSchema),
  count: s.integer(),
  last_id: s.integer('pass as since on the next call'),
  more: s.boolean('limit reached: call again at once'),
});

/** a type or a prefix ending in .* (lease.*) */
const EventType = s.string('an event type, or a prefix ending in .* (lease.*)', {
  pattern: '^[a-z][a-z0-9_]*(\\.[a-z0-9_]+)*(\\.\\*)?$',
  maxLength: 100,
});

const queryProps = {
  since: s.integer("events after this id (an earlier answer's last_id, an event's id); omitted: from now", { minimum: 0 }),
  types: s.array(EventType, 'only these types (comma list)', { maxItems: 50 }),
  project: { ...NodeId, description: 'only events of this project' },
  node: { ...NodeId, description: 'only events about this node' },
  assignee: s.enum(['me'], 'me: events about the caller or a node assigned to the caller'),
  limit: s.integer(`events per answer, default ${DEFAULT_LIMIT}, max ${MAX_LIMIT} (larger values are clamped)`, { minimum: 1 }),
};

export const GetEventsInput = object({
  ...queryProps,
  wait: s.number(`JSON form: seconds to wait for a first matching event, default 0, max ${MAX_WAIT_S} (clamped)`, { minimum: 0 }),
});

export const getEvents = defineOperation({
  name: 'get_events',
  summary: "The tenant's events: a live Server-Sent Events stream, or JSON after a cursor",
  description:
    'With `Accept: text/event-stream`: a Server-Sent Events stream, each event as `id: <id>`, `event: <type>`, `data: <event JSON>`, first those after the cursor, then live ones; a comment line as heartbeat. The cursor is the `Last-Event-ID` header (a reconnect) or `since`; neither: from now. Events pruned after the cursor: an `event: gap` first. A client that does not keep up gets `event: overflow` with the id to resume from, and the stream ends. Otherwise JSON: the matching events after `since`, answered as soon as there is one or when `wait` seconds ran out (empty); `last_id` is the next `since`. A cursor before pruned events is 410 `events_pruned` (JSON); past the newest event 409 `cursor_ahead`. Too many open streams and waits for the token or the tenant: 429 `too_many_streams`.',
  input: GetEventsInput,
  output: EventsAnswer,
  produces: ['application/json', 'text/event-stream'],
  errors: [409, 410, 429],
  example: { since: 0, types: ['node.*', 'lease.taken_over'], assignee: 'me', wait: 30 },
  run: async (ctx, input) => {
    if (ctx.via === 'rest' && wantsEventStream(ctx.headers.accept)) return openEventStream(ctx, input);
    return answerAfter(ctx, input, 0);
  },
});

export const WaitForEventsInput = object({
  ...queryProps,
  wait: s.number(`seconds to wait, default 30, max ${MAX_WAIT_S}`, { minimum: 0 }),
});

export const waitForEvents = defineOperation({
  name: 'wait_for_events',
  summary: 'Waits for the next matching events after a cursor',
  description:
    'Wait for matching events (question routed to you, blocker done, claim taken): {events, last_id, more}; empty after wait s (30, max 60). Next: since=last_id. types: lease.* prefixes.',
  input: WaitForEventsInput,
  output: EventsAnswer,
  errors: [409, 410, 429],
  run: (ctx, input) => answerAfter(ctx, input, 30),
});

/**
 * Aborted when `tenant` closes in this process (cluster mode: a hand-off or a lost lease): its
 * streams end then rather than at their next heartbeat, so their clients reconnect to the new
 * owner with Last-Event-ID within the retry delay. One signal (and one close hook) per tenant.
 */
const tenantClosed = new WeakMap<Tenant, AbortSignal>();
function closedSignalOf(tenant: Tenant): AbortSignal {
  let signal = tenantClosed.get(tenant);
  if (!signal) {
    const controller = new AbortController();
    // every stream of the tenant listens to it: many listeners are expected, not a leak
    setMaxListeners(0, controller.signal);
    tenant.onClose(async () => controller.abort());
    signal = controller.signal;
    tenantClosed.set(tenant, signal);
  }
  return signal;
}

/** The caller's credential still holds and this process still serves the tenant. */
function streamMayGoOn(ctx: OpContext): boolean {
  const { tenant, actor, services } = ctx;
  if (services.tenants.get(tenant.org) !== tenant) return false;
  const now = services.clock.now();
  // connector JWTs are never stored: their record is the verified token itself, with its expiry
  if (actor.token.kind === 'connector-jwt') return isLive(actor.token, now);
  const record = tenant.tokens.find(actor.token.hash);
  return Boolean(record && isLive(record, now));
}

/** An explicit `text/event-stream` in Accept (EventSource sends exactly that). */
function wantsEventStream(accept: string | undefined): boolean {
  return Boolean(accept && /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept));
}

/**
 * The Server-Sent Events answer for `ctx`'s caller: the events after the `Last-Event-ID` header
 * of `ctx.headers` (else `query.since`, else now) that pass the query's filters. Throws the
 * coded errors of GET /v1/events (409 `cursor_ahead`, 422, 429 `too_many_streams`).
 */
export function openEventStream(ctx: OpContext, input: EventQuery): RawResponse {
  const sel = selectionFor(ctx, input);
  const cursor = startCursor(sel.log, input.since, ctx.headers['last-event-id']);
  const release = acquireSlot(ctx);
  const stream = new EventStream({
    sel,
    cursor,
    gap: missedBefore(sel.log, cursor) ? { since: cursor, first_id: sel.log.firstId } : null,
    config: ctx.services.config.events,
    stopSignal: ctx.services.stopSignal,
    endSignal: closedSignalOf(ctx.tenant),
    log: ctx.services.log,
    onClose: release,
    alive: () => streamMayGoOn(ctx),
    onCut: () => streamCounts(ctx.services).cut++,
    onBacklog: (bytes) => {
      const counts = streamCounts(ctx.services);
      if (bytes > counts.peakQueuedBytes) counts.peakQueuedBytes = bytes;
    },
  });
  return new RawResponse(
    200,
    {
      'content-type': 'text/event-stream; charset=utf-8',
      // not stored, not transformed, not buffered by a proxy in front (nginx honours x-accel-buffering)
      'cache-control': 'no-cache, no-store, no-transform',
      'x-accel-buffering': 'no',
    },
    null,
    (res) => stream.attach(res),
    true,
    (onCut) => stream.readable(onCut),
  );
}
