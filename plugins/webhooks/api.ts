/**
 * The webhooks plugin's operations, each declared once (input and answer schemas in
 * schemas.ts, the core functions in operations.ts); the routes and the OpenAPI document read
 * these.
 */
import { defineOperation, object } from '../../kernel/operation.js';
import * as ops from './operations.js';
import {
  AttemptOutput,
  CreateWebhookInput,
  DeleteWebhookOutput,
  DeliveriesInput,
  DeliveriesOutput,
  ListWebhooksOutput,
  RedeliverInput,
  UpdateWebhookInput,
  UpdateWebhookOutput,
  WebhookIdInput,
  WebhookView,
  WebhookWithSecret,
} from './schemas.js';

export const createWebhook = defineOperation({
  name: 'create_webhook',
  summary: 'Subscribe a URL to the tenant\u2019s events (admin)',
  description:
    'Events matching `types` (exact or `prefix.*`) and `project` are POSTed to `url`, signed per Standard Webhooks, in order, at least once, retried with backoff for a day. The answer carries the signing `secret` (whsec_...), shown this once. A private, loopback or link-local target is 422 `url_refused`.',
  input: CreateWebhookInput,
  output: WebhookWithSecret,
  errors: [403, 409],
  example: { url: 'https://ci.example.com/hooks/workgraph', types: ['node.status_changed', 'lease.*'] },
  run: ops.createWebhook,
});

export const listWebhooks = defineOperation({
  name: 'list_webhooks',
  summary: 'The tenant\u2019s webhook subscriptions (admin)',
  description: 'Every subscription with its delivery state (active, failing, disabled), cursor and next retry; never the secret.',
  input: object({}),
  output: ListWebhooksOutput,
  errors: [403],
  run: (ctx) => ops.listWebhooks(ctx),
});

export const getWebhook = defineOperation({
  name: 'get_webhook',
  summary: 'One webhook subscription (admin)',
  input: WebhookIdInput,
  output: WebhookView,
  errors: [403],
  run: ops.getWebhook,
});

export const updateWebhook = defineOperation({
  name: 'update_webhook',
  summary: 'Change a webhook subscription, re-enable it or rotate its secret (admin)',
  description:
    'Changes the given fields. `enabled: true` on a disabled subscription resumes at the event it stopped on. `rotate_secret: true` answers a new `secret` once; the old one still signs (a second signature) for 24 hours.',
  input: UpdateWebhookInput,
  output: UpdateWebhookOutput,
  errors: [403],
  example: { enabled: true },
  run: ops.updateWebhook,
});

export const deleteWebhook = defineOperation({
  name: 'delete_webhook',
  summary: 'Delete a webhook subscription and its delivery log (admin)',
  input: WebhookIdInput,
  output: DeleteWebhookOutput,
  errors: [403],
  run: ops.deleteWebhook,
});

export const pingWebhook = defineOperation({
  name: 'ping_webhook',
  summary: 'Send a signed webhook.ping to the subscription now (admin)',
  description:
    'One `webhook.ping` to this subscription alone, answered with the attempt (status, latency, error); also in its delivery log.',
  input: WebhookIdInput,
  output: AttemptOutput,
  errors: [403],
  run: ops.pingWebhook,
});

export const listWebhookDeliveries = defineOperation({
  name: 'list_webhook_deliveries',
  summary: 'The delivery log of a webhook subscription (admin)',
  description: 'The last attempts, newest first (100 kept): event id, webhook-id sent, attempt number, HTTP status, latency and error.',
  input: DeliveriesInput,
  output: DeliveriesOutput,
  errors: [403],
  run: ops.listWebhookDeliveries,
});

export const redeliverWebhook = defineOperation({
  name: 'redeliver_webhook',
  summary: 'Send one event to the subscription again (admin)',
  description:
    'Sends event `event` again now, with its original webhook-id, outside the ordered delivery (the cursor does not move). 404 when the event is not retained, 409 when it does not match the filter.',
  input: RedeliverInput,
  output: AttemptOutput,
  errors: [403, 409],
  example: { event: 1 },
  run: ops.redeliverWebhook,
});
