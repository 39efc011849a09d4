/**
 * The `capture` plugin: raw-text capture (built-in or external ingester), distill reports,
 * corrections and the digest, with their MCP tools `capture`, `propose_correction`,
 * `query_graph` and `explore_graph`.
 */
import { definePlugin } from '../../kernel/plugin.js';
import * as ops from './operations.js';
import { searchOf } from './search.js';
import { objectSchema as obj, stringArg as str } from '../../kernel/tool-schema.js';

const idList = (description: string) => ({ type: 'array', items: { type: 'string' }, description });

/** The capture tool's flat arguments as the REST body: `{text, context, idempotency_key, source}`. */
function captureInput(args: Record<string, unknown>) {
  const context: Record<string, unknown> = {};
  for (const k of ['project', 'during', 'blocks', 'needed_by']) if (args[k] !== undefined) context[k] = args[k];
  return {
    text: args.text,
    ...(Object.keys(context).length > 0 ? { context } : {}),
    ...(args.idempotency_key !== undefined ? { idempotency_key: args.idempotency_key } : {}),
    ...(args.source !== undefined ? { source: args.source } : {}),
  };
}

export const capturePlugin = definePlugin({
  name: 'capture',
  version: '1.0.0',
  dependsOn: ['core'],
  routes: [
    { method: 'POST', path: '/v1/capture', operation: ops.capture },
    { method: 'POST', path: '/v1/distill/report', operation: ops.distillReport },
    { method: 'POST', path: '/v1/corrections', operation: ops.proposeCorrection, status: 201 },
    { method: 'POST', path: '/v1/digest', operation: ops.digest },
  ],
  instructions: [
    'capture turns free text (lines like "task: summary") into draft nodes; query_graph and explore_graph find what already exists before you create more.',
  ],
  tools: [
    {
      name: 'capture',
      description:
        'Capture raw text as work nodes. Each line `<type>: <summary>` (task, issue, dec/decision, spec, question) starts a node; the lines below it are its body. ' +
        'Text that fits no schema is kept as a pending capture for triage. project sets the nodes\' project; during (a node id) links them with relates-to kind=found-during; ' +
        'blocks (an existing node id, needs project) adds a blocks edge from each new node to it, dated by needed_by (YYYY-MM-DD). ' +
        'A repeated idempotency_key returns the original answer without capturing again.',
      inputSchema: obj(
        {
          text: str('the text to capture (at most 8 KB)'),
          project: str('project slug for the new nodes'),
          during: str('node id the work was found during'),
          blocks: str('existing node id the new work blocks (needs project)'),
          needed_by: str('YYYY-MM-DD deadline on the blocks edge'),
          idempotency_key: str('a repeated key returns the original result'),
          source: str('where the capture comes from, e.g. distill for backstop captures'),
        },
        ['text'],
      ),
      operation: ops.capture,
      input: captureInput,
    },
    {
      name: 'propose_correction',
      description:
        'File a correction for digests: target is a node id (fires when it is the digest root or a match), project:<slug> (every digest for that project) or global. ' +
        'pin adds nodes, exclude removes nodes, guidance is shown with the digest. The server generates the id.',
      inputSchema: obj(
        {
          target: str('node id, project:<slug> or global'),
          pin: idList('node ids to add to the digests it fires on'),
          exclude: idList('node ids to leave out of them'),
          guidance: str('advice shown with those digests'),
          title: str('a short title'),
        },
        ['target'],
      ),
      operation: ops.proposeCorrection,
    },
    {
      name: 'query_graph',
      description:
        'Digest of the work graph for a question: full-text matches (similarity >= min_sim, default 0.3) with their links, or the neighborhood of root_id (which wins over query). ' +
        'mode full adds node bodies. Returns {found, text, node_ids, top_sim}; found false is a normal answer.',
      inputSchema: obj({
        query: str('what to look for'),
        root_id: str('a node id to digest structurally instead'),
        mode: { enum: ['digest', 'full'], description: 'digest (default) or full (with bodies)' },
        min_sim: { type: 'number', description: 'similarity threshold 0-1 (share of query terms matched), default 0.3' },
        project: str('scope matches to a project (bare slug, repo-<slug> or proj-<slug>)'),
      }),
      operation: ops.queryGraph,
      annotations: { readOnlyHint: true },
    },
    {
      name: 'explore_graph',
      description:
        'Browse the graph. root_id (+ depth 1-2): the neighborhood along edges both ways. query: full-text matches with similarity. ' +
        'No arguments: the programs overview (every proj- grouping with progress {total, done, active, blocked, open, pct, statuses}).',
      inputSchema: obj({
        root_id: str('node id to explore around'),
        depth: { type: 'integer', description: 'hops from root_id, 1 (default) or 2' },
        query: str('full-text search'),
      }),
      operation: ops.exploreGraph,
      annotations: { readOnlyHint: true },
    },
  ],
  tenantOpen(tenant) {
    // Subscribe to commit events from the start; the search index itself is built on first use.
    searchOf(tenant);
  },
});
