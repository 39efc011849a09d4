/**
 * The `github` plugin: repositories linked to the tenant, kept in step with the graph
 * (docs/github.md). Link management is admin-only (access.ts), each operation a REST route and
 * an MCP tool of the same name; GitHub's webhooks arrive at POST /v1/integrations/github/webhook
 * (a middleware: no bearer token), verified with the link's secret, queued durably and applied
 * by a per-tenant worker (inbound.ts) through the handlers table (handlers/index.ts).
 */
import { definePlugin } from '../../kernel/plugin.js';
import { githubAccess } from './access.js';
import * as api from './api.js';
import { inboundCounts, stopAllWorkers, WEBHOOK_PATH, webhookMiddleware, webhookRouter, workerOf } from './inbound.js';
import { outboundOf, outboundStatus, stopAllOutbound } from './outbound.js';
import { storesOf } from './store.js';

const LINKS = '/v1/integrations/github/links';

export const githubPlugin = definePlugin({
  name: 'github',
  description: 'Linked GitHub repositories: issues, comments, pull requests and commits kept in step with the graph.',
  version: '1.0.0',
  dependsOn: ['core'],
  optionalDependsOn: ['comments', 'import'],
  access: githubAccess,
  routes: [
    { method: 'POST', path: LINKS, operation: api.linkGithubRepo, status: 201 },
    { method: 'GET', path: LINKS, operation: api.listGithubLinks },
    { method: 'GET', path: `${LINKS}/:id`, operation: api.getGithubLink },
    { method: 'PATCH', path: `${LINKS}/:id`, operation: api.updateGithubLink },
    { method: 'DELETE', path: `${LINKS}/:id`, operation: api.unlinkGithubRepo },
  ],
  instructions: [
    'GitHub (admins, person token): link_github_repo links owner/name (token or App); paste the answered webhook_url and secret into GitHub. Issues then sync both ways.',
  ],
  // short texts: the full tools/list is held to a budget (docs/decisions.md, "tools"); api.ts keeps the long ones for REST
  tools: [
    {
      description: 'Link owner/name: token or app, webhook_secret (absent: generated, answered once), mappings. Answers webhook_url.',
      operation: api.linkGithubRepo,
    },
    { description: 'All links; no credentials.', operation: api.listGithubLinks, annotations: { readOnlyHint: true } },
    { description: 'One GitHub link by id; no credentials.', operation: api.getGithubLink, annotations: { readOnlyHint: true } },
    {
      description: 'Change given fields; rotate_webhook_secret answers a new one once; enabled: true resumes.',
      operation: api.updateGithubLink,
    },
    { description: 'Remove a link and its issue pairings; nodes stay.', operation: api.unlinkGithubRepo },
  ],
  init(services) {
    services.requestRouters.push(webhookRouter);
    // the inbound queue per tenant: a backlog or failures an operator should see (docs/operator.md)
    services.metrics.gauge('workgraph_github_inbound', 'GitHub deliveries queued and failed per tenant', ['tenant', 'state'], () =>
      services.tenants.list().flatMap((tenant) => {
        if (!tenant.enabled('github')) return [];
        const counts = inboundCounts(tenant);
        return [
          { labels: { tenant: tenant.org, state: 'queued' }, value: counts.queued },
          { labels: { tenant: tenant.org, state: 'failed' }, value: counts.failed },
        ];
      }),
    );
    // the outbound side: events not yet sent, and failed attempts at the head (GitHub down, credentials refused)
    services.metrics.gauge(
      'workgraph_github_outbound',
      'GitHub outbound events behind and failed attempts per tenant',
      ['tenant', 'state'],
      () =>
        services.tenants.list().flatMap((tenant) => {
          if (!tenant.enabled('github') || storesOf(tenant).links.size === 0) return [];
          const status = outboundStatus(tenant);
          return [
            { labels: { tenant: tenant.org, state: 'behind' }, value: status.behind },
            { labels: { tenant: tenant.org, state: 'attempts' }, value: status.attempts },
          ];
        }),
    );
  },
  middleware: (services) => webhookMiddleware(services),
  middlewarePaths: [WEBHOOK_PATH],
  tenantOpen(tenant, services) {
    // only the process serving the tenant processes its queue (in cluster mode: its owner)
    workerOf(tenant, services);
    // the outbound engine (outbound.ts): node changes to GitHub, from the event log's durable cursor
    outboundOf(tenant, services);
  },
  async close() {
    await Promise.all([stopAllWorkers(), stopAllOutbound()]);
  },
});
