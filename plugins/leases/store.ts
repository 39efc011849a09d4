/**
 * Lease records: operational state (docs/design.md §1), one record per work node in the tenant's
 * `leases` state collection. Never committed to the graph. Expiry is a stored instant
 * compared with the injected clock on every read, so no timer has to fire for a lease to
 * lapse, and a restart reads the same records back.
 *
 * Every acquisition decision is made synchronously against the in-memory map (the state
 * collection mutates its map before it starts the durable write), so two requests racing
 * for a node can never both see it free: the first to reach `acquire` wins, the second sees
 * the winner's record.
 */
import { errors, type SvcError } from '../../kernel/errors.js';
import type { Collection } from '../../kernel/state-store.js';
import type { Tenant } from '../../kernel/tenant.js';
import { perTenant } from '../../kernel/per-tenant.js';
import type { Static } from '../../kernel/operation.js';
import type { LeaseRecord } from './schemas.js';

export type LeaseState = 'live' | 'reserved';

/** The stored form. `expires_ms` is epoch milliseconds; a record at or past it has lapsed. */
export interface StoredLease {
  node_id: string;
  /** the claiming person (for agent tokens: the agent's owner) */
  by: string;
  agent: string | null;
  /** run the lease is bound to; null = person-scoped */
  session: string | null;
  claimed_at: string;
  expires_ms: number;
  state: LeaseState;
  /** set once its lapse was announced (`lease.expired`, plugins/leases/events.ts) */
  expiry_announced?: boolean;
  /** the `expires_ms` a `lease.expiring` was announced for (a renewal moves it, re-arming the warning) */
  expiring_announced_for?: number;
}

/** A lease as answers show it (schemas.ts `LeaseRecord`). */
export type LeaseView = Static<typeof LeaseRecord>;

/** Who is asking: the authenticated person, the agent acting for them, and the run (session). */
export interface Claimant {
  person: string;
  agent: string | null;
  session: string | null;
}

export type Relation = 'own' | 'other-session' | 'other';

export function leaseView(lease: StoredLease): LeaseView {
  return {
    node_id: lease.node_id,
    by: lease.by,
    expires: lease.expires_ms,
    expires_at: new Date(lease.expires_ms).toISOString(),
    session: lease.session,
    claimed_at: lease.claimed_at,
    agent: lease.agent,
    state: lease.state,
  };
}

/**
 * Ownership: a lease belongs to its person; once bound to a session it belongs to that run
 * only, so another run of the same person is treated like another holder. Two agents are
 * different claimants even when one person owns both (agent B must not silently renew
 * agent A's lease), unless both act in the same bound session. A person-level caller (no
 * agent, no session) still owns its own leases, its agents' included.
 */
export function relationOf(lease: StoredLease, claimant: Claimant): Relation {
  if (lease.by !== claimant.person) return 'other';
  if (lease.session !== null && claimant.session !== null) return lease.session === claimant.session ? 'own' : 'other-session';
  if (claimant.agent !== null && lease.agent !== claimant.agent) return 'other';
  return 'own';
}

export function holderText(lease: StoredLease): string {
  const who = [lease.by, lease.agent ? `agent ${lease.agent}` : null, lease.session ? `session ${lease.session}` : null]
    .filter(Boolean)
    .join(', ');
  const what = lease.state === 'reserved' ? 'reserved' : 'claimed';
  return `${what} by ${who} until ${new Date(lease.expires_ms).toISOString()}`;
}

export function holderDetails(lease: StoredLease | undefined, nodeId: string): Record<string, unknown> {
  if (!lease) return { node_id: nodeId, holder: null, expires_at: null };
  return {
    node_id: nodeId,
    holder: lease.by,
    agent: lease.agent,
    session: lease.session,
    state: lease.state,
    expires_at: new Date(lease.expires_ms).toISOString(),
  };
}

/** 409 `conflict`: someone else holds a live lease (names the holder and the expiry). */
export function heldByOther(nodeId: string, lease: StoredLease): SvcError {
  return errors.conflict(`${nodeId} is ${holderText(lease)}`, holderDetails(lease, nodeId));
}

/** 409 `lease_lost`: the caller no longer holds the lease (names the current holder, if any). */
export function leaseLost(nodeId: string, live: StoredLease | undefined, lapsed: StoredLease | undefined): SvcError {
  if (live) return errors.leaseLost(`you no longer hold ${nodeId}: it is ${holderText(live)}`, holderDetails(live, nodeId));
  const when = lapsed ? ` (your lease lapsed at ${new Date(lapsed.expires_ms).toISOString()})` : '';
  return errors.leaseLost(`you hold no live lease on ${nodeId}${when}; claim it again`, holderDetails(undefined, nodeId));
}

export class LeaseTable {
  constructor(readonly records: Collection<StoredLease>) {}

  get(nodeId: string): StoredLease | undefined {
    return this.records.get(nodeId);
  }

  /** The record if it has not lapsed at `nowMs` (a reservation counts as live until its grace window ends). */
  live(nodeId: string, nowMs: number): StoredLease | undefined {
    const lease = this.records.get(nodeId);
    return lease && lease.expires_ms > nowMs ? lease : undefined;
  }

  /** Synchronous in-memory swap; the returned promise resolves once the change is durable. */
  put(lease: StoredLease): Promise<void> {
    return this.records.set(lease.node_id, lease);
  }

  drop(nodeId: string): Promise<void> {
    return this.records.delete(nodeId);
  }

  /** Undo a swap made by this request, unless someone else has replaced the record since. */
  restore(nodeId: string, mine: StoredLease, previous: StoredLease | undefined): Promise<void> {
    const current = this.records.get(nodeId);
    if (current !== mine) return Promise.resolve();
    return previous ? this.records.set(nodeId, previous) : this.records.delete(nodeId);
  }

  /** Every record of one person (live, reserved or lapsed). O(records); the table holds one per claimed node. */
  ofPerson(person: string): StoredLease[] {
    const out: StoredLease[] = [];
    for (const lease of this.records.values()) if (lease.by === person) out.push(lease);
    return out;
  }
}

/** The lease table of a tenant (also read by the queue plugin to show holders). */
export const leasesOf: (tenant: Tenant) => LeaseTable = perTenant(
  (tenant) => new LeaseTable(tenant.state.collection<StoredLease>('leases')),
);
