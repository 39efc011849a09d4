/**
 * Who may call each workflow operation (kernel/access.ts). Approval steps are decided by a
 * person: an agent token is 403 on them; completing a step needs the lease's holder.
 */
import { callers, type AccessMap } from '../../kernel/access.js';

export const workflowsAccess: AccessMap = {
  run_workflow: { callers: callers.anyPerson, person: true, scope: 'any active workflow of the tenant' },
  list_work: { callers: callers.anyPerson, scope: "the tenant's claimable steps, read-only" },
  claim_step: {
    callers: callers.anyPerson,
    person: true,
    scope: 'any ready step of the tenant; an approval step: not an agent token (403)',
  },
  complete_step: {
    callers: callers.anyPerson,
    person: true,
    scope: 'a step whose lease the caller holds (403 otherwise); an approval step: not an agent token (403)',
  },
  get_run: { callers: callers.anyPerson, scope: 'any run of the tenant, read-only' },
};
