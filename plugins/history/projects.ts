/**
 * Project resolution shared by the briefing and the change feed. `proj-<slug>` pins a
 * grouping, `repo-<slug>` pins one repository, and a bare slug resolves through the
 * `aliases` lists of project nodes (or the `repo-`/`proj-` node of that slug) and rides up
 * from a repo to its grouping through `member-of`.
 *
 * These walk the `proj` and `repo` nodes only (the type index), never the whole graph.
 */
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Tenant } from '../../kernel/tenant.js';

export interface Resolved {
  node: NodeRecord;
  /** how the slug matched */
  via: 'id' | 'slug' | 'alias';
}

export function projectNodes(tenant: Tenant): NodeRecord[] {
  const out: NodeRecord[] = [];
  for (const type of ['repo', 'proj']) {
    for (const id of [...tenant.index.idsOfType(type)].sort()) {
      const r = tenant.index.get(id);
      if (r) out.push(r);
    }
  }
  return out;
}

export function listOf(record: NodeRecord, field: 'aliases' | 'fingerprints'): string[] {
  const v = record.frontmatter[field];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function isProjectNode(r: NodeRecord | undefined): r is NodeRecord {
  return r !== undefined && (r.type === 'proj' || r.type === 'repo');
}

/** A slug to its project node: a pinned id, then `repo-<slug>`, `proj-<slug>`, then aliases (repos first). */
export function resolveProject(tenant: Tenant, slug: string): Resolved | null {
  const direct = tenant.index.get(slug);
  if ((slug.startsWith('proj-') || slug.startsWith('repo-')) && isProjectNode(direct)) return { node: direct, via: 'id' };
  if (slug.startsWith('proj-') || slug.startsWith('repo-')) return null;
  for (const id of [`repo-${slug}`, `proj-${slug}`]) {
    const r = tenant.index.get(id);
    if (isProjectNode(r)) return { node: r, via: 'slug' };
  }
  for (const r of projectNodes(tenant)) if (listOf(r, 'aliases').includes(slug)) return { node: r, via: 'alias' };
  return null;
}

/** The grouping a repo is a member of (its first `member-of` edge to a proj node). */
export function groupingOf(tenant: Tenant, repo: NodeRecord): NodeRecord | null {
  for (const e of repo.edges) {
    if (e.type !== 'member-of') continue;
    const target = tenant.index.get(e.to);
    if (target?.type === 'proj') return target;
  }
  return null;
}

export function membersOf(tenant: Tenant, grouping: NodeRecord): NodeRecord[] {
  return tenant.index
    .inboundOf(grouping.id, ['member-of'])
    .map((e) => tenant.index.get(e.from))
    .filter((r): r is NodeRecord => r?.type === 'repo')
    .sort((a, b) => (a.id < b.id ? -1 : 1));
}

/** The project nodes a scope covers: a grouping with its member repos, or one pinned repo. */
export function scopeNodes(tenant: Tenant, slug: string): NodeRecord[] {
  const resolved = resolveProject(tenant, slug);
  if (!resolved) return [];
  const { node } = resolved;
  if (node.type === 'repo') {
    if (slug === node.id) return [node];
    const grouping = groupingOf(tenant, node);
    return grouping ? [grouping, ...membersOf(tenant, grouping)] : [node];
  }
  return [node, ...membersOf(tenant, node)];
}

/**
 * Values of a node's `project` field that fall in the scope of `slug`: each scope node's
 * id, its bare slug and its aliases; an unknown slug matches itself literally.
 */
export function scopeValues(tenant: Tenant, slug: string): Set<string> {
  const values = new Set<string>([slug]);
  for (const r of scopeNodes(tenant, slug)) {
    values.add(r.id);
    values.add(r.id.slice(r.type.length + 1));
    for (const a of listOf(r, 'aliases')) values.add(a);
  }
  return values;
}

/** Equal fingerprints; root commits also match abbreviated (one sha a prefix of the other). */
export function sameFingerprint(a: string, b: string): boolean {
  if (a === b) return true;
  if (!a.startsWith('root:') || !b.startsWith('root:')) return false;
  return a.startsWith(b) || b.startsWith(a);
}

/** Project nodes that already carry a fingerprint. */
export function ownersOfFingerprint(tenant: Tenant, fingerprint: string): NodeRecord[] {
  return projectNodes(tenant).filter((r) => listOf(r, 'fingerprints').some((f) => sameFingerprint(f, fingerprint)));
}
