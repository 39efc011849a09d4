/**
 * The schema registry: the built-in pack merged with plugin contributions (`native`)
 * and active graph-resident schema nodes (`graph`). It is the authority on type
 * prefixes, statuses, transitions (as hook source), edge vocabulary and weights.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import type { IdentityEdgeScope } from './identity-guard.js';

export interface FieldRule {
  field: string;
  kind: 'string' | 'slug-list' | 'string-list' | 'map' | 'steps' | 'type-list' | 'hook-map';
  required?: boolean;
  /** hook-map: the known hook points */
  names?: string[];
  /** hook-map: the largest source in characters */
  max?: number;
  /**
   * The field is an identity fact (read by authentication or authorization): only identity
   * operations may set, change or clear it (kernel/identity-guard.ts).
   */
  identity?: boolean;
}

export type TypeSource = 'seed' | 'graph' | 'native';

export interface NodeTypeDef {
  type: string;
  description: string;
  prefix: string;
  statuses: string[];
  terminal: string[];
  initial: string;
  moves: Record<string, string[]>;
  always_on: boolean;
  traversable: boolean;
  capturable: boolean;
  queueable: boolean;
  non_resolving: boolean;
  self_approval_ban: boolean;
  /**
   * The existence of a node of this type is an identity fact (people: a token is bound to a
   * person while its node exists): creating or deleting one is for identity operations only.
   * Its identity fields and edges are declared on the field rules and edge types.
   */
  identity?: boolean;
  forced_initial_status: string | null;
  in_progress_status: string | null;
  fields: FieldRule[];
  /** hook name -> JS function expression source, run only in the sandbox */
  hooks: Record<string, string>;
  schema_id: string;
  schema_version: string;
  source: TypeSource;
}

export interface EdgeTypeDef {
  type: string;
  description: string;
  weight: number;
  weight_default: number;
  inverse_label: string;
  aliases: string[];
  /** aliases of the inverse form, e.g. `depends-on` = `blocked-by` */
  inverse_aliases: string[];
  capturable: boolean;
  review_family: boolean;
  /**
   * Edges of this type are identity facts (all of them, or those to the listed targets): only
   * identity operations may add or remove one, in either direction. A graph schema can neither
   * redefine such a type nor claim one of its names.
   */
  identity?: IdentityEdgeScope;
  hooks: Record<string, string>;
  source: TypeSource;
}

export interface SchemaPack {
  default_edge_weight: number;
  node_types: NodeTypeDef[];
  edge_types: EdgeTypeDef[];
  queue_policy: Record<string, unknown>;
  /**
   * For hooks the pack wrote itself, by hook source: the part of a call's input the hook's
   * answer depends on. The HookRunner caches verdicts on it, so a pack hook is asked once per
   * distinct question (a transition table's verdict for every new task is the same one) instead
   * of once per node. A schema node's hook, or a pack type whose hook a layer replaced, has a
   * different source and is keyed on its whole input.
   */
  hook_inputs?: ReadonlyMap<string, (input: unknown) => unknown>;
}

/** One active graph-resident schema node, as read from the graph. */
export interface GraphSchemaLayer {
  id: string;
  revision: string;
  applies_to: string[];
  statuses?: string[];
  edge_types?: Array<Partial<EdgeTypeDef> & { type: string }>;
  hooks: Record<string, string>;
}

/** A hook to run for a node type, in order: seed first, then graph layers. */
export interface HookRef {
  owner: string;
  hook: string;
  source: string;
}

export interface NormalizedEdge {
  type: string;
  /** true when the caller used the inverse label or an inverse alias: the edge belongs on the target */
  inverted: boolean;
  via: 'canonical' | 'alias' | 'inverse';
}

const ID_PATTERN = /^[a-z0-9][a-z0-9-]*$/;
const ATTR_VALUE = /^[A-Za-z0-9_-]+$/;
const SHA_LINK = /^[a-z0-9][a-z0-9-]*@[0-9a-f]{7,40}$/;

export const LIMITS = {
  summaryChars: 500,
  bodyBytes: 8 * 1024,
  edges: 40,
  commits: 40,
  requestBytes: 1024 * 1024,
} as const;

/**
 * Frontmatter validators shared by every registry of the process, by the schema's text: a
 * registry is built per tenant and again at every schema change, and each used to create its own
 * Ajv and compile every type it wrote (about 15 ms a type, the new Ajv compiling its meta-schema;
 * 29 s of the test suite's CPU). The schema is a pure function of the type's statuses and
 * name, so equal text means an equal validator. Least recently used beyond SHAPE_VALIDATORS_MAX
 * are dropped, from Ajv's own cache too.
 */
const shapeAjv = new Ajv({ allErrors: true, strict: false });
const shapeValidators = new Map<string, ValidateFunction>();
const SHAPE_VALIDATORS_MAX = 256;

function shapeValidator(type: NodeTypeDef): ValidateFunction {
  const schema = baseFrontmatterSchema(type);
  const key = JSON.stringify(schema);
  let validate = shapeValidators.get(key);
  if (validate) {
    shapeValidators.delete(key);
  } else {
    validate = shapeAjv.compile(schema);
    if (shapeValidators.size >= SHAPE_VALIDATORS_MAX) {
      const [oldest, dropped] = shapeValidators.entries().next().value!;
      shapeValidators.delete(oldest);
      shapeAjv.removeSchema(dropped.schema as object);
    }
  }
  shapeValidators.set(key, validate);
  return validate;
}

function baseFrontmatterSchema(type: NodeTypeDef) {
  return {
    type: 'object',
    required: ['id', 'type', 'status', 'summary'],
    properties: {
      id: { type: 'string', pattern: ID_PATTERN.source, maxLength: 200 },
      type: { const: type.type },
      status: { type: 'string', enum: type.statuses },
      summary: { type: 'string', minLength: 1, maxLength: LIMITS.summaryChars },
      title: { type: 'string', maxLength: 500 },
      project: { type: 'string', pattern: ID_PATTERN.source },
      priority: { enum: ['p1', 'p2', 'p3'] },
      readiness: { enum: ['agent'] },
      author: { type: 'string' },
      authored_via: { type: 'string' },
      commits: {
        type: 'array',
        maxItems: LIMITS.commits,
        items: { type: 'string', pattern: SHA_LINK.source },
      },
      edges: {
        type: 'array',
        maxItems: LIMITS.edges,
        items: {
          type: 'object',
          required: ['type', 'to'],
          properties: {
            type: { type: 'string', pattern: ID_PATTERN.source },
            to: { type: 'string', pattern: ID_PATTERN.source },
          },
          additionalProperties: { type: 'string', pattern: ATTR_VALUE.source },
        },
      },
    },
    additionalProperties: true,
  };
}

export class Registry {
  readonly nodeTypes = new Map<string, NodeTypeDef>();
  readonly edgeTypes = new Map<string, EdgeTypeDef>();
  private readonly edgeLookup = new Map<string, NormalizedEdge>();
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly graphHooks = new Map<string, HookRef[]>();
  readonly staleOverrides: Array<{ schema_id: string; reason: string }> = [];
  readonly aliasCollisions: Array<{ alias: string; claimed_by: string[] }> = [];
  private readonly prefixes: Array<[string, string]> = [];

  constructor(
    readonly pack: SchemaPack,
    nativeTypes: NodeTypeDef[] = [],
    nativeEdges: EdgeTypeDef[] = [],
    readonly graphLayers: GraphSchemaLayer[] = [],
  ) {
    for (const t of pack.node_types) this.nodeTypes.set(t.type, structuredClone(t));
    for (const t of nativeTypes) this.nodeTypes.set(t.type, structuredClone({ ...t, source: 'native' as const }));
    for (const e of pack.edge_types) this.edgeTypes.set(e.type, structuredClone(e));
    for (const e of nativeEdges) this.edgeTypes.set(e.type, structuredClone({ ...e, source: 'native' as const }));
    for (const layer of graphLayers) this.applyLayer(layer);
    this.buildEdgeLookup();
    for (const t of this.nodeTypes.values()) this.prefixes.push([t.prefix, t.type]);
    this.prefixes.sort((a, b) => b[0].length - a[0].length);
  }

  private applyLayer(layer: GraphSchemaLayer): void {
    for (const typeName of layer.applies_to) {
      const t = this.nodeTypes.get(typeName);
      if (!t) {
        this.staleOverrides.push({ schema_id: layer.id, reason: `applies to unknown type '${typeName}'` });
        continue;
      }
      if (layer.statuses && layer.statuses.length > 0) {
        const statuses = [...layer.statuses];
        const terminal = t.terminal.filter((s) => statuses.includes(s));
        const moves: Record<string, string[]> = {};
        for (const s of statuses) moves[s] = terminal.includes(s) ? [statuses[0]!] : statuses.filter((x) => x !== s);
        const dropped = t.statuses.filter((s) => !statuses.includes(s));
        if (dropped.length > 0) {
          this.staleOverrides.push({
            schema_id: layer.id,
            reason: `drops ${typeName} statuses ${dropped.join(', ')}; nodes in them can only move out`,
          });
        }
        t.statuses = statuses;
        t.terminal = terminal;
        t.moves = moves;
        if (!statuses.includes(t.initial)) t.initial = statuses[0]!;
        if (t.hooks.transition) {
          // a function, not a string: `$&`, `$'` and the like in a status would be replacement patterns
          const table = `const table = ${JSON.stringify({ type: t.type, statuses, moves, self_approval: t.self_approval_ban })};\n`;
          t.hooks.transition = t.hooks.transition.replace(/const table = \{.*?\};\n/s, () => table);
        }
        t.source = 'graph';
      }
      const refs = this.graphHooks.get(typeName) ?? [];
      for (const [hook, source] of Object.entries(layer.hooks)) refs.push({ owner: layer.id, hook, source });
      this.graphHooks.set(typeName, refs);
      if (Object.keys(layer.hooks).length > 0) t.source = 'graph';
      t.schema_id = layer.id;
      t.schema_version = layer.revision;
    }
    for (const add of layer.edge_types ?? []) {
      if (!ID_PATTERN.test(add.type)) {
        this.staleOverrides.push({ schema_id: layer.id, reason: `edge type '${add.type}' is not kebab-case` });
        continue;
      }
      const existing = this.edgeTypes.get(add.type);
      // Identity edge types are the kernel's: a graph schema cannot redefine one (its inverse
      // label, aliases or identity flag) nor claim one of its names for another type.
      if (existing?.identity) {
        this.staleOverrides.push({
          schema_id: layer.id,
          reason: `edge type '${add.type}' is an identity fact; a graph schema cannot redefine it`,
        });
        continue;
      }
      const claimed = [add.type, add.inverse_label, ...(Array.isArray(add.aliases) ? add.aliases : [])].filter(
        (n): n is string => typeof n === 'string',
      );
      const taken = claimed.find((n) => this.identityNames().has(n));
      if (taken !== undefined) {
        this.staleOverrides.push({
          schema_id: layer.id,
          reason: `edge type '${add.type}' claims '${taken}', a name of an identity edge type`,
        });
        continue;
      }
      const identity = identityScopeOf(add.identity);
      const weight = typeof add.weight === 'number' ? add.weight : (existing?.weight ?? this.pack.default_edge_weight);
      this.edgeTypes.set(add.type, {
        type: add.type,
        description: add.description ?? existing?.description ?? '',
        weight,
        weight_default: existing?.weight_default ?? weight,
        inverse_label: add.inverse_label ?? existing?.inverse_label ?? `${add.type}-of`,
        aliases: add.aliases ?? existing?.aliases ?? [],
        inverse_aliases: existing?.inverse_aliases ?? [],
        capturable: add.capturable ?? existing?.capturable ?? false,
        review_family: existing?.review_family ?? false,
        // a graph schema may declare a new identity edge type (stricter), never un-declare one
        ...(identity ? { identity } : {}),
        hooks: existing?.hooks ?? {},
        source: 'graph',
      });
    }
  }

  /** Every name (type, inverse label, aliases) of the identity edge types. */
  private identityNames(): Set<string> {
    const names = new Set<string>();
    for (const e of this.edgeTypes.values()) {
      if (!e.identity) continue;
      for (const n of [e.type, e.inverse_label, ...e.aliases, ...e.inverse_aliases]) names.add(n);
    }
    return names;
  }

  private buildEdgeLookup(): void {
    const claims = new Map<string, string[]>();
    const claim = (name: string, owner: string, value: NormalizedEdge) => {
      const list = claims.get(name) ?? [];
      list.push(owner);
      claims.set(name, list);
      if (!this.edgeLookup.has(name)) this.edgeLookup.set(name, value);
    };
    for (const e of this.edgeTypes.values()) claim(e.type, e.type, { type: e.type, inverted: false, via: 'canonical' });
    for (const e of this.edgeTypes.values()) {
      claim(e.inverse_label, e.type, { type: e.type, inverted: true, via: 'inverse' });
      for (const a of e.aliases) claim(a, e.type, { type: e.type, inverted: false, via: 'alias' });
      for (const a of e.inverse_aliases) claim(a, e.type, { type: e.type, inverted: true, via: 'alias' });
    }
    for (const [alias, owners] of claims) {
      if (owners.length > 1) this.aliasCollisions.push({ alias, claimed_by: owners });
    }
  }

  typeForId(id: string): NodeTypeDef | undefined {
    for (const [prefix, type] of this.prefixes) if (id.startsWith(prefix)) return this.nodeTypes.get(type);
    return undefined;
  }

  normalizeEdge(name: string): NormalizedEdge | undefined {
    return this.edgeLookup.get(name);
  }

  edgeWeight(type: string): number {
    return this.edgeTypes.get(type)?.weight ?? this.pack.default_edge_weight;
  }

  isTerminal(type: string, status: string): boolean {
    return this.nodeTypes.get(type)?.terminal.includes(status) ?? false;
  }

  /** Hooks that govern a node type: seed/native hooks first, then graph layers in order. */
  hooksFor(type: string, hook: string): HookRef[] {
    const t = this.nodeTypes.get(type);
    const refs: HookRef[] = [];
    if (t?.hooks[hook]) refs.push({ owner: `seed:${type}`, hook, source: t.hooks[hook]! });
    for (const ref of this.graphHooks.get(type) ?? []) if (ref.hook === hook) refs.push(ref);
    return refs;
  }

  /** ajv check of a node's frontmatter shape for its type; returns the validator's error list verbatim. */
  validateShape(type: NodeTypeDef, frontmatter: Record<string, unknown>): unknown[] {
    let validate = this.validators.get(type.type);
    if (!validate) {
      validate = shapeValidator(type);
      this.validators.set(type.type, validate);
    }
    return validate(frontmatter) ? [] : [...(validate.errors ?? [])];
  }

  /** The registry object of GET /v1/schema. */
  describe(withCode: boolean) {
    const nodeTypes = [...this.nodeTypes.values()].map((t) => {
      const hooks = [...Object.keys(t.hooks), ...(this.graphHooks.get(t.type) ?? []).map((h) => `${h.owner}:${h.hook}`)];
      const entry: Record<string, unknown> = {
        type: t.type,
        description: t.description,
        prefix: t.prefix,
        always_on: t.always_on,
        traversable: t.traversable,
        capturable: t.capturable,
        queueable: t.queueable,
        non_resolving: t.non_resolving,
        hooks,
        schema_id: t.schema_id,
        schema_version: t.schema_version,
        source: t.source,
        statuses: t.statuses,
        terminal_statuses: t.terminal,
        initial_status: t.initial,
        transitions: t.moves,
        self_approval_ban: t.self_approval_ban,
        identity: Boolean(t.identity),
        identity_fields: t.fields.filter((f) => f.identity).map((f) => f.field),
      };
      if (withCode) {
        const code: Record<string, string> = {};
        for (const [name, src] of Object.entries(t.hooks)) code[name] = src;
        for (const ref of this.graphHooks.get(t.type) ?? []) code[`${ref.owner}:${ref.hook}`] = ref.source;
        entry.code = code;
      }
      return entry;
    });
    const edgeTypes = [...this.edgeTypes.values()].map((e) => {
      const entry: Record<string, unknown> = {
        type: e.type,
        description: e.description,
        weight: e.weight,
        weight_default: e.weight_default,
        inverse_label: e.inverse_label,
        // every alias a client may send; inverse_aliases says which of them mean the inverse form
        aliases: [...e.aliases, ...e.inverse_aliases],
        inverse_aliases: e.inverse_aliases,
        capturable: e.capturable,
        review_family: e.review_family,
        identity: e.identity ?? false,
        hooks: Object.keys(e.hooks),
        source: e.source,
      };
      if (withCode) entry.code = { ...e.hooks };
      return entry;
    });
    return {
      default_edge_weight: this.pack.default_edge_weight,
      node_types: nodeTypes,
      edge_types: edgeTypes,
      queue_policy: this.pack.queue_policy,
      policies: {
        self_approval_ban: nodeTypes.filter((t) => t.self_approval_ban).map((t) => t.type),
        completion_edges: ['resolves', 'answers'],
        limits: {
          summary_chars: LIMITS.summaryChars,
          body_bytes: LIMITS.bodyBytes,
          edges_per_node: LIMITS.edges,
          commits_per_node: LIMITS.commits,
          request_bytes: LIMITS.requestBytes,
        },
      },
      registers: {
        priority: ['p1', 'p2', 'p3'],
        readiness: ['agent', 'human'],
        authored_via: ['mcp', 'rest', 'capture', 'dispatch', 'distill', 'gardener', 'import'],
      },
      stale_overrides: this.staleOverrides,
      alias_collisions: this.aliasCollisions,
    };
  }
}

/** A declared identity scope as the registry keeps it (anything malformed is no declaration). */
function identityScopeOf(value: unknown): IdentityEdgeScope | undefined {
  if (value === true) return true;
  if (value && typeof value === 'object' && Array.isArray((value as { targets?: unknown }).targets)) {
    const targets = (value as { targets: unknown[] }).targets.filter((t): t is string => typeof t === 'string');
    if (targets.length > 0) return { targets };
  }
  return undefined;
}

export const patterns = { id: ID_PATTERN, attrValue: ATTR_VALUE, shaLink: SHA_LINK };
