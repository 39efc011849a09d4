/**
 * The `import` plugin: POST /v1/import, an admin's bulk import of items from another tracker
 * (normalized by the readers in scripts/import/: beads, Backlog.md, GitHub). The
 * `workgraph import` CLI drives it, remotely in batches or locally on a data directory.
 * No MCP tool: a bulk job of up to 2,000 items a call is an operator's CLI task, not an
 * agent's (docs/decisions.md).
 */
import { definePlugin } from '../../kernel/plugin.js';
import { importAccess } from './access.js';
import * as api from './api.js';

export const importPlugin = definePlugin({
  name: 'import',
  description: 'Bulk import from another tracker (beads, Backlog.md, GitHub issues).',
  access: importAccess,
  version: '1.0.0',
  dependsOn: ['identity'],
  routes: [{ method: 'POST', path: '/v1/import', operation: api.importItems }],
});
