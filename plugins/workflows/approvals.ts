/**
 * The queue feed: a running run with an approval step that is ready or claimed (waiting
 * for a person's verdict) is an `approve` item of the decision queue. Registered with the
 * queue plugin's approval sources (plugins/queue/approvals.ts) from this plugin's `init`.
 * Pure over the run node, as the queue requires: a lapsed claim still waits for a person.
 */
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Tenant } from '../../kernel/tenant.js';
import type { PendingApproval } from '../queue/public.js';
import { readLineage, readState } from './model.js';

export function runApprovals(_tenant: Tenant, record: NodeRecord): PendingApproval[] {
  if (record.type !== 'run' || record.status !== 'running') return [];
  const state = readState(record.frontmatter);
  if (!state) return [];
  const workflow = readLineage(record.frontmatter)?.workflow ?? 'its workflow';
  const out: PendingApproval[] = [];
  for (const sid of state.order) {
    const step = state.steps[sid]!;
    if (!step.approval || (step.state !== 'ready' && step.state !== 'claimed')) continue;
    out.push({
      reason: `approval step '${sid}' (${step.title}) of ${workflow} waits for a person`,
      why:
        `Approval step '${sid}' (${step.title}) of ${workflow} waits for a person: claim it ` +
        `(POST /v1/runs/${record.id}/steps/${sid}/claim), then complete it succeeded to approve or failed to reject`,
    });
  }
  return out;
}
