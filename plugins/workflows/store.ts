/**
 * The workflows plugin's per-tenant bookkeeping:
 *
 * - step leases: operational state (collection `workflow-leases`, one record per claimed
 *   step, keyed `<run_id>/<step>`), never committed. The run node commits that a step is
 *   claimed, by whom and under which generation; how long the lease lives is only here, so
 *   a renewal (the holder claiming again) never commits. A committed claim with no live
 *   record for its generation has lapsed and the step is claimable again;
 * - run-start idempotency keys: operational state (collection `workflow-run-keys`);
 * - the running runs and the run count per workflow, kept in step with the graph index
 *   through its commit events, so GET /v1/work never walks the whole graph.
 */
import type { CommitEvent, NodeRecord } from '../../kernel/graph-index.js';
import type { Collection } from '../../kernel/state-store.js';
import type { Tenant } from '../../kernel/tenant.js';
import { readLineage, readState } from './model.js';
import { perTenant } from '../../kernel/per-tenant.js';
import type { Static } from '../../kernel/operation.js';
import type { RunWorkflowOutput } from './schemas.js';

/** The operational half of a step lease. */
export interface StepLease {
  run_id: string;
  step: string;
  generation: number;
  by: string;
  agent: string | null;
  session: string | null;
  claimed_at: string;
  /** epoch milliseconds; the lease has lapsed at or after it */
  expires_ms: number;
  iteration: number | null;
}

/** What a repeated run start with the same idempotency key answers. */
export interface RunKey {
  person: string;
  workflow: string;
  /** canonical JSON of the inputs the key was first used with */
  inputs: string;
  run_id: string;
  created_ms: number;
  payload: Static<typeof RunWorkflowOutput>;
}

export const RUN_KEY_TTL_MS = 24 * 60 * 60 * 1000;

export const leaseKey = (runId: string, step: string) => `${runId}/${step}`;

export class RunBook {
  readonly leases: Collection<StepLease>;
  readonly runKeys: Collection<RunKey>;
  /** ids of run nodes whose status is `running` */
  readonly running = new Set<string>();
  private readonly runsPerWorkflow = new Map<string, number>();
  private readonly workflowOfRun = new Map<string, string>();

  constructor(tenant: Tenant) {
    this.leases = tenant.state.collection<StepLease>('workflow-leases');
    this.runKeys = tenant.state.collection<RunKey>('workflow-run-keys');
    // O(runs) once per tenant open, from the in-memory index.
    for (const id of tenant.index.idsOfType('run')) this.track(id, tenant.index.get(id) ?? null);
    tenant.index.subscribe((event) => this.onCommit(event));
  }

  private onCommit(event: CommitEvent): void {
    for (const change of event.changes) {
      if (change.before?.type !== 'run' && change.after?.type !== 'run') continue;
      this.track(change.id, change.after);
      // A run that stopped running another way (cancelled through the status route, deleted)
      // leaves no lease records behind; a verdict drops its own already.
      if (change.before?.status === 'running' && change.after?.status !== 'running') this.dropLeases(change.id, change.before);
    }
  }

  private dropLeases(runId: string, record: NodeRecord): void {
    const order = readState(record.frontmatter)?.order ?? [];
    const stale = order.map((sid) => leaseKey(runId, sid)).filter((key) => this.leases.has(key));
    if (stale.length > 0) void this.leases.batch(stale.map((key) => ({ key, value: null }))).catch(() => undefined);
  }

  private track(id: string, record: NodeRecord | null): void {
    const previous = this.workflowOfRun.get(id);
    if (previous !== undefined) {
      this.runsPerWorkflow.set(previous, (this.runsPerWorkflow.get(previous) ?? 1) - 1);
      this.workflowOfRun.delete(id);
    }
    this.running.delete(id);
    if (!record || record.type !== 'run') return;
    if (record.status === 'running') this.running.add(id);
    const workflow = readLineage(record.frontmatter)?.workflow;
    if (workflow) {
      this.workflowOfRun.set(id, workflow);
      this.runsPerWorkflow.set(workflow, (this.runsPerWorkflow.get(workflow) ?? 0) + 1);
    }
  }

  runCount(workflow: string): number {
    return this.runsPerWorkflow.get(workflow) ?? 0;
  }

  /** The live lease of a step for one generation, or undefined when it lapsed or was superseded. */
  liveLease(runId: string, step: string, generation: number, nowMs: number): StepLease | undefined {
    const lease = this.leases.get(leaseKey(runId, step));
    return lease && lease.generation === generation && lease.expires_ms > nowMs ? lease : undefined;
  }

  /** Run-start keys older than a day are forgotten (O(keys), only on a keyed start). */
  async pruneRunKeys(nowMs: number): Promise<void> {
    const stale: Array<{ key: string; value: null }> = [];
    for (const [key, rec] of this.runKeys.entries()) if (nowMs - rec.created_ms >= RUN_KEY_TTL_MS) stale.push({ key, value: null });
    if (stale.length > 0) await this.runKeys.batch(stale);
  }
}

export const runBookOf: (tenant: Tenant) => RunBook = perTenant((tenant) => new RunBook(tenant));
