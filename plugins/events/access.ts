/**
 * Who may call each events operation (kernel/access.ts): every person credential, read-only.
 * Events of the `admins` audience (people, tokens, plugins, webhooks) reach admins only.
 */
import { callers, type AccessMap } from '../../kernel/access.js';

const SCOPE = "the tenant's events, read-only; admin-audience events only for admins";

export const eventsAccess: AccessMap = {
  get_events: { callers: callers.anyPerson, scope: SCOPE },
  wait_for_events: { callers: callers.anyPerson, scope: SCOPE },
};
