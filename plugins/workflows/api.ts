/**
 * The workflows plugin's operations, each declared once: input and answer schemas (schemas.ts),
 * error statuses, and the function that runs it (operations.ts). Routes, the tool
 * `run_workflow` and the OpenAPI document all read these.
 */
import { defineOperation } from '../../kernel/operation.js';
import * as ops from './operations.js';
import {
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
} from './schemas.js';

export const runWorkflow = defineOperation({
  name: 'run_workflow',
  summary: 'Start a run of an active workflow',
  description:
    'Start a run of an active workflow (wf- node): records a run- node with its lineage and step states and executes nothing; workers then claim its steps. A proposed workflow must first be activated by someone other than its author. A repeated idempotency_key returns the first answer.',
  input: RunWorkflowInput,
  output: RunWorkflowOutput,
  errors: [403, 409],
  example: { inputs: { version: '1.4.0' }, idempotency_key: 'release-1.4.0' },
  run: ops.runWorkflow,
});

export const listWork = defineOperation({
  name: 'list_work',
  summary: 'Claimable workflow steps (approval steps excluded)',
  description:
    "Ready steps of running runs, oldest run first, then the workflow step order. Approval steps are excluded: they are a person's, in the decision queue. `capability` keeps steps that need one of the listed capabilities or none.",
  input: ListWorkInput,
  output: ListWorkOutput,
  run: ops.listWork,
});

export const claimStep = defineOperation({
  name: 'claim_step',
  summary: 'Claim a ready step of a run under a lease',
  description:
    'Claim a ready step (or one whose lease lapsed): a lease with the next generation, recorded in the run node; the holder claiming again renews it. A step that is not claimable is 409; an approval step is 403 for an agent.',
  input: ClaimStepInput,
  output: ClaimStepOutput,
  errors: [403, 409],
  example: {},
  run: ops.claimStep,
});

export const completeStep = defineOperation({
  name: 'complete_step',
  summary: 'Report the verdict of a claimed step',
  description:
    'Record `succeeded` or `failed` under the step lease. An expired, superseded or foreign lease is 409 lease_expired; a retry of the same generation that disagrees with the recorded outcome is 409 outcome_conflict (an agreeing retry answers `replayed: true`).',
  input: CompleteStepInput,
  output: CompleteStepOutput,
  errors: [403, 409],
  example: { lease: 'run-release-3:build:1', status: 'succeeded', log: 'built in 42 s' },
  run: ops.completeStep,
});

export const getRun = defineOperation({
  name: 'get_run',
  summary: 'Read one workflow run',
  input: GetRunInput,
  output: GetRunOutput,
  example: { id: 'run-release-3' },
  run: ops.getRun,
});
