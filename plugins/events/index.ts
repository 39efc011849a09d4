/**
 * The `events` plugin: the tenant's event log (kernel/events/types.ts) as a live stream.
 * GET /v1/events answers Server-Sent Events or, with `wait=`, JSON; the MCP tool
 * `wait_for_events` is the JSON form. On for every tenant (like the API description): the log
 * is the kernel's, and the app's live pages and agents rely on reading it.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { eventsAccess } from './access.js';
import * as api from './api.js';
import { streamCounts } from './slots.js';

export const eventsPlugin = definePlugin({
  name: 'events',
  description: "The tenant's event stream (Server-Sent Events and long-poll) and MCP event waits.",
  version: '1.0.0',
  alwaysOn: true,
  access: eventsAccess,
  dependsOn: [],
  routes: [{ method: 'GET', path: '/v1/events', operation: api.getEvents }],
  tools: [{ operation: api.waitForEvents, annotations: { readOnlyHint: true } }],
  init(services) {
    services.metrics.gauge('workgraph_event_streams_open', 'open event streams and waits per tenant', ['tenant'], () =>
      [...streamCounts(services).byTenant].map(([tenant, value]) => ({ labels: { tenant }, value })),
    );
  },
});
