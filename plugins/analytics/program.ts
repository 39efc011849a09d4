/**
 * GET /v1/program/{id}: the gating tree of a node. A node's children are the nodes that
 * block it (`blocks` edges into it, and `blocked-by` forms it carries), expanded breadth
 * first so every node renders once, at its shallowest position; any later occurrence is a
 * leaf marked `repeat` (and `cycle` when it is one of its own ancestors), and the first
 * occurrence is marked `shared`. Progress counts each distinct node once.
 *
 * Bounds: `depth` (levels below the root) and `max_nodes` (tree entries, repeats
 * included, the root excluded). Every branch a bound cut is listed in `truncated` with
 * how many blockers it skipped. Cost: O(max_nodes) index lookups.
 */
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Tenant } from '../../kernel/tenant.js';
import { blockEdgeAttrs, blockersOf, phaseOf, type Phase } from '../core/public.js';
import type { ProgramBounds, ProgramNode, ProgramPayload, ProgramProgress } from './schemas.js';

function describe(tenant: Tenant, record: NodeRecord): Omit<ProgramNode, 'blockers'> {
  return {
    id: record.id,
    title: record.title,
    type: record.type,
    status: record.status,
    phase: phaseOf(tenant, record),
    project: record.project,
  };
}

export function buildProgram(tenant: Tenant, root: NodeRecord, bounds: ProgramBounds): ProgramPayload {
  const rootNode: ProgramNode = { ...describe(tenant, root), blockers: [] };
  const placed = new Map<string, ProgramNode>([[root.id, rootNode]]);
  const parentOf = new Map<string, string>();
  const truncated: ProgramPayload['truncated'] = [];
  const phases: Phase[] = [];
  const statuses: Record<string, number> = {};
  let entries = 0;

  const isAncestor = (candidate: string, of: string): boolean => {
    for (let at: string | undefined = of; at !== undefined; at = parentOf.get(at)) if (at === candidate) return true;
    return false;
  };
  const cut = (node: ProgramNode, reason: 'depth' | 'max_nodes', skipped: number) => {
    node.more = skipped;
    node.cut = reason;
    truncated.push({ id: node.id, reason, skipped });
  };

  const queue: Array<{ node: ProgramNode; depth: number }> = [{ node: rootNode, depth: 0 }];
  for (let head = 0; head < queue.length; head++) {
    const { node, depth } = queue[head]!;
    const ids = blockersOf(tenant, node.id);
    node.blockers = [];
    if (ids.length === 0) continue;
    if (depth >= bounds.depth) {
      cut(node, 'depth', ids.length);
      continue;
    }
    const children = ids.map((id) => describe(tenant, tenant.index.get(id)!));
    // not-done blockers first (they are what gates), then done ones; by id within each
    children.sort((a, b) => Number(a.phase === 'done') - Number(b.phase === 'done') || (a.id < b.id ? -1 : 1));
    for (let i = 0; i < children.length; i++) {
      if (entries >= bounds.max_nodes) {
        cut(node, 'max_nodes', children.length - i);
        break;
      }
      entries++;
      const child = children[i]!;
      const attrs = blockEdgeAttrs(tenant, child.id, node.id);
      const entry: ProgramNode = { ...child, ...(Object.keys(attrs).length > 0 ? { edge: attrs } : {}) };
      const first = placed.get(child.id);
      if (first) {
        if (first !== rootNode) first.shared = true;
        entry.repeat = true;
        if (isAncestor(child.id, node.id)) entry.cycle = true;
        const home = parentOf.get(child.id);
        if (home !== undefined) entry.expanded_under = home;
        node.blockers.push(entry);
        continue;
      }
      placed.set(child.id, entry);
      parentOf.set(child.id, node.id);
      phases.push(entry.phase);
      statuses[entry.status] = (statuses[entry.status] ?? 0) + 1;
      node.blockers.push(entry);
      queue.push({ node: entry, depth: depth + 1 });
    }
  }

  const count = (p: Phase) => phases.filter((x) => x === p).length;
  const total = phases.length;
  const done = count('done');
  const progress: ProgramProgress = {
    total,
    done,
    active: count('active'),
    blocked: count('blocked'),
    open: count('open'),
    pct: total === 0 ? 0 : Math.round((done / total) * 100),
    statuses: Object.fromEntries(Object.entries(statuses).sort(([a], [b]) => (a < b ? -1 : 1))),
  };
  const { blockers, more, cut: rootCut, ...rootFields } = rootNode;
  return {
    ...rootFields,
    progress,
    blockers: blockers ?? [],
    ...(more !== undefined ? { more, cut: rootCut } : {}),
    truncated,
    bounds,
    entries,
  };
}
