/**
 * The `gardener` plugin: POST /v1/gardener, the maintenance sweep (SPEC Writes rule 13,
 * DESIGN.md §9). Any valid team token may run it (not admin-gated). SPEC names no tool twin.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { runGardener } from './operations.js';

export const gardenerPlugin = definePlugin({
  name: 'gardener',
  version: '1.0.0',
  dependsOn: ['core'],
  // The body is "none" per SPEC; whatever is sent is ignored (invalid JSON is still 422).
  routes: [{ method: 'POST', path: '/v1/gardener', operation: runGardener, input: () => ({}) }],
});
