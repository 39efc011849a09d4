/**
 * The workflows plugin's schemas: each input field and answer shape declared once. api.ts
 * builds the operations from them; operations.ts and store.ts take their types from them
 * (`Static<typeof X>`).
 */
import { answer, NodeId, object, s } from '../../kernel/operation.js';
import { LIMITS } from './model.js';

const Iteration = s.nullable(
  s.integer(`loop iteration the work is for (0-${LIMITS.iterationMax})`, { minimum: 0, maximum: LIMITS.iterationMax }),
);
const RunId = s.raw<string>({ ...NodeId, description: 'run id, e.g. run-release-3' });
const StepId = s.raw<string>({ ...NodeId, description: "step id within the run's workflow" });

export const StepLease = answer(
  {
    lease_id: s.string('echo it as `lease` when reporting the verdict'),
    run_id: s.string(),
    step: s.string(),
    generation: s.integer(),
    by: s.string(),
    agent: s.stringOrNull(),
    session: s.stringOrNull(),
    claimed_at: s.string(),
    expires: s.integer('epoch milliseconds'),
    expires_at: s.string(),
    iteration: s.integerOrNull(),
  },
  ['lease_id', 'run_id', 'step', 'generation', 'by', 'expires', 'expires_at'],
);
/** The run's `state` (steps keyed by id, their order); its inner structure is not part of docs/spec.md. */
const RunState = s.object('run state: steps (by id) with their state, generation, attempts, holder and verdicts');

export const RunWorkflowInput = object(
  {
    id: s.raw<string>({ ...NodeId, description: 'workflow id, e.g. wf-release' }),
    inputs: s.nullable(s.object(`JSON object recorded in the run lineage (at most ${LIMITS.inputsBytes} bytes)`)),
    idempotency_key: s.nullable(
      s.string(
        'retry-safe key (1-200 printable ASCII characters, no spaces; also read from the Idempotency-Key header): the same key and request returns the original run for 24 h',
        { pattern: '^([\\x21-\\x7e]{1,200})?$' },
      ),
    ),
  },
  ['id'],
);
export const RunWorkflowOutput = answer({
  run_id: s.string(),
  revision: s.string(),
  workflow: s.string(),
  workflow_version: s.string(),
  state: RunState,
});

export const ListWorkInput = object({
  capability: s.array(s.string(undefined, { pattern: '^[a-z0-9][a-z0-9-]*$' }), 'capability slugs (comma-separated or repeated)'),
  limit: s.integer('page size, default 100, clamped to 1-500'),
});
/** A claimable step; `generation` is the last lease's (a claim issues generation + 1), `lapsed`: a former holder's lease lapsed. */
export const WorkItem = answer(
  {
    run_id: s.string(),
    step: s.string(),
    title: s.string(),
    run_title: s.string(),
    workflow: s.stringOrNull(),
    workflow_version: s.stringOrNull(),
    project: s.stringOrNull(),
    capability: s.stringOrNull(),
    needs: s.array(s.string()),
    generation: s.integer(),
    attempts: s.integer(),
    max_attempts: s.integer(),
    iteration: s.integerOrNull(),
    lapsed: s.boolean(),
  },
  ['run_id', 'step', 'generation'],
);
export const ListWorkOutput = answer(
  { work: s.array(WorkItem), count: s.integer(), generated_at: s.string(), total_count: s.integer(), truncated: s.boolean() },
  ['work', 'count', 'generated_at'],
);

export const ClaimStepInput = object({ id: RunId, sid: StepId, iteration: Iteration }, ['id', 'sid']);
export const ClaimStepOutput = answer(
  { run_id: s.string(), step: s.string(), lease: StepLease, state: RunState, status: s.enum(['claimed', 'renewed']), revision: s.string() },
  ['run_id', 'step', 'lease', 'state'],
);

export const CompleteStepInput = object(
  {
    id: RunId,
    sid: StepId,
    lease: s.raw<string | { lease_id: string }>({
      anyOf: [
        s.string('the lease_id of the claim answer', { minLength: 1 }),
        {
          type: 'object',
          properties: { lease_id: s.string(undefined, { minLength: 1 }) },
          required: ['lease_id'],
          description: 'the lease object of the claim answer',
        },
      ],
      description: 'the lease_id of the claim answer, or that lease object',
    }),
    status: s.enum(['succeeded', 'failed'], 'the verdict'),
    result: s.any(`any JSON result (at most ${LIMITS.resultBytes} bytes)`),
    log: s.nullable(s.string(`log text (at most ${LIMITS.logChars} characters)`, { maxLength: LIMITS.logChars })),
    iteration: Iteration,
  },
  ['id', 'sid', 'lease', 'status'],
);
export const CompleteStepOutput = answer(
  {
    run_id: s.string(),
    step: s.string(),
    status: s.enum(['succeeded', 'failed']),
    generation: s.integer(),
    step_state: s.string(),
    attempts: s.integer(),
    max_attempts: s.integer(),
    run_status: s.string(),
    replayed: s.boolean(),
    revision: s.string(),
    state: RunState,
  },
  ['run_id', 'step', 'status', 'generation', 'step_state', 'run_status', 'replayed', 'state'],
);

export const GetRunInput = object({ id: RunId }, ['id']);
export const GetRunOutput = answer(
  {
    run_id: s.string(),
    status: s.string(),
    project: s.stringOrNull(),
    title: s.string(),
    initiator: s.stringOrNull(),
    workflow: s.stringOrNull(),
    workflow_version: s.stringOrNull(),
    lineage: s.any('the lineage as recorded: workflow, version, initiator, inputs'),
    state: s.any('the run state (as stored when the node was edited into an unreadable shape)'),
    revision: s.string(),
    timestamps: answer({ created: s.string(), updated: s.string(), finished: s.string() }, []),
  },
  ['run_id', 'status', 'project', 'title', 'initiator', 'workflow', 'workflow_version', 'lineage', 'state', 'revision'],
);
