/**
 * Who may call each comments operation (kernel/access.ts): every credential that acts for a
 * person reads and writes comments (an agent token comments for its owner, with the agent
 * stamped). Editing is the author's alone; deleting the author's, or an admin's.
 */
import { callers, type AccessMap } from '../../kernel/access.js';

const ANY_NODE = "any node of the caller's tenant";

export const commentsAccess: AccessMap = {
  add_comment: { callers: callers.anyPerson, person: true, scope: `${ANY_NODE} (not a comment), attributed to the caller` },
  list_comments: { callers: callers.anyPerson, scope: `${ANY_NODE}, read-only` },
  edit_comment: {
    callers: callers.anyPerson,
    person: true,
    scope: "the caller's own comments (another person's is 403, admins included)",
  },
  delete_comment: { callers: callers.anyPerson, person: true, scope: "the caller's own comments; an admin's credential: any comment" },
};
