/**
 * The relevance neighborhood of a question, its project, and its steward (docs/spec.md Writes rule
 * 12). Everything here reads the in-memory index; the walk is bounded (depth 2, at most
 * LEVEL_CAP nodes per level), so routing costs the same on a 50-node graph and a 50,000-node
 * one.
 *
 * The neighborhood, in order ("closest" first):
 *   1. the mentioned nodes, in the order the asker gave them (distance 0);
 *   2. nodes one edge away from a mentioned node, then two edges away (distance 1, 2),
 *      following edges in both directions; within a level the better-connected node comes
 *      first (the highest product of registry edge weights along its path), then by id;
 *   3. the question's project: its repo node, then the grouping the repo is a `member-of`
 *      (or the grouping itself when the project names one).
 * The walk never enters people or agents (they are who answers, not what the question is
 * about), questions, findings, non-traversable types (capture, correction, run) or
 * `proj-root` (everything hangs off the root; its stewards are the admins). Any of them
 * counts when mentioned outright; a mentioned question or finding leads on to its topic.
 */
import type { NodeRecord } from '../../kernel/graph-index.js';
import { ROOT_ID } from '../../kernel/tenants.js';
import type { Tenant } from '../../kernel/tenant.js';

/** hops walked from the mentioned nodes */
export const NEIGHBORHOOD_DEPTH = 2;
/** nodes kept per level of the walk (the best-connected ones) */
export const LEVEL_CAP = 200;

const PEOPLE = new Set(['person', 'agent']);
const NOT_TOPICS = new Set(['question', 'finding']);

export interface NeighborhoodEntry {
  id: string;
  /** hops from the nearest mentioned node; `project` for the project step */
  distance: number | 'project';
  /** product of the registry edge weights along the best path (1 for mentioned nodes) */
  weight: number;
}

export interface Routing {
  /** person the question is routed to, or null (unrouted) */
  routedTo: string | null;
  /** the node whose steward got it (a mentioned person: the person), or null */
  via: string | null;
}

function walkable(tenant: Tenant, record: NodeRecord | undefined): record is NodeRecord {
  if (!record || record.id === ROOT_ID) return false;
  if (PEOPLE.has(record.type) || NOT_TOPICS.has(record.type)) return false;
  return tenant.registry.nodeTypes.get(record.type)?.traversable ?? false;
}

/** Steps 1 and 2: the mentioned nodes and what lies within NEIGHBORHOOD_DEPTH edges of them. */
export function graphNeighborhood(tenant: Tenant, mentions: readonly string[]): NeighborhoodEntry[] {
  const { index, registry } = tenant;
  const out: NeighborhoodEntry[] = [];
  const seen = new Set<string>();
  let level: NeighborhoodEntry[] = [];
  for (const id of mentions) {
    if (seen.has(id) || !index.has(id)) continue;
    seen.add(id);
    const entry = { id, distance: 0, weight: 1 };
    out.push(entry);
    level.push(entry);
  }
  for (let distance = 1; distance <= NEIGHBORHOOD_DEPTH && level.length > 0; distance++) {
    const best = new Map<string, number>();
    const offer = (id: string, weight: number) => {
      if (seen.has(id) || !walkable(tenant, index.get(id))) return;
      if ((best.get(id) ?? -1) < weight) best.set(id, weight);
    };
    for (const from of level) {
      const record = index.get(from.id);
      // Later levels hold walkable nodes only; a mentioned person, agent or proj-root is a
      // seed the walk does not go through (a mentioned question or finding leads to its topic).
      if (!record || PEOPLE.has(record.type) || record.id === ROOT_ID) continue;
      for (const edge of record.edges) offer(edge.to, from.weight * registry.edgeWeight(edge.type));
      for (const inbound of index.inboundOf(record.id)) offer(inbound.from, from.weight * registry.edgeWeight(inbound.edge.type));
    }
    level = [...best]
      .sort(([a, wa], [b, wb]) => wb - wa || (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, LEVEL_CAP)
      .map(([id, weight]) => ({ id, distance, weight }));
    for (const entry of level) {
      seen.add(entry.id);
      out.push(entry);
    }
  }
  return out;
}

function aliasesOf(record: NodeRecord): string[] {
  const a = record.frontmatter.aliases;
  return Array.isArray(a) ? a.filter((x): x is string => typeof x === 'string') : [];
}

const isProjectNode = (r: NodeRecord | undefined): r is NodeRecord => r !== undefined && (r.type === 'repo' || r.type === 'proj');

/**
 * A project value to its node: `repo-<slug>`/`proj-<slug>` pin, a bare slug tries
 * `repo-<slug>`, `proj-<slug>`, then the `aliases` of repo and proj nodes (repos first).
 * Cost: the repo and proj nodes only (the type index), never the whole graph.
 */
export function resolveProjectNode(tenant: Tenant, value: string): NodeRecord | null {
  const { index } = tenant;
  if (value.startsWith('repo-') || value.startsWith('proj-')) {
    const pinned = index.get(value);
    return isProjectNode(pinned) ? pinned : null;
  }
  for (const id of [`repo-${value}`, `proj-${value}`]) {
    const r = index.get(id);
    if (isProjectNode(r)) return r;
  }
  for (const type of ['repo', 'proj']) {
    for (const id of [...index.idsOfType(type)].sort()) {
      const r = index.get(id);
      if (r && aliasesOf(r).includes(value)) return r;
    }
  }
  return null;
}

/** Step 3: the project's repo node, then its grouping (proj-root never counts). */
export function projectSteps(tenant: Tenant, project: string | null): NeighborhoodEntry[] {
  if (!project) return [];
  const node = resolveProjectNode(tenant, project);
  if (!node) return [];
  const ids = [node.id];
  if (node.type === 'repo') {
    for (const e of node.edges) {
      if (e.type === 'member-of' && tenant.index.get(e.to)?.type === 'proj') {
        ids.push(e.to);
        break;
      }
    }
  }
  return ids.filter((id) => id !== ROOT_ID).map((id) => ({ id, distance: 'project' as const, weight: 0 }));
}

/** The project a node stands for: its own `project` value, else its own id when it is a repo or grouping. */
function projectOfNode(record: NodeRecord): string | null {
  if (record.project && record.project !== ROOT_ID) return record.project;
  if (isProjectNode(record) && record.id !== ROOT_ID) return record.id;
  return null;
}

/** The project of the closest node in the neighborhood that has one. */
export function projectFromNeighborhood(tenant: Tenant, neighborhood: readonly NeighborhoodEntry[]): string | null {
  for (const entry of neighborhood) {
    const record = tenant.index.get(entry.id);
    if (!record || PEOPLE.has(record.type)) continue;
    const project = projectOfNode(record);
    if (project) return project;
  }
  return null;
}

/**
 * The asker's home project: the person node's `home_project` (or `project`) field, else the
 * first repo or grouping (by id) the person stewards, proj-root aside.
 */
export function homeProject(tenant: Tenant, personId: string): string | null {
  const person = tenant.index.get(personId);
  if (!person) return null;
  for (const field of ['home_project', 'project']) {
    const v = person.frontmatter[field];
    if (typeof v === 'string' && v !== '' && v !== ROOT_ID) return v;
  }
  const stewarded = person.edges
    .filter((e) => e.type === 'stewards' && e.to !== ROOT_ID && isProjectNode(tenant.index.get(e.to)))
    .map((e) => e.to)
    .sort();
  return stewarded[0] ?? null;
}

/** People stewarding a node (existing person nodes with a `stewards` edge to it), by id. */
export function stewardsOf(tenant: Tenant, id: string): string[] {
  return tenant.index
    .inboundOf(id, ['stewards'])
    .map((e) => e.from)
    .filter((from) => tenant.index.get(from)?.type === 'person')
    .sort();
}

/**
 * The steward of the closest node: walks the candidates in order and takes the first
 * steward who is not the asker (routing a question back to its asker helps no one). A
 * mentioned person is routed to directly.
 */
export function routeQuestion(tenant: Tenant, candidates: readonly NeighborhoodEntry[], asker: string): Routing {
  for (const entry of candidates) {
    const record = tenant.index.get(entry.id);
    if (!record) continue;
    if (record.type === 'person') {
      if (entry.distance === 0 && record.id !== asker) return { routedTo: record.id, via: record.id };
      continue;
    }
    const steward = stewardsOf(tenant, record.id).find((p) => p !== asker);
    if (steward) return { routedTo: steward, via: record.id };
  }
  return { routedTo: null, via: null };
}
