/** Who may call the gardener sweep (kernel/access.ts). */
import { callers, type AccessMap } from '../../kernel/access.js';

export const gardenerAccess: AccessMap = {
  run_gardener: {
    callers: callers.anyPerson,
    person: true,
    scope: 'the whole tenant: files and resolves finding nodes (needs a person node)',
  },
};
