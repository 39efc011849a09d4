/**
 * The `workflows` plugin: workflow runs (SPEC "Workflow runs", DESIGN.md §5). Starting a run
 * records a `run-` node and executes nothing; workers list claimable steps, claim one under a
 * lease with a generation and report a verdict. Approval steps are a person's: they are fed to
 * the decision queue as `approve` items. Tool twin: `run_workflow`.
 */
import { definePlugin, type RouteRequest } from '../../kernel/plugin.js';
import { registerApprovalSource } from '../queue/approvals.js';
import { runApprovals } from './approvals.js';
import * as ops from './operations.js';
import { runBookOf } from './store.js';

const stepInput = (req: RouteRequest): ops.StepInput => ({ id: req.params.id, sid: req.params.sid, body: req.body });

export const workflowsPlugin = definePlugin({
  name: 'workflows',
  version: '1.0.0',
  dependsOn: ['core'],
  routes: [
    { method: 'POST', path: '/v1/workflows/:id/run', operation: ops.startRun, input: (r) => ({ id: r.params.id, body: r.body }), status: 201 },
    { method: 'GET', path: '/v1/work', operation: ops.listWork, input: (r) => ({ capability: r.query.capability, limit: r.query.limit }) },
    { method: 'POST', path: '/v1/runs/:id/steps/:sid/claim', operation: ops.claimStep, input: stepInput },
    { method: 'POST', path: '/v1/runs/:id/steps/:sid/complete', operation: ops.completeStep, input: stepInput },
    { method: 'GET', path: '/v1/runs/:id', operation: ops.getRun, input: (r) => ({ id: r.params.id }) },
  ],
  instructions: [
    'run_workflow starts a workflow run; workers take its steps from GET /v1/work, claim one, and report succeeded or failed under the step lease.',
  ],
  tools: [
    {
      name: 'run_workflow',
      description:
        'Start a run of an active workflow (wf- node): records a run- node with its lineage and step states and executes nothing; workers then claim its steps. A proposed workflow must first be activated by someone other than its author. A repeated idempotency_key returns the first answer.',
      inputSchema: {
        type: 'object',
        properties: {
          id: { type: 'string', description: 'workflow id, e.g. wf-release' },
          inputs: { description: 'JSON object recorded in the run lineage (at most 8 KB)' },
          idempotency_key: { type: 'string', description: 'retry-safe key: the same key and request returns the original run for 24 h' },
        },
        required: ['id'],
        additionalProperties: false,
      },
      operation: ops.startRun,
      input: (args) => ({ id: args.id, body: { inputs: args.inputs, idempotency_key: args.idempotency_key } }),
    },
  ],
  init() {
    registerApprovalSource('workflows', runApprovals);
  },
  tenantOpen(tenant) {
    runBookOf(tenant);
  },
});
