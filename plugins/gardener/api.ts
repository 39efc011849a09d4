/**
 * The gardener plugin's one operation, declared once: input and answer schemas and the
 * function that runs it (operations.ts). The route and the OpenAPI document read it.
 */
import { answer, defineOperation, object, s } from '../../kernel/operation-legacy.js';
import { runGardener } from './operations.js';

export const gardenerSweep = defineOperation({
  name: 'run_gardener',
  summary: 'Run the maintenance sweep: file, refresh and resolve findings',
  description:
    'Runs the five gardener checks (lagging-resolution, dangling-edge, stale-assignment, superseded-open, overdue-block) over the graph and keeps exactly one open finding- node per (check, node) whose condition holds; findings whose condition no longer holds are resolved in the same run. Any token bound to a person may run it (not admin-gated). The request takes no fields.',
  input: object({}),
  output: answer({
    checked: s.integer('nodes examined (every node except findings)'),
    filed: s.array(s.string(), 'findings opened by this run (new or reopened)'),
    resolved: s.array(s.string(), 'findings resolved by this run'),
    skipped: s.array(s.string(), 'findings left open because their condition still holds, or whose write a schema hook refused'),
    generated_at: s.string('when the sweep ran (ISO 8601)'),
  }),
  errors: [403],
  example: {},
  run: runGardener,
});
