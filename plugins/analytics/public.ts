/**
 * What other plugins may use of analytics besides its operations (`api.ts`). A plugin imports
 * another plugin only through its `api.ts` or `public.ts`, and only one it declares
 * (docs/decisions.md, "Plugin edges"; test/kernel/plugin-imports.test.ts).
 */
export type { AnalyticsPayload, ProgramPayload } from './schemas.js';
