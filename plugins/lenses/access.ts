/**
 * Who may call each lens operation (kernel/access.ts). The render route alone also takes a
 * render ticket: for the lens it was minted for, read-only, its params pinned (403 when changed).
 */
import { callers, type AccessMap } from '../../kernel/access.js';

export const lensesAccess: AccessMap = {
  list_lenses: { callers: callers.anyPerson, scope: "the tenant's saved views, read-only" },
  render_lens_page: {
    callers: [...callers.anyPerson, 'ticket'],
    scope: 'any saved view of the tenant, read-only; a ticket: only its own lens, with the params pinned at mint',
  },
  mint_render_ticket: {
    callers: callers.anyPerson,
    scope:
      'any saved view of the tenant; the ticket renders as the caller, so a token without a person node is 422 `no_person` (docs/spec.md), not 403',
  },
  render_lens: { callers: callers.anyPerson, scope: 'any saved view of the tenant, read-only' },
  apply_lens_action: {
    callers: callers.anyPerson,
    person: true,
    scope: 'items of a saved view of the tenant (the action writes the item, as set_status/set_priority would)',
  },
};
