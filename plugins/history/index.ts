/**
 * The `history` plugin: node history and history entries, code-commit lookup, the change
 * feed and project briefings, with the MCP twins `node_history` and `recent_changes`.
 */
import { definePlugin, type RouteRequest } from '../../kernel/plugin.js';
import { codeCommitIndexOf } from './code-commits.js';
import { commitIndexOf } from './commit-index.js';
import * as ops from './operations.js';
import { objectSchema as obj } from '../../kernel/tool-schema.js';


/** Tool arguments arrive typed; the core reads query-string values. */
const asQuery = (v: unknown): string | undefined => (v === undefined || v === null ? undefined : String(v));

export const historyPlugin = definePlugin({
  name: 'history',
  version: '1.0.0',
  dependsOn: ['core'],
  // Both indexes start when the tenant opens. The commit index reads the log in the
  // background (about half a second per 10,000 commits) so opening a tenant is not held
  // up; history reads wait for it.
  tenantOpen(tenant) {
    codeCommitIndexOf(tenant);
    commitIndexOf(tenant)
      .ready()
      .catch(() => undefined);
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
    {
      method: 'GET',
      path: '/v1/nodes/:id/history',
      operation: ops.nodeHistory,
      input: (r: RouteRequest) => ({ id: r.params.id, limit: r.query.limit }),
    },
    {
      method: 'GET',
      path: '/v1/nodes/:id/history/:sha',
      operation: ops.historyDetail,
      input: (r: RouteRequest) => ({ id: r.params.id, sha: r.params.sha }),
    },
    {
      method: 'GET',
      path: '/v1/commits/:sha',
      operation: ops.commitLookup,
      input: (r: RouteRequest) => ({ sha: r.params.sha, repo: r.query.repo }),
    },
    {
      method: 'GET',
      path: '/v1/changes',
      operation: ops.recentChanges,
      input: (r: RouteRequest) => ({ since: r.query.since, project: r.query.project, limit: r.query.limit }),
    },
    {
      method: 'GET',
      path: '/v1/briefing/:project',
      operation: ops.briefing,
      input: (r: RouteRequest) => ({ project: r.params.project, fp: r.query.fp }),
    },
  ],
  tools: [
    {
      name: 'node_history',
      description:
        'Version history of one node, newest first: who changed it, when, through which operation, and whether the write was server-internal. With `sha` (7-40 hex), one entry with its change (A/M/D/R), unified diff patch and the file content at that commit (null when the commit deleted the node).',
      inputSchema: obj(
        {
          id: { type: 'string', description: 'node id, e.g. task-fix-login' },
          limit: { type: 'integer', description: 'entries to return, default 50, max 200' },
          sha: { type: 'string', description: 'a commit of this node (7-40 hex) to show in detail' },
        },
        ['id'],
      ),
      operation: (ctx, input: { id: unknown; limit?: string; sha?: string }) =>
        input.sha === undefined ? ops.nodeHistory(ctx, { id: input.id, limit: input.limit }) : ops.historyDetail(ctx, { id: input.id, sha: input.sha }),
      input: (args) => ({ id: args.id, limit: asQuery(args.limit), sha: args.sha }),
      annotations: { title: 'Node history', readOnlyHint: true },
    },
    {
      name: 'recent_changes',
      description:
        'The change feed: the newest change per node, newest first. `since` is a graph commit sha (7-40 hex), an ISO date, or a phrase like "yesterday" or "3 days ago"; `project` scopes to one project (deletions omitted); `limit` default 100, max 500. `origin` tells machine-written (capture, distill, gardener) from human changes.',
      inputSchema: obj({
        since: { type: 'string', description: 'commit sha, ISO date or relative phrase' },
        project: { type: 'string', description: 'project slug, proj-<slug> or repo-<slug>' },
        limit: { type: 'integer', description: 'default 100, max 500' },
      }),
      operation: ops.recentChanges,
      input: (args) => ({ since: asQuery(args.since), project: asQuery(args.project), limit: asQuery(args.limit) }),
      annotations: { title: 'Recent changes', readOnlyHint: true },
    },
  ],
});
