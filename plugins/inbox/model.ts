/**
 * The inbox of each person, derived from the tenant's event log (kernel/events/types.ts) and
 * the graph's current state: what was assigned to me, review requested of me, questions routed
 * to me, mentions of me, and my claims taken over or expired (events), plus my claims about to
 * expire (the lease table, read live). Which events make an item is in plugins/inbox/README.md.
 *
 * The items live in memory per tenant (one pass over the retained log when the inbox is first
 * asked for, then each new event as the log appends it); only the read state is stored, per
 * person, in the tenant's state store (`inbox-read`), so a restart rebuilds the same items
 * from the durable log and keeps what was read.
 */
import type { EventLog, WorkEvent } from '../../kernel/events/types.js';
import type { Collection } from '../../kernel/state-store.js';
import type { Tenant } from '../../kernel/tenant.js';
import { leasesOf } from '../leases/public.js';

export const INBOX_KINDS = [
  'assigned',
  'review_requested',
  'question_routed',
  'question_answered',
  'mention',
  'claim_taken_over',
  'claim_expired',
  'claim_expiring',
] as const;
export type InboxKind = (typeof INBOX_KINDS)[number];

export interface InboxItem {
  /** `ev-<event id>` for items made by an event; `exp-<node>-<expiry ms>` for a claim about to expire */
  id: string;
  kind: InboxKind;
  node: string;
  title: string;
  project: string | null;
  time: string;
  /** who caused it (null: the server, a lease expiring) */
  actor: { person: string | null; agent: string | null; name: string } | null;
  /** the event behind the item (null for a claim about to expire) */
  event_id: number | null;
  event_type: string | null;
  link: string;
  read: boolean;
  /** a `mention` in a comment: the comment (the item is about the node it discusses) */
  comment?: string;
}

/** What is kept per person: everything up to `through` is read, and the listed item ids above it. */
export interface ReadState {
  through: number;
  read: string[];
}

/** items kept per person (the newest); older ones fall off the inbox */
export const MAX_ITEMS = 300;
/** item ids kept read above `through` (the newest marks win) */
const MAX_READ_IDS = 2000;
/** events read per page while the inbox catches up with the log */
const PAGE = 1000;

/** Edges to a person that make an item for them. */
const EDGE_KINDS: Record<string, InboxKind> = { assigned: 'assigned', 'review-requested': 'review_requested', mentions: 'mention' };

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : typeof v === 'string' ? [v] : [];

/** What one event means for the people it concerns: [person, kind] pairs (the actor never gets an item for their own change). */
export function itemsOf(event: WorkEvent, tenant: Tenant): Array<{ person: string; kind: InboxKind; node: string; comment?: string }> {
  const node = event.nodes[0];
  if (!node) return [];
  const actor = event.actor?.person ?? null;
  const out: Array<{ person: string; kind: InboxKind; node: string; comment?: string }> = [];
  const add = (persons: string[], kind: InboxKind) => {
    // people only: a question's `mentions` lists nodes of any type
    for (const person of new Set(persons))
      if (person !== actor && tenant.index.get(person)?.type === 'person') out.push({ person, kind, node });
  };
  // the payloads of docs/events.md: a takeover names the previous holder, an expiry the holder
  if (event.type === 'lease.taken_over') {
    add(strings(event.payload.previous_holder), 'claim_taken_over');
    return out;
  }
  if (event.type === 'lease.expired') {
    add(strings(event.payload.holder), 'claim_expired');
    return out;
  }
  if (event.type === 'question.answered') {
    add(strings(event.payload.asker), 'question_answered');
    return out;
  }
  if (event.type === 'question.routed') {
    add(strings(event.payload.routed_to), 'question_routed');
    return out;
  }
  // A comment naming me (plugins/comments): the item is about the node it discusses, one per comment.
  if (event.type === 'comment.mentioned') {
    const before = out.length;
    add(strings(event.payload.person), 'mention');
    const discussed = typeof event.payload.node === 'string' ? event.payload.node : node;
    for (const item of out.slice(before)) Object.assign(item, { node: discussed, comment: String(event.payload.comment ?? '') });
    return out;
  }
  // An edge added (node created with it, or added later): the event names it (kernel/events/derive.ts).
  if (event.type === 'edge.added') {
    const to = typeof event.payload.to === 'string' ? [event.payload.to] : [];
    const kind = EDGE_KINDS[String(event.payload.type)];
    // a comment's mentions edge is told by its comment.mentioned event (about the discussed node)
    if (kind === 'mention' && tenant.registry.typeForId(String(event.payload.from))?.type === 'comment') return out;
    if (kind) add(to, kind);
    return out;
  }
  if (event.type !== 'node.created' && event.type !== 'node.updated' && event.type !== 'node.status_changed') return out;
  // A `mentions` field naming people: read from the node as it is, so an event replayed after
  // a restart makes the same item (a question's routing has its own event, question.routed).
  const record = tenant.index.get(node);
  if (!record) return out;
  add(strings(record.frontmatter.mentions), 'mention');
  return out;
}

interface PersonBox {
  items: InboxItem[];
  /** `kind:node` of graph-derived items already made (one item per relation, not per event) */
  seen: Set<string>;
}

/** One tenant's inboxes: built from the log once, then kept current by its subscription. */
export class Inboxes {
  private readonly boxes = new Map<string, PersonBox>();
  private cursor = 0;
  private ready: Promise<void> | null = null;
  private live = false;
  private pending: WorkEvent[] = [];
  readonly reads: Collection<ReadState>;

  constructor(
    private readonly tenant: Tenant,
    private readonly log: EventLog,
  ) {
    this.reads = tenant.state.collection<ReadState>('inbox-read');
    // Subscribed before the first pass over the log, so nothing appended meanwhile is missed
    // (duplicates are skipped by id); events wait in `pending` until the pass is done.
    log.subscribe((event) => {
      if (this.live) this.take(event);
      else this.pending.push(event);
    });
  }

  /** Resolves once every retained event is in the inboxes (the first call reads the log; a failed read is tried again next time). */
  caughtUp(): Promise<void> {
    this.ready ??= this.catchUp().catch((err: unknown) => {
      this.ready = null;
      throw err;
    });
    return this.ready;
  }

  private async catchUp(): Promise<void> {
    for (;;) {
      const page = await this.log.read(this.cursor, { admin: false }, PAGE);
      for (const event of page) this.take(event);
      if (page.length < PAGE) break;
    }
    for (const event of this.pending) this.take(event);
    this.pending = [];
    this.live = true;
  }

  /** The newest event id the inboxes have taken in. */
  get through(): number {
    return this.cursor;
  }

  private take(event: WorkEvent): void {
    if (event.id <= this.cursor) return;
    this.cursor = event.id;
    try {
      for (const { person, kind, node, comment } of itemsOf(event, this.tenant)) {
        const box = this.boxOf(person);
        // every comment that names me is an item of its own (it says something new)
        const graphKind =
          comment === undefined && (kind === 'assigned' || kind === 'review_requested' || kind === 'question_routed' || kind === 'mention');
        if (graphKind) {
          if (box.seen.has(`${kind}:${node}`)) continue;
          // a question routed to me that also mentions me is one item, the routing
          if (kind === 'mention' && box.seen.has(`question_routed:${node}`)) continue;
          box.seen.add(`${kind}:${node}`);
        }
        const item = this.item(event, kind, node);
        if (comment) item.comment = comment;
        box.items.push(item);
        if (box.items.length > MAX_ITEMS) box.items.splice(0, box.items.length - MAX_ITEMS);
      }
    } catch {
      // an odd event (a payload of another shape) makes no item; it must never stop the log's listeners
    }
  }

  private boxOf(person: string): PersonBox {
    let box = this.boxes.get(person);
    if (!box) this.boxes.set(person, (box = { items: [], seen: new Set() }));
    return box;
  }

  private item(event: WorkEvent, kind: InboxKind, node: string): InboxItem {
    const record = this.tenant.index.get(node);
    const title = record?.title ?? (typeof event.payload.title === 'string' ? event.payload.title : node);
    return {
      id: `ev-${event.id}`,
      kind,
      node,
      title,
      project: event.project,
      time: event.time,
      actor: event.actor ? { person: event.actor.person, agent: event.actor.agent, name: event.actor.name } : null,
      event_id: event.id,
      event_type: event.type,
      link: `/v1/nodes/${node}`,
      read: false,
    };
  }

  /** Claims of `person` with less than a fifth of the tenant's claim TTL left (live state, no event). */
  private expiring(person: string, nowMs: number): InboxItem[] {
    if (!this.tenant.enabled('leases')) return [];
    const window = Math.max(60_000, Math.floor(this.tenant.config.limits.claim_ttl_ms / 5));
    const out: InboxItem[] = [];
    for (const lease of leasesOf(this.tenant).records.values()) {
      if (lease.by !== person || lease.state !== 'live' || lease.expires_ms <= nowMs || lease.expires_ms - nowMs > window) continue;
      const record = this.tenant.index.get(lease.node_id);
      out.push({
        id: `exp-${lease.node_id}-${lease.expires_ms}`,
        kind: 'claim_expiring',
        node: lease.node_id,
        title: record?.title ?? lease.node_id,
        project: typeof record?.frontmatter.project === 'string' ? record.frontmatter.project : null,
        time: new Date(lease.expires_ms).toISOString(),
        actor: null,
        event_id: null,
        event_type: null,
        link: `/v1/nodes/${lease.node_id}`,
        read: false,
      });
    }
    return out;
  }

  /** A person's items, newest first, each with its read flag. */
  list(person: string, nowMs: number): InboxItem[] {
    const state = this.reads.get(person) ?? { through: 0, read: [] };
    const read = new Set(state.read);
    const items = [...(this.boxes.get(person)?.items ?? []), ...this.expiring(person, nowMs)];
    return items
      .map((item) => ({ ...item, read: (item.event_id !== null && item.event_id <= state.through) || read.has(item.id) }))
      .sort((a, b) => (a.time === b.time ? (b.event_id ?? 0) - (a.event_id ?? 0) : a.time < b.time ? 1 : -1));
  }

  /** The read state after marking `ids` (and, with `through`, every event item up to it) read. */
  marked(person: string, ids: string[], through: number | null): ReadState {
    const state = this.reads.get(person) ?? { through: 0, read: [] };
    const next = Math.max(state.through, through ?? 0);
    const items = new Map((this.boxes.get(person)?.items ?? []).map((i) => [i.id, i]));
    // ids at or below `through` need no entry; the rest are kept, newest marks last
    const keep = [...state.read, ...ids].filter((id) => {
      const ev = items.get(id)?.event_id ?? eventIdOf(id);
      return ev === null || ev > next;
    });
    return { through: next, read: [...new Set(keep)].slice(-MAX_READ_IDS) };
  }
}

function eventIdOf(id: string): number | null {
  const m = /^ev-(\d+)$/.exec(id);
  return m ? Number(m[1]) : null;
}

const inboxes = new WeakMap<Tenant, Inboxes>();

/** The tenant's inboxes (one per tenant, built on first use). */
export function inboxesOf(tenant: Tenant, log: EventLog): Inboxes {
  let found = inboxes.get(tenant);
  if (!found) inboxes.set(tenant, (found = new Inboxes(tenant, log)));
  return found;
}
