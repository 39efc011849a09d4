/**
 * The `webhooks` plugin: admin-managed subscriptions that push the tenant's events (the event
 * log, kernel/events/types.ts) to other systems, signed per Standard Webhooks, in order and at
 * least once (engine.ts), to public addresses only (send.ts). Each operation is a REST route
 * and an MCP tool of the same name (toolset `webhooks`, docs/decisions.md "tools"); both are for
 * admins with a person's own credential (access.ts), so an agent token gets 403 either way.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { webhooksAccess } from './access.js';
import * as api from './api.js';
import { engineOf, stopAllEngines } from './engine.js';
import { webhookPayloads } from './payloads.js';

export const webhooksPlugin = definePlugin({
  name: 'webhooks',
  description: "Signed webhook subscriptions pushing the tenant's events to other systems.",
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
  instructions: [
    'Webhooks (admins, person token; else 403): create_webhook answers the whsec_ signing secret once (update_webhook rotate_secret: a new one once). ping_webhook tests a target; list_webhook_deliveries shows the attempts; redeliver_webhook {id, event} sends one event again.',
  ],
  // short texts: the full tools/list is held to 20 KB (docs/decisions.md, "tools"); api.ts keeps the long ones for REST
  tools: [
    {
      description:
        "POST the tenant's events to url, signed (Standard Webhooks), in order, retried a day. types: exact or 'prefix.*'; project; format json|slack. Answers the secret once. 422 url_refused.",
      operation: api.createWebhook,
    },
    {
      description: 'All subscriptions: state, cursor, next retry; no secrets.',
      operation: api.listWebhooks,
      annotations: { readOnlyHint: true },
    },
    { description: 'One subscription by id.', operation: api.getWebhook, annotations: { readOnlyHint: true } },
    {
      description: 'Change the given fields; enabled: true resumes; rotate_secret: a new secret, once (the old one signs 24 h).',
      operation: api.updateWebhook,
    },
    { description: 'Delete a subscription and its delivery log.', operation: api.deleteWebhook },
    { description: 'Send a signed webhook.ping now; answers the attempt.', operation: api.pingWebhook },
    {
      description: 'Delivery attempts, newest first: event, webhook-id, status, latency, error.',
      operation: api.listWebhookDeliveries,
      annotations: { readOnlyHint: true },
    },
    {
      description: 'Send event again (same webhook-id), cursor unmoved. 404 not retained, 409 filter mismatch.',
      operation: api.redeliverWebhook,
    },
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
