/** Who may call each inbox operation (kernel/access.ts): an inbox belongs to the caller's person. */
import { callers, type AccessMap } from '../../kernel/access.js';

export const inboxAccess: AccessMap = {
  show_inbox: { callers: callers.anyPerson, person: true, scope: "the caller's person's own inbox" },
  mark_inbox_read: { callers: callers.anyPerson, person: true, scope: "the caller's person's own inbox" },
};
