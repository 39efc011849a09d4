/**
 * The `lenses` plugin: saved views (`lens-` nodes) rendered to html, text or json, read-only
 * share tickets for the render route, and the MCP tools `render_lens` and `apply_lens_action`.
 */
import { invoke } from '../../kernel/operation.js';
import { definePlugin, type RouteRequest } from '../../kernel/plugin.js';
import * as api from './api.js';
import { paramsFromQuery } from './operations.js';
import { keyFor, ticketAuthenticator } from './tickets.js';

const lastOf = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[v.length - 1] : v);

/**
 * GET /v1/lens/{id}/render as the `render_lens_page` input: the path id, `format` (empty is
 * the default), `ticket`, and the `param.<name>` keys gathered into `params`. Other query keys
 * are ignored, as on every GET route.
 */
function renderRouteInput(req: RouteRequest): Record<string, unknown> {
  const format = lastOf(req.query.format);
  const ticket = lastOf(req.query.ticket);
  return {
    id: req.params.id,
    ...(format ? { format } : {}),
    ...(ticket !== undefined ? { ticket } : {}),
    params: paramsFromQuery(req.query),
  };
}

export const lensesPlugin = definePlugin({
  name: 'lenses',
  version: '1.0.0',
  dependsOn: ['core'],
  routes: [
    { method: 'GET', path: '/v1/lens', operation: api.listLenses },
    {
      method: 'GET',
      path: '/v1/lens/:id/render',
      // The one adapter left: the render params arrive as `param.<name>` query keys (DESIGN §8),
      // which the kernel's query assembly does not copy; renderRouteInput gathers them into
      // `params`, and the declared operation validates and runs as on any other route.
      operation: (ctx, input) => invoke(api.renderLensPage, ctx, input),
      input: renderRouteInput,
      auth: 'ticket',
      htmlErrors: true,
    },
    { method: 'POST', path: '/v1/lens/:id/ticket', operation: api.mintTicket },
  ],
  tools: [
    { operation: api.renderLens, annotations: { readOnlyHint: true } },
    { operation: api.applyLensAction },
  ],
  init(services) {
    services.ticketAuthenticators.push(ticketAuthenticator(services));
  },
  tenantOpen(tenant) {
    // Create the signing key while the tenant opens, not on the first mint.
    keyFor(tenant);
  },
});
