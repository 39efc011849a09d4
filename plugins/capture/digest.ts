/**
 * The digest compiler behind POST /v1/digest and the `query_graph` tool (docs/spec.md Writes rule
 * 1): a compact text about the nodes that match a query (full-text, `search.ts`) or about
 * one root node and its neighbors, with the corrections that fire on the compile applied
 * (pins added, exclusions removed, guidance appended).
 */
import { errors } from '../../kernel/errors.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import type { Tenant } from '../../kernel/tenant.js';
import { resolveScope } from '../core/public.js';
import { firingCorrections, stringList } from './corrections.js';
import type { CompileDigestInput, CompileDigestResult, QueryGraphInput, QueryGraphResult } from './schemas.js';
import { searchOf } from './search.js';

export const DEFAULT_MIN_SIM = 0.3;
/** Seeds listed for a query. */
const MAX_SEEDS = 12;
/** Links listed per node before "(+N more)". */
const MAX_LINKS = 12;
/** query length at most (the schemas' maxLength) */
export const QUERY_MAX = 2000;

/** A digest request after the rules the schema cannot state (root over query, defaults): not a schema copy. */
export interface ParsedDigestRequest {
  query: string | null;
  root: string | null;
  project: string | null;
  minSim: number;
  mode: 'digest' | 'full';
}

/** The fields both digest operations share; the root comes apart (`root` on POST /v1/digest, `root_id` on query_graph). */
type DigestInput = Pick<Static<typeof QueryGraphInput>, 'query' | 'project' | 'min_sim'>;

/** The rules the schema cannot state: `root` wins over `query` (docs/spec.md), an unknown root is 422, a query is needed without one. */
export function parseCompileInput(
  ctx: OpContext,
  body: DigestInput,
  rawRoot: string | undefined,
  rootField: 'root' | 'root_id',
  mode: 'digest' | 'full',
): ParsedDigestRequest {
  let root: string | null = null;
  if (rawRoot !== undefined && rawRoot !== '') {
    root = rawRoot;
    if (!ctx.tenant.index.has(root))
      throw errors.validation(`unknown ${rootField} ${root}`, [{ field: rootField, message: 'no node with this id' }]);
  }
  let query: string | null = null;
  if (root === null) {
    if (body.query === undefined || body.query.trim() === '') {
      throw errors.validation(`query is required (or ${rootField})`, [
        { field: 'query', message: `required non-empty string when ${rootField} is absent` },
      ]);
    }
    query = body.query.trim();
  }
  const project = body.project ?? null;
  const minSim = body.min_sim ?? DEFAULT_MIN_SIM;
  return { query, root, project, minSim, mode };
}

function head(r: NodeRecord): string {
  const priority = typeof r.frontmatter.priority === 'string' ? `, ${r.frontmatter.priority}` : '';
  return `${r.id} [${r.type}, ${r.status}${priority}] ${r.title}`;
}

function traversable(tenant: Tenant, r: NodeRecord | undefined): r is NodeRecord {
  return r !== undefined && (tenant.registry.nodeTypes.get(r.type)?.traversable ?? true);
}

/** One line per outbound edge and per inbound edge (under its inverse label), neighbors described. */
function linkLines(tenant: Tenant, r: NodeRecord, excluded: ReadonlySet<string>): string[] {
  const lines: string[] = [];
  const describe = (id: string) => {
    const n = tenant.index.get(id);
    return n ? `${id} [${n.type}, ${n.status}] ${n.title}` : `${id} (missing)`;
  };
  for (const e of r.edges) {
    if (excluded.has(e.to)) continue;
    const n = tenant.index.get(e.to);
    if (n && !traversable(tenant, n)) continue;
    const { type, to, ...attrs } = e;
    const extra = Object.entries(attrs)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
    lines.push(`${type} -> ${describe(to)}${extra ? ` (${extra})` : ''}`);
  }
  for (const { from, edge } of tenant.index
    .inboundOf(r.id)
    .sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : a.edge.type < b.edge.type ? -1 : 1))) {
    if (excluded.has(from) || !traversable(tenant, tenant.index.get(from))) continue;
    const label = tenant.registry.edgeTypes.get(edge.type)?.inverse_label ?? `${edge.type} (inbound)`;
    lines.push(`${label} <- ${describe(from)}`);
  }
  return lines;
}

function section(tenant: Tenant, r: NodeRecord, note: string | null, mode: 'digest' | 'full', excluded: ReadonlySet<string>): string[] {
  const out = [`## ${head(r)}`];
  const meta = [note, r.project ? `project ${r.project}` : null].filter(Boolean).join(' · ');
  if (meta) out.push(meta);
  const summary = typeof r.frontmatter.summary === 'string' ? r.frontmatter.summary.trim() : '';
  if (summary && summary !== r.title) out.push(summary);
  const links = linkLines(tenant, r, excluded);
  for (const l of links.slice(0, MAX_LINKS)) out.push(`- ${l}`);
  if (links.length > MAX_LINKS) out.push(`- (+${links.length - MAX_LINKS} more links)`);
  if (mode === 'full' && r.body.trim()) out.push('', r.body.trim());
  out.push('');
  return out;
}

function guidanceLines(corrections: NodeRecord[]): string[] {
  const withGuidance = corrections.filter((c) => typeof c.frontmatter.guidance === 'string' && c.frontmatter.guidance.trim());
  if (withGuidance.length === 0) return [];
  const out = ['## Guidance'];
  for (const c of withGuidance) out.push(`- ${c.id} (${String(c.frontmatter.target)}): ${String(c.frontmatter.guidance).trim()}`);
  out.push('');
  return out;
}

export function compile(ctx: OpContext, input: ParsedDigestRequest): QueryGraphResult {
  const { tenant } = ctx;
  const { index } = tenant;
  if (input.root) {
    const root = index.get(input.root)!;
    const project = input.project ?? root.project;
    // Corrections about the root fire first; neighbors are listed, not matched, so only the root counts as a seed.
    const corrections = firingCorrections(tenant, project, new Set([root.id]));
    const excluded = new Set(corrections.flatMap((c) => stringList(c.frontmatter.exclude)).filter((id) => id !== root.id));
    const pinned = corrections.flatMap((c) => stringList(c.frontmatter.pin).map((id) => ({ id, by: c.id })));
    const neighbors = new Set<string>();
    for (const e of root.edges) neighbors.add(e.to);
    for (const e of index.inboundOf(root.id)) neighbors.add(e.from);
    const nodeIds = [
      root.id,
      ...[...neighbors].filter((id) => id !== root.id && !excluded.has(id) && traversable(tenant, index.get(id))).sort(),
    ];
    const lines = [`# Digest of ${root.id}`, '', ...section(tenant, root, 'root', input.mode, excluded)];
    for (const p of pinned) {
      const r = index.get(p.id);
      if (!r || excluded.has(p.id) || nodeIds.includes(p.id)) continue;
      nodeIds.push(p.id);
      lines.push(...section(tenant, r, `pinned by ${p.by}`, input.mode, excluded));
    }
    lines.push(...guidanceLines(corrections));
    return { found: true, text: lines.join('\n').trimEnd() + '\n', node_ids: nodeIds, top_sim: 1 };
  }

  const query = input.query!;
  // The query is echoed on one line whatever whitespace it came with.
  const shown = query.replace(/\s+/g, ' ');
  const scope = input.project ? resolveScope(tenant, input.project) : null;
  const keep = (id: string) => {
    const r = index.get(id);
    return traversable(tenant, r) && (scope === null || (r.project !== null && scope.values.has(r.project)));
  };
  const { hits, topSim } = searchOf(tenant).search(query, keep, input.minSim);
  const seedIds = new Set(hits.slice(0, MAX_SEEDS).map((h) => h.id));
  const corrections = firingCorrections(tenant, input.project, seedIds);
  const excluded = new Set(corrections.flatMap((c) => stringList(c.frontmatter.exclude)));
  const seeds = hits.filter((h) => !excluded.has(h.id)).slice(0, MAX_SEEDS);
  const pinned: Array<{ r: NodeRecord; by: string }> = [];
  for (const c of corrections) {
    for (const id of stringList(c.frontmatter.pin)) {
      const r = index.get(id);
      if (r && !excluded.has(id) && !seeds.some((s) => s.id === id) && !pinned.some((p) => p.r.id === id)) pinned.push({ r, by: c.id });
    }
  }
  const scopeNote = input.project ? ` (project ${input.project})` : '';
  const best = seeds.length > 0 ? Math.max(...seeds.map((s) => s.sim)) : topSim;
  if (seeds.length === 0 && pinned.length === 0) {
    const text =
      `No node matches "${shown}"${scopeNote} at min_sim ${input.minSim}` +
      (topSim > 0 ? `; the closest had similarity ${topSim}.\n` : '.\n');
    return { found: false, text, node_ids: [], top_sim: topSim };
  }
  const lines = [
    `# Digest: "${shown}"${scopeNote}`,
    `${seeds.length} match${seeds.length === 1 ? '' : 'es'}${hits.length > seeds.length ? ` of ${hits.length}` : ''}, top similarity ${best}${pinned.length ? `, ${pinned.length} pinned` : ''}`,
    '',
  ];
  for (const s of seeds) lines.push(...section(tenant, index.get(s.id)!, `sim ${s.sim}`, input.mode, excluded));
  for (const p of pinned) lines.push(...section(tenant, p.r, `pinned by ${p.by}`, input.mode, excluded));
  lines.push(...guidanceLines(corrections));
  return {
    found: true,
    text: lines.join('\n').trimEnd() + '\n',
    node_ids: [...seeds.map((s) => s.id), ...pinned.map((p) => p.r.id)],
    top_sim: best,
  };
}

export async function compileDigest(ctx: OpContext, input: Static<typeof CompileDigestInput>): Promise<Static<typeof CompileDigestResult>> {
  const compiled = compile(ctx, parseCompileInput(ctx, input, input.root, 'root', 'digest'));
  return { found: compiled.found, text: compiled.text };
}

export async function queryGraph(ctx: OpContext, input: Static<typeof QueryGraphInput>): Promise<QueryGraphResult> {
  return compile(ctx, parseCompileInput(ctx, input, input.root_id, 'root_id', input.mode ?? 'digest'));
}
