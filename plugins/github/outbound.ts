/**
 * The github plugin's outbound side (docs/github.md "Outbound"): per open tenant (its owner
 * alone in cluster mode), one loop follows the tenant's event log (kernel/events/types.ts)
 * from a durable cursor in the state store (`github-outbound`), like the webhook engine
 * (plugins/webhooks/engine.ts):
 *
 * - An event is a trigger, not the change: the loop reads the node as it is now and compares
 *   it with the sync record's `synced` (outbound-push.ts), so several events of one node send
 *   one update, and the server's own writes (inbound changes, which update `synced` at once)
 *   send nothing.
 * - Followed: `node.created` / `node.updated` / `node.status_changed` / `edge.added` /
 *   `edge.removed` of a synced node (title, body, status, labels, assignees) and
 *   `comment.added` on one (with the comments plugin); `node.created` of a node in a linked
 *   project (the link's `project`) whose type the link's mappings name creates its issue.
 * - Nothing lost: the cursor moves past an event only once what it asked for is on GitHub (or
 *   can never be: a 4xx other than a rate limit or bad credentials is logged and skipped). An
 *   outage, a rate limit the client gave up on (client.ts) or rejected credentials keep the
 *   event at the head and retry it with backoff (full jitter, at most RETRY_CAP_MS), however
 *   long: the queue is the event log, so a restart or a fail-over resumes at the cursor.
 * - Exactly once: the cursor is written durably after each event that wrote to GitHub (the others with their batch); an event done on GitHub
 *   whose cursor write a crash lost is done again, and every write re-reads GitHub first
 *   (outbound-push.ts), so it is not repeated.
 * - While the inbound queue (inbound.ts) holds a delivery for the same issue, the event waits
 *   (at most DEFER_MAX_MS): the inbound side is about to update `synced` or pair a comment, and
 *   going first would echo its change back.
 */
import type { WorkEvent } from '../../kernel/events/types.js';
import type { KernelServices } from '../../kernel/plugin.js';
import type { Collection } from '../../kernel/state-store.js';
import type { Tenant } from '../../kernel/tenant.js';
import { githubClient, statusOf, type GithubClient } from './client.js';
import {
  createIssue,
  linkForNewNode,
  postComment,
  pushNode,
  type OutboundStores,
  type PendingCreate,
  type PushContext,
} from './outbound-push.js';
import { storesOf, type GithubStores, type StoredLink, type SyncRecord } from './store.js';

export const RETRY_BASE_MS = 1000;
export const RETRY_CAP_MS = 5 * 60 * 1000;
/** how long an event waits for the inbound queue to finish with the same issue */
export const DEFER_MAX_MS = 30_000;
const DEFER_STEP_MS = 200;
const TICK_MS = 500;
const SHUTDOWN_WAIT_MS = 5_000;
const BATCH = 50;

export const FOLLOWED_TYPES = ['node.created', 'node.updated', 'node.status_changed', 'edge.added', 'edge.removed', 'comment.added'];

export interface OutboundCursor {
  /** the last event id done */
  cursor: number;
  /** failed attempts at the head event */
  attempts: number;
  next_attempt_ms: number | null;
  failing_since: string | null;
  last_error: string | null;
  last_success: string | null;
}

const CURSOR_KEY = 'cursor';

export function outboundStoresOf(tenant: Tenant): OutboundStores & { cursor: Collection<OutboundCursor> } {
  return {
    cursor: tenant.state.collection<OutboundCursor>('github-outbound'),
    pending: tenant.state.collection<PendingCreate>('github-outbound-pending'),
    notes: tenant.state.collection<string>('github-outbound-notes'),
  };
}

/** The delay before retry number `attempts`: exponential with full jitter, at least 100 ms. */
export function backoffMs(attempts: number, random: () => number = Math.random): number {
  const ceiling = Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** Math.min(attempts, 20));
  return Math.max(100, Math.floor(random() * ceiling));
}

/** Whether a failed GitHub call is worth repeating: no answer, 5xx, a rate limit, bad credentials. */
export function retryable(err: unknown): boolean {
  const status = statusOf(err);
  if (status === null || status >= 500 || status === 429 || status === 401) return true;
  if (status === 403) {
    // a rate limit the client stopped retrying; any other 403 is a refusal that repeating will not change
    const text = err instanceof Error ? err.message : String(err);
    return /rate limit/i.test(text);
  }
  return false;
}

/** Thrown to make the head event wait for the inbound queue (not a failure). */
class Deferred extends Error {}

const engines = new Map<Tenant, OutboundEngine>();

/** The outbound engine of an open tenant (started on first use). */
export function outboundOf(tenant: Tenant, services: KernelServices): OutboundEngine {
  let engine = engines.get(tenant);
  if (!engine) {
    const started = new OutboundEngine(tenant, services);
    engine = started;
    engines.set(tenant, engine);
    started.start();
    tenant.onClose(() => started.shutdown());
  }
  return engine;
}

export async function stopAllOutbound(): Promise<void> {
  await Promise.all([...engines.values()].map((e) => e.shutdown()));
}

export class OutboundEngine {
  readonly stores: GithubStores;
  readonly out: ReturnType<typeof outboundStoresOf>;
  private readonly clients = new Map<string, { key: string; client: Promise<GithubClient> }>();
  private unsubscribe: (() => void) | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** aborted at stop: the requests in flight must not outlive this process's turn with the tenant */
  private readonly cut = new AbortController();
  private kicked = false;
  /** the head event and since when it waits for the inbound queue */
  private deferred: { event: number; since: number } | null = null;
  stopped = false;

  constructor(
    readonly tenant: Tenant,
    readonly services: KernelServices,
  ) {
    this.stores = storesOf(tenant);
    this.out = outboundStoresOf(tenant);
  }

  start(): void {
    this.unsubscribe = this.tenant.events.subscribe(() => this.kick());
    this.timer = setInterval(() => this.tick(), TICK_MS);
    this.timer.unref();
    this.kick();
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.cut.abort();
    this.unsubscribe?.();
    if (this.timer) clearInterval(this.timer);
    engines.delete(this.tenant);
  }

  /** Stops and waits for the event in flight (its cursor written, or left for the next start). */
  async shutdown(): Promise<void> {
    this.stop();
    // requests were cut; a rate-limit wait (at most a minute, client.ts) is not waited out: what
    // it held is done again by the next start, which re-reads GitHub first
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.running, new Promise<void>((r) => (timer = setTimeout(r, SHUTDOWN_WAIT_MS)))]);
    clearTimeout(timer);
  }

  /** The cursor as stored (null before the first start wrote one). */
  cursor(): OutboundCursor | null {
    return this.out.cursor.get(CURSOR_KEY) ?? null;
  }

  private live(): boolean {
    if (this.stopped) return false;
    if (this.services.tenants.get(this.tenant.org) !== this.tenant || !this.tenant.enabled('github')) {
      this.stop();
      return false;
    }
    return true;
  }

  private serving(): boolean {
    return this.services.serves ? this.services.serves(this.tenant.org) : true;
  }

  kick(): void {
    this.kicked = true;
    if (!this.running && !this.stopped) {
      this.running = this.run().finally(() => {
        this.running = null;
      });
    }
  }

  private tick(): void {
    if (!this.live()) return;
    const c = this.cursor();
    if (c?.next_attempt_ms != null && c.next_attempt_ms <= this.services.clock.now()) this.kick();
  }

  private async run(): Promise<void> {
    try {
      while (this.kicked && this.live()) {
        this.kicked = false;
        while (this.live() && (await this.step())) {
          /* next batch */
        }
      }
    } catch (err) {
      this.services.log.warn('github outbound loop failed', { org: this.tenant.org, error: String(err) });
    }
  }

  /** One batch from the cursor. True: go on at once; false: caught up, or waiting for a retry. */
  private async step(): Promise<boolean> {
    const now = this.services.clock.now();
    let state = this.cursor();
    if (!state) {
      // the first start follows what happens from now on: history before the plugin is the importer's (first sync)
      state = {
        cursor: this.tenant.events.lastId,
        attempts: 0,
        next_attempt_ms: null,
        failing_since: null,
        last_error: null,
        last_success: null,
      };
      await this.out.cursor.set(CURSOR_KEY, state);
    }
    if (state.next_attempt_ms !== null && state.next_attempt_ms > now) return false;
    // a former owner (cluster mode) sends nothing once its lease may have been taken over
    if (!this.serving()) return false;
    // nothing linked: nothing to do, and no write per event (a first link passes over what came
    // before it: no node has a sync record yet, and nodes created before the link are not sent)
    if (this.stores.links.size === 0) return false;
    // events up to here that are not followed are passed over with the batch
    const head = this.tenant.events.lastId;
    const events = await this.tenant.events.read(state.cursor, { types: FOLLOWED_TYPES }, BATCH);
    if (events.length === 0) {
      if (head > state.cursor) await this.out.cursor.set(CURSOR_KEY, { ...state, cursor: head });
      return false;
    }
    for (const event of events) {
      if (!this.live()) return false;
      let wrote = false;
      try {
        wrote = await this.handle(event);
        this.deferred = null;
      } catch (err) {
        // cut by the tenant closing here: not a failure of GitHub's; the next start does it again
        if (this.stopped) return false;
        if (err instanceof Deferred) {
          await this.out.cursor.set(CURSOR_KEY, { ...state, next_attempt_ms: this.services.clock.now() + DEFER_STEP_MS });
          return false;
        }
        if (retryable(err)) {
          const attempts = state.attempts + 1;
          const after = this.services.clock.now();
          state = {
            ...state,
            attempts,
            next_attempt_ms: after + backoffMs(attempts),
            failing_since: state.failing_since ?? new Date(after).toISOString(),
            last_error: describe(err),
          };
          await this.out.cursor.set(CURSOR_KEY, state);
          this.services.log.warn('github outbound: GitHub call failed, retrying', {
            org: this.tenant.org,
            event: event.id,
            attempts,
            error: describe(err),
          });
          return false;
        }
        // GitHub refused it for good (422, 404, 410, a 403 that is no rate limit): repeating will not help
        this.services.log.warn('github outbound: change refused by GitHub, skipped', {
          org: this.tenant.org,
          event: event.id,
          node: event.nodes[0],
          error: describe(err),
        });
        state = { ...state, last_error: describe(err) };
      }
      state = {
        ...state,
        cursor: event.id,
        attempts: 0,
        next_attempt_ms: null,
        failing_since: null,
        last_success: new Date(this.services.clock.now()).toISOString(),
      };
      // after a write to GitHub, durable before the next event: a crash repeats at most this one,
      // which re-reads GitHub first; an event that wrote nothing is made durable with the batch
      if (wrote) await this.out.cursor.set(CURSOR_KEY, state);
    }
    await this.out.cursor.set(CURSOR_KEY, events.length < BATCH && head > state.cursor ? { ...state, cursor: head } : state);
    return true;
  }

  private client(link: StoredLink): Promise<GithubClient> {
    // a link changed (new credentials) gets a new client; the same link keeps one, so the throttle's state holds
    const key = link.updated;
    const cached = this.clients.get(link.id);
    if (cached && cached.key === key) return cached.client;
    const client = githubClient(link.auth, {
      baseUrl: this.services.config.githubApiUrl,
      log: this.services.log,
      // few, short retries in the client: the engine's own backoff (kept durably) takes over after them
      retries: 2,
      retryBaseMs: 500,
      signal: this.cut.signal,
      context: { org: this.tenant.org, link: link.id },
    });
    this.clients.set(link.id, { key, client });
    return client;
  }

  private async context(link: StoredLink): Promise<PushContext> {
    return { tenant: this.tenant, services: this.services, stores: this.stores, out: this.out, link, gh: await this.client(link) };
  }

  /** Waits (by throwing Deferred) while the inbound queue holds a delivery for this issue; at most DEFER_MAX_MS per event. */
  private awaitInbound(event: WorkEvent, record: SyncRecord): void {
    let busy = false;
    for (const d of this.stores.inbound.values()) {
      if (d.state !== 'queued' || d.link !== record.link) continue;
      const payload = d.payload as { issue?: { number?: unknown } } | null;
      if (payload?.issue?.number === record.issue_number) {
        busy = true;
        break;
      }
    }
    if (!busy) return;
    const now = this.services.clock.now();
    if (!this.deferred || this.deferred.event !== event.id) this.deferred = { event: event.id, since: now };
    if (now - this.deferred.since < DEFER_MAX_MS) throw new Deferred('the inbound queue holds this issue');
  }

  /** Does what `event` asks on GitHub; true when it wrote there (the cursor must then be durable before the next). */
  private async handle(event: WorkEvent): Promise<boolean> {
    const id = event.nodes[0];
    if (!id) return false;
    const node = this.tenant.index.get(id);
    if (!node) return false;
    let record = this.stores.sync.get(id);
    if (event.type === 'comment.added') {
      const commentId = event.nodes[1];
      if (!record || !commentId || !this.tenant.enabled('comments')) return false;
      const paired = () => Object.values(this.stores.sync.get(id)?.comments ?? {}).includes(commentId);
      if (paired()) return false;
      const link = this.stores.links.get(record.link);
      if (!link || !link.enabled) return false;
      this.awaitInbound(event, record);
      // the inbound side paired it meanwhile: it came from GitHub
      if (paired()) return false;
      const comment = this.tenant.index.get(commentId);
      if (!comment) return false;
      record = this.stores.sync.get(id) ?? record;
      await postComment(await this.context(link), record, comment);
      return true;
    }
    if (!record) {
      // a create that may have reached GitHub before a crash is finished whatever the event
      const pending = this.out.pending.get(`issue:${id}`);
      const link = pending
        ? this.stores.links.get(pending.link)
        : event.type === 'node.created'
          ? linkForNewNode(this.stores, node)
          : undefined;
      if (!link || !link.enabled) return false;
      // a node created before its project was linked is not sent (the link starts from its own
      // time; to the second, as a commit's date is)
      if (!pending && Date.parse(event.time) < Math.floor(Date.parse(link.created) / 1000) * 1000) return false;
      await createIssue(await this.context(link), node);
      return true;
    }
    const link = this.stores.links.get(record.link);
    if (!link || !link.enabled) return false;
    this.awaitInbound(event, record);
    const done = await pushNode(await this.context(link), this.stores.sync.get(id) ?? record, this.tenant.index.get(id) ?? node);
    return done.sent.length > 0 || done.conflicts.length > 0;
  }
}

function describe(err: unknown): string {
  const status = statusOf(err);
  const message = err instanceof Error ? err.message : String(err);
  return status === null ? message : `${status}: ${message}`;
}

/**
 * The outbound side's state for a tenant, for an admin's view of its links (events behind the
 * cursor, the failing head's attempts and last error): the link view may show it.
 */
export function outboundStatus(tenant: Tenant): {
  behind: number;
  attempts: number;
  failing_since: string | null;
  last_error: string | null;
  last_success: string | null;
} {
  const c = outboundStoresOf(tenant).cursor.get(CURSOR_KEY);
  return {
    behind: c ? Math.max(0, tenant.events.lastId - c.cursor) : 0,
    attempts: c?.attempts ?? 0,
    failing_since: c?.failing_since ?? null,
    last_error: c?.last_error ?? null,
    last_success: c?.last_success ?? null,
  };
}
