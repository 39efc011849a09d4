/**
 * What a webhook request carries: the body (the Standard Webhooks payload shape
 * `{type, timestamp, data}` with the event as `data`, or a Slack-compatible `{text}`) and the
 * three signature headers of the Standard Webhooks specification. The signature is the
 * specification's `v1` scheme (HMAC-SHA256 by OpenSSL, node:crypto, over
 * `<webhook-id>.<timestamp>.<body>` with the secret's base64-decoded key); the `standardwebhooks`
 * package, whose own `sign` runs a pure-JavaScript SHA-256 (about 90 µs a delivery here),
 * decodes the secret and is the judge in the tests: its `sign` gives the same bytes and its
 * verifier accepts every request (test/plugins/webhooks/format.test.ts). The `webhook-id` is
 * `evt_<org>_<event id>`: the same for every attempt at an event, so a receiver recognises a
 * duplicate (at-least-once delivery; a fail-over may repeat one).
 */
import { createHmac } from 'node:crypto';
import type { WorkEvent } from '../../kernel/events/types.js';
import type { StoredWebhook } from './store.js';

/** the largest body sent; an event whose JSON is larger goes out with its payload replaced by a note */
export const BODY_MAX_BYTES = 256 * 1024;

export function messageIdOf(event: WorkEvent): string {
  return `evt_${event.org}_${event.id}`;
}

/** The JSON body of an event, at most BODY_MAX_BYTES. */
/** an event's JSON body, shared by every subscription that delivers it (events are immutable) */
const bodies = new WeakMap<WorkEvent, string>();

export function jsonBody(event: WorkEvent): string {
  let body = bodies.get(event);
  if (body === undefined) {
    body = encodeBody(event);
    bodies.set(event, body);
  }
  return body;
}

function encodeBody(event: WorkEvent): string {
  const body = JSON.stringify({ type: event.type, timestamp: event.time, data: event });
  if (Buffer.byteLength(body) <= BODY_MAX_BYTES) return body;
  // the event's own fields stay; its payload (the only part that can grow) is replaced by where to read it
  const main = event.nodes[0];
  const data: WorkEvent = {
    ...event,
    payload: { truncated: true, original_bytes: Buffer.byteLength(body), ...(main ? { link: `/v1/nodes/${main}` } : {}) },
  };
  return JSON.stringify({ type: event.type, timestamp: event.time, data });
}

const VERBS: Record<string, string> = {
  'node.created': 'created',
  'node.updated': 'updated',
  'node.status_changed': 'changed the status of',
  'node.deleted': 'deleted',
  'edge.added': 'linked',
  'edge.removed': 'unlinked',
  'lease.claimed': 'claimed',
  'lease.released': 'released',
  'lease.expired': 'lost the lease on',
  'lease.taken_over': 'took over',
  'question.routed': 'routed a question to',
  'question.answered': 'answered',
  'lease.reserved': 'parked',
  'lease.renewed': 'renewed the lease on',
  'proposal.pending': 'asks for approval of',
  'workflow.step_ready': 'made ready a step of',
  'workflow.step_finished': 'finished a step of',
  'comment.added': 'commented on',
  'comment.edited': 'edited a comment on',
  'comment.deleted': 'deleted a comment on',
  'comment.mentioned': 'mentioned someone on',
  'graph.imported': 'imported into the graph:',
  'graph.restored': 'restored the graph:',
  'graph.bulk_changed': 'changed many nodes:',
};

/** Slack's mrkdwn escapes (`&`, `<`, `>`), so a title cannot forge a link. */
function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * One readable line for a Slack-compatible incoming webhook: who did what to which node, the
 * node linked to the app's page on the server's public URL.
 */
export function slackBody(event: WorkEvent, baseUrl: string | undefined): string {
  const who = event.actor ? esc(event.actor.name) + (event.actor.agent ? ` (agent ${esc(event.actor.agent)})` : '') : 'The server';
  const verb = VERBS[event.type] ?? `${esc(event.type)}:`;
  const main = event.nodes[0];
  const base = (baseUrl ?? '').replace(/\/+$/, '');
  const node = main ? (base ? `<${base}/app/nodes/${encodeURIComponent(main)}|${esc(main)}>` : esc(main)) : '';
  const p = event.payload;
  const extra: string[] = [];
  if (typeof p.title === 'string') extra.push(`"${esc(p.title)}"`);
  if (typeof p.from === 'string' && typeof p.to === 'string') extra.push(`${esc(p.from)} → ${esc(p.to)}`);
  const project = event.project ? ` in ${esc(event.project)}` : '';
  const text = `${who} ${verb} ${node}${extra.length ? ` ${extra.join(', ')}` : ''}${project}`.replace(/\s+/g, ' ').trim();
  return JSON.stringify({ text });
}

/**
 * The signature headers for one message. During a secret's rotation window the previous
 * secret signs too: the header carries both signatures (space-separated, as the specification
 * allows), so a receiver still on the old secret keeps verifying.
 */
/** signing keys by secret (`whsec_<base64>`, made by newSecret): decoded once, not per delivery (bounded: cleared when full) */
const keys = new Map<string, Buffer>();
function keyOf(secret: string): Buffer {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size >= 1000) keys.clear();
    key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
    keys.set(secret, key);
  }
  return key;
}

/** The specification's `v1,<base64 HMAC-SHA256>` over `<msgId>.<unix seconds>.<body>`: what `Webhook#sign` answers. */
export function signature(secret: string, messageId: string, at: Date, body: string): string {
  const mac = createHmac('sha256', keyOf(secret));
  mac.update(`${messageId}.${Math.floor(at.getTime() / 1000)}.`);
  mac.update(body);
  return `v1,${mac.digest('base64')}`;
}

export function signedHeaders(hook: StoredWebhook, messageId: string, at: Date, body: string): Record<string, string> {
  const signatures = [signature(hook.secret, messageId, at, body)];
  if (hook.previous_secret && hook.previous_until && Date.parse(hook.previous_until) > at.getTime())
    signatures.push(signature(hook.previous_secret, messageId, at, body));
  return {
    'content-type': 'application/json',
    'user-agent': 'workgraph-webhooks/1.0',
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}
