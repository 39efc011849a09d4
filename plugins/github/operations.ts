/**
 * The core function of each link operation (declared in api.ts). Every one is for admins with
 * a person's own credential: a link holds credentials that write to GitHub and lets GitHub
 * write into the graph, so an agent token (even an admin's agent) is refused, like the
 * webhooks plugin's subscriptions (plugins/webhooks/operations.ts).
 *
 * Credentials (token, App private key, webhook secret) live in the state store only: an answer
 * says `has_token: true` and never carries one, except a webhook secret the server generated,
 * answered once by the call that made it.
 */
import { createPrivateKey } from 'node:crypto';
import { errors } from '../../kernel/errors.js';
import type { Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import { FIRST_SYNC_EVENT, firstSyncDeliveryOf } from './first-sync.js';
import { WEBHOOK_PATH, workerOf } from './inbound.js';
import { withDefaults } from './mapping.js';
import type { LinkIdInput, LinkInput, LinkViewT, MappingsInput, UpdateLinkInput } from './schemas.js';
import {
  linkOfRepo,
  MAX_LINKS,
  newLinkId,
  newWebhookSecret,
  storesOf,
  type LinkAuth,
  type LinkMappings,
  type StoredLink,
} from './store.js';

function requireAdmin(ctx: OpContext): void {
  if (ctx.actor.agent) throw errors.forbidden('GitHub links are managed with a person\u2019s own credential, not an agent token');
  if (!ctx.actor.isAdmin) throw errors.forbidden('admin only: a GitHub link holds credentials and writes into the graph');
}

function linkOf(ctx: OpContext, id: string): StoredLink {
  const link = storesOf(ctx.tenant).links.get(id);
  if (!link) throw errors.notFound(`GitHub link ${id}`);
  return link;
}

/** The address to paste into the repository's webhook settings: the tenant in the query, never a secret. */
export function webhookUrlOf(ctx: Pick<OpContext, 'services' | 'tenant'>): string {
  return `${ctx.services.baseUrl ?? ''}${WEBHOOK_PATH}?tenant=${encodeURIComponent(ctx.tenant.org)}`;
}

export function view(ctx: OpContext, link: StoredLink): LinkViewT {
  const stores = storesOf(ctx.tenant);
  let synced = 0;
  for (const r of stores.sync.values()) if (r.link === link.id && !r.ended) synced++;
  let queued = 0;
  let failed = 0;
  let lastError: string | null = null;
  let lastErrorSeq = -1;
  for (const d of stores.inbound.values()) {
    if (d.link !== link.id) continue;
    if (d.state === 'queued') queued++;
    if (d.state === 'failed') failed++;
    if (d.last_error && d.seq > lastErrorSeq) {
      lastError = d.last_error;
      lastErrorSeq = d.seq;
    }
  }
  return {
    id: link.id,
    repo: link.repo,
    auth: link.auth.kind,
    has_token: link.auth.kind === 'token',
    has_private_key: link.auth.kind === 'app',
    has_webhook_secret: link.webhook_secret !== '',
    app_id: link.auth.kind === 'app' ? link.auth.app_id : null,
    installation_id: link.auth.kind === 'app' ? link.auth.installation_id : null,
    webhook_url: webhookUrlOf(ctx),
    mappings: link.mappings,
    project: link.project,
    bot_person: link.bot_person,
    enabled: link.enabled,
    state: link.enabled ? 'active' : 'disabled',
    disabled_reason: link.disabled_reason,
    synced_issues: synced,
    inbound: { queued, failed, last_error: lastError },
    created: link.created,
    created_by: link.created_by,
    updated: link.updated,
    updated_by: link.updated_by,
  };
}

/** Exactly one of `token` and `app` (on update: at most one). */
function authOf(input: { token?: string; app?: { app_id: number; private_key: string; installation_id: number } }): LinkAuth | null {
  if (input.token !== undefined && input.app !== undefined)
    throw errors.validation('give a token or an App installation, not both', [{ field: 'token' }, { field: 'app' }]);
  if (input.token !== undefined) return { kind: 'token', token: input.token };
  if (input.app !== undefined) {
    try {
      // read as a key now, so a pasted wrong file fails here rather than at the first call to GitHub
      if (createPrivateKey(input.app.private_key).asymmetricKeyType !== 'rsa') throw new Error('not RSA');
    } catch {
      throw errors.validation('app.private_key is not the App\u2019s PEM private key (RSA)', [{ field: 'app.private_key' }]);
    }
    return { kind: 'app', ...input.app };
  }
  return null;
}

/** The mappings' types, statuses and people must exist in this tenant (422 naming the field). */
function checkMappings(ctx: OpContext, m: LinkMappings): void {
  const types = ctx.tenant.registry.nodeTypes;
  const badType = (field: string, type: string) =>
    errors.validation(`mappings.${field}: ${type} is not a node type of this tenant`, [{ field: `mappings.${field}` }]);
  for (const [label, type] of Object.entries(m.label_types)) if (!types.has(type)) throw badType(`label_types.${label}`, type);
  if (!types.has(m.default_type)) throw badType('default_type', m.default_type);
  for (const field of ['open_status', 'closed_status', 'not_planned_status'] as const) {
    for (const [type, status] of Object.entries(m[field])) {
      const def = types.get(type);
      // a default for a type this tenant's schema does not have is harmless; an admin's is checked
      if (!def) continue;
      if (!def.statuses.includes(status))
        throw errors.validation(`mappings.${field}.${type}: ${status} is not a status of ${type}`, [{ field: `mappings.${field}` }]);
    }
  }
  for (const [login, person] of Object.entries(m.people)) {
    if (ctx.tenant.index.get(person)?.type !== 'person')
      throw errors.validation(`mappings.people.${login}: ${person} is not a person of this tenant`, [{ field: 'mappings.people' }]);
  }
}

function checkProject(ctx: OpContext, project: string | null | undefined): string | null {
  if (project === undefined || project === null) return null;
  if (ctx.tenant.index.get(project)?.type !== 'proj')
    throw errors.validation(`project ${project} is not a project node of this tenant`, [{ field: 'project' }]);
  return project;
}

function checkPerson(ctx: OpContext, person: string): string {
  if (ctx.tenant.index.get(person)?.type !== 'person')
    throw errors.validation(`bot_person ${person} is not a person of this tenant`, [{ field: 'bot_person' }]);
  return person;
}

function mappingsOf(ctx: OpContext, given: Static<typeof MappingsInput> | undefined, base?: LinkMappings): LinkMappings {
  const m = withDefaults(given ?? {}, base);
  checkMappings(ctx, m);
  return m;
}

export async function linkGithubRepo(ctx: OpContext, input: Static<typeof LinkInput>) {
  requireAdmin(ctx);
  const stores = storesOf(ctx.tenant);
  if (stores.links.size >= MAX_LINKS)
    throw errors.conflict(`a tenant links at most ${MAX_LINKS} repositories; unlink one first`, { limit: MAX_LINKS });
  const existing = linkOfRepo(stores, input.repo);
  if (existing) throw errors.conflict(`${input.repo} is already linked`, { id: existing.id });
  const auth = authOf(input);
  if (!auth) throw errors.validation('give a fine-grained `token` or an `app` installation', [{ field: 'token' }]);
  const now = new Date(ctx.services.clock.now()).toISOString();
  const generated = input.webhook_secret === undefined ? newWebhookSecret() : null;
  const link: StoredLink = {
    id: newLinkId(),
    repo: input.repo,
    auth,
    webhook_secret: input.webhook_secret ?? generated ?? '',
    mappings: mappingsOf(ctx, input.mappings),
    enabled: input.enabled ?? true,
    disabled_reason: null,
    project: checkProject(ctx, input.project),
    bot_person: checkPerson(ctx, input.bot_person ?? ctx.actor.personId),
    created: now,
    created_by: ctx.actor.personId,
    updated: now,
    updated_by: ctx.actor.personId,
  };
  await stores.links.set(link.id, link);
  // the importer as the first sync (first-sync.ts): queued ahead of GitHub's deliveries, durable
  // and retried while GitHub is unreachable; `first_sync: false` links without importing what exists
  if (input.first_sync !== false) await workerOf(ctx.tenant, ctx.services).enqueue(firstSyncDeliveryOf(link), link, FIRST_SYNC_EVENT, {});
  return { link: view(ctx, link), ...(generated ? { webhook_secret: generated } : {}) };
}

export async function listGithubLinks(ctx: OpContext) {
  requireAdmin(ctx);
  const links = [...storesOf(ctx.tenant).links.values()].sort((a, b) => (a.created < b.created ? -1 : a.created > b.created ? 1 : 0));
  return { links: links.map((l) => view(ctx, l)) };
}

export async function getGithubLink(ctx: OpContext, input: Static<typeof LinkIdInput>) {
  requireAdmin(ctx);
  return view(ctx, linkOf(ctx, input.id));
}

export async function updateGithubLink(ctx: OpContext, input: Static<typeof UpdateLinkInput>) {
  requireAdmin(ctx);
  const link = linkOf(ctx, input.id);
  if (input.webhook_secret !== undefined && input.rotate_webhook_secret)
    throw errors.validation('give webhook_secret or rotate_webhook_secret, not both', [{ field: 'webhook_secret' }]);
  const auth = authOf(input);
  const generated = input.rotate_webhook_secret ? newWebhookSecret() : null;
  const enabled = input.enabled ?? link.enabled;
  const next: StoredLink = {
    ...link,
    auth: auth ?? link.auth,
    webhook_secret: generated ?? input.webhook_secret ?? link.webhook_secret,
    // each map given replaces that map (over the defaults); the others stay as they are
    mappings: input.mappings
      ? mappingsOf(ctx, input.mappings, { ...withDefaults(), ...pick(link.mappings, input.mappings) })
      : link.mappings,
    project: input.project !== undefined ? checkProject(ctx, input.project) : link.project,
    bot_person: input.bot_person !== undefined ? checkPerson(ctx, input.bot_person) : link.bot_person,
    enabled,
    // an admin's re-enabling clears the server's reason
    disabled_reason: enabled ? null : link.disabled_reason,
    updated: new Date(ctx.services.clock.now()).toISOString(),
    updated_by: ctx.actor.personId,
  };
  await storesOf(ctx.tenant).links.set(next.id, next);
  // deliveries held while the link was disabled or failing go now
  if (next.enabled) workerOf(ctx.tenant, ctx.services).kick();
  return { link: view(ctx, next), ...(generated ? { webhook_secret: generated } : {}) };
}

/** The maps of `current` that `given` does not replace. */
function pick(current: LinkMappings, given: Static<typeof MappingsInput>): Partial<LinkMappings> {
  const out: Partial<LinkMappings> = {};
  for (const key of Object.keys(current) as Array<keyof LinkMappings>)
    if (given[key] === undefined) (out as Record<string, unknown>)[key] = current[key];
  return out;
}

export async function unlinkGithubRepo(ctx: OpContext, input: Static<typeof LinkIdInput>) {
  requireAdmin(ctx);
  const link = linkOf(ctx, input.id);
  const stores = storesOf(ctx.tenant);
  // the nodes stay; only the pairing (and the link's queued deliveries) go
  const records = [...stores.sync.values()].filter((r) => r.link === link.id);
  await stores.links.delete(link.id);
  if (records.length > 0) await stores.sync.batch(records.map((r) => ({ key: r.node, value: null })));
  return { id: link.id, deleted: true, unlinked_nodes: records.length };
}
