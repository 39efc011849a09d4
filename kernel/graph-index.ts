/**
 * The in-memory graph index every read answers from. Built from HEAD at start and
 * kept in step with each commit by the tenant's write path; plugins that keep
 * incremental bookkeeping (queue, history) subscribe to its change events.
 */
import type { Frontmatter } from './codec.js';

export interface Edge {
  type: string;
  to: string;
  [attribute: string]: string;
}

export interface NodeRecord {
  id: string;
  type: string;
  status: string;
  title: string;
  project: string | null;
  path: string;
  frontmatter: Frontmatter;
  body: string;
  markdown: string;
  revision: string;
  edges: Edge[];
}

export interface InboundEdge {
  from: string;
  edge: Edge;
}

export interface IndexChange {
  id: string;
  before: NodeRecord | null;
  after: NodeRecord | null;
}

export interface CommitEvent {
  commit: string;
  parent: string | null;
  changes: IndexChange[];
  /** `agent`: the agent node id when an agent token made the commit (its `Svc-Agent` trailer) */
  actor: { person: string | null; name: string; email: string; agent?: string | null };
  via: string;
  op: string;
  internal: boolean;
  date: string;
}

export type IndexListener = (event: CommitEvent) => void;

export function titleOf(frontmatter: Frontmatter): string {
  if (typeof frontmatter.title === 'string' && frontmatter.title.trim()) return frontmatter.title;
  const summary = typeof frontmatter.summary === 'string' ? frontmatter.summary : '';
  return summary.split('\n')[0] ?? '';
}

/** the edges of a node that has none: one shared, frozen array (an empty array is 32 bytes a node) */
const NO_EDGES = Object.freeze([]) as unknown as Edge[];

export function edgesOf(frontmatter: Frontmatter): Edge[] {
  const raw = frontmatter.edges;
  if (!Array.isArray(raw) || raw.length === 0) return NO_EDGES;
  const out: Edge[] = [];
  for (const e of raw) {
    if (e && typeof e === 'object' && typeof (e as Edge).type === 'string' && typeof (e as Edge).to === 'string') {
      out.push(e as Edge);
    }
  }
  return out.length > 0 ? out : NO_EDGES;
}

/**
 * Frontmatter fields whose values repeat across nodes (a type, a status, a person): one string
 * per value instead of one per node (a snapshot's deserializer and the YAML parser each make a
 * new string per occurrence).
 */
const INTERNED_FIELDS = ['type', 'status', 'author', 'authored_via', 'authored_by_agent', 'assignee', 'priority', 'readiness', 'project'];
/** interned strings at most; past it new values are kept as they come (never unbounded) */
const INTERN_MAX = 20_000;
const INTERN_MAX_LENGTH = 80;
const interned = new Map<string, string>();

/** The one kept instance of a short, repeating string. */
export function intern(value: string): string {
  if (value.length > INTERN_MAX_LENGTH) return value;
  const kept = interned.get(value);
  if (kept !== undefined) return kept;
  if (interned.size < INTERN_MAX) interned.set(value, value);
  return value;
}

function internFields(frontmatter: Frontmatter): void {
  for (const key of INTERNED_FIELDS) {
    const v = frontmatter[key];
    if (typeof v === 'string') frontmatter[key] = intern(v);
  }
  const edges = frontmatter.edges;
  if (Array.isArray(edges)) {
    for (const e of edges) {
      if (e && typeof e === 'object' && typeof (e as Edge).type === 'string') (e as Edge).type = intern((e as Edge).type);
    }
  }
}

export function makeRecord(path: string, revision: string, markdown: string, frontmatter: Frontmatter, body: string): NodeRecord {
  // The body is the markdown's tail: as a slice of it, V8 keeps a reference into the markdown
  // instead of a second copy of the text (a snapshot or a parser hands over separate strings).
  if (body.length >= 16 && markdown.endsWith(body)) body = markdown.slice(markdown.length - body.length);
  internFields(frontmatter);
  return {
    id: String(frontmatter.id),
    type: String(frontmatter.type),
    status: String(frontmatter.status ?? ''),
    title: titleOf(frontmatter),
    project: typeof frontmatter.project === 'string' ? frontmatter.project : null,
    path,
    frontmatter,
    body,
    markdown,
    revision,
    edges: edgesOf(frontmatter),
  };
}

export class GraphIndex {
  head: string | null = null;
  readonly nodes = new Map<string, NodeRecord>();
  private readonly byType = new Map<string, Set<string>>();
  private readonly byProject = new Map<string, Set<string>>();
  private readonly inbound = new Map<string, Map<string, Edge[]>>();
  private readonly listeners = new Set<IndexListener>();

  get size(): number {
    return this.nodes.size;
  }

  get(id: string): NodeRecord | undefined {
    return this.nodes.get(id);
  }

  has(id: string): boolean {
    return this.nodes.has(id);
  }

  /**
   * The id string this index keeps for `id` (the same value; `id` itself for an unknown node):
   * indexes that read ids back from their own files key by it instead of a copy per node.
   */
  ownId(id: string): string {
    return this.nodes.get(id)?.id ?? id;
  }

  idsOfType(type: string): ReadonlySet<string> {
    return this.byType.get(type) ?? new Set();
  }

  idsInProject(project: string): ReadonlySet<string> {
    return this.byProject.get(project) ?? new Set();
  }

  projects(): string[] {
    return [...this.byProject.keys()].sort();
  }

  /** Whether any node has an edge to `id` (cheaper than `inboundOf` when the answer is usually no). */
  hasInbound(id: string): boolean {
    return this.inbound.has(id);
  }

  /** Inbound edges of a node, optionally of some types only. */
  inboundOf(id: string, types?: readonly string[]): InboundEdge[] {
    const byFrom = this.inbound.get(id);
    if (!byFrom) return [];
    const out: InboundEdge[] = [];
    for (const [from, edges] of byFrom) {
      for (const edge of edges) if (!types || types.includes(edge.type)) out.push({ from, edge });
    }
    return out;
  }

  subscribe(listener: IndexListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Bulk load at start; emits nothing. */
  load(records: Iterable<NodeRecord>, head: string | null): void {
    for (const r of records) this.put(r);
    this.head = head;
  }

  /** Apply one commit's changes and notify subscribers. */
  applyCommit(event: CommitEvent): void {
    for (const change of event.changes) {
      const previous = this.nodes.get(change.id);
      if (previous) this.remove(previous);
      if (change.after) this.put(change.after);
    }
    this.head = event.commit;
    for (const listener of this.listeners) listener(event);
  }

  private put(record: NodeRecord): void {
    const existing = this.nodes.get(record.id);
    if (existing) this.remove(existing);
    this.nodes.set(record.id, record);
    addTo(this.byType, record.type, record.id);
    if (record.project) addTo(this.byProject, record.project, record.id);
    for (const edge of record.edges) {
      let byFrom = this.inbound.get(edge.to);
      if (!byFrom) this.inbound.set(edge.to, (byFrom = new Map()));
      const list = byFrom.get(record.id) ?? [];
      list.push(edge);
      byFrom.set(record.id, list);
    }
  }

  private remove(record: NodeRecord): void {
    this.nodes.delete(record.id);
    removeFrom(this.byType, record.type, record.id);
    if (record.project) removeFrom(this.byProject, record.project, record.id);
    for (const edge of record.edges) {
      const byFrom = this.inbound.get(edge.to);
      if (!byFrom) continue;
      byFrom.delete(record.id);
      if (byFrom.size === 0) this.inbound.delete(edge.to);
    }
  }
}

function addTo(map: Map<string, Set<string>>, key: string, id: string): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(id);
}

function removeFrom(map: Map<string, Set<string>>, key: string, id: string): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(id);
  if (set.size === 0) map.delete(key);
}
