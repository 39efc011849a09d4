/**
 * The leases plugin's operations, each declared once: input and answer schemas, error
 * statuses, and the function that runs it (operations.ts). Routes, tools and the OpenAPI
 * document all read these.
 *
 * The REST routes have one operation each (`claim_node`, `claim_batch`, ...). The tools
 * `claim`, `renew` and `release` take `{id}` or `{ids}` and are operations of their own that
 * hand the arguments on to the route's operation through `invoke`, so REST and MCP reject the
 * same bad input with the same bytes; `extend` and `reserve` are the route operations as is.
 */
import { answer, defineOperation, invoke, NodeId, object, s, type JsonSchema } from '../../kernel/operation-legacy.js';
import type { OpContext } from '../../kernel/plugin.js';
import { errors } from '../../kernel/errors.js';
import * as ops from './operations.js';

const MAX = ops.MAX_BATCH_IDS;

/** A run/session id; null (or omitted) keeps the lease person-scoped. */
const Session: JsonSchema = {
  type: ['string', 'null'],
  pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$',
  description: 'run/session id (1-128 of [A-Za-z0-9._:-], starting with a letter or digit): binds the lease to that run',
};
const WorkId: JsonSchema = { ...NodeId, description: 'work node id, e.g. task-fix-login' };
/** Batch ids are checked one by one: a malformed or unknown id lands in `failed`, the rest still land. */
const BatchIds: JsonSchema = s.array(s.string(), `work node ids (at most ${MAX}; duplicates collapse; each is checked on its own and a bad one lands in failed)`, {
  minItems: 1,
  maxItems: MAX,
});

const LeaseRecord: JsonSchema = answer(
  {
    node_id: s.string(),
    by: s.string(),
    expires: s.integer('epoch milliseconds'),
    expires_at: s.string('the same instant, ISO 8601'),
    session: { type: ['string', 'null'] },
    claimed_at: s.string(),
    agent: { type: ['string', 'null'] },
    state: s.enum(['live', 'reserved']),
  },
  ['node_id', 'by', 'expires', 'expires_at', 'session', 'claimed_at'],
);
const EdgeResult: JsonSchema = s.nullable(
  answer({
    type: s.enum(['assigned']),
    from: s.string(),
    to: s.string(),
    status: s.enum(['created', 'skipped', 'deleted']),
    revision: { type: ['string', 'null'] },
  }),
);
const Failure: JsonSchema = answer({ node_id: s.string(), code: s.string(), message: s.string(), holder: s.string() }, ['node_id', 'code', 'message']);
const NodeIds: JsonSchema = s.array(s.string());
/** Writes others made to nodes you held, waiting since your last lease call (each delivered once). */
const LeaseNotices: JsonSchema = s.array(
  answer(
    {
      node_id: s.string(),
      op: s.string('the write operation (put_node, patch_node, set_status, ...)'),
      by: s.string('the writer (person id)'),
      by_name: s.stringOrNull(),
      agent: s.stringOrNull(),
      at: s.string(),
      status: s.string('the node status after the write'),
      forced: s.boolean(),
      released: s.boolean('the write finished the node and your lease was released'),
      message: s.string(),
    },
  ),
  'writes others made to nodes you held since your last lease call; present only when some are waiting',
);
const withLeaseNotices = (schema: JsonSchema): JsonSchema => ({ ...schema, properties: { ...(schema.properties as object), lease_notices: LeaseNotices } });
const TERMINAL_NOTE = 'On a finished node (terminal status, resolved or superseded) it is 409 lease_lost with details.reason terminal and your lease is released: stop heartbeating it.';

// ---------------------------------------------------------------- single routes

export const claimNode = defineOperation({
  name: 'claim_node',
  summary: 'Claim one work node with a heartbeat lease',
  description:
    'Claim one work node: a heartbeat lease for the tenant claim TTL (claiming again renews) and an assigned edge on first claim. 409 `conflict` names the holder when someone else has it, or when the node is done.',
  input: object(
    {
      id: WorkId,
      session: Session,
      nonce: s.string('dispatch nonce, echoed back (single line, at most 200 characters)', { minLength: 1, maxLength: 200, pattern: '^[^\\r\\n]*$' }),
      force: s.boolean("admins only: take over another holder's live lease (the answer names previous_holder)"),
    },
    ['id'],
  ),
  output: answer(
    { ok: { const: true }, status: s.enum(['claimed', 'renewed']), lease: LeaseRecord, edge: EdgeResult, nonce: s.string(), previous_holder: s.string(), lease_notices: LeaseNotices },
    ['ok', 'status', 'lease', 'edge'],
  ),
  errors: [403, 409],
  example: { session: 'run-42' },
  run: ops.claim,
});

export const renewNode = defineOperation({
  name: 'renew_node',
  summary: 'Renew one lease you hold (heartbeat)',
  description: 'Heartbeat: bump the expiry of a lease you hold to now + claim TTL (never shortened); a reservation turns back into a live lease. No graph commit. 409 `lease_lost` names the current holder. ' + TERMINAL_NOTE,
  input: object({ id: WorkId, session: Session }, ['id']),
  output: withLeaseNotices(LeaseRecord),
  errors: [403, 409],
  example: {},
  run: ops.renew,
});

export const extend = defineOperation({
  name: 'extend',
  summary: 'Stretch a lease you hold by ms milliseconds',
  description: 'Stretch a lease you hold by `ms` milliseconds, capped at the tenant maximum claim TTL (flagged capped_to_max); never shortens.',
  input: object({ id: WorkId, ms: s.number('milliseconds to add (positive)', { exclusiveMinimum: 0 }), session: Session }, ['id', 'ms']),
  output: answer(
    { ok: { const: true }, status: s.enum(['extended']), lease: LeaseRecord, capped_to_max: { const: true }, claim_ttl_max_ms: s.integer(), lease_notices: LeaseNotices },
    ['ok', 'status', 'lease'],
  ),
  errors: [403, 409],
  example: { ms: 1_800_000 },
  run: ops.extend,
});

export const reserve = defineOperation({
  name: 'reserve',
  summary: 'Park a node you hold for the grace window',
  description:
    "Park a node you hold: it keeps its assigned edge, stays at the top of your queue and out of teammates' actionable lists for the grace window (grace_window_ms). Claim, renew or extend turns it back into a live lease.",
  input: object({ id: WorkId, session: Session }, ['id']),
  output: answer({ ok: { const: true }, status: s.enum(['reserved']), lease: LeaseRecord, grace_window_ms: s.integer(), lease_notices: LeaseNotices }, ['ok', 'status', 'lease', 'grace_window_ms']),
  errors: [403, 409],
  example: {},
  run: ops.reserve,
});

export const releaseNode = defineOperation({
  name: 'release_node',
  summary: 'Release your lease on one node and retire your assigned edge',
  description: 'Drop your lease on one node and retire your assigned edge; succeeds when you hold nothing; 409 `conflict` names the holder when someone else holds it.',
  input: object({ id: WorkId, session: Session }, ['id']),
  output: answer({ ok: { const: true }, status: s.enum(['released']), node_id: s.string(), lease: s.nullable(LeaseRecord), edge: EdgeResult }),
  errors: [403, 409],
  example: {},
  run: ops.release,
});

// ---------------------------------------------------------------- batch routes

export const claimBatch = defineOperation({
  name: 'claim_batch',
  summary: 'Claim a batch of work nodes, per item',
  description:
    'Claim every listed work node with the singular claim logic; never rolled back. `status` is claimed (all landed), partial or refused (none); a node held by another lands in `failed` with code already_claimed naming the holder. The singular-only nonce and force options are not accepted.',
  input: object({ ids: BatchIds, session: Session }, ['ids']),
  output: answer(
    { ok: { const: true }, status: s.enum(['claimed', 'partial', 'refused']), count: s.integer(), claimed: NodeIds, leases: s.array(LeaseRecord), failed: s.array(Failure), lease_notices: LeaseNotices },
    ['ok', 'status', 'count', 'claimed', 'leases', 'failed'],
  ),
  errors: [403, 409],
  example: { ids: ['task-fix-login', 'task-write-docs'] },
  run: ops.batchClaim,
});

export const renewBatch = defineOperation({
  name: 'renew_batch',
  summary: 'Renew a batch of leases, or every live lease you hold',
  description:
    'With `ids`: renew each (a node held by another lands in `failed` with code lease_lost). Without: renew every live lease you hold (only those of `session` when given), counting skipped_other_session and skipped_reserved. No graph commit.',
  input: object({ ids: BatchIds, session: Session }),
  output: answer(
    {
      ok: { const: true },
      status: s.enum(['renewed', 'partial', 'refused']),
      count: s.integer(),
      renewed: NodeIds,
      leases: s.array(LeaseRecord),
      failed: s.array(Failure),
      skipped_other_session: s.integer(),
      skipped_reserved: s.integer(),
      lease_notices: LeaseNotices,
    },
    ['ok', 'status', 'count', 'renewed', 'leases', 'failed'],
  ),
  errors: [403, 409],
  example: { session: 'run-42' },
  run: ops.batchRenew,
});

export const releaseBatch = defineOperation({
  name: 'release_batch',
  summary: 'Release your own leases (all, of one session, or the listed ids)',
  description:
    'Drop your own leases: the listed `ids`, else all of them (only those of `session` when given), and retire your assigned edges. Never fails on a holder mismatch: leases of others are left alone.',
  input: object({ ids: s.array(WorkId, `work node ids (at most ${MAX})`, { minItems: 1, maxItems: MAX }), session: Session }),
  output: answer({ ok: { const: true }, status: s.enum(['released']), released: NodeIds, count: s.integer() }),
  errors: [403, 409],
  example: { session: 'run-42' },
  run: ops.batchRelease,
});

// ---------------------------------------------------------------- tools: one per verb

/*
 * The tool arguments are typed here and checked in full by the route operation they are handed
 * to (bounds, patterns, closed shape), so a bad argument gets the same answer as over REST.
 */
const toolId: JsonSchema = { type: 'string', description: 'work node id, e.g. task-fix-login (single form)' };
const toolIds: JsonSchema = { type: 'array', items: { type: 'string' }, description: `work node ids (batch form, at most ${MAX})` };
const toolSession: JsonSchema = { type: ['string', 'null'], description: 'run/session id: binds the lease to that run' };

function oneOrMany(input: { id?: unknown; ids?: unknown }): void {
  if (input.id !== undefined && input.ids !== undefined) throw errors.validation('give id or ids, not both', [{ field: 'ids' }]);
}

type ToolArgs = Record<string, unknown> & { id?: string; ids?: string[] };

export const claimTool = defineOperation({
  name: 'claim',
  summary: 'Claim one work node, or a batch',
  description:
    'Claim work so no one else picks it up: {id} claims one node (a heartbeat lease for the tenant claim TTL; claiming again renews), {ids} claims a batch and reports per item. Writes an assigned edge on first claim. 409 names the holder when someone else has it.',
  input: object({
    id: toolId,
    ids: toolIds,
    session: toolSession,
    nonce: { type: 'string', description: 'dispatch nonce, echoed back (single claim only)' },
    force: { type: 'boolean', description: "admins only: take over another holder's live lease (single claim only)" },
  }),
  output: { anyOf: [claimNode.output!, claimBatch.output!] },
  errors: [403, 409],
  run: async (ctx: OpContext, input: ToolArgs) => {
    oneOrMany(input);
    if (input.ids !== undefined) return invoke(claimBatch, ctx, input);
    if (input.id === undefined) throw errors.validation('id (one node) or ids (a batch) is required', [{ field: 'id' }]);
    return invoke(claimNode, ctx, input);
  },
});

export const renewTool = defineOperation({
  name: 'renew',
  summary: 'Renew one lease, a batch, or every live lease you hold',
  description:
    'Heartbeat: {id} renews one lease you hold; {ids} renews a batch; with neither, renews every live lease you hold (only those of `session` when given; reservations stay parked). No graph commit. ' +
    TERMINAL_NOTE +
    ' The answer carries lease_notices when someone wrote to a node you held.',
  input: object({ id: toolId, ids: toolIds, session: toolSession }),
  output: { anyOf: [renewNode.output!, renewBatch.output!] },
  errors: [403, 409],
  run: async (ctx: OpContext, input: ToolArgs) => {
    oneOrMany(input);
    return input.id !== undefined ? invoke(renewNode, ctx, input) : invoke(renewBatch, ctx, input);
  },
});

export const releaseTool = defineOperation({
  name: 'release',
  summary: 'Release one node, or your own leases',
  description:
    "Let go: {id} drops your lease on one node and retires your assigned edge (succeeds when you hold nothing; 409 when someone else holds it); with no id, drops all your own leases (only those of `session` when given).",
  input: object({ id: toolId, ids: toolIds, session: toolSession }),
  output: { anyOf: [releaseNode.output!, releaseBatch.output!] },
  errors: [403, 409],
  run: async (ctx: OpContext, input: ToolArgs) => {
    oneOrMany(input);
    return input.id !== undefined ? invoke(releaseNode, ctx, input) : invoke(releaseBatch, ctx, input);
  },
});
