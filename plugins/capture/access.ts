/** Who may call each capture operation (kernel/access.ts): every person credential; writes are attributed to it. */
import { callers, type AccessMap } from '../../kernel/access.js';

export const captureAccess: AccessMap = {
  capture_text: { callers: callers.anyPerson, person: true, scope: 'writes captured nodes into the tenant, attributed to the caller' },
  report_distill: { callers: callers.anyPerson, person: true, scope: "the tenant's capture metrics journal" },
  propose_correction: { callers: callers.anyPerson, person: true, scope: 'files a correction proposal node in the tenant' },
  compile_digest: { callers: callers.anyPerson, scope: "the tenant's graph, read-only" },
  capture: { callers: callers.anyPerson, person: true, scope: 'writes captured nodes into the tenant, attributed to the caller' },
  query_graph: { callers: callers.anyPerson, scope: "the tenant's graph, read-only" },
  explore_graph: { callers: callers.anyPerson, scope: "the tenant's graph, read-only" },
};
