/**
 * The lens view tree (docs/design.md §8): select nodes from the in-memory index, sort, cut at
 * the lens limit, group, and project the columns.
 *
 * Selection starts from the narrowest index set the query offers (inbound edges of the
 * assignee or the edge target, the by-project sets, the by-type sets) and filters it; only
 * a lens with none of those keys walks every node, which is what such a lens asks for.
 */
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Tenant } from '../../kernel/tenant.js';
import { ROOT_ID } from '../../kernel/tenants.js';
import { isDone, resolveScope } from '../core/public.js';
import type { GroupKey, LensDef, ResolvedQuery, SortKey } from './definition.js';

export type CellValue = string | number | boolean | null | Array<string | number | boolean>;

export interface LensItem {
  id: string;
  title: string;
  [column: string]: CellValue;
}

export interface LensGroup {
  key: string | null;
  count: number;
  items: LensItem[];
}

export interface Sharer {
  id: string;
  name: string;
  expires: string;
  label?: string;
}

export interface LensTree {
  lens_id: string;
  title: string;
  generated_at: string;
  params: Record<string, string>;
  sharer?: Sharer;
  groups: LensGroup[];
  /** items shown (after the lens limit) */
  count: number;
  /** items matched */
  total: number;
  truncated: boolean;
  columns: string[];
  group_by: GroupKey | null;
  sort: string[];
}

const PRIORITY_RANK: Record<string, number> = { p1: 3, p2: 2, p3: 1 };

function priorityOf(record: NodeRecord): string | null {
  const p = record.frontmatter.priority;
  return typeof p === 'string' && p in PRIORITY_RANK ? p : null;
}

function assigneesOf(record: NodeRecord): string[] {
  return record.edges.filter((e) => e.type === 'assigned').map((e) => e.to);
}

function scalarOf(value: unknown): CellValue {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'))
    return value as CellValue;
  return null; // maps and nested lists are not cell values
}

/** The value of a column (or sort key) for one node. */
export function cellOf(tenant: Tenant, record: NodeRecord, column: string): CellValue {
  const fm = record.frontmatter;
  switch (column) {
    case 'id':
      return record.id;
    case 'title':
      return record.title;
    case 'type':
      return record.type;
    case 'status':
      return record.status;
    case 'priority':
      return priorityOf(record);
    case 'assignee':
      return assigneesOf(record);
    case 'project':
      return record.project;
    case 'summary':
      return typeof fm.summary === 'string' ? fm.summary : null;
    case 'author':
    case 'created':
    case 'updated':
    case 'readiness':
      return typeof fm[column] === 'string' ? (fm[column] as string) : null;
    case 'done':
      return isDone(tenant, record);
    default:
      return scalarOf(fm[column]);
  }
}

/** Work a person carries: nodes `assigned` to them and nodes they `stewards` directly (the queue's `assignee`). */
function carriedBy(tenant: Tenant, person: string): string[] {
  const assigned = tenant.index.inboundOf(person, ['assigned']).map((e) => e.from);
  const stewarded = (tenant.index.get(person)?.edges ?? []).filter((e) => e.type === 'stewards').map((e) => e.to);
  return [...assigned, ...stewarded];
}

function carries(tenant: Tenant, person: string, record: NodeRecord): boolean {
  if (record.edges.some((e) => e.type === 'assigned' && e.to === person)) return true;
  return (tenant.index.get(person)?.edges ?? []).some((e) => e.type === 'stewards' && e.to === record.id);
}

/** Candidate ids from the narrowest index set the query names; null means "every node". */
function candidates(tenant: Tenant, q: ResolvedQuery, me: string | null, projectValues: Set<string> | null): Iterable<string> | null {
  const { index } = tenant;
  const sets: Array<ReadonlySet<string> | string[]> = [];
  if (q.assignee !== null) {
    const person = q.assignee === 'me' ? me : q.assignee;
    sets.push(person ? carriedBy(tenant, person) : []);
  }
  for (const e of q.edge) {
    if (e.inverted) {
      // `{type: blocked-by, to: X}`: the nodes X blocks, i.e. the targets of X's canonical edges.
      const from = index.get(e.to);
      sets.push(from ? from.edges.filter((x) => x.type === e.type).map((x) => x.to) : []);
    } else sets.push(index.inboundOf(e.to, [e.type]).map((x) => x.from));
  }
  if (projectValues) {
    const ids = new Set<string>();
    for (const v of projectValues) for (const id of index.idsInProject(v)) ids.add(id);
    sets.push(ids);
  }
  if (q.type) {
    const ids = new Set<string>();
    for (const t of q.type) for (const id of index.idsOfType(t)) ids.add(id);
    sets.push(ids);
  }
  if (sets.length === 0) return null;
  const size = (s: ReadonlySet<string> | string[]) => (Array.isArray(s) ? s.length : s.size);
  return sets.reduce((a, b) => (size(b) < size(a) ? b : a));
}

function matches(tenant: Tenant, record: NodeRecord, q: ResolvedQuery, me: string | null, projectValues: Set<string> | null): boolean {
  if (q.type && !q.type.includes(record.type)) return false;
  if (q.status && !q.status.includes(record.status)) return false;
  if (q.priority && !q.priority.includes(priorityOf(record) ?? 'none')) return false;
  if (projectValues && (record.project === null || !projectValues.has(record.project))) return false;
  if (q.assignee !== null) {
    const person = q.assignee === 'me' ? me : q.assignee;
    if (!person || !carries(tenant, person, record)) return false;
  }
  for (const e of q.edge) {
    if (e.inverted) {
      const from = tenant.index.get(e.to);
      if (!from || !from.edges.some((x) => x.type === e.type && x.to === record.id)) return false;
    } else if (!record.edges.some((x) => x.type === e.type && x.to === e.to)) return false;
  }
  if (q.done !== null && isDone(tenant, record) !== q.done) return false;
  return true;
}

/** Position of a status in its type's status list, so "status" sorts and groups in workflow order. */
function statusRank(tenant: Tenant, record: NodeRecord): number {
  const i = tenant.registry.nodeTypes.get(record.type)?.statuses.indexOf(record.status) ?? -1;
  return i < 0 ? 1000 : i;
}

type Key = number | string | null;

function sortValue(tenant: Tenant, record: NodeRecord, key: string): Key {
  if (key === 'priority') {
    const p = priorityOf(record);
    return p ? PRIORITY_RANK[p]! : null;
  }
  if (key === 'status') return statusRank(tenant, record);
  const v = cellOf(tenant, record, key);
  if (v === null) return null;
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (Array.isArray(v)) return v.length ? v.join(',') : null;
  return v;
}

function compareKeys(a: Key, b: Key, desc: boolean): number {
  // Missing values sort last in either direction.
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  let c: number;
  if (typeof a === 'number' && typeof b === 'number') c = a - b;
  else {
    const sa = String(a);
    const sb = String(b);
    c = sa < sb ? -1 : sa > sb ? 1 : 0;
  }
  return desc ? -c : c;
}

function sortRecords(tenant: Tenant, records: NodeRecord[], sort: SortKey[]): NodeRecord[] {
  const keyed = records.map((r) => ({ r, k: sort.map((s) => sortValue(tenant, r, s.key)) }));
  keyed.sort((x, y) => {
    for (let i = 0; i < sort.length; i++) {
      const c = compareKeys(x.k[i]!, y.k[i]!, sort[i]!.desc);
      if (c !== 0) return c;
    }
    return x.r.id < y.r.id ? -1 : x.r.id > y.r.id ? 1 : 0;
  });
  return keyed.map((x) => x.r);
}

function groupKeyOf(record: NodeRecord, by: GroupKey): string | null {
  if (by === 'status') return record.status;
  if (by === 'type') return record.type;
  if (by === 'project') return record.project;
  return priorityOf(record);
}

function groupOrder(tenant: Tenant, by: GroupKey, groups: Map<string | null, NodeRecord[]>): Array<string | null> {
  const keys = [...groups.keys()];
  const rank = (k: string | null): [number, string] => {
    if (k === null) return [1e9, ''];
    if (by === 'priority') return [3 - PRIORITY_RANK[k]!, k];
    if (by === 'status') return [Math.min(...groups.get(k)!.map((r) => statusRank(tenant, r))), k];
    return [0, k];
  };
  return keys.sort((a, b) => {
    const [ra, sa] = rank(a);
    const [rb, sb] = rank(b);
    return ra !== rb ? ra - rb : sa < sb ? -1 : sa > sb ? 1 : 0;
  });
}

export interface BuiltView {
  tree: LensTree;
  /** every matched id, before the lens limit (apply_lens_action checks membership here) */
  matched: Set<string>;
}

export function buildView(
  tenant: Tenant,
  lens: LensDef,
  q: ResolvedQuery,
  opts: { me: string | null; nowMs: number; sharer?: Sharer },
): BuiltView {
  const { index } = tenant;
  // The tenant root covers the whole graph; any other project value is scoped like the queue's.
  const projectValues = q.project === null || q.project === ROOT_ID ? null : resolveScope(tenant, q.project).values;
  const pool = candidates(tenant, q, opts.me, projectValues);
  const matchedRecords: NodeRecord[] = [];
  const seen = new Set<string>();
  const consider = (record: NodeRecord | undefined) => {
    if (!record || seen.has(record.id)) return;
    seen.add(record.id);
    if (matches(tenant, record, q, opts.me, projectValues)) matchedRecords.push(record);
  };
  if (pool === null) for (const record of index.nodes.values()) consider(record);
  else for (const id of pool) consider(index.get(id));

  const sorted = sortRecords(tenant, matchedRecords, lens.sort);
  const shown = sorted.slice(0, lens.limit);
  const itemOf = (record: NodeRecord): LensItem => {
    const item: LensItem = { id: record.id, title: record.title };
    for (const column of lens.columns) if (column !== 'id' && column !== 'title') item[column] = cellOf(tenant, record, column);
    return item;
  };

  let groups: LensGroup[];
  if (lens.groupBy === null) groups = shown.length ? [{ key: null, count: shown.length, items: shown.map(itemOf) }] : [];
  else {
    const byKey = new Map<string | null, NodeRecord[]>();
    for (const r of shown) {
      const k = groupKeyOf(r, lens.groupBy);
      const list = byKey.get(k);
      if (list) list.push(r);
      else byKey.set(k, [r]);
    }
    groups = groupOrder(tenant, lens.groupBy, byKey).map((key) => {
      const records = byKey.get(key)!;
      return { key, count: records.length, items: records.map(itemOf) };
    });
  }

  const tree: LensTree = {
    lens_id: lens.id,
    title: lens.title,
    generated_at: new Date(opts.nowMs).toISOString(),
    params: q.params,
    ...(opts.sharer ? { sharer: opts.sharer } : {}),
    groups,
    count: shown.length,
    total: sorted.length,
    truncated: sorted.length > shown.length,
    columns: ['id', 'title', ...lens.columns.filter((c) => c !== 'id' && c !== 'title')],
    group_by: lens.groupBy,
    sort: lens.sort.map((s) => (s.desc ? `-${s.key}` : s.key)),
  };
  return { tree, matched: new Set(sorted.map((r) => r.id)) };
}
