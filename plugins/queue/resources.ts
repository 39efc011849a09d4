/**
 * The caller's decision queue as the MCP resource `workgraph://queue`: a read answers what
 * show_queue answers the caller with no filters; a subscription is notified when an event could
 * change it (kernel/mcp-subscriptions.ts coalesces bursts).
 */
import type { WorkEvent } from '../../kernel/events/types.js';
import { invoke } from '../../kernel/operation.js';
import { serialize, type ResourceDef } from '../../kernel/plugin.js';
import * as api from './api.js';

/**
 * The families whose events can move an item into, out of or within a queue: a node created,
 * deleted or changing status, an edge (a blocker added or closed), a claim taken, released,
 * expired or taken over, a question routed or answered, a workflow step, a proposal. Admin events
 * (people, tokens, plugins, webhooks) never do.
 */
const QUEUE_FAMILIES = /^(node|edge|lease|question|workflow|proposal|review|capture)\./;

/** Fields an edit must touch to change a queue (rank, suggestion, who it is for). */
const QUEUE_FIELDS = new Set(['status', 'priority', 'readiness', 'assignee', 'owner', 'due', 'reviewers', 'edges', 'type', 'project']);

/**
 * The cheap test (docs/decisions.md, "MCP resources and subscriptions"): by event family, without
 * recomputing the queue. A plain edit (`node.updated`) counts only when the event lists the
 * fields it changed and one of them ranks or routes the item, or when it lists none.
 */
export function queueAffectedBy(event: WorkEvent): boolean {
  if (!QUEUE_FAMILIES.test(event.type)) return false;
  if (event.type !== 'node.updated') return true;
  const changed = event.payload.changed ?? event.payload.fields;
  if (!Array.isArray(changed)) return true;
  return changed.some((f) => typeof f === 'string' && QUEUE_FIELDS.has(f));
}

export const queueResource: ResourceDef = {
  uri: 'workgraph://queue',
  name: 'queue',
  description: 'Your decision queue as show_queue answers it; subscribe to hear of changes',
  mimeType: 'application/json',
  read: async (ctx) => serialize(await invoke(api.showQueue, ctx, {})),
  affectedBy: queueAffectedBy,
};
