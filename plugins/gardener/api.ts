/**
 * The gardener plugin's one operation, declared once: input and answer schemas (schemas.ts) and the
 * function that runs it (operations.ts). The route and the OpenAPI document read it.
 */
import { defineOperation, object } from '../../kernel/operation.js';
import * as ops from './operations.js';
import { RunGardenerOutput } from './schemas.js';

export const runGardener = defineOperation({
  name: 'run_gardener',
  summary: 'Run the maintenance sweep: file, refresh and resolve findings',
  description:
    'Runs the five gardener checks (lagging-resolution, dangling-edge, stale-assignment, superseded-open, overdue-block) over the graph and keeps exactly one open finding- node per (check, node) whose condition holds; findings whose condition no longer holds are resolved in the same run. Any token bound to a person may run it (not admin-gated). The request takes no fields.',
  input: object({}),
  output: RunGardenerOutput,
  errors: [403],
  example: {},
  run: ops.runGardener,
});
