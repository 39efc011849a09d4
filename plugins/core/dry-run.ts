/**
 * POST /v1/schema/dry-run (`dry_run_schema`): a schema node's hooks run against nodes the
 * author picks, without writing anything (issue 25 item 5). The schema is a node of the graph
 * (`schema_id`, proposed or active) or a draft not yet written (`markdown`, the app's hook
 * editor). Each hook runs in the tenant's sandbox under the tenant's own limits
 * (kernel/hooks.ts `measure`: not cached, not retried), as the kernel would run it on a write:
 * a transition hook gets `{node, from, to, actor}` for the move asked for (`to`) or for every
 * move the live registry allows from the node's status, a validate hook gets `{node}`. The
 * answer is each run's verdict with the CPU time and heap the sandbox measured.
 *
 * It never writes: hooks receive copied plain data and the operation has no write path. Its
 * own owner name (`dry-run:<id>`) keeps a draft's code out of the live hook's sandbox context.
 */
import { CodecError, parseNodeMarkdown } from '../../kernel/codec.js';
import { errors } from '../../kernel/errors.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import { answer, defineOperation, NodeId, object, s, type Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import type { HookRef } from '../../kernel/registry.js';
import { schemaLayerOf } from '../../kernel/tenant.js';
import type { HookOutcome } from '../../sandbox/types.js';

/** nodes one dry run may pick: each costs a sandbox call per hook and move */
export const DRY_RUN_MAX_NODES = 10;
const MARKDOWN_MAX = 64 * 1024;
/** the hook points the kernel calls (docs/design.md §4); others in a draft are reported, not run */
const HOOK_POINTS = ['transition', 'validate'];

export const DryRunInput = object(
  {
    schema_id: s.string('a schema node of the graph (proposed or active) whose hooks to run', {
      pattern: '^[a-z0-9][a-z0-9-]*$',
      maxLength: 200,
    }),
    markdown: s.string('instead of schema_id: a schema node as markdown (--- YAML frontmatter --- body), not written', {
      minLength: 1,
      maxLength: MARKDOWN_MAX,
    }),
    node_ids: s.array(NodeId, `the nodes to run the hooks against (1-${DRY_RUN_MAX_NODES})`, {
      minItems: 1,
      maxItems: DRY_RUN_MAX_NODES,
    }),
    to: s.string("transition hooks: the status to test the move to (default: every move the schema allows from the node's status)", {
      minLength: 1,
      maxLength: 100,
    }),
  },
  ['node_ids'],
);

const Run = answer(
  {
    hook: s.string('the hook point: transition or validate'),
    to: s.stringOrNull('transition: the status moved to'),
    verdict: s.enum(
      ['allow', 'deny', 'valid', 'invalid', 'failed'],
      'allow/deny (transition), valid/invalid (validate), failed (the hook did not answer)',
    ),
    reason: s.stringOrNull('why: the denial reason, the validation errors, or the failure'),
    failure: s.stringOrNull('when failed: timeout, memory, threw, compile, crashed or malformed'),
    cpu_ms: s.nullable(s.number('CPU time the sandbox measured for the call (compile included)')),
    heap_used_bytes: s.integerOrNull("the tenant isolate's heap in use after the call"),
    wall_ms: s.number('wall time of the call, host side'),
  },
  ['hook', 'to', 'verdict', 'reason', 'failure', 'cpu_ms', 'heap_used_bytes', 'wall_ms'],
);

export const DryRunOutput = answer({
  schema_id: s.string(),
  applies_to: s.array(s.string()),
  hooks: s.array(s.string(), 'the hook points of the schema that ran'),
  skipped_hooks: s.array(s.string(), 'hook names the kernel never calls (not run)'),
  written: s.const(false, 'a dry run never writes'),
  limits: answer({ timeout_ms: s.number('CPU time per call'), memory_mb: s.number('heap of the isolate') }),
  results: s.array(
    answer({
      node_id: s.string(),
      type: s.string(),
      status: s.string(),
      applies: s.boolean("whether the schema applies to the node's type (no runs when not)"),
      runs: s.array(Run),
    }),
  ),
});

type RunResult = Static<typeof Run>;

/** The schema to run: its id, the types it applies to and its hooks, from the graph or a draft. */
function schemaOf(ctx: OpContext, input: Static<typeof DryRunInput>): { id: string; appliesTo: string[]; hooks: Record<string, string> } {
  const { tenant } = ctx;
  if ((input.schema_id === undefined) === (input.markdown === undefined))
    throw errors.validation('give exactly one of schema_id (a schema node) or markdown (a draft)', [
      { field: 'schema_id', message: 'exactly one of schema_id or markdown' },
    ]);
  let record: NodeRecord | undefined;
  if (input.schema_id !== undefined) {
    record = tenant.index.get(input.schema_id);
    if (!record) throw errors.notFound(`node ${input.schema_id}`);
  } else {
    let parsed;
    try {
      parsed = parseNodeMarkdown(input.markdown!);
    } catch (err) {
      if (!(err instanceof CodecError)) throw err;
      throw errors.validation(`markdown: ${err.message}`, [{ field: 'markdown', message: err.message }]);
    }
    const fm = parsed.frontmatter;
    const id = typeof fm.id === 'string' && fm.id ? fm.id : 'schema-draft';
    record = {
      id,
      type: typeof fm.type === 'string' ? fm.type : 'schema',
      status: 'proposed',
      title: id,
      project: null,
      path: '',
      frontmatter: fm,
      body: parsed.body,
      markdown: input.markdown!,
      revision: 'draft',
      edges: [],
    };
  }
  if (record.type !== 'schema')
    throw errors.validation(`${record.id} is a ${record.type} node, not a schema node`, [
      { field: 'schema_id', message: 'not a schema node' },
    ]);
  const layer = schemaLayerOf(record);
  if (layer.applies_to.length === 0)
    throw errors.validation(`${record.id} has no applies_to: it names no type to run against`, [
      { field: 'applies_to', message: 'required' },
    ]);
  return { id: record.id, appliesTo: layer.applies_to, hooks: layer.hooks };
}

function failed(outcome: Extract<HookOutcome, { ok: false }>): Pick<RunResult, 'verdict' | 'reason' | 'failure'> {
  return { verdict: 'failed', reason: `${outcome.kind}: ${outcome.message}`, failure: outcome.kind };
}

/** The verdict as the kernel reads it (kernel/hooks.ts): a malformed answer is a failure, as it denies there. */
function verdictOf(hook: string, outcome: HookOutcome): Pick<RunResult, 'verdict' | 'reason' | 'failure'> {
  if (!outcome.ok) return failed(outcome);
  const value = outcome.value as Record<string, unknown> | null;
  if (hook === 'transition') {
    if (!value || typeof value !== 'object' || typeof value.allow !== 'boolean')
      return { verdict: 'failed', reason: 'malformed: expected {allow, reason?}', failure: 'malformed' };
    if (value.allow) return { verdict: 'allow', reason: null, failure: null };
    return {
      verdict: 'deny',
      reason: typeof value.reason === 'string' && value.reason ? value.reason : 'denied (no reason given)',
      failure: null,
    };
  }
  if (!value || typeof value !== 'object' || typeof value.ok !== 'boolean')
    return { verdict: 'failed', reason: 'malformed: expected {ok, errors}', failure: 'malformed' };
  if (value.ok) return { verdict: 'valid', reason: null, failure: null };
  const list = Array.isArray(value.errors) ? value.errors.map((e) => (typeof e === 'string' ? e : JSON.stringify(e))) : [];
  return { verdict: 'invalid', reason: list.length > 0 ? list.join('; ') : 'rejected (no errors given)', failure: null };
}

export async function runDryRun(ctx: OpContext, input: Static<typeof DryRunInput>) {
  const { tenant } = ctx;
  // the people who may propose a schema (a write needs a person node) may try one
  if (!ctx.actor.bound) throw errors.noPersonForbidden('a schema dry run needs a token bound to a person node, as proposing one does');
  const schema = schemaOf(ctx, input);
  const registry = tenant.registry;
  // nodes first: a missing one is a 404 before any hook runs
  const records = [...new Set(input.node_ids)].map((id) => {
    const r = tenant.index.get(id);
    if (!r) throw errors.notFound(`node ${id}`);
    return r;
  });
  const points = Object.keys(schema.hooks).filter((h) => HOOK_POINTS.includes(h));
  const owner = `dry-run:${schema.id}`;
  const results = [];
  for (const record of records) {
    const applies = schema.appliesTo.includes(record.type);
    const runs: RunResult[] = [];
    if (applies) {
      const view: Record<string, unknown> = { ...record.frontmatter, body: record.body };
      for (const hook of points) {
        const ref: HookRef = { owner, hook, source: schema.hooks[hook]! };
        const moves =
          hook === 'transition'
            ? input.to !== undefined
              ? [input.to]
              : (registry.nodeTypes.get(record.type)?.moves[record.status] ?? [])
            : [null];
        for (const to of moves) {
          const hookInput =
            to === null ? { node: view } : { node: { ...view, status: to }, from: record.status, to, actor: ctx.actor.personId };
          const started = performance.now();
          const outcome = await tenant.hooks.measure(ref, hookInput);
          runs.push({
            hook,
            to,
            ...verdictOf(hook, outcome),
            cpu_ms: outcome.usage?.cpuMs ?? null,
            heap_used_bytes: outcome.usage?.heapUsedBytes ?? null,
            wall_ms: Math.round((performance.now() - started) * 100) / 100,
          });
        }
      }
    }
    results.push({ node_id: record.id, type: record.type, status: record.status, applies, runs });
  }
  const limits = tenant.hooks.callLimits;
  return {
    schema_id: schema.id,
    applies_to: schema.appliesTo,
    hooks: points,
    skipped_hooks: Object.keys(schema.hooks).filter((h) => !HOOK_POINTS.includes(h)),
    written: false as const,
    limits: { timeout_ms: limits.timeoutMs ?? 50, memory_mb: limits.memoryMb ?? 16 },
    results,
  };
}

export const dryRunSchema = defineOperation({
  name: 'dry_run_schema',
  summary: "Run a schema's hooks against chosen nodes without writing",
  description:
    "Run a schema node's hooks (schema_id, or a draft as markdown) against up to 10 nodes in the sandbox under the tenant's hook limits, writing nothing: per node and hook, the verdict (allow/deny, valid/invalid, failed with the kind: timeout, memory, threw, ...), the CPU time and the isolate heap the sandbox measured. Transition hooks run for `to`, or every move the live schema allows from the node's status.",
  input: DryRunInput,
  output: DryRunOutput,
  errors: [404],
  example: { schema_id: 'schema-task-review-gate', node_ids: ['task-fix-login'] },
  run: runDryRun,
});
