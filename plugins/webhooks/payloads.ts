/**
 * The payloads webhook subscriptions receive, for the OpenAPI document's top-level `webhooks`:
 * one entry per event type of the catalogue (docs/events.md), each the Standard Webhooks body
 * `{type, timestamp, data}` with the event (kernel/events/types.ts `WorkEvent`) as `data`, and
 * the Slack-format body.
 */
import type { JsonSchema } from '../../kernel/operation.js';
import type { WebhookPayloadDef } from '../../kernel/plugin.js';

/** The event types and what each means (docs/events.md is the catalogue). */
export const EVENT_TYPES: Record<string, string> = {
  'node.created': 'A node was created (a write, an import or a restore).',
  'node.updated': 'A node changed (fields or body) without a status change.',
  'node.status_changed': 'A node moved to another status (payload: from, to).',
  'node.deleted': 'A node was deleted.',
  'graph.imported': 'An import changed more nodes than one event each would carry (payload: counts, node ids).',
  'graph.restored': 'A restore changed the graph in bulk.',
  'graph.bulk_changed': 'One commit changed more nodes than one event each would carry.',
  'edge.added': 'An edge was added (payload: type, from, to).',
  'edge.removed': 'An edge was removed (payload: type, from, to).',
  'lease.claimed': 'A work node was claimed.',
  'lease.renewed': 'A lease was renewed past a boundary.',
  'lease.reserved': 'A lease was parked for the grace window.',
  'lease.released': 'A lease was released.',
  'lease.expired': 'A lease expired without renewal.',
  'lease.taken_over': 'An admin took over a lease.',
  'question.routed': 'A question was routed to a person.',
  'question.answered': 'A question was answered.',
  'workflow.step_ready': 'A workflow step became ready to claim.',
  'workflow.step_finished': 'A workflow step finished.',
  'proposal.pending': 'A proposal is waiting for approval.',
  'comment.added': 'A comment was posted on a node (nodes: the node, the comment).',
  'comment.edited': 'A comment was edited by its author.',
  'comment.deleted': 'A comment was deleted.',
  'comment.mentioned': 'A comment newly mentions a person (payload: person).',
  'person.created': 'Admins: a person was added to the tenant.',
  'person.updated': 'Admins: a person changed (name, email, admin rights, offboarding).',
  'token.created': 'Admins: a token was minted (its prefix and kind, never the token).',
  'token.revoked': 'Admins: a token was revoked.',
  'plugin.enabled': 'Admins: a plugin was enabled for the tenant.',
  'plugin.disabled': 'Admins: a plugin was disabled for the tenant.',
  'settings.changed': "Admins: the tenant's settings changed.",
  'webhook.created': 'Admins: a webhook subscription was created.',
  'webhook.updated': 'Admins: a webhook subscription was changed.',
  'webhook.deleted': 'Admins: a webhook subscription was deleted.',
  'webhook.disabled': 'Admins: a subscription was disabled after a day of failed deliveries.',
};

const Actor: JsonSchema = {
  type: ['object', 'null'],
  description: 'who caused it; null: the server itself',
  properties: {
    person: { type: ['string', 'null'] },
    agent: { type: ['string', 'null'] },
    name: { type: 'string' },
    via: { type: 'string' },
  },
  required: ['person', 'agent', 'name', 'via'],
};

function eventSchema(type: string | null): JsonSchema {
  return {
    type: 'object',
    properties: {
      id: {
        type: 'integer',
        minimum: type === 'webhook.ping' ? 0 : 1,
        description: 'per tenant, strictly increasing; the webhook-id header is evt_<org>_<id>',
      },
      type: type ? { const: type } : { type: 'string' },
      time: { type: 'string', format: 'date-time' },
      org: { type: 'string' },
      actor: Actor,
      nodes: { type: 'array', items: { type: 'string' }, description: 'the node ids it is about (first: the main one)' },
      project: { type: ['string', 'null'] },
      commit: { type: 'string' },
      revision: { type: 'string' },
      audience: { const: 'admins', description: 'present on admin events' },
      payload: {
        type: 'object',
        description: 'type-specific, small, plain JSON; links are relative paths; `{truncated: true}` when the body would pass 256 KiB',
      },
    },
    required: ['id', 'type', 'time', 'org', 'actor', 'nodes', 'project', 'payload'],
  };
}

function body(type: string | null): JsonSchema {
  return {
    type: 'object',
    properties: {
      type: type ? { const: type } : { type: 'string' },
      timestamp: { type: 'string', format: 'date-time', description: "the event's time" },
      data: eventSchema(type),
    },
    required: ['type', 'timestamp', 'data'],
  };
}

const SIGNED =
  'Signed per Standard Webhooks: headers webhook-id (evt_<org>_<event id>, the same on every retry), webhook-timestamp and webhook-signature (docs/events.md "Webhooks").';

export const webhookPayloads: WebhookPayloadDef[] = [
  ...Object.entries(EVENT_TYPES).map(([type, summary]) => ({ name: type, summary, description: SIGNED, schema: body(type) })),
  {
    name: 'webhook.ping',
    summary: 'Sent by ping_webhook to one subscription (data.id is 0; not in the event log).',
    description: SIGNED,
    schema: body('webhook.ping'),
  },
  {
    name: 'slack',
    summary: "A subscription with format 'slack': one readable line for a Slack-compatible incoming webhook.",
    schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
];
