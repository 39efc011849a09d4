/**
 * The questions plugin's operation, declared once: input and answer schemas, error statuses,
 * and the function that runs it (operations.ts). The route and the tool `ask_question` are
 * derived from it.
 */
import { answer, defineOperation, NodeId, object, s } from '../../kernel/operation.js';
import * as ops from './operations.js';

export const AskQuestionInput = object(
  {
    text: s.string(`the question (at most ${ops.TEXT_MAX_BYTES} bytes, not blank)`, { pattern: '\\S', maxLength: ops.TEXT_MAX_BYTES }),
    title: s.nullable(
      s.string(`optional one-line title (at most ${ops.TITLE_MAX} characters)`, { maxLength: ops.TITLE_MAX, pattern: '^[^\\r\\n]*$' }),
    ),
    // a list of ids or one id: `type` lists both, so the builders' single-type forms do not fit
    mentions: s.raw<string[] | string | null>({
      type: ['array', 'string', 'null'],
      items: NodeId,
      pattern: NodeId.pattern,
      maxLength: NodeId.maxLength,
      description: `node ids the question is about (at most ${ops.MAX_MENTIONS} distinct; one id may be given as a string); a mentioned person is asked directly`,
    }),
    // No type or pattern here: docs/spec.md answers a malformed slug with 400 bad_request, checked by the operation.
    project: s.any('project slug (repo or grouping, ^[a-z0-9][a-z0-9-]*$; a malformed slug is 400); derived when omitted'),
  },
  ['text'],
);

export const AskQuestionOutput = answer({
  status: s.enum(['created']),
  id: s.string(),
  project: s.stringOrNull(),
  routed_to: s.stringOrNull(),
  via: s.stringOrNull(),
  asker: s.string(),
  revision: s.stringOrNull(),
  warnings: s.array(s.string()),
});

export const askQuestion = defineOperation({
  name: 'ask_question',
  summary: 'File a question, routed to the steward of the closest node',
  description:
    'File a question. It is routed to the steward of the closest node in its relevance neighborhood (the mentioned nodes first, then what lies within two edges of them, then the project), or left unrouted for everyone when no steward is found. Project: explicit slug, else derived from the neighborhood, else your home project. Answer it by writing a node with an `answers` edge to it.',
  input: AskQuestionInput,
  output: AskQuestionOutput,
  errors: [400, 403],
  example: { text: 'Should the login page keep the legacy SSO button?', mentions: ['task-fix-login'] },
  run: ops.askQuestion,
});

export const AnswerQuestionInput = object(
  {
    id: { ...NodeId, description: 'the question id, e.g. question-keep-sso' },
    summary: s.string('the answer, standalone (1-500 characters)', { minLength: 1, maxLength: 500, pattern: '\\S' }),
    body: s.stringOrNull('details (markdown, at most 8192 bytes)'),
    type: s.nullable(s.string('node type of the answer (default dec)', { pattern: '^[a-z0-9][a-z0-9-]*$', maxLength: 100 })),
    answer_id: s.nullable({ ...NodeId, description: 'id of the answer node (default generated)' }),
  },
  ['id', 'summary'],
);

export const AnswerQuestionOutput = answer({
  status: s.enum(['created']),
  id: s.string(),
  question: s.string(),
  question_status: s.string(),
  revision: s.stringOrNull(),
  warnings: s.array(s.string()),
});

export const answerQuestion = defineOperation({
  name: 'answer_question',
  summary: 'Answer a question: the answer node, its answers edge and the question marked answered, in one commit',
  description:
    'Answer a question in one call and one commit: writes the answer node (type default dec; id default <prefix>answer-<question slug>) with an `answers` edge to the question and moves the question to answered. summary: the answer, at most 500 characters; body at most 8192 bytes. Errors: 404 unknown question (nearest ids named), 409 answer_id taken, 422 not a question or bad type.',
  input: AnswerQuestionInput,
  output: AnswerQuestionOutput,
  errors: [409],
  example: { id: 'question-keep-sso', summary: 'Keep the SSO button until the migration ends.' },
  run: ops.answerQuestion,
});
