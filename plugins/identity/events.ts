/**
 * The identity plugin's admin events (docs/events.md "Admin events"): people created or
 * changed, tokens minted or revoked. Only admins see them (`audience: 'admins'`); a token
 * event names the token by its hash prefix (what the token listings show), never the token.
 */
import { hashPrefix, type TokenRecord } from '../../kernel/auth.js';
import { emitEvent, eventActorOf } from '../../kernel/events/emit.js';
import type { OpContext } from '../../kernel/plugin.js';

export async function emitAdminEvent(ctx: OpContext, type: string, nodes: string[], payload: Record<string, unknown>): Promise<void> {
  await emitEvent(ctx.tenant, {
    type,
    actor: eventActorOf(ctx.actor, ctx.via),
    nodes,
    project: null,
    audience: 'admins',
    payload,
  });
}

function tokenFacts(record: TokenRecord): Record<string, unknown> {
  return {
    hash_prefix: hashPrefix(record.hash),
    kind: record.kind,
    person: record.person,
    agent: record.agent,
    session: record.session,
    label: record.label,
    expires: record.expires,
  };
}

export function tokenCreated(ctx: OpContext, record: TokenRecord): Promise<void> {
  const nodes = [record.person, ...(record.agent ? [record.agent] : [])];
  return emitAdminEvent(ctx, 'token.created', nodes, { ...tokenFacts(record), minted_by: record.minted_by });
}

export function tokenRevoked(ctx: OpContext, record: TokenRecord, cascaded: number): Promise<void> {
  const nodes = [record.person, ...(record.agent ? [record.agent] : [])];
  return emitAdminEvent(ctx, 'token.revoked', nodes, { ...tokenFacts(record), oauth_grants_revoked: cascaded });
}
