/**
 * A registration point for decisions a node waits for that its status alone does not show
 * (a workflow run's approval steps): another plugin registers a source, and the queue treats
 * any node the source names as an `approve` candidate, whatever its type. The queue never
 * imports the feeding plugin.
 */
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Tenant } from '../../kernel/tenant.js';

/** One decision a node waits for from a person. */
export interface PendingApproval {
  /** readiness reason, e.g. "approval step 'ship' of wf-deploy waits for a person" */
  reason: string;
  /** the queue item's one-line `why` (the first pending approval's is shown) */
  why: string;
}

/**
 * The pending approvals of a node (empty when none). It must be a pure function of the
 * record (and the tenant's registry): the queue classifies a node once per commit that
 * touches it and caches the answer until the next one.
 */
export type ApprovalSource = (tenant: Tenant, record: NodeRecord) => PendingApproval[];

const sources = new Map<string, ApprovalSource>();

/** Registers (or replaces) a named source; call it from a plugin's `init`. */
export function registerApprovalSource(name: string, source: ApprovalSource): void {
  sources.set(name, source);
}

export function externalApprovals(tenant: Tenant, record: NodeRecord): PendingApproval[] {
  if (sources.size === 0) return [];
  const out: PendingApproval[] = [];
  for (const source of sources.values()) out.push(...source(tenant, record));
  return out;
}
