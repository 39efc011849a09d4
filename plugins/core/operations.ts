/**
 * Core operations: one function per operation, shared by the REST route and the MCP tool
 * (put_node is in put.ts, patch_node in patch.ts, get_node's cache in node-read-cache.ts).
 */
import { errors, SvcError } from '../../kernel/errors.js';
import { didYouMean, nearest } from '../../kernel/error-hints.js';
import type { Edge, NodeRecord } from '../../kernel/graph-index.js';
import type { Static, WriteResult as WriteResultSchema } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import { patterns } from '../../kernel/registry.js';
import type { CommittedNode, WriteDraft } from '../../kernel/write-draft.js';
import { writeActorOf } from '../../kernel/tenants.js';
import type {
  AddEdgeInput,
  GetNodeInput,
  GetStatusOutput,
  GetStatusInput,
  LinkCommitInput,
  RemoveEdgeInput,
  SchemaInput,
  SetPriorityInput,
  SetReadinessInput,
  SetStatusInput,
  StatusWriteResult,
} from './api.js';
import { nodeView } from './node-view.js';

/** The write success answer (kernel/operation.ts `WriteResult`). */
export type WriteResult = Static<typeof WriteResultSchema>;

export const PROVENANCE_KEYS = [
  'priority',
  'priority_by',
  'priority_at',
  'priority_via',
  'readiness',
  'readiness_by',
  'readiness_at',
  'readiness_via',
];

export function writeStatus(c: CommittedNode | undefined): 'created' | 'updated' | 'skipped' {
  if (!c || c.status === 'unchanged' || c.status === 'deleted') return 'skipped';
  return c.status;
}

/** What a client write asks of the plugins' node write checks (leases: the holder's claim). */
export interface WriteIntent {
  /** an admin's override of another holder's claim */
  force?: boolean;
  /** the status the write moves the node to, when it changes it */
  status?: string;
}

/** `force` overrides another person's claim: admins only (the same rule as claim's force). */
export function checkForce(ctx: OpContext, force: boolean | undefined): void {
  if (force === true && !ctx.actor.isAdmin)
    throw errors.forbidden("force overrides another holder's lease and needs an admin", { field: 'force' });
}

/**
 * Asks every enabled plugin's node write check about a client write to an existing node
 * (inside the write queue, before the change is drafted). A check may refuse (throws) or add
 * warnings; `landed` runs the checks' follow-ups once the write committed.
 */
export function guardNodeWrite(
  ctx: OpContext,
  id: string,
  op: string,
  intent: WriteIntent = {},
): { warnings: string[]; landed: (after: NodeRecord) => Promise<string[]> } {
  const record = ctx.tenant.index.get(id);
  const checks = ctx.services.host.nodeWriteChecksFor(ctx.tenant);
  if (!record || checks.length === 0) return { warnings: [], landed: async () => [] };
  const warnings: string[] = [];
  const followUps: Array<(after: NodeRecord) => Promise<string[] | void>> = [];
  for (const check of checks) {
    const verdict = check(ctx, record, {
      op,
      force: intent.force === true,
      ...(intent.status !== undefined ? { status: intent.status } : {}),
    });
    if (!verdict) continue;
    warnings.push(...verdict.warnings);
    if (verdict.landed) followUps.push(verdict.landed);
  }
  return {
    warnings,
    landed: async (after) => {
      const out: string[] = [];
      for (const f of followUps) out.push(...((await f(after)) ?? []));
      return out;
    },
  };
}

/** Runs a single-node write and shapes the docs/spec.md write success answer. */
export async function singleWrite(
  ctx: OpContext,
  op: string,
  id: string,
  fn: (draft: WriteDraft) => Promise<{ skip?: boolean } | void>,
  intent: WriteIntent = {},
): Promise<WriteResult> {
  const actor = writeActorOf(ctx.actor);
  return ctx.tenant.write(actor, { op, via: ctx.via }, async (draft) => {
    const guard = guardNodeWrite(ctx, id, op, intent);
    draft.warnings.push(...guard.warnings);
    const outcome = await fn(draft);
    if (outcome?.skip)
      return { status: 'skipped' as const, id, revision: ctx.tenant.index.get(id)?.revision ?? null, warnings: draft.warnings };
    // nothing else is persisted on the strength of this commit: Tenant.write awaits its fdatasync (group commit)
    const committed = await draft.commit({ deferDurability: true });
    const written = [...committed.values()].find((c) => c.status !== 'unchanged') ?? committed.get(id);
    const changedId = written?.id ?? id;
    const after = committed.get(id);
    if (after?.record && after.status === 'updated') draft.warnings.push(...(await guard.landed(after.record)));
    return {
      status: writeStatus(written),
      id: changedId,
      revision: ctx.tenant.index.get(changedId)?.revision ?? null,
      warnings: draft.warnings,
    };
  });
}

export function existing(draft: WriteDraft, id: string) {
  const node = draft.get(id);
  if (!node) throw errors.notFound(`node ${id}`);
  return node;
}

// ---------------------------------------------------------------- reads

export async function getStatus(ctx: OpContext, input: Static<typeof GetStatusInput>): Promise<Static<typeof GetStatusOutput>> {
  const { tenant } = ctx;
  const byType: Record<string, number> = {};
  for (const type of tenant.registry.nodeTypes.keys()) {
    const n = tenant.index.idsOfType(type).size;
    if (n > 0) byType[type] = n;
  }
  const mem = process.memoryUsage();
  const payload: Static<typeof GetStatusOutput> = {
    node_count: tenant.index.size,
    projects: tenant.index.projects(),
    head: tenant.head,
    uptime: Math.round(process.uptime()),
    metrics: { nodes_by_type: byType, rss_bytes: mem.rss, heap_used_bytes: mem.heapUsed },
  };
  if (input.titles) {
    // Deliberately O(nodes): the caller asked for the whole title index.
    payload.titles = [...tenant.index.nodes.values()]
      .map((r) => ({ id: r.id, type: r.type, project: r.project, title: r.title }))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }
  return payload;
}

export async function me(ctx: OpContext) {
  const { actor } = ctx;
  return {
    person: actor.bound ? actor.personId : null,
    name: actor.bound ? actor.name : null,
    email: actor.bound ? actor.email : null,
    bound: actor.bound,
    is_admin: actor.isAdmin,
    org: ctx.tenant.org,
    ...(actor.agent ? { agent: actor.agent, session: actor.session } : {}),
  };
}

export async function schema(ctx: OpContext, input: Static<typeof SchemaInput>) {
  return ctx.tenant.registry.describe(Boolean(input.code));
}

/** The node's view, uncached (get_node serves it through node-read-cache.ts). */
export async function readNode(ctx: OpContext, input: Static<typeof GetNodeInput>) {
  const id = input.id;
  const record = ctx.tenant.index.get(id);
  if (!record) throw errors.notFound(`node ${id}`);
  return nodeView(ctx.tenant, record);
}

// ---------------------------------------------------------------- edges

/** Attribute names and values are tokens; numbers and booleans are written as their text. */
export function checkAttrs(attrs: Record<string, unknown> | undefined): Record<string, string> | undefined {
  if (attrs === undefined) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(attrs as Record<string, unknown>)) {
    if (k === 'type' || k === 'to') throw errors.validation(`'${k}' is a reserved edge attribute name`, [{ field: `attrs.${k}` }]);
    if (!/^[A-Za-z0-9_-]+$/.test(k)) throw errors.validation(`attribute name '${k}' must be [A-Za-z0-9_-]`, [{ field: `attrs.${k}` }]);
    const value = typeof v === 'number' || typeof v === 'boolean' ? String(v) : v;
    if (typeof value !== 'string' || !patterns.attrValue.test(value)) {
      throw errors.validation(`attribute ${k} must be a simple [A-Za-z0-9_-] token`, [{ field: `attrs.${k}` }]);
    }
    out[k] = value;
  }
  return out;
}

function sameAttrs(edge: Edge, attrs: Record<string, string>): boolean {
  const { type: _t, to: _to, ...rest } = edge;
  const a = Object.keys(rest).sort();
  const b = Object.keys(attrs).sort();
  return a.length === b.length && a.every((k, i) => k === b[i] && rest[k] === attrs[k]);
}

/** 422 for an edge type the registry lacks, with the nearest names (canonical, inverse and alias forms) or the canonical list. */
export function unknownEdgeType(ctx: OpContext, type: string): SvcError {
  const defs = [...ctx.tenant.registry.edgeTypes.values()];
  const names = defs
    .flatMap((d) => [d.type, d.inverse_label, ...d.aliases, ...d.inverse_aliases])
    .filter((n): n is string => typeof n === 'string' && n.length > 0);
  const suggestions = nearest(type, new Set(names));
  const canonical = defs.map((d) => d.type);
  const hint = suggestions.length > 0 ? didYouMean(suggestions) : `; the edge types are ${canonical.join(', ')}`;
  return errors.validation(`unknown edge type '${type}'${hint}`, [
    { field: 'type', message: 'not an edge type of the schema (the schema tool lists them)', did_you_mean: suggestions },
  ]);
}

function normalizeEdgeInput(ctx: OpContext, input: Static<typeof RemoveEdgeInput>) {
  const { id, to } = input;
  const normalized = ctx.tenant.registry.normalizeEdge(input.type);
  if (!normalized) throw unknownEdgeType(ctx, input.type);
  // An inverse form is flipped: the canonical edge is written on the other node.
  const owner = normalized.inverted ? to : id;
  const target = normalized.inverted ? id : to;
  const warnings: string[] = [];
  if (normalized.inverted) warnings.push(`inverse form '${input.type}' written as '${normalized.type}' on ${owner} -> ${target}`);
  else if (normalized.via === 'alias') warnings.push(`alias '${input.type}' normalized to '${normalized.type}'`);
  return { id, owner, target, type: normalized.type, warnings };
}

/**
 * Adds (type, target) to an edge list with the docs/spec.md edge-add rules: an identical edge is a
 * no-op, different attributes replace the attribute set, a review-family edge replaces its
 * sibling to the same person (with a `flipped` warning). Returns whether the list changed.
 */
export function addToEdges(
  ctx: OpContext,
  edges: Edge[],
  type: string,
  target: string,
  attrs: Record<string, string> | undefined,
  warnings: string[],
): boolean {
  const edgeDef = ctx.tenant.registry.edgeTypes.get(type)!;
  const same = edges.findIndex((x) => x.type === type && x.to === target);
  if (same >= 0) {
    if (!attrs || sameAttrs(edges[same]!, attrs)) return false;
    edges[same] = { type, to: target, ...attrs };
    return true;
  }
  if (edgeDef.review_family) {
    const sibling = edges.findIndex((x) => x.to === target && ctx.tenant.registry.edgeTypes.get(x.type)?.review_family);
    if (sibling >= 0) {
      warnings.push(`flipped ${edges[sibling]!.type} -> ${type} for ${target}`);
      edges[sibling] = { type, to: target, ...(attrs ?? {}) };
      return true;
    }
  }
  edges.push({ type, to: target, ...(attrs ?? {}) });
  return true;
}

export async function addEdge(ctx: OpContext, input: Static<typeof AddEdgeInput>) {
  const e = normalizeEdgeInput(ctx, input);
  const attrs = checkAttrs(input.attrs);
  checkForce(ctx, input.force);
  return singleWrite(
    ctx,
    'add_edge',
    e.owner,
    async (draft) => {
      const node = existing(draft, e.owner);
      if (!draft.get(e.target)) throw errors.notFound(`node ${e.target}`);
      draft.warnings.push(...e.warnings);
      const edges: Edge[] = Array.isArray(node.frontmatter.edges) ? (node.frontmatter.edges as Edge[]) : [];
      if (!addToEdges(ctx, edges, e.type, e.target, attrs, draft.warnings)) return { skip: true };
      node.frontmatter.edges = edges;
      draft.put(node);
    },
    { force: input.force },
  );
}

export async function removeEdge(ctx: OpContext, input: Static<typeof RemoveEdgeInput>) {
  const e = normalizeEdgeInput(ctx, input);
  checkForce(ctx, input.force);
  return singleWrite(
    ctx,
    'remove_edge',
    e.owner,
    async (draft) => {
      const node = existing(draft, e.owner);
      draft.warnings.push(...e.warnings);
      const edges: Edge[] = Array.isArray(node.frontmatter.edges) ? (node.frontmatter.edges as Edge[]) : [];
      const kept = edges.filter((x) => !(x.type === e.type && x.to === e.target));
      if (kept.length === edges.length) return { skip: true };
      if (kept.length === 0) delete node.frontmatter.edges;
      else node.frontmatter.edges = kept;
      draft.put(node);
    },
    { force: input.force },
  );
}

// ---------------------------------------------------------------- scalars

/**
 * Runs a write that moves `record` to `to` between the plugins' status effects (leases: a
 * move to in-progress takes the lease): `before` may veto, `abort` undoes it when the write
 * fails, `after` adds its keys to the answer. set_status and patch_node share it.
 */
export async function withStatusEffects(
  ctx: OpContext,
  record: NodeRecord,
  to: string,
  write: () => Promise<WriteResult>,
): Promise<Static<typeof StatusWriteResult>> {
  const effects = ctx.services.host.statusEffectsFor(ctx.tenant);
  const from = record.status;
  const ran: typeof effects = [];
  let result: Static<typeof StatusWriteResult>;
  try {
    if (from !== to) {
      for (const effect of effects) {
        await effect.before?.(ctx, record, from, to);
        ran.push(effect);
      }
    }
    result = await write();
  } catch (err) {
    for (const effect of ran) await effect.abort?.(ctx, record, from, to).catch(() => undefined);
    throw err;
  }
  // `before` effects took something (a lease) for this move; finish them even when a
  // concurrent write already landed the same status and this one was skipped.
  if (result.status === 'updated' || ran.length > 0) {
    const after = ctx.tenant.index.get(record.id)!;
    for (const effect of effects) Object.assign(result, (await effect.after?.(ctx, after, from, to)) ?? {});
  }
  return result;
}

export async function setStatus(ctx: OpContext, input: Static<typeof SetStatusInput>) {
  const { id, status } = input;
  checkForce(ctx, input.force);
  const record = ctx.tenant.index.get(id);
  if (!record) throw errors.notFound(`node ${id}`);
  return withStatusEffects(ctx, record, status, () =>
    singleWrite(
      ctx,
      'set_status',
      id,
      async (draft) => {
        const node = existing(draft, id);
        // the optional revision echo (a board's drop): checked inside the write queue, before the skip, so a stale view always hears of the other change
        if (input.revision !== undefined && node.revision !== input.revision)
          throw errors.revisionConflict(id, node.revision, input.revision);
        if (node.frontmatter.status === status) return { skip: true };
        node.frontmatter.status = status;
        draft.put(node);
      },
      { force: input.force, status },
    ),
  );
}

const PRIORITY_CLEAR = new Set(['none', 'clear', '', 'p0']);
const READINESS_CLEAR = new Set(['none', 'clear', '']);

function provenance(ctx: OpContext, prefix: string): Record<string, string> {
  return {
    [`${prefix}_by`]: ctx.actor.personId,
    [`${prefix}_at`]: new Date(ctx.services.clock.now()).toISOString(),
    [`${prefix}_via`]: ctx.actor.agent ? 'dispatch' : ctx.via,
  };
}

export async function setPriority(ctx: OpContext, input: Static<typeof SetPriorityInput>) {
  const id = input.id;
  checkForce(ctx, input.force);
  const value = input.priority === null || input.priority === undefined ? '' : input.priority;
  if (typeof value !== 'string' || !(PRIORITY_CLEAR.has(value) || ['p1', 'p2', 'p3'].includes(value))) {
    throw errors.invalidNode(`unknown priority '${String(value)}'`, {
      field: 'priority',
      allowed: ['p1', 'p2', 'p3', 'none', 'clear', '', 'p0'],
    });
  }
  return singleWrite(
    ctx,
    'set_priority',
    id,
    async (draft) => {
      const node = existing(draft, id);
      if (PRIORITY_CLEAR.has(value)) {
        if (node.frontmatter.priority === undefined) return { skip: true };
        delete node.frontmatter.priority;
      } else {
        if (node.frontmatter.priority === value) return { skip: true };
        node.frontmatter.priority = value;
      }
      Object.assign(node.frontmatter, provenance(ctx, 'priority'));
      draft.put(node);
    },
    { force: input.force },
  );
}

export async function setReadiness(ctx: OpContext, input: Static<typeof SetReadinessInput>) {
  const id = input.id;
  checkForce(ctx, input.force);
  const value = input.readiness === null || input.readiness === undefined ? '' : input.readiness;
  if (typeof value !== 'string' || !(READINESS_CLEAR.has(value) || value === 'agent')) {
    throw errors.invalidNode(`unknown readiness '${String(value)}' (only 'agent' may be set; 'human' is derived)`, {
      field: 'readiness',
      allowed: ['agent', 'none', 'clear', '', null],
    });
  }
  return singleWrite(
    ctx,
    'set_readiness',
    id,
    async (draft) => {
      const node = existing(draft, id);
      if (READINESS_CLEAR.has(value)) {
        if (node.frontmatter.readiness === undefined) return { skip: true };
        delete node.frontmatter.readiness;
      } else {
        if (node.frontmatter.readiness === value) return { skip: true };
        node.frontmatter.readiness = value;
      }
      Object.assign(node.frontmatter, provenance(ctx, 'readiness'));
      draft.put(node);
    },
    { force: input.force },
  );
}

export async function linkCommit(ctx: OpContext, input: Static<typeof LinkCommitInput>) {
  const { id, repo, sha } = input;
  checkForce(ctx, input.force);
  return singleWrite(
    ctx,
    'link_commit',
    id,
    async (draft) => {
      const node = existing(draft, id);
      const commits: string[] = Array.isArray(node.frontmatter.commits) ? (node.frontmatter.commits as string[]).map(String) : [];
      const same = commits.findIndex((c) => {
        const [r, s] = c.split('@');
        return r === repo && s !== undefined && (s.startsWith(sha) || sha.startsWith(s));
      });
      if (same >= 0) {
        const known = commits[same]!.split('@')[1]!;
        if (known.length >= sha.length) return { skip: true };
        commits[same] = `${repo}@${sha}`; // a longer sha upgrades the abbreviated link
      } else {
        if (commits.length >= 40) throw errors.validation('a node links at most 40 commits', [{ field: 'commits', message: 'at most 40' }]);
        commits.push(`${repo}@${sha}`);
      }
      node.frontmatter.commits = commits;
      draft.put(node);
    },
    { force: input.force },
  );
}

export { SvcError };
