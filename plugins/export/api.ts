/**
 * The export plugin's one operation, declared once: the query flags as a closed input schema,
 * the media types it streams, and the function that runs it (operations.ts).
 */
import { defineOperation, object, s } from '../../kernel/operation.js';
import * as ops from './operations.js';

export const ExportGraphInput = object({
  gzip: s.boolean('gzip the tarball (1 or 0)'),
  history: s.boolean('stream a git bundle of the whole repository instead of the tarball (1 or 0)'),
  auth: s.boolean('also bundle the credential files (admin only; 1 or 0)'),
});

export const exportGraph = defineOperation({
  name: 'export_graph',
  summary: "Export the tenant's graph as a tarball of node files or a git bundle",
  description:
    'Streams the graph. Default: an uncompressed ustar tarball of nodes/; gzip=1 compresses it; history=1 streams a git bundle of the whole repository (not combinable with gzip or auth); auth=1 also bundles the credential files and operational state (admin only). Headers: x-svc-head, x-svc-node-count, x-svc-skipped (when entries were omitted), x-svc-auth-files (on auth=1); a bundle carries only x-svc-head.',
  input: ExportGraphInput,
  produces: ['application/x-tar', 'application/gzip', 'application/x-git-bundle'],
  errors: [403, 409],
  run: ops.exportGraph,
});
