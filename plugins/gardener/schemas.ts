/**
 * The gardener's answer, declared once: api.ts declares the operation with it and
 * operations.ts returns `Static<typeof RunGardenerOutput>`.
 */
import { answer, s } from '../../kernel/operation.js';

export const RunGardenerOutput = answer({
  checked: s.integer('nodes examined (every node except findings)'),
  filed: s.array(s.string(), 'findings opened by this run (new or reopened)'),
  resolved: s.array(s.string(), 'findings resolved by this run'),
  skipped: s.array(s.string(), 'findings left open because their condition still holds, or whose write a schema hook refused'),
  generated_at: s.string('when the sweep ran (ISO 8601)'),
});
