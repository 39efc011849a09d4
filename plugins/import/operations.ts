/**
 * POST /v1/import: an admin's bulk import of normalized items from another tracker (the
 * readers in scripts/import/ turn beads, Backlog.md and GitHub exports into them).
 *
 * Each item becomes one node whose id derives from (source, type, source_id), so a second
 * import of a newer export updates instead of duplicating. History tells the truth: the create
 * commit carries the item's `created_at`; an item that arrives closed is created in its type's
 * initial status and closed by a second commit at its `closed_at` (the completion-resolver gate
 * never needs an invented resolver, and analytics see the real completion time). People named
 * as assignees or owners are matched by email, then name, and created through this admin path
 * when missing. An item that cannot be represented (too long, unknown type or status, too many
 * edges) is refused with its reason, never truncated; the rest of the batch goes on.
 */
import { errors, isSvcError } from '../../kernel/errors.js';
import { STAMP_KEYS, type Frontmatter } from '../../kernel/codec.js';
import type { OpContext } from '../../kernel/plugin.js';
import { LIMITS, type NodeTypeDef } from '../../kernel/registry.js';
import type { WriteActor } from '../../kernel/write-draft.js';
import { personIdForEmail, writeActorOf } from '../../kernel/tenants.js';
import type { ImportItem, ImportPerson, ImportRequest, ItemResult } from './model.js';
import { writeImportedPerson } from '../identity/public.js';

const slug = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');

/** The node id of a source item: its type's prefix, the source, and its id there. */
export function importedNodeId(def: Pick<NodeTypeDef, 'prefix'>, source: string, sourceId: string): string {
  return `${def.prefix}${slug(`${source}-${sourceId}`)}`.slice(0, 200).replace(/-+$/, '');
}

/** ISO timestamp to epoch ms; a date-time without a zone is UTC (Backlog.md writes `2025-06-08 21:50`). */
function toMs(value: string | undefined): number | undefined {
  if (!value) return undefined;
  let v = value.trim().replace(' ', 'T');
  if (/^\d{4}-\d{2}-\d{2}T[\d:.]+$/.test(v)) v += 'Z';
  const ms = Date.parse(v);
  return Number.isNaN(ms) ? undefined : ms;
}

class People {
  private readonly byEmail = new Map<string, string>();
  private readonly byName = new Map<string, string>();
  created = 0;

  constructor(private readonly ctx: OpContext) {
    for (const id of ctx.tenant.index.idsOfType('person')) {
      const fm = ctx.tenant.index.get(id)!.frontmatter;
      if (typeof fm.email === 'string') this.byEmail.set(fm.email.trim().toLowerCase(), id);
      if (typeof fm.name === 'string') this.byName.set(fm.name.trim().toLowerCase(), id);
    }
  }

  /** The person node for a source person: matched by email, then by name, else created (admin path). */
  async resolve(actor: WriteActor, source: string, who: ImportPerson, at: number | undefined): Promise<string> {
    const email = who.email?.trim().toLowerCase();
    const name = who.name?.trim();
    const found = (email && this.byEmail.get(email)) || (name && this.byName.get(name.toLowerCase()));
    if (found) return found;
    const address = email && /^[^\s@]+@[^\s@]+$/.test(email) ? email : `${slug(name ?? 'unknown') || 'unknown'}@${source}.import.invalid`;
    const display = (name || address.split('@')[0]!).slice(0, 200);
    const id = personIdForEmail(address);
    if (!this.ctx.tenant.index.get(id)) {
      // people are identity facts: created through the identity plugin's path
      await writeImportedPerson(this.ctx.tenant, actor, at, {
        id,
        type: 'person',
        status: 'active',
        title: display,
        summary: `${display} (imported from ${source})`,
        name: display,
        email: address,
        import_source: source,
      });
      this.created++;
    }
    this.byEmail.set(address, id);
    if (name) this.byName.set(name.toLowerCase(), id);
    return id;
  }
}

/** Frontmatter keys an import sets from the item itself (or the server stamps): `fields` cannot carry them. */
const RESERVED = new Set([
  'id',
  'type',
  'status',
  'summary',
  'title',
  'project',
  'labels',
  'owner',
  'close_reason',
  'import_source',
  'import_id',
  'edges',
  'commits',
  'created',
  'updated',
  'revision',
  ...STAMP_KEYS,
]);

function refused(item: ImportItem, id: string | null, reason: string, code = 'invalid_node'): ItemResult {
  return { source_id: item.source_id, id, status: 'refused', reason, code };
}

/** What a node's content is, without the stamps and timestamps every write changes. */
function comparable(fm: Frontmatter, body: string): string {
  // proposed_by: server-kept on self-approval types (kernel/write-draft.ts), never import content
  const {
    author: _a,
    authored_via: _v,
    authored_by_agent: _g,
    session: _s,
    created: _c,
    updated: _u,
    priority_by: _pb,
    priority_at: _pa,
    priority_via: _pv,
    proposed_by: _pr,
    ...rest
  } = fm;
  return JSON.stringify([rest, body]);
}

async function importOne(ctx: OpContext, actor: WriteActor, source: string, item: ImportItem, people: People): Promise<ItemResult> {
  const registry = ctx.tenant.registry;
  const def = registry.nodeTypes.get(item.type);
  if (!def) return refused(item, null, `unknown node type '${item.type}'`);
  if (item.type === 'person') return refused(item, null, 'people are imported as assignees and owners, not as items');
  const id = importedNodeId(def, source, item.source_id);
  if (!def.statuses.includes(item.status))
    return refused(item, id, `status '${item.status}' is not a ${item.type} status (${def.statuses.join(', ')})`);
  const summary = (item.summary ?? item.title).trim();
  if (summary.length > LIMITS.summaryChars)
    return refused(item, id, `summary of ${summary.length} characters exceeds ${LIMITS.summaryChars}`);
  const body = item.body ?? '';
  const bodyBytes = Buffer.byteLength(body, 'utf8');
  if (bodyBytes > LIMITS.bodyBytes) return refused(item, id, `body of ${bodyBytes} bytes exceeds ${LIMITS.bodyBytes}`);

  const existing = ctx.tenant.index.get(id);
  if (existing && existing.frontmatter.import_id !== item.source_id) {
    return refused(item, id, `${id} exists and was not imported from ${source} item ${item.source_id}`, 'conflict');
  }
  const createdMs = toMs(item.created_at);
  const closedMs = toMs(item.closed_at);
  const updatedMs = toMs(item.updated_at);

  const edges: Array<Record<string, string>> = [];
  for (const who of item.assignees ?? []) edges.push({ type: 'assigned', to: await people.resolve(actor, source, who, createdMs) });
  for (const e of item.edges ?? []) {
    const targetDef = registry.nodeTypes.get(e.to_type);
    if (!targetDef) continue;
    edges.push({ type: e.type, to: importedNodeId(targetDef, source, e.to), ...(e.attrs ?? {}) });
  }
  if (edges.length > LIMITS.edges) return refused(item, id, `${edges.length} edges exceed ${LIMITS.edges} per node`);

  const fm: Frontmatter = {
    // other source fields, minus every key the import itself decides
    ...Object.fromEntries(Object.entries(item.fields ?? {}).filter(([k]) => !RESERVED.has(k) && !/^(priority|readiness)/.test(k))),
    id,
    type: item.type,
    status: item.status,
    summary,
    ...(item.title.trim() !== summary ? { title: item.title.trim().slice(0, 500) } : {}),
    ...(item.project ? { project: item.project } : {}),
    ...(item.labels && item.labels.length > 0 ? { labels: item.labels } : {}),
    ...(item.owner ? { owner: await people.resolve(actor, source, item.owner, createdMs) } : {}),
    ...(item.close_reason ? { close_reason: item.close_reason } : {}),
    import_source: source,
    import_id: item.source_id,
    ...(edges.length > 0 ? { edges } : {}),
  };
  if (createdMs !== undefined) fm.created = new Date(createdMs).toISOString();
  if (item.priority) Object.assign(fm, { priority: item.priority, priority_by: actor.personId, priority_via: 'import' });

  const terminal = def.terminal.includes(item.status);
  const write = (status: string, at: number | undefined, op: string) =>
    ctx.tenant.write(actor, { op, via: 'import', at }, async (draft) => {
      const node: Frontmatter = { ...fm, status };
      if (item.priority) node.priority_at = new Date(at ?? ctx.services.clock.now()).toISOString();
      draft.put({ frontmatter: node, body });
    });

  if (!existing) {
    await write(terminal ? def.initial : item.status, createdMs, 'import');
    if (terminal) await write(item.status, closedMs ?? updatedMs ?? createdMs, 'import_close');
    return { source_id: item.source_id, id, status: 'created' };
  }
  const now: Frontmatter = { ...fm, status: item.status, ...(item.priority ? { priority_at: existing.frontmatter.priority_at } : {}) };
  if (existing.frontmatter.created) now.created = existing.frontmatter.created;
  if (comparable(now, body) === comparable(existing.frontmatter, existing.body))
    return { source_id: item.source_id, id, status: 'unchanged' };
  const at = Math.max(updatedMs ?? 0, closedMs ?? 0) || undefined;
  await write(item.status, at, terminal && existing.status !== item.status ? 'import_close' : 'import_update');
  return { source_id: item.source_id, id, status: 'updated' };
}

/** POST /v1/import (admin only): `{source, items, deleted?}` -> per-item results and a summary. */
export async function importItems(ctx: OpContext, request: ImportRequest) {
  // an import may create people (identity facts): an admin's own credential, never an agent token
  if (!ctx.actor.isAdmin || ctx.actor.agent)
    throw errors.forbidden('importing needs an admin (stewards edge to proj-root) using a person credential, not an agent token');
  const actor = writeActorOf(ctx.actor);
  const people = new People(ctx);
  const results: ItemResult[] = [];
  for (const item of request.items) {
    try {
      results.push(await importOne(ctx, actor, request.source, item, people));
    } catch (err) {
      if (!isSvcError(err)) throw err;
      results.push(refused(item, null, err.message, err.code));
    }
  }
  const count = (s: ItemResult['status']) => results.filter((r) => r.status === s).length;
  return {
    source: request.source,
    results,
    summary: {
      items: results.length,
      created: count('created'),
      updated: count('updated'),
      unchanged: count('unchanged'),
      refused: count('refused'),
      deleted_skipped: request.deleted ?? 0,
      people_created: people.created,
    },
  };
}
