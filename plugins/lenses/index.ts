/**
 * The `lenses` plugin: saved views (`lens-` nodes) rendered to html, text or json, read-only
 * share tickets for the render route, and the MCP tools `render_lens` and `apply_lens_action`.
 */
import { definePlugin, type RouteRequest } from '../../kernel/plugin.js';
import { applyLensAction } from './actions.js';
import { ACTION_NAMES } from './definition.js';
import { lensCatalog, mintTicket, renderLensRoute, renderLensTool } from './operations.js';
import { keyFor, ticketAuthenticator } from './tickets.js';

const paramsArg = {
  type: 'object',
  description: "render params by name (the lens's `$name` references), e.g. {project: 'web'}",
  additionalProperties: { anyOf: [{ type: ['string', 'number', 'boolean'] }, { type: 'array', items: { type: 'string' } }] },
};
const lensIdArg = { type: 'string', description: 'lens node id, e.g. lens-open-work' };

export const lensesPlugin = definePlugin({
  name: 'lenses',
  version: '1.0.0',
  dependsOn: ['core'],
  routes: [
    { method: 'GET', path: '/v1/lens', operation: lensCatalog },
    {
      method: 'GET',
      path: '/v1/lens/:id/render',
      operation: renderLensRoute,
      input: (r: RouteRequest) => ({ id: r.params.id, query: r.query }),
      auth: 'ticket',
      htmlErrors: true,
    },
    { method: 'POST', path: '/v1/lens/:id/ticket', operation: mintTicket, input: (r: RouteRequest) => ({ id: r.params.id, body: r.body }) },
  ],
  tools: [
    {
      name: 'render_lens',
      description:
        'Render a saved view (lens): {lens_id, params?} returns the view tree {lens_id, title, generated_at, params, groups: [{key, count, items: [{id, title, ...columns}]}], count}; with no lens_id, the catalog of lenses with their params and columns. Read-only.',
      inputSchema: { type: 'object', properties: { lens_id: lensIdArg, params: paramsArg }, additionalProperties: false },
      operation: renderLensTool,
      annotations: { readOnlyHint: true },
    },
    {
      name: 'apply_lens_action',
      description:
        "Act on an item of a rendered lens: action set_status (value: a status), set_priority (value: p1/p2/p3 or none), claim or release (no value). The item must be in the lens as it renders with the same params; the lens may restrict its actions. Runs the same operation as set_status / set_priority / claim / release.",
      inputSchema: {
        type: 'object',
        properties: {
          lens_id: lensIdArg,
          item_id: { type: 'string', description: 'id of an item of the rendered lens' },
          action: { enum: [...ACTION_NAMES] },
          value: { type: ['string', 'null'], description: 'the new status or priority' },
          params: paramsArg,
        },
        required: ['lens_id', 'item_id', 'action'],
        additionalProperties: false,
      },
      operation: applyLensAction,
    },
  ],
  init(services) {
    services.ticketAuthenticators.push(ticketAuthenticator(services));
  },
  tenantOpen(tenant) {
    // Create the signing key while the tenant opens, not on the first mint.
    keyFor(tenant);
  },
});
