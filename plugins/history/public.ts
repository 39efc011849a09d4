/**
 * What other plugins may use of history besides its operations (`api.ts`). A plugin imports
 * another plugin only through its `api.ts` or `public.ts`, and only one it declares
 * (docs/decisions.md, "Plugin edges"; test/kernel/plugin-imports.test.ts).
 */
export { resolveProject, scopeValues } from './projects.js';
export { commitIndexOf, type CommitIndex, type CommitRecord } from './commit-index.js';
