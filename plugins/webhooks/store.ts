/**
 * What the webhooks plugin keeps, all in the tenant's operational state store
 * (kernel/state-store.ts), so cluster mode's PostgreSQL store carries it, fenced like every
 * other owner write, and a fail-over resumes from the same cursor:
 *
 * - `webhooks`: the subscriptions (what an admin set, and the signing secret);
 * - `webhook-cursors`: per subscription, the last event delivered and the state of the attempt
 *   at the next one (kept apart from the subscription so an admin's update and the engine's
 *   progress never overwrite each other), written behind the deliveries (CursorBook);
 * - `webhook-deliveries`: per subscription, the last DELIVERY_LOG_SIZE attempts (one record
 *   per subscription, one file each: an attempt rewrites only its subscription's log).
 */
import { randomBytes } from 'node:crypto';
import type { EventFilter, EventLog } from '../../kernel/events/types.js';
import type { Collection } from '../../kernel/state-store.js';
import type { Tenant } from '../../kernel/tenant.js';

export const DELIVERY_LOG_SIZE = 100;
/** the least time between two durable writes of one subscription's cursor (or delivery log) while it moves */
export const CURSOR_WRITE_MS = 200;
/** subscriptions per tenant at most (each has its own ordered delivery loop) */
export const MAX_WEBHOOKS = 50;

export interface StoredWebhook {
  id: string;
  url: string;
  /** exact types or `prefix.*`; empty: every type */
  types: string[];
  project: string | null;
  description: string;
  format: 'json' | 'slack';
  enabled: boolean;
  /** `whsec_<base64>`: what signing needs, never answered after create/rotate, never logged */
  secret: string;
  /** the secret before the last rotation, still signed with (a second signature) until `previous_until` */
  previous_secret: string | null;
  previous_until: string | null;
  /** why the server disabled it (a day of failures), null when it did not */
  disabled_reason: string | null;
  created: string;
  created_by: string;
  updated: string;
}

export interface WebhookCursor {
  /** the id of the last event delivered (or skipped as not matching); the next delivery is the first matching one after it */
  cursor: number;
  /** failed attempts at the next event so far */
  attempts: number;
  /** ms since epoch of the first failure of the current run of failures, null when the last attempt succeeded */
  failing_since: number | null;
  /** ms since epoch before which the next attempt is not made (backoff), null: at once */
  next_attempt_ms: number | null;
  last_success: string | null;
}

export interface DeliveryAttempt {
  /** when the attempt started (ISO) */
  at: string;
  /** the event's id; 0 for a ping */
  event: number;
  type: string;
  /** the `webhook-id` header sent */
  message_id: string;
  /** 1 for the first attempt at this event, counting up while it fails */
  attempt: number;
  kind: 'delivery' | 'ping' | 'redelivery';
  ok: boolean;
  status: number | null;
  latency_ms: number;
  error: string | null;
}

export interface WebhookStores {
  hooks: Collection<StoredWebhook>;
  cursors: Collection<WebhookCursor>;
  deliveries: Collection<DeliveryAttempt[]>;
}

export function storesOf(tenant: Tenant): WebhookStores {
  return {
    hooks: tenant.state.collection<StoredWebhook>('webhooks'),
    cursors: tenant.state.collection<WebhookCursor>('webhook-cursors'),
    deliveries: tenant.state.collection<DeliveryAttempt[]>('webhook-deliveries', { layout: 'file-per-key' }),
  };
}

/** The tenant's event log (kernel/events/types.ts). */
export function eventsOf(tenant: Tenant): EventLog {
  return tenant.events;
}

/** The events a subscription receives: its types and project; admin events too (only admins manage subscriptions). */
export function filterOf(hook: StoredWebhook): EventFilter {
  return { ...(hook.types.length ? { types: hook.types } : {}), ...(hook.project ? { project: hook.project } : {}), admin: true };
}

export function newWebhookId(): string {
  return `wh_${randomBytes(9).toString('hex')}`;
}

/** A Standard Webhooks secret: `whsec_` and 32 random bytes in base64. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * Values written behind: the newest value of a key is in memory at once (`get`), and the
 * collection gets the values set meanwhile in ONE batch, with one batch in flight and at most
 * one every `intervalMs` while values keep changing (the first after a quiet spell goes at
 * once). One writer per tenant and collection, not one per subscription: ten busy subscriptions
 * cost one durable write per interval, not ten (every durable write is an fsync that waits in
 * the same disk queue as the graph's commits). A failed batch keeps its values for the next set.
 */
class WrittenBehind<T> {
  private readonly unwritten = new Map<string, T>();
  private loop: Promise<void> | null = null;

  constructor(
    private readonly collection: Collection<T>,
    /** keys still wanted (a subscription deleted meanwhile gets nothing written back) */
    private readonly keep: (key: string) => boolean,
    private readonly onError: (err: unknown) => void,
    private readonly intervalMs: number,
  ) {}

  get(key: string): T | undefined {
    return this.unwritten.has(key) ? this.unwritten.get(key) : this.collection.get(key);
  }

  set(key: string, value: T): void {
    this.unwritten.set(key, value);
    if (!this.loop)
      this.loop = this.run()
        .catch(this.onError)
        .finally(() => {
          this.loop = null;
        });
  }

  private async run(): Promise<void> {
    while (this.unwritten.size > 0) {
      for (const key of [...this.unwritten.keys()]) if (!this.keep(key)) this.unwritten.delete(key);
      const changes = [...this.unwritten].map(([key, value]) => ({ key, value }));
      if (changes.length === 0) return;
      await this.collection.batch(changes);
      // values set during the write keep their place until the next one
      for (const { key, value } of changes) if (this.unwritten.get(key) === value) this.unwritten.delete(key);
      if (this.unwritten.size > 0)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            this.wake = null;
            resolve();
          }, this.intervalMs);
          timer.unref();
          this.wake = () => {
            clearTimeout(timer);
            this.wake = null;
            resolve();
          };
        });
    }
  }

  /** cuts the wait between two writes short (settled: what is pending goes out now) */
  private wake: (() => void) | null = null;

  /** Sets and waits until the value is durable; a failed write rejects (an admin's change answers once it is durable). */
  async setDurably(key: string, value: T): Promise<void> {
    this.unwritten.set(key, value);
    await this.settled();
    if (this.unwritten.get(key) !== value) return;
    await this.collection.set(key, value);
    if (this.unwritten.get(key) === value) this.unwritten.delete(key);
  }

  /** Written out (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.loop) {
      this.wake?.();
      await this.loop;
    }
  }

  async delete(key: string): Promise<void> {
    this.unwritten.delete(key);
    await this.settled();
    await this.collection.delete(key);
  }
}

/**
 * how often a busy tenant's delivery logs are written: a record for admins, not part of the
 * guarantee (answers read it from memory; a crash loses at most this much of it). Each write is
 * a durable file per subscription: once a second, ten busy subscriptions put twenty fsyncs a
 * second in the disk queue the graph's commits wait in.
 */
export const DELIVERY_LOG_WRITE_MS = 5000;

/**
 * The delivery logs, written behind the deliveries (WrittenBehind): an attempt is in the log
 * (memory) at once and reaches the store at most DELIVERY_LOG_WRITE_MS later. The log is a
 * record for admins, not part of the delivery guarantee (the cursor is), so it never holds a
 * delivery turn up for a durable write.
 */
export class DeliveryLog {
  private readonly logs: WrittenBehind<DeliveryAttempt[]>;

  constructor(stores: WebhookStores, onError: (err: unknown) => void) {
    this.logs = new WrittenBehind(stores.deliveries, (id) => stores.hooks.has(id), onError, DELIVERY_LOG_WRITE_MS);
  }

  entries(id: string): DeliveryAttempt[] {
    return this.logs.get(id) ?? [];
  }

  append(id: string, attempt: DeliveryAttempt): void {
    // newest first, bounded
    const log = this.entries(id);
    this.logs.set(id, [attempt, ...log.slice(0, DELIVERY_LOG_SIZE - 1)]);
  }

  settled(): Promise<void> {
    return this.logs.settled();
  }

  delete(id: string): Promise<void> {
    return this.logs.delete(id);
  }
}

/**
 * The subscriptions' cursors, written behind the deliveries (WrittenBehind): the engine's view
 * of a cursor is the newest value (memory) at once, and the tenant's moved cursors go to the
 * store together, at most one write per CURSOR_WRITE_MS while they keep moving. A delivery
 * never waits for the write (a burst of events would otherwise cost a durable write per event
 * before the next send); after a crash the loop resumes at the last durable cursor, so the
 * events delivered since are sent again with the same `webhook-id` (at-least-once,
 * docs/events.md "Delivery guarantees").
 */
export class CursorBook {
  private readonly cursors: WrittenBehind<WebhookCursor>;

  constructor(stores: WebhookStores, onError: (err: unknown) => void, intervalMs = CURSOR_WRITE_MS) {
    this.cursors = new WrittenBehind(stores.cursors, (id) => stores.hooks.has(id), onError, intervalMs);
  }

  get(id: string): WebhookCursor | undefined {
    return this.cursors.get(id);
  }

  set(id: string, cursor: WebhookCursor): void {
    this.cursors.set(id, cursor);
  }

  setDurably(id: string, cursor: WebhookCursor): Promise<void> {
    return this.cursors.setDurably(id, cursor);
  }

  /** Written out (tests, shutdown). */
  settled(): Promise<void> {
    return this.cursors.settled();
  }

  delete(id: string): Promise<void> {
    return this.cursors.delete(id);
  }
}
