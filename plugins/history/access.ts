/** Who may call each history operation (kernel/access.ts): every person credential, read-only. */
import { callers, type AccessMap } from '../../kernel/access.js';

const READ = "any node or commit of the caller's tenant, read-only";

export const historyAccess: AccessMap = {
  get_node_history: { callers: callers.anyPerson, scope: READ },
  get_history_entry: { callers: callers.anyPerson, scope: READ },
  lookup_commit: { callers: callers.anyPerson, scope: READ },
  recent_changes: { callers: callers.anyPerson, scope: "the tenant's change feed, read-only" },
  get_briefing: { callers: callers.anyPerson, scope: 'any project of the tenant, read-only (may file an alias proposal for the caller)' },
  node_history: { callers: callers.anyPerson, scope: READ },
};
