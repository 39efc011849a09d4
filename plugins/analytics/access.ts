/**
 * Who may call each analytics operation (kernel/access.ts). Capture metrics are for admins:
 * `actor.isAdmin`, which an agent token of an admin's agent carries too.
 */
import { callers, type AccessMap } from '../../kernel/access.js';

export const analyticsAccess: AccessMap = {
  analytics: { callers: callers.anyPerson, scope: "the tenant's graph, read-only" },
  get_program: { callers: callers.anyPerson, scope: 'any program node of the tenant, read-only' },
  render_program: { callers: callers.anyPerson, scope: 'any program node of the tenant, read-only' },
  get_capture_metrics: {
    callers: callers.anyPerson,
    admin: true,
    scope: "the tenant's capture metrics, read-only (404 unless SVC_CAPTURE_METRICS=1)",
  },
};
