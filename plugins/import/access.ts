/**
 * Who may call the import (kernel/access.ts): an admin (`actor.isAdmin`, which an agent token of
 * an admin's agent carries too).
 */
import { callers, type AccessMap } from '../../kernel/access.js';

export const importAccess: AccessMap = {
  import_items: { callers: callers.humans, admin: true, scope: 'writes imported nodes (and people) into the tenant' },
};
