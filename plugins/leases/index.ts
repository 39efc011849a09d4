/**
 * The `leases` plugin: heartbeat-renewed claims on work nodes, singly and in batches, with
 * the MCP twins `claim`, `renew`, `extend`, `reserve`, `release`; and the in-progress
 * status effect that grants the same lease.
 */
import { definePlugin, type RouteRequest } from '../../kernel/plugin.js';
import { requireObject } from '../../kernel/validate.js';
import * as ops from './operations.js';
import { leasesOf } from './store.js';
import { objectSchema as obj } from '../../kernel/tool-schema.js';

const idArg = { type: 'string', description: 'work node id, e.g. task-fix-login' };
// Bounds are checked by the operation itself, so REST and the tool answer bad input with the same bytes.
const idsArg = { type: 'array', description: `work node ids (batch form, at most ${ops.MAX_BATCH_IDS})` };
const sessionArg = { type: 'string', description: 'run/session id: binds the lease to that run' };

/** The JSON body (or none) with the path id; a non-object body is 422. */
const bodyWithId = (req: RouteRequest) => ({
  ...(req.body === undefined || req.body === null ? {} : requireObject(req.body)),
  id: req.params.id,
});
const bodyOnly = (req: RouteRequest) => req.body;

export const leasesPlugin = definePlugin({
  name: 'leases',
  version: '1.0.0',
  dependsOn: ['core'],
  routes: [
    { method: 'POST', path: '/v1/nodes/:id/claim', operation: ops.claim, input: bodyWithId },
    { method: 'POST', path: '/v1/nodes/:id/renew', operation: ops.renew, input: bodyWithId },
    { method: 'POST', path: '/v1/nodes/:id/extend', operation: ops.extend, input: bodyWithId },
    { method: 'POST', path: '/v1/nodes/:id/reserve', operation: ops.reserve, input: bodyWithId },
    { method: 'POST', path: '/v1/nodes/:id/release', operation: ops.release, input: bodyWithId },
    { method: 'POST', path: '/v1/queue/claim', operation: ops.batchClaim, input: bodyOnly },
    { method: 'POST', path: '/v1/queue/renew', operation: ops.batchRenew, input: bodyOnly },
    { method: 'POST', path: '/v1/queue/release', operation: ops.batchRelease, input: bodyOnly },
  ],
  instructions: [
    'Claim a node before you work on it (claim {id}): a heartbeat lease; a 409 names who holds it. renew while you work, release when you stop. set_status to in-progress claims it too.',
  ],
  tools: [
    {
      name: 'claim',
      description:
        'Claim work so no one else picks it up: {id} claims one node (a heartbeat lease for the tenant claim TTL; claiming again renews), {ids} claims a batch and reports per item. Writes an assigned edge on first claim. 409 names the holder when someone else has it.',
      inputSchema: obj({
        id: idArg,
        ids: idsArg,
        session: sessionArg,
        nonce: { type: 'string', description: 'dispatch nonce, echoed back (single claim only)' },
        force: { type: 'boolean', description: "admins only: take over another holder's live lease (single claim only)" },
      }),
      operation: ops.claimTool,
    },
    {
      name: 'renew',
      description:
        'Heartbeat: {id} renews one lease you hold; {ids} renews a batch; with neither, renews every live lease you hold (only those of `session` when given; reservations stay parked). No graph commit.',
      inputSchema: obj({ id: idArg, ids: idsArg, session: sessionArg }),
      operation: ops.renewTool,
    },
    {
      name: 'extend',
      description: 'Stretch a lease you hold by `ms` milliseconds, capped at the tenant maximum claim TTL (flagged capped_to_max); never shortens.',
      inputSchema: obj({ id: idArg, ms: { type: 'number', description: 'milliseconds to add (positive)' }, session: sessionArg }, ['id', 'ms']),
      operation: ops.extend,
    },
    {
      name: 'reserve',
      description:
        "Park a node you hold: it keeps its assigned edge, stays at the top of your queue and out of teammates' actionable lists for the grace window (grace_window_ms). Claim, renew or extend turns it back into a live lease.",
      inputSchema: obj({ id: idArg, session: sessionArg }, ['id']),
      operation: ops.reserve,
    },
    {
      name: 'release',
      description:
        "Let go: {id} drops your lease on one node and retires your assigned edge (succeeds when you hold nothing; 409 when someone else holds it); with no id, drops all your own leases (only those of `session` when given).",
      inputSchema: obj({ id: idArg, ids: idsArg, session: sessionArg }),
      operation: ops.releaseTool,
      annotations: { idempotentHint: true },
    },
  ],
  statusEffects: [ops.inProgressLease],
  init(services) {
    services.metrics.gauge('workgraph_leases_live', 'live leases and reservations per tenant', ['tenant', 'state'], () => {
      const now = services.clock.now();
      const samples: Array<{ labels: Record<string, string>; value: number }> = [];
      for (const tenant of services.tenants.list()) {
        if (!tenant.enabled('leases')) continue;
        const counts = { live: 0, reserved: 0 };
        for (const lease of leasesOf(tenant).records.values()) if (lease.expires_ms > now) counts[lease.state]++;
        samples.push({ labels: { tenant: tenant.org, state: 'live' }, value: counts.live }, { labels: { tenant: tenant.org, state: 'reserved' }, value: counts.reserved });
      }
      return samples;
    });
  },
});
