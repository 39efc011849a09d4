/**
 * The capture plugin's operations, each declared once: input and answer schemas, error
 * statuses, and the function that runs it. Routes, tools and the OpenAPI document all read
 * these. The capture tool and query_graph take other argument names than their REST twins,
 * so each is its own operation over the same core.
 */
import { answer, defineOperation, NodeId, object, s, WriteResult, type JsonSchema } from '../../kernel/operation-legacy.js';
import type { OpContext } from '../../kernel/plugin.js';
import { LIST_MAX } from './corrections.js';
import { QUERY_MAX } from './digest.js';
import * as ops from './operations.js';
import { KEY_MAX, TEXT_MAX_BYTES } from './request.js';

/** A node id or project slug, or empty (read as absent, as the adapters always did). */
const OptionalId = (description: string): JsonSchema => s.string(description, { pattern: '^([a-z0-9][a-z0-9-]*)?$', maxLength: 200 });
const nullableString = s.stringOrNull();

// ---------------------------------------------------------------- capture

const Text = s.string(`the text to capture (at most ${TEXT_MAX_BYTES / 1024} KB)`, { pattern: '\\S', maxLength: TEXT_MAX_BYTES });
const contextProps = {
  project: OptionalId('project slug for the new nodes'),
  during: OptionalId('node id the work was found during'),
  blocks: OptionalId('existing node id the new work blocks (needs project)'),
  needed_by: s.string('YYYY-MM-DD deadline on the blocks edge (needs blocks)'),
};
const IdempotencyKey = s.string('a repeated key returns the original result', { minLength: 1, maxLength: KEY_MAX, pattern: '^[^\\u0000-\\u001f\\u007f]*$' });
const Source = s.string('where the capture comes from, e.g. distill for backstop captures', { pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' });

const CaptureResult = answer({
  status: s.enum(['created', 'pending']),
  ids: s.array(s.string()),
  nodes: s.array(answer({ id: s.string(), type: s.string(), status: s.string(), title: s.string(), project: nullableString, revision: s.string() }, ['id', 'type', 'status'])),
  summary: s.string(),
  warnings: s.array(s.string()),
});

const captureDescription =
  'Capture raw text as work nodes. Each line `<type>: <summary>` (task, issue, dec/decision, spec, question) starts a node; the lines below it are its body. ' +
  "Text that fits no schema is kept as a pending capture for triage. project sets the nodes' project; during (a node id) links them with relates-to kind=found-during; " +
  'blocks (an existing node id, needs project) adds a blocks edge from each new node to it, dated by needed_by (YYYY-MM-DD). ' +
  'A repeated idempotency_key returns the original answer without capturing again.';

export const captureText = defineOperation({
  name: 'capture_text',
  summary: 'Capture raw text as work nodes',
  description: `${captureDescription} The Idempotency-Key header is the same as idempotency_key (they must agree when both are given).`,
  input: object(
    {
      text: Text,
      context: object(contextProps, [], { description: 'where the captured work belongs' }),
      idempotency_key: IdempotencyKey,
      source: Source,
    },
    ['text'],
  ),
  output: CaptureResult,
  errors: [403, 503],
  example: { text: 'task: Fix the login redirect\nIt loops on Safari.', context: { project: 'web' } },
  run: ops.capture,
});

/** The `capture` tool: the context keys are flat arguments. */
export const capture = defineOperation({
  name: 'capture',
  summary: 'Capture raw text as work nodes',
  description: captureDescription,
  input: object({ text: Text, ...contextProps, idempotency_key: IdempotencyKey, source: Source }, ['text']),
  output: CaptureResult,
  errors: [403, 503],
  example: { text: 'task: Fix the login redirect', project: 'web' },
  run: (ctx: OpContext, args: { text: string; project?: string; during?: string; blocks?: string; needed_by?: string; idempotency_key?: string; source?: string }) => {
    const { text, idempotency_key, source, ...context } = args;
    return ops.capture(ctx, {
      text,
      ...(Object.keys(context).length > 0 ? { context } : {}),
      ...(idempotency_key !== undefined ? { idempotency_key } : {}),
      ...(source !== undefined ? { source } : {}),
    });
  },
});

// ---------------------------------------------------------------- distill report

const Count = (description: string): JsonSchema => s.integer(description, { minimum: 0, maximum: 1_000_000 });

export const distillReport = defineOperation({
  name: 'report_distill',
  summary: "Report a distill sweep's counts (journal only; the graph does not change)",
  description: "A distill sweep's counts go to the capture journal only; zero-fact sweeps are reported too.",
  input: object(
    {
      facts: Count('facts the sweep found'),
      captured: Count('facts captured'),
      spooled: Count('facts spooled for later'),
      rejected: Count('facts rejected'),
      project: { ...NodeId, description: 'project slug of the sweep' },
      session: s.string('session id (default: the token\'s session)', { pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' }),
    },
    ['facts'],
  ),
  output: answer({ status: s.enum(['reported']) }),
  errors: [403],
  example: { facts: 3, captured: 2, rejected: 1, project: 'web' },
  run: ops.distillReport,
});

// ---------------------------------------------------------------- corrections

const IdList = (description: string): JsonSchema => s.array(NodeId, description, { maxItems: LIST_MAX });

export const proposeCorrection = defineOperation({
  name: 'propose_correction',
  summary: 'File a correction for digests (pin, exclude, guidance)',
  description:
    'File a correction for digests: target is a node id (fires when it is the digest root or a match), project:<slug> (every digest for that project) or global. ' +
    'pin adds nodes, exclude removes nodes, guidance is shown with the digest. The server generates the id.',
  input: object(
    {
      target: s.string('node id, project:<slug> or global', { pattern: '^(project:)?[a-z0-9][a-z0-9-]*$', maxLength: 208 }),
      pin: IdList('node ids to add to the digests it fires on'),
      exclude: IdList('node ids to leave out of them'),
      guidance: s.string('advice shown with those digests (at most 4 KB)'),
      title: s.string('a short title (one line)', { maxLength: 500, pattern: '^[^\\r\\n]*$' }),
      id: s.string('ignored: the server generates the id (accepted so that a client echoing one is not refused)'),
    },
    ['target'],
  ),
  output: WriteResult,
  errors: [403],
  example: { target: 'project:web', pin: ['dec-auth-provider'], guidance: 'Login work follows the auth decision.' },
  run: ops.proposeCorrection,
});

// ---------------------------------------------------------------- digest

const Query = s.string('what to look for', { maxLength: QUERY_MAX });
const MinSim = s.number('similarity threshold 0-1 (share of query terms matched), default 0.3', { minimum: 0, maximum: 1 });
const Project = { ...NodeId, description: 'scope matches to a project (bare slug, repo-<slug> or proj-<slug>)' };

export const digest = defineOperation({
  name: 'compile_digest',
  summary: 'Digest of the work graph for a question or around a root node',
  description: 'A compact text about the nodes matching a query (similarity >= min_sim, default 0.3) or about a root node and its neighbors (root wins over query), with the corrections that fire applied. found false is a normal answer; an unknown root is 422.',
  input: object({
    query: Query,
    root: OptionalId('a node id to digest structurally instead'),
    project: Project,
    min_sim: MinSim,
  }),
  output: answer({ found: s.boolean(), text: s.string() }),
  example: { query: 'login redirect' },
  run: ops.digest,
});

export const queryGraph = defineOperation({
  name: 'query_graph',
  summary: 'Digest of the work graph for a question',
  description:
    'Digest of the work graph for a question: full-text matches (similarity >= min_sim, default 0.3) with their links, or the neighborhood of root_id (which wins over query). ' +
    'mode full adds node bodies. Returns {found, text, node_ids, top_sim}; found false is a normal answer.',
  input: object({
    query: Query,
    root_id: OptionalId('a node id to digest structurally instead'),
    mode: s.enum(['digest', 'full'], 'digest (default) or full (with bodies)'),
    min_sim: MinSim,
    project: Project,
  }),
  output: answer({ found: s.boolean(), text: s.string(), node_ids: s.array(s.string()), top_sim: s.number() }),
  run: ops.queryGraph,
});

export const exploreGraph = defineOperation({
  name: 'explore_graph',
  summary: 'Browse the graph: a neighborhood, search matches or the programs overview',
  description:
    'Browse the graph. root_id (+ depth 1-2): the neighborhood along edges both ways. query: full-text matches with similarity. ' +
    'No arguments: the programs overview (every proj- grouping with progress {total, done, active, blocked, open, pct, statuses}). include_text adds a plain-text rendering of the same answer.',
  input: object({
    root_id: OptionalId('node id to explore around'),
    depth: s.integer('hops from root_id, 1 (default) or 2', { minimum: 1, maximum: 2 }),
    query: s.string('full-text search', { maxLength: 2000 }),
    include_text: s.boolean('also return `text`, a plain-text copy of the answer (default false)'),
  }),
  output: answer({ mode: s.enum(['neighborhood', 'search', 'programs']), count: s.integer() }),
  run: ops.exploreGraph,
});
