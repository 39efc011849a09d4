/**
 * size: claim, renew and release, single and batch, share the holder, session and terminal rules
 * kept side by side here; a split by single/batch would separate each rule from its twin.
 * Lease operations (docs/spec.md "Leases" and "States and transitions / Lease"): one function per
 * operation, shared by the REST routes and the MCP tools.
 *
 * Atomicity: every decision about who holds a node is taken synchronously against the
 * in-memory lease table before the first `await` (see store.ts), then made durable, then
 * the `assigned` edge is committed through the tenant's write queue. If persisting or the
 * edge commit fails, the request's own lease change is undone, so a failed claim leaves
 * nothing behind. Renew, extend and reserve never commit to the graph.
 */
import { errors, isSvcError, type SvcError } from '../../kernel/errors.js';
import { withHints } from '../../kernel/error-hints.js';
import type { Edge, NodeRecord } from '../../kernel/graph-index.js';
import type { OpContext, StatusEffect } from '../../kernel/plugin.js';
import type { WriteDraft } from '../../kernel/write-draft.js';
import { writeActorOf } from '../../kernel/tenants.js';
import { requireId } from '../../kernel/validate.js';
import { isDone } from '../core/public.js';
import type { Static } from '../../kernel/operation.js';
import { takeNotices, withNotices } from './holder.js';
import { claimEventOf, emitLeaseEvents } from './events.js';
import type {
  BatchFailure,
  ClaimBatchInput,
  ClaimBatchOutput,
  ClaimNodeInput,
  ClaimNodeOutput,
  EdgeResult,
  ExtendInput,
  ExtendOutput,
  LeaseInput,
  ReleaseBatchInput,
  ReleaseBatchOutput,
  ReleaseNodeOutput,
  RenewBatchInput,
  RenewBatchOutput,
  RenewNodeOutput,
  ReserveOutput,
} from './schemas.js';
import {
  heldByOther,
  leaseLost,
  leasesOf,
  leaseView,
  relationOf,
  type Claimant,
  type LeaseTable,
  type LeaseView,
  type StoredLease,
} from './store.js';

/** `session` is checked by the operation's input schema (schemas.ts): 1-128 of [A-Za-z0-9._:-]. */
type Session = Static<typeof LeaseInput>['session'];

// ---------------------------------------------------------------- input checks

/** The claimer is always the authenticated identity; `session` binds the lease to a run. */
export function claimantOf(ctx: OpContext, session: Session): Claimant {
  const requested = session ?? null;
  if (!ctx.actor.bound) throw errors.noPersonForbidden('leases need a token bound to a person node');
  const bound = ctx.actor.session;
  if (bound && requested && requested !== bound) {
    throw errors.conflict(`session mismatch: this agent token is bound to session ${bound}`, { session: requested, bound_session: bound });
  }
  return { person: ctx.actor.personId, agent: ctx.actor.agent, session: requested ?? bound ?? null };
}

/** Only work nodes (queueable types) carry leases: 404 unknown, 422 for any other type. */
function workNode(ctx: OpContext, id: string): NodeRecord {
  const record = ctx.tenant.index.get(id);
  if (!record) throw errors.notFound(`node ${id}`);
  const def = ctx.tenant.registry.nodeTypes.get(record.type);
  if (!def?.queueable) {
    const work = [...ctx.tenant.registry.nodeTypes.values()].filter((t) => t.queueable).map((t) => t.type);
    throw errors.validation(`${id} is a ${record.type}; only work nodes (${work.join(', ')}) can be leased`, [
      { field: 'id', message: 'not a work node', type: record.type },
    ]);
  }
  return record;
}

/** The ids in first-seen order, duplicates collapsed (count and bounds are the input schema's). */
function idList(value: string[]): string[] {
  return [...new Set(value)];
}

function failureOf(ctx: OpContext, nodeId: string, err: SvcError, heldCode: string): BatchFailure {
  const holder = typeof err.details.holder === 'string' ? err.details.holder : undefined;
  const code = err.code === 'conflict' && holder ? heldCode : err.code;
  // the same message a single claim would answer: people named beside their id (kernel/error-hints.ts)
  return { node_id: nodeId, code, message: withHints(err, ctx.tenant).message, ...(holder ? { holder } : {}) };
}

const iso = (ms: number) => new Date(ms).toISOString();

// ---------------------------------------------------------------- lease state changes (synchronous)

interface Acquisition {
  nodeId: string;
  kind: 'claimed' | 'renewed';
  lease: StoredLease;
  previous: StoredLease | undefined;
  persisted: Promise<void>;
}

/** A heartbeat: live for another TTL (never shortened); a reservation turns back into a fresh live lease. */
function refreshed(lease: StoredLease, claimant: Claimant, nowMs: number, ttlMs: number): StoredLease {
  const fresh = nowMs + ttlMs;
  return {
    ...lease,
    state: 'live',
    expires_ms: lease.state === 'reserved' ? fresh : Math.max(lease.expires_ms, fresh),
    session: claimant.session ?? lease.session,
    agent: claimant.agent ?? lease.agent,
  };
}

/**
 * The claim decision, taken without yielding: renew our own live lease, or take a node no
 * one holds (or, with `force`, one someone else holds); otherwise 409 naming the holder.
 */
function acquire(ctx: OpContext, table: LeaseTable, nodeId: string, claimant: Claimant, nowMs: number, force: boolean): Acquisition {
  const ttl = ctx.tenant.config.limits.claim_ttl_ms;
  const previous = table.get(nodeId);
  const live = previous && previous.expires_ms > nowMs ? previous : undefined;
  let lease: StoredLease;
  let kind: Acquisition['kind'];
  if (live && relationOf(live, claimant) === 'own') {
    kind = 'renewed';
    lease = refreshed(live, claimant, nowMs, ttl);
  } else {
    if (live && !force) throw heldByOther(nodeId, live);
    kind = 'claimed';
    lease = {
      node_id: nodeId,
      by: claimant.person,
      agent: claimant.agent,
      session: claimant.session,
      claimed_at: iso(nowMs),
      expires_ms: nowMs + ttl,
      state: 'live',
    };
  }
  return { nodeId, kind, lease, previous, persisted: table.put(lease) };
}

/** The caller's own live (or reserved) lease, else 409 `lease_lost` naming whoever holds it now. */
function ownLive(table: LeaseTable, nodeId: string, claimant: Claimant, nowMs: number): StoredLease {
  const current = table.get(nodeId);
  const live = current && current.expires_ms > nowMs ? current : undefined;
  if (live && relationOf(live, claimant) === 'own') return live;
  throw leaseLost(nodeId, live, current && current.by === claimant.person ? current : undefined);
}

/**
 * Renew, extend and reserve on a finished node (terminal status, resolved or superseded): the
 * caller's lease record is dropped (started synchronously, `dropped` resolves once durable) and
 * the answer is 409 `lease_lost` with `details.reason: 'terminal'`, so a heartbeat loop stops
 * instead of keeping a claim on work that is over. The assigned edge stays.
 */
function doneRefusal(
  ctx: OpContext,
  table: LeaseTable,
  record: NodeRecord,
  claimant: Claimant,
): { error: SvcError; dropped: Promise<void> } | null {
  if (!isDone(ctx.tenant, record)) return null;
  const current = table.get(record.id);
  const mine = current !== undefined && current.by === claimant.person && relationOf(current, claimant) !== 'other';
  const dropped = mine ? table.drop(record.id) : Promise.resolve();
  const why = ctx.tenant.registry.isTerminal(record.type, record.status)
    ? `status ${record.status} is terminal`
    : 'it is resolved or superseded';
  const error = errors.leaseLost(
    `${record.id} is done (${why}): there is nothing left to hold; ${mine ? 'your lease was released' : 'you hold no lease on it'}`,
    {
      node_id: record.id,
      reason: 'terminal',
      status: record.status,
      holder: null,
      released: mine,
    },
  );
  return { error, dropped };
}

/** Throws the terminal refusal (with the caller's waiting lease notices) once the drop is durable. */
async function refuseIfDone(ctx: OpContext, table: LeaseTable, record: NodeRecord, claimant: Claimant): Promise<void> {
  const refusal = doneRefusal(ctx, table, record, claimant);
  if (!refusal) return;
  await refusal.dropped;
  const notices = await takeNotices(ctx);
  if (notices.length > 0) refusal.error.details.lease_notices = notices;
  throw refusal.error;
}

// ---------------------------------------------------------------- the assigned edge

function isAssignedTo(edge: unknown, person: string): boolean {
  return !!edge && typeof edge === 'object' && (edge as Edge).type === 'assigned' && (edge as Edge).to === person;
}

function rawEdges(frontmatter: Record<string, unknown>): unknown[] {
  return Array.isArray(frontmatter.edges) ? [...(frontmatter.edges as unknown[])] : [];
}

/**
 * Writes `assigned` (node -> person) unless present; retires the edge of a holder whose
 * lease this claim replaces. Internal bookkeeping: the node's author stamps are kept.
 */
async function assignInDraft(
  ctx: OpContext,
  draft: WriteDraft,
  nodeId: string,
  person: string,
  retire: string | null,
): Promise<EdgeResult> {
  const node = draft.get(nodeId);
  if (!node) throw errors.notFound(`node ${nodeId}`);
  const before = rawEdges(node.frontmatter);
  const kept = retire && retire !== person ? before.filter((e) => !isAssignedTo(e, retire)) : before;
  const existed = kept.some((e) => isAssignedTo(e, person));
  const edges = existed ? kept : [...kept, { type: 'assigned', to: person }];
  if (!existed || kept.length !== before.length) {
    node.frontmatter.edges = edges;
    draft.put({ frontmatter: node.frontmatter, body: node.body }, { stamp: false });
    await draft.commit();
  }
  return {
    type: 'assigned',
    from: nodeId,
    to: person,
    status: existed ? 'skipped' : 'created',
    revision: ctx.tenant.index.get(nodeId)?.revision ?? null,
  };
}

async function retireInDraft(ctx: OpContext, draft: WriteDraft, nodeId: string, person: string): Promise<EdgeResult | null> {
  const node = draft.get(nodeId);
  if (!node) return null;
  const before = rawEdges(node.frontmatter);
  const edges = before.filter((e) => !isAssignedTo(e, person));
  if (edges.length === before.length) return null;
  if (edges.length === 0) delete node.frontmatter.edges;
  else node.frontmatter.edges = edges;
  draft.put({ frontmatter: node.frontmatter, body: node.body }, { stamp: false });
  await draft.commit();
  return { type: 'assigned', from: nodeId, to: person, status: 'deleted', revision: ctx.tenant.index.get(nodeId)?.revision ?? null };
}

function describeEdge(ctx: OpContext, nodeId: string, person: string): EdgeResult | null {
  const record = ctx.tenant.index.get(nodeId);
  if (!record || !record.edges.some((e) => isAssignedTo(e, person))) return null;
  return { type: 'assigned', from: nodeId, to: person, status: 'skipped', revision: record.revision };
}

function leaseWrite<T>(ctx: OpContext, op: 'claim' | 'release', fn: (draft: WriteDraft) => Promise<T>): Promise<T> {
  return ctx.tenant.write(writeActorOf(ctx.actor), { op, via: ctx.via, internal: true }, fn);
}

/** Makes an acquisition durable and writes the edge of a first claim; undoes the acquisition on failure. */
async function settle(ctx: OpContext, table: LeaseTable, acq: Acquisition, claimant: Claimant): Promise<EdgeResult | null> {
  try {
    await acq.persisted;
    if (acq.kind === 'renewed') return describeEdge(ctx, acq.nodeId, claimant.person);
    const retire = acq.previous && acq.previous.by !== claimant.person ? acq.previous.by : null;
    return await leaseWrite(ctx, 'claim', (draft) => assignInDraft(ctx, draft, acq.nodeId, claimant.person, retire));
  } catch (err) {
    await table.restore(acq.nodeId, acq.lease, acq.previous).catch(() => undefined);
    throw err;
  }
}

function checkClaimable(ctx: OpContext, record: NodeRecord): void {
  if (isDone(ctx.tenant, record)) {
    throw errors.conflict(`${record.id} is done (status ${record.status}, or resolved or superseded); there is nothing to claim`, {
      node_id: record.id,
      status: record.status,
      done: true,
    });
  }
}

// ---------------------------------------------------------------- single routes

export async function claimNode(ctx: OpContext, input: Static<typeof ClaimNodeInput>): Promise<Static<typeof ClaimNodeOutput>> {
  const { id, nonce } = input;
  const claimant = claimantOf(ctx, input.session);
  const force = input.force === true;
  if (force && !ctx.actor.isAdmin) throw errors.forbidden("force takes over another holder's lease and needs an admin");
  const record = workNode(ctx, id);
  checkClaimable(ctx, record);
  const table = leasesOf(ctx.tenant);
  const nowMs = ctx.services.clock.now();
  const acq = acquire(ctx, table, id, claimant, nowMs, force);
  const edge = await settle(ctx, table, acq, claimant);
  const takenFrom =
    force && acq.previous && acq.previous.expires_ms > nowMs && relationOf(acq.previous, claimant) !== 'own' ? acq.previous : undefined;
  if (acq.kind === 'claimed') await emitLeaseEvents(ctx, [claimEventOf(acq.lease, acq.previous, nowMs)]);
  else if (acq.previous?.state === 'reserved')
    await emitLeaseEvents(ctx, [{ type: 'lease.renewed', lease: acq.lease, extra: { reason: 'revived' } }]);
  return withNotices(ctx, {
    ok: true,
    status: acq.kind,
    lease: leaseView(acq.lease),
    edge,
    ...(nonce !== undefined ? { nonce } : {}),
    ...(takenFrom ? { previous_holder: takenFrom.by } : {}),
  });
}

/**
 * The caller's own lease on a work node, for renew, extend and reserve: who claims (the
 * token's person, with the session), the node checked, and the live lease that must be
 * theirs (404/409 otherwise).
 */
async function ownLease(
  ctx: OpContext,
  id: string,
  session: Session,
): Promise<{ claimant: ReturnType<typeof claimantOf>; table: ReturnType<typeof leasesOf>; nowMs: number; live: StoredLease }> {
  const claimant = claimantOf(ctx, session);
  const record = workNode(ctx, id);
  const table = leasesOf(ctx.tenant);
  await refuseIfDone(ctx, table, record, claimant);
  const nowMs = ctx.services.clock.now();
  return { claimant, table, nowMs, live: ownLive(table, id, claimant, nowMs) };
}

export async function renewNode(ctx: OpContext, input: Static<typeof LeaseInput>): Promise<Static<typeof RenewNodeOutput>> {
  const { claimant, table, nowMs, live } = await ownLease(ctx, input.id, input.session);
  const next = refreshed(live, claimant, nowMs, ctx.tenant.config.limits.claim_ttl_ms);
  const persisted = table.put(next);
  await persisted;
  if (live.state === 'reserved') await emitLeaseEvents(ctx, [{ type: 'lease.renewed', lease: next, extra: { reason: 'revived' } }]);
  return withNotices(ctx, leaseView(next));
}

export async function extend(ctx: OpContext, input: Static<typeof ExtendInput>): Promise<Static<typeof ExtendOutput>> {
  const { ms } = input;
  const { claimant, table, nowMs, live } = await ownLease(ctx, input.id, input.session);
  const { claim_ttl_ms: ttl, claim_ttl_max_ms: maxTtl } = ctx.tenant.config.limits;
  // A reservation comes back as a fresh heartbeat lease first; a live lease stretches from its expiry.
  const base = live.state === 'reserved' ? nowMs + ttl : live.expires_ms;
  const target = base + Math.ceil(ms);
  const cap = nowMs + maxTtl;
  const capped = target > cap;
  const next: StoredLease = {
    ...refreshed(live, claimant, nowMs, ttl),
    expires_ms: Math.max(base, capped ? cap : target),
  };
  await table.put(next);
  await emitLeaseEvents(ctx, [{ type: 'lease.renewed', lease: next, extra: { reason: 'extended' } }]);
  return withNotices(ctx, {
    ok: true,
    status: 'extended',
    lease: leaseView(next),
    ...(capped ? { capped_to_max: true, claim_ttl_max_ms: maxTtl } : {}),
  });
}

export async function reserve(ctx: OpContext, input: Static<typeof LeaseInput>): Promise<Static<typeof ReserveOutput>> {
  const { claimant, table, nowMs, live } = await ownLease(ctx, input.id, input.session);
  const grace = ctx.tenant.config.limits.grace_window_ms;
  const next: StoredLease = {
    ...live,
    state: 'reserved',
    expires_ms: nowMs + grace,
    session: claimant.session ?? live.session,
    agent: claimant.agent ?? live.agent,
  };
  await table.put(next);
  await emitLeaseEvents(ctx, [{ type: 'lease.reserved', lease: next }]);
  return withNotices(ctx, { ok: true, status: 'reserved', lease: leaseView(next), grace_window_ms: grace });
}

export async function releaseNode(ctx: OpContext, input: Static<typeof LeaseInput>): Promise<Static<typeof ReleaseNodeOutput>> {
  const { id } = input;
  const claimant = claimantOf(ctx, input.session);
  workNode(ctx, id);
  const table = leasesOf(ctx.tenant);
  const nowMs = ctx.services.clock.now();
  const current = table.get(id);
  const live = current && current.expires_ms > nowMs ? current : undefined;
  if (live && relationOf(live, claimant) !== 'own') throw heldByOther(id, live);
  // Our live lease or reservation, or our own lapsed record: drop it and retire our edge.
  const dropped = current && current.by === claimant.person ? current : undefined;
  if (dropped) await table.drop(id);
  try {
    const edge = await leaseWrite(ctx, 'release', (draft) => retireInDraft(ctx, draft, id, claimant.person));
    if (dropped && live) await emitLeaseEvents(ctx, [{ type: 'lease.released', lease: dropped }]);
    return { ok: true, status: 'released', node_id: id, lease: dropped && live ? leaseView(dropped) : null, edge };
  } catch (err) {
    if (dropped && table.get(id) === undefined) await table.put(dropped).catch(() => undefined);
    throw err;
  }
}

// ---------------------------------------------------------------- batch routes

function batchStatus<A extends string, S extends string, N extends string>(
  landed: number,
  asked: number,
  all: A,
  some: S,
  none: N,
): A | S | N {
  if (landed === asked) return all;
  return landed > 0 ? some : none;
}

export async function claimBatch(ctx: OpContext, input: Static<typeof ClaimBatchInput>): Promise<Static<typeof ClaimBatchOutput>> {
  const ids = idList(input.ids);
  const claimant = claimantOf(ctx, input.session);
  const table = leasesOf(ctx.tenant);
  const nowMs = ctx.services.clock.now();
  const outcome = new Map<string, Acquisition | BatchFailure>();
  // Every decision first, without yielding: the batch holds exactly what it won at this instant.
  for (const id of ids) {
    try {
      requireId(id, 'ids[]');
      checkClaimable(ctx, workNode(ctx, id));
      outcome.set(id, acquire(ctx, table, id, claimant, nowMs, false));
    } catch (err) {
      if (!isSvcError(err)) throw err;
      outcome.set(id, failureOf(ctx, id, err, 'already_claimed'));
    }
  }
  const acquired = [...outcome.values()].filter((o): o is Acquisition => 'persisted' in o);
  try {
    await Promise.all(acquired.map((a) => a.persisted));
  } catch (err) {
    for (const a of acquired) await table.restore(a.nodeId, a.lease, a.previous).catch(() => undefined);
    throw err;
  }
  const fresh = acquired.filter((a) => a.kind === 'claimed');
  if (fresh.length > 0) {
    await leaseWrite(ctx, 'claim', async (draft) => {
      for (const a of fresh) {
        try {
          const retire = a.previous && a.previous.by !== claimant.person ? a.previous.by : null;
          await assignInDraft(ctx, draft, a.nodeId, claimant.person, retire);
        } catch (err) {
          await table.restore(a.nodeId, a.lease, a.previous).catch(() => undefined);
          if (!isSvcError(err)) ctx.services.log.error('batch claim: edge write failed', { node: a.nodeId, error: String(err) });
          outcome.set(a.nodeId, failureOf(ctx, a.nodeId, isSvcError(err) ? err : errors.internal(), 'already_claimed'));
        }
      }
    });
  }
  const claimed: string[] = [];
  const leases: LeaseView[] = [];
  const failed: BatchFailure[] = [];
  const events: Parameters<typeof emitLeaseEvents>[1] = [];
  for (const id of ids) {
    const o = outcome.get(id)!;
    if ('persisted' in o) {
      claimed.push(id);
      leases.push(leaseView(o.lease));
      if (o.kind === 'claimed') events.push(claimEventOf(o.lease, o.previous, nowMs));
      else if (o.previous?.state === 'reserved') events.push({ type: 'lease.renewed', lease: o.lease, extra: { reason: 'revived' } });
    } else failed.push(o);
  }
  await emitLeaseEvents(ctx, events);
  return withNotices(ctx, {
    ok: true,
    status: batchStatus(claimed.length, ids.length, 'claimed', 'partial', 'refused'),
    count: claimed.length,
    claimed,
    leases,
    failed,
  });
}

export async function renewBatch(ctx: OpContext, input: Static<typeof RenewBatchInput>): Promise<Static<typeof RenewBatchOutput>> {
  const claimant = claimantOf(ctx, input.session);
  const table = leasesOf(ctx.tenant);
  const nowMs = ctx.services.clock.now();
  const ttl = ctx.tenant.config.limits.claim_ttl_ms;
  const renewed: string[] = [];
  const leases: LeaseView[] = [];
  const failed: BatchFailure[] = [];
  const writes: Array<Promise<void>> = [];
  const revived: StoredLease[] = [];

  if (input.ids !== undefined) {
    const ids = idList(input.ids);
    for (const id of ids) {
      try {
        requireId(id, 'ids[]');
        const refusal = doneRefusal(ctx, table, workNode(ctx, id), claimant);
        if (refusal) {
          writes.push(refusal.dropped);
          throw refusal.error;
        }
        const own = ownLive(table, id, claimant, nowMs);
        const next = refreshed(own, claimant, nowMs, ttl);
        writes.push(table.put(next));
        if (own.state === 'reserved') revived.push(next);
        renewed.push(id);
        leases.push(leaseView(next));
      } catch (err) {
        if (!isSvcError(err)) throw err;
        failed.push(failureOf(ctx, id, err, 'lease_lost'));
      }
    }
    await Promise.all(writes);
    await emitLeaseEvents(
      ctx,
      revived.map((lease) => ({ type: 'lease.renewed', lease, extra: { reason: 'revived' } })),
    );
    return withNotices(ctx, {
      ok: true,
      status: batchStatus(renewed.length, ids.length, 'renewed', 'partial', 'refused'),
      count: renewed.length,
      renewed,
      leases,
      failed,
    });
  }

  // Every live lease the caller holds; with a session, only those bound to that run.
  let skippedOtherSession = 0;
  let skippedReserved = 0;
  const mine = table
    .ofPerson(claimant.person)
    .filter((l) => l.expires_ms > nowMs)
    .sort((a, b) => (a.node_id < b.node_id ? -1 : 1));
  for (const lease of mine) {
    const record = ctx.tenant.index.get(lease.node_id);
    const refusal = record ? doneRefusal(ctx, table, record, { person: claimant.person, agent: null, session: null }) : null;
    if (refusal) {
      // finished work: the lease goes, and the caller learns why
      writes.push(refusal.dropped);
      failed.push(failureOf(ctx, lease.node_id, refusal.error, 'lease_lost'));
      continue;
    }
    if (lease.state === 'reserved') {
      skippedReserved++;
      continue;
    }
    if (claimant.session !== null && lease.session !== claimant.session) {
      if (lease.session !== null) skippedOtherSession++;
      continue;
    }
    // A heartbeat of everything: renews without re-binding sessions or agents.
    const next = refreshed(lease, { person: claimant.person, agent: null, session: null }, nowMs, ttl);
    writes.push(table.put(next));
    renewed.push(lease.node_id);
    leases.push(leaseView(next));
  }
  await Promise.all(writes);
  return withNotices(ctx, {
    ok: true,
    status: 'renewed',
    count: renewed.length,
    renewed,
    leases,
    failed,
    skipped_other_session: skippedOtherSession,
    skipped_reserved: skippedReserved,
  });
}

export async function releaseBatch(ctx: OpContext, input: Static<typeof ReleaseBatchInput>): Promise<Static<typeof ReleaseBatchOutput>> {
  const claimant = claimantOf(ctx, input.session);
  const ids = input.ids === undefined ? null : idList(input.ids);
  const table = leasesOf(ctx.tenant);
  const nowMs = ctx.services.clock.now();
  const pool = ids ? ids.map((id) => table.get(id)).filter((l): l is StoredLease => l !== undefined) : table.ofPerson(claimant.person);
  const dropped: StoredLease[] = [];
  for (const lease of pool) {
    // Never fails on a holder mismatch: only the caller's own leases are touched.
    if (lease.by !== claimant.person) continue;
    if (lease.expires_ms > nowMs && relationOf(lease, claimant) !== 'own') continue;
    if (!ids && claimant.session !== null && lease.session !== claimant.session) continue;
    dropped.push(lease);
  }
  dropped.sort((a, b) => (a.node_id < b.node_id ? -1 : 1));
  await table.records.batch(dropped.map((l) => ({ key: l.node_id, value: null })));
  if (dropped.length > 0) {
    await leaseWrite(ctx, 'release', async (draft) => {
      for (const lease of dropped) {
        try {
          await retireInDraft(ctx, draft, lease.node_id, claimant.person);
        } catch (err) {
          ctx.services.log.warn('batch release: could not retire assigned edge', { node: lease.node_id, error: String(err) });
        }
      }
    });
  }
  await emitLeaseEvents(
    ctx,
    dropped.filter((l) => l.expires_ms > nowMs).map((lease) => ({ type: 'lease.released', lease })),
  );
  const released = dropped.map((l) => l.node_id);
  return { ok: true, status: 'released', released, count: released.length };
}

// ---------------------------------------------------------------- status set to in-progress

const statusClaims = new WeakMap<OpContext, { acq: Acquisition; claimant: Claimant }>();

function takesLease(ctx: OpContext, node: NodeRecord, to: string): boolean {
  const def = ctx.tenant.registry.nodeTypes.get(node.type);
  return !!def?.queueable && def.in_progress_status !== null && def.in_progress_status === to;
}

/**
 * Moving a work node to its in-progress status grants the same lease as the claim route:
 * `before` takes it atomically (409 `conflict` naming the holder), `after` writes the
 * `assigned` edge and adds `{lease, edge}` to the status answer, `abort` gives it back
 * when the status write failed.
 */
export const inProgressLease: StatusEffect = {
  async before(ctx, node, _from, to) {
    if (!takesLease(ctx, node, to) || !ctx.actor.bound) return;
    const claimant = claimantOf(ctx, undefined);
    const table = leasesOf(ctx.tenant);
    const acq = acquire(ctx, table, node.id, claimant, ctx.services.clock.now(), false);
    try {
      await acq.persisted;
    } catch (err) {
      await table.restore(acq.nodeId, acq.lease, acq.previous).catch(() => undefined);
      throw err;
    }
    statusClaims.set(ctx, { acq, claimant });
  },
  async after(ctx, node) {
    const taken = statusClaims.get(ctx);
    if (!taken || taken.acq.nodeId !== node.id) return;
    statusClaims.delete(ctx);
    const { acq, claimant } = taken;
    let edge: EdgeResult | null;
    try {
      if (acq.kind === 'renewed') edge = describeEdge(ctx, node.id, claimant.person);
      else {
        const retire = acq.previous && acq.previous.by !== claimant.person ? acq.previous.by : null;
        edge = await leaseWrite(ctx, 'claim', (draft) => assignInDraft(ctx, draft, node.id, claimant.person, retire));
      }
    } catch (err) {
      // The status is committed and the lease is held; only the bookkeeping edge is missing.
      ctx.services.log.warn('in-progress claim: could not write the assigned edge', { node: node.id, error: String(err) });
      edge = null;
    }
    if (acq.kind === 'claimed') await emitLeaseEvents(ctx, [claimEventOf(acq.lease, acq.previous, Date.parse(acq.lease.claimed_at))]);
    return { lease: leaseView(acq.lease), edge, ...(edge?.revision ? { revision: edge.revision } : {}) };
  },
  async abort(ctx, node) {
    const taken = statusClaims.get(ctx);
    if (!taken || taken.acq.nodeId !== node.id) return;
    statusClaims.delete(ctx);
    await leasesOf(ctx.tenant).restore(taken.acq.nodeId, taken.acq.lease, taken.acq.previous);
  },
};
