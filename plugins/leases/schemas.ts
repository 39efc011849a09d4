/**
 * The leases plugin's schemas: each input field and answer shape declared once. api.ts builds
 * the operations from them; operations.ts, store.ts and holder.ts take their types from them
 * (`Static<typeof X>`), so the code and the contract cannot drift apart.
 */
import { answer, extend, NodeId, object, s, type Static } from '../../kernel/operation.js';

/** The most ids one batch call takes. */
export const MAX_BATCH_IDS = 500;
const MAX = MAX_BATCH_IDS;

/** A run/session id; null (or omitted) keeps the lease person-scoped. */
export const Session = s.raw<string | null>({
  type: ['string', 'null'],
  pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$',
  description: 'run/session id (1-128 of [A-Za-z0-9._:-], starting with a letter or digit): binds the lease to that run',
});
export const WorkId = s.raw<string>({ ...NodeId, description: 'work node id, e.g. task-fix-login' });
/** Batch ids are checked one by one: a malformed or unknown id lands in `failed`, the rest still land. */
export const BatchIds = s.array(
  s.string(),
  `work node ids (at most ${MAX}; duplicates collapse; each is checked on its own and a bad one lands in failed)`,
  {
    minItems: 1,
    maxItems: MAX,
  },
);
/** The ids a batch release takes: well-formed ids (a release never fails per item). */
export const ReleaseIds = s.array(WorkId, `work node ids (at most ${MAX})`, { minItems: 1, maxItems: MAX });
export const Nonce = s.string('dispatch nonce, echoed back (single line, at most 200 characters)', {
  minLength: 1,
  maxLength: 200,
  pattern: '^[^\\r\\n]*$',
});
export const Force = s.boolean("admins only: take over another holder's live lease (the answer names previous_holder)");

/** The lease record `{node_id, by, expires, expires_at, session, claimed_at}` plus `agent` and `state`. */
export const LeaseRecord = answer(
  {
    node_id: s.string(),
    by: s.string(),
    expires: s.integer('epoch milliseconds'),
    expires_at: s.string('the same instant, ISO 8601'),
    session: s.stringOrNull(),
    claimed_at: s.string(),
    agent: s.stringOrNull(),
    state: s.enum(['live', 'reserved']),
  },
  ['node_id', 'by', 'expires', 'expires_at', 'session', 'claimed_at'],
);
/** The `assigned` edge a claim writes (or finds) and a release retires. */
export const AssignedEdge = answer({
  type: s.enum(['assigned']),
  from: s.string(),
  to: s.string(),
  status: s.enum(['created', 'skipped', 'deleted']),
  revision: s.stringOrNull(),
});
const EdgeResult = s.nullable(AssignedEdge);
export const BatchFailure = answer({ node_id: s.string(), code: s.string(), message: s.string(), holder: s.string() }, [
  'node_id',
  'code',
  'message',
]);
const NodeIds = s.array(s.string());
/** One write someone made to a node the recipient held. */
export const LeaseNotice = answer({
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
});
/** Writes others made to nodes you held, waiting since your last lease call (each delivered once). */
const LeaseNotices = s.array(
  LeaseNotice,
  'writes others made to nodes you held since your last lease call; present only when some are waiting',
);

export type EdgeResult = Static<typeof AssignedEdge>;
export type BatchFailure = Static<typeof BatchFailure>;
export type LeaseNotice = Static<typeof LeaseNotice>;

// ---------------------------------------------------------------- single routes

export const ClaimNodeInput = object({ id: WorkId, session: Session, nonce: Nonce, force: Force }, ['id']);
export const ClaimNodeOutput = answer(
  {
    ok: s.const(true),
    status: s.enum(['claimed', 'renewed']),
    lease: LeaseRecord,
    edge: EdgeResult,
    nonce: s.string(),
    previous_holder: s.string(),
    lease_notices: LeaseNotices,
  },
  ['ok', 'status', 'lease', 'edge'],
);

/** The input of renew, reserve and release on one node. */
export const LeaseInput = object({ id: WorkId, session: Session }, ['id']);
export const RenewNodeOutput = extend(LeaseRecord, { lease_notices: LeaseNotices });

export const ExtendInput = object(
  { id: WorkId, ms: s.number('milliseconds to add (positive)', { exclusiveMinimum: 0 }), session: Session },
  ['id', 'ms'],
);
export const ExtendOutput = answer(
  {
    ok: s.const(true),
    status: s.enum(['extended']),
    lease: LeaseRecord,
    capped_to_max: s.const(true),
    claim_ttl_max_ms: s.integer(),
    lease_notices: LeaseNotices,
  },
  ['ok', 'status', 'lease'],
);

export const ReserveOutput = answer(
  { ok: s.const(true), status: s.enum(['reserved']), lease: LeaseRecord, grace_window_ms: s.integer(), lease_notices: LeaseNotices },
  ['ok', 'status', 'lease', 'grace_window_ms'],
);

export const ReleaseNodeOutput = answer({
  ok: s.const(true),
  status: s.enum(['released']),
  node_id: s.string(),
  lease: s.nullable(LeaseRecord),
  edge: EdgeResult,
});

// ---------------------------------------------------------------- batch routes

export const ClaimBatchInput = object({ ids: BatchIds, session: Session }, ['ids']);
export const ClaimBatchOutput = answer(
  {
    ok: s.const(true),
    status: s.enum(['claimed', 'partial', 'refused']),
    count: s.integer(),
    claimed: NodeIds,
    leases: s.array(LeaseRecord),
    failed: s.array(BatchFailure),
    lease_notices: LeaseNotices,
  },
  ['ok', 'status', 'count', 'claimed', 'leases', 'failed'],
);

export const RenewBatchInput = object({ ids: BatchIds, session: Session });
export const RenewBatchOutput = answer(
  {
    ok: s.const(true),
    status: s.enum(['renewed', 'partial', 'refused']),
    count: s.integer(),
    renewed: NodeIds,
    leases: s.array(LeaseRecord),
    failed: s.array(BatchFailure),
    skipped_other_session: s.integer(),
    skipped_reserved: s.integer(),
    lease_notices: LeaseNotices,
  },
  ['ok', 'status', 'count', 'renewed', 'leases', 'failed'],
);

export const ReleaseBatchInput = object({ ids: ReleaseIds, session: Session });
export const ReleaseBatchOutput = answer({ ok: s.const(true), status: s.enum(['released']), released: NodeIds, count: s.integer() });
