/**
 * GitHub's webhooks in: `POST /v1/integrations/github/webhook?tenant=<org>` (no bearer token;
 * docs/github.md "The webhook").
 *
 * - Verified: the payload names its repository (an `installation` event its installation); the
 *   link of that repository (or installation) gives the secret the `X-Hub-Signature-256` is
 *   checked against with `@octokit/webhooks`. No link: 404; a bad or missing signature: 401.
 * - Idempotent: the `X-GitHub-Delivery` id is the key of the queued record; a delivery id seen
 *   before (queued or done, kept RETAIN_MS) answers 200 `{duplicate: true}` and does nothing. A
 *   failed one is queued again: GitHub's "Redeliver" is how an admin retries it.
 * - Durable before acknowledged: the 202 is sent once the delivery is in the tenant's state
 *   store (`github-inbound`); nothing is processed inline, so GitHub's 10 s are never at risk.
 * - The worker (one per open tenant, the owner's in cluster mode) takes queued deliveries in
 *   arrival order, one at a time, and hands each to its handler (handlers/index.ts). A failure
 *   is retried with backoff; a delivery that can never apply (a 4xx SvcError, the link gone)
 *   or still fails after MAX_ATTEMPTS is marked failed (the link's view counts it and shows the
 *   last error) and the queue goes on. A restart resumes with the queued records.
 * - Cluster mode: a router (services.requestRouters) sends the request to the owner of `?tenant=`.
 */
import type { IncomingMessage } from 'node:http';
import type { Webhooks } from '@octokit/webhooks';
import type { Middleware } from 'koa';
import { readRawBody } from '../../kernel/body.js';
import { errors, isSvcError, SvcError } from '../../kernel/errors.js';
import type { KernelServices, OpContext, RequestRouter } from '../../kernel/plugin.js';
import type { Tenant } from '../../kernel/tenant.js';
import { actorFor } from '../../kernel/tenants.js';
import { handlers, type InboundContext, type Mapper } from './handlers/index.js';
import { loginOfPerson, personOfLogin, priorityOfLabels, stateOfStatus, statusOfState, typeOfLabels } from './mapping.js';
import { linkOfRepo, linksOfInstallation, storesOf, type GithubStores, type InboundDelivery, type StoredLink } from './store.js';

export const WEBHOOK_PATH = '/v1/integrations/github/webhook';
/**
 * The largest delivery accepted (413 beyond). GitHub caps payloads at 25 MB, but a delivery is
 * parsed whole and kept in the state store until processed; issue, comment and pull request
 * payloads are a few KB, a push of many commits a few MB at most.
 */
export const MAX_DELIVERY_BYTES = 10 * 1024 * 1024;
/** done and failed delivery ids are kept this long (GitHub redelivers up to 3 days back) */
export const RETAIN_MS = 7 * 24 * 60 * 60 * 1000;
export const MAX_ATTEMPTS = 10;
const RETRY_BASE_MS = 1000;
const RETRY_CAP_MS = 5 * 60 * 1000;
const TICK_MS = 1000;
const PRUNE_EVERY_MS = 60 * 60 * 1000;

/** The delay before retry number `attempts`: exponential with full jitter, at least 100 ms. */
export function backoffMs(attempts: number, random: () => number = Math.random): number {
  const ceiling = Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** Math.min(attempts, 20));
  return Math.max(100, Math.floor(random() * ceiling));
}

const SECRET_WEBHOOKS = new Map<string, Webhooks>();

/** Whether `signature` (X-Hub-Signature-256) signs `body` with `secret`, checked by @octokit/webhooks. */
async function verified(secret: string, body: string, signature: string): Promise<boolean> {
  if (!secret || !signature.startsWith('sha256=')) return false;
  let webhooks = SECRET_WEBHOOKS.get(secret);
  if (!webhooks) {
    if (SECRET_WEBHOOKS.size > 1000) SECRET_WEBHOOKS.clear();
    // loaded on the first delivery: a server with no GitHub link never parses the library
    const { Webhooks: WebhooksClass } = await import('@octokit/webhooks');
    webhooks = new WebhooksClass({ secret });
    SECRET_WEBHOOKS.set(secret, webhooks);
  }
  try {
    return await webhooks.verify(body, signature);
  } catch {
    // a malformed signature header is a bad signature
    return false;
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The links a payload may belong to: its repository's, else (installation events) its installation's. */
function candidateLinks(stores: GithubStores, payload: Record<string, unknown>): StoredLink[] {
  const repo = isRecord(payload.repository) ? payload.repository.full_name : undefined;
  if (typeof repo === 'string') {
    const link = linkOfRepo(stores, repo);
    return link ? [link] : [];
  }
  const installation = isRecord(payload.installation) ? payload.installation.id : undefined;
  return typeof installation === 'number' ? linksOfInstallation(stores, installation) : [];
}

/** The payload: JSON, or GitHub's form encoding (`payload=<json>`) when the hook was set up so. */
function parsePayload(raw: Buffer, contentType: string | undefined): Record<string, unknown> {
  let text = raw.toString('utf8');
  if ((contentType ?? '').startsWith('application/x-www-form-urlencoded')) text = new URLSearchParams(text).get('payload') ?? '';
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw errors.badRequest('the delivery is not JSON (set the webhook content type to application/json)');
  }
  if (!isRecord(parsed)) throw errors.badRequest('the delivery is not a JSON object');
  return parsed;
}

const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** The webhook route (a plugin middleware: it carries no bearer token, so the API routers' auth does not apply). */
export function webhookMiddleware(services: KernelServices): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== WEBHOOK_PATH) return next();
    // the route pattern for the access log and metrics (the query, with the org, is not logged)
    (ctx as typeof ctx & { _matchedRoute?: string })._matchedRoute = WEBHOOK_PATH;
    if (ctx.method !== 'POST') throw new SvcError(405, 'method_not_allowed', `${ctx.method} is not allowed on ${WEBHOOK_PATH}`);
    const org = typeof ctx.query.tenant === 'string' ? ctx.query.tenant : '';
    const tenant = org ? services.tenants.get(org) : undefined;
    if (!tenant || !tenant.enabled('github')) throw errors.notFound(`tenant ${org || '(none: add ?tenant=<org>)'}`);
    ctx.state.tenant = tenant.org;
    const event = header(ctx.req, 'x-github-event');
    const delivery = header(ctx.req, 'x-github-delivery');
    if (!event || !/^[a-z_]{1,64}$/.test(event)) throw errors.badRequest('missing or malformed X-GitHub-Event header');
    if (!delivery || !/^[A-Za-z0-9-]{1,100}$/.test(delivery)) throw errors.badRequest('missing or malformed X-GitHub-Delivery header');
    const raw = await readRawBody(ctx.req, MAX_DELIVERY_BYTES);
    const payload = parsePayload(raw, header(ctx.req, 'content-type'));
    const stores = storesOf(tenant);
    // a ping of an App's or an organization's hook names neither a repository nor an installation: any link whose secret signs it
    const unnamed = event === 'ping' && !isRecord(payload.repository) && !isRecord(payload.installation);
    const candidates = unnamed ? [...stores.links.values()] : candidateLinks(stores, payload);
    if (candidates.length === 0) throw errors.notFound('GitHub link for this repository or installation');
    const signature = header(ctx.req, 'x-hub-signature-256') ?? '';
    const body = raw.toString('utf8');
    let link: StoredLink | undefined;
    for (const candidate of candidates) {
      if (await verified(candidate.webhook_secret, body, signature)) {
        link = candidate;
        break;
      }
    }
    if (!link) {
      services.log.warn('github webhook refused: bad or missing signature', { tenant: tenant.org, event, delivery });
      throw new SvcError(401, 'invalid_signature', 'X-Hub-Signature-256 is missing or does not match the link\u2019s webhook secret');
    }
    ctx.type = 'application/json';
    if (event === 'ping') {
      // GitHub's test delivery when the hook is created: nothing to do
      ctx.status = 200;
      ctx.body = JSON.stringify({ ok: true, link: link.id });
      return;
    }
    const worker = workerOf(tenant, services);
    // a delivery that failed is queued again when GitHub redelivers it (an admin's "Redeliver" after fixing the cause)
    if (stores.inbound.has(delivery) && stores.inbound.get(delivery)?.state !== 'failed') {
      ctx.status = 200;
      ctx.body = JSON.stringify({ duplicate: true, delivery });
      return;
    }
    await worker.enqueue(delivery, link, event, payload);
    ctx.status = 202;
    ctx.body = JSON.stringify({ queued: true, delivery });
  };
}

/** Cluster mode: a webhook goes to the owner of its `?tenant=` (only the owner writes the tenant's queue). */
export const webhookRouter: RequestRouter = {
  applies: (req) => (req.method === 'POST' && (req.url ?? '').split('?')[0] === WEBHOOK_PATH ? 'headers' : false),
  async route(req) {
    const org = new URL(req.url ?? '/', 'http://localhost').searchParams.get('tenant');
    return org ? { org } : null;
  },
};

/** A token record that names no credential: the identity a handler writes as (never stored, never a bearer). */
function writerActor(tenant: Tenant, link: StoredLink, person: string) {
  return actorFor(tenant, {
    hash: `github:${link.id}`,
    kind: 'pat',
    person,
    agent: null,
    session: null,
    label: `github ${link.repo}`,
    audience: null,
    created: link.created,
    expires: null,
    revoked_at: null,
    last_used: null,
    minted_by: null,
    parent: null,
  });
}

export function mapperOf(tenant: Tenant, link: StoredLink): Mapper {
  const m = link.mappings;
  return {
    mappings: m,
    typeOf: (labels) => typeOfLabels(m, labels),
    priorityOf: (labels) => priorityOfLabels(m, labels),
    statusOf: (type, state, reason) => statusOfState(tenant, m, type, state, reason),
    stateOf: (type, status) => stateOfStatus(tenant, m, type, status),
    personOf: (login) => personOfLogin(tenant, m, login),
    loginOf: (person) => loginOfPerson(tenant, m, person),
  };
}

/**
 * The context a handler runs in. `as(login)` acts as the person the login maps to, else as the
 * link's bot person, else (that person removed) as the admin who made the link; none of them
 * existing is a delivery that cannot apply (422 no_person).
 */
export function inboundContext(
  tenant: Tenant,
  services: KernelServices,
  link: StoredLink,
  delivery: string,
  event: string,
): InboundContext {
  const map = mapperOf(tenant, link);
  return {
    tenant,
    services,
    link,
    stores: storesOf(tenant),
    delivery,
    event,
    map,
    log: services.log,
    as(login): OpContext {
      const isPerson = (id: string | null) => id !== null && tenant.index.get(id)?.type === 'person';
      const mapped = map.personOf(login);
      const person = [mapped, link.bot_person, link.created_by].find(isPerson);
      if (!person) throw errors.noPerson(`neither ${link.bot_person} nor ${link.created_by} is a person of this tenant any more`);
      return { tenant, actor: writerActor(tenant, link, person), via: 'rest', services, headers: {} };
    },
    asPerson(person): OpContext {
      if (tenant.index.get(person)?.type !== 'person') throw errors.noPerson(`${person} is not a person of this tenant`);
      return { tenant, actor: writerActor(tenant, link, person), via: 'rest', services, headers: {} };
    },
  };
}

/** The tenant's deliveries waiting and failed (all links). */
export function inboundCounts(tenant: Tenant): { queued: number; failed: number } {
  const counts = { queued: 0, failed: 0 };
  for (const d of storesOf(tenant).inbound.values()) if (d.state !== 'done') counts[d.state]++;
  return counts;
}

const workers = new Map<Tenant, InboundWorker>();

/** The inbound worker of an open tenant (started on first use). */
export function workerOf(tenant: Tenant, services: KernelServices): InboundWorker {
  let worker = workers.get(tenant);
  if (!worker) {
    const started = new InboundWorker(tenant, services);
    worker = started;
    workers.set(tenant, worker);
    started.start();
    tenant.onClose(async () => {
      workers.delete(tenant);
      await started.stop();
    });
  }
  return worker;
}

export async function stopAllWorkers(): Promise<void> {
  const all = [...workers.values()];
  workers.clear();
  await Promise.all(all.map((w) => w.stop()));
}

export class InboundWorker {
  readonly stores: GithubStores;
  private nextSeq: number;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  private lastPrune = 0;

  constructor(
    readonly tenant: Tenant,
    readonly services: KernelServices,
  ) {
    this.stores = storesOf(tenant);
    let max = 0;
    for (const d of this.stores.inbound.values()) max = Math.max(max, d.seq);
    this.nextSeq = max + 1;
  }

  start(): void {
    // the tick: retries that came due (the clock may be moved), pruning, and a queue left by a restart
    this.timer = setInterval(() => this.kick(), TICK_MS);
    this.timer.unref();
    this.kick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    while (this.running) await this.running;
  }

  /** Queues a verified delivery durably (resolves once it is in the store), then wakes the worker. */
  async enqueue(id: string, link: StoredLink, event: string, payload: Record<string, unknown>): Promise<void> {
    const record: InboundDelivery = {
      id,
      seq: this.nextSeq++,
      link: link.id,
      event,
      action: typeof payload.action === 'string' ? payload.action : '',
      received: new Date(this.services.clock.now()).toISOString(),
      state: 'queued',
      attempts: 0,
      next_attempt_ms: 0,
      last_error: null,
      payload,
      finished: null,
    };
    await this.stores.inbound.set(id, record);
    this.kick();
  }

  /** Cluster mode: this process surely holds the tenant's lease now; one process: always. */
  private serving(): boolean {
    return this.services.serves ? this.services.serves(this.tenant.org) : true;
  }

  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain()
      .catch((err: unknown) => this.services.log.error('github inbound worker failed', { org: this.tenant.org, error: String(err) }))
      .finally(() => {
        this.running = null;
        if (this.again && !this.stopped) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** The queued deliveries, oldest first. */
  queued(): InboundDelivery[] {
    return [...this.stores.inbound.values()].filter((d) => d.state === 'queued').sort((a, b) => a.seq - b.seq);
  }

  private async drain(): Promise<void> {
    this.again = false;
    await this.prune();
    while (!this.stopped && this.serving()) {
      const next = this.queued()[0];
      if (!next) return;
      // in order: a delivery waiting for its retry holds the ones behind it
      if (next.next_attempt_ms > this.services.clock.now()) return;
      await this.process(next);
    }
  }

  private async finish(d: InboundDelivery, state: 'done' | 'failed', error: string | null): Promise<void> {
    await this.stores.inbound.set(d.id, {
      ...d,
      state,
      payload: null,
      last_error: error,
      attempts: state === 'failed' ? d.attempts + 1 : d.attempts,
      finished: new Date(this.services.clock.now()).toISOString(),
    });
  }

  private async process(d: InboundDelivery): Promise<void> {
    const link = this.stores.links.get(d.link);
    const handler = Object.hasOwn(handlers, d.event) ? handlers[d.event] : undefined;
    // unlinked since, or an event this server does not follow: nothing to do
    if (!link || !handler) return this.finish(d, 'done', link ? null : 'the link was removed');
    // a disabled link holds nothing back; only installation events (an App reinstalled) still apply
    if (!link.enabled && d.event !== 'installation') return this.finish(d, 'done', 'the link is disabled');
    try {
      await handler(inboundContext(this.tenant, this.services, link, d.id, d.event), d.payload);
      await this.finish(d, 'done', null);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      // a refusal that a retry cannot change (a stale revision can: it is read again)
      const permanent = isSvcError(err) && err.status >= 400 && err.status < 500 && err.code !== 'conflict';
      const attempts = d.attempts + 1;
      this.services.log.warn('github delivery failed', {
        org: this.tenant.org,
        delivery: d.id,
        event: d.event,
        attempt: attempts,
        error: message,
      });
      if (permanent || attempts >= MAX_ATTEMPTS) return this.finish(d, 'failed', message);
      await this.stores.inbound.set(d.id, {
        ...d,
        attempts,
        last_error: message,
        next_attempt_ms: this.services.clock.now() + backoffMs(attempts),
      });
    }
  }

  /** Done and failed records past RETAIN_MS go (their ids no longer needed for idempotency). */
  private async prune(): Promise<void> {
    const now = this.services.clock.now();
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    const old = [...this.stores.inbound.values()].filter((d) => d.finished !== null && now - Date.parse(d.finished) > RETAIN_MS);
    if (old.length > 0) await this.stores.inbound.batch(old.map((d) => ({ key: d.id, value: null })));
  }
}
