/**
 * The event model (issue 24): one per-tenant, append-only log of what happened, that every way
 * out reads (the SSE stream and `wait` JSON of GET /v1/events, MCP `wait_for_events` and
 * resource notifications, webhooks, the app's inbox). The catalogue of types is docs/events.md.
 *
 * Graph changes are derived from commits (the commit journal and history), never only from an
 * in-memory hook: a commit acknowledged before a crash yields its events when the tenant opens
 * again. Operational changes that are not commits (leases, routed questions, workflow steps,
 * admin changes) are appended durably by the operation that makes them, before it answers.
 */

/** Who caused an event. `null` actor: the server itself (a lease expiring, a recovery). */
export interface EventActor {
  /** the person node id (an agent's owner for agent tokens) */
  person: string | null;
  /** the agent node id when an agent acted */
  agent: string | null;
  name: string;
  /** how the change arrived: 'rest' | 'mcp' | 'cli' | 'import' | 'restore' | 'system' | ... */
  via: string;
}

export interface WorkEvent {
  /** per tenant, strictly increasing from 1, never reused; the resume cursor */
  id: number;
  /** dotted type from the catalogue, e.g. 'node.created', 'node.status_changed', 'lease.claimed' */
  type: string;
  /** ISO-8601 UTC time the change happened (the commit's author date for graph changes) */
  time: string;
  org: string;
  actor: EventActor | null;
  /** the node ids the event is about (first: the main one) */
  nodes: string[];
  /** the project of the main node, when it has one */
  project: string | null;
  /** the graph commit, for graph changes */
  commit?: string;
  /** the node's revision after the change, when there is one */
  revision?: string;
  /** 'admins': only admins see it (people, tokens, plugins, webhooks); absent: every member */
  audience?: 'admins';
  /** small, type-specific, plain JSON; links are relative paths (`/v1/nodes/<id>`); never a credential */
  payload: Record<string, unknown>;
}

/** What an operation passes to `EventLog.emit`: the log assigns id, org and (unless given) time. */
export type NewEvent = Omit<WorkEvent, 'id' | 'org' | 'time'> & { time?: string };

export interface EventFilter {
  /** exact types or prefixes ending in '.*' ('lease.*') */
  types?: string[];
  project?: string;
  /** events whose `nodes` include this id */
  node?: string;
  /** include 'admins' events (the caller is an admin) */
  admin?: boolean;
}

export type EventListener = (event: WorkEvent) => void;

export interface EventLog {
  /** the id of the newest event (0 when there is none) */
  readonly lastId: number;
  /** the oldest id still retained (events before it were pruned); 1 when nothing was pruned */
  readonly firstId: number;
  /**
   * Events with id > `after`, matching `filter`, ascending, at most `limit` (default 100).
   * Recent events answer from memory; older ones from the log's files.
   */
  read(after: number, filter?: EventFilter, limit?: number): Promise<WorkEvent[]>;
  /**
   * Called synchronously, in id order, for each event appended after subscribing. A listener
   * must not throw and must not block (it queues its own work). Returns the unsubscribe.
   */
  subscribe(listener: EventListener): () => void;
  /** Appends an operational event; resolves with it once it is durable. */
  emit(event: NewEvent): Promise<WorkEvent>;
}

/** True when `event` passes `filter` (the one matcher every consumer uses). */
export function matchesFilter(event: WorkEvent, filter: EventFilter | undefined): boolean {
  if (event.audience === 'admins' && !filter?.admin) return false;
  if (!filter) return true;
  if (filter.types?.length && !filter.types.some((t) => (t.endsWith('.*') ? event.type.startsWith(t.slice(0, -1)) : event.type === t)))
    return false;
  if (filter.project && event.project !== filter.project) return false;
  if (filter.node && !event.nodes.includes(filter.node)) return false;
  return true;
}
