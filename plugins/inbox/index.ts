/**
 * The `inbox` plugin: each person's inbox, derived from the tenant's event log and the graph
 * (model.ts): GET /v1/inbox and POST /v1/inbox/read, and the MCP tools of the same operations
 * (`show_inbox`, `mark_inbox_read`). The web app shows it (plugins/app).
 */
import { definePlugin } from '../../kernel/plugin.js';
import { inboxAccess } from './access.js';
import * as api from './api.js';

export const inboxPlugin = definePlugin({
  name: 'inbox',
  description: "Each person's inbox of what needs their attention.",
  access: inboxAccess,
  version: '1.0.0',
  dependsOn: [],
  // claims about to expire are read from the lease table when the tenant has leases
  optionalDependsOn: ['leases'],
  routes: [
    { method: 'GET', path: '/v1/inbox', operation: api.showInbox },
    { method: 'POST', path: '/v1/inbox/read', operation: api.markInboxRead },
  ],
  // the same operations as MCP tools (toolset `inbox`); short texts for the 20 KB tools/list (docs/decisions.md, "tools")
  tools: [
    {
      description:
        'Your inbox, newest first: assigned, reviews, questions, answers, mentions, claims lost or expiring. unread, kind, limit. 403 without a person.',
      operation: api.showInbox,
      annotations: { readOnlyHint: true },
    },
    {
      description: 'Mark ids read, or all (up to event through from show_inbox); unknown ids: skipped.',
      operation: api.markInboxRead,
      annotations: { idempotentHint: true },
    },
  ],
});
