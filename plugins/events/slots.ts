/**
 * How many event streams and waits are open, per token and per tenant, so one client (or one
 * tenant's fleet) cannot hold every connection of the process: beyond the limits a new one is
 * 429 `too_many_streams`. Counted per kernel (tests run several servers in one process).
 */
import { SvcError } from '../../kernel/errors.js';
import type { KernelServices, OpContext } from '../../kernel/plugin.js';

export interface StreamCounts {
  byToken: Map<string, number>;
  byTenant: Map<string, number>;
  /** clients cut because they did not read (each got an `overflow` event with its resume id) */
  cut: number;
  /** the most bytes any one stream ever had queued (bounded by the configured buffer) */
  peakQueuedBytes: number;
}

const countsOf = new WeakMap<KernelServices, StreamCounts>();

export function streamCounts(services: KernelServices): StreamCounts {
  let counts = countsOf.get(services);
  if (!counts) countsOf.set(services, (counts = { byToken: new Map(), byTenant: new Map(), cut: 0, peakQueuedBytes: 0 }));
  return counts;
}

/** Takes a slot for the caller's token and tenant; returns its release (idempotent). 429 when either is full. */
export function acquireSlot(ctx: OpContext): () => void {
  const counts = streamCounts(ctx.services);
  const { streamsPerToken, streamsPerTenant } = ctx.services.config.events;
  const token = ctx.actor.token.hash;
  const org = ctx.tenant.org;
  const byToken = counts.byToken.get(token) ?? 0;
  const byTenant = counts.byTenant.get(org) ?? 0;
  if (byToken >= streamsPerToken)
    throw new SvcError(
      429,
      'too_many_streams',
      `this token already has ${byToken} open event streams or waits (at most ${streamsPerToken})`,
      {
        scope: 'token',
        limit: streamsPerToken,
      },
    );
  if (byTenant >= streamsPerTenant)
    throw new SvcError(
      429,
      'too_many_streams',
      `this tenant already has ${byTenant} open event streams or waits (at most ${streamsPerTenant})`,
      {
        scope: 'tenant',
        limit: streamsPerTenant,
      },
    );
  counts.byToken.set(token, byToken + 1);
  counts.byTenant.set(org, byTenant + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    decrement(counts.byToken, token);
    decrement(counts.byTenant, org);
  };
}

function decrement(map: Map<string, number>, key: string): void {
  const n = (map.get(key) ?? 1) - 1;
  if (n <= 0) map.delete(key);
  else map.set(key, n);
}
