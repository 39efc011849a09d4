/**
 * The `workflows` plugin: workflow runs (SPEC "Workflow runs", DESIGN.md §5). Starting a run
 * records a `run-` node and executes nothing; workers list claimable steps, claim one under a
 * lease with a generation and report a verdict. Approval steps are a person's: they are fed to
 * the decision queue as `approve` items. Tool twin: `run_workflow`.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { registerApprovalSource } from '../queue/approvals.js';
import * as api from './api.js';
import { runApprovals } from './approvals.js';
import { runBookOf } from './store.js';

export const workflowsPlugin = definePlugin({
  name: 'workflows',
  version: '1.0.0',
  dependsOn: ['core'],
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
    { operation: api.runWorkflow },
    { operation: api.listWork, annotations: { readOnlyHint: true } },
    { operation: api.claimStep },
    { operation: api.completeStep },
    { operation: api.getRun, annotations: { readOnlyHint: true } },
  ],
  init() {
    registerApprovalSource('workflows', runApprovals);
  },
  tenantOpen(tenant) {
    runBookOf(tenant);
  },
});
