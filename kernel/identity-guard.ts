/**
 * The identity-fact guard. The authorization decision reads facts from the graph: who is an
 * admin (a `stewards` edge from a person to proj-root), who owns an agent (its `owned-by`
 * edge), a person's sign-in fields (email, name). Those facts are declared in the registry
 * (`identity` on an edge type, a node type or a field rule) and `WriteDraft.commit`, the one
 * place every commit of node changes passes, refuses any change to one of them (403
 * `forbidden`, nothing written) unless the write carries an `IdentityAuthority`: a capability
 * object only the kernel issues, handed to the identity plugin at boot (and used by the
 * kernel itself for tenant bootstrap). No route, tool, batch, import, hook, lens action or
 * workflow can name it in a payload, so every path that is not an identity operation is
 * refused by declaration, in either edge direction (inverse labels and aliases are
 * normalized before the comparison).
 */
import type { Frontmatter } from './codec.js';
import { errors } from './errors.js';
import { edgesOf } from './graph-index.js';
import type { Registry } from './registry.js';

/**
 * Which edges of a type are identity facts: every one (`true`), or only those whose canonical
 * target is one of `targets` (`stewards` makes an admin only when it points at proj-root).
 */
export type IdentityEdgeScope = boolean | { targets: string[] };

const issued = new WeakSet<object>();

/**
 * The capability to change identity facts. Instances exist only through `issue`, which the
 * kernel calls (server boot, for the identity plugin; tenant bootstrap); a write carrying
 * anything else (a forged object, a JSON value) is refused.
 */
export class IdentityAuthority {
  private constructor(
    /** who holds it: named in the commit's `Svc-Identity` trailer with the operation */
    readonly holder: string,
  ) {
    issued.add(this);
    Object.freeze(this);
  }

  /** Kernel only: plugins receive an authority from the kernel, never mint one. */
  static issue(holder: string): IdentityAuthority {
    return new IdentityAuthority(holder);
  }
}

export function isIdentityAuthority(value: unknown): value is IdentityAuthority {
  return typeof value === 'object' && value !== null && issued.has(value);
}

/** One identity edge, canonical: `type` from `from` to `to`, with its attributes. */
function edgeKeys(registry: Registry, nodeId: string, fm: Frontmatter | null): Set<string> {
  const out = new Set<string>();
  if (!fm) return out;
  for (const e of edgesOf(fm)) {
    const normalized = registry.normalizeEdge(e.type);
    if (!normalized) continue;
    const def = registry.edgeTypes.get(normalized.type);
    if (!def?.identity) continue;
    const from = normalized.inverted ? e.to : nodeId;
    const to = normalized.inverted ? nodeId : e.to;
    if (typeof def.identity === 'object' && !def.identity.targets.includes(to)) continue;
    const { type: _t, to: _to, ...attrs } = e;
    const sorted = Object.keys(attrs)
      .sort()
      .map((k) => [k, attrs[k]]);
    out.add(JSON.stringify([normalized.type, from, to, sorted]));
  }
  return out;
}

export interface NodeImage {
  frontmatter: Frontmatter;
  body: string;
}

/**
 * The identity facts one node change touches, as readable descriptions (empty: none).
 * `before`/`after` null: the node does not exist on that side.
 */
export function identityFactChanges(registry: Registry, id: string, before: NodeImage | null, after: NodeImage | null): string[] {
  const out: string[] = [];
  const typeName = String((after ?? before)?.frontmatter.type ?? '');
  const typeDef = registry.nodeTypes.get(typeName) ?? (before ? registry.nodeTypes.get(String(before.frontmatter.type)) : undefined);
  if (typeDef?.identity) {
    // the node's existence is the fact (a token is bound to a person only while the node exists)
    if (!before && after) out.push(`creates the ${typeDef.type} node ${id}`);
    else if (before && !after) out.push(`deletes the ${typeDef.type} node ${id}`);
  }
  // a created or deleted identity node is one fact, not one per field
  if (typeDef && !(typeDef.identity && (!before || !after))) {
    for (const rule of typeDef.fields) {
      if (!rule.identity) continue;
      const a = before ? JSON.stringify(before.frontmatter[rule.field] ?? null) : 'null';
      const b = after ? JSON.stringify(after.frontmatter[rule.field] ?? null) : 'null';
      if (a !== b) out.push(`changes ${rule.field} of ${id}`);
    }
  }
  const was = edgeKeys(registry, id, before?.frontmatter ?? null);
  const now = edgeKeys(registry, id, after?.frontmatter ?? null);
  const describe = (key: string) => {
    const [type, from, to] = JSON.parse(key) as [string, string, string];
    return `${from} -${type}-> ${to}`;
  };
  for (const k of now) if (!was.has(k)) out.push(`adds ${describe(k)}`);
  for (const k of was) if (!now.has(k)) out.push(`removes ${describe(k)}`);
  return out;
}

/** The write path's check: throws 403 `forbidden` when a change touches an identity fact without the authority. */
export function guardIdentityFacts(
  registry: Registry,
  id: string,
  before: NodeImage | null,
  after: NodeImage | null,
  authority: unknown,
): string[] {
  const facts = identityFactChanges(registry, id, before, after);
  if (facts.length > 0 && !isIdentityAuthority(authority)) {
    throw errors.forbidden(
      `this write changes an identity fact (${facts.join('; ')}): admin rights, agent ownership and people are changed only through the identity operations (POST/DELETE /v1/admin/people/{id}/admin, /v1/admin/people, /v1/agents)`,
      { id, identity_facts: facts },
    );
  }
  return facts;
}
