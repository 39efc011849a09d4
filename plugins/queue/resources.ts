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
 * The cheap test (docs/decisions.md, "MCP resources and subscriptions"): by event family, without
 * recomputing the queue. Graph changes (a node created, deleted, edited or changing status, an
 * edge such as a blocker added or closed, a bulk import or restore), claims (taken, released,
 * expired, taken over), questions routed or answered, workflow steps and proposals can each move
 * an item into, out of or within a queue: even a plain edit changes an item's title or its heat
 * and staleness signals. Admin events (people, tokens, plugins, webhooks) never do.
 */
const QUEUE_FAMILIES = /^(node|edge|graph|lease|question|workflow|proposal|review|capture)\./;

export function queueAffectedBy(event: WorkEvent): boolean {
  return QUEUE_FAMILIES.test(event.type);
}

export const queueResource: ResourceDef = {
  uri: 'workgraph://queue',
  name: 'queue',
  description: 'Your decision queue as show_queue answers it; subscribe to hear of changes',
  mimeType: 'application/json',
  read: async (ctx) => serialize(await invoke(api.showQueue, ctx, {})),
  affectedBy: queueAffectedBy,
};
