/**
 * What other plugins may use of core besides its operations (`api.ts`): the readings of the
 * graph several plugins share. A plugin imports another plugin only through its `api.ts` or
 * `public.ts`, and only one it declares (docs/decisions.md, "Plugin edges";
 * test/kernel/plugin-imports.test.ts).
 */
export { isDone } from './node-view.js';
export { blockedBy, blockEdgeAttrs, blockersOf, isActiveStatus, phaseOf, PHASES, ProgramProgress, type Phase } from './phase.js';
export { resolveScope, type ProjectScope } from './scope.js';
export { orgChoiceProviders, type OrgChoice, type OrgChoicesProvider } from './org-choices.js';
