/**
 * The comments plugin's operations, each declared once: input and answer schemas, error
 * statuses, and the function that runs it (operations.ts). Routes, tools and the OpenAPI
 * document all read these.
 */
import { answer, defineOperation, extend, NodeId, object, s } from '../../kernel/operation.js';
import * as ops from './operations.js';

/** any node id: one that is no comment of this tenant is 404, as an unknown node is */
const CommentId = { ...NodeId, description: 'comment id, e.g. comment-3f2a9c0d1e4b5a6c' };
const Body = s.string(`markdown, at most ${ops.COMMENT_MAX_BYTES} bytes; @name mentions a person`, {
  minLength: 1,
  maxLength: ops.COMMENT_MAX_BYTES,
});

export const CommentView = answer({
  id: s.string(),
  node: s.string('the node it discusses'),
  body: s.string('markdown'),
  author: s.stringOrNull('person id'),
  author_name: s.stringOrNull(),
  agent: s.stringOrNull('the agent that wrote it for its owner, if one did'),
  created: s.string('ISO-8601 UTC'),
  updated: s.string('ISO-8601 UTC'),
  edited: s.boolean(),
  revision: s.string('echo it to edit_comment to refuse a stale edit'),
  mentions: s.array(
    answer({ person: s.string(), name: s.string(), handles: s.array(s.string(), 'the @handles naming them, without the @') }),
    'the people it mentions (each told in their inbox)',
  ),
});

export const AddCommentInput = object({ id: NodeId, body: Body }, ['id', 'body']);
export const AddCommentOutput = extend(CommentView, {
  unresolved: s.array(s.string(), '@handles that name no person (or several): kept as text'),
  warnings: s.array(s.string()),
});

export const ListCommentsInput = object(
  {
    id: NodeId,
    limit: s.integer(`comments per page, default ${ops.DEFAULT_PAGE}, max ${ops.MAX_PAGE}`, { minimum: 1, maximum: ops.MAX_PAGE }),
    after: s.string('the `next` of the previous page', { maxLength: 400 }),
  },
  ['id'],
);
export const ListCommentsOutput = answer({
  node: s.string(),
  comments: s.array(CommentView, 'oldest first'),
  count: s.integer(),
  total: s.integer('comments on the node'),
  next: s.stringOrNull('pass as `after` for the next page; null on the last'),
});

export const CommentIdInput = object({ id: CommentId }, ['id']);
export const EditCommentInput = object(
  { id: CommentId, body: Body, revision: s.string('the revision you read: a stale one is 409', { maxLength: 100 }) },
  ['id', 'body'],
);
export const DeleteCommentOutput = answer({ status: s.const('deleted'), id: s.string(), node: s.stringOrNull() });

export const addComment = defineOperation({
  name: 'add_comment',
  summary: 'Comment on a node (markdown, @name mentions)',
  description:
    'Comment on node `id`: markdown `body`; `@name` mentions a person (their id, email name, full name or unique first name) and reaches their inbox. One commit by the caller. 404 unknown node, 422 blank or over-long body.',
  input: AddCommentInput,
  output: AddCommentOutput,
  errors: [403],
  example: { id: 'task-fix-login', body: 'Looks good to me, @ada: can you check the redirect?' },
  run: ops.addComment,
});

export const listComments = defineOperation({
  name: 'list_comments',
  summary: "A node's comments, oldest first, a page at a time",
  description: "The comments on node `id`, oldest first: `limit` a page, `after` the previous page's `next`. 404 unknown node.",
  input: ListCommentsInput,
  output: ListCommentsOutput,
  example: { id: 'task-fix-login', limit: 20 },
  run: ops.listComments,
});

export const editComment = defineOperation({
  name: 'edit_comment',
  summary: 'Change the text of your own comment',
  description:
    'Replace the body of your own comment (mentions are read again; new ones are told). `revision` refuses a stale edit (409). 403 when it is not yours, 404 unknown comment.',
  input: EditCommentInput,
  output: AddCommentOutput,
  errors: [403, 409],
  example: { id: 'comment-3f2a9c0d1e4b5a6c', body: 'Fixed the typo, @ada.' },
  run: ops.editComment,
});

export const deleteComment = defineOperation({
  name: 'delete_comment',
  summary: 'Delete your own comment (admins: any)',
  description: 'Delete a comment: its author may, and admins may delete any. History keeps it. 403 otherwise, 404 unknown comment.',
  input: CommentIdInput,
  output: DeleteCommentOutput,
  errors: [403],
  example: { id: 'comment-3f2a9c0d1e4b5a6c' },
  run: ops.deleteComment,
});
