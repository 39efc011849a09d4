/**
 * The capture plugin's operations, one core function each, shared by the REST routes and
 * the MCP tools: capture, distill report, corrections, digest, query_graph, explore_graph.
 * The larger ones live in their own files; this is the one list.
 */
import { errors } from '../../kernel/errors.js';
import type { OpContext } from '../../kernel/plugin.js';
import { writeActorOf } from '../../kernel/tenants.js';
import { requireObject } from '../../kernel/validate.js';
import { appendJournal, newJournalId } from './journal.js';
import { requireProjectSlug } from './request.js';

export { capture } from './capture.js';
export { proposeCorrection } from './corrections.js';
export { digest, queryGraph } from './digest.js';
export { exploreGraph } from './explore.js';

const SESSION_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const COUNT_MAX = 1_000_000;

function count(body: Record<string, unknown>, field: string, required: boolean): number | undefined {
  const v = body[field];
  if (v === undefined || v === null) {
    if (required) throw errors.validation(`${field} is required`, [{ field, message: 'a non-negative integer' }]);
    return undefined;
  }
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > COUNT_MAX) {
    throw errors.validation(`${field} must be a non-negative integer`, [{ field, message: `an integer 0-${COUNT_MAX}` }]);
  }
  return v;
}

/**
 * POST /v1/distill/report (SPEC Writes rule 10): a distill sweep's counts go to the capture
 * journal only; the graph does not change. Zero-fact sweeps are reported too.
 */
export async function distillReport(ctx: OpContext, input: unknown) {
  const actor = writeActorOf(ctx.actor);
  const body = requireObject(input);
  const facts = count(body, 'facts', true)!;
  const captured = count(body, 'captured', false);
  const spooled = count(body, 'spooled', false);
  const rejected = count(body, 'rejected', false);
  const project = body.project === undefined || body.project === null ? null : requireProjectSlug(body.project, 'project');
  let session = actor.session;
  if (body.session !== undefined && body.session !== null) {
    if (typeof body.session !== 'string' || !SESSION_PATTERN.test(body.session)) {
      throw errors.validation('session must be 1-128 characters of letters, digits, . _ : -', [{ field: 'session', message: 'malformed session id' }]);
    }
    session = body.session;
  }
  const now = ctx.services.clock.now();
  await appendJournal(ctx.tenant, {
    id: newJournalId(now),
    kind: 'distill_report',
    at: new Date(now).toISOString(),
    author: actor.personId,
    agent: actor.agent,
    session,
    via: ctx.via,
    source: 'distill',
    status: 'reported',
    ids: [],
    project,
    facts,
    captured: captured ?? 0,
    spooled: spooled ?? 0,
    rejected: rejected ?? 0,
  });
  return { status: 'reported' as const };
}
