/**
 * The `queue` plugin: the ranked decision queue (GET /v1/queue) with its tool twins
 * `show_queue` (same JSON) and `render_queue` (markdown), and per-person mute lists.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { queueAccess } from './access.js';
import * as api from './api.js';
import { bookOf } from './book.js';
import { rankOf } from './rank.js';
import { queueResource } from './resources.js';

export const queuePlugin = definePlugin({
  name: 'queue',
  description: 'The ranked decision queue and per-person mutes.',
  access: queueAccess,
  version: '1.0.0',
  dependsOn: ['core', 'leases'],
  routes: [
    { method: 'GET', path: '/v1/queue', operation: api.showQueue },
    { method: 'GET', path: '/v1/queue/mutes', operation: api.listMutes },
    { method: 'POST', path: '/v1/queue/mutes', operation: api.addMute },
    { method: 'DELETE', path: '/v1/queue/mutes/:id', operation: api.removeMute },
  ],
  instructions: [
    'Pick up work with show_queue: items come ranked, each with a `suggest` (do, blocked, triage, close, approve) and a one-line `why`; page with offset=next_offset. Questions routed to you and reviews requested from you are in the same answer. Triage an item with set_priority and set_readiness {readiness: agent} (agents filter on readiness=agent).',
  ],
  tools: [
    {
      description:
        'Ranked work (score, suggest: do/blocked/triage/close/approve, why) plus questions, findings, pending, reviews. project, assignee (id|me), type, exclude_type, readiness (agent/human/untriaged); limit 1-100 (20), offset=next_offset; include_policy.',
      operation: api.showQueue,
      annotations: { readOnlyHint: true },
    },
    { description: 'show_queue as markdown, for a person.', operation: api.renderQueue, annotations: { readOnlyHint: true } },
  ],
  resources: [queueResource],
  tenantOpen(tenant, services) {
    // The book and its ranked index built ahead once the server is up (about 0.4 s at 100k nodes),
    // not while the tenant opens: a restarted server answers reads first; a queue read before
    // that builds them itself.
    services.warm('queue book', () => rankOf(bookOf(tenant)));
  },
});
