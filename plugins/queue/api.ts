/**
 * The queue plugin's operations, each declared once: input and answer schemas, error
 * statuses, and the function that runs it (operations.ts, mutes.ts). Routes, the tools
 * `show_queue` and `render_queue` and the OpenAPI document all read these.
 *
 * The queue filters keep the forms the tools always took: `type`, `exclude_type` and
 * `readiness` are a comma-separated string or a list, `limit` and `offset` an integer or its
 * digits. Readiness values and node types are checked by the operation (the live registry
 * decides types; both forms must answer the same 422), `limit`/`offset` are clamped, never
 * rejected (docs/spec.md rule 1), so their schemas carry no bounds.
 */
import { answer, defineOperation, NodeId, object, s, type JsonSchema } from '../../kernel/operation-legacy.js';
import type { OpContext } from '../../kernel/plugin.js';
import type { QueueInput } from './operations.js';
import { addMute as addMuteRun, listMutes as listMutesRun, removeMute as removeMuteRun } from './mutes.js';
import { renderQueue as renderQueueRun, showQueue as showQueueRun, SUGGESTIONS } from './operations.js';

/** A slug or id, or empty (an empty query value means no filter). */
const optionalSlug = (description: string): JsonSchema => ({ type: 'string', pattern: '^([a-z0-9][a-z0-9-]*)?$', maxLength: 200, description });
const listArg = (description: string): JsonSchema => ({ type: ['array', 'string'], items: { type: 'string' }, description });
const intArg = (description: string): JsonSchema => ({ type: ['integer', 'string'], pattern: '^-?\\d+$', description });

const queueInput = object({
  project: optionalSlug('bare repo slug (unions its grouping), repo-<slug> (one repo) or proj-<slug> (a grouping)'),
  assignee: optionalSlug("person id, or 'me': work carried through assigned/stewards edges"),
  type: listArg('node types to include (comma-separated or a list)'),
  exclude_type: listArg('node types to exclude; wins over type'),
  readiness: listArg('agent, human and/or untriaged (comma-separated or a list); another value is 422'),
  limit: intArg('page size, default 20, clamped to 1-100'),
  offset: intArg('skip this many ranked items (use next_offset)'),
});

const Nullable = (type: string): JsonSchema => ({ type: [type, 'null'] });
const Counts: JsonSchema = { type: 'object', additionalProperties: { type: 'integer' } };

const QueueItem: JsonSchema = answer(
  {
    id: s.string(),
    title: s.string(),
    type: s.string(),
    status: s.string(),
    project: Nullable('string'),
    priority: Nullable('string'),
    score: s.number(),
    signals: answer({ blocking: s.number(), heat: s.number(), staleness: s.number(), age: s.number() }),
    suggest: s.enum([...SUGGESTIONS]),
    why: s.string(),
    readiness: s.enum(['agent', 'human']),
    readiness_reasons: s.array(s.string()),
    lease: answer({ by: s.string(), agent: Nullable('string'), session: Nullable('string'), state: s.string(), expires_at: s.string() }),
  },
  ['id', 'title', 'type', 'status', 'priority', 'score', 'signals', 'suggest', 'why'],
);
const SectionEntry: JsonSchema = answer(
  {
    id: s.string(),
    type: s.string(),
    title: s.string(),
    status: s.string(),
    project: Nullable('string'),
    author: Nullable('string'),
    created: Nullable('string'),
    routed_to: s.array(s.string()),
    answered_by: s.array(s.string()),
  },
  ['id', 'type', 'title', 'status'],
);
const Section: JsonSchema = s.array(SectionEntry);

const QueueEnvelope: JsonSchema = answer(
  {
    items: s.array(QueueItem),
    count: s.integer(),
    offset: s.integer(),
    returned_count: s.integer(),
    total_count: s.integer(),
    truncated: s.boolean(),
    next_offset: Nullable('integer'),
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
    'questions',
    'asked',
    'findings',
    'pending',
    'reviews',
    'generated_at',
  ],
);

export const showQueue = defineOperation({
  name: 'show_queue',
  summary: 'The ranked decision queue',
  description:
    'The ranked decision queue: work items with score, signals, a suggestion (do/blocked/triage/close/approve) and a one-line why, plus questions for you, questions you asked, findings, pending captures and reviews requested from you. Page with offset=next_offset. include_policy adds the ranking weights.',
  input: { ...queueInput, properties: { ...(queueInput.properties as object), include_policy: s.boolean('also return the ranking `policy` (default: yes over REST, no for the tool)') } },
  output: QueueEnvelope,
  // the ~500-byte ranking policy is the same on every call: REST keeps it unless include_policy=false, the tool sends it when asked
  run: async (ctx: OpContext, input: QueueInput & { include_policy?: boolean }) => {
    const { include_policy, ...query } = input;
    const envelope = await showQueueRun(ctx, query);
    if (include_policy ?? ctx.via === 'rest') return envelope;
    const { policy: _policy, ...lean } = envelope;
    return lean as typeof envelope; // the declared output lists policy as optional
  },
});

export const renderQueue = defineOperation({
  name: 'render_queue',
  summary: 'The decision queue rendered as markdown',
  description: 'The same decision queue as show_queue, rendered as markdown for a person to read.',
  input: queueInput,
  produces: ['text/markdown'],
  run: renderQueueRun,
});

// ---------------------------------------------------------------- mute lists

const MuteEntry: JsonSchema = answer({ id: s.string(), until: Nullable('string'), muted_at: s.string() });

export const listMutes = defineOperation({
  name: 'list_mutes',
  summary: "The caller's active mute list",
  description: 'The nodes you muted out of your queue items (counted as `muted`), with their optional end date. 403 without a person node.',
  input: object({}),
  output: answer({ person: s.string(), mutes: s.array(MuteEntry), count: s.integer() }),
  errors: [403],
  run: listMutesRun,
});

export const addMute = defineOperation({
  name: 'add_mute',
  summary: 'Mute a node out of your queue items',
  description: 'Mute a node out of your queue items until you unmute it or until the start (UTC) of the `until` date. Muting again updates the date.',
  input: object(
    {
      id: { ...NodeId, description: 'the node to mute' },
      until: { type: ['string', 'null'], pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'YYYY-MM-DD (a future date): the mute ends at the start of that day, UTC; omitted or null: until removed' },
    },
    ['id'],
  ),
  output: answer({ status: s.enum(['muted', 'updated']), id: s.string(), until: Nullable('string'), muted_at: s.string() }),
  errors: [403],
  example: { id: 'task-fix-login', until: '2026-12-24' },
  run: addMuteRun,
});

export const removeMute = defineOperation({
  name: 'remove_mute',
  summary: 'Unmute a node',
  description: 'Take a node off your mute list; a node that is not muted is `skipped`.',
  input: object({ id: { ...NodeId, description: 'the muted node' } }, ['id']),
  output: answer({ status: s.enum(['unmuted', 'skipped']), id: s.string() }),
  errors: [403],
  run: removeMuteRun,
});
