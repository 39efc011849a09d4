/**
 * Core operations: one function per operation, shared by the REST route and the MCP tool.
 */
import { CodecError, parseClientMarkdown, type Frontmatter } from '../../kernel/codec.js';
import { errors, isSvcError, SvcError } from '../../kernel/errors.js';
import type { Edge } from '../../kernel/graph-index.js';
import { StatusPayload, type OpContext } from '../../kernel/plugin.js';
import { patterns } from '../../kernel/registry.js';
import type { CommittedNode, WriteDraft } from '../../kernel/tenant.js';
import { writeActorOf } from '../../kernel/tenants.js';
import { requireId } from '../../kernel/validate.js';
import { isDeepStrictEqual } from 'node:util';
import { KNOWN_FIELDS } from './known-fields.js';
import { nodeView } from './node-view.js';

export interface WriteResult {
  status: 'created' | 'updated' | 'skipped';
  id: string;
  revision: string | null;
  warnings: string[];
  [extra: string]: unknown;
}

const PROVENANCE_KEYS = ['priority', 'priority_by', 'priority_at', 'priority_via', 'readiness', 'readiness_by', 'readiness_at', 'readiness_via'];

function writeStatus(c: CommittedNode | undefined): 'created' | 'updated' | 'skipped' {
  if (!c || c.status === 'unchanged' || c.status === 'deleted') return 'skipped';
  return c.status;
}

/** Runs a single-node write and shapes the SPEC's write success answer. */
async function singleWrite(
  ctx: OpContext,
  op: string,
  id: string,
  fn: (draft: WriteDraft) => Promise<{ skip?: boolean } | void>,
): Promise<WriteResult> {
  const actor = writeActorOf(ctx.actor);
  return ctx.tenant.write(actor, { op, via: ctx.via }, async (draft) => {
    const outcome = await fn(draft);
    if (outcome?.skip) return { status: 'skipped' as const, id, revision: ctx.tenant.index.get(id)?.revision ?? null, warnings: draft.warnings };
    // nothing else is persisted on the strength of this commit: Tenant.write awaits its fdatasync (group commit)
    const committed = await draft.commit({ deferDurability: true });
    const written = [...committed.values()].find((c) => c.status !== 'unchanged') ?? committed.get(id);
    const changedId = written?.id ?? id;
    return {
      status: writeStatus(written),
      id: changedId,
      revision: ctx.tenant.index.get(changedId)?.revision ?? null,
      warnings: draft.warnings,
    };
  });
}

function existing(draft: WriteDraft, id: string) {
  const node = draft.get(id);
  if (!node) throw errors.notFound(`node ${id}`);
  return node;
}

// ---------------------------------------------------------------- reads

export async function getStatus(ctx: OpContext, input: { titles?: boolean }) {
  const { tenant } = ctx;
  const byType: Record<string, number> = {};
  for (const type of tenant.registry.nodeTypes.keys()) {
    const n = tenant.index.idsOfType(type).size;
    if (n > 0) byType[type] = n;
  }
  const mem = process.memoryUsage();
  const payload: Record<string, unknown> = {
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

export async function getMe(ctx: OpContext) {
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

export async function getSchema(ctx: OpContext, input: { code?: boolean }) {
  return ctx.tenant.registry.describe(Boolean(input.code));
}

export async function getNode(ctx: OpContext, input: { id: string }) {
  const id = input.id;
  const record = ctx.tenant.index.get(id);
  if (!record) throw errors.notFound(`node ${id}`);
  return nodeView(ctx.tenant, record);
}

// ---------------------------------------------------------------- node puts

interface PutEntry {
  node: unknown;
  if_exists?: unknown;
  revision?: unknown;
}

function parseEntryNode(raw: unknown): { frontmatter: Frontmatter; body: string } {
  if (typeof raw === 'string') {
    try {
      return parseClientMarkdown(raw);
    } catch (err) {
      if (err instanceof CodecError) throw errors.validation(err.message, err.errors);
      throw err;
    }
  }
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
    const { body, ...frontmatter } = raw as Record<string, unknown>;
    if (body !== undefined && typeof body !== 'string') throw errors.validation('node.body must be a string', [{ field: 'body' }]);
    return { frontmatter: structuredClone(frontmatter), body: (body as string | undefined) ?? '' };
  }
  throw errors.validation('each entry must be a markdown string or {node, if_exists, revision}', [{ field: 'nodes', message: 'bad entry' }]);
}

function entryOf(raw: unknown): PutEntry {
  if (typeof raw === 'string') return { node: raw };
  if (raw && typeof raw === 'object' && !Array.isArray(raw) && 'node' in raw) return raw as PutEntry;
  return { node: raw };
}

async function putOne(ctx: OpContext, draft: WriteDraft, entry: PutEntry, defaultIfExists: string): Promise<WriteResult> {
  const ifExists = entry.if_exists ?? defaultIfExists;
  if (ifExists !== 'skip' && ifExists !== 'error' && ifExists !== 'update') {
    throw errors.validation("if_exists must be 'skip', 'error' or 'update'", [{ field: 'if_exists' }]);
  }
  const { frontmatter, body } = parseEntryNode(entry.node);
  const id = requireId(frontmatter.id, 'id');
  const typeDef = ctx.tenant.registry.typeForId(id);
  if (frontmatter.type === undefined && typeDef) frontmatter.type = typeDef.type;
  if (frontmatter.type === 'person') throw errors.forbidden('person nodes are created and edited only through the admin people routes');
  const current = draft.get(id);
  if (current) {
    if (ifExists === 'skip') return { status: 'skipped', id, revision: current.revision, warnings: [`${id} exists; skipped`] };
    if (ifExists === 'error') throw errors.conflict(`node ${id} already exists`, { id, current_revision: current.revision });
    if (typeof entry.revision !== 'string' || entry.revision === '') {
      throw errors.validation('if_exists=update requires the revision you read', [{ field: 'revision', message: 'required with if_exists=update' }]);
    }
    if (entry.revision !== current.revision) throw errors.revisionConflict(id, current.revision, entry.revision);
  }
  const supplied = { ...frontmatter };
  // Priority and readiness are set through their own endpoints; a put keeps the stored ones.
  for (const k of PROVENANCE_KEYS) delete frontmatter[k];
  if (current) for (const k of PROVENANCE_KEYS) if (current.frontmatter[k] !== undefined) frontmatter[k] = current.frontmatter[k];
  delete frontmatter.revision;
  draft.put({ frontmatter, body });
  // a batch's commits share fdatasyncs; Tenant.write awaits them all before the answer
  const committed = await draft.commit({ deferDurability: true });
  const c = committed.get(id);
  const warnings = [...draft.warnings];
  draft.warnings.length = 0;
  if (c?.status === 'unchanged') warnings.push('no change');
  const stored = ctx.tenant.index.get(id);
  if (stored) warnings.push(...ignoredFieldWarnings(id, String(stored.type), supplied, stored.frontmatter));
  return { status: writeStatus(c), id, revision: stored?.revision ?? null, warnings };
}

const STAMPED_KEYS = new Set(['author', 'authored_via', 'authored_by_agent', 'session', 'proposed_by']);
const SERVER_KEYS = new Set(['created', 'updated']);

/**
 * A put never drops client data without saying so: every supplied field the server discarded,
 * replaced or does not interpret gets a warning (issue 10). A value equal to what was stored
 * (a read sent back as it was) is not worth one.
 */
function ignoredFieldWarnings(id: string, type: string, supplied: Frontmatter, stored: Frontmatter): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(supplied)) {
    if (key === 'id' || key === 'type') continue;
    const kept = isDeepStrictEqual(value, stored[key]);
    if (key === 'revision') out.push(`ignored revision in frontmatter: send it as the entry's revision with if_exists=update`);
    else if (key.startsWith('priority')) {
      if (!kept) out.push(`ignored ${key}: priority is set with POST /v1/nodes/${id}/priority (tool set_priority); the stored value was kept`);
    } else if (key.startsWith('readiness')) {
      if (!kept) out.push(`ignored ${key}: readiness is set with POST /v1/nodes/${id}/readiness; the stored value was kept`);
    } else if (STAMPED_KEYS.has(key)) {
      if (!kept) out.push(`ignored ${key}: the server stamps it from the token (${key} is ${JSON.stringify(stored[key] ?? null)})`);
    } else if (SERVER_KEYS.has(key)) {
      // a read sent back carries the `updated` of its time: the server's timestamps are not client data
      continue;
    } else if (!KNOWN_FIELDS.has(key)) out.push(`unknown field '${key}' kept as-is: no rule of the ${type} type reads it`);
  }
  return out;
}

export async function putNodes(ctx: OpContext, input: { nodes: unknown[]; if_exists?: 'skip' | 'error' | 'update' }) {
  const nodes = input.nodes;
  const defaultIfExists = input.if_exists ?? 'error';
  const actor = writeActorOf(ctx.actor);
  const results: Array<Record<string, unknown>> = [];
  let failed = 0;
  await ctx.tenant.write(actor, { op: 'put_node', via: ctx.via }, async (draft) => {
    for (const [index, raw] of nodes.entries()) {
      try {
        results.push({ index, ...(await putOne(ctx, draft, entryOf(raw), defaultIfExists)) });
      } catch (err) {
        if (!isSvcError(err)) throw err;
        failed++;
        results.push({ index, status: 'failed', id: guessId(raw), error: err.envelope().error, http_status: err.status });
      }
    }
  });
  const payload = { results, count: results.length, failed };
  // every entry failed: the MCP result says so with isError (REST keeps SPEC's 207)
  return failed > 0 ? new StatusPayload(207, payload, failed === results.length) : payload;
}

function guessId(raw: unknown): string | null {
  try {
    const id = parseEntryNode(entryOf(raw).node).frontmatter.id;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------- edges

/** Attribute names and values are tokens; numbers and booleans are written as their text. */
function checkAttrs(attrs: Record<string, unknown> | undefined): Record<string, string> | undefined {
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

interface EdgeInput {
  id: string;
  type: string;
  to: string;
  attrs?: Record<string, unknown>;
}

function normalizeEdgeInput(ctx: OpContext, input: EdgeInput) {
  const { id, to } = input;
  const normalized = ctx.tenant.registry.normalizeEdge(input.type);
  if (!normalized) throw errors.validation(`unknown edge type '${input.type}'`, [{ field: 'type', message: 'not in the registry (GET /v1/schema)' }]);
  // An inverse form is flipped: the canonical edge is written on the other node.
  const owner = normalized.inverted ? to : id;
  const target = normalized.inverted ? id : to;
  const warnings: string[] = [];
  if (normalized.inverted) warnings.push(`inverse form '${input.type}' written as '${normalized.type}' on ${owner} -> ${target}`);
  else if (normalized.via === 'alias') warnings.push(`alias '${input.type}' normalized to '${normalized.type}'`);
  return { id, owner, target, type: normalized.type, warnings };
}

export async function addEdge(ctx: OpContext, input: EdgeInput) {
  const e = normalizeEdgeInput(ctx, input);
  const attrs = checkAttrs(input.attrs);
  const edgeDef = ctx.tenant.registry.edgeTypes.get(e.type)!;
  return singleWrite(ctx, 'add_edge', e.owner, async (draft) => {
    const node = existing(draft, e.owner);
    if (!draft.get(e.target)) throw errors.notFound(`node ${e.target}`);
    draft.warnings.push(...e.warnings);
    const edges: Edge[] = Array.isArray(node.frontmatter.edges) ? (node.frontmatter.edges as Edge[]) : [];
    const same = edges.findIndex((x) => x.type === e.type && x.to === e.target);
    if (same >= 0) {
      if (!attrs || sameAttrs(edges[same]!, attrs)) return { skip: true };
      edges[same] = { type: e.type, to: e.target, ...attrs };
    } else if (edgeDef.review_family) {
      const sibling = edges.findIndex((x) => x.to === e.target && ctx.tenant.registry.edgeTypes.get(x.type)?.review_family);
      if (sibling >= 0) {
        draft.warnings.push(`flipped ${edges[sibling]!.type} -> ${e.type} for ${e.target}`);
        edges[sibling] = { type: e.type, to: e.target, ...(attrs ?? {}) };
      } else edges.push({ type: e.type, to: e.target, ...(attrs ?? {}) });
    } else {
      edges.push({ type: e.type, to: e.target, ...(attrs ?? {}) });
    }
    node.frontmatter.edges = edges;
    draft.put(node);
  });
}

export async function removeEdge(ctx: OpContext, input: EdgeInput) {
  const e = normalizeEdgeInput(ctx, input);
  return singleWrite(ctx, 'remove_edge', e.owner, async (draft) => {
    const node = existing(draft, e.owner);
    draft.warnings.push(...e.warnings);
    const edges: Edge[] = Array.isArray(node.frontmatter.edges) ? (node.frontmatter.edges as Edge[]) : [];
    const kept = edges.filter((x) => !(x.type === e.type && x.to === e.target));
    if (kept.length === edges.length) return { skip: true };
    if (kept.length === 0) delete node.frontmatter.edges;
    else node.frontmatter.edges = kept;
    draft.put(node);
  });
}

// ---------------------------------------------------------------- scalars

export async function setStatus(ctx: OpContext, input: { id: string; status: string }) {
  const { id, status } = input;
  const record = ctx.tenant.index.get(id);
  if (!record) throw errors.notFound(`node ${id}`);
  const effects = ctx.services.host.statusEffectsFor(ctx.tenant);
  const from = record.status;
  const ran: typeof effects = [];
  let result: WriteResult;
  try {
    if (from !== status) {
      for (const effect of effects) {
        await effect.before?.(ctx, record, from, status);
        ran.push(effect);
      }
    }
    result = await singleWrite(ctx, 'set_status', id, async (draft) => {
      const node = existing(draft, id);
      if (node.frontmatter.status === status) return { skip: true };
      node.frontmatter.status = status;
      draft.put(node);
    });
  } catch (err) {
    for (const effect of ran) await effect.abort?.(ctx, record, from, status).catch(() => undefined);
    throw err;
  }
  // `before` effects took something (a lease) for this move; finish them even when a
  // concurrent write already landed the same status and this one was skipped.
  if (result.status === 'updated' || ran.length > 0) {
    const after = ctx.tenant.index.get(id)!;
    for (const effect of effects) Object.assign(result, (await effect.after?.(ctx, after, from, status)) ?? {});
  }
  return result;
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

export async function setPriority(ctx: OpContext, input: { id: string; priority: string | null }) {
  const id = input.id;
  const value = input.priority === null || input.priority === undefined ? '' : input.priority;
  if (typeof value !== 'string' || !(PRIORITY_CLEAR.has(value) || ['p1', 'p2', 'p3'].includes(value))) {
    throw errors.invalidNode(`unknown priority '${String(value)}'`, { field: 'priority', allowed: ['p1', 'p2', 'p3', 'none', 'clear', '', 'p0'] });
  }
  return singleWrite(ctx, 'set_priority', id, async (draft) => {
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
  });
}

export async function setReadiness(ctx: OpContext, input: { id: string; readiness: string | null }) {
  const id = input.id;
  const value = input.readiness === null || input.readiness === undefined ? '' : input.readiness;
  if (typeof value !== 'string' || !(READINESS_CLEAR.has(value) || value === 'agent')) {
    throw errors.invalidNode(`unknown readiness '${String(value)}' (only 'agent' may be set; 'human' is derived)`, {
      field: 'readiness',
      allowed: ['agent', 'none', 'clear', '', null],
    });
  }
  return singleWrite(ctx, 'set_readiness', id, async (draft) => {
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
  });
}

export async function addCommit(ctx: OpContext, input: { id: string; repo: string; sha: string }) {
  const { id, repo, sha } = input;
  return singleWrite(ctx, 'link_commit', id, async (draft) => {
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
  });
}

export { SvcError };
