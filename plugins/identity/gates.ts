/**
 * The identity plugin's shared rules: clocks, token lifetimes, and the gates every identity
 * operation applies (human token, direct credential, bound person, admin, agent ownership).
 */
import { errors } from '../../kernel/errors.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { OpContext } from '../../kernel/plugin.js';
import { ROOT_ID } from '../../kernel/tenants.js';

export const DAY_MS = 24 * 60 * 60 * 1000;
/** PATs and standing agent tokens: default and cap one year. */
export const PAT_DAYS = 365;
/** Per-session agent tokens: the default lifetime is the 7-day cap; `expires` may only shorten it. */
export const SESSION_TOKEN_DAYS = 7;
/** A session id: what a harness names one run; safe in commit trailers and frontmatter. */
export const SESSION_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
/** The org slug of a tenant no org was ever set for (docs/spec.md: GET /v1/me `org` "else local"). */
export const UNBOUND_ORG = 'local';

export function nowMs(ctx: OpContext): number {
  return ctx.services.clock.now();
}

export function nowIso(ctx: OpContext): string {
  return new Date(nowMs(ctx)).toISOString();
}

// ---------------------------------------------------------------- gates

/** Credentials and identities are managed by people: an agent token cannot mint, revoke or administer. */
export function requireHumanToken(ctx: OpContext): void {
  if (ctx.actor.agent) throw errors.forbidden('agent tokens cannot manage tokens, people or agents; use a personal token of the owner');
}

/**
 * New credentials come only from a credential of the person's own: a token derived from a grant
 * (an OAuth access token) or a connector JWT cannot mint one, or it would outlive the revocation
 * of what it came from.
 */
export function requireDirectCredential(ctx: OpContext): void {
  const kind = ctx.actor.token.kind;
  if (kind === 'oauth-access' || kind === 'connector-jwt') {
    throw errors.forbidden('tokens are minted with a personal access token, not with an OAuth access token or a connector JWT', {
      credential: kind,
    });
  }
}

export function requirePerson(ctx: OpContext): void {
  if (!ctx.actor.bound) throw errors.noPersonForbidden();
}

/** Admin gate: a person token whose person stewards proj-root. */
export function requireAdmin(ctx: OpContext): void {
  requireHumanToken(ctx);
  if (!ctx.actor.isAdmin) throw errors.forbidden(`admin only: the caller needs a stewards edge to ${ROOT_ID}`);
}

export function personNode(ctx: OpContext, id: string): NodeRecord {
  const node = ctx.tenant.index.get(id);
  if (!node || node.type !== 'person') throw errors.notFound(`person ${id}`);
  return node;
}

/** Unknown or not an agent node is 404 (a malformed id is 422 from the input schema). */
export function agentNode(ctx: OpContext, id: string): NodeRecord {
  const node = ctx.tenant.index.get(id);
  if (!node || node.type !== 'agent') throw errors.notFound(`agent ${id}`);
  return node;
}

export function ownerOf(agent: NodeRecord): string | null {
  return agent.edges.find((e) => e.type === 'owned-by')?.to ?? null;
}

/** Ownership gate: the caller's person owns the agent (admin rights do not substitute). */
export function requireOwner(ctx: OpContext, agent: NodeRecord): void {
  requirePerson(ctx);
  if (ownerOf(agent) !== ctx.actor.personId) throw errors.forbidden(`only the owner of ${agent.id} may do this`, { agent: agent.id });
}

/** Owner-or-self gate: the owner's person token, or a token of this very agent. */
export function requireOwnerOrSelf(ctx: OpContext, agent: NodeRecord): void {
  if (ctx.actor.agent) {
    if (ctx.actor.agent === agent.id) return;
    throw errors.forbidden(`an agent token acts only for its own agent; ${agent.id} is another agent`, { agent: agent.id });
  }
  requireOwner(ctx, agent);
}
