/**
 * The `queue` plugin: the ranked decision queue (GET /v1/queue) with its tool twins
 * `show_queue` (same JSON) and `render_queue` (markdown), and per-person mute lists.
 */
import { definePlugin, type RouteRequest } from '../../kernel/plugin.js';
import { bookOf } from './book.js';
import { addMute, listMutes, removeMute } from './mutes.js';
import { renderQueue, showQueue, type QueueInput } from './operations.js';

const fromQuery = (req: RouteRequest): QueueInput => ({
  project: req.query.project,
  assignee: req.query.assignee,
  type: req.query.type,
  exclude_type: req.query.exclude_type,
  readiness: req.query.readiness,
  limit: req.query.limit,
  offset: req.query.offset,
});

const listArg = (description: string) => ({
  anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
  description,
});

const queueArgs = {
  type: 'object',
  properties: {
    project: { type: 'string', description: 'bare repo slug (unions its grouping), repo-<slug> (one repo) or proj-<slug> (a grouping)' },
    assignee: { type: 'string', description: "person id, or 'me': work carried through assigned/stewards edges" },
    type: listArg('node types to include (comma-separated or a list)'),
    exclude_type: listArg('node types to exclude; wins over type'),
    readiness: listArg('agent, human and/or untriaged'),
    limit: { type: ['integer', 'string'], description: 'page size, default 20, clamped to 1-100' },
    offset: { type: ['integer', 'string'], description: 'skip this many ranked items (use next_offset)' },
  },
  additionalProperties: false,
};

export const queuePlugin = definePlugin({
  name: 'queue',
  version: '1.0.0',
  dependsOn: ['core', 'leases'],
  routes: [
    { method: 'GET', path: '/v1/queue', operation: showQueue, input: fromQuery },
    { method: 'GET', path: '/v1/queue/mutes', operation: listMutes },
    { method: 'POST', path: '/v1/queue/mutes', operation: addMute },
    { method: 'DELETE', path: '/v1/queue/mutes/:id', operation: removeMute, input: (r) => ({ id: r.params.id }) },
  ],
  instructions: [
    'Pick up work with show_queue: items come ranked, each with a `suggest` (do, blocked, triage, close, approve) and a one-line `why`; page with offset=next_offset. Questions routed to you and reviews requested from you are in the same answer.',
  ],
  tools: [
    {
      name: 'show_queue',
      description:
        'The ranked decision queue: work items with score, signals, a suggestion (do/blocked/triage/close/approve) and a one-line why, plus questions for you, questions you asked, findings, pending captures and reviews requested from you. Page with offset=next_offset.',
      inputSchema: queueArgs,
      operation: showQueue,
      annotations: { readOnlyHint: true },
    },
    {
      name: 'render_queue',
      description: 'The same decision queue as show_queue, rendered as markdown for a person to read.',
      inputSchema: queueArgs,
      operation: renderQueue,
      annotations: { readOnlyHint: true },
    },
  ],
  tenantOpen(tenant) {
    // Build the bookkeeping while the tenant opens, not on the first request.
    bookOf(tenant);
  },
});
