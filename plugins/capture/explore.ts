/**
 * The `explore_graph` tool (tool-only, docs/spec.md): free-form browsing.
 *
 * - `root_id` (+ `depth` 1-2): the neighborhood, following edges both ways;
 * - `query`: the full-text matches, best first, with their similarity;
 * - no arguments: the programs overview. A program is a `proj-` grouping (other than the
 *   tenant root) with the work nodes inside it: nodes of queueable types whose `project` is
 *   the grouping's id, bare slug or alias, or that of one of its member repos (`member-of`).
 *   Progress counts them in the same four phases as analytics' program progress
 *   (core's `phaseOf`: done, active, blocked, open), so both views agree on a program.
 */
import { errors } from '../../kernel/errors.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import type { Tenant } from '../../kernel/tenant.js';
import { ROOT_ID } from '../../kernel/tenants.js';
import { isDone, phaseOf } from '../core/public.js';
import type { ProgramProgress } from '../core/public.js';
import type { ExploreGraphInput, ExploreGraphResult, ProgramsOverview } from './schemas.js';
import { searchOf } from './search.js';

const NEIGHBORHOOD_MAX = 100;
const SEARCH_LIMIT = 20;

export type Progress = ProgramProgress;

interface Brief {
  id: string;
  type: string;
  status: string;
  title: string;
  project: string | null;
}

function brief(r: NodeRecord): Brief {
  return { id: r.id, type: r.type, status: r.status, title: r.title, project: r.project };
}

function traversable(tenant: Tenant, r: NodeRecord | undefined): r is NodeRecord {
  return r !== undefined && (tenant.registry.nodeTypes.get(r.type)?.traversable ?? true);
}

function neighborhood(tenant: Tenant, rootId: string, depth: number) {
  const { index } = tenant;
  const root = index.get(rootId);
  if (!root) throw errors.notFound(`node ${rootId}`);
  const distance = new Map<string, number>([[rootId, 0]]);
  const edges: Array<{ from: string; type: string; to: string; [attr: string]: string }> = [];
  const seenEdges = new Set<string>();
  let frontier = [rootId];
  let truncated = false;
  for (let d = 1; d <= depth && frontier.length > 0; d++) {
    const next: string[] = [];
    for (const id of frontier) {
      const r = index.get(id)!;
      const links: Array<{ from: string; edge: NodeRecord['edges'][number]; other: string }> = [
        ...r.edges.map((edge) => ({ from: id, edge, other: edge.to })),
        ...index.inboundOf(id).map((e) => ({ from: e.from, edge: e.edge, other: e.from })),
      ];
      for (const link of links) {
        const other = index.get(link.other);
        if (!traversable(tenant, other)) continue;
        if (!distance.has(link.other)) {
          if (distance.size >= NEIGHBORHOOD_MAX) {
            truncated = true;
            continue;
          }
          distance.set(link.other, d);
          next.push(link.other);
        }
        const key = `${link.from}\u0000${link.edge.type}\u0000${link.edge.to}`;
        if (!seenEdges.has(key)) {
          seenEdges.add(key);
          edges.push({ ...link.edge, from: link.from, type: link.edge.type, to: link.edge.to });
        }
      }
    }
    frontier = next.sort();
  }
  const nodes = [...distance.entries()]
    .map(([id, dist]) => ({ ...brief(index.get(id)!), distance: dist, done: isDone(tenant, index.get(id)!) }))
    .sort((a, b) => a.distance - b.distance || (a.id < b.id ? -1 : 1));
  edges.sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : a.type < b.type ? -1 : a.type > b.type ? 1 : a.to < b.to ? -1 : 1));
  const text = [
    `${root.id} [${root.type}, ${root.status}] ${root.title}: ${nodes.length - 1} neighbor(s) within ${depth} hop(s)${truncated ? ` (truncated at ${NEIGHBORHOOD_MAX})` : ''}`,
    ...edges.map((e) => `${e.from} -${e.type}-> ${e.to}`),
  ].join('\n');
  return { mode: 'neighborhood' as const, root: brief(root), depth, nodes, edges, count: nodes.length, truncated, text };
}

function searchMode(tenant: Tenant, query: string) {
  const { hits } = searchOf(tenant).search(query, (id) => traversable(tenant, tenant.index.get(id)), 0);
  const results = hits.slice(0, SEARCH_LIMIT).map((h) => ({ ...brief(tenant.index.get(h.id)!), sim: h.sim }));
  return { mode: 'search' as const, query, results, count: results.length, total: hits.length };
}

function aliasesOf(r: NodeRecord): string[] {
  const a = r.frontmatter.aliases;
  return Array.isArray(a) ? a.filter((x): x is string => typeof x === 'string') : [];
}

function emptyProgress(): Progress {
  return { total: 0, done: 0, active: 0, blocked: 0, open: 0, pct: 0, statuses: {} };
}

function count(tenant: Tenant, progress: Progress, r: NodeRecord): void {
  progress.total++;
  progress.statuses[r.status] = (progress.statuses[r.status] ?? 0) + 1;
  progress[phaseOf(tenant, r)]++;
}

function finish(p: Progress): Progress {
  p.pct = p.total === 0 ? 0 : Math.round((p.done / p.total) * 100);
  p.statuses = Object.fromEntries(Object.entries(p.statuses).sort(([a], [b]) => (a < b ? -1 : 1)));
  return p;
}

export function programsOverview(tenant: Tenant): ProgramsOverview {
  const { index, registry } = tenant;
  // Project values -> program id, from the proj and repo nodes (the type index, a few hundred at most).
  const owner = new Map<string, string>();
  const programs = [...index.idsOfType('proj')]
    .filter((id) => id !== ROOT_ID)
    .sort()
    .map((id) => index.get(id)!);
  const claim = (value: string, program: string) => {
    if (!owner.has(value)) owner.set(value, program);
  };
  const repos = new Map<string, string[]>();
  for (const p of programs) for (const v of [p.id, p.id.slice('proj-'.length), ...aliasesOf(p)]) claim(v, p.id);
  for (const repoId of [...index.idsOfType('repo')].sort()) {
    const repo = index.get(repoId)!;
    const home = repo.edges.find((e) => e.type === 'member-of' && programs.some((p) => p.id === e.to))?.to;
    if (!home) continue;
    repos.set(home, [...(repos.get(home) ?? []), repo.id]);
    for (const v of [repo.id, repo.id.slice('repo-'.length), ...aliasesOf(repo)]) claim(v, home);
  }
  const progress = new Map<string, Progress>(programs.map((p) => [p.id, emptyProgress()]));
  const unscoped = emptyProgress();
  // The overview summarizes every program, so it counts every work node: O(work nodes) via
  // the type index, never a walk of the whole graph.
  for (const type of [...registry.nodeTypes.values()].filter((t) => t.queueable).map((t) => t.type)) {
    for (const id of index.idsOfType(type)) {
      const r = index.get(id)!;
      const program = r.project ? owner.get(r.project) : undefined;
      count(tenant, program ? progress.get(program)! : unscoped, r);
    }
  }
  const list = programs.map((p) => ({
    id: p.id,
    title: p.title,
    status: p.status,
    summary: typeof p.frontmatter.summary === 'string' ? p.frontmatter.summary : '',
    repos: repos.get(p.id) ?? [],
    stewards: index
      .inboundOf(p.id, ['stewards'])
      .map((e) => e.from)
      .sort(),
    progress: finish(progress.get(p.id)!),
  }));
  const text = [
    `${list.length} program(s)`,
    ...list.map(
      (p) =>
        `${p.id} [${p.status}] ${p.title}: ${p.progress.done}/${p.progress.total} done (${p.progress.pct}%), ${p.progress.active} active, ${p.progress.blocked} blocked, ${p.progress.open} open`,
    ),
    `outside any program: ${unscoped.total} work node(s)`,
  ].join('\n');
  return { mode: 'programs', programs: list, count: list.length, unscoped: finish(unscoped), text };
}

export async function exploreGraph(ctx: OpContext, input: Static<typeof ExploreGraphInput>): Promise<ExploreGraphResult> {
  const body = input ?? {};
  const { tenant } = ctx;
  const answer: ExploreGraphResult = body.root_id
    ? neighborhood(tenant, body.root_id, body.depth ?? 1)
    : body.query
      ? searchMode(tenant, body.query)
      : programsOverview(tenant);
  // the text copy repeats the JSON: sent only when asked (lean answers for agents)
  if (!body.include_text) delete answer.text;
  return answer;
}
