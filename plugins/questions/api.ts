/**
 * The questions plugin's operation, declared once: input and answer schemas, error statuses,
 * and the function that runs it (operations.ts). The route and the tool `ask_question` are
 * derived from it.
 */
import { answer, defineOperation, NodeId, object, s } from '../../kernel/operation.js';
import * as ops from './operations.js';

export const askQuestion = defineOperation({
  name: 'ask_question',
  summary: 'File a question, routed to the steward of the closest node',
  description:
    'File a question. It is routed to the steward of the closest node in its relevance neighborhood (the mentioned nodes first, then what lies within two edges of them, then the project), or left unrouted for everyone when no steward is found. Project: explicit slug, else derived from the neighborhood, else your home project. Answer it by writing a node with an `answers` edge to it.',
  input: object(
    {
      text: s.string(`the question (at most ${ops.TEXT_MAX_BYTES} bytes, not blank)`, { pattern: '\\S', maxLength: ops.TEXT_MAX_BYTES }),
      title: { type: ['string', 'null'], description: `optional one-line title (at most ${ops.TITLE_MAX} characters)`, maxLength: ops.TITLE_MAX, pattern: '^[^\\r\\n]*$' },
      mentions: {
        type: ['array', 'string', 'null'],
        items: NodeId,
        pattern: NodeId.pattern,
        maxLength: NodeId.maxLength,
        description: `node ids the question is about (at most ${ops.MAX_MENTIONS} distinct; one id may be given as a string); a mentioned person is asked directly`,
      },
      // No type or pattern here: SPEC answers a malformed slug with 400 bad_request, checked by the operation.
      project: { description: 'project slug (repo or grouping, ^[a-z0-9][a-z0-9-]*$; a malformed slug is 400); derived when omitted' },
    },
    ['text'],
  ),
  output: answer({
    status: s.enum(['created']),
    id: s.string(),
    project: { type: ['string', 'null'] },
    routed_to: { type: ['string', 'null'] },
    via: { type: ['string', 'null'] },
    asker: s.string(),
    revision: { type: ['string', 'null'] },
    warnings: s.array(s.string()),
  }),
  errors: [400, 403],
  example: { text: 'Should the login page keep the legacy SSO button?', mentions: ['task-fix-login'] },
  run: ops.askQuestion,
});
