/**
 * The core function of each webhooks operation (declared in api.ts). Every one is for admins
 * with a person's own credential (a PAT, or an OAuth token or connector JWT of an admin): a
 * subscription sends the tenant's events, admin events included, to any address, and its
 * secret is a credential, so an agent token (even an admin's agent) is refused.
 */
import { SvcError, errors } from '../../kernel/errors.js';
import { emitEvent, eventActorOf } from '../../kernel/events/emit.js';
import type { NewEvent } from '../../kernel/events/types.js';
import { matchesFilter } from '../../kernel/events/types.js';
import type { Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import { engineOf, hostOf } from './engine.js';
import type { CreateWebhookInput, DeliveriesInput, RedeliverInput, UpdateWebhookInput, WebhookIdInput, WebhookViewT } from './schemas.js';
import { messageIdOf } from './format.js';
import { parseTarget, resolveTarget, TargetRefused } from './send.js';
import { eventsOf, filterOf, MAX_WEBHOOKS, newSecret, newWebhookId, storesOf, type StoredWebhook } from './store.js';

/** A rotated-out secret keeps signing (a second signature) this long. */
const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

function requireAdmin(ctx: OpContext): void {
  if (ctx.actor.agent) throw errors.forbidden('webhooks are managed with a person\u2019s own credential, not an agent token');
  if (!ctx.actor.isAdmin) throw errors.forbidden('admin only: webhooks send the tenant\u2019s events to another system');
}

function hookOf(ctx: OpContext, id: string): StoredWebhook {
  const hook = storesOf(ctx.tenant).hooks.get(id);
  if (!hook) throw errors.notFound(`webhook ${id}`);
  return hook;
}

/** The URL as a target, its host resolved and checked (422 `url_refused` naming why). */
async function checkUrl(ctx: OpContext, url: string): Promise<string> {
  try {
    const target = parseTarget(url);
    await resolveTarget(target, { allowPrivate: ctx.services.config.webhookAllowPrivate });
    return target.toString();
  } catch (err) {
    if (err instanceof TargetRefused) throw new SvcError(422, 'url_refused', `webhook url refused: ${err.message}`, { field: 'url' });
    throw err;
  }
}

function checkProject(ctx: OpContext, project: string | null | undefined): string | null {
  if (project === undefined || project === null) return null;
  const node = ctx.tenant.index.get(project);
  if (!node || node.type !== 'project')
    throw errors.validation(`project ${project} is not a project node of this tenant`, [{ field: 'project' }]);
  return project;
}

/** `*` alone means every type (stored as none). */
function normalizeTypes(types: string[] | undefined): string[] {
  if (!types || types.includes('*')) return [];
  return [...new Set(types)];
}

export function view(ctx: OpContext, hook: StoredWebhook): WebhookViewT {
  // the engine's cursor: the newest, ahead of what is durable
  const cursor = engineOf(ctx.tenant, ctx.services).cursors.get(hook.id);
  const failing = cursor?.failing_since != null;
  return {
    id: hook.id,
    url: hook.url,
    types: hook.types,
    project: hook.project,
    description: hook.description,
    format: hook.format,
    enabled: hook.enabled,
    state: !hook.enabled ? 'disabled' : failing ? 'failing' : 'active',
    disabled_reason: hook.disabled_reason,
    last_event: cursor?.cursor ?? 0,
    failing_since: cursor?.failing_since != null ? new Date(cursor.failing_since).toISOString() : null,
    next_attempt: hook.enabled && cursor?.next_attempt_ms != null ? new Date(cursor.next_attempt_ms).toISOString() : null,
    attempts: cursor?.attempts ?? 0,
    last_success: cursor?.last_success ?? null,
    created: hook.created,
    created_by: hook.created_by,
    updated: hook.updated,
  };
}

/** An admin event about a subscription (never its secret, nor its URL beyond the host: a URL may hold a credential). */
async function emitAdmin(ctx: OpContext, type: string, hook: StoredWebhook, extra: Record<string, unknown> = {}): Promise<void> {
  const event: NewEvent = {
    type,
    actor: eventActorOf(ctx.actor, ctx.via),
    nodes: [],
    project: null,
    audience: 'admins',
    payload: { webhook: hook.id, host: hostOf(hook.url), link: `/v1/webhooks/${hook.id}`, ...extra },
  };
  await emitEvent(ctx.tenant, event);
}

export async function createWebhook(ctx: OpContext, input: Static<typeof CreateWebhookInput>) {
  requireAdmin(ctx);
  const stores = storesOf(ctx.tenant);
  if (stores.hooks.size >= MAX_WEBHOOKS)
    throw errors.conflict(`a tenant has at most ${MAX_WEBHOOKS} webhooks; delete one first`, { limit: MAX_WEBHOOKS });
  const url = await checkUrl(ctx, input.url);
  const project = checkProject(ctx, input.project);
  const now = new Date(ctx.services.clock.now()).toISOString();
  const hook: StoredWebhook = {
    id: newWebhookId(),
    url,
    types: normalizeTypes(input.types),
    project,
    description: input.description ?? '',
    format: input.format ?? 'json',
    enabled: input.enabled ?? true,
    secret: newSecret(),
    previous_secret: null,
    previous_until: null,
    disabled_reason: null,
    created: now,
    created_by: ctx.actor.personId,
    updated: now,
  };
  const log = eventsOf(ctx.tenant);
  // a new subscription starts with the events after its creation
  await stores.cursors.set(hook.id, { cursor: log.lastId, attempts: 0, failing_since: null, next_attempt_ms: null, last_success: null });
  await stores.hooks.set(hook.id, hook);
  await emitAdmin(ctx, 'webhook.created', hook, { types: hook.types, project: hook.project, format: hook.format });
  engineOf(ctx.tenant, ctx.services).worker(hook.id).kick();
  return { webhook: view(ctx, hook), secret: hook.secret };
}

export async function listWebhooks(ctx: OpContext) {
  requireAdmin(ctx);
  const hooks = [...storesOf(ctx.tenant).hooks.values()].sort((a, b) => (a.created < b.created ? -1 : a.created > b.created ? 1 : 0));
  return { webhooks: hooks.map((h) => view(ctx, h)) };
}

export async function getWebhook(ctx: OpContext, input: Static<typeof WebhookIdInput>) {
  requireAdmin(ctx);
  return view(ctx, hookOf(ctx, input.id));
}

export async function updateWebhook(ctx: OpContext, input: Static<typeof UpdateWebhookInput>) {
  requireAdmin(ctx);
  const stores = storesOf(ctx.tenant);
  const hook = hookOf(ctx, input.id);
  const url = input.url !== undefined ? await checkUrl(ctx, input.url) : hook.url;
  const project = input.project !== undefined ? checkProject(ctx, input.project) : hook.project;
  const now = ctx.services.clock.now();
  const next: StoredWebhook = {
    ...hook,
    url,
    project,
    types: input.types !== undefined ? normalizeTypes(input.types) : hook.types,
    description: input.description ?? hook.description,
    format: input.format ?? hook.format,
    enabled: input.enabled ?? hook.enabled,
    updated: new Date(now).toISOString(),
  };
  if (input.rotate_secret) {
    next.secret = newSecret();
    next.previous_secret = hook.secret;
    next.previous_until = new Date(now + ROTATION_OVERLAP_MS).toISOString();
  }
  const reenabled = next.enabled && !hook.enabled;
  if (next.enabled) next.disabled_reason = null;
  await stores.hooks.set(hook.id, next);
  if (reenabled) {
    // the event it stopped on is tried again at once, with a fresh day before the next disable
    const cursors = engineOf(ctx.tenant, ctx.services).cursors;
    const cursor = cursors.get(hook.id);
    if (cursor) await cursors.setDurably(hook.id, { ...cursor, attempts: 0, failing_since: null, next_attempt_ms: null });
  }
  const changed = Object.keys(input).filter((k) => k !== 'id');
  await emitAdmin(ctx, 'webhook.updated', next, { changed, enabled: next.enabled });
  if (next.enabled) engineOf(ctx.tenant, ctx.services).worker(hook.id).kick();
  return { webhook: view(ctx, next), ...(input.rotate_secret ? { secret: next.secret } : {}) };
}

export async function deleteWebhook(ctx: OpContext, input: Static<typeof WebhookIdInput>) {
  requireAdmin(ctx);
  const stores = storesOf(ctx.tenant);
  const hook = hookOf(ctx, input.id);
  const engine = engineOf(ctx.tenant, ctx.services);
  engine.forget(hook.id);
  await stores.hooks.delete(hook.id);
  await engine.cursors.delete(hook.id);
  await engine.deliveryLog.delete(hook.id);
  await emitAdmin(ctx, 'webhook.deleted', hook);
  return { id: hook.id, deleted: true };
}

/** A `webhook.ping` now, to this subscription only, in its turn (not through the event log: no one else sees it). */
export async function pingWebhook(ctx: OpContext, input: Static<typeof WebhookIdInput>) {
  requireAdmin(ctx);
  const hook = hookOf(ctx, input.id);
  const engine = engineOf(ctx.tenant, ctx.services);
  const time = new Date(ctx.services.clock.now()).toISOString();
  const messageId = `ping_${ctx.tenant.org}_${hook.id}_${Date.now().toString(36)}`;
  const data = {
    id: 0,
    type: 'webhook.ping',
    time,
    org: ctx.tenant.org,
    actor: eventActorOf(ctx.actor, ctx.via),
    nodes: [],
    project: null,
    audience: 'admins' as const,
    payload: { webhook: hook.id, link: `/v1/webhooks/${hook.id}` },
  };
  const body =
    hook.format === 'slack'
      ? JSON.stringify({ text: `Webhook ping from work graph ${ctx.tenant.org} (${hook.id}): this channel receives its events.` })
      : JSON.stringify({ type: data.type, timestamp: time, data });
  const delivery = await engine
    .worker(hook.id)
    .exclusive(() => engine.attempt(hook, { event: 0, type: 'webhook.ping', messageId, body }, 'ping', 1));
  return { delivery };
}

export async function listWebhookDeliveries(ctx: OpContext, input: Static<typeof DeliveriesInput>) {
  requireAdmin(ctx);
  const hook = hookOf(ctx, input.id);
  const log = engineOf(ctx.tenant, ctx.services).deliveryLog.entries(hook.id);
  return { webhook: view(ctx, hook), deliveries: log.slice(0, input.limit ?? 50) };
}

/** One event again, now, outside the ordered loop's cursor (which it does not move). */
export async function redeliverWebhook(ctx: OpContext, input: Static<typeof RedeliverInput>) {
  requireAdmin(ctx);
  const hook = hookOf(ctx, input.id);
  const log = eventsOf(ctx.tenant);
  const [event] = await log.read(input.event - 1, { admin: true }, 1);
  if (!event || event.id !== input.event) throw errors.notFound(`event ${input.event}`, { first_retained: log.firstId, last: log.lastId });
  if (!matchesFilter(event, filterOf(hook)))
    throw errors.conflict(`event ${event.id} (${event.type}) does not match this webhook's filter`, {
      types: hook.types,
      project: hook.project,
    });
  const engine = engineOf(ctx.tenant, ctx.services);
  const body = engine.bodyOf(hook, event);
  const delivery = await engine
    .worker(hook.id)
    .exclusive(() => engine.attempt(hook, { event: event.id, type: event.type, messageId: messageIdOf(event), body }, 'redelivery', 1));
  return { delivery };
}
