/** Input and answer schemas of the inbox operations (api.ts). */
import { answer, object, s } from '../../kernel/operation.js';
import { INBOX_KINDS } from './model.js';

export const InboxItemSchema = answer(
  {
    id: s.string('`ev-<event id>`, or `exp-<node>-<expiry ms>` for a claim about to expire'),
    kind: s.enum(INBOX_KINDS),
    node: s.string(),
    title: s.string(),
    project: s.stringOrNull(),
    time: s.string('ISO-8601 UTC'),
    actor: s.nullable(answer({ person: s.stringOrNull(), agent: s.stringOrNull(), name: s.string() })),
    event_id: s.integerOrNull('the event behind the item (GET /v1/events); null for a claim about to expire'),
    event_type: s.stringOrNull(),
    link: s.string('the node, relative to the API'),
    read: s.boolean(),
    comment: s.string('a mention in a comment: the comment id (GET /v1/nodes/{id}/comments lists it)'),
  },
  ['id', 'kind', 'node', 'title', 'project', 'time', 'actor', 'event_id', 'event_type', 'link', 'read'],
);

export const ShowInboxInput = object({
  unread: s.boolean('only unread items'),
  kind: s.enum(INBOX_KINDS, 'only items of this kind'),
  limit: s.integer('items to return, newest first (default 50)', { minimum: 1, maximum: 300 }),
});

export const ShowInboxOutput = answer({
  person: s.string(),
  items: s.array(InboxItemSchema),
  unread_count: s.integer('unread items in the whole inbox'),
  total: s.integer('items in the whole inbox (after the kind and unread filters)'),
  through: s.integer('the newest event id the inbox has taken in: mark_inbox_read {all, through} marks up to it'),
});

export const MarkInboxReadInput = object({
  ids: s.array(s.string(undefined, { maxLength: 300 }), 'item ids to mark read', { minItems: 1, maxItems: 500 }),
  all: s.boolean('mark every item read (up to `through` when given)'),
  through: s.integer('with all: the newest event id the reader has seen (show_inbox `through`); items of later events stay unread', {
    minimum: 0,
  }),
});

export const MarkInboxReadOutput = answer({
  marked: s.integer('items that were unread and are read now'),
  skipped: s.array(s.string(), 'ids that are not in your inbox'),
  unread_count: s.integer(),
});
