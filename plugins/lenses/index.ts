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
  description: 'Saved views rendered to html, text or json, and read-only share links.',
  access: lensesAccess,
  version: '1.0.0',
  dependsOn: ['core'],
  optionalDependsOn: ['leases'],
  routes: [
    { method: 'GET', path: '/v1/lens', operation: api.listLenses },
    // Render params arrive as `param.<name>=<value>` query keys (docs/design.md §8), gathered into `params`.
    {
      method: 'GET',
      path: '/v1/lens/:id/render',
      operation: api.renderLensPage,
      queryPrefixes: { 'param.': 'params' },
      auth: 'ticket',
      htmlErrors: true,
    },
    { method: 'POST', path: '/v1/lens/:id/ticket', operation: api.mintRenderTicket },
  ],
  tools: [
    {
      description: 'Render a saved view: {lens_id, params?} -> groups of items; no lens_id: the lens catalog.',
      operation: api.renderLens,
      annotations: { readOnlyHint: true },
    },
    {
      description: 'Act on item_id of lens_id (as rendered with params): set_status or set_priority (value), claim, release.',
      operation: api.applyLensAction,
    },
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
