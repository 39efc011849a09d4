/**
 * Leases that mean something to writers (docs/decisions.md "patch"):
 *
 * - A client write to a work node someone else holds (put, patch, set_status, edges,
 *   priority, readiness, commit links) warns naming the holder, and the holder is told: a
 *   lease notice waits for them and comes back on their next claim, renew, extend or reserve
 *   answer (`lease_notices`).
 * - Under the tenant setting `leases: strict` such a write is 409 `lease_held`, unless the
 *   writer holds the lease or is an admin passing `force: true`.
 * - A write that leaves the node in a terminal status drops its lease (the caller's or
 *   anyone's): finished work holds nothing. The `assigned` edge stays as the record of who
 *   carried the work (analytics and the import read it on done nodes).
 *
 * Notices are operational state (collection `lease-notices`, one record per holder person),
 * never graph data.
 */
import { emitLeaseEvents } from './events.js';
import { errors } from '../../kernel/errors.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { NodeWriteCheck, OpContext, TenantSettingDef } from '../../kernel/plugin.js';
import { perTenant } from '../../kernel/per-tenant.js';
import type { Collection } from '../../kernel/state-store.js';
import type { Tenant } from '../../kernel/tenant.js';
import type { LeaseNotice } from './schemas.js';
import { holderDetails, leasesOf, relationOf, type StoredLease } from './store.js';

/** The tenant settings this plugin reads (tenant.json `settings`). */
export const leaseSettings: Record<string, TenantSettingDef> = {
  leases: {
    values: ['advisory', 'strict'],
    default: 'advisory',
    description:
      'advisory: a write to a node someone else holds warns and tells the holder; strict: it is 409 lease_held unless the writer holds the lease or is an admin passing force',
  },
};

export function strictLeases(tenant: Tenant): boolean {
  return tenant.config.settings?.leases === 'strict';
}

interface NoticeBox {
  notices: LeaseNotice[];
}

/** Notices kept per holder until delivered; the oldest go first beyond this. */
const MAX_NOTICES = 50;

const noticesOf: (tenant: Tenant) => Collection<NoticeBox> = perTenant((tenant) => tenant.state.collection<NoticeBox>('lease-notices'));

/** "Ada Lovelace (person-ada)", with the agent and session when the lease names them. */
export function holderName(tenant: Tenant, lease: StoredLease): string {
  const name = tenant.index.get(lease.by)?.frontmatter.name;
  const who = typeof name === 'string' && name !== '' ? `${name} (${lease.by})` : lease.by;
  const extra = [lease.agent ? `agent ${lease.agent}` : null, lease.session ? `session ${lease.session}` : null].filter(Boolean);
  return extra.length > 0 ? `${who}, ${extra.join(', ')}` : who;
}

function heldText(tenant: Tenant, lease: StoredLease): string {
  return `${lease.state === 'reserved' ? 'reserved' : 'held'} by ${holderName(tenant, lease)} until ${new Date(lease.expires_ms).toISOString()}`;
}

async function addNotice(tenant: Tenant, person: string, notice: LeaseNotice): Promise<void> {
  const box = noticesOf(tenant);
  const notices = [...(box.get(person)?.notices ?? []), notice].slice(-MAX_NOTICES);
  await box.set(person, { notices });
}

/** The caller's waiting notices, removed as they are handed over (each is delivered once). */
export async function takeNotices(ctx: OpContext): Promise<LeaseNotice[]> {
  if (!ctx.actor.bound) return [];
  const box = noticesOf(ctx.tenant);
  if (!box.has(ctx.actor.personId)) return [];
  return (await box.take(ctx.actor.personId))?.notices ?? [];
}

/** Adds `lease_notices` to an answer when some are waiting. */
export async function withNotices<T extends object>(ctx: OpContext, answer: T): Promise<T & { lease_notices?: LeaseNotice[] }> {
  const notices = await takeNotices(ctx);
  return notices.length > 0 ? { ...answer, lease_notices: notices } : answer;
}

/** The node write check: warn (or, strict, refuse) a non-holder; tell the holder; release on a terminal status. */
export const leaseHolderCheck: NodeWriteCheck = (ctx, node, intent) => {
  const table = leasesOf(ctx.tenant);
  const lease = table.get(node.id);
  if (!lease) return null;
  const nowMs = ctx.services.clock.now();
  const live = lease.expires_ms > nowMs ? lease : undefined;
  const claimant = { person: ctx.actor.personId, agent: ctx.actor.agent, session: ctx.actor.session };
  const other = live && relationOf(live, claimant) !== 'own' ? live : undefined;
  const warnings: string[] = [];
  if (other) {
    const held = `${node.id} is ${heldText(ctx.tenant, other)}`;
    if (strictLeases(ctx.tenant) && !intent.force) {
      throw errors.leaseHeld(
        `${held}; this tenant runs leases: strict, so only the holder (or an admin passing force) may change it: ask them, or wait for the lease to end`,
        {
          ...holderDetails(other, node.id),
          holder_name: ctx.tenant.index.get(other.by)?.frontmatter.name ?? null,
          op: intent.op,
        },
      );
    }
    warnings.push(`${held}: ${intent.force ? 'written with force' : 'written anyway'}; the holder is told (claim it, or ask them first)`);
  }
  return {
    warnings,
    landed: async (after: NodeRecord) => {
      const out: string[] = [];
      const terminal = ctx.tenant.registry.isTerminal(after.type, after.status);
      const current = table.get(node.id);
      const released = terminal && current !== undefined;
      if (released) {
        await table.drop(node.id);
        if (current.expires_ms > nowMs) {
          await emitLeaseEvents(ctx, [{ type: 'lease.released', lease: current, extra: { reason: 'terminal', status: after.status } }]);
          out.push(
            relationOf(current, claimant) === 'own'
              ? `your lease on ${node.id} was released: ${after.status} is a terminal status (the assigned edge stays as the record of who carried it)`
              : `the lease ${heldText(ctx.tenant, current)} was released: ${after.status} is a terminal status`,
          );
        }
      }
      if (other) {
        const byName = ctx.actor.name || null;
        const verb = intent.force ? 'overrode your lease with force and changed' : 'changed';
        await addNotice(ctx.tenant, other.by, {
          node_id: node.id,
          op: intent.op,
          by: ctx.actor.personId,
          by_name: byName,
          agent: ctx.actor.agent,
          at: new Date(nowMs).toISOString(),
          status: after.status,
          forced: intent.force,
          released,
          message: `${byName ? `${byName} (${ctx.actor.personId})` : ctx.actor.personId} ${verb} ${node.id} (${intent.op}) while you held it${released ? `; it is ${after.status} now and your lease was released` : ''}`,
        });
      }
      return out;
    },
  };
};
