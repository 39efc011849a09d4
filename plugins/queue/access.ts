/** Who may call each queue operation (kernel/access.ts). Mutes belong to the caller's person. */
import { callers, type AccessMap } from '../../kernel/access.js';

export const queueAccess: AccessMap = {
  show_queue: { callers: callers.anyPerson, scope: "the tenant's work queue, read-only" },
  render_queue: { callers: callers.anyPerson, scope: "the tenant's work queue, read-only" },
  list_mutes: { callers: callers.anyPerson, person: true, scope: "the caller's person's own mute list" },
  add_mute: { callers: callers.anyPerson, person: true, scope: "the caller's person's own mute list (any node of the tenant)" },
  remove_mute: { callers: callers.anyPerson, person: true, scope: "the caller's person's own mute list" },
};
