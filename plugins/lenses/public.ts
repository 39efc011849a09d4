/**
 * What other plugins may use of lenses besides its operations (`api.ts`). A plugin imports
 * another plugin only through its `api.ts` or `public.ts`, and only one it declares
 * (docs/decisions.md, "Plugin edges"; test/kernel/plugin-imports.test.ts).
 */
export type { LensTree } from './view.js';
export { COOKIE_NAME, ticketAuthenticator, ticketOrgOf, TICKET_MAX_DAYS, verifyTicket } from './tickets.js';
