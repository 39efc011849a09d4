/**
 * The capture plugin's inputs and answers as JSON Schema, each the one declaration of its
 * shape: api.ts declares the operations with them and the code takes its types from them
 * (`Static<typeof X>`).
 */
import { answer, NodeId, object, s, type Static } from '../../kernel/operation.js';
import { ProgramProgress } from '../core/public.js';
import { LIST_MAX } from './corrections.js';
import { QUERY_MAX } from './digest.js';
import { KEY_MAX, TEXT_MAX_BYTES } from './request.js';

/** A node id or project slug, or empty (read as absent, as the adapters always did). */
const OptionalId = (description: string) => s.string(description, { pattern: '^([a-z0-9][a-z0-9-]*)?$', maxLength: 200 });
const nullableString = s.stringOrNull();

// ---------------------------------------------------------------- capture

const Text = s.string(`the text to capture (at most ${TEXT_MAX_BYTES / 1024} KB)`, { pattern: '\\S', maxLength: TEXT_MAX_BYTES });
const contextProps = {
  project: OptionalId('project slug for the new nodes'),
  during: OptionalId('node id the work was found during'),
  blocks: OptionalId('existing node id the new work blocks (needs project)'),
  needed_by: s.string('YYYY-MM-DD deadline on the blocks edge (needs blocks)'),
};
export const CaptureContext = object(contextProps, [], { description: 'where the captured work belongs' });
export type CaptureContext = Static<typeof CaptureContext>;
const IdempotencyKey = s.string('a repeated key returns the original result', {
  minLength: 1,
  maxLength: KEY_MAX,
  pattern: '^[^\\u0000-\\u001f\\u007f]*$',
});
const Source = s.string('where the capture comes from, e.g. distill for backstop captures', { pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' });

/** POST /v1/capture: the context is one object. */
export const CaptureTextInput = object({ text: Text, context: CaptureContext, idempotency_key: IdempotencyKey, source: Source }, ['text']);
/** The `capture` tool: the context keys are flat arguments. */
export const CaptureInput = object({ text: Text, ...contextProps, idempotency_key: IdempotencyKey, source: Source }, ['text']);

export const CapturedNode = answer(
  { id: s.string(), type: s.string(), status: s.string(), title: s.string(), project: nullableString, revision: s.string() },
  ['id', 'type', 'status'],
);
export const CaptureResult = answer({
  status: s.enum(['created', 'pending']),
  ids: s.array(s.string()),
  nodes: s.array(CapturedNode),
  summary: s.string(),
  warnings: s.array(s.string()),
});
export type CaptureResult = Static<typeof CaptureResult>;

// ---------------------------------------------------------------- distill report

const Count = (description: string) => s.integer(description, { minimum: 0, maximum: 1_000_000 });

export const ReportDistillInput = object(
  {
    facts: Count('facts the sweep found'),
    captured: Count('facts captured'),
    spooled: Count('facts spooled for later'),
    rejected: Count('facts rejected'),
    project: s.string('project slug of the sweep', { pattern: NodeId.pattern, maxLength: NodeId.maxLength }),
    session: s.string("session id (default: the token's session)", { pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' }),
  },
  ['facts'],
);
export const ReportDistillResult = answer({ status: s.enum(['reported']) });

// ---------------------------------------------------------------- corrections

const IdList = (description: string) => s.array(NodeId, description, { maxItems: LIST_MAX });

export const ProposeCorrectionInput = object(
  {
    target: s.string('node id, project:<slug> or global', { pattern: '^(project:)?[a-z0-9][a-z0-9-]*$', maxLength: 208 }),
    pin: IdList('node ids to add to the digests it fires on'),
    exclude: IdList('node ids to leave out of them'),
    guidance: s.string('advice shown with those digests (at most 4 KB)'),
    title: s.string('a short title (one line)', { maxLength: 500, pattern: '^[^\\r\\n]*$' }),
    id: s.string('ignored: the server generates the id (accepted so that a client echoing one is not refused)'),
  },
  ['target'],
);

// ---------------------------------------------------------------- digest

const Query = s.string('what to look for', { maxLength: QUERY_MAX });
const MinSim = s.number('similarity threshold 0-1 (share of query terms matched), default 0.3', { minimum: 0, maximum: 1 });
const Project = s.string('scope matches to a project (bare slug, repo-<slug> or proj-<slug>)', {
  pattern: NodeId.pattern,
  maxLength: NodeId.maxLength,
});

export const CompileDigestInput = object({
  query: Query,
  root: OptionalId('a node id to digest structurally instead'),
  project: Project,
  min_sim: MinSim,
});
export const CompileDigestResult = answer({ found: s.boolean(), text: s.string() });

export const QueryGraphInput = object({
  query: Query,
  root_id: OptionalId('a node id to digest structurally instead'),
  mode: s.enum(['digest', 'full'], 'digest (default) or full (with bodies)'),
  min_sim: MinSim,
  project: Project,
});
export const QueryGraphResult = answer({ found: s.boolean(), text: s.string(), node_ids: s.array(s.string()), top_sim: s.number() });
export type QueryGraphResult = Static<typeof QueryGraphResult>;

// ---------------------------------------------------------------- explore

export const ExploreGraphInput = object({
  root_id: OptionalId('node id to explore around'),
  depth: s.integer('hops from root_id, 1 (default) or 2', { minimum: 1, maximum: 2 }),
  query: s.string('full-text search', { maxLength: 2000 }),
  include_text: s.boolean('also return `text`, a plain-text copy of the answer (default false)'),
});

const brief = { id: s.string(), type: s.string(), status: s.string(), title: s.string(), project: nullableString };
/** the plain-text copy, sent only with include_text */
const text = s.string();

const Neighborhood = answer(
  {
    mode: s.const('neighborhood'),
    root: answer(brief),
    depth: s.integer(),
    nodes: s.array(answer({ ...brief, distance: s.integer(), done: s.boolean() })),
    edges: s.array(answer({ from: s.string(), type: s.string(), to: s.string() })),
    count: s.integer(),
    truncated: s.boolean(),
    text,
  },
  ['mode', 'root', 'depth', 'nodes', 'edges', 'count', 'truncated'],
);
const Search = answer(
  {
    mode: s.const('search'),
    query: s.string(),
    results: s.array(answer({ ...brief, sim: s.number() })),
    count: s.integer(),
    total: s.integer(),
    text,
  },
  ['mode', 'query', 'results', 'count', 'total'],
);
export const ProgramsOverview = answer(
  {
    mode: s.const('programs'),
    programs: s.array(
      answer({
        id: s.string(),
        title: s.string(),
        status: s.string(),
        summary: s.string(),
        repos: s.array(s.string()),
        stewards: s.array(s.string()),
        progress: ProgramProgress,
      }),
    ),
    count: s.integer(),
    unscoped: ProgramProgress,
    text,
  },
  ['mode', 'programs', 'count', 'unscoped'],
);
export type ProgramsOverview = Static<typeof ProgramsOverview>;
/** explore_graph's three answers, told apart by `mode`. */
export const ExploreGraphResult = s.union([Neighborhood, Search, ProgramsOverview]);
export type ExploreGraphResult = Static<typeof ExploreGraphResult>;
