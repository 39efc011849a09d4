/**
 * The delivery engine: per tenant (only where the tenant is open, which in cluster mode is its
 * owner alone), one ordered loop per subscription.
 *
 * - At-least-once, in order: the loop reads the first event after the subscription's cursor
 *   that matches its filter (from the event log, never from a queue in memory, so nothing
 *   grows with a slow receiver and a restart or fail-over resumes from the persisted cursor),
 *   sends it, and moves the cursor only once the receiver answered 2xx. A failing event blocks
 *   the ones behind it until it succeeds or the subscription is disabled. One request in flight
 *   per subscription (pings and redeliveries take the same turn).
 * - Backoff: exponential with full jitter (a random delay between 0 and min(1 h, 5 s x 2^n)),
 *   retried until the event has failed for a day; then the subscription is disabled and a
 *   `webhook.disabled` admin event is emitted. Re-enabling resumes at the same event.
 * - Latency: a subscription's loop wakes at once when the log announces an event (subscribe), the
 *   cursor is written behind the deliveries (CursorBook: a send never waits for a durable write;
 *   after a crash the events since the last durable cursor go out again, same `webhook-id`),
 *   and connections to the receiver are kept alive (ReceiverConnections).
 * - One sender (cluster mode): a send waits while this process does not surely hold the tenant's
 *   lease (`services.serves`: a process paused or cut off past its lease knows it by its own
 *   clock before it hears it lost the tenant), and a tenant closing here (hand-off, lost lease,
 *   stop) cuts the request in flight and writes the cursor out under this process's fence
 *   before its stores close, so the next owner starts where this one stopped.
 * - Time is the kernel's clock (`services.clock`): the wait before a retry is re-checked at
 *   least every TICK_MS, so a test that moves the clock sees the retry within a tick.
 */
import { emitEvent, SYSTEM_ACTOR } from '../../kernel/events/emit.js';
import type { WorkEvent } from '../../kernel/events/types.js';
import type { KernelServices } from '../../kernel/plugin.js';
import type { Tenant } from '../../kernel/tenant.js';
import { jsonBody, messageIdOf, signedHeaders, slackBody } from './format.js';
import { ReceiverConnections, send, type SendResult } from './send.js';
import {
  CursorBook,
  DeliveryLog,
  eventsOf,
  filterOf,
  storesOf,
  type DeliveryAttempt,
  type StoredWebhook,
  type WebhookCursor,
  type WebhookStores,
} from './store.js';

export const RETRY_BASE_MS = 5_000;
export const RETRY_CAP_MS = 60 * 60 * 1000;
/** continuous failure for this long disables a subscription */
export const DISABLE_AFTER_MS = 24 * 60 * 60 * 1000;
const TICK_MS = 1000;

/** The delay before retry number `attempts` (1 = after the first failure): full jitter. */
export function backoffMs(attempts: number, random: () => number = Math.random): number {
  const ceiling = Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** Math.min(attempts, 20));
  return Math.floor(random() * ceiling);
}

const engines = new Map<Tenant, TenantEngine>();

/** The engine of an open tenant (started on first use). */
export function engineOf(tenant: Tenant, services: KernelServices): TenantEngine {
  let engine = engines.get(tenant);
  if (!engine) {
    const started = new TenantEngine(tenant, services);
    engine = started;
    engines.set(tenant, engine);
    engine.start();
    tenant.onClose(() => started.shutdown());
  }
  return engine;
}

/** Stops every engine; what they delivered is written out before the tenants' stores close (server close runs plugins first). */
export async function stopAllEngines(): Promise<void> {
  const all = [...engines.values()];
  for (const engine of all) engine.stop();
  await Promise.all(all.map((e) => Promise.all([e.cursors.settled(), e.deliveryLog.settled()])));
}

export class TenantEngine {
  readonly stores: WebhookStores;
  readonly deliveryLog: DeliveryLog;
  /** the cursors as the engine moves them (newest first in memory, written behind) */
  readonly cursors: CursorBook;
  private readonly workers = new Map<string, Worker>();
  private unsubscribe: (() => void) | null = null;
  /** aborted at stop: cuts the requests in flight, which must not outlive this process's turn as owner */
  private readonly cut = new AbortController();
  private timer: NodeJS.Timeout | null = null;
  stopped = false;

  constructor(
    readonly tenant: Tenant,
    readonly services: KernelServices,
  ) {
    this.stores = storesOf(tenant);
    this.deliveryLog = new DeliveryLog(this.stores, (err) =>
      services.log.warn('webhook delivery log write failed', { org: tenant.org, error: String(err) }),
    );
    this.cursors = new CursorBook(this.stores, (err) =>
      services.log.warn('webhook cursor write failed', { org: tenant.org, error: String(err) }),
    );
  }

  start(): void {
    this.unsubscribe = eventsOf(this.tenant).subscribe(() => this.onEvent());
    // the tick: retries that came due (the clock may have been moved), and whether the tenant is still served here
    this.timer = setInterval(() => this.tick(), TICK_MS);
    this.timer.unref();
    for (const id of this.stores.hooks.entries()) this.worker(id[0]).kick();
  }

  /** Stops, waits for the turn in flight (its request cut by stop), and writes cursors and logs out. */
  async shutdown(): Promise<void> {
    this.stop();
    await Promise.all([...this.workers.values()].map((w) => w.idle()));
    await Promise.all([this.cursors.settled(), this.deliveryLog.settled()]);
  }

  /** Cluster mode: this process surely holds the tenant's lease now; one process: always. */
  serving(): boolean {
    return this.services.serves ? this.services.serves(this.tenant.org) : true;
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.cut.abort();
    this.unsubscribe?.();
    if (this.timer) clearInterval(this.timer);
    for (const w of this.workers.values()) w.connections.close();
    engines.delete(this.tenant);
  }

  /** The tenant is still open here, with the plugin on; otherwise the engine stops (closed, handed to another owner). */
  live(): boolean {
    if (this.stopped) return false;
    if (this.services.tenants.get(this.tenant.org) !== this.tenant || !this.tenant.enabled('webhooks')) {
      this.stop();
      return false;
    }
    return true;
  }

  worker(id: string): Worker {
    let w = this.workers.get(id);
    if (!w) {
      w = new Worker(this, id);
      this.workers.set(id, w);
    }
    return w;
  }

  forget(id: string): void {
    this.workers.get(id)?.cancel();
    this.workers.get(id)?.connections.close();
    this.workers.delete(id);
  }

  /** A new event: every enabled subscription's loop looks for its next matching event (the filter is applied by the read). */
  private onEvent(): void {
    if (this.stopped) return;
    for (const hook of this.stores.hooks.values()) {
      if (!hook.enabled) continue;
      const w = this.worker(hook.id);
      // an event behind a failing one waits for the retry; kicking it would only re-read the same head
      if (!w.waiting) w.kick();
    }
  }

  private tick(): void {
    if (!this.live()) return;
    const now = this.services.clock.now();
    for (const hook of this.stores.hooks.values()) {
      if (!hook.enabled) continue;
      const cursor = this.cursors.get(hook.id);
      const w = this.worker(hook.id);
      // held while the lease was not counted on (a renewal came back late): go on once it is
      if (w.held || (cursor?.next_attempt_ms != null && cursor.next_attempt_ms <= now)) w.kick();
    }
  }

  /** Sends `event` (or a ping body) to `hook` once and records the attempt; never throws. */
  async attempt(
    hook: StoredWebhook,
    message: { event: number; type: string; messageId: string; body: string },
    kind: DeliveryAttempt['kind'],
    attemptNo: number,
  ): Promise<DeliveryAttempt> {
    const at = new Date(this.services.clock.now());
    let result: SendResult;
    try {
      result = await send(hook.url, message.body, signedHeaders(hook, message.messageId, at, message.body), {
        allowPrivate: this.services.config.webhookAllowPrivate,
        timeoutMs: this.services.config.webhookTimeoutMs,
        connections: this.worker(hook.id).connections,
        signal: this.cut.signal,
      });
    } catch (err) {
      result = { ok: false, status: null, latency_ms: 0, error: err instanceof Error ? err.message : String(err) };
    }
    const record: DeliveryAttempt = {
      at: at.toISOString(),
      event: message.event,
      type: message.type,
      message_id: message.messageId,
      attempt: attemptNo,
      kind,
      ...result,
    };
    // a request cut because the tenant closed here is not a failure of the receiver: the next owner sends it again
    if (this.stores.hooks.has(hook.id) && !(this.stopped && !record.ok)) this.deliveryLog.append(hook.id, record);
    return record;
  }

  bodyOf(hook: StoredWebhook, event: WorkEvent): string {
    return hook.format === 'slack' ? slackBody(event, this.services.baseUrl) : jsonBody(event);
  }
}

/** One subscription's ordered loop. */
class Worker {
  private running = false;
  private kicked = false;
  private cancelled = false;
  private turn: Promise<unknown> = Promise.resolve();
  /** a retry is scheduled: events arriving meanwhile do not wake the loop */
  waiting = false;
  /** the last step found the lease not surely held: the engine's tick tries again */
  held = false;
  /** kept-alive connections to this subscription's receiver */
  readonly connections = new ReceiverConnections();

  constructor(
    private readonly engine: TenantEngine,
    private readonly id: string,
  ) {}

  kick(): void {
    this.kicked = true;
    if (!this.running) void this.run();
  }

  cancel(): void {
    this.cancelled = true;
  }

  /** Resolves once the turn in flight (if any) is over. */
  idle(): Promise<unknown> {
    return this.turn;
  }

  /** Runs `fn` in this subscription's turn: one request in flight per subscription. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.turn.then(fn);
    this.turn = next.catch(() => undefined);
    return next;
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.kicked && !this.cancelled && this.engine.live()) {
        this.kicked = false;
        // deliver until caught up, or until a failure schedules a retry
        while (!this.cancelled && this.engine.live() && (await this.exclusive(() => this.step()))) {
          /* next event */
        }
      }
    } catch (err) {
      this.engine.services.log.warn('webhook delivery loop failed', { org: this.engine.tenant.org, webhook: this.id, error: String(err) });
    } finally {
      this.running = false;
    }
  }

  /** One delivery attempt at the head event. True: go on at once; false: caught up, or waiting for a retry. */
  private async step(): Promise<boolean> {
    const { stores, services, cursors } = this.engine;
    const hook = stores.hooks.get(this.id);
    if (!hook || !hook.enabled) return false;
    const state: WebhookCursor = cursors.get(this.id) ?? {
      cursor: 0,
      attempts: 0,
      failing_since: null,
      next_attempt_ms: null,
      last_success: null,
    };
    const now = services.clock.now();
    if (state.next_attempt_ms !== null && state.next_attempt_ms > now) {
      this.waiting = true;
      return false;
    }
    this.waiting = false;
    // a former owner (paused, partitioned) sends nothing once its lease may have been taken over
    this.held = !this.engine.serving();
    if (this.held) return false;
    const [event] = await eventsOf(this.engine.tenant).read(state.cursor, filterOf(hook), 1);
    if (!event) return false;
    const body = this.engine.bodyOf(hook, event);
    const record = await this.engine.attempt(
      hook,
      { event: event.id, type: event.type, messageId: messageIdOf(event), body },
      'delivery',
      state.attempts + 1,
    );
    // deleted, disabled or re-created meanwhile: its cursor is no longer ours to move
    const current = stores.hooks.get(this.id);
    if (!current || !current.enabled || this.cancelled) return false;
    const after = services.clock.now();
    // cut by the tenant closing here (shutdown): no failure recorded, the next owner sends it again
    if (this.engine.stopped && !record.ok) return false;
    if (record.ok) {
      // written behind: the next send does not wait for it
      cursors.set(this.id, {
        cursor: event.id,
        attempts: 0,
        failing_since: null,
        next_attempt_ms: null,
        last_success: new Date(after).toISOString(),
      });
      return true;
    }
    const failingSince = state.failing_since ?? now;
    if (after - failingSince >= DISABLE_AFTER_MS) {
      await this.disable(current, state, failingSince, record);
      return false;
    }
    const attempts = state.attempts + 1;
    cursors.set(this.id, { ...state, attempts, failing_since: failingSince, next_attempt_ms: after + backoffMs(attempts) });
    this.waiting = true;
    return false;
  }

  private async disable(hook: StoredWebhook, state: WebhookCursor, failingSince: number, last: DeliveryAttempt): Promise<void> {
    const { stores, services, tenant, cursors } = this.engine;
    const since = new Date(failingSince).toISOString();
    const reason = `every delivery failed since ${since} (last: ${last.error ?? 'failed'})`;
    await stores.hooks.set(hook.id, {
      ...hook,
      enabled: false,
      disabled_reason: reason,
      updated: new Date(services.clock.now()).toISOString(),
    });
    // the failing event stays next: re-enabling resumes there, nothing is skipped
    await cursors.setDurably(this.id, { ...state, attempts: state.attempts + 1, failing_since: failingSince, next_attempt_ms: null });
    this.waiting = false;
    services.log.warn('webhook disabled after a day of failed deliveries', { org: tenant.org, webhook: hook.id, since });
    await emitEvent(tenant, {
      type: 'webhook.disabled',
      actor: SYSTEM_ACTOR,
      nodes: [],
      project: null,
      audience: 'admins',
      payload: {
        webhook: hook.id,
        host: hostOf(hook.url),
        failing_since: since,
        event: last.event,
        last_error: last.error,
        link: `/v1/webhooks/${hook.id}`,
      },
    });
  }
}

/** The host of a URL alone: a URL's path or query may be a credential (Slack's incoming webhook URLs are). */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}
