/**
 * The `questions` plugin: POST /v1/questions and its tool twin `ask_question` (docs/spec.md Writes
 * rule 12). Question nodes carry `routed_to`, `asker` and `mentions`, the fields the queue
 * routes its `questions` and `asked` sections by.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { questionsAccess } from './access.js';
import * as api from './api.js';

export const questionsPlugin = definePlugin({
  name: 'questions',
  description: 'Questions filed and routed to a steward.',
  access: questionsAccess,
  version: '1.0.0',
  dependsOn: [],
  routes: [
    { method: 'POST', path: '/v1/questions', operation: api.askQuestion, status: 201 },
    { method: 'POST', path: '/v1/questions/:id/answer', operation: api.answerQuestion, status: 201 },
  ],
  instructions: [
    'Stuck on a decision? ask_question routes it to the steward of the closest node. Answer a question routed to you (show_queue `questions`) with answer_question {id, summary}: it writes the answer node with its `answers` edge and marks the question answered.',
  ],
  tools: [
    {
      description:
        "Ask: routed to the steward nearest the mentions (<=20), else the project's. text <=8192 bytes, title <=500; project derived unless given.",
      operation: api.askQuestion,
    },
    {
      description:
        'Answer question id in one commit: an answer node (type dec unless set; answer_id) with an answers edge; the question becomes answered. summary <=500 chars, body <=8192 bytes.',
      operation: api.answerQuestion,
    },
  ],
});
