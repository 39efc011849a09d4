/**
 * The gardener's five checks (docs/design.md §9). Each looks at one node (the subject) and says
 * whether its condition holds now; a finding is kept open for every (check, subject) whose
 * condition holds. Pure functions of the index, the lease table (when the leases plugin is
 * on for the tenant) and the clock.
 */
import type { NodeRecord } from '../../kernel/graph-index.js';
import { LIMITS } from '../../kernel/registry.js';
import type { Tenant } from '../../kernel/tenant.js';
import { isDone } from '../core/public.js';
import type { StoredLease } from '../leases/public.js';

export const CHECKS = ['lagging-resolution', 'dangling-edge', 'stale-assignment', 'superseded-open', 'overdue-block'] as const;
export type CheckName = (typeof CHECKS)[number];

export function isCheckName(value: unknown): value is CheckName {
  return typeof value === 'string' && (CHECKS as readonly string[]).includes(value);
}

/** A condition that holds now: the finding to keep open about `subject`. */
export interface Condition {
  check: CheckName;
  subject: string;
  summary: string;
  /** flat facts recorded on the finding as `detail` */
  detail: Record<string, string | string[]>;
}

export interface CheckEnv {
  tenant: Tenant;
  nowMs: number;
  graceWindowMs: number;
  /** the lease record of a node, or null when the leases plugin is not enabled for the tenant */
  leaseOf: ((nodeId: string) => StoredLease | undefined) | null;
}

const DAY_MS = 24 * 60 * 60 * 1000;

function liveSources(tenant: Tenant, id: string, types: string[], resolvingOnly: boolean): string[] {
  const { index, registry } = tenant;
  return index
    .inboundOf(id, types)
    .map((e) => e.from)
    .filter((from) => {
      const r = index.get(from);
      return r !== undefined && (!resolvingOnly || !registry.nodeTypes.get(r.type)?.non_resolving);
    })
    .sort();
}

/** A live inbound `resolves`/`answers` edge while the status is not terminal. */
function laggingResolution(env: CheckEnv, node: NodeRecord): Condition | null {
  const { tenant } = env;
  if (tenant.registry.isTerminal(node.type, node.status)) return null;
  const resolvers = liveSources(tenant, node.id, ['resolves', 'answers'], true);
  if (resolvers.length === 0) return null;
  return {
    check: 'lagging-resolution',
    subject: node.id,
    summary: `${node.id} is resolved by ${resolvers.join(', ')} but its status is still '${node.status}'; set the final status or remove the edge`,
    detail: { resolved_by: resolvers, status: node.status },
  };
}

/** Edges to nodes that do not exist. */
function danglingEdge(env: CheckEnv, node: NodeRecord): Condition | null {
  const missing = node.edges.filter((e) => !env.tenant.index.has(e.to));
  if (missing.length === 0) return null;
  const edges = [...new Set(missing.map((e) => `${e.type}:${e.to}`))].sort();
  return {
    check: 'dangling-edge',
    subject: node.id,
    summary: `${node.id} has ${edges.length === 1 ? 'an edge' : `${edges.length} edges`} to missing nodes: ${edges.join(', ')}`,
    detail: { missing: edges },
  };
}

function msOf(value: unknown): number | null {
  if (typeof value !== 'string') return null;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : null;
}

/**
 * `assigned` edges with no live lease past the grace window, on work that is not done.
 * The assignee's last sign of life is the later of the node's last write (`updated`, which
 * the edge write itself sets) and the expiry of the assignee's own lease record, if any;
 * the assignment is stale once that is more than the grace window ago. Without the leases
 * plugin there are no leases, so the node's last write is the only heartbeat.
 */
function staleAssignment(env: CheckEnv, node: NodeRecord): Condition | null {
  const assignees = [...new Set(node.edges.filter((e) => e.type === 'assigned').map((e) => e.to))].sort();
  if (assignees.length === 0 || isDone(env.tenant, node)) return null;
  const lease = env.leaseOf?.(node.id);
  const updated = msOf(node.frontmatter.updated) ?? msOf(node.frontmatter.created) ?? env.nowMs;
  const stale: string[] = [];
  let since = 0;
  for (const person of assignees) {
    const own = lease && lease.by === person ? lease : undefined;
    if (own && own.expires_ms > env.nowMs) continue;
    const lastSign = Math.max(updated, own ? own.expires_ms : 0);
    if (env.nowMs - lastSign <= env.graceWindowMs) continue;
    stale.push(person);
    since = Math.max(since, lastSign);
  }
  if (stale.length === 0) return null;
  const sinceIso = new Date(since).toISOString();
  return {
    check: 'stale-assignment',
    subject: node.id,
    summary: `${node.id} is assigned to ${stale.join(', ')} with no live lease since ${sinceIso}; claim it again or release it`,
    detail: { assignees: stale, since: sinceIso, leases: env.leaseOf ? 'enabled' : 'disabled' },
  };
}

/** Superseded (a live inbound `supersedes` edge) but not in a terminal status. */
function supersededOpen(env: CheckEnv, node: NodeRecord): Condition | null {
  const { tenant } = env;
  if (tenant.registry.isTerminal(node.type, node.status)) return null;
  const by = liveSources(tenant, node.id, ['supersedes'], false);
  if (by.length === 0) return null;
  return {
    check: 'superseded-open',
    subject: node.id,
    summary: `${node.id} is superseded by ${by.join(', ')} but its status is still '${node.status}'; close it`,
    detail: { superseded_by: by, status: node.status },
  };
}

/** The first instant after a `YYYY-MM-DD` day (UTC), or null for anything else. */
export function dayAfter(value: string | undefined): number | null {
  if (!value || !/^\d{4}-\d{2}-\d{2}$/.test(value)) return null;
  const start = Date.parse(`${value}T00:00:00Z`);
  if (!Number.isFinite(start) || new Date(start).toISOString().slice(0, 10) !== value) return null;
  return start + DAY_MS;
}

/**
 * `blocks` edges whose `needed_by` day has passed while the blocker (the subject) is open.
 * A blocked node that is done or gone no longer needs anything, so it does not count.
 */
function overdueBlock(env: CheckEnv, node: NodeRecord): Condition | null {
  const { tenant, nowMs } = env;
  const overdue: string[] = [];
  for (const e of node.edges) {
    if (e.type !== 'blocks') continue;
    const due = dayAfter(e.needed_by);
    if (due === null || nowMs < due) continue;
    const target = tenant.index.get(e.to);
    if (!target || isDone(tenant, target)) continue;
    overdue.push(`${e.to}:${e.needed_by}`);
  }
  if (overdue.length === 0 || isDone(tenant, node)) return null;
  overdue.sort();
  return {
    check: 'overdue-block',
    subject: node.id,
    summary: `${node.id} is still '${node.status}' past the needed_by date of what it blocks: ${overdue.map((o) => o.replace(':', ' needed by ')).join(', ')}`,
    detail: { overdue: overdue },
  };
}

const RUNNERS: Array<(env: CheckEnv, node: NodeRecord) => Condition | null> = [
  laggingResolution,
  danglingEdge,
  staleAssignment,
  supersededOpen,
  overdueBlock,
];

/** Every condition that holds for one node. */
export function conditionsOf(env: CheckEnv, node: NodeRecord): Condition[] {
  const out: Condition[] = [];
  for (const run of RUNNERS) {
    const c = run(env, node);
    if (!c) continue;
    // Long edge lists must not push a summary past the node limit (the finding would be refused).
    if (c.summary.length > LIMITS.summaryChars) c.summary = `${c.summary.slice(0, LIMITS.summaryChars - 1)}…`;
    out.push(c);
  }
  return out;
}
