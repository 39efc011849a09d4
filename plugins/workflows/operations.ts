/**
 * size: one state machine (run, step lease, verdict, next step) read top to bottom.
 * Workflow runs (docs/spec.md "Workflow runs", rules 1-4; docs/design.md §5): one function per
 * operation, shared by the REST routes and the `run_workflow` tool. The server never
 * executes a step: it records runs, hands out step leases and records verdicts.
 *
 * Every change to a run goes through the tenant's write queue, so claims and verdicts on
 * one tenant are serialized: two workers can never both win a step. What is committed: the
 * run node (`lineage`, and `state` with each step's state, generation, attempts, holder,
 * verdicts, result and log). What is not: the lease expiry (state collection
 * `workflow-leases`, see store.ts), so renewing a lease never commits.
 */
import { errors } from '../../kernel/errors.js';
import type { Frontmatter } from '../../kernel/codec.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import { writeActorOf } from '../../kernel/tenants.js';
import { isDone } from '../core/public.js';
import {
  canonicalJson,
  initialState,
  LIMITS,
  outcomeDifferences,
  parseSteps,
  readLineage,
  readState,
  releaseReady,
  resultSha,
  runOutcome,
  skipUnfinished,
  type CommittedLease,
  type Lineage,
  type RunState,
  type RunStep,
  type StepState,
  type Verdict,
} from './model.js';
import type {
  ClaimStepInput,
  ClaimStepOutput,
  CompleteStepInput,
  CompleteStepOutput,
  GetRunInput,
  GetRunOutput,
  ListWorkInput,
  ListWorkOutput,
  RunWorkflowInput,
  RunWorkflowOutput,
  WorkItem,
} from './schemas.js';
import { leaseKey, RUN_KEY_TTL_MS, runBookOf, type RunBook, type StepLease } from './store.js';

type Body = Record<string, unknown>;

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,200}$/;
const WORK_LIMIT_DEFAULT = 100;
const WORK_LIMIT_MAX = 500;

const iso = (ms: number) => new Date(ms).toISOString();

// ---------------------------------------------------------------- input checks

/*
 * Shapes, bounds and patterns are the input schemas' (schemas.ts); what stays here is what they
 * cannot say: JSON sizes in bytes, the Idempotency-Key header, and which lease a reference names.
 */

function checkInputs(value: Record<string, unknown> | null | undefined): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (bytes > LIMITS.inputsBytes) {
    throw errors.validation(`inputs exceed ${LIMITS.inputsBytes} bytes`, [
      { field: 'inputs', message: `at most ${LIMITS.inputsBytes} bytes of JSON`, bytes },
    ]);
  }
  return value;
}

/** The body's key (pattern checked by the schema), else the Idempotency-Key header, checked here. */
function optionalIdempotencyKey(value: string | null | undefined): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (!IDEMPOTENCY_KEY.test(value)) {
    throw errors.validation('idempotency_key must be 1-200 printable ASCII characters without spaces', [
      { field: 'idempotency_key', message: 'malformed key' },
    ]);
  }
  return value;
}

/**
 * `lease` of a verdict: the `lease_id` string of the claim answer, or that lease object itself
 * (the schema requires one of the two). A string that names no lease of this step (another
 * step's or run's lease, or an id this server never issued) is `null`: the caller then answers
 * 409 `lease_expired`, like a superseded lease (docs/spec.md Workflow rule 4).
 */
function parseLeaseRef(value: string | { lease_id: string }, runId: string, step: string): number | null {
  const raw = typeof value === 'string' ? value : value.lease_id;
  const m = /^([a-z0-9][a-z0-9-]*):([a-z0-9][a-z0-9-]*):([1-9]\d{0,8})$/.exec(raw);
  if (!m || m[1] !== runId || m[2] !== step) return null;
  return Number(m[3]);
}

function optionalResult(value: unknown): unknown {
  if (value === undefined || value === null) return undefined;
  const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (bytes > LIMITS.resultBytes) {
    throw errors.validation(`result exceeds ${LIMITS.resultBytes} bytes`, [
      { field: 'result', message: `at most ${LIMITS.resultBytes} bytes of JSON`, bytes },
    ]);
  }
  return value;
}

// ---------------------------------------------------------------- views

interface Holder {
  by: string;
  agent: string | null;
  session: string | null;
}

function holderOf(ctx: OpContext): Holder {
  return { by: ctx.actor.personId, agent: ctx.actor.agent, session: ctx.actor.session };
}

/** The same person through the same agent (or none); sessions must agree when both are bound. */
function sameHolder(lease: Holder, caller: Holder): boolean {
  if (lease.by !== caller.by || lease.agent !== caller.agent) return false;
  return lease.session === null || caller.session === null || lease.session === caller.session;
}

export const leaseIdOf = (runId: string, step: string, generation: number) => `${runId}:${step}:${generation}`;

function leaseView(lease: StepLease) {
  return {
    lease_id: leaseIdOf(lease.run_id, lease.step, lease.generation),
    run_id: lease.run_id,
    step: lease.step,
    generation: lease.generation,
    by: lease.by,
    agent: lease.agent,
    session: lease.session,
    claimed_at: lease.claimed_at,
    expires: lease.expires_ms,
    expires_at: iso(lease.expires_ms),
    iteration: lease.iteration,
  };
}

/**
 * A step as of now: a committed claim whose lease lapsed (or was never made durable) reads
 * as `ready`, with the former holder kept under `lease` marked `live: false`.
 */
function stepView(book: RunBook, runId: string, sid: string, step: RunStep, nowMs: number): Record<string, unknown> {
  const view: Record<string, unknown> = { ...step };
  if (step.state === 'claimed' && step.lease) {
    const live = book.liveLease(runId, sid, step.generation, nowMs);
    const own = book.leases.get(leaseKey(runId, sid));
    const expiresMs = live?.expires_ms ?? (own && own.generation === step.generation ? own.expires_ms : null);
    view.lease = { ...step.lease, expires_at: expiresMs === null ? null : iso(expiresMs), live: live !== undefined };
    if (!live) view.state = 'ready';
  }
  return view;
}

function effectiveState(book: RunBook, runId: string, sid: string, step: RunStep, nowMs: number): StepState {
  if (step.state !== 'claimed') return step.state;
  return book.liveLease(runId, sid, step.generation, nowMs) ? 'claimed' : 'ready';
}

function stateView(book: RunBook, runId: string, state: RunState, nowMs: number): Record<string, unknown> {
  const steps: Record<string, unknown> = {};
  for (const sid of state.order) steps[sid] = stepView(book, runId, sid, state.steps[sid]!, nowMs);
  return { ...state, steps };
}

function runRecord(book: RunBook, record: NodeRecord, nowMs: number) {
  const fm = record.frontmatter;
  const lineage = readLineage(fm);
  const state = readState(fm);
  const timestamps: Record<string, string> = {};
  if (typeof fm.created === 'string') timestamps.created = fm.created;
  if (typeof fm.updated === 'string') timestamps.updated = fm.updated;
  if (state?.finished_at) timestamps.finished = state.finished_at;
  return {
    run_id: record.id,
    status: record.status,
    project: record.project,
    title: record.title,
    initiator: lineage?.initiator ?? null,
    workflow: lineage?.workflow ?? null,
    workflow_version: lineage?.workflow_version ?? null,
    lineage: fm.lineage ?? null,
    // A run node edited by hand into an unreadable shape is shown as stored.
    state: state ? stateView(book, record.id, state, nowMs) : (fm.state ?? null),
    revision: record.revision,
    timestamps,
  };
}

// ---------------------------------------------------------------- loading a run for a change

interface LoadedRun {
  record: NodeRecord;
  /** a private copy of the frontmatter: the index record is never mutated */
  fm: Frontmatter;
  state: RunState;
}

function runNode(ctx: OpContext, runId: string): NodeRecord {
  const record = ctx.tenant.index.get(runId);
  if (!record || record.type !== 'run') throw errors.notFound(`run ${runId}`, { run_id: runId });
  return record;
}

function loadRun(ctx: OpContext, runId: string): LoadedRun {
  const record = runNode(ctx, runId);
  const fm = structuredClone(record.frontmatter);
  const state = readState(fm);
  if (!state)
    throw errors.conflict(`run ${runId} has no well-formed state (was the node edited by hand?)`, {
      run_id: runId,
      reason: 'malformed_state',
    });
  return { record, fm, state };
}

function stepOf(run: LoadedRun, runId: string, sid: string): RunStep {
  const step = run.state.steps[sid];
  if (!step) throw errors.notFound(`step ${sid} of ${runId}`, { run_id: runId, step: sid, steps: run.state.order });
  return step;
}

function personOnly(ctx: OpContext, step: RunStep, runId: string, sid: string): void {
  if (step.approval && ctx.actor.agent) {
    throw errors.forbidden(`step ${sid} of ${runId} is an approval step: a person decides it, not an agent`, {
      run_id: runId,
      step: sid,
      approval: true,
    });
  }
}

// ---------------------------------------------------------------- start a run

/** POST /v1/workflows/{id}/run and `run_workflow`: records a run node; executes nothing. */
export async function runWorkflow(ctx: OpContext, input: Static<typeof RunWorkflowInput>): Promise<Static<typeof RunWorkflowOutput>> {
  const workflowId = input.id;
  const inputs = checkInputs(input.inputs);
  const key = optionalIdempotencyKey(input.idempotency_key ?? ctx.headers['idempotency-key']);
  const actor = writeActorOf(ctx.actor);
  const { tenant } = ctx;
  const book = runBookOf(tenant);
  const inputsText = canonicalJson(inputs);
  const keyId = key ? `${actor.personId}\n${key}` : null;

  return tenant.write(actor, { op: 'run_workflow', via: ctx.via }, async (draft) => {
    const nowMs = ctx.services.clock.now();
    if (keyId) {
      const seen = book.runKeys.get(keyId);
      if (seen && nowMs - seen.created_ms < RUN_KEY_TTL_MS) {
        if (seen.workflow !== workflowId || seen.inputs !== inputsText) {
          throw errors.conflict('idempotency key already used for a different run request', {
            idempotency_key: key,
            run_id: seen.run_id,
            workflow: seen.workflow,
          });
        }
        return seen.payload;
      }
    }
    const wf = tenant.index.get(workflowId);
    if (!wf) throw errors.notFound(`workflow ${workflowId}`, { workflow: workflowId });
    if (wf.type !== 'wf') {
      throw errors.validation(`${workflowId} is a ${wf.type}, not a workflow`, [{ field: 'id', message: 'not a wf- node', type: wf.type }]);
    }
    if (wf.status !== 'active' || isDone(tenant, wf)) {
      const how =
        wf.status === 'proposed'
          ? `it is proposed: an identity other than its last author must activate it (POST /v1/nodes/${workflowId}/status {"status":"active"}) before a run can start`
          : wf.status === 'active'
            ? 'it is superseded or resolved'
            : `it is ${wf.status}`;
      throw errors.conflict(`workflow ${workflowId} cannot start a run: ${how}`, {
        workflow: workflowId,
        status: wf.status,
        required_status: 'active',
        reason: 'workflow_not_active',
      });
    }
    const { steps, problems } = parseSteps(wf.frontmatter.steps);
    if (problems.length > 0) throw errors.validation(`workflow ${workflowId} has invalid steps`, problems);

    const slug = workflowId.slice('wf-'.length).slice(0, 150).replace(/-+$/, '') || 'wf';
    let n = book.runCount(workflowId) + 1;
    while (tenant.index.has(`run-${slug}-${n}`) || draft.get(`run-${slug}-${n}`)) n++;
    const runId = `run-${slug}-${n}`;
    const lineage: Lineage = {
      workflow: workflowId,
      workflow_version: wf.revision,
      initiator: actor.personId,
      ...(actor.agent ? { initiator_agent: actor.agent } : {}),
      inputs,
    };
    const title = `${wf.title} #${n}`.slice(0, 500);
    draft.put({
      frontmatter: {
        id: runId,
        type: 'run',
        status: 'running',
        title,
        summary: `Run ${n} of workflow ${workflowId}: ${wf.title}`.slice(0, 500),
        ...(wf.project ? { project: wf.project } : {}),
        edges: [{ type: 'relates-to', to: workflowId, kind: 'run-of' }],
        lineage,
        state: initialState(steps),
      },
      body: '',
    });
    await draft.commit();
    const record = tenant.index.get(runId)!;
    const payload = {
      run_id: runId,
      revision: record.revision,
      workflow: workflowId,
      workflow_version: wf.revision,
      state: stateView(book, runId, readState(record.frontmatter)!, nowMs),
    };
    if (keyId) {
      await book.pruneRunKeys(nowMs);
      await book.runKeys.set(keyId, {
        person: actor.personId,
        workflow: workflowId,
        inputs: inputsText,
        run_id: runId,
        created_ms: nowMs,
        payload,
      });
    }
    return payload;
  });
}

// ---------------------------------------------------------------- read a run

export async function getRun(ctx: OpContext, input: Static<typeof GetRunInput>): Promise<Static<typeof GetRunOutput>> {
  const runId = input.id;
  return runRecord(runBookOf(ctx.tenant), runNode(ctx, runId), ctx.services.clock.now());
}

// ---------------------------------------------------------------- claimable work

/**
 * GET /v1/work: ready steps of running runs, approval steps excluded (they are a person's,
 * through the decision queue). Cost: O(running runs x their steps), from the run book and the
 * index; finished runs are never visited.
 */
export async function listWork(ctx: OpContext, input: Static<typeof ListWorkInput>): Promise<Static<typeof ListWorkOutput>> {
  const capabilities = input.capability && input.capability.length > 0 ? new Set(input.capability) : null;
  const limit = Math.min(WORK_LIMIT_MAX, Math.max(1, input.limit ?? WORK_LIMIT_DEFAULT));
  const { tenant } = ctx;
  const book = runBookOf(tenant);
  const nowMs = ctx.services.clock.now();
  const found: Array<{ item: Static<typeof WorkItem>; created: string; index: number }> = [];
  for (const runId of book.running) {
    const record = tenant.index.get(runId);
    if (!record) continue;
    const state = readState(record.frontmatter);
    if (!state) continue;
    const lineage = readLineage(record.frontmatter);
    state.order.forEach((sid, index) => {
      const step = state.steps[sid]!;
      if (step.approval) return;
      if (effectiveState(book, runId, sid, step, nowMs) !== 'ready') return;
      if (capabilities && step.capability && !capabilities.has(step.capability)) return;
      found.push({
        created: typeof record.frontmatter.created === 'string' ? record.frontmatter.created : '',
        index,
        item: {
          run_id: runId,
          step: sid,
          title: step.title,
          run_title: record.title,
          workflow: lineage?.workflow ?? null,
          workflow_version: lineage?.workflow_version ?? null,
          project: record.project,
          capability: step.capability ?? null,
          needs: step.needs,
          generation: step.generation,
          attempts: step.attempts,
          max_attempts: step.max_attempts,
          iteration: typeof step.iteration === 'number' ? step.iteration : null,
          lapsed: step.state === 'claimed',
        },
      });
    });
  }
  // Oldest run first, then the workflow's step order: work drains in the order it was asked for.
  found.sort((a, b) =>
    a.created !== b.created
      ? a.created < b.created
        ? -1
        : 1
      : a.item.run_id !== b.item.run_id
        ? a.item.run_id < b.item.run_id
          ? -1
          : 1
        : a.index - b.index,
  );
  const work = found.slice(0, limit).map((f) => f.item);
  return { work, count: work.length, generated_at: iso(nowMs), total_count: found.length, truncated: found.length > work.length };
}

// ---------------------------------------------------------------- claim a step

function notClaimable(runId: string, sid: string, reason: string, message: string, extra: Body = {}) {
  return errors.conflict(`step ${sid} of ${runId} is not claimable: ${message}`, { run_id: runId, step: sid, reason, ...extra });
}

/**
 * POST /v1/runs/{id}/steps/{sid}/claim: a ready step (or one whose lease lapsed) gets a new
 * lease with the next generation, committed as `claimed` in the run node; the holder claiming
 * again renews the same lease without a commit.
 */
export async function claimStep(ctx: OpContext, input: Static<typeof ClaimStepInput>): Promise<Static<typeof ClaimStepOutput>> {
  const { id: runId, sid } = input;
  const iteration = input.iteration ?? null;
  const actor = writeActorOf(ctx.actor);
  const { tenant } = ctx;
  const book = runBookOf(tenant);
  const caller = holderOf(ctx);

  // Internal and unstamped: handing out a lease is bookkeeping, like the lease plugin's edges;
  // the verdict is the run's real change.
  return tenant.write(actor, { op: 'claim_step', via: ctx.via, internal: true }, async (draft) => {
    const run = loadRun(ctx, runId);
    const step = stepOf(run, runId, sid);
    personOnly(ctx, step, runId, sid);
    const nowMs = ctx.services.clock.now();
    const ttl = tenant.config.limits.claim_ttl_ms;
    if (run.record.status !== 'running')
      throw notClaimable(runId, sid, 'run_finished', `the run is ${run.record.status}`, { run_status: run.record.status });

    if (step.state === 'claimed') {
      const live = book.liveLease(runId, sid, step.generation, nowMs);
      if (live && sameHolder(live, caller)) {
        const renewed: StepLease = { ...live, expires_ms: Math.max(live.expires_ms, nowMs + ttl), iteration: iteration ?? live.iteration };
        await book.leases.set(leaseKey(runId, sid), renewed);
        return claimAnswer(book, runId, sid, renewed, run.record, run.state, 'renewed', nowMs);
      }
      if (live) {
        throw notClaimable(
          runId,
          sid,
          'claimed',
          `it is claimed by ${live.by}${live.agent ? ` (agent ${live.agent})` : ''} until ${iso(live.expires_ms)}`,
          {
            state: 'claimed',
            holder: live.by,
            agent: live.agent,
            expires_at: iso(live.expires_ms),
          },
        );
      }
      // lapsed: offered again under a new generation
    } else if (step.state !== 'ready') {
      const why: Record<string, string> = {
        pending: `it waits for ${step.needs.filter((n) => run.state.steps[n]?.state !== 'succeeded').join(', ')}`,
        succeeded: 'it already succeeded',
        failed: 'it failed',
        skipped: 'it was skipped',
      };
      throw notClaimable(runId, sid, step.state, why[step.state] ?? step.state, { state: step.state });
    }

    const generation = step.generation + 1;
    const claimedAt = iso(nowMs);
    const committed: CommittedLease = { by: caller.by, agent: caller.agent, session: caller.session, generation, claimed_at: claimedAt };
    if (iteration !== null) {
      committed.iteration = iteration;
      step.iteration = iteration;
    }
    step.state = 'claimed';
    step.generation = generation;
    step.lease = committed;
    run.fm.state = run.state;
    draft.put({ frontmatter: run.fm, body: run.record.body }, { stamp: false });
    await draft.commit();
    const lease: StepLease = {
      run_id: runId,
      step: sid,
      generation,
      by: caller.by,
      agent: caller.agent,
      session: caller.session,
      claimed_at: claimedAt,
      expires_ms: nowMs + ttl,
      iteration,
    };
    await book.leases.set(leaseKey(runId, sid), lease);
    const record = tenant.index.get(runId)!;
    return claimAnswer(book, runId, sid, lease, record, readState(record.frontmatter)!, 'claimed', nowMs);
  });
}

function claimAnswer(
  book: RunBook,
  runId: string,
  sid: string,
  lease: StepLease,
  record: NodeRecord,
  state: RunState,
  status: 'claimed' | 'renewed',
  nowMs: number,
) {
  return {
    run_id: runId,
    step: sid,
    lease: leaseView(lease),
    state: stateView(book, runId, state, nowMs),
    status,
    revision: record.revision,
  };
}

// ---------------------------------------------------------------- report a verdict

/**
 * POST /v1/runs/{id}/steps/{sid}/complete: records `succeeded` or `failed` for the lease's
 * generation. A success releases the steps that needed this one and may finish the run; a
 * failure below max_attempts returns the step to ready, the last one fails the run (fail fast:
 * every unfinished step is skipped). A retry of a recorded generation is answered from the
 * record (`replayed: true`) when it agrees and is 409 `outcome_conflict` when it does not.
 */
export async function completeStep(ctx: OpContext, input: Static<typeof CompleteStepInput>): Promise<Static<typeof CompleteStepOutput>> {
  const { id: runId, sid, status } = input;
  const generation = parseLeaseRef(input.lease, runId, sid);
  const result = optionalResult(input.result);
  const log = input.log ?? undefined;
  const iteration = input.iteration ?? null;
  const actor = writeActorOf(ctx.actor);
  const { tenant } = ctx;
  const book = runBookOf(tenant);
  const caller = holderOf(ctx);
  const sha = resultSha(result);

  return tenant.write(actor, { op: 'complete_step', via: ctx.via }, async (draft) => {
    const run = loadRun(ctx, runId);
    const step = stepOf(run, runId, sid);
    personOnly(ctx, step, runId, sid);
    const nowMs = ctx.services.clock.now();

    if (generation === null) {
      throw errors.leaseExpired(`that lease is not a lease of step ${sid} of ${runId}; claim the step and report under its lease`, {
        run_id: runId,
        step: sid,
        reason: 'not_current',
        current_generation: step.generation,
      });
    }
    const recorded = step.verdicts.find((v) => v.generation === generation);
    if (recorded) {
      const diffs = outcomeDifferences(recorded, status, sha, iteration);
      if (diffs.length > 0) {
        throw errors.outcomeConflict(
          `generation ${generation} of step ${sid} was already reported ${recorded.status} at ${recorded.at}; this retry differs in ${diffs.join(', ')}. Redo the work under a fresh lease`,
          {
            run_id: runId,
            step: sid,
            generation,
            differs_in: diffs,
            recorded: { status: recorded.status, at: recorded.at, by: recorded.by, iteration: recorded.iteration },
          },
        );
      }
      return completeAnswer(book, run.record, run.state, sid, status, generation, true, nowMs);
    }
    const expired = (why: string, extra: Body = {}) =>
      errors.leaseExpired(`lease ${leaseIdOf(runId, sid, generation)} is no longer valid: ${why}`, {
        run_id: runId,
        step: sid,
        generation,
        ...extra,
      });
    if (run.record.status !== 'running')
      throw expired(`the run is ${run.record.status}`, { reason: 'run_finished', run_status: run.record.status });
    if (step.state !== 'claimed' || step.generation !== generation) {
      throw expired(step.generation > generation ? `superseded by generation ${step.generation}` : `step is ${step.state}`, {
        reason: 'superseded',
        current_generation: step.generation,
      });
    }
    const stored = book.leases.get(leaseKey(runId, sid));
    const live = book.liveLease(runId, sid, generation, nowMs);
    if (!live) {
      const when = stored && stored.generation === generation ? ` at ${iso(stored.expires_ms)}` : '';
      throw expired(`it expired${when}; claim the step again`, { reason: 'expired', expired_at: when ? iso(stored!.expires_ms) : null });
    }
    if (!sameHolder(live, caller)) {
      throw errors.forbidden(
        `lease ${leaseIdOf(runId, sid, generation)} is held by ${live.by}${live.agent ? ` (agent ${live.agent})` : ''}, not by the caller`,
        { run_id: runId, step: sid, holder: live.by, agent: live.agent },
      );
    }

    const at = iso(nowMs);
    const effectiveIteration = iteration ?? live.iteration;
    step.attempts += 1;
    step.verdicts.push({ generation, status, at, by: caller.by, agent: caller.agent, iteration: effectiveIteration, result_sha: sha });
    if (result !== undefined) step.result = result;
    else delete step.result;
    if (log !== undefined) step.log = log;
    else delete step.log;
    if (effectiveIteration !== null) step.iteration = effectiveIteration;
    delete step.lease;
    let superseded: string[] = [];
    if (status === 'succeeded') {
      step.state = 'succeeded';
      step.finished_at = at;
      releaseReady(run.state);
    } else if (step.attempts < step.max_attempts) {
      step.state = 'ready';
    } else {
      step.state = 'failed';
      step.finished_at = at;
      superseded = skipUnfinished(run.state, at);
    }
    const outcome = runOutcome(run.state);
    if (outcome !== 'running') {
      run.fm.status = outcome;
      run.state.finished_at = at;
    }
    run.fm.state = run.state;
    draft.put({ frontmatter: run.fm, body: run.record.body });
    await draft.commit();
    await book.leases.batch([sid, ...superseded].map((s) => ({ key: leaseKey(runId, s), value: null })));
    const record = tenant.index.get(runId)!;
    return completeAnswer(book, record, readState(record.frontmatter)!, sid, status, generation, false, nowMs);
  });
}

function completeAnswer(
  book: RunBook,
  record: NodeRecord,
  state: RunState,
  sid: string,
  verdict: Verdict,
  generation: number,
  replayed: boolean,
  nowMs: number,
) {
  const step = state.steps[sid]!;
  return {
    run_id: record.id,
    step: sid,
    status: verdict,
    generation,
    step_state: effectiveState(book, record.id, sid, step, nowMs),
    attempts: step.attempts,
    max_attempts: step.max_attempts,
    run_status: record.status,
    replayed,
    revision: record.revision,
    state: stateView(book, record.id, state, nowMs),
  };
}
