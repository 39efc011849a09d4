/**
 * What other plugins may use of capture besides its operations (`api.ts`). A plugin imports
 * another plugin only through its `api.ts` or `public.ts`, and only one it declares
 * (docs/decisions.md, "Plugin edges"; test/kernel/plugin-imports.test.ts).
 */
export { readCaptureJournal, type CaptureJournalEntry } from './journal.js';
export { programsOverview } from './explore.js';
