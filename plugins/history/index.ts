/**
 * The `history` plugin: node history and history entries, code-commit lookup, the change
 * feed and project briefings, with the MCP twins `node_history` and `recent_changes`.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { historyAccess } from './access.js';
import * as api from './api.js';
import { codeCommitIndexOf } from './code-commits.js';
import { commitIndexOf } from './commit-index.js';
import * as ops from './operations.js';

export const historyPlugin = definePlugin({
  name: 'history',
  description: 'Version history: who changed what and when, the change feed, briefings.',
  access: historyAccess,
  version: '1.0.0',
  dependsOn: [],
  // Both indexes start when the tenant opens. The commit index opens its files on disk and
  // appends what git has beyond them in the background (a reopen takes milliseconds, a build
  // from scratch about 1 s per 10,000 commits) so opening a tenant is not held up; history
  // reads wait for it.
  tenantOpen(tenant, services) {
    // loaded ahead once the server is up, not while the tenant opens (kernel/warm.ts)
    services.warm('code commit index', () => codeCommitIndexOf(tenant));
    services.warm('commit index', () => commitIndexOf(tenant).ready());
  },
  statusEffects: [
    {
      // Accepting a filed alias proposal (see briefing) adds the alias to its project node.
      async after(ctx, node, _from, to) {
        if (node.type !== 'dec' || to !== 'accepted') return;
        return ops.applyAcceptedAlias(ctx, node);
      },
    },
  ],
  routes: [
    { method: 'GET', path: '/v1/nodes/:id/history', operation: api.getNodeHistory },
    { method: 'GET', path: '/v1/nodes/:id/history/:sha', operation: api.getHistoryEntry },
    { method: 'GET', path: '/v1/commits/:sha', operation: api.lookupCommit },
    { method: 'GET', path: '/v1/changes', operation: api.recentChanges },
    { method: 'GET', path: '/v1/briefing/:project', operation: api.getBriefing },
  ],
  tools: [
    {
      description: "A node's versions, newest first. sha (7-40 hex): that version with diff and content. limit <=200.",
      operation: api.nodeHistory,
      annotations: { title: 'Node history', readOnlyHint: true },
    },
    {
      description: "Newest change per node. since: sha, ISO date or '3 days ago'; project; limit <=500 (100).",
      operation: api.recentChanges,
      annotations: { title: 'Recent changes', readOnlyHint: true },
    },
  ],
});
