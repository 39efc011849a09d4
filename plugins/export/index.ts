/**
 * The `export` plugin: GET /v1/export streams the tenant's graph as a ustar tarball of its
 * node files (optionally gzipped, optionally with the credential files for admins) or as a
 * git bundle of the whole repository. There is no tool twin (docs/spec.md lists none).
 */
import { definePlugin } from '../../kernel/plugin.js';
import { exportAccess } from './access.js';
import * as api from './api.js';

export const exportPlugin = definePlugin({
  name: 'export',
  description: 'The whole graph as plain files or plain git (GET /v1/export).',
  access: exportAccess,
  version: '1.0.0',
  dependsOn: [],
  routes: [{ method: 'GET', path: '/v1/export', operation: api.exportGraph }],
});
