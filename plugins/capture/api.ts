/**
 * The capture plugin's operations, each declared once: input and answer schemas, error
 * statuses, and the function that runs it. Routes, tools and the OpenAPI document all read
 * these. The capture tool and query_graph take other argument names than their REST twins,
 * so each is its own operation over the same core.
 */
import { defineOperation, WriteResult } from '../../kernel/operation.js';
import * as ops from './operations.js';
import {
  CaptureInput,
  CaptureResult,
  CaptureTextInput,
  CompileDigestInput,
  CompileDigestResult,
  ExploreGraphInput,
  ExploreGraphResult,
  ProposeCorrectionInput,
  QueryGraphInput,
  QueryGraphResult,
  ReportDistillInput,
  ReportDistillResult,
} from './schemas.js';

// ---------------------------------------------------------------- capture

const captureDescription =
  'Capture raw text as work nodes. Each line `<type>: <summary>` (task, issue, dec/decision, spec, question) starts a node; the lines below it are its body. ' +
  "Text that fits no schema is kept as a pending capture for triage. project sets the nodes' project; during (a node id) links them with relates-to kind=found-during; " +
  'blocks (an existing node id, needs project) adds a blocks edge from each new node to it, dated by needed_by (YYYY-MM-DD). ' +
  'A repeated idempotency_key returns the original answer without capturing again.';

export const captureText = defineOperation({
  name: 'capture_text',
  summary: 'Capture raw text as work nodes',
  description: `${captureDescription} The Idempotency-Key header is the same as idempotency_key (they must agree when both are given).`,
  input: CaptureTextInput,
  output: CaptureResult,
  errors: [403, 503],
  example: { text: 'task: Fix the login redirect\nIt loops on Safari.', context: { project: 'web' } },
  run: ops.captureText,
});

/** The `capture` tool: the context keys are flat arguments. */
export const capture = defineOperation({
  name: 'capture',
  summary: 'Capture raw text as work nodes',
  description: captureDescription,
  input: CaptureInput,
  output: CaptureResult,
  errors: [403, 503],
  example: { text: 'task: Fix the login redirect', project: 'web' },
  run: (ctx, args) => {
    const { text, idempotency_key, source, ...context } = args;
    return ops.captureText(ctx, {
      text,
      ...(Object.keys(context).length > 0 ? { context } : {}),
      ...(idempotency_key !== undefined ? { idempotency_key } : {}),
      ...(source !== undefined ? { source } : {}),
    });
  },
});

// ---------------------------------------------------------------- distill report

export const reportDistill = defineOperation({
  name: 'report_distill',
  summary: "Report a distill sweep's counts (journal only; the graph does not change)",
  description: "A distill sweep's counts go to the capture journal only; zero-fact sweeps are reported too.",
  input: ReportDistillInput,
  output: ReportDistillResult,
  errors: [403],
  example: { facts: 3, captured: 2, rejected: 1, project: 'web' },
  run: ops.reportDistill,
});

// ---------------------------------------------------------------- corrections

export const proposeCorrection = defineOperation({
  name: 'propose_correction',
  summary: 'File a correction for digests (pin, exclude, guidance)',
  description:
    'File a correction for digests: target is a node id (fires when it is the digest root or a match), project:<slug> (every digest for that project) or global. ' +
    'pin adds nodes, exclude removes nodes, guidance is shown with the digest. The server generates the id.',
  input: ProposeCorrectionInput,
  output: WriteResult,
  errors: [403],
  example: { target: 'project:web', pin: ['dec-auth-provider'], guidance: 'Login work follows the auth decision.' },
  run: ops.proposeCorrection,
});

// ---------------------------------------------------------------- digest

export const compileDigest = defineOperation({
  name: 'compile_digest',
  summary: 'Digest of the work graph for a question or around a root node',
  description:
    'A compact text about the nodes matching a query (similarity >= min_sim, default 0.3) or about a root node and its neighbors (root wins over query), with the corrections that fire applied. found false is a normal answer; an unknown root is 422.',
  input: CompileDigestInput,
  output: CompileDigestResult,
  example: { query: 'login redirect' },
  run: ops.compileDigest,
});

export const queryGraph = defineOperation({
  name: 'query_graph',
  summary: 'Digest of the work graph for a question',
  description:
    'Digest of the work graph for a question: full-text matches (similarity >= min_sim, default 0.3) with their links, or the neighborhood of root_id (which wins over query). ' +
    'mode full adds node bodies. Returns {found, text, node_ids, top_sim}; found false is a normal answer.',
  input: QueryGraphInput,
  output: QueryGraphResult,
  run: ops.queryGraph,
});

export const exploreGraph = defineOperation({
  name: 'explore_graph',
  summary: 'Browse the graph: a neighborhood, search matches or the programs overview',
  description:
    'Browse the graph. root_id (+ depth 1-2): the neighborhood along edges both ways. query: full-text matches with similarity. ' +
    'No arguments: the programs overview (every proj- grouping with progress {total, done, active, blocked, open, pct, statuses}). include_text adds a plain-text rendering of the same answer.',
  input: ExploreGraphInput,
  output: ExploreGraphResult,
  run: ops.exploreGraph,
});
