/**
 * patch_node (PATCH /v1/nodes/{id}, tool patch_node): an update that changes only
 * what it names. The caller echoes the revision it read; the patch is applied to the stored
 * node and committed through the same draft as a put (shape, hooks, transition gate, limits),
 * and a status change in it passes the plugins' status effects and node write checks (leases)
 * like set_status.
 */
import type { Frontmatter } from '../../kernel/codec.js';
import { errors } from '../../kernel/errors.js';
import type { Edge } from '../../kernel/graph-index.js';
import type { Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';
import type { PatchNodeInput, StatusWriteResult } from './api.js';
import { KNOWN_FIELDS } from './known-fields.js';
import { addToEdges, checkAttrs, checkForce, existing, PROVENANCE_KEYS, singleWrite, withStatusEffects } from './operations.js';

/** Fields a patch may not name, each with where it is changed instead. */
const NOT_PATCHABLE: Record<string, string> = {
  id: 'the id names the node and cannot change',
  type: 'the type of a node cannot change',
  edges: 'use add_edges / remove_edges',
  body: 'use body / append_body',
  revision: 'send the revision you read as the top-level revision',
  created: 'the server keeps it',
  updated: 'the server stamps it',
  author: 'the server stamps it from your token',
  authored_via: 'the server stamps it from your token',
  authored_by_agent: 'the server stamps it from your token',
  session: 'the server stamps it from your token',
  ...Object.fromEntries(
    PROVENANCE_KEYS.map((k) => [
      k,
      k.startsWith('priority') ? 'use set_priority (POST /v1/nodes/{id}/priority)' : 'use POST /v1/nodes/{id}/readiness',
    ]),
  ),
};

function checkNames(input: Static<typeof PatchNodeInput>): void {
  const set = input.set ?? {};
  const unset = input.unset ?? [];
  for (const key of [...Object.keys(set), ...unset]) {
    const why = NOT_PATCHABLE[key];
    if (why) throw errors.validation(`'${key}' cannot be patched: ${why}`, [{ field: key in set ? `set.${key}` : 'unset', message: why }]);
  }
  for (const key of unset)
    if (key in set)
      throw errors.validation(`'${key}' is both set and unset`, [{ field: 'unset', message: 'name a field in set or unset, not both' }]);
  if (set.status === null || unset.includes('status'))
    throw errors.validation('status cannot be removed; set another status', [{ field: 'set.status' }]);
  if (set.summary === null || unset.includes('summary'))
    throw errors.validation('summary is required on every node and cannot be removed', [{ field: 'set.summary' }]);
  if (input.body !== undefined && input.append_body !== undefined) {
    throw errors.validation('give body (replace) or append_body, not both', [{ field: 'append_body' }]);
  }
  const names = Object.keys(set).length + unset.length + (input.add_edges?.length ?? 0) + (input.remove_edges?.length ?? 0);
  if (names === 0 && input.body === undefined && input.append_body === undefined) {
    throw errors.validation('the patch changes nothing: name set, unset, add_edges, remove_edges, body or append_body', [{ field: 'set' }]);
  }
}

/** An edge type in a patch is canonical or an alias; an inverse form belongs on the other node (add_edge flips it). */
function edgeTypeOf(ctx: OpContext, type: string, field: string): string {
  const n = ctx.tenant.registry.normalizeEdge(type);
  if (!n) throw errors.validation(`unknown edge type '${type}'`, [{ field, message: 'not in the registry (GET /v1/schema)' }]);
  if (n.inverted) {
    throw errors.validation(
      `'${type}' is the inverse form of '${n.type}': that edge is stored on the other node; use add_edge / remove_edge, which flip it`,
      [{ field, message: 'inverse form' }],
    );
  }
  return n.type;
}

export async function patchNode(ctx: OpContext, input: Static<typeof PatchNodeInput>): Promise<Static<typeof StatusWriteResult>> {
  const { id } = input;
  checkNames(input);
  checkForce(ctx, input.force);
  const record = ctx.tenant.index.get(id);
  if (!record) throw errors.notFound(`node ${id}`);
  if (record.type === 'person') throw errors.forbidden('person nodes are created and edited only through the admin people routes');
  const newStatus = typeof input.set?.status === 'string' && input.set.status !== record.status ? input.set.status : undefined;

  const write = () =>
    singleWrite(
      ctx,
      'patch_node',
      id,
      async (draft) => {
        const node = existing(draft, id);
        // checked inside the write queue: no write can land between this check and the commit
        if (node.revision !== input.revision) throw errors.revisionConflict(id, node.revision, input.revision);
        const fm: Frontmatter = node.frontmatter;
        for (const [key, value] of Object.entries(input.set ?? {})) {
          if (!KNOWN_FIELDS.has(key) && value !== null)
            draft.warnings.push(`unknown field '${key}' kept as-is: no rule of the ${record.type} type reads it`);
          if (value === null) {
            if (fm[key] === undefined) draft.warnings.push(`set ${key}: null: the node had no ${key}`);
            delete fm[key];
          } else fm[key] = value;
        }
        for (const key of input.unset ?? []) {
          if (fm[key] === undefined) draft.warnings.push(`unset ${key}: the node had no ${key}`);
          delete fm[key];
        }
        const edges: Edge[] = Array.isArray(fm.edges) ? (fm.edges as Edge[]) : [];
        for (const [i, r] of (input.remove_edges ?? []).entries()) {
          const type = edgeTypeOf(ctx, r.type, `remove_edges[${i}].type`);
          const at = edges.findIndex((e) => e.type === type && e.to === r.to);
          if (at < 0) draft.warnings.push(`no edge ${type} -> ${r.to} to remove`);
          else edges.splice(at, 1);
        }
        for (const [i, a] of (input.add_edges ?? []).entries()) {
          const { type: rawType, to, ...rest } = a;
          const type = edgeTypeOf(ctx, rawType, `add_edges[${i}].type`);
          if (!draft.get(to)) throw errors.notFound(`node ${to}`, { field: `add_edges[${i}].to` });
          const attrs = Object.keys(rest).length > 0 ? checkAttrs(rest) : undefined;
          if (!addToEdges(ctx, edges, type, to, attrs, draft.warnings)) draft.warnings.push(`edge ${type} -> ${to} already present`);
        }
        if (edges.length > 0) fm.edges = edges;
        else delete fm.edges;
        let body = node.body;
        if (input.body !== undefined) body = input.body;
        if (input.append_body !== undefined)
          body = body === '' || body.endsWith('\n') ? body + input.append_body : `${body}\n${input.append_body}`;
        draft.put({ frontmatter: fm, body });
      },
      { force: input.force, ...(newStatus !== undefined ? { status: newStatus } : {}) },
    );
  return newStatus !== undefined ? withStatusEffects(ctx, record, newStatus, write) : write();
}
