/**
 * Identity administration: one function per operation (docs/spec.md "Identity and agents") for
 * personal tokens, admin token management, people, admin rights and the identity audit.
 * Tokens live in the kernel's per-tenant TokenStore (hashes only); people are graph nodes
 * written through `tenant.write`. Agents and their tokens: agents.ts; the gates: gates.ts.
 */
import { generateToken, hashPrefix, newTokenRecord, type TokenRecord } from '../../kernel/auth.js';
import { errors, SvcError } from '../../kernel/errors.js';
import type { Frontmatter } from '../../kernel/codec.js';
import type { Tenant } from '../../kernel/tenant.js';
import type { WriteActor } from '../../kernel/write-draft.js';
import { parseExpiry } from '../../kernel/expiry.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import { personIdForEmail, ROOT_ID, writeActorOf } from '../../kernel/tenants.js';
import { TICKET_MAX_DAYS } from '../lenses/public.js';
import type {
  AdminAnswer,
  AdminMintTokenInput,
  AdminRevoked,
  AdminTokenMinted,
  AuditIdentityInput,
  CreatePersonInput,
  IdentityAudit,
  MintOwnTokenInput,
  Offboarded,
  OrgInvitation,
  OwnTokenList,
  OwnTokenMinted,
  PeopleList,
  PersonCreated,
  PersonIdInput,
  Revoked,
  RevokeTokenInput,
  TeamTokenList,
} from './api.js';
import { auditIdentityHistory, tokensAtRisk } from './audit.js';
import { identityAuthority } from './authority.js';
import { emitAdminEvent, tokenCreated, tokenRevoked } from './events.js';
import {
  nowIso,
  nowMs,
  PAT_DAYS,
  personNode,
  requireAdmin,
  requireDirectCredential,
  requireHumanToken,
  requirePerson,
  UNBOUND_ORG,
} from './gates.js';
import { IdpCallError, issueInvitation } from './idp.js';
import { forgetSignin } from './signin-links.js';
import {
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

// ---------------------------------------------------------------- own PATs

export async function listOwnTokens(ctx: OpContext): Promise<Static<typeof OwnTokenList>> {
  requireHumanToken(ctx);
  requirePerson(ctx);
  const now = nowMs(ctx);
  const tokens = currentRecords(ctx.tenant)
    .filter((r) => isPersonalToken(r) && r.person === ctx.actor.personId && r.revoked_at === null)
    .sort(byCreated)
    .map((r) => ownEntry(ctx.tenant, r, now));
  return { tokens, count: tokens.length };
}

export async function mintOwnToken(ctx: OpContext, input: Static<typeof MintOwnTokenInput>): Promise<Static<typeof OwnTokenMinted>> {
  requireHumanToken(ctx);
  requireDirectCredential(ctx);
  requirePerson(ctx);
  const now = nowMs(ctx);
  const expires = parseExpiry(input.expires, { nowMs: now, defaultDays: PAT_DAYS, maxDays: PAT_DAYS });
  const label = input.label || null;
  const token = generateToken('pat');
  const record = newTokenRecord(token, {
    kind: 'pat',
    person: ctx.actor.personId,
    created: new Date(now).toISOString(),
    expires,
    label,
    minted_by: ctx.actor.personId,
  });
  await ctx.tenant.tokens.mutate((records) => void records.set(record.hash, record));
  await tokenCreated(ctx, record);
  return {
    token,
    hash_prefix: hashPrefix(record.hash),
    person: ctx.actor.personId,
    name: ctx.actor.name,
    email: ctx.actor.email,
    label,
    expires,
  };
}

export async function revokeOwnToken(ctx: OpContext, input: Static<typeof RevokeTokenInput>): Promise<Static<typeof Revoked>> {
  requireHumanToken(ctx);
  requirePerson(ctx);
  const prefix = input.prefix;
  const own = currentRecords(ctx.tenant).filter((r) => isPersonalToken(r) && r.person === ctx.actor.personId);
  const target = resolvePrefix(own, prefix, 'token');
  const { grants } = await revokeWithCascade(ctx.tenant, [target.hash], nowIso(ctx));
  await tokenRevoked(ctx, target, grants);
  return { revoked: true, hash_prefix: hashPrefix(target.hash), oauth_grants_revoked: grants };
}

// ---------------------------------------------------------------- admin tokens

export async function listTeamTokens(ctx: OpContext): Promise<Static<typeof TeamTokenList>> {
  requireAdmin(ctx);
  const now = nowMs(ctx);
  const tokens = currentRecords(ctx.tenant)
    .filter((r) => r.revoked_at === null && !isGrant(r) && (r.kind === 'pat' || r.kind === 'agent-standing'))
    .sort(byCreated)
    .map((r) => teamEntry(ctx.tenant, r, now));
  return { tokens, count: tokens.length };
}

export async function adminMintToken(ctx: OpContext, input: Static<typeof AdminMintTokenInput>): Promise<Static<typeof AdminTokenMinted>> {
  requireAdmin(ctx);
  requireDirectCredential(ctx);
  const personId = input.person;
  const now = nowMs(ctx);
  const expires = parseExpiry(input.expires, { nowMs: now, defaultDays: PAT_DAYS, maxDays: PAT_DAYS });
  const label = input.label || null;
  // Minting never creates a person (docs/spec.md Authentication 9): the node must already exist.
  personNode(ctx, personId);
  const token = generateToken('pat');
  const record = newTokenRecord(token, {
    kind: 'pat',
    person: personId,
    created: new Date(now).toISOString(),
    expires,
    label,
    minted_by: ctx.actor.personId,
  });
  await ctx.tenant.tokens.mutate((records) => void records.set(record.hash, record));
  await tokenCreated(ctx, record);
  const { name, email } = personFields(ctx.tenant, personId);
  return { token, hash_prefix: hashPrefix(record.hash), person: personId, name, email, expires };
}

export async function adminRevokeToken(ctx: OpContext, input: Static<typeof RevokeTokenInput>): Promise<Static<typeof AdminRevoked>> {
  requireAdmin(ctx);
  const target = resolvePrefix(currentRecords(ctx.tenant), input.prefix, 'token');
  const { grants } = await revokeWithCascade(ctx.tenant, [target.hash], nowIso(ctx));
  await tokenRevoked(ctx, target, grants);
  return { revoked: true, hash_prefix: hashPrefix(target.hash) };
}

// ---------------------------------------------------------------- people

export async function listPeople(ctx: OpContext): Promise<Static<typeof PeopleList>> {
  requireAdmin(ctx);
  const now = nowMs(ctx);
  const byPerson = new Map<string, TokenRecord[]>();
  for (const r of currentRecords(ctx.tenant)) {
    if (!isPersonalToken(r)) continue;
    const list = byPerson.get(r.person) ?? [];
    list.push(r);
    byPerson.set(r.person, list);
  }
  const people = [...ctx.tenant.index.idsOfType('person')].sort().map((id) => {
    const node = ctx.tenant.index.get(id)!;
    const tokens = byPerson.get(id) ?? [];
    const lastUsed =
      tokens
        .map((t) => t.last_used)
        .filter((v): v is string => v !== null)
        .sort()
        .pop() ?? null;
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
function inviteArgs(ctx: OpContext, input: Static<typeof CreatePersonInput>): InviteArgs {
  const connection = input.connection_id ?? undefined;
  const org = input.org ?? undefined;
  const bound = ctx.tenant.org !== UNBOUND_ORG;
  if (bound && org !== undefined && org !== ctx.tenant.org) {
    throw errors.forbidden(`this server is bound to org '${ctx.tenant.org}'; an invitation cannot be pinned to '${org}'`, {
      org,
      bound_org: ctx.tenant.org,
    });
  }
  return { org: bound ? ctx.tenant.org : (org ?? null), connection_id: connection ?? null };
}

export async function createPerson(ctx: OpContext, input: Static<typeof CreatePersonInput>): Promise<Static<typeof PersonCreated>> {
  requireAdmin(ctx);
  const name = input.name.trim();
  const email = input.email.trim();
  // checked on the trimmed value, so it stays here rather than in the schema
  if (!/^[^\s@]+@[^\s@]+$/.test(email))
    throw errors.validation('email must be an address like name@example.com', [{ field: 'email', message: 'malformed email' }]);
  const id = input.id ?? personIdForEmail(email);
  const roles = [...new Set(input.roles ?? [])];
  const invite = input.invite === true;
  const args = inviteArgs(ctx, input);

  const revision = await ctx.tenant.write(
    writeActorOf(ctx.actor),
    { op: 'create_person', via: ctx.via, identity: identityAuthority() },
    async (draft) => {
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
        frontmatter: {
          id,
          type: 'person',
          status: 'active',
          title: name,
          summary: name,
          name,
          email,
          ...(roles.length > 0 ? { roles } : {}),
        },
        body: '',
      });
      const committed = await draft.commit();
      return committed.get(id)?.revision ?? null;
    },
  );

  await emitAdminEvent(ctx, 'person.created', [id], { id, name, email, roles, link: `/v1/nodes/${encodeURIComponent(id)}` });
  return { id, name, email, roles, revision, ...(invite ? { org_invitation: await invitePerson(ctx, { email, name }, args) } : {}) };
}

/**
 * The importer's people (plugins/import): a person named as an assignee or owner of an imported
 * item and missing here is created by this identity path (the import itself is admin-only).
 */
export async function writeImportedPerson(
  tenant: Tenant,
  actor: WriteActor,
  at: number | undefined,
  frontmatter: Frontmatter,
): Promise<void> {
  if (frontmatter.type !== 'person' || Array.isArray(frontmatter.edges))
    throw new Error('an imported person is a plain person node without edges');
  await tenant.write(actor, { op: 'import_person', via: 'import', at, identity: identityAuthority() }, async (draft) => {
    draft.put({ frontmatter, body: '' });
  });
}

// ---------------------------------------------------------------- admin rights

function isAdminNode(node: NodeRecord | undefined | null): boolean {
  return node !== undefined && node !== null && node.type === 'person' && node.edges.some((e) => e.type === 'stewards' && e.to === ROOT_ID);
}

/** Grants admin rights: a stewards edge from the person to proj-root, committed by the granting admin. */
export async function grantAdmin(ctx: OpContext, input: Static<typeof PersonIdInput>): Promise<Static<typeof AdminAnswer>> {
  requireAdmin(ctx);
  personNode(ctx, input.id);
  return ctx.tenant
    .write(writeActorOf(ctx.actor), { op: 'grant_admin', via: ctx.via, identity: identityAuthority() }, async (draft) => {
      if (!isAdminNode(ctx.tenant.index.get(ctx.actor.personId)))
        throw errors.forbidden(`admin only: ${ctx.actor.personId} is no longer an admin`);
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
    })
    .then(async (answer) => {
      if (answer.status === 'granted')
        await emitAdminEvent(ctx, 'person.updated', [input.id], { id: input.id, change: 'admin_granted', is_admin: true });
      return answer;
    });
}

/** Revokes admin rights; the last admin of a tenant keeps them (409 `last_admin`). */
export async function revokeAdmin(ctx: OpContext, input: Static<typeof PersonIdInput>): Promise<Static<typeof AdminAnswer>> {
  requireAdmin(ctx);
  personNode(ctx, input.id);
  return ctx.tenant
    .write(writeActorOf(ctx.actor), { op: 'revoke_admin', via: ctx.via, identity: identityAuthority() }, async (draft) => {
      const node = draft.get(input.id);
      if (!node || node.frontmatter.type !== 'person') throw errors.notFound(`person ${input.id}`);
      const edges = Array.isArray(node.frontmatter.edges) ? (node.frontmatter.edges as Array<Record<string, string>>) : [];
      if (!edges.some((e) => e.type === 'stewards' && e.to === ROOT_ID)) {
        return { id: input.id, is_admin: false, status: 'unchanged' as const, revision: node.revision };
      }
      // checked inside the write queue, so two concurrent revocations cannot both pass, and a
      // caller whose own rights were revoked meanwhile is refused
      if (!isAdminNode(ctx.tenant.index.get(ctx.actor.personId)))
        throw errors.forbidden(`admin only: ${ctx.actor.personId} is no longer an admin`);
      const admins = [...ctx.tenant.index.idsOfType('person')].filter((id) => isAdminNode(ctx.tenant.index.get(id)));
      if (admins.length <= 1) {
        throw new SvcError(
          409,
          'last_admin',
          `${input.id} is the last admin of ${ctx.tenant.org}; grant admin rights to someone else first`,
          { id: input.id, admins },
        );
      }
      const kept = edges.filter((e) => !(e.type === 'stewards' && e.to === ROOT_ID));
      if (kept.length > 0) node.frontmatter.edges = kept;
      else delete node.frontmatter.edges;
      draft.put(node);
      const committed = await draft.commit();
      return { id: input.id, is_admin: false, status: 'revoked' as const, revision: committed.get(input.id)?.revision ?? null };
    })
    .then(async (answer) => {
      if (answer.status === 'revoked')
        await emitAdminEvent(ctx, 'person.updated', [input.id], { id: input.id, change: 'admin_revoked', is_admin: false });
      return answer;
    });
}

/** GET /v1/admin/audit/identity: every change to an identity fact in this tenant's history. */
export async function auditIdentity(ctx: OpContext, input: Static<typeof AuditIdentityInput>): Promise<Static<typeof IdentityAudit>> {
  requireAdmin(ctx);
  const audit = await auditIdentityHistory(ctx.tenant.store.gitdir, ctx.tenant.registry, { onlyFlagged: input.flagged === true });
  return { org: ctx.tenant.org, ...audit, tokens_at_risk: tokensAtRisk(audit.entries, ctx.tenant.tokens.all()) };
}

/** The invitation outcome; a provider failure is reported, never thrown (the person stays). */
async function invitePerson(ctx: OpContext, who: { email: string; name: string }, args: InviteArgs): Promise<Static<typeof OrgInvitation>> {
  const base = ctx.services.config.idpUrl;
  if (!base) return { status: 'failed', reason: 'no identity provider is configured (SVC_IDP_URL)', org: args.org };
  try {
    const issued = await issueInvitation(base, {
      email: who.email,
      name: who.name,
      org: args.org,
      connection_id: args.connection_id,
      invited_by: ctx.actor.personId,
    });
    return {
      status: 'issued',
      invitation_id: issued.id,
      org: issued.org,
      email: who.email,
      ...(issued.connection_id ? { connection_id: issued.connection_id } : {}),
    };
  } catch (err) {
    if (!(err instanceof IdpCallError)) throw err;
    ctx.services.log.warn('person invitation failed', { org: ctx.tenant.org, reason: err.message });
    return { status: 'failed', reason: err.message, org: args.org };
  }
}

export async function offboardPerson(ctx: OpContext, input: Static<typeof PersonIdInput>): Promise<Static<typeof Offboarded>> {
  requireAdmin(ctx);
  const id = input.id;
  if (id === ctx.actor.personId)
    throw errors.validation('you cannot offboard yourself; ask another admin', [{ field: 'id', message: 'self-offboarding' }]);
  personNode(ctx, id);
  const hashes = currentRecords(ctx.tenant)
    .filter((r) => r.person === id && r.revoked_at === null)
    .map((r) => r.hash);
  const { tokens, grants } = await revokeWithCascade(ctx.tenant, hashes, nowIso(ctx));
  // a pending sign-in link dies with the tokens, and a provider's email no longer signs them in
  await forgetSignin(ctx.tenant, id, nowIso(ctx));
  await emitAdminEvent(ctx, 'person.updated', [id], { id, change: 'offboarded', tokens_revoked: tokens, oauth_grants_revoked: grants });
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
