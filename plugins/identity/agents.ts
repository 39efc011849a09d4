/**
 * Agent operations (docs/spec.md "Identity and agents"): agents, their per-session and standing
 * tokens, session binding, capability records (operational state, never committed) and
 * profile-to-host matching.
 */
import { tokenCreated, tokenRevoked } from './events.js';
import { generateToken, hashPrefix, newTokenRecord } from '../../kernel/auth.js';
import { errors } from '../../kernel/errors.js';
import { parseExpiry } from '../../kernel/expiry.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import { writeActorOf } from '../../kernel/tenants.js';
import type {
  AdminCreateAgentInput,
  AgentCreated,
  AgentIdInput,
  AgentList,
  AgentTokenList,
  AgentTokenMinted,
  BindSessionInput,
  CapabilitiesPublished,
  CreateAgentInput,
  ListAgentsInput,
  MatchProfileHostsInput,
  MintAgentTokenInput,
  ProfileHosts,
  PublishCapabilitiesInput,
  Revoked,
  RevokeAgentTokenInput,
  SessionBound,
} from './api.js';
import { identityAuthority } from './authority.js';
import {
  CAPABILITIES_COLLECTION,
  formatAge,
  parseCapabilities,
  parseMaxAge,
  profileRequirements,
  sameCapabilities,
  unmetRequirements,
  type CapabilityRecord,
} from './capabilities.js';
import {
  agentNode,
  DAY_MS,
  nowIso,
  nowMs,
  ownerOf,
  PAT_DAYS,
  personNode,
  requireAdmin,
  requireDirectCredential,
  requireHumanToken,
  requireOwner,
  requireOwnerOrSelf,
  requirePerson,
  SESSION_TOKEN_DAYS,
} from './gates.js';
import { agentEntry, byCreated, currentRecords, personFields, resolvePrefix, revokeWithCascade } from './tokens.js';

// ---------------------------------------------------------------- agents

function spiffeOf(org: string, agentId: string): string {
  return `spiffe://${org}/agent/${agentId}`;
}

function agentListEntry(ctx: OpContext, node: NodeRecord) {
  return {
    id: node.id,
    label: typeof node.frontmatter.label === 'string' ? node.frontmatter.label : node.title,
    owner: ownerOf(node),
    spiffe: spiffeOf(ctx.tenant.org, node.id),
    pubkey: typeof node.frontmatter.pubkey === 'string' ? node.frontmatter.pubkey : null,
    status: node.status,
  };
}

/** `agent-` plus a slug of the label (at most 60 characters of slug). */
function agentIdFromLabel(label: string): string {
  const slug = label
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .replace(/-+$/g, '');
  const bare = slug.startsWith('agent-') ? slug.slice('agent-'.length) : slug === 'agent' ? '' : slug;
  if (!bare)
    throw errors.validation('label yields an empty id; give letters or digits, or an explicit id', [
      { field: 'label', message: 'no slug characters' },
    ]);
  return `agent-${bare}`;
}

export async function listAgents(ctx: OpContext, input: Static<typeof ListAgentsInput>): Promise<Static<typeof AgentList>> {
  if (input.all && !(ctx.actor.isAdmin && !ctx.actor.agent)) throw errors.forbidden('all=1 is for admins');
  if (!input.all) requirePerson(ctx);
  const ids = input.all
    ? [...ctx.tenant.index.idsOfType('agent')]
    : ctx.tenant.index.inboundOf(ctx.actor.personId, ['owned-by']).map((e) => e.from);
  const agents = [...new Set(ids)]
    .sort()
    .map((id) => ctx.tenant.index.get(id))
    .filter((n): n is NodeRecord => n !== undefined && n.type === 'agent')
    .map((n) => agentListEntry(ctx, n));
  return { agents, count: agents.length };
}

/** The fields both create operations share (the owner comes from the caller or the admin's choice). */
type AgentFields = Pick<Static<typeof CreateAgentInput>, 'label' | 'id' | 'pubkey'>;

async function createAgentFor(ctx: OpContext, input: AgentFields, owner: string): Promise<Static<typeof AgentCreated>> {
  const label = input.label.trim();
  const id = input.id ?? agentIdFromLabel(label);
  const pubkey = input.pubkey ?? undefined;
  const ownerName = personFields(ctx.tenant, owner).name ?? owner;
  const revision = await ctx.tenant.write(
    writeActorOf(ctx.actor),
    { op: 'create_agent', via: ctx.via, identity: identityAuthority() },
    async (draft) => {
      if (draft.get(id)) throw errors.conflict(`node ${id} already exists`, { id });
      draft.put({
        frontmatter: {
          id,
          type: 'agent',
          status: 'active',
          title: label,
          summary: `${label} (agent of ${ownerName})`.slice(0, 500),
          label,
          ...(pubkey !== undefined ? { pubkey } : {}),
          edges: [{ type: 'owned-by', to: owner }],
        },
        body: '',
      });
      const committed = await draft.commit();
      return committed.get(id)?.revision ?? null;
    },
  );
  return { id, owner, spiffe: spiffeOf(ctx.tenant.org, id), pubkey: pubkey ?? null, status: 'active', revision };
}

export async function createAgent(ctx: OpContext, input: Static<typeof CreateAgentInput>): Promise<Static<typeof AgentCreated>> {
  requireHumanToken(ctx);
  requirePerson(ctx);
  // The owner is always the caller: an `owner` in the payload is not honored here.
  return createAgentFor(ctx, input, ctx.actor.personId);
}

export async function adminCreateAgent(ctx: OpContext, input: Static<typeof AdminCreateAgentInput>): Promise<Static<typeof AgentCreated>> {
  requireAdmin(ctx);
  const owner = input.owner ?? ctx.actor.personId;
  personNode(ctx, owner);
  return createAgentFor(ctx, input, owner);
}

/** Per-session `expires`: `<N>m`, `<N>h`, `<N>d` or an ISO date, within the 7-day cap. */
function sessionExpiry(value: unknown, now: number): string {
  if (typeof value === 'string') {
    const m = /^(\d{1,6})(m|h)$/.exec(value);
    if (m) {
      const ms = Number(m[1]) * (m[2] === 'h' ? 3_600_000 : 60_000);
      if (ms <= 0) throw errors.validation('expires must be in the future', [{ field: 'expires', value }]);
      if (ms > SESSION_TOKEN_DAYS * DAY_MS) {
        throw errors.validation(`expires is beyond the ${SESSION_TOKEN_DAYS}-day maximum`, [
          { field: 'expires', value, max_days: SESSION_TOKEN_DAYS },
        ]);
      }
      return new Date(now + ms).toISOString();
    }
  }
  return parseExpiry(value, { nowMs: now, defaultDays: SESSION_TOKEN_DAYS, maxDays: SESSION_TOKEN_DAYS });
}

export async function mintAgentToken(ctx: OpContext, input: Static<typeof MintAgentTokenInput>): Promise<Static<typeof AgentTokenMinted>> {
  const agent = agentNode(ctx, input.id);
  requireHumanToken(ctx);
  requireDirectCredential(ctx);
  requireOwner(ctx, agent);
  const body = input;
  if (agent.status !== 'active')
    throw errors.conflict(`agent ${agent.id} is ${agent.status}; reactivate it before minting tokens`, {
      agent: agent.id,
      status: agent.status,
    });
  const now = nowMs(ctx);
  const created = new Date(now).toISOString();
  const owner = ctx.actor.personId;

  if (body.standing === true) {
    for (const field of ['session', 'audience'] as const) {
      if (body[field] !== undefined) {
        throw errors.validation(`a standing token spans sessions: '${field}' is not accepted`, [
          { field, message: 'not allowed with standing: true' },
        ]);
      }
    }
    const expires = parseExpiry(body.expires, { nowMs: now, defaultDays: PAT_DAYS, maxDays: PAT_DAYS });
    const label = body.label || null;
    const token = generateToken('pat');
    const record = newTokenRecord(token, {
      kind: 'agent-standing',
      person: owner,
      agent: agent.id,
      created,
      expires,
      label,
      minted_by: owner,
    });
    await ctx.tenant.tokens.mutate((records) => void records.set(record.hash, record));
    await tokenCreated(ctx, record);
    return { token, hash_prefix: hashPrefix(record.hash), agent: agent.id, owner, label, expires, standing: true };
  }

  if (body.label !== undefined)
    throw errors.validation("'label' is for standing tokens", [{ field: 'label', message: 'only with standing: true' }]);
  const session = body.session ?? null;
  const audience = body.audience || null;
  const expiresAt = sessionExpiry(body.expires, now);
  const token = generateToken('ast');
  const record = newTokenRecord(token, {
    kind: 'agent-session',
    person: owner,
    agent: agent.id,
    session,
    audience,
    created,
    expires: expiresAt,
    minted_by: owner,
  });
  await ctx.tenant.tokens.mutate((records) => void records.set(record.hash, record));
  await tokenCreated(ctx, record);
  return { token, expires_at: expiresAt, agent: agent.id, session };
}

export async function listAgentTokens(ctx: OpContext, input: Static<typeof AgentIdInput>): Promise<Static<typeof AgentTokenList>> {
  const agent = agentNode(ctx, input.id);
  requireHumanToken(ctx);
  requireOwner(ctx, agent);
  const now = nowMs(ctx);
  const tokens = currentRecords(ctx.tenant)
    .filter((r) => r.kind === 'agent-standing' && r.agent === agent.id && r.revoked_at === null)
    .sort(byCreated)
    .map((r) => agentEntry(r, now));
  return { tokens, count: tokens.length };
}

export async function revokeAgentToken(ctx: OpContext, input: Static<typeof RevokeAgentTokenInput>): Promise<Static<typeof Revoked>> {
  const agent = agentNode(ctx, input.id);
  requireHumanToken(ctx);
  requireOwner(ctx, agent);
  const standing = currentRecords(ctx.tenant).filter((r) => r.kind === 'agent-standing' && r.agent === agent.id);
  const target = resolvePrefix(standing, input.prefix, `standing token of ${agent.id}`);
  const { grants } = await revokeWithCascade(ctx.tenant, [target.hash], nowIso(ctx));
  await tokenRevoked(ctx, target, grants);
  return { revoked: true, hash_prefix: hashPrefix(target.hash), oauth_grants_revoked: grants };
}

/** Write-once binding of a deferred per-session token to its session, by the token itself. */
export async function bindSession(ctx: OpContext, input: Static<typeof BindSessionInput>): Promise<Static<typeof SessionBound>> {
  const { actor } = ctx;
  if (!actor.agent) throw errors.forbidden('session binding needs an agent token; this is a personal token');
  if (actor.token.kind !== 'agent-session')
    throw errors.forbidden('session binding applies to per-session agent tokens; a standing token spans sessions');
  const session = input.session;
  const hash = actor.token.hash;
  const outcome = await ctx.tenant.tokens.mutate((records) => {
    const record = records.get(hash);
    if (!record || record.revoked_at !== null) throw errors.unauthorized();
    if (record.session === null) {
      record.session = session;
      return 'bound' as const;
    }
    if (record.session === session) return 'unchanged' as const;
    throw errors.conflict(`this token is already bound to session ${record.session}; binding is write-once`, { session: record.session });
  });
  if (outcome === 'unchanged') return { unchanged: true };
  return { ok: true, agent: actor.agent, session };
}

// ---------------------------------------------------------------- capabilities

function capabilities(ctx: OpContext) {
  return ctx.tenant.state.collection<CapabilityRecord>(CAPABILITIES_COLLECTION);
}

export async function publishCapabilities(
  ctx: OpContext,
  input: Static<typeof PublishCapabilitiesInput>,
): Promise<Static<typeof CapabilitiesPublished>> {
  const agent = agentNode(ctx, input.id);
  requireOwnerOrSelf(ctx, agent);
  // the three publish forms and their nested maps: parseCapabilities (the schema types the top level)
  const { id: _id, ...body } = input;
  // The REST input cannot tell a missing body from `{}`: a publish names at least one field
  // (an empty map is `{harnesses: []}`), so neither publishes by accident.
  if (Object.keys(body).length === 0) {
    throw errors.validation(
      'malformed capability map: a JSON object with at least one of harnesses, reachable_mcp, skills, plugins, deny, probed, declared or capabilities is required',
      [{ instancePath: '', keyword: 'minProperties', params: { limit: 1 }, message: 'must name at least one capability field' }],
    );
  }
  const map = parseCapabilities(body);
  const store = capabilities(ctx);
  const previous = store.get(agent.id);
  const now = nowIso(ctx);
  const changed = !previous || !sameCapabilities(previous.capabilities, map);
  const record: CapabilityRecord = {
    agent: agent.id,
    capabilities: map,
    published_at: previous && !changed ? previous.published_at : now,
    last_seen: now,
    published_by: ctx.actor.agent ?? ctx.actor.personId,
  };
  if (ctx.actor.agent && ctx.actor.session) record.session = ctx.actor.session;
  await store.set(agent.id, record);
  return { ...record, changed };
}

export async function readCapabilities(ctx: OpContext, input: Static<typeof AgentIdInput>): Promise<CapabilityRecord> {
  const agent = agentNode(ctx, input.id);
  const self = ctx.actor.agent === agent.id;
  const owner = !ctx.actor.agent && ctx.actor.bound && ownerOf(agent) === ctx.actor.personId;
  const admin = !ctx.actor.agent && ctx.actor.isAdmin;
  if (!self && !owner && !admin)
    throw errors.forbidden(`only the owner of ${agent.id}, the agent itself or an admin may read its capabilities`, { agent: agent.id });
  const record = capabilities(ctx).get(agent.id);
  if (!record) throw errors.notFound(`capabilities of ${agent.id}`, { agent: agent.id });
  return record;
}

export async function agentHeartbeat(ctx: OpContext, input: Static<typeof AgentIdInput>): Promise<CapabilityRecord> {
  const agent = agentNode(ctx, input.id);
  requireOwnerOrSelf(ctx, agent);
  const store = capabilities(ctx);
  const record = store.get(agent.id);
  if (!record) throw errors.notFound(`capabilities of ${agent.id} (publish before the first heartbeat)`, { agent: agent.id });
  const refreshed: CapabilityRecord = { ...record, last_seen: nowIso(ctx) };
  await store.set(agent.id, refreshed);
  return refreshed;
}

// ---------------------------------------------------------------- host matching

export async function matchProfileHosts(
  ctx: OpContext,
  input: Static<typeof MatchProfileHostsInput>,
): Promise<Static<typeof ProfileHosts>> {
  const id = input.id;
  const profile = ctx.tenant.index.get(id);
  if (!profile || profile.type !== 'profile') throw errors.notFound(`profile ${id}`);

  // An agent token resolves to its owner and never carries the owner's admin rights.
  const admin = ctx.actor.isAdmin && !ctx.actor.agent;
  let scope: string | null;
  if (input.owner === undefined || input.owner === '') {
    if (admin) scope = null;
    else {
      requirePerson(ctx);
      scope = ctx.actor.personId;
    }
  } else if (input.owner === 'me') {
    requirePerson(ctx);
    scope = ctx.actor.personId;
  } else {
    // 'me' or person-<slug>, from the input schema
    const owner = input.owner;
    if (!admin && owner !== ctx.actor.personId) throw errors.forbidden("only admins may see another person's hosts", { owner });
    scope = owner;
  }
  const maxAgeMs = input.max_age === undefined || input.max_age === '' ? null : parseMaxAge(input.max_age);

  const required = profileRequirements(profile.frontmatter.requires);
  const now = nowMs(ctx);
  type Host = {
    agent: string;
    owner: string | null;
    published_at: string;
    last_seen: string;
    age_seconds: number;
    lastSeenMs: number;
    reasons: string[];
  };
  const hosts: Host[] = [];
  for (const record of capabilities(ctx).values()) {
    const agent = ctx.tenant.index.get(record.agent);
    // Retired or deleted agents are not hosts any more, whatever they published.
    if (!agent || agent.type !== 'agent' || agent.status !== 'active') continue;
    const owner = ownerOf(agent);
    if (scope !== null && owner !== scope) continue;
    const lastSeenMs = Date.parse(record.last_seen);
    const reasons = unmetRequirements(required, record.capabilities);
    if (maxAgeMs !== null && now - lastSeenMs > maxAgeMs) reasons.push(`stale: last seen ${formatAge(now - lastSeenMs)} ago`);
    hosts.push({
      agent: record.agent,
      owner,
      published_at: record.published_at,
      last_seen: record.last_seen,
      age_seconds: Math.max(0, Math.floor((now - lastSeenMs) / 1000)),
      lastSeenMs,
      reasons,
    });
  }
  hosts.sort((a, b) => b.lastSeenMs - a.lastSeenMs || (a.agent < b.agent ? -1 : 1));
  const view = ({ lastSeenMs: _l, reasons: _r, ...rest }: Host) => rest;
  const satisfiable = hosts.filter((h) => h.reasons.length === 0).map(view);
  const unsatisfiable = hosts.filter((h) => h.reasons.length > 0).map((h) => ({ ...view(h), reasons: h.reasons }));
  return {
    profile: id,
    requires: required,
    satisfiable,
    unsatisfiable,
    counts: { satisfiable: satisfiable.length, unsatisfiable: unsatisfiable.length, total: hosts.length },
  };
}
