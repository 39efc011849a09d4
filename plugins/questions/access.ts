/** Who may call each questions operation (kernel/access.ts). */
import { callers, type AccessMap } from '../../kernel/access.js';

export const questionsAccess: AccessMap = {
  ask_question: { callers: callers.anyPerson, person: true, scope: 'files a question node in the tenant, attributed to the caller' },
};
