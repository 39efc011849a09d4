/**
 * POST /v1/capture and the `capture` tool (docs/spec.md Writes rule 9, docs/design.md §6): context
 * checks before any ingestion, drafting (built-in or external ingester), validation with one
 * bounce, one commit stamped `authored_via: capture` (or the text preserved whole as a
 * `capture-` node), the journal entry, and idempotent replays.
 */
import { errors, isSvcError } from '../../kernel/errors.js';
import type { Edge } from '../../kernel/graph-index.js';
import type { Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import type { Tenant } from '../../kernel/tenant.js';
import type { WriteActor, WriteDraft } from '../../kernel/write-draft.js';
import { writeActorOf } from '../../kernel/tenants.js';
import { slugOf, uniqueId } from './ids.js';
import {
  builtinIngester,
  checkDrafts,
  contextEdges,
  externalIngester,
  frontmatterOf,
  IngestUnavailable,
  normalizeDrafts,
  type Draft,
  type DraftError,
  type Ingester,
} from './ingest.js';
import { appendJournal, idempotencySlot, newJournalId, recalled, remember, type CaptureJournalEntry } from './journal.js';
import { parseCaptureRequest, type CaptureRequest } from './request.js';
import type { CapturedNode, CaptureResult, CaptureTextInput } from './schemas.js';

const SUMMARY_IDS = 5;
const MAX_ERROR_WARNINGS = 10;

function formatError(e: DraftError): string {
  const where = e.draft === null ? e.field : `draft ${e.draft + 1}${e.field ? ` ${e.field}` : ''}`;
  return `${where}: ${e.message}`;
}

function listIds(ids: string[]): string {
  return ids.length > SUMMARY_IDS ? `${ids.slice(0, SUMMARY_IDS).join(', ')} and ${ids.length - SUMMARY_IDS} more` : ids.join(', ');
}

interface Plan {
  kind: 'drafts' | 'pending';
  drafts: Draft[];
  reason: string | null;
  attempts: number;
  warnings: string[];
}

/** Drafts the text: attempt 1, validate, bounce once to an ingester that can correct itself. */
async function plan(
  ctx: OpContext,
  ingester: Ingester,
  request: CaptureRequest,
  edges: Edge[],
  author: string,
  calls: { made: number },
): Promise<Plan> {
  const { tenant } = ctx;
  const call = { org: tenant.org, text: request.text, context: request.context, source: request.source };
  const warnings: string[] = [];
  calls.made = 1;
  const first = await ingester.draft({ ...call, attempt: 1 }, tenant.registry);
  warnings.push(...first.warnings);
  let normalized = normalizeDrafts(first.drafts, tenant);
  let problems =
    normalized.errors.length > 0 ? normalized.errors : await checkDrafts(tenant, normalized.drafts, request.context.project, edges, author);
  if (problems.length === 0 && normalized.drafts.length === 0) {
    return {
      kind: 'pending',
      drafts: [],
      reason: 'no part of the text fits a capturable schema (no line of the form `<type>: <summary>`)',
      attempts: 1,
      warnings,
    };
  }
  if (problems.length === 0) return { kind: 'drafts', drafts: normalized.drafts, reason: null, attempts: 1, warnings };
  if (!ingester.bounces) {
    warnings.push(...problems.slice(0, MAX_ERROR_WARNINGS).map(formatError));
    return { kind: 'pending', drafts: [], reason: 'the drafts failed validation', attempts: 1, warnings };
  }
  warnings.push(`the ingester's drafts failed validation (${problems.length} error(s)); bounced back once`);
  calls.made = 2;
  const second = await ingester.draft({ ...call, attempt: 2, errors: problems, previous: first.drafts }, tenant.registry);
  warnings.push(...second.warnings);
  normalized = normalizeDrafts(second.drafts, tenant);
  problems =
    normalized.errors.length > 0 ? normalized.errors : await checkDrafts(tenant, normalized.drafts, request.context.project, edges, author);
  if (problems.length === 0 && normalized.drafts.length > 0)
    return { kind: 'drafts', drafts: normalized.drafts, reason: null, attempts: 2, warnings };
  if (problems.length === 0) {
    return { kind: 'pending', drafts: [], reason: 'after the bounce the ingester found nothing that fits a schema', attempts: 2, warnings };
  }
  warnings.push(...problems.slice(0, MAX_ERROR_WARNINGS).map(formatError));
  return { kind: 'pending', drafts: [], reason: 'the drafts failed validation twice', attempts: 2, warnings };
}

function nodeOf(tenant: Tenant, id: string): Static<typeof CapturedNode> {
  const r = tenant.index.get(id)!;
  return { id, type: r.type, status: r.status, title: r.title, project: r.project, revision: r.revision };
}

/** The text preserved whole as a capture-pending node, routed to the person who captured it. */
function putPending(draft: WriteDraft, request: CaptureRequest, edges: Edge[], reason: string, person: string): string {
  const firstLine = request.text
    .split(/\r?\n/)
    .find((l) => l.trim() !== '')!
    .trim();
  const summary = firstLine.length > 500 ? `${firstLine.slice(0, 499)}…` : firstLine;
  const id = uniqueId('capture-', slugOf(firstLine), (x) => draft.get(x) !== null);
  const fm: Record<string, unknown> = { id, type: 'capture', status: 'pending', summary };
  if (request.context.project) fm.project = request.context.project;
  fm.routed_to = person;
  fm.capture_reason = reason;
  if (request.source) fm.source = request.source;
  if (edges.length > 0) fm.edges = edges;
  draft.put({ frontmatter: fm, body: request.text });
  return id;
}

async function runCapture(ctx: OpContext, actor: WriteActor, request: CaptureRequest): Promise<CaptureResult> {
  const { tenant } = ctx;
  const { context } = request;
  const warnings: string[] = [];
  // docs/spec.md: a missing blocks target is 404, checked before any ingestion.
  if (context.blocks && !tenant.index.has(context.blocks))
    throw errors.notFound(`node ${context.blocks}`, { field: 'context.blocks', id: context.blocks });
  const duringExists = context.during ? tenant.index.has(context.during) : false;
  if (context.during && !duringExists) warnings.push(`context.during ${context.during} does not exist; no relates-to edge was added`);
  if (context.needed_by && context.needed_by < new Date(ctx.services.clock.now()).toISOString().slice(0, 10)) {
    warnings.push(`needed_by ${context.needed_by} is already past`);
  }
  const edges = contextEdges(context, duringExists);
  const url = ctx.services.config.ingestUrl;
  const ingester = url ? externalIngester(url) : builtinIngester;
  const journal: CaptureJournalEntry = {
    id: newJournalId(ctx.services.clock.now()),
    kind: 'capture',
    at: new Date(ctx.services.clock.now()).toISOString(),
    author: actor.personId,
    agent: actor.agent,
    session: actor.session,
    via: ctx.via,
    source: request.source,
    status: 'pending',
    ids: [],
    project: context.project ?? null,
    types: {},
    ingester: ingester.kind,
    attempts: 1,
    reason: null,
    blocks: context.blocks ?? null,
    needed_by: context.needed_by ?? null,
  };

  let planned: Plan;
  const calls = { made: 0 };
  try {
    planned = await plan(ctx, ingester, request, edges, actor.personId, calls);
  } catch (err) {
    if (!(err instanceof IngestUnavailable)) throw err;
    await appendJournal(tenant, { ...journal, status: 'unavailable', reason: err.message, attempts: calls.made });
    throw errors.unavailable('ingestion_unavailable', `the ingestion step is unavailable: ${err.message}`);
  }
  warnings.push(...planned.warnings);

  const outcome = await tenant.write(actor, { op: 'capture', via: 'capture' }, async (draft) => {
    if (planned.kind === 'drafts') {
      const taken = new Set<string>();
      const ids: string[] = [];
      for (const d of planned.drafts) {
        const prefix = tenant.registry.nodeTypes.get(d.type)!.prefix;
        const id = uniqueId(prefix, slugOf(d.summary), (x) => taken.has(x) || tenant.index.has(x));
        taken.add(id);
        ids.push(id);
        draft.put({ frontmatter: frontmatterOf(d, id, context.project, edges), body: d.body });
      }
      try {
        await draft.commit();
        return { status: 'created' as const, ids, reason: null };
      } catch (err) {
        // The graph moved between validation and commit (a schema change, a deleted edge
        // target): the text is preserved instead of lost.
        if (!isSvcError(err)) throw err;
        warnings.push(`the drafts were rejected at commit: ${err.message}`);
        const reason = 'the drafts were rejected at commit';
        return { status: 'pending' as const, ids: [putPending(draft, request, edges, reason, actor.personId)], reason };
      }
    }
    const reason = planned.reason ?? 'no part of the text fits a capturable schema';
    return { status: 'pending' as const, ids: [putPending(draft, request, edges, reason, actor.personId)], reason };
  });

  const nodes = outcome.ids.map((id) => nodeOf(tenant, id));
  const types: Record<string, number> = {};
  for (const n of nodes) types[n.type] = (types[n.type] ?? 0) + 1;
  await appendJournal(tenant, {
    ...journal,
    status: outcome.status,
    ids: outcome.ids,
    types,
    attempts: planned.attempts,
    reason: outcome.reason,
  });
  const summary =
    outcome.status === 'created'
      ? `created ${nodes.length} node${nodes.length === 1 ? '' : 's'}: ${listIds(outcome.ids)}`
      : `preserved as ${outcome.ids[0]} (pending triage): ${outcome.reason}`;
  return { status: outcome.status, ids: outcome.ids, nodes, summary, warnings };
}

/** In-flight captures per tenant and idempotency slot: a concurrent repeat waits for the first. */
const inflight = new WeakMap<Tenant, Map<string, Promise<CaptureResult>>>();

export async function captureText(ctx: OpContext, input: Static<typeof CaptureTextInput>): Promise<CaptureResult> {
  const actor = writeActorOf(ctx.actor);
  const request = parseCaptureRequest(input, ctx.headers, ctx.via === 'rest');
  if (!request.idempotencyKey) return runCapture(ctx, actor, request);
  const { tenant } = ctx;
  const slot = idempotencySlot(actor.personId, request.idempotencyKey);
  let running = inflight.get(tenant);
  if (!running) inflight.set(tenant, (running = new Map()));
  for (;;) {
    const stored = recalled(tenant, slot, ctx.services.clock.now());
    if (stored !== undefined) return stored as CaptureResult;
    const pending = running.get(slot);
    if (!pending) break;
    await pending.catch(() => undefined);
  }
  const job = (async () => {
    const result = await runCapture(ctx, actor, request);
    // Only answered captures are remembered: a failed one (404, 503) may be retried with the same key.
    await remember(tenant, slot, actor.personId, result, ctx.services.clock.now());
    return result;
  })();
  running.set(slot, job);
  try {
    return await job;
  } finally {
    running.delete(slot);
  }
}
