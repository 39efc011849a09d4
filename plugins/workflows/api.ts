/**
 * The workflows plugin's operations, each declared once: input and answer schemas, error
 * statuses, and the function that runs it (operations.ts). Routes, the tool `run_workflow`
 * and the OpenAPI document all read these.
 */
import { answer, defineOperation, NodeId, object, s, type JsonSchema } from '../../kernel/operation-legacy.js';
import { LIMITS } from './model.js';
import * as ops from './operations.js';

const Iteration: JsonSchema = {
  type: ['integer', 'null'],
  minimum: 0,
  maximum: LIMITS.iterationMax,
  description: `loop iteration the work is for (0-${LIMITS.iterationMax})`,
};
const RunId: JsonSchema = { ...NodeId, description: 'run id, e.g. run-release-3' };
const StepId: JsonSchema = { ...NodeId, description: "step id within the run's workflow" };
const Nullable = (type: string): JsonSchema => ({ type: [type, 'null'] });

const StepLease: JsonSchema = answer(
  {
    lease_id: s.string('echo it as `lease` when reporting the verdict'),
    run_id: s.string(),
    step: s.string(),
    generation: s.integer(),
    by: s.string(),
    agent: Nullable('string'),
    session: Nullable('string'),
    claimed_at: s.string(),
    expires: s.integer('epoch milliseconds'),
    expires_at: s.string(),
    iteration: Nullable('integer'),
  },
  ['lease_id', 'run_id', 'step', 'generation', 'by', 'expires', 'expires_at'],
);
/** The run's `state` (steps keyed by id, their order); its inner structure is not part of docs/spec.md. */
const RunState: JsonSchema = s.object('run state: steps (by id) with their state, generation, attempts, holder and verdicts');

export const runWorkflow = defineOperation({
  name: 'run_workflow',
  summary: 'Start a run of an active workflow',
  description:
    'Start a run of an active workflow (wf- node): records a run- node with its lineage and step states and executes nothing; workers then claim its steps. A proposed workflow must first be activated by someone other than its author. A repeated idempotency_key returns the first answer.',
  input: object(
    {
      id: { ...NodeId, description: 'workflow id, e.g. wf-release' },
      inputs: { type: ['object', 'null'], description: `JSON object recorded in the run lineage (at most ${LIMITS.inputsBytes} bytes)` },
      idempotency_key: {
        type: ['string', 'null'],
        pattern: '^([\\x21-\\x7e]{1,200})?$',
        description: 'retry-safe key (1-200 printable ASCII characters, no spaces; also read from the Idempotency-Key header): the same key and request returns the original run for 24 h',
      },
    },
    ['id'],
  ),
  output: answer({ run_id: s.string(), revision: s.string(), workflow: s.string(), workflow_version: s.string(), state: RunState }),
  errors: [403, 409],
  example: { inputs: { version: '1.4.0' }, idempotency_key: 'release-1.4.0' },
  run: ops.startRun,
});

export const listWork = defineOperation({
  name: 'list_work',
  summary: 'Claimable workflow steps (approval steps excluded)',
  description:
    'Ready steps of running runs, oldest run first, then the workflow step order. Approval steps are excluded: they are a person\'s, in the decision queue. `capability` keeps steps that need one of the listed capabilities or none.',
  input: object({
    capability: s.array(s.string(undefined, { pattern: '^[a-z0-9][a-z0-9-]*$' }), 'capability slugs (comma-separated or repeated)'),
    limit: s.integer('page size, default 100, clamped to 1-500'),
  }),
  output: answer(
    {
      work: s.array(
        answer(
          {
            run_id: s.string(),
            step: s.string(),
            title: s.string(),
            run_title: s.string(),
            workflow: Nullable('string'),
            workflow_version: Nullable('string'),
            project: Nullable('string'),
            capability: Nullable('string'),
            needs: s.array(s.string()),
            generation: s.integer(),
            attempts: s.integer(),
            max_attempts: s.integer(),
            iteration: Nullable('integer'),
            lapsed: s.boolean(),
          },
          ['run_id', 'step', 'generation'],
        ),
      ),
      count: s.integer(),
      generated_at: s.string(),
      total_count: s.integer(),
      truncated: s.boolean(),
    },
    ['work', 'count', 'generated_at'],
  ),
  run: ops.listWork,
});

export const claimStep = defineOperation({
  name: 'claim_step',
  summary: 'Claim a ready step of a run under a lease',
  description:
    'Claim a ready step (or one whose lease lapsed): a lease with the next generation, recorded in the run node; the holder claiming again renews it. A step that is not claimable is 409; an approval step is 403 for an agent.',
  input: object({ id: RunId, sid: StepId, iteration: Iteration }, ['id', 'sid']),
  output: answer({ run_id: s.string(), step: s.string(), lease: StepLease, state: RunState, status: s.enum(['claimed', 'renewed']), revision: s.string() }, ['run_id', 'step', 'lease', 'state']),
  errors: [403, 409],
  example: {},
  run: ops.claimStep,
});

export const completeStep = defineOperation({
  name: 'complete_step',
  summary: 'Report the verdict of a claimed step',
  description:
    'Record `succeeded` or `failed` under the step lease. An expired, superseded or foreign lease is 409 lease_expired; a retry of the same generation that disagrees with the recorded outcome is 409 outcome_conflict (an agreeing retry answers `replayed: true`).',
  input: object(
    {
      id: RunId,
      sid: StepId,
      lease: {
        anyOf: [
          s.string('the lease_id of the claim answer', { minLength: 1 }),
          { type: 'object', properties: { lease_id: s.string(undefined, { minLength: 1 }) }, required: ['lease_id'], description: 'the lease object of the claim answer' },
        ],
        description: 'the lease_id of the claim answer, or that lease object',
      },
      status: s.enum(['succeeded', 'failed'], 'the verdict'),
      result: { description: `any JSON result (at most ${LIMITS.resultBytes} bytes)` },
      log: { type: ['string', 'null'], maxLength: LIMITS.logChars, description: `log text (at most ${LIMITS.logChars} characters)` },
      iteration: Iteration,
    },
    ['id', 'sid', 'lease', 'status'],
  ),
  output: answer(
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
  ),
  errors: [403, 409],
  example: { lease: 'run-release-3:build:1', status: 'succeeded', log: 'built in 42 s' },
  run: ops.completeStep,
});

export const getRun = defineOperation({
  name: 'get_run',
  summary: 'Read one workflow run',
  input: object({ id: RunId }, ['id']),
  output: answer(
    {
      run_id: s.string(),
      status: s.string(),
      project: Nullable('string'),
      title: s.string(),
      initiator: Nullable('string'),
      workflow: Nullable('string'),
      workflow_version: Nullable('string'),
      lineage: s.any('the lineage as recorded: workflow, version, initiator, inputs'),
      state: s.any('the run state (as stored when the node was edited into an unreadable shape)'),
      revision: s.string(),
      timestamps: answer({ created: s.string(), updated: s.string(), finished: s.string() }, []),
    },
    ['run_id', 'status', 'project', 'title', 'initiator', 'workflow', 'workflow_version', 'lineage', 'state', 'revision'],
  ),
  example: { id: 'run-release-3' },
  run: ops.getRun,
});
