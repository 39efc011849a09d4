/**
 * The `webhooks` plugin: admin-managed subscriptions that push the tenant's events (the event
 * log, kernel/events/types.ts) to other systems, signed per Standard Webhooks, in order and at
 * least once (engine.ts), to public addresses only (send.ts). REST only, like the identity
 * plugin's admin routes (docs/decisions.md "webhooks"): an agent never manages them.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { webhooksAccess } from './access.js';
import * as api from './api.js';
import { engineOf, stopAllEngines } from './engine.js';
import { webhookPayloads } from './payloads.js';

export const webhooksPlugin = definePlugin({
  name: 'webhooks',
  version: '1.0.0',
  access: webhooksAccess,
  routes: [
    { method: 'POST', path: '/v1/webhooks', operation: api.createWebhook, status: 201 },
    { method: 'GET', path: '/v1/webhooks', operation: api.listWebhooks },
    { method: 'GET', path: '/v1/webhooks/:id', operation: api.getWebhook },
    { method: 'PATCH', path: '/v1/webhooks/:id', operation: api.updateWebhook },
    { method: 'DELETE', path: '/v1/webhooks/:id', operation: api.deleteWebhook },
    { method: 'POST', path: '/v1/webhooks/:id/ping', operation: api.pingWebhook },
    { method: 'GET', path: '/v1/webhooks/:id/deliveries', operation: api.listWebhookDeliveries },
    { method: 'POST', path: '/v1/webhooks/:id/redeliver', operation: api.redeliverWebhook },
  ],
  webhookPayloads,
  tenantOpen(tenant, services) {
    // only the process serving the tenant delivers (in cluster mode: its owner); the engine stops when the tenant closes here
    engineOf(tenant, services);
  },
  async close() {
    await stopAllEngines();
  },
});
