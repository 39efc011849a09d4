/**
 * The `workflows` plugin: workflow runs (SPEC "Workflow runs", DESIGN.md §5). Starting a run
 * records a `run-` node and executes nothing; workers list claimable steps, claim one under a
 * lease with a generation and report a verdict. Approval steps are a person's: they are fed to
 * the decision queue as `approve` items. Tool twin: `run_workflow`.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { workflowsAccess } from './access.js';
import { registerApprovalSource } from '../queue/approvals.js';
import * as api from './api.js';
import { runApprovals } from './approvals.js';
import { runBookOf } from './store.js';

export const workflowsPlugin = definePlugin({
  name: 'workflows',
  access: workflowsAccess,
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
    'run_workflow starts a workflow run; workers take its steps from GET /v1/work, claim one, and report succeeded or failed under the step lease.',
  ],
  tools: [{ operation: api.runWorkflow }],
  init() {
    registerApprovalSource('workflows', runApprovals);
  },
  tenantOpen(tenant) {
    runBookOf(tenant);
  },
});
