/**
 * The normalized import item: what every source reader (beads, Backlog.md, GitHub; see
 * scripts/import/) produces and POST /v1/import takes. One JSON Schema: the input of the
 * `import_items` operation (api.ts), so a request that fails it is 422 with ajv's error list
 * verbatim before the operation runs.
 */

import { Type } from '@sinclair/typebox';
import { answer, object, s, type Static } from '../../kernel/operation.js';

export const MAX_ITEMS_PER_REQUEST = 2000;

// TypeBox's Object: no `required` key at all where nothing is required (the builders write `required: []`)
const person = Type.Object(
  {
    name: Type.Optional(s.string(undefined, { minLength: 1, maxLength: 200 })),
    email: Type.Optional(s.string(undefined, { maxLength: 200 })),
  },
  { additionalProperties: false },
);

const isoDate = s.string(undefined, { pattern: '^\\d{4}-\\d{2}-\\d{2}([T ][0-9:.]+(Z|[+-]\\d{2}:?\\d{2})?)?$' });
const token = (description?: string) => s.string(description, { pattern: '^[a-z][a-z0-9-]*$' });

export const importItemSchema = object(
  {
    source_id: s.string("the item's id in its source (kept as import_id)", { minLength: 1, maxLength: 200 }),
    type: token('a node type of the registry (task, issue, dec, spec, ...)'),
    title: s.string(undefined, { minLength: 1 }),
    summary: s.string(),
    body: s.string(),
    status: token("a status of the node type (the reader maps the source's)"),
    close_reason: s.string(undefined, { maxLength: 2000 }),
    priority: s.enum(['p1', 'p2', 'p3']),
    labels: s.array(s.string(undefined, { maxLength: 200 }), undefined, { maxItems: 100 }),
    assignees: s.array(person, undefined, { maxItems: 20 }),
    owner: person,
    created_at: isoDate,
    updated_at: isoDate,
    closed_at: isoDate,
    project: s.string(undefined, { pattern: '^[a-z0-9][a-z0-9-]*$' }),
    edges: s.array(
      object(
        {
          type: token(),
          to: s.string('source_id of the target item (same source)', { minLength: 1, maxLength: 200 }),
          to_type: token("the target item's node type"),
          attrs: s.record(s.string(undefined, { pattern: '^[A-Za-z0-9_-]+$' })),
        },
        ['type', 'to', 'to_type'],
      ),
      undefined,
      { maxItems: 1000 },
    ),
    fields: s.object('other source fields kept in the frontmatter (milestone, ...)'),
  },
  ['source_id', 'type', 'title', 'status'],
);

export const importRequestSchema = object(
  {
    source: s.string('source name: beads, backlog, github, ...', { pattern: '^[a-z][a-z0-9]{0,19}$' }),
    items: s.array(importItemSchema, undefined, { minItems: 1, maxItems: MAX_ITEMS_PER_REQUEST }),
    deleted: s.integer('tombstoned items the reader skipped (counted in the summary)', { minimum: 0 }),
  },
  ['source', 'items'],
);

/** One item's outcome in the answer of import_items. */
export const itemResultSchema = answer(
  {
    source_id: s.string("the item's id in its source"),
    id: s.stringOrNull('the node id (null when refused before one was derived)'),
    status: s.enum(['created', 'updated', 'unchanged', 'refused']),
    reason: s.string('why the item was refused'),
    code: s.string('error code of a refusal (invalid_node, conflict, ...)'),
  },
  ['source_id', 'id', 'status'],
);

export type ItemResult = Static<typeof itemResultSchema>;
export type ImportPerson = Static<typeof person>;
export type ImportItem = Static<typeof importItemSchema>;
export type ImportRequest = Static<typeof importRequestSchema>;
