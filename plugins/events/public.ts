/**
 * What other plugins may use of events besides its operations (`api.ts`): the stream and the
 * wait under their own authentication (the app's session cookie, an MCP session), with the
 * same rules, limits and bytes as GET /v1/events. A plugin imports another plugin only through
 * its `api.ts` or `public.ts`, and only one it declares (test/kernel/plugin-imports.test.ts).
 */
export { openEventStream } from './api.js';
export { answerAfter, type WaitAnswer, type WaitInput } from './wait.js';
export { selectionFor, type EventQuery, type Selection } from './select.js';
export { frame } from './sse.js';
