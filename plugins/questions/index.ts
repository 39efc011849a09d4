/**
 * The `questions` plugin: POST /v1/questions and its tool twin `ask_question` (SPEC Writes
 * rule 12). Question nodes carry `routed_to`, `asker` and `mentions`, the fields the queue
 * routes its `questions` and `asked` sections by.
 */
import { definePlugin } from '../../kernel/plugin.js';
import * as ops from './operations.js';

export const questionsPlugin = definePlugin({
  name: 'questions',
  version: '1.0.0',
  dependsOn: ['core'],
  routes: [{ method: 'POST', path: '/v1/questions', operation: ops.askQuestion, status: 201 }],
  instructions: [
    'Stuck on a decision? ask_question routes it to the steward of the closest node; the answer arrives as a node with an `answers` edge.',
  ],
  tools: [
    {
      name: 'ask_question',
      description:
        'File a question. It is routed to the steward of the closest node in its relevance neighborhood (the mentioned nodes first, then what lies within two edges of them, then the project), or left unrouted for everyone when no steward is found. Project: explicit slug, else derived from the neighborhood, else your home project. Answer it by writing a node with an `answers` edge to it.',
      inputSchema: {
        type: 'object',
        properties: {
          text: { type: 'string', description: 'the question (at most 8 KB)' },
          title: { type: 'string', description: 'optional one-line title (at most 500 characters)' },
          mentions: {
            type: ['array', 'string'],
            items: { type: 'string' },
            description: `node ids the question is about (at most ${ops.MAX_MENTIONS}); a mentioned person is asked directly`,
          },
          project: { type: 'string', description: 'project slug (repo or grouping); derived when omitted' },
        },
        required: ['text'],
        additionalProperties: false,
      },
      operation: ops.askQuestion,
    },
  ],
});
