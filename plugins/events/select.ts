/**
 * Which events a caller sees and how a cursor moves: the one selection both ways out of this
 * plugin use (the SSE stream and the `wait` JSON of GET /v1/events, the MCP tool
 * `wait_for_events`), over the tenant's event log (kernel/events/types.ts).
 */
import { errors, SvcError } from '../../kernel/errors.js';
import { matchesFilter, type EventFilter, type EventLog, type WorkEvent } from '../../kernel/events/types.js';
import type { OpContext } from '../../kernel/plugin.js';

/** What a caller asks for (the shared input of the route and the tool). */
export interface EventQuery {
  since?: number;
  types?: string[];
  project?: string;
  node?: string;
  assignee?: 'me';
}

/** A caller's view of the log: the log's own filter plus the checks it cannot make (assignee). */
export interface Selection {
  log: EventLog;
  filter: EventFilter;
  /** true when a log-filtered event is for this caller (the assignee check) */
  accepts(event: WorkEvent): boolean;
  /** `filter` and `accepts` together, for live events that did not come through `read` */
  matches(event: WorkEvent): boolean;
}

/** events read from the log per call; also the most one scan looks at before it answers `more` */
export const PAGE = 500;
/** pages one JSON answer scans at most when a post-filter (assignee) drops most events */
const MAX_PAGES = 20;

export function selectionFor(ctx: OpContext, q: EventQuery): Selection {
  const log = ctx.tenant.events;
  const filter: EventFilter = {
    ...(q.types?.length ? { types: q.types } : {}),
    ...(q.project ? { project: q.project } : {}),
    ...(q.node ? { node: q.node } : {}),
    // admin-audience events (people, tokens, plugins, webhooks) reach admins only, never others
    admin: ctx.actor.isAdmin,
  };
  const person = ctx.actor.personId;
  const accepts =
    q.assignee === 'me'
      ? (event: WorkEvent) => {
          // about me: my person node is named (a question routed to me), or a top-level payload
          // field is me (`previous_holder` of a claim taken from me, `holder`, `asker`); or its
          // main node is assigned to me now (the graph index, `assigned` edges)
          if (event.nodes.includes(person)) return true;
          if (Object.values(event.payload).includes(person)) return true;
          const main = event.nodes[0];
          const record = main ? ctx.tenant.index.get(main) : undefined;
          return Boolean(record?.edges.some((e) => e.type === 'assigned' && e.to === person));
        }
      : () => true;
  return { log, filter, accepts, matches: (event) => matchesFilter(event, filter) && accepts(event) };
}

/**
 * The cursor a request starts from: the `Last-Event-ID` header (an SSE reconnect) wins over
 * `since`; neither is "from now". A cursor past the log's newest id is 409 `cursor_ahead` (a
 * cursor of another server or tenant: starting "from now" would hide that events were missed).
 */
export function startCursor(log: EventLog, since: number | undefined, lastEventId?: string): number {
  let cursor = since;
  if (lastEventId !== undefined && lastEventId.trim() !== '') {
    if (!/^\d{1,15}$/.test(lastEventId.trim()))
      throw errors.validation('invalid Last-Event-ID: an event id (digits) is expected', [
        { instancePath: '/last_event_id', keyword: 'pattern', message: 'must be an event id' },
      ]);
    cursor = Number(lastEventId.trim());
  }
  if (cursor === undefined) return log.lastId;
  if (cursor > log.lastId)
    throw new SvcError(409, 'cursor_ahead', `event id ${cursor} is past the newest event (${log.lastId}) of this tenant`, {
      since: cursor,
      last_id: log.lastId,
    });
  return cursor;
}

/** True when events after `cursor` were pruned before they could be read (`firstId` moved past them). */
export function missedBefore(log: EventLog, cursor: number): boolean {
  return cursor + 1 < log.firstId;
}

export function prunedError(log: EventLog, cursor: number): SvcError {
  return new SvcError(
    410,
    'events_pruned',
    `events after ${cursor} up to ${log.firstId - 1} were pruned (retention); resume from since=${log.firstId - 1}, or start from now without since`,
    { since: cursor, first_id: log.firstId, resume_since: log.firstId - 1 },
  );
}

/** One scan's result: the matching events, and how far the log was looked at. */
export interface Scan {
  events: WorkEvent[];
  /** every event up to this id was considered: the next cursor when nothing more is wanted */
  scannedTo: number;
  /** the scan stopped early (limit reached, or the page budget spent): more may follow */
  more: boolean;
}

/** Matching events after `cursor`, at most `limit`, reading whole pages so a post-filter cannot starve it. */
export async function scan(sel: Selection, cursor: number, limit: number, pages = MAX_PAGES): Promise<Scan> {
  const events: WorkEvent[] = [];
  let after = cursor;
  for (let i = 0; i < pages; i++) {
    // the newest id before reading: a short page means everything up to it was considered
    const head = sel.log.lastId;
    const page = await sel.log.read(after, sel.filter, PAGE);
    for (const event of page) {
      if (!sel.accepts(event)) {
        after = event.id;
        continue;
      }
      events.push(event);
      after = event.id;
      if (events.length >= limit) return { events, scannedTo: after, more: true };
    }
    if (page.length < PAGE) return { events, scannedTo: Math.max(after, head), more: false };
  }
  return { events, scannedTo: after, more: true };
}
