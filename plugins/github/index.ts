/**
 * The `github` plugin: repositories linked to the tenant, kept in step with the graph
 * (docs/github.md). Link management is admin-only (access.ts); GitHub's webhooks arrive at
 * POST /v1/integrations/github/webhook, verified with the link's secret, queued durably and
 * applied by a per-tenant worker (inbound.ts) through the handlers table (handlers/index.ts).
 */
import { definePlugin } from '../../kernel/plugin.js';

export const githubPlugin = definePlugin({
  name: 'github',
  description: 'Linked GitHub repositories: issues, comments, pull requests and commits kept in step with the graph.',
  version: '1.0.0',
  dependsOn: ['core'],
  access: {},
});
