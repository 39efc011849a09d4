/**
 * The capture plugin's operations, one core function each, shared by the REST routes and
 * the MCP tools: capture, distill report, corrections, digest, query_graph, explore_graph.
 * The larger ones live in their own files; this is the one list.
 */
import type { OpContext } from '../../kernel/plugin.js';
import { writeActorOf } from '../../kernel/tenants.js';
import { appendJournal, newJournalId } from './journal.js';

export { capture } from './capture.js';
export { proposeCorrection } from './corrections.js';
export { digest, queryGraph } from './digest.js';
export { exploreGraph } from './explore.js';

/** A distill report as its schema admits it (api.ts): counts 0-1,000,000, a project slug, a session id. */
export interface DistillReportInput {
  facts: number;
  captured?: number;
  spooled?: number;
  rejected?: number;
  project?: string;
  session?: string;
}

/**
 * POST /v1/distill/report (docs/spec.md Writes rule 10): a distill sweep's counts go to the capture
 * journal only; the graph does not change. Zero-fact sweeps are reported too.
 */
export async function distillReport(ctx: OpContext, input: DistillReportInput) {
  const actor = writeActorOf(ctx.actor);
  const { facts, captured, spooled, rejected } = input;
  const project = input.project ?? null;
  const session = input.session ?? actor.session;
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
