/** Who may call each questions operation (kernel/access.ts). */
import { callers, type AccessMap } from '../../kernel/access.js';

export const questionsAccess: AccessMap = {
  answer_question: {
    callers: callers.anyPerson,
    person: true,
    scope: 'any question of the tenant: writes the answer node (answers edge) and marks the question answered, attributed to the caller',
  },
  ask_question: { callers: callers.anyPerson, person: true, scope: 'files a question node in the tenant, attributed to the caller' },
};
