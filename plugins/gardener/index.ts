/**
 * The `gardener` plugin: POST /v1/gardener, the maintenance sweep (docs/spec.md Writes rule 13,
 * docs/design.md §9). Any valid team token may run it (not admin-gated). docs/spec.md names no tool twin.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { gardenerAccess } from './access.js';
import * as api from './api.js';

export const gardenerPlugin = definePlugin({
  name: 'gardener',
  description: 'The maintenance sweep: stale leases, orphans and drift findings.',
  access: gardenerAccess,
  version: '1.0.0',
  dependsOn: ['core'],
  optionalDependsOn: ['leases'],
  // The body is "none" per docs/spec.md: an empty or absent body; a field in it is 422 (closed input).
  routes: [{ method: 'POST', path: '/v1/gardener', operation: api.runGardener }],
});
