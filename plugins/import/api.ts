/**
 * The import plugin's one operation, declared once: the request schema (model.ts), the
 * answer schema, and the function that runs it (operations.ts). The route, the local CLI
 * path (scripts/import/cli.ts, through `invoke`) and the OpenAPI document read it.
 */
import { answer, defineOperation, s } from '../../kernel/operation.js';
import { importRequestSchema, itemResultSchema } from './model.js';
import * as ops from './operations.js';

export const importItems = defineOperation({
  name: 'import_items',
  summary: 'Bulk-import normalized items from another tracker (admin only)',
  description:
    'Imports up to 2,000 normalized items (beads, Backlog.md, GitHub readers in scripts/import/) as nodes whose ids derive from (source, type, source_id), so a re-import updates instead of duplicating. Assignees and owners are matched by email, then name, and created when missing. An item that cannot be represented is refused with its reason; the rest of the batch goes on. Admin only (stewards edge to proj-root).',
  input: importRequestSchema,
  output: answer({
    source: s.string(),
    results: s.array(itemResultSchema, 'one entry per item, in request order'),
    summary: answer({
      items: s.integer(),
      created: s.integer(),
      updated: s.integer(),
      unchanged: s.integer(),
      refused: s.integer(),
      deleted_skipped: s.integer(),
      people_created: s.integer(),
    }),
  }),
  errors: [403],
  example: { source: 'beads', items: [{ source_id: 'bd-1', type: 'task', title: 'Write the getting-started guide', status: 'open' }] },
  run: ops.importItems,
});
