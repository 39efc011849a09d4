/**
 * The `lenses` plugin: saved views (`lens-` nodes) rendered to html, text or json, read-only
 * share tickets for the render route, and the MCP tools `render_lens` and `apply_lens_action`.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { lensesAccess } from './access.js';
import * as api from './api.js';
import { keyFor, ticketAuthenticator, ticketRouter } from './tickets.js';

export const lensesPlugin = definePlugin({
  name: 'lenses',
  access: lensesAccess,
  version: '1.0.0',
  dependsOn: ['core'],
  routes: [
    { method: 'GET', path: '/v1/lens', operation: api.listLenses },
    // Render params arrive as `param.<name>=<value>` query keys (DESIGN §8), gathered into `params`.
    { method: 'GET', path: '/v1/lens/:id/render', operation: api.renderLensPage, queryPrefixes: { 'param.': 'params' }, auth: 'ticket', htmlErrors: true },
    { method: 'POST', path: '/v1/lens/:id/ticket', operation: api.mintTicket },
  ],
  tools: [
    { operation: api.renderLens, annotations: { readOnlyHint: true } },
    { operation: api.applyLensAction },
  ],
  init(services) {
    services.ticketAuthenticators.push(ticketAuthenticator(services));
    services.requestRouters.push(ticketRouter);
  },
  tenantOpen(tenant) {
    // Create the signing key while the tenant opens, not on the first mint.
    keyFor(tenant);
  },
});
