/**
 * Who may call the export (kernel/access.ts). `auth=1` adds the credential files and needs an
 * admin: `actor.isAdmin`, which an agent token of an admin's agent carries too.
 */
import { callers, type AccessMap } from '../../kernel/access.js';

export const exportAccess: AccessMap = {
  export_graph: {
    callers: callers.anyPerson,
    scope: "the whole graph of the caller's tenant, read-only",
    when: [
      {
        input: { auth: true },
        callers: callers.humans,
        admin: true,
        note: "adds auth/ (token hashes): an admin's own person credential (no agent token)",
      },
    ],
  },
};
