/**
 * The leases plugin's events (docs/events.md "Leases"): claimed, taken_over, renewed (only at a
 * boundary: an explicit extend, or a reservation revived; a plain heartbeat is silent),
 * reserved, released, expired. Expiry happens without a request: a sweep per server notices
 * lapsed leases on the injected clock and announces each once (the record keeps that it was).
 */
import { emitEvent, eventActorOf, SYSTEM_ACTOR } from '../../kernel/events/emit.js';
import type { EventActor, NewEvent } from '../../kernel/events/types.js';
import type { KernelServices, OpContext } from '../../kernel/plugin.js';
import type { Tenant } from '../../kernel/tenant.js';
import { leasesOf, type StoredLease } from './store.js';

export type LeaseEventType =
  'lease.claimed' | 'lease.taken_over' | 'lease.renewed' | 'lease.reserved' | 'lease.released' | 'lease.expiring' | 'lease.expired';

function leaseEvent(tenant: Tenant, type: LeaseEventType, actor: EventActor, lease: StoredLease, extra: Record<string, unknown>): NewEvent {
  return {
    type,
    actor,
    nodes: [lease.node_id],
    project: tenant.index.get(lease.node_id)?.project ?? null,
    payload: {
      holder: lease.by,
      agent: lease.agent,
      session: lease.session,
      state: lease.state,
      expires_at: new Date(lease.expires_ms).toISOString(),
      link: `/v1/nodes/${encodeURIComponent(lease.node_id)}`,
      ...extra,
    },
  };
}

/** Records lease events of one operation (durable when it resolves). */
export async function emitLeaseEvents(
  ctx: OpContext,
  events: Array<{ type: LeaseEventType; lease: StoredLease; extra?: Record<string, unknown> }>,
): Promise<void> {
  const actor = eventActorOf(ctx.actor, ctx.via);
  await Promise.all(events.map((e) => emitEvent(ctx.tenant, leaseEvent(ctx.tenant, e.type, actor, e.lease, e.extra ?? {}))));
}

/** The event of a claim that took a node: taken_over when it displaced another's live lease. */
export function claimEventOf(
  lease: StoredLease,
  previous: StoredLease | undefined,
  nowMs: number,
): { type: LeaseEventType; lease: StoredLease; extra?: Record<string, unknown> } {
  if (previous && previous.by !== lease.by && previous.expires_ms > nowMs)
    return { type: 'lease.taken_over', lease, extra: { previous_holder: previous.by, previous_agent: previous.agent } };
  if (previous && (previous.by !== lease.by || previous.agent !== lease.agent))
    return { type: 'lease.claimed', lease, extra: { previous_holder: previous.by } };
  return { type: 'lease.claimed', lease };
}

/** how often the server looks for lapsed leases */
export const EXPIRY_SWEEP_MS = 1000;

/** A live lease this close to its expiry is announced as `lease.expiring` (once per expiry instant). */
export const EXPIRING_WINDOW_MS = 5 * 60 * 1000;

/**
 * Announces each lease that lapsed (live or reserved) once: `lease.expired`; and each lease
 * within EXPIRING_WINDOW_MS of its expiry once per expiry instant: `lease.expiring` (a renewal
 * moves the instant and re-arms it). Actor null, via 'system'. Returns how many it announced.
 */
export async function sweepExpired(tenant: Tenant, nowMs: number): Promise<number> {
  const table = leasesOf(tenant);
  const lapsed: StoredLease[] = [];
  const expiring: StoredLease[] = [];
  for (const lease of table.records.values()) {
    if (lease.expires_ms <= nowMs) {
      if (!lease.expiry_announced) lapsed.push(lease);
    } else if (lease.expires_ms - nowMs <= EXPIRING_WINDOW_MS && lease.expiring_announced_for !== lease.expires_ms) expiring.push(lease);
  }
  let announced = 0;
  for (const lease of expiring) {
    if (table.get(lease.node_id) !== lease) continue;
    const persisted = table.put({ ...lease, expiring_announced_for: lease.expires_ms });
    await emitEvent(tenant, leaseEvent(tenant, 'lease.expiring', { ...SYSTEM_ACTOR }, lease, { remaining_ms: lease.expires_ms - nowMs }));
    await persisted.catch((err: unknown) => tenant.log.warn('lease expiring mark not stored', { org: tenant.org, error: String(err) }));
    announced++;
  }
  for (const lease of lapsed) {
    if (table.get(lease.node_id) !== lease) continue; // claimed or released meanwhile
    const marked: StoredLease = { ...lease, expiry_announced: true };
    const persisted = table.put(marked);
    await emitEvent(
      tenant,
      leaseEvent(tenant, 'lease.expired', { ...SYSTEM_ACTOR }, lease, { expired_at: new Date(lease.expires_ms).toISOString() }),
    );
    await persisted.catch((err: unknown) => tenant.log.warn('lease expiry mark not stored', { org: tenant.org, error: String(err) }));
    announced++;
  }
  return announced;
}

const sweeps = new Set<ReturnType<typeof setInterval>>();

/** Starts the expiry sweep over every tenant with leases enabled (stopped by `stopExpirySweeps`). */
export function startExpirySweep(services: KernelServices): void {
  let running = false;
  const timer = setInterval(() => {
    if (running || services.closing) return;
    running = true;
    (async () => {
      const now = services.clock.now();
      for (const tenant of services.tenants.list()) if (tenant.enabled('leases')) await sweepExpired(tenant, now);
    })()
      .catch((err: unknown) => services.log.warn('lease expiry sweep failed', { error: String(err) }))
      .finally(() => (running = false));
  }, EXPIRY_SWEEP_MS);
  timer.unref();
  sweeps.add(timer);
}

export function stopExpirySweeps(): void {
  for (const timer of sweeps) clearInterval(timer);
  sweeps.clear();
}
