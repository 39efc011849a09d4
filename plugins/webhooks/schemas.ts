/**
 * Input and answer schemas of the webhooks operations (kernel/operation.ts builders); the
 * operations' TypeScript types come from them.
 */
import { answer, object, s, type Static } from '../../kernel/operation.js';

// any id-shaped string: an unknown one (another tenant's, a node id) is 404, never a schema error
export const WebhookId = s.string('subscription id, e.g. wh_3f2a9c1d0e5b7a6c4d', { pattern: '^[A-Za-z0-9_-]+$', maxLength: 100 });
const Url = s.string('where events are POSTed: http(s), a public address unless SVC_WEBHOOK_ALLOW_PRIVATE=1', {
  minLength: 1,
  maxLength: 2048,
});
const Types = s.array(
  s.string(undefined, { pattern: '^(\\*|[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*(\\.\\*)?)$', maxLength: 100 }),
  "event types to send: exact ('node.created'), prefixes ('lease.*'), or '*' (default: every type)",
  { maxItems: 50 },
);
const Project = s.stringOrNull('only events of this project (a project node id); null: every project');
const Description = s.string('what the subscription is for', { maxLength: 500 });
const Format = s.enum(
  ['json', 'slack'] as const,
  "'json' (signed event payloads, default) or 'slack' (a readable {text} line for an incoming webhook)",
);
const Enabled = s.boolean('deliver events (default true); re-enabling a disabled subscription resumes at the event it stopped on');

export const CreateWebhookInput = object(
  { url: Url, types: Types, project: Project, description: Description, format: Format, enabled: Enabled },
  ['url'],
);
export const UpdateWebhookInput = object(
  {
    id: WebhookId,
    url: Url,
    types: Types,
    project: Project,
    description: Description,
    format: Format,
    enabled: Enabled,
    rotate_secret: s.boolean('issue a new secret (answered once); the old one still signs too for 24 hours'),
  },
  ['id'],
);
export const WebhookIdInput = object({ id: WebhookId }, ['id']);
export const DeliveriesInput = object(
  { id: WebhookId, limit: s.integer('at most this many attempts, newest first (1-100, default 50)', { minimum: 1, maximum: 100 }) },
  ['id'],
);
export const RedeliverInput = object({ id: WebhookId, event: s.integer('the event id to send again', { minimum: 1 }) }, ['id', 'event']);

export const WebhookView = answer(
  {
    id: s.string(),
    url: s.string(),
    types: s.array(s.string()),
    project: s.stringOrNull(),
    description: s.string(),
    format: s.enum(['json', 'slack'] as const),
    enabled: s.boolean(),
    state: s.enum(['active', 'failing', 'disabled'] as const, 'disabled: by an admin or after a day of failures (disabled_reason)'),
    disabled_reason: s.stringOrNull(),
    last_event: s.integer('the id of the last event delivered (the cursor)'),
    failing_since: s.stringOrNull(),
    next_attempt: s.stringOrNull('when the failing event is tried again'),
    attempts: s.integer('failed attempts at the next event so far'),
    last_success: s.stringOrNull(),
    created: s.string(),
    created_by: s.string(),
    updated: s.string(),
  },
  [
    'id',
    'url',
    'types',
    'project',
    'description',
    'format',
    'enabled',
    'state',
    'disabled_reason',
    'last_event',
    'failing_since',
    'next_attempt',
    'attempts',
    'created',
    'updated',
  ],
);
export type WebhookViewT = Static<typeof WebhookView>;

/** Create and rotate answer the secret, once. */
export const WebhookWithSecret = answer(
  {
    webhook: WebhookView,
    secret: s.string('whsec_...: shown this once; verify signatures with it (docs/events.md "Webhooks")'),
  },
  ['webhook', 'secret'],
);
export const UpdateWebhookOutput = answer({ webhook: WebhookView, secret: s.string('the new secret, only when rotate_secret') }, [
  'webhook',
]);
export const ListWebhooksOutput = answer({ webhooks: s.array(WebhookView) });
export const DeleteWebhookOutput = answer({ id: s.string(), deleted: s.boolean() });

export const Attempt = answer(
  {
    at: s.string(),
    event: s.integer('the event id; 0 for a ping'),
    type: s.string(),
    message_id: s.string('the webhook-id header sent'),
    attempt: s.integer(),
    kind: s.enum(['delivery', 'ping', 'redelivery'] as const),
    ok: s.boolean(),
    status: s.integerOrNull('the receiver\u2019s HTTP status; null when none came'),
    latency_ms: s.integer(),
    error: s.stringOrNull(),
  },
  ['at', 'event', 'type', 'message_id', 'attempt', 'kind', 'ok', 'status', 'latency_ms', 'error'],
);
export const DeliveriesOutput = answer({ webhook: WebhookView, deliveries: s.array(Attempt) });
export const AttemptOutput = answer({ delivery: Attempt });
