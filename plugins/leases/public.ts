/**
 * What other plugins may use of leases besides its operations (`api.ts`). A plugin imports
 * another plugin only through its `api.ts` or `public.ts`, and only one it declares
 * (docs/decisions.md, "Plugin edges"; test/kernel/plugin-imports.test.ts).
 */
export { leasesOf, leaseView, type LeaseView, type StoredLease } from './store.js';
