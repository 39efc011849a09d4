/**
 * The `comments` plugin: discussion on any node (issue 25 item 2). A comment is a `comment-`
 * node (seed-pack/index.ts) with a `discusses` edge to its node and a `mentions` edge to each
 * person it names; the derived `comment.*` events (kernel/events/derive.ts) reach the
 * mentioned people's inboxes (plugins/inbox).
 */
import { definePlugin } from '../../kernel/plugin.js';
import { commentsAccess } from './access.js';
import * as api from './api.js';
import { commentWriteCheck } from './operations.js';

export const commentsPlugin = definePlugin({
  name: 'comments',
  description: 'Markdown comments with @mentions on any node.',
  access: commentsAccess,
  version: '1.0.0',
  dependsOn: [],
  routes: [
    { method: 'POST', path: '/v1/nodes/:id/comments', operation: api.addComment, status: 201 },
    { method: 'GET', path: '/v1/nodes/:id/comments', operation: api.listComments },
    { method: 'PATCH', path: '/v1/comments/:id', operation: api.editComment },
    { method: 'DELETE', path: '/v1/comments/:id', operation: api.deleteComment },
  ],
  // short: tools/list has a 20 KB budget; the operations' own descriptions carry the detail
  tools: [
    { description: 'Comment on node id; markdown, @name notifies.', operation: api.addComment },
    { description: "Node id's comments, oldest first; paged by after.", operation: api.listComments, annotations: { readOnlyHint: true } },
    { description: 'Rewrite your own comment (stale revision: 409).', operation: api.editComment },
    { description: 'Delete your comment (admins: any).', operation: api.deleteComment },
  ],
  nodeWriteChecks: [commentWriteCheck],
});
