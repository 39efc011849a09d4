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
 * The delivery logs, written behind the deliveries: an attempt is in the log (memory) at once,
 * and each subscription's log goes to the store with at most one write in flight and at most
 * one write per CURSOR_WRITE_MS, the attempts made meanwhile coalesced into the next one. The
 * log is a record for admins, not part of the delivery guarantee (the cursor is), so it never
 * holds a delivery turn up for a durable write.
 */
export class DeliveryLog {
  /** logs newer than what was handed to the store */
  private readonly unwritten = new Map<string, DeliveryAttempt[]>();
  private readonly writing = new Map<string, Promise<void>>();

  constructor(
    private readonly stores: WebhookStores,
    private readonly onError: (err: unknown) => void,
  ) {}

  entries(id: string): DeliveryAttempt[] {
    return this.unwritten.get(id) ?? this.stores.deliveries.get(id) ?? [];
  }

  append(id: string, attempt: DeliveryAttempt): void {
    // newest first, bounded
    this.unwritten.set(id, [attempt, ...this.entries(id)].slice(0, DELIVERY_LOG_SIZE));
    if (this.writing.has(id)) return;
    const run = async () => {
      for (let log = this.unwritten.get(id); log; log = this.unwritten.get(id)) {
        this.unwritten.delete(id);
        // a subscription deleted meanwhile gets no log back
        if (this.stores.hooks.has(id)) await this.stores.deliveries.set(id, log);
        // a busy subscription rewrites its log (up to 100 attempts) at most every CURSOR_WRITE_MS, not per delivery
        if (this.unwritten.has(id)) await new Promise<void>((resolve) => setTimeout(resolve, CURSOR_WRITE_MS).unref());
      }
    };
    const p = run()
      .catch(this.onError)
      .finally(() => this.writing.delete(id));
    this.writing.set(id, p);
  }

  /** Written out (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.writing.size) await Promise.all(this.writing.values());
  }

  async delete(id: string): Promise<void> {
    this.unwritten.delete(id);
    await this.writing.get(id);
    await this.stores.deliveries.delete(id);
  }
}

/**
 * The subscriptions' cursors, written behind the deliveries: the engine's view of a cursor is
 * the newest value (memory) at once, and each subscription's cursor goes to the store with at
 * most one write in flight and at most one write per CURSOR_WRITE_MS while it keeps moving, the
 * values set meanwhile coalesced into the next write. A delivery never waits for the write
 * (a burst of events would otherwise cost a durable write per event before the next send);
 * after a crash the loop resumes at the last durable cursor, so the events delivered since are
 * sent again with the same `webhook-id` (at-least-once, docs/events.md "Delivery guarantees").
 */
export class CursorBook {
  /** values newer than what the store holds durably, until written */
  private readonly unwritten = new Map<string, WebhookCursor>();
  private readonly writing = new Map<string, Promise<void>>();

  constructor(
    private readonly stores: WebhookStores,
    private readonly onError: (err: unknown) => void,
    private readonly intervalMs = CURSOR_WRITE_MS,
  ) {}

  get(id: string): WebhookCursor | undefined {
    return this.unwritten.get(id) ?? this.stores.cursors.get(id);
  }

  set(id: string, cursor: WebhookCursor): void {
    this.unwritten.set(id, cursor);
    if (this.writing.has(id)) return;
    const run = async () => {
      for (let value = this.unwritten.get(id); value; value = this.unwritten.get(id)) {
        // a subscription deleted meanwhile gets no cursor back
        if (!this.stores.hooks.has(id)) {
          this.unwritten.delete(id);
          return;
        }
        await this.stores.cursors.set(id, value);
        // newer values keep their place until their own write
        if (this.unwritten.get(id) === value) {
          this.unwritten.delete(id);
          return;
        }
        await new Promise<void>((resolve) => setTimeout(resolve, this.intervalMs).unref());
      }
    };
    const p = run()
      .catch(this.onError)
      .finally(() => this.writing.delete(id));
    this.writing.set(id, p);
  }

  /** Sets and waits until the value is durable (an admin's change answers once it is). */
  async setDurably(id: string, cursor: WebhookCursor): Promise<void> {
    this.set(id, cursor);
    await this.settled(id);
  }

  /** Written out (one subscription, or all: tests, shutdown). */
  async settled(id?: string): Promise<void> {
    if (id !== undefined) {
      while (this.writing.has(id)) await this.writing.get(id);
      return;
    }
    while (this.writing.size) await Promise.all(this.writing.values());
  }

  async delete(id: string): Promise<void> {
    this.unwritten.delete(id);
    await this.writing.get(id);
    await this.stores.cursors.delete(id);
  }
}
