/**
 * Project scoping (docs/spec.md GET /v1/queue rule 5, and "Conventions"): a bare repo slug resolves
 * through project-node aliases and rides up to its home grouping, unioning the grouping's
 * member queues; `repo-<slug>` pins one repo; `proj-<slug>` pins a grouping. The result is
 * the set of frontmatter `project` values that fall inside the scope, so the caller can
 * read the matching nodes straight from the index's by-project sets.
 *
 * Cost: O(repo + proj nodes) to find aliases (a few hundred at most), never O(nodes).
 */
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Tenant } from '../../kernel/tenant.js';

export interface ProjectScope {
  /** the parameter as given */
  project: string;
  /** frontmatter `project` values inside the scope */
  values: Set<string>;
  repos: string[];
  groupings: string[];
}

function aliasesOf(record: NodeRecord): string[] {
  const a = record.frontmatter.aliases;
  return Array.isArray(a) ? a.filter((x): x is string => typeof x === 'string') : [];
}

function findBySlug(tenant: Tenant, type: 'repo' | 'proj', slug: string): NodeRecord | undefined {
  const direct = tenant.index.get(`${type}-${slug}`);
  if (direct?.type === type) return direct;
  const hits = [...tenant.index.idsOfType(type)]
    .map((id) => tenant.index.get(id)!)
    .filter((r) => aliasesOf(r).includes(slug))
    .sort((a, b) => (a.id < b.id ? -1 : 1));
  return hits[0];
}

/** The grouping a repo rides up to (its `member-of` edge to a proj node). */
function homeOf(tenant: Tenant, repo: NodeRecord): string | null {
  for (const e of repo.edges) if (e.type === 'member-of' && tenant.index.get(e.to)?.type === 'proj') return e.to;
  return null;
}

function membersOf(tenant: Tenant, grouping: string): string[] {
  return tenant.index
    .inboundOf(grouping, ['member-of'])
    .map((e) => e.from)
    .filter((id) => tenant.index.get(id)?.type === 'repo')
    .sort();
}

export function resolveScope(tenant: Tenant, project: string): ProjectScope {
  const repos = new Set<string>();
  const groupings = new Set<string>();
  const values = new Set<string>([project]);
  const pinned = tenant.index.get(project);
  if (pinned?.type === 'repo' && project.startsWith('repo-')) repos.add(project);
  else if (pinned?.type === 'proj' && project.startsWith('proj-')) groupings.add(project);
  else {
    const slug = project.replace(/^(repo|proj)-/, '');
    const repo = project.startsWith('proj-') ? undefined : findBySlug(tenant, 'repo', slug);
    if (repo && !project.startsWith('repo-')) {
      const home = homeOf(tenant, repo);
      if (home) groupings.add(home);
      repos.add(repo.id);
    } else if (repo) repos.add(repo.id);
    else {
      const proj = project.startsWith('repo-') ? undefined : findBySlug(tenant, 'proj', slug);
      if (proj) groupings.add(proj.id);
    }
  }
  for (const g of groupings) for (const member of membersOf(tenant, g)) repos.add(member);
  for (const id of [...repos, ...groupings]) {
    const record = tenant.index.get(id);
    values.add(id);
    values.add(id.replace(/^(repo|proj)-/, ''));
    if (record) for (const alias of aliasesOf(record)) values.add(alias);
  }
  return { project, values, repos: [...repos].sort(), groupings: [...groupings].sort() };
}
