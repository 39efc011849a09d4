/**
 * What other plugins may use of identity besides its operations (`api.ts`). A plugin imports
 * another plugin only through its `api.ts` or `public.ts`, and only one it declares
 * (docs/decisions.md, "Plugin edges"; test/kernel/plugin-imports.test.ts).
 */
export { writeImportedPerson } from './operations.js';
export { revokeWithCascade } from './tokens.js';
export { mintAppSessionCredential, personOfEmail, redeemSigninLink, type RedeemResult } from './signin-links.js';
