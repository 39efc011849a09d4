/**
 * The queue plugin's schemas: each input field and answer shape declared once. api.ts builds
 * the operations from them; operations.ts, mutes.ts and render.ts take their types from them
 * (`Static<typeof X>`).
 *
 * The queue filters keep the forms the tools always took: `type`, `exclude_type` and
 * `readiness` are a comma-separated string or a list, `limit` and `offset` an integer or its
 * digits. Readiness values and node types are checked by the operation (the live registry
 * decides types; both forms must answer the same 422), `limit`/`offset` are clamped, never
 * rejected (docs/spec.md rule 1), so their schemas carry no bounds.
 */
import { answer, extend, NodeId, object, s } from '../../kernel/operation.js';
import { SUGGEST_CODES } from './book.js';

/** A slug or id, or empty (an empty query value means no filter). */
const optionalSlug = (description: string) => s.string(description, { pattern: '^([a-z0-9][a-z0-9-]*)?$', maxLength: 200 });
const listArg = (description: string) => s.raw<string | string[]>({ type: ['array', 'string'], items: { type: 'string' }, description });
const intArg = (description: string) => s.raw<number | string>({ type: ['integer', 'string'], pattern: '^-?\\d+$', description });

/** The queue filters, shared by show_queue and render_queue. */
export const QueueFilters = object({
  project: optionalSlug('bare repo slug (unions its grouping), repo-<slug> (one repo) or proj-<slug> (a grouping)'),
  assignee: optionalSlug("person id, or 'me': work carried through assigned/stewards edges"),
  type: listArg('node types to include (comma-separated or a list)'),
  exclude_type: listArg('node types to exclude; wins over type'),
  readiness: listArg('agent, human and/or untriaged (comma-separated or a list); another value is 422'),
  limit: intArg('page size, default 20, clamped to 1-100'),
  offset: intArg('skip this many ranked items (use next_offset)'),
});
export const ShowQueueInput = extend(QueueFilters, {
  include_policy: s.boolean('also return the ranking `policy` (default: yes over REST, no for the tool)'),
});

const Counts = s.record(s.integer());

export const QueueItem = answer(
  {
    id: s.string(),
    title: s.string(),
    type: s.string(),
    status: s.string(),
    project: s.stringOrNull(),
    priority: s.stringOrNull(),
    score: s.number(),
    signals: answer({ blocking: s.number(), heat: s.number(), staleness: s.number(), age: s.number() }),
    suggest: s.enum(SUGGEST_CODES),
    why: s.string(),
    readiness: s.enum(['agent', 'human']),
    readiness_reasons: s.array(s.string()),
    lease: answer({ by: s.string(), agent: s.stringOrNull(), session: s.stringOrNull(), state: s.string(), expires_at: s.string() }),
  },
  ['id', 'title', 'type', 'status', 'priority', 'score', 'signals', 'suggest', 'why'],
);
export const SectionEntry = answer(
  {
    id: s.string(),
    type: s.string(),
    title: s.string(),
    status: s.string(),
    project: s.stringOrNull(),
    author: s.stringOrNull(),
    created: s.stringOrNull(),
    routed_to: s.array(s.string()),
    answered_by: s.array(s.string()),
  },
  ['id', 'type', 'title', 'status', 'project', 'author', 'created', 'routed_to'],
);
const Section = s.array(SectionEntry);

export const QueueEnvelope = answer(
  {
    items: s.array(QueueItem),
    count: s.integer(),
    offset: s.integer(),
    returned_count: s.integer(),
    total_count: s.integer(),
    truncated: s.boolean(),
    next_offset: s.integerOrNull(),
    counts_by_type: Counts,
    counts_by_project: Counts,
    counts_by_suggest: Counts,
    counts_by_readiness: answer({ agent: s.integer(), human: s.integer(), untriaged: s.integer() }),
    muted: s.integer(),
    dormant: s.integer(),
    reserved: s.integer(),
    questions: Section,
    asked: Section,
    findings: Section,
    pending: Section,
    reviews: Section,
    section_totals: Counts,
    filters: s.object(),
    policy: s.object(),
    generated_at: s.string(),
  },
  [
    'items',
    'count',
    'offset',
    'returned_count',
    'total_count',
    'truncated',
    'next_offset',
    'counts_by_type',
    'counts_by_project',
    'counts_by_suggest',
    'counts_by_readiness',
    'muted',
    'dormant',
    'reserved',
    'questions',
    'asked',
    'findings',
    'pending',
    'reviews',
    'section_totals',
    'filters',
    'generated_at',
  ],
);

// ---------------------------------------------------------------- mute lists

/** A mute: `until` (YYYY-MM-DD) ends it at the start of that day (UTC); null = until removed. */
export const MuteEntry = answer({ id: s.string(), until: s.stringOrNull(), muted_at: s.string() });
export const ListMutesOutput = answer({ person: s.string(), mutes: s.array(MuteEntry), count: s.integer() });
export const AddMuteInput = object(
  {
    id: s.raw<string>({ ...NodeId, description: 'the node to mute' }),
    until: s.nullable(
      s.string('YYYY-MM-DD (a future date): the mute ends at the start of that day, UTC; omitted or null: until removed', {
        pattern: '^\\d{4}-\\d{2}-\\d{2}$',
      }),
    ),
  },
  ['id'],
);
export const AddMuteOutput = answer({
  status: s.enum(['muted', 'updated']),
  id: s.string(),
  until: s.stringOrNull(),
  muted_at: s.string(),
});
export const RemoveMuteInput = object({ id: s.raw<string>({ ...NodeId, description: 'the muted node' }) }, ['id']);
export const RemoveMuteOutput = answer({ status: s.enum(['unmuted', 'skipped']), id: s.string() });
