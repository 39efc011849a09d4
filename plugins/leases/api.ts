/**
 * The leases plugin's operations, each declared once: input and answer schemas (schemas.ts),
 * error statuses, and the function that runs it (operations.ts). Routes, tools and the OpenAPI
 * document all read these.
 *
 * The REST routes have one operation each (`claim_node`, `claim_batch`, ...). The tools
 * `claim`, `renew` and `release` take `{id}` or `{ids}` and are operations of their own that
 * hand the arguments on to the route's operation through `invoke`, so REST and MCP reject the
 * same bad input with the same bytes; `extend` and `reserve` are the route operations as is.
 */
import { defineOperation, invoke, object, s } from '../../kernel/operation.js';
import { errors } from '../../kernel/errors.js';
import * as ops from './operations.js';
import {
  BatchIds,
  ClaimBatchInput,
  ClaimBatchOutput,
  ClaimNodeInput,
  ClaimNodeOutput,
  ExtendInput,
  ExtendOutput,
  Force,
  LeaseInput,
  Nonce,
  ReleaseBatchInput,
  ReleaseBatchOutput,
  ReleaseIds,
  ReleaseNodeOutput,
  RenewBatchInput,
  RenewBatchOutput,
  RenewNodeOutput,
  ReserveOutput,
  Session,
  WorkId,
} from './schemas.js';

const TERMINAL_NOTE =
  'On a finished node (terminal status, resolved or superseded) it is 409 lease_lost with details.reason terminal and your lease is released: stop heartbeating it.';

// ---------------------------------------------------------------- single routes

export const claimNode = defineOperation({
  name: 'claim_node',
  summary: 'Claim one work node with a heartbeat lease',
  description:
    'Claim one work node: a heartbeat lease for the tenant claim TTL (claiming again renews) and an assigned edge on first claim. 409 `conflict` names the holder when someone else has it, or when the node is done.',
  input: ClaimNodeInput,
  output: ClaimNodeOutput,
  errors: [403, 409],
  example: { session: 'run-42' },
  run: ops.claimNode,
});

export const renewNode = defineOperation({
  name: 'renew_node',
  summary: 'Renew one lease you hold (heartbeat)',
  description:
    'Heartbeat: bump the expiry of a lease you hold to now + claim TTL (never shortened); a reservation turns back into a live lease. No graph commit. 409 `lease_lost` names the current holder. ' +
    TERMINAL_NOTE,
  input: LeaseInput,
  output: RenewNodeOutput,
  errors: [403, 409],
  example: {},
  run: ops.renewNode,
});

export const extend = defineOperation({
  name: 'extend',
  summary: 'Stretch a lease you hold by ms milliseconds',
  description:
    'Stretch a lease you hold by `ms` milliseconds, capped at the tenant maximum claim TTL (flagged capped_to_max); never shortens.',
  input: ExtendInput,
  output: ExtendOutput,
  errors: [403, 409],
  example: { ms: 1_800_000 },
  run: ops.extend,
});

export const reserve = defineOperation({
  name: 'reserve',
  summary: 'Park a node you hold for the grace window',
  description:
    "Park a node you hold: it keeps its assigned edge, stays at the top of your queue and out of teammates' actionable lists for the grace window (grace_window_ms). Claim, renew or extend turns it back into a live lease.",
  input: LeaseInput,
  output: ReserveOutput,
  errors: [403, 409],
  example: {},
  run: ops.reserve,
});

export const releaseNode = defineOperation({
  name: 'release_node',
  summary: 'Release your lease on one node and retire your assigned edge',
  description:
    'Drop your lease on one node and retire your assigned edge; succeeds when you hold nothing; 409 `conflict` names the holder when someone else holds it.',
  input: LeaseInput,
  output: ReleaseNodeOutput,
  errors: [403, 409],
  example: {},
  run: ops.releaseNode,
});

// ---------------------------------------------------------------- batch routes

export const claimBatch = defineOperation({
  name: 'claim_batch',
  summary: 'Claim a batch of work nodes, per item',
  description:
    'Claim every listed work node with the singular claim logic; never rolled back. `status` is claimed (all landed), partial or refused (none); a node held by another lands in `failed` with code already_claimed naming the holder. The singular-only nonce and force options are not accepted.',
  input: ClaimBatchInput,
  output: ClaimBatchOutput,
  errors: [403, 409],
  example: { ids: ['task-fix-login', 'task-write-docs'] },
  run: ops.claimBatch,
});

export const renewBatch = defineOperation({
  name: 'renew_batch',
  summary: 'Renew a batch of leases, or every live lease you hold',
  description:
    'With `ids`: renew each (a node held by another lands in `failed` with code lease_lost). Without: renew every live lease you hold (only those of `session` when given), counting skipped_other_session and skipped_reserved. No graph commit.',
  input: RenewBatchInput,
  output: RenewBatchOutput,
  errors: [403, 409],
  example: { session: 'run-42' },
  run: ops.renewBatch,
});

export const releaseBatch = defineOperation({
  name: 'release_batch',
  summary: 'Release your own leases (all, of one session, or the listed ids)',
  description:
    'Drop your own leases: the listed `ids`, else all of them (only those of `session` when given), and retire your assigned edges. Never fails on a holder mismatch: leases of others are left alone.',
  input: ReleaseBatchInput,
  output: ReleaseBatchOutput,
  errors: [403, 409],
  example: { session: 'run-42' },
  run: ops.releaseBatch,
});

// ---------------------------------------------------------------- tools: one per verb

/*
 * The tool arguments are the route operations' own fields (one declaration each, with their
 * bounds) and are handed on to the route operation, so a bad argument gets the same answer as
 * over REST.
 */
function oneOrMany(input: { id?: unknown; ids?: unknown }): void {
  if (input.id !== undefined && input.ids !== undefined) throw errors.validation('give id or ids, not both', [{ field: 'ids' }]);
}

export const claim = defineOperation({
  name: 'claim',
  summary: 'Claim one work node, or a batch',
  description:
    'Claim work so no one else picks it up: {id} claims one node (a heartbeat lease for the tenant claim TTL; claiming again renews), {ids} claims a batch and reports per item. Writes an assigned edge on first claim. 409 names the holder when someone else has it.',
  input: object({ id: WorkId, ids: BatchIds, session: Session, nonce: Nonce, force: Force }),
  output: s.union([ClaimNodeOutput, ClaimBatchOutput]),
  errors: [403, 409],
  run: async (ctx, input) => {
    oneOrMany(input);
    if (input.ids !== undefined) return invoke(claimBatch, ctx, input);
    if (input.id === undefined) throw errors.validation('id (one node) or ids (a batch) is required', [{ field: 'id' }]);
    return invoke(claimNode, ctx, input);
  },
});

export const renew = defineOperation({
  name: 'renew',
  summary: 'Renew one lease, a batch, or every live lease you hold',
  description:
    'Heartbeat: {id} renews one lease you hold; {ids} renews a batch; with neither, renews every live lease you hold (only those of `session` when given; reservations stay parked). No graph commit. ' +
    TERMINAL_NOTE +
    ' The answer carries lease_notices when someone wrote to a node you held.',
  input: object({ id: WorkId, ids: BatchIds, session: Session }),
  output: s.union([RenewNodeOutput, RenewBatchOutput]),
  errors: [403, 409],
  run: async (ctx, input) => {
    oneOrMany(input);
    return input.id !== undefined ? invoke(renewNode, ctx, input) : invoke(renewBatch, ctx, input);
  },
});

export const release = defineOperation({
  name: 'release',
  summary: 'Release one node, or your own leases',
  description:
    'Let go: {id} drops your lease on one node and retires your assigned edge (succeeds when you hold nothing; 409 when someone else holds it); with no id, drops all your own leases (only those of `session` when given).',
  input: object({ id: WorkId, ids: ReleaseIds, session: Session }),
  output: s.union([ReleaseNodeOutput, ReleaseBatchOutput]),
  errors: [403, 409],
  run: async (ctx, input) => {
    oneOrMany(input);
    return input.id !== undefined ? invoke(releaseNode, ctx, input) : invoke(releaseBatch, ctx, input);
  },
});
