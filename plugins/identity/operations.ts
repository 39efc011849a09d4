/**
 * Identity administration: one function per operation (docs/spec.md "Identity and agents").
 * Tokens live in the kernel's per-tenant TokenStore (hashes only); people and agents are
 * graph nodes written through `tenant.write`; capability records are operational state.
 */
import { generateToken, hashPrefix, newTokenRecord, type TokenRecord } from '../../kernel/auth.js';
import { errors, SvcError } from '../../kernel/errors.js';
import type { Frontmatter } from '../../kernel/codec.js';
import type { Tenant, WriteActor } from '../../kernel/tenant.js';
import { identityAuthority } from './authority.js';
import { auditIdentityHistory, tokensAtRisk } from './audit.js';
import { parseExpiry } from '../../kernel/expiry.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { OpContext } from '../../kernel/plugin.js';
import { personIdForEmail, ROOT_ID, writeActorOf } from '../../kernel/tenants.js';
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
import { TICKET_MAX_DAYS } from '../lenses/tickets.js';
import { IdpCallError, issueInvitation } from './idp.js';
import {
  agentEntry,
  byCreated,
  currentRecords,
  isGrant,
  isLive,
  isPersonalToken,
  ownEntry,
  personFields,
  resolvePrefix,
  revokeWithCascade,
  teamEntry,
} from './tokens.js';

const DAY_MS = 24 * 60 * 60 * 1000;
/** PATs and standing agent tokens: default and cap one year. */
const PAT_DAYS = 365;
/** Per-session agent tokens: the default lifetime is the 7-day cap; `expires` may only shorten it. */
const SESSION_TOKEN_DAYS = 7;
/** A session id: what a harness names one run; safe in commit trailers and frontmatter. */
export const SESSION_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
/** The org slug of a tenant no org was ever set for (docs/spec.md: GET /v1/me `org` "else local"). */
const UNBOUND_ORG = 'local';

function nowMs(ctx: OpContext): number {
  return ctx.services.clock.now();
}

function nowIso(ctx: OpContext): string {
  return new Date(nowMs(ctx)).toISOString();
}

// ---------------------------------------------------------------- gates

/** Credentials and identities are managed by people: an agent token cannot mint, revoke or administer. */
function requireHumanToken(ctx: OpContext): void {
  if (ctx.actor.agent) throw errors.forbidden('agent tokens cannot manage tokens, people or agents; use a personal token of the owner');
}

/**
 * New credentials come only from a credential of the person's own: a token derived from a grant
 * (an OAuth access token) or a connector JWT cannot mint one, or it would outlive the revocation
 * of what it came from.
 */
function requireDirectCredential(ctx: OpContext): void {
  const kind = ctx.actor.token.kind;
  if (kind === 'oauth-access' || kind === 'connector-jwt') {
    throw errors.forbidden('tokens are minted with a personal access token, not with an OAuth access token or a connector JWT', { credential: kind });
  }
}

function requirePerson(ctx: OpContext): void {
  if (!ctx.actor.bound) throw errors.noPersonForbidden();
}

/** Admin gate: a person token whose person stewards proj-root. */
function requireAdmin(ctx: OpContext): void {
  requireHumanToken(ctx);
  if (!ctx.actor.isAdmin) throw errors.forbidden(`admin only: the caller needs a stewards edge to ${ROOT_ID}`);
}

function personNode(ctx: OpContext, id: string): NodeRecord {
  const node = ctx.tenant.index.get(id);
  if (!node || node.type !== 'person') throw errors.notFound(`person ${id}`);
  return node;
}

/** Unknown or not an agent node is 404 (a malformed id is 422 from the input schema). */
function agentNode(ctx: OpContext, id: string): NodeRecord {
  const node = ctx.tenant.index.get(id);
  if (!node || node.type !== 'agent') throw errors.notFound(`agent ${id}`);
  return node;
}

export function ownerOf(agent: NodeRecord): string | null {
  return agent.edges.find((e) => e.type === 'owned-by')?.to ?? null;
}

/** Ownership gate: the caller's person owns the agent (admin rights do not substitute). */
function requireOwner(ctx: OpContext, agent: NodeRecord): void {
  requirePerson(ctx);
  if (ownerOf(agent) !== ctx.actor.personId) throw errors.forbidden(`only the owner of ${agent.id} may do this`, { agent: agent.id });
}

/** Owner-or-self gate: the owner's person token, or a token of this very agent. */
function requireOwnerOrSelf(ctx: OpContext, agent: NodeRecord): void {
  if (ctx.actor.agent) {
    if (ctx.actor.agent === agent.id) return;
    throw errors.forbidden(`an agent token acts only for its own agent; ${agent.id} is another agent`, { agent: agent.id });
  }
  requireOwner(ctx, agent);
}

// ---------------------------------------------------------------- own PATs

export async function listOwnTokens(ctx: OpContext) {
  requireHumanToken(ctx);
  requirePerson(ctx);
  const now = nowMs(ctx);
  const tokens = currentRecords(ctx.tenant)
    .filter((r) => isPersonalToken(r) && r.person === ctx.actor.personId && r.revoked_at === null)
    .sort(byCreated)
    .map((r) => ownEntry(ctx.tenant, r, now));
  return { tokens, count: tokens.length };
}

interface MintInput {
  expires?: string | null;
  label?: string | null;
}

export async function mintOwnToken(ctx: OpContext, input: MintInput) {
  requireHumanToken(ctx);
  requireDirectCredential(ctx);
  requirePerson(ctx);
  const now = nowMs(ctx);
  const expires = parseExpiry(input.expires, { nowMs: now, defaultDays: PAT_DAYS, maxDays: PAT_DAYS });
  const label = input.label || null;
  const token = generateToken('pat');
  const record = newTokenRecord(token, { kind: 'pat', person: ctx.actor.personId, created: new Date(now).toISOString(), expires, label, minted_by: ctx.actor.personId });
  await ctx.tenant.tokens.mutate((records) => void records.set(record.hash, record));
  return { token, hash_prefix: hashPrefix(record.hash), person: ctx.actor.personId, name: ctx.actor.name, email: ctx.actor.email, label, expires };
}

export async function revokeOwnToken(ctx: OpContext, input: { prefix: string }) {
  requireHumanToken(ctx);
  requirePerson(ctx);
  const prefix = input.prefix;
  const own = currentRecords(ctx.tenant).filter((r) => isPersonalToken(r) && r.person === ctx.actor.personId);
  const target = resolvePrefix(own, prefix, 'token');
  const { grants } = await revokeWithCascade(ctx.tenant, [target.hash], nowIso(ctx));
  return { revoked: true, hash_prefix: hashPrefix(target.hash), oauth_grants_revoked: grants };
}

// ---------------------------------------------------------------- admin tokens

export async function listTeamTokens(ctx: OpContext) {
  requireAdmin(ctx);
  const now = nowMs(ctx);
  const tokens = currentRecords(ctx.tenant)
    .filter((r) => r.revoked_at === null && !isGrant(r) && (r.kind === 'pat' || r.kind === 'agent-standing'))
    .sort(byCreated)
    .map((r) => teamEntry(ctx.tenant, r, now));
  return { tokens, count: tokens.length };
}

export async function adminMintToken(ctx: OpContext, input: MintInput & { person: string }) {
  requireAdmin(ctx);
  requireDirectCredential(ctx);
  const personId = input.person;
  const now = nowMs(ctx);
  const expires = parseExpiry(input.expires, { nowMs: now, defaultDays: PAT_DAYS, maxDays: PAT_DAYS });
  const label = input.label || null;
  // Minting never creates a person (docs/spec.md Authentication 9): the node must already exist.
  personNode(ctx, personId);
  const token = generateToken('pat');
  const record = newTokenRecord(token, { kind: 'pat', person: personId, created: new Date(now).toISOString(), expires, label, minted_by: ctx.actor.personId });
  await ctx.tenant.tokens.mutate((records) => void records.set(record.hash, record));
  const { name, email } = personFields(ctx.tenant, personId);
  return { token, hash_prefix: hashPrefix(record.hash), person: personId, name, email, expires };
}

export async function adminRevokeToken(ctx: OpContext, input: { prefix: string }) {
  requireAdmin(ctx);
  const target = resolvePrefix(currentRecords(ctx.tenant), input.prefix, 'token');
  await revokeWithCascade(ctx.tenant, [target.hash], nowIso(ctx));
  return { revoked: true, hash_prefix: hashPrefix(target.hash) };
}

// ---------------------------------------------------------------- people

export async function listPeople(ctx: OpContext) {
  requireAdmin(ctx);
  const now = nowMs(ctx);
  const byPerson = new Map<string, TokenRecord[]>();
  for (const r of currentRecords(ctx.tenant)) {
    if (!isPersonalToken(r)) continue;
    const list = byPerson.get(r.person) ?? [];
    list.push(r);
    byPerson.set(r.person, list);
  }
  const people = [...ctx.tenant.index.idsOfType('person')]
    .sort()
    .map((id) => {
      const node = ctx.tenant.index.get(id)!;
      const tokens = byPerson.get(id) ?? [];
      const lastUsed = tokens.map((t) => t.last_used).filter((v): v is string => v !== null).sort().pop() ?? null;
      return {
        id,
        name: String(node.frontmatter.name ?? node.title),
        email: typeof node.frontmatter.email === 'string' ? node.frontmatter.email : null,
        roles: Array.isArray(node.frontmatter.roles) ? node.frontmatter.roles.map(String) : [],
        is_admin: node.edges.some((e) => e.type === 'stewards' && e.to === ROOT_ID),
        status: node.status,
        tokens: tokens.length,
        active_tokens: tokens.filter((t) => isLive(t, now)).length,
        last_used: lastUsed,
      };
    });
  return { people, count: people.length };
}

interface InviteArgs {
  org: string | null;
  connection_id: string | null;
}

/**
 * Validates the invitation arguments before anything is written. On a tenant bound to an
 * org (any org slug but `local`) a disagreeing `org` is 403 and an omitted one pins the
 * tenant's org; an unbound (`local`) tenant honors the given `org`.
 */
function inviteArgs(ctx: OpContext, input: PersonInput): InviteArgs {
  const connection = input.connection_id ?? undefined;
  const org = input.org ?? undefined;
  const bound = ctx.tenant.org !== UNBOUND_ORG;
  if (bound && org !== undefined && org !== ctx.tenant.org) {
    throw errors.forbidden(`this server is bound to org '${ctx.tenant.org}'; an invitation cannot be pinned to '${org}'`, { org, bound_org: ctx.tenant.org });
  }
  return { org: bound ? ctx.tenant.org : org ?? null, connection_id: connection ?? null };
}

interface PersonInput {
  name: string;
  email: string;
  id?: string | null;
  roles?: string[] | null;
  invite?: boolean | null;
  connection_id?: string | null;
  org?: string | null;
}

export async function createPerson(ctx: OpContext, input: PersonInput) {
  requireAdmin(ctx);
  const name = input.name.trim();
  const email = input.email.trim();
  // checked on the trimmed value, so it stays here rather than in the schema
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw errors.validation('email must be an address like name@example.com', [{ field: 'email', message: 'malformed email' }]);
  const id = input.id ?? personIdForEmail(email);
  const roles = [...new Set(input.roles ?? [])];
  const invite = input.invite === true;
  const args = inviteArgs(ctx, input);

  const revision = await ctx.tenant.write(writeActorOf(ctx.actor), { op: 'create_person', via: ctx.via, identity: identityAuthority() }, async (draft) => {
    if (draft.get(id)) throw errors.conflict(`node ${id} already exists`, { id });
    const lower = email.toLowerCase();
    for (const other of ctx.tenant.index.idsOfType('person')) {
      const existing = ctx.tenant.index.get(other)!.frontmatter.email;
      if (typeof existing === 'string' && existing.trim().toLowerCase() === lower) {
        throw errors.conflict(`a person with email ${email} already exists (${other})`, { id: other });
      }
    }
    // No stewards edge: a created person is never an admin.
    draft.put({
      frontmatter: { id, type: 'person', status: 'active', title: name, summary: name, name, email, ...(roles.length > 0 ? { roles } : {}) },
      body: '',
    });
    const committed = await draft.commit();
    return committed.get(id)?.revision ?? null;
  });

  const payload: Record<string, unknown> = { id, name, email, roles, revision };
  if (invite) payload.org_invitation = await invitePerson(ctx, { email, name }, args);
  return payload;
}

/**
 * The importer's people (plugins/import): a person named as an assignee or owner of an imported
 * item and missing here is created by this identity path (the import itself is admin-only).
 */
export async function writeImportedPerson(tenant: Tenant, actor: WriteActor, at: number | undefined, frontmatter: Frontmatter): Promise<void> {
  if (frontmatter.type !== 'person' || Array.isArray(frontmatter.edges)) throw new Error('an imported person is a plain person node without edges');
  await tenant.write(actor, { op: 'import_person', via: 'import', at, identity: identityAuthority() }, async (draft) => {
    draft.put({ frontmatter, body: '' });
  });
}

// ---------------------------------------------------------------- admin rights

function isAdminNode(node: NodeRecord | undefined | null): boolean {
  return node !== undefined && node !== null && node.type === 'person' && node.edges.some((e) => e.type === 'stewards' && e.to === ROOT_ID);
}

/** Grants admin rights: a stewards edge from the person to proj-root, committed by the granting admin. */
export async function grantAdmin(ctx: OpContext, input: { id: string }) {
  requireAdmin(ctx);
  personNode(ctx, input.id);
  return ctx.tenant.write(writeActorOf(ctx.actor), { op: 'grant_admin', via: ctx.via, identity: identityAuthority() }, async (draft) => {
    if (!isAdminNode(ctx.tenant.index.get(ctx.actor.personId))) throw errors.forbidden(`admin only: ${ctx.actor.personId} is no longer an admin`);
    const node = draft.get(input.id);
    if (!node || node.frontmatter.type !== 'person') throw errors.notFound(`person ${input.id}`);
    const edges = Array.isArray(node.frontmatter.edges) ? (node.frontmatter.edges as Array<Record<string, string>>) : [];
    if (edges.some((e) => e.type === 'stewards' && e.to === ROOT_ID)) {
      return { id: input.id, is_admin: true, status: 'unchanged' as const, revision: node.revision };
    }
    node.frontmatter.edges = [...edges, { type: 'stewards', to: ROOT_ID }];
    draft.put(node);
    const committed = await draft.commit();
    return { id: input.id, is_admin: true, status: 'granted' as const, revision: committed.get(input.id)?.revision ?? null };
  });
}

/** Revokes admin rights; the last admin of a tenant keeps them (409 `last_admin`). */
export async function revokeAdmin(ctx: OpContext, input: { id: string }) {
  requireAdmin(ctx);
  personNode(ctx, input.id);
  return ctx.tenant.write(writeActorOf(ctx.actor), { op: 'revoke_admin', via: ctx.via, identity: identityAuthority() }, async (draft) => {
    const node = draft.get(input.id);
    if (!node || node.frontmatter.type !== 'person') throw errors.notFound(`person ${input.id}`);
    const edges = Array.isArray(node.frontmatter.edges) ? (node.frontmatter.edges as Array<Record<string, string>>) : [];
    if (!edges.some((e) => e.type === 'stewards' && e.to === ROOT_ID)) {
      return { id: input.id, is_admin: false, status: 'unchanged' as const, revision: node.revision };
    }
    // checked inside the write queue, so two concurrent revocations cannot both pass, and a
    // caller whose own rights were revoked meanwhile is refused
    if (!isAdminNode(ctx.tenant.index.get(ctx.actor.personId))) throw errors.forbidden(`admin only: ${ctx.actor.personId} is no longer an admin`);
    const admins = [...ctx.tenant.index.idsOfType('person')].filter((id) => isAdminNode(ctx.tenant.index.get(id)));
    if (admins.length <= 1) {
      throw new SvcError(409, 'last_admin', `${input.id} is the last admin of ${ctx.tenant.org}; grant admin rights to someone else first`, { id: input.id, admins });
    }
    const kept = edges.filter((e) => !(e.type === 'stewards' && e.to === ROOT_ID));
    if (kept.length > 0) node.frontmatter.edges = kept;
    else delete node.frontmatter.edges;
    draft.put(node);
    const committed = await draft.commit();
    return { id: input.id, is_admin: false, status: 'revoked' as const, revision: committed.get(input.id)?.revision ?? null };
  });
}

/** GET /v1/admin/audit/identity: every change to an identity fact in this tenant's history. */
export async function auditIdentity(ctx: OpContext, input: { flagged?: boolean }) {
  requireAdmin(ctx);
  const audit = await auditIdentityHistory(ctx.tenant.store.gitdir, ctx.tenant.registry, { onlyFlagged: input.flagged === true });
  return { org: ctx.tenant.org, ...audit, tokens_at_risk: tokensAtRisk(audit.entries, ctx.tenant.tokens.all()) };
}

/** The invitation outcome; a provider failure is reported, never thrown (the person stays). */
async function invitePerson(ctx: OpContext, who: { email: string; name: string }, args: InviteArgs): Promise<Record<string, unknown>> {
  const base = ctx.services.config.idpUrl;
  if (!base) return { status: 'failed', reason: 'no identity provider is configured (SVC_IDP_URL)', org: args.org };
  try {
    const issued = await issueInvitation(base, { email: who.email, name: who.name, org: args.org, connection_id: args.connection_id, invited_by: ctx.actor.personId });
    return { status: 'issued', invitation_id: issued.id, org: issued.org, email: who.email, ...(issued.connection_id ? { connection_id: issued.connection_id } : {}) };
  } catch (err) {
    if (!(err instanceof IdpCallError)) throw err;
    ctx.services.log.warn('person invitation failed', { org: ctx.tenant.org, reason: err.message });
    return { status: 'failed', reason: err.message, org: args.org };
  }
}

export async function offboardPerson(ctx: OpContext, input: { id: string }) {
  requireAdmin(ctx);
  const id = input.id;
  if (id === ctx.actor.personId) throw errors.validation('you cannot offboard yourself; ask another admin', [{ field: 'id', message: 'self-offboarding' }]);
  personNode(ctx, id);
  const hashes = currentRecords(ctx.tenant)
    .filter((r) => r.person === id && r.revoked_at === null)
    .map((r) => r.hash);
  const { tokens, grants } = await revokeWithCascade(ctx.tenant, hashes, nowIso(ctx));
  // Share tickets are signed, not stored, and cannot be revoked (docs/spec.md Lenses rule 3: expiry is
  // their only bound), so offboarding cannot end them: the answer tells the admin so, with the
  // latest moment one minted before now can still open its view.
  const latest = new Date(ctx.services.clock.now() + TICKET_MAX_DAYS * 24 * 3600 * 1000).toISOString();
  return {
    offboarded: id,
    tokens_revoked: tokens,
    oauth_grants_revoked: grants,
    render_tickets: `share tickets this person minted are not revoked: each stays valid until it expires (at most ${TICKET_MAX_DAYS} days after minting, so by ${latest} at the latest)`,
    render_tickets_valid_until: latest,
  };
}

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
  if (!bare) throw errors.validation('label yields an empty id; give letters or digits, or an explicit id', [{ field: 'label', message: 'no slug characters' }]);
  return `agent-${bare}`;
}

export async function listAgents(ctx: OpContext, input: { all?: boolean }) {
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

interface AgentInput {
  label: string;
  id?: string | null;
  pubkey?: string | null;
  owner?: unknown;
}

async function createAgentFor(ctx: OpContext, input: AgentInput, owner: string) {
  const label = input.label.trim();
  const id = input.id ?? agentIdFromLabel(label);
  const pubkey = input.pubkey ?? undefined;
  const ownerName = personFields(ctx.tenant, owner).name ?? owner;
  const revision = await ctx.tenant.write(writeActorOf(ctx.actor), { op: 'create_agent', via: ctx.via, identity: identityAuthority() }, async (draft) => {
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
  });
  return { id, owner, spiffe: spiffeOf(ctx.tenant.org, id), pubkey: pubkey ?? null, status: 'active', revision };
}

export async function createAgent(ctx: OpContext, input: AgentInput) {
  requireHumanToken(ctx);
  requirePerson(ctx);
  // The owner is always the caller: an `owner` in the payload is not honored here.
  return createAgentFor(ctx, input, ctx.actor.personId);
}

export async function adminCreateAgent(ctx: OpContext, input: AgentInput & { owner?: string | null }) {
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
        throw errors.validation(`expires is beyond the ${SESSION_TOKEN_DAYS}-day maximum`, [{ field: 'expires', value, max_days: SESSION_TOKEN_DAYS }]);
      }
      return new Date(now + ms).toISOString();
    }
  }
  return parseExpiry(value, { nowMs: now, defaultDays: SESSION_TOKEN_DAYS, maxDays: SESSION_TOKEN_DAYS });
}

interface AgentTokenInput {
  id: string;
  standing?: boolean | null;
  session?: string | null;
  audience?: string | null;
  expires?: string | null;
  label?: string | null;
}

export async function mintAgentToken(ctx: OpContext, input: AgentTokenInput) {
  const agent = agentNode(ctx, input.id);
  requireHumanToken(ctx);
  requireDirectCredential(ctx);
  requireOwner(ctx, agent);
  const body = input;
  if (agent.status !== 'active') throw errors.conflict(`agent ${agent.id} is ${agent.status}; reactivate it before minting tokens`, { agent: agent.id, status: agent.status });
  const now = nowMs(ctx);
  const created = new Date(now).toISOString();
  const owner = ctx.actor.personId;

  if (body.standing === true) {
    for (const field of ['session', 'audience'] as const) {
      if (body[field] !== undefined) {
        throw errors.validation(`a standing token spans sessions: '${field}' is not accepted`, [{ field, message: 'not allowed with standing: true' }]);
      }
    }
    const expires = parseExpiry(body.expires, { nowMs: now, defaultDays: PAT_DAYS, maxDays: PAT_DAYS });
    const label = body.label || null;
    const token = generateToken('pat');
    const record = newTokenRecord(token, { kind: 'agent-standing', person: owner, agent: agent.id, created, expires, label, minted_by: owner });
    await ctx.tenant.tokens.mutate((records) => void records.set(record.hash, record));
    return { token, hash_prefix: hashPrefix(record.hash), agent: agent.id, owner, label, expires, standing: true };
  }

  if (body.label !== undefined) throw errors.validation("'label' is for standing tokens", [{ field: 'label', message: 'only with standing: true' }]);
  const session = body.session ?? null;
  const audience = body.audience || null;
  const expiresAt = sessionExpiry(body.expires, now);
  const token = generateToken('ast');
  const record = newTokenRecord(token, { kind: 'agent-session', person: owner, agent: agent.id, session, audience, created, expires: expiresAt, minted_by: owner });
  await ctx.tenant.tokens.mutate((records) => void records.set(record.hash, record));
  return { token, expires_at: expiresAt, agent: agent.id, session };
}

export async function listAgentTokens(ctx: OpContext, input: { id: string }) {
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

export async function revokeAgentToken(ctx: OpContext, input: { id: string; prefix: string }) {
  const agent = agentNode(ctx, input.id);
  requireHumanToken(ctx);
  requireOwner(ctx, agent);
  const standing = currentRecords(ctx.tenant).filter((r) => r.kind === 'agent-standing' && r.agent === agent.id);
  const target = resolvePrefix(standing, input.prefix, `standing token of ${agent.id}`);
  const { grants } = await revokeWithCascade(ctx.tenant, [target.hash], nowIso(ctx));
  return { revoked: true, hash_prefix: hashPrefix(target.hash), oauth_grants_revoked: grants };
}

/** Write-once binding of a deferred per-session token to its session, by the token itself. */
export async function bindSession(ctx: OpContext, input: { session: string }) {
  const { actor } = ctx;
  if (!actor.agent) throw errors.forbidden('session binding needs an agent token; this is a personal token');
  if (actor.token.kind !== 'agent-session') throw errors.forbidden('session binding applies to per-session agent tokens; a standing token spans sessions');
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

export async function publishCapabilities(ctx: OpContext, input: { id: string } & Record<string, unknown>) {
  const agent = agentNode(ctx, input.id);
  requireOwnerOrSelf(ctx, agent);
  // the three publish forms and their nested maps: parseCapabilities (the schema types the top level)
  const { id: _id, ...body } = input;
  // The REST input cannot tell a missing body from `{}`: a publish names at least one field
  // (an empty map is `{harnesses: []}`), so neither publishes by accident.
  if (Object.keys(body).length === 0) {
    throw errors.validation('malformed capability map: a JSON object with at least one of harnesses, reachable_mcp, skills, plugins, deny, probed, declared or capabilities is required', [
      { instancePath: '', keyword: 'minProperties', params: { limit: 1 }, message: 'must name at least one capability field' },
    ]);
  }
  const map = parseCapabilities(body);
  const store = capabilities(ctx);
  const previous = store.get(agent.id);
  const now = nowIso(ctx);
  const changed = !previous || !sameCapabilities(previous.capabilities, map);
  const record: CapabilityRecord = {
    agent: agent.id,
    capabilities: map,
    published_at: changed ? now : previous!.published_at,
    last_seen: now,
    published_by: ctx.actor.agent ?? ctx.actor.personId,
  };
  if (ctx.actor.agent && ctx.actor.session) record.session = ctx.actor.session;
  await store.set(agent.id, record);
  return { ...record, changed };
}

export async function readCapabilities(ctx: OpContext, input: { id: string }) {
  const agent = agentNode(ctx, input.id);
  const self = ctx.actor.agent === agent.id;
  const owner = !ctx.actor.agent && ctx.actor.bound && ownerOf(agent) === ctx.actor.personId;
  const admin = !ctx.actor.agent && ctx.actor.isAdmin;
  if (!self && !owner && !admin) throw errors.forbidden(`only the owner of ${agent.id}, the agent itself or an admin may read its capabilities`, { agent: agent.id });
  const record = capabilities(ctx).get(agent.id);
  if (!record) throw errors.notFound(`capabilities of ${agent.id}`, { agent: agent.id });
  return record;
}

export async function heartbeat(ctx: OpContext, input: { id: string }) {
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

export async function matchHosts(ctx: OpContext, input: { id: string; owner?: string; max_age?: string }) {
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
  type Host = { agent: string; owner: string | null; published_at: string; last_seen: string; age_seconds: number; lastSeenMs: number; reasons: string[] };
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

