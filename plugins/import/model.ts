/**
 * The normalized import item: what every source reader (beads, Backlog.md, GitHub; see
 * scripts/import/) produces and POST /v1/import takes. One JSON Schema: the input of the
 * `import_items` operation (api.ts), so a request that fails it is 422 with ajv's error list
 * verbatim before the operation runs.
 */

export const MAX_ITEMS_PER_REQUEST = 2000;

const person = {
  type: 'object',
  properties: { name: { type: 'string', minLength: 1, maxLength: 200 }, email: { type: 'string', maxLength: 200 } },
  additionalProperties: false,
};

const isoDate = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}([T ][0-9:.]+(Z|[+-]\\d{2}:?\\d{2})?)?$' };

export const importItemSchema = {
  type: 'object',
  required: ['source_id', 'type', 'title', 'status'],
  properties: {
    source_id: { type: 'string', minLength: 1, maxLength: 200, description: "the item's id in its source (kept as import_id)" },
    type: { type: 'string', pattern: '^[a-z][a-z0-9-]*$', description: 'a node type of the registry (task, issue, dec, spec, ...)' },
    title: { type: 'string', minLength: 1 },
    summary: { type: 'string' },
    body: { type: 'string' },
    status: { type: 'string', pattern: '^[a-z][a-z0-9-]*$', description: "a status of the node type (the reader maps the source's)" },
    close_reason: { type: 'string', maxLength: 2000 },
    priority: { enum: ['p1', 'p2', 'p3'] },
    labels: { type: 'array', items: { type: 'string', maxLength: 200 }, maxItems: 100 },
    assignees: { type: 'array', items: person, maxItems: 20 },
    owner: person,
    created_at: isoDate,
    updated_at: isoDate,
    closed_at: isoDate,
    project: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]*$' },
    edges: {
      type: 'array',
      maxItems: 1000,
      items: {
        type: 'object',
        required: ['type', 'to', 'to_type'],
        properties: {
          type: { type: 'string', pattern: '^[a-z][a-z0-9-]*$' },
          to: { type: 'string', minLength: 1, maxLength: 200, description: 'source_id of the target item (same source)' },
          to_type: { type: 'string', pattern: '^[a-z][a-z0-9-]*$', description: "the target item's node type" },
          attrs: { type: 'object', additionalProperties: { type: 'string', pattern: '^[A-Za-z0-9_-]+$' } },
        },
        additionalProperties: false,
      },
    },
    fields: { type: 'object', description: 'other source fields kept in the frontmatter (milestone, ...)' },
  },
  additionalProperties: false,
} as const;

export const importRequestSchema = {
  type: 'object',
  required: ['source', 'items'],
  properties: {
    source: { type: 'string', pattern: '^[a-z][a-z0-9]{0,19}$', description: 'source name: beads, backlog, github, ...' },
    items: { type: 'array', minItems: 1, maxItems: MAX_ITEMS_PER_REQUEST, items: importItemSchema },
    deleted: { type: 'integer', minimum: 0, description: "tombstoned items the reader skipped (counted in the summary)" },
  },
  additionalProperties: false,
} as const;

export interface ImportPerson {
  name?: string;
  email?: string;
}

export interface ImportItem {
  source_id: string;
  type: string;
  title: string;
  summary?: string;
  body?: string;
  status: string;
  close_reason?: string;
  priority?: 'p1' | 'p2' | 'p3';
  labels?: string[];
  assignees?: ImportPerson[];
  owner?: ImportPerson;
  created_at?: string;
  updated_at?: string;
  closed_at?: string;
  project?: string;
  edges?: Array<{ type: string; to: string; to_type: string; attrs?: Record<string, string> }>;
  fields?: Record<string, unknown>;
}

export interface ImportRequest {
  source: string;
  items: ImportItem[];
  deleted?: number;
}
