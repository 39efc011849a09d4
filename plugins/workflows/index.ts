/**
 * The `workflows` plugin: workflow runs (docs/spec.md "Workflow runs", docs/design.md §5). Starting a run
 * records a `run-` node and executes nothing; workers list claimable steps, claim one under a
 * lease with a generation and report a verdict. Approval steps are a person's: they are fed to
 * the decision queue as `approve` items. Tool twin: `run_workflow`.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { workflowsAccess } from './access.js';
import { registerApprovalSource } from '../queue/public.js';
import * as api from './api.js';
import { runApprovals } from './approvals.js';
import { runBookOf } from './store.js';

export const workflowsPlugin = definePlugin({
  name: 'workflows',
  description: 'Workflow runs and their steps, recorded (never executed) by the server.',
  access: workflowsAccess,
  version: '1.0.0',
  dependsOn: ['core'],
  // adds its run approvals to the queue's approvals list where the queue is enabled
  optionalDependsOn: ['queue'],
  routes: [
    { method: 'POST', path: '/v1/workflows/:id/run', operation: api.runWorkflow, status: 201 },
    { method: 'GET', path: '/v1/work', operation: api.listWork },
    { method: 'POST', path: '/v1/runs/:id/steps/:sid/claim', operation: api.claimStep },
    { method: 'POST', path: '/v1/runs/:id/steps/:sid/complete', operation: api.completeStep },
    { method: 'GET', path: '/v1/runs/:id', operation: api.getRun },
  ],
  instructions: [
    'Workflow steps: run_workflow starts a run; a worker lists ready steps with list_work, takes one with claim_step {id: run id, sid: step id} and reports complete_step {id, sid, lease: the lease_id from the claim, status: succeeded|failed}; get_run shows a run.',
  ],
  tools: [
    {
      description:
        'Start a run of an active wf- node (records a run- node). inputs: JSON <=8192 bytes; a repeated idempotency_key: the first answer. 409 not active.',
      operation: api.runWorkflow,
    },
    {
      description:
        'Claimable workflow steps, oldest run first (no approvals). capability: steps needing one of these or none; limit <=500.',
      operation: api.listWork,
      annotations: { readOnlyHint: true },
    },
    {
      description: 'Claim step sid of run id (again: renews). 409 not claimable, 403 approval step.',
      operation: api.claimStep,
    },
    {
      description:
        "Report step sid of run id: status succeeded|failed, lease (the claim's lease_id); result JSON <=4096 bytes, log. 409 lease_expired/outcome_conflict; a same retry: replayed.",
      operation: api.completeStep,
    },
    { description: 'A run: status, lineage, step states.', operation: api.getRun, annotations: { readOnlyHint: true } },
  ],
  init() {
    registerApprovalSource('workflows', runApprovals);
  },
  tenantOpen(tenant) {
    runBookOf(tenant);
  },
});
