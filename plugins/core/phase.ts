/**
 * The four phases analytics and program progress count in: done (`isDone`: terminal,
 * superseded, or resolved by a live edge), active (an in-progress-like status), blocked
 * (status `blocked`, or a live blocker that is not done), open (everything else), and the
 * `blocks` adjacency both walk. In core (not analytics) because a phase is a reading of
 * core's statuses and edges, and both analytics and capture count in it.
 */
import type { NodeRecord } from '../../kernel/graph-index.js';
import { answer, s, type Static } from '../../kernel/operation.js';
import type { Tenant } from '../../kernel/tenant.js';
import { isDone } from './node-view.js';

export type Phase = 'done' | 'active' | 'blocked' | 'open';
export const PHASES: readonly Phase[] = ['done', 'active', 'blocked', 'open'];

/** Work nodes counted by phase (analytics' program progress, capture's programs overview), so both views agree on a program. */
export const ProgramProgress = answer({
  total: s.integer(),
  done: s.integer(),
  active: s.integer(),
  blocked: s.integer(),
  open: s.integer(),
  pct: s.number(),
  statuses: s.record(s.number()),
});
export type ProgramProgress = Static<typeof ProgramProgress>;

/** Statuses that mean someone is working on the node (the seed pack's, plus a type's own in-progress status). */
const ACTIVE_STATUSES = new Set(['in-progress', 'review', 'running']);

export function isActiveStatus(tenant: Tenant, type: string, status: string): boolean {
  return ACTIVE_STATUSES.has(status) || tenant.registry.nodeTypes.get(type)?.in_progress_status === status;
}

/** How an edge type reads as `blocks`: 'forward' (source blocks target), 'inverse' (target blocks source) or null. */
function blocksDirection(tenant: Tenant, edgeType: string): 'forward' | 'inverse' | null {
  if (edgeType === 'blocks') return 'forward';
  const n = tenant.registry.normalizeEdge(edgeType);
  if (!n || n.type !== 'blocks') return null;
  return n.inverted ? 'inverse' : 'forward';
}

function sortedUnique(ids: string[], self: string, tenant: Tenant): string[] {
  if (ids.length === 0) return ids;
  const out = new Set<string>();
  for (const id of ids) if (id !== self && tenant.index.has(id)) out.add(id);
  return [...out].sort();
}

/**
 * Existing nodes that block `id`: the canonical inbound `blocks` edges, plus inverse forms
 * (`blocked-by`, `depends-on`) a hand-written node carries itself. Sorted by id.
 */
export function blockersOf(tenant: Tenant, id: string): string[] {
  const ids: string[] = [];
  const record = tenant.index.get(id);
  // most nodes have no edges at all: no registry lookups, no sorting
  if ((!record || record.edges.length === 0) && !tenant.index.hasInbound(id)) return ids;
  for (const { from, edge } of tenant.index.inboundOf(id)) if (blocksDirection(tenant, edge.type) === 'forward') ids.push(from);
  for (const edge of tenant.index.get(id)?.edges ?? []) if (blocksDirection(tenant, edge.type) === 'inverse') ids.push(edge.to);
  return sortedUnique(ids, id, tenant);
}

/** Existing nodes `id` blocks (the reverse of `blockersOf`). Sorted by id. */
export function blockedBy(tenant: Tenant, id: string): string[] {
  const ids: string[] = [];
  for (const edge of tenant.index.get(id)?.edges ?? []) if (blocksDirection(tenant, edge.type) === 'forward') ids.push(edge.to);
  for (const { from, edge } of tenant.index.inboundOf(id)) if (blocksDirection(tenant, edge.type) === 'inverse') ids.push(from);
  return sortedUnique(ids, id, tenant);
}

/** Attributes of the edge that says `blocker` blocks `blocked` (e.g. `needed_by`), without type/to. */
export function blockEdgeAttrs(tenant: Tenant, blocker: string, blocked: string): Record<string, string> {
  const pick = (edge: Record<string, string>) => {
    const { type: _t, to: _to, ...rest } = edge;
    return rest;
  };
  for (const edge of tenant.index.get(blocker)?.edges ?? []) {
    if (edge.to === blocked && blocksDirection(tenant, edge.type) === 'forward') return pick(edge);
  }
  for (const edge of tenant.index.get(blocked)?.edges ?? []) {
    if (edge.to === blocker && blocksDirection(tenant, edge.type) === 'inverse') return pick(edge);
  }
  return {};
}

export function phaseOf(tenant: Tenant, record: NodeRecord): Phase {
  if (isDone(tenant, record)) return 'done';
  if (isActiveStatus(tenant, record.type, record.status)) return 'active';
  if (record.status === 'blocked') return 'blocked';
  for (const b of blockersOf(tenant, record.id)) {
    const blocker = tenant.index.get(b);
    if (blocker && !isDone(tenant, blocker)) return 'blocked';
  }
  return 'open';
}
