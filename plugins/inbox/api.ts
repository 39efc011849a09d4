/**
 * The inbox plugin's operations, each declared once (routes, the MCP tools of the same name
 * and the OpenAPI document read these).
 */
import { defineOperation } from '../../kernel/operation.js';
import * as ops from './operations.js';
import { MarkInboxReadInput, MarkInboxReadOutput, ShowInboxInput, ShowInboxOutput } from './schemas.js';

export const showInbox = defineOperation({
  name: 'show_inbox',
  summary: "The caller's inbox: what needs their attention",
  description:
    'Items made by events for you, newest first: assigned to you, review requested of you, questions routed to you, answers to your questions, mentions of you, your claims taken over or expired, and your claims about to expire. Each has a read flag; unread_count counts the whole inbox. 403 without a person node.',
  input: ShowInboxInput,
  output: ShowInboxOutput,
  errors: [403],
  example: { unread: true, limit: 20 },
  run: ops.showInbox,
});

export const markInboxRead = defineOperation({
  name: 'mark_inbox_read',
  summary: 'Mark inbox items read',
  description:
    'Mark the listed item `ids` read, or `all` of them (up to event `through` when given, so an item that arrived after you looked stays unread). Ids not in your inbox are listed in `skipped`. 403 without a person node.',
  input: MarkInboxReadInput,
  output: MarkInboxReadOutput,
  errors: [403],
  example: { all: true },
  run: ops.markInboxRead,
});
