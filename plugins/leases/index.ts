/**
 * The `leases` plugin: heartbeat-renewed claims on work nodes, singly and in batches, with
 * the MCP twins `claim`, `renew`, `extend`, `reserve`, `release`; and the in-progress
 * status effect that grants the same lease.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { leasesAccess } from './access.js';
import * as api from './api.js';
import * as ops from './operations.js';
import { leaseHolderCheck, leaseSettings } from './holder.js';
import { leasesOf } from './store.js';
import { startExpirySweep, stopExpirySweeps } from './events.js';

export const leasesPlugin = definePlugin({
  name: 'leases',
  description: 'Heartbeat-renewed claims on work nodes.',
  access: leasesAccess,
  version: '1.0.0',
  dependsOn: ['core'],
  routes: [
    { method: 'POST', path: '/v1/nodes/:id/claim', operation: api.claimNode },
    { method: 'POST', path: '/v1/nodes/:id/renew', operation: api.renewNode },
    { method: 'POST', path: '/v1/nodes/:id/extend', operation: api.extend },
    { method: 'POST', path: '/v1/nodes/:id/reserve', operation: api.reserve },
    { method: 'POST', path: '/v1/nodes/:id/release', operation: api.releaseNode },
    { method: 'POST', path: '/v1/queue/claim', operation: api.claimBatch },
    { method: 'POST', path: '/v1/queue/renew', operation: api.renewBatch },
    { method: 'POST', path: '/v1/queue/release', operation: api.releaseBatch },
  ],
  instructions: [
    'Claim a node before you work on it (claim {id}): a heartbeat lease; a 409 names who holds it. renew while you work, release when you stop. set_status to in-progress claims it too.',
    "Writing to a node someone else holds warns with the holder's name and tells them (their next claim/renew shows lease_notices); a tenant with leases: strict refuses it (409 lease_held). Finishing a node (done, resolved, ...) releases its lease; renew on a finished node is 409 lease_lost with reason terminal: stop heartbeating it.",
  ],
  tools: [
    {
      description:
        'Claim {id} or {ids} (<=500): a heartbeat lease plus an assigned edge. session binds it to a run; force: admin takeover. 409 names the holder.',
      operation: api.claim,
    },
    {
      description: 'Heartbeat {id}, {ids}, or all your leases (of session). No commit. 409 lease_lost when gone.',
      operation: api.renew,
    },
    {
      description: 'Lengthen your lease by ms, up to the tenant maximum. 409 when not yours.',
      operation: api.extend,
    },
    {
      description: 'Park a node you hold for the grace window; claim or renew revives it.',
      operation: api.reserve,
    },
    {
      description: 'Drop your lease on {id}/{ids} (none: all, of session) and its assigned edge. 409 another holds it.',
      operation: api.release,
      annotations: { idempotentHint: true },
    },
  ],
  statusEffects: [ops.inProgressLease],
  nodeWriteChecks: [leaseHolderCheck],
  settings: leaseSettings,
  init(services) {
    startExpirySweep(services);
    services.metrics.gauge('workgraph_leases_live', 'live leases and reservations per tenant', ['tenant', 'state'], () => {
      const now = services.clock.now();
      const samples: Array<{ labels: Record<string, string>; value: number }> = [];
      for (const tenant of services.tenants.list()) {
        if (!tenant.enabled('leases')) continue;
        const counts = { live: 0, reserved: 0 };
        for (const lease of leasesOf(tenant).records.values()) if (lease.expires_ms > now) counts[lease.state]++;
        samples.push(
          { labels: { tenant: tenant.org, state: 'live' }, value: counts.live },
          { labels: { tenant: tenant.org, state: 'reserved' }, value: counts.reserved },
        );
      }
      return samples;
    });
  },
  close() {
    stopExpirySweeps();
  },
});
