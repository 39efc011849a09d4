/**
 * put_node (POST /v1/nodes, tool put_node): create or replace nodes, a batch of markdown
 * documents applied in order inside one write; each entry commits on its own, a failing
 * entry lands in the answer's `failed` and the rest still land (207).
 */
import { STAMP_KEYS, CodecError, parseClientMarkdown, type Frontmatter } from '../../kernel/codec.js';
import { errors, isSvcError } from '../../kernel/errors.js';
import type { Edge, NodeRecord } from '../../kernel/graph-index.js';
import type { Static } from '../../kernel/operation.js';
import { StatusPayload, type OpContext } from '../../kernel/plugin.js';
import type { WriteDraft } from '../../kernel/write-draft.js';
import { writeActorOf } from '../../kernel/tenants.js';
import { requireId } from '../../kernel/validate.js';
import { isDeepStrictEqual } from 'node:util';
import type { PutNodeInput, PutNodeOutput } from './api.js';
import { KNOWN_FIELDS } from './known-fields.js';
import { checkForce, guardNodeWrite, PROVENANCE_KEYS, writeStatus, type WriteResult } from './operations.js';

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
  throw errors.validation('each entry must be a markdown string or {node, if_exists, revision}', [
    { field: 'nodes', message: 'bad entry' },
  ]);
}

function entryOf(raw: unknown): PutEntry {
  if (typeof raw === 'string') return { node: raw };
  if (raw && typeof raw === 'object' && !Array.isArray(raw) && 'node' in raw) return raw as PutEntry;
  return { node: raw };
}

async function putOne(
  ctx: OpContext,
  draft: WriteDraft,
  entry: PutEntry,
  defaultIfExists: string,
  force: boolean,
  resolvedLater: ReadonlySet<string>,
): Promise<WriteResult> {
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
      throw errors.validation('if_exists=update requires the revision you read', [
        { field: 'revision', message: 'required with if_exists=update' },
      ]);
    }
    if (entry.revision !== current.revision) throw errors.revisionConflict(id, current.revision, entry.revision);
  } else {
    checkResolverOrder(ctx, id, frontmatter, resolvedLater);
  }
  const supplied = { ...frontmatter };
  const changesStatus =
    current && typeof frontmatter.status === 'string' && frontmatter.status !== '' && frontmatter.status !== current.frontmatter.status;
  const guard = current
    ? guardNodeWrite(ctx, id, 'put_node', { force, ...(changesStatus ? { status: String(frontmatter.status) } : {}) })
    : null;
  // Priority and readiness are set through their own endpoints; a put keeps the stored ones.
  for (const k of PROVENANCE_KEYS) delete frontmatter[k];
  if (current) for (const k of PROVENANCE_KEYS) if (current.frontmatter[k] !== undefined) frontmatter[k] = current.frontmatter[k];
  delete frontmatter.revision;
  draft.put({ frontmatter, body });
  // a batch's commits share fdatasyncs; Tenant.write awaits them all before the answer
  const committed = await draft.commit({ deferDurability: true });
  const c = committed.get(id);
  const warnings = [...draft.warnings, ...(guard?.warnings ?? [])];
  draft.warnings.length = 0;
  if (c?.status === 'unchanged') warnings.push('no change');
  const stored = ctx.tenant.index.get(id);
  if (stored) warnings.push(...ignoredFieldWarnings(id, String(stored.type), supplied, stored.frontmatter));
  if (current && stored && c?.status === 'updated') {
    warnings.push(...removalWarnings(id, current, stored));
    if (guard) warnings.push(...(await guard.landed(stored)));
  }
  return { status: writeStatus(c), id, revision: stored?.revision ?? null, warnings };
}

/**
 * docs/spec.md "Create of a node already in a terminal status": when this batch carries the node's
 * resolver in a later entry, the create fails (order resolver first), so no commit ever shows
 * the node done before the evidence of its completion. Without a resolver in the batch a
 * create is the move from null through the transition gate, like any status change.
 */
function checkResolverOrder(ctx: OpContext, id: string, frontmatter: Frontmatter, resolvedLater: ReadonlySet<string>): void {
  const type = String(frontmatter.type ?? '');
  const status = typeof frontmatter.status === 'string' ? frontmatter.status : '';
  if (!ctx.tenant.registry.isTerminal(type, status) || !resolvedLater.has(id)) return;
  const resolvers = ctx.tenant.index.inboundOf(id, ['resolves', 'answers']).filter((e) => ctx.tenant.index.has(e.from));
  if (resolvers.length > 0) return;
  throw errors.transitionDenied(
    `cannot create ${id} already '${status}' before its resolver: a later entry of this batch resolves it; put the resolver first in the batch`,
    { id, status, gate: 'completion-resolver' },
  );
}

/** For each entry, the ids that later entries of the batch resolve (canonical `resolves`/`answers` edges). */
function resolvedLaterByEntry(ctx: OpContext, nodes: unknown[]): Array<Set<string>> {
  const targets = nodes.map((raw) => {
    const out: string[] = [];
    try {
      const edges = parseEntryNode(entryOf(raw).node).frontmatter.edges;
      if (!Array.isArray(edges)) return out;
      for (const e of edges as unknown[]) {
        if (!e || typeof e !== 'object') continue;
        const { type, to } = e as { type?: unknown; to?: unknown };
        const n = typeof type === 'string' ? ctx.tenant.registry.normalizeEdge(type) : undefined;
        if (n && !n.inverted && (n.type === 'resolves' || n.type === 'answers') && typeof to === 'string') out.push(to);
      }
    } catch {
      // a malformed entry fails on its own turn
    }
    return out;
  });
  const later: Array<Set<string>> = [];
  let acc = new Set<string>();
  for (let i = nodes.length - 1; i >= 0; i--) {
    later[i] = acc;
    acc = new Set([...acc, ...targets[i]!]);
  }
  return later;
}

/** Keys whose disappearance from a replace is not client data lost (stamps, server times, kept provenance). */
const NOT_REMOVALS = new Set([...STAMP_KEYS, 'created', 'updated', 'revision', ...PROVENANCE_KEYS]);

function shown(value: unknown): string {
  const text = typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/**
 * A full replace keeps only what it sends: every field, edge, edge attribute or body it
 * dropped is named in the answer, so nothing disappears silently (use patch_node to change
 * only named fields).
 */
function removalWarnings(id: string, before: { frontmatter: Frontmatter; body: string }, after: NodeRecord): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(before.frontmatter)) {
    if (key === 'edges' || NOT_REMOVALS.has(key)) continue;
    if (after.frontmatter[key] === undefined) out.push(`removed field ${key} (was ${shown(value)})`);
  }
  const beforeEdges = Array.isArray(before.frontmatter.edges) ? (before.frontmatter.edges as Edge[]) : [];
  for (const edge of beforeEdges) {
    const kept = after.edges.find((e) => e.type === edge.type && e.to === edge.to);
    if (!kept) {
      out.push(`removed edge ${edge.type} -> ${edge.to}`);
      continue;
    }
    for (const attr of Object.keys(edge)) {
      if (attr !== 'type' && attr !== 'to' && kept[attr] === undefined)
        out.push(`removed attribute ${attr} (was ${shown(edge[attr])}) of edge ${edge.type} -> ${edge.to}`);
    }
  }
  if (before.body !== '' && after.body === '') out.push(`removed body (was ${Buffer.byteLength(before.body, 'utf8')} bytes)`);
  if (out.length > 0) out.push(`a replace keeps only what it sends; to change named fields only use patch_node (PATCH /v1/nodes/${id})`);
  return out;
}

const STAMPED_KEYS = new Set<string>([...STAMP_KEYS, 'proposed_by']);
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
      if (!kept)
        out.push(`ignored ${key}: priority is set with set_priority (REST: POST /v1/nodes/${id}/priority); the stored value was kept`);
    } else if (key.startsWith('readiness')) {
      if (!kept)
        out.push(`ignored ${key}: readiness is set with set_readiness (REST: POST /v1/nodes/${id}/readiness); the stored value was kept`);
    } else if (STAMPED_KEYS.has(key)) {
      if (!kept) out.push(`ignored ${key}: the server stamps it from the token (${key} is ${JSON.stringify(stored[key] ?? null)})`);
    } else if (SERVER_KEYS.has(key)) {
      // a read sent back carries the `updated` of its time: the server's timestamps are not client data
      continue;
    } else if (!KNOWN_FIELDS.has(key)) out.push(`unknown field '${key}' kept as-is: no rule of the ${type} type reads it`);
  }
  return out;
}

export async function putNode(ctx: OpContext, input: Static<typeof PutNodeInput>) {
  const nodes = input.nodes;
  const defaultIfExists = input.if_exists ?? 'error';
  checkForce(ctx, input.force);
  const actor = writeActorOf(ctx.actor);
  const results: Static<typeof PutNodeOutput>['results'] = [];
  let failed = 0;
  const resolvedLater = resolvedLaterByEntry(ctx, nodes);
  await ctx.tenant.write(actor, { op: 'put_node', via: ctx.via }, async (draft) => {
    for (const [index, raw] of nodes.entries()) {
      try {
        results.push({ index, ...(await putOne(ctx, draft, entryOf(raw), defaultIfExists, input.force === true, resolvedLater[index]!)) });
      } catch (err) {
        if (!isSvcError(err)) throw err;
        failed++;
        draft.warnings.length = 0;
        results.push({ index, status: 'failed', id: guessId(raw), error: err.envelope().error, http_status: err.status });
      }
    }
  });
  const payload = { results, count: results.length, failed };
  // every entry failed: the MCP result says so with isError (REST keeps docs/spec.md's 207)
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
