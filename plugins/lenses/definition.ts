/**
 * A lens node's view definition (docs/design.md §8): `query`, `columns`, `group_by`, `sort`,
 * `params` (defaults), plus the optional `limit` and `actions` keys of this plugin.
 *
 * Two phases keep the error codes honest: `parseLens` checks the definition itself (a
 * broken lens is 422 `invalid_node` naming the lens fields), `resolveQuery` substitutes the
 * render params (`"$name"`) and checks the substituted values (a bad param is 422
 * `validation_failed` naming `param.<name>`).
 */
import { errors } from '../../kernel/errors.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import { patterns, type Registry } from '../../kernel/registry.js';

export const GROUP_KEYS = ['status', 'type', 'project', 'priority'] as const;
export type GroupKey = (typeof GROUP_KEYS)[number];

/** Columns computed by the plugin; any other column name reads a frontmatter field. */
export const BUILTIN_COLUMNS = [
  'id',
  'title',
  'type',
  'status',
  'priority',
  'assignee',
  'project',
  'summary',
  'author',
  'created',
  'updated',
  'readiness',
  'done',
] as const;
export const DEFAULT_COLUMNS = ['id', 'title', 'type', 'status', 'priority', 'assignee'];
export const DEFAULT_SORT: SortKey[] = [
  { key: 'priority', desc: true },
  { key: 'id', desc: false },
];

/** The declarative action vocabulary of `apply_lens_action` (see actions.ts). */
export const ACTION_NAMES = ['set_status', 'set_priority', 'claim', 'release'] as const;
export type ActionName = (typeof ACTION_NAMES)[number];

export const DEFAULT_LIMIT = 500;
export const MAX_LIMIT = 2000;
const MAX_PARAMS = 20;
const MAX_PARAM_VALUE = 200;

const QUERY_KEYS = ['type', 'status', 'priority', 'project', 'assignee', 'edge', 'done'] as const;
const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const FIELD_NAME = /^[a-z][a-z0-9_]{0,63}$/;
const TOKEN = /^[a-z0-9][a-z0-9-]*$/;
const PRIORITIES = ['p1', 'p2', 'p3', 'none'];

/** A value written in the lens: a literal, or `"$name"` taking the render param `name`. */
type Slot = { literal: string } | { param: string };

interface EdgeSlot {
  type: Slot;
  to: Slot;
}

export interface SortKey {
  key: string;
  desc: boolean;
}

export interface LensDef {
  id: string;
  title: string;
  query: {
    type?: Slot[];
    status?: Slot[];
    priority?: Slot[];
    project?: Slot;
    assignee?: Slot;
    edge?: EdgeSlot[];
    done?: boolean;
  };
  columns: string[];
  groupBy: GroupKey | null;
  sort: SortKey[];
  /** declared defaults */
  defaults: Record<string, string>;
  /** every param the lens knows: declared defaults and `$name` references */
  paramNames: string[];
  actions: ActionName[];
  limit: number;
}

export interface FieldError {
  field: string;
  message: string;
}

/** The render params after defaults, and the query with every `$name` substituted. */
export interface ResolvedQuery {
  params: Record<string, string>;
  type: string[] | null;
  status: string[] | null;
  priority: string[] | null;
  project: string | null;
  assignee: string | null;
  edge: Array<{ type: string; to: string; inverted: boolean }>;
  done: boolean | null;
}

function slotOf(raw: unknown, field: string, problems: FieldError[], refs: Set<string>): Slot | null {
  if (typeof raw === 'number' || typeof raw === 'boolean') return { literal: String(raw) };
  if (typeof raw !== 'string' || raw === '') {
    problems.push({ field, message: 'expected a non-empty string' });
    return null;
  }
  if (raw.startsWith('$')) {
    const name = raw.slice(1);
    if (!PARAM_NAME.test(name)) {
      problems.push({ field, message: `'${raw}' is not a valid param reference ($ followed by [A-Za-z_][A-Za-z0-9_]*)` });
      return null;
    }
    refs.add(name);
    return { param: name };
  }
  return { literal: raw };
}

function slotList(raw: unknown, field: string, problems: FieldError[], refs: Set<string>): Slot[] {
  const list = Array.isArray(raw) ? raw : [raw];
  if (list.length === 0) problems.push({ field, message: 'expected a value or a non-empty list' });
  return list.map((v, i) => slotOf(v, Array.isArray(raw) ? `${field}[${i}]` : field, problems, refs)).filter((s): s is Slot => s !== null);
}

function sortKeysOf(raw: unknown, problems: FieldError[]): SortKey[] {
  if (raw === undefined || raw === null) return DEFAULT_SORT;
  const list = Array.isArray(raw) ? raw : [raw];
  const out: SortKey[] = [];
  list.forEach((v, i) => {
    const m = typeof v === 'string' ? /^([-+]?)([a-z][a-z0-9_]{0,63})$/.exec(v) : null;
    if (!m) problems.push({ field: `sort[${i}]`, message: "expected a column name, '-name' for descending" });
    else out.push({ key: m[2]!, desc: m[1] === '-' });
  });
  return out;
}

/** Reads a lens node's definition; a broken definition is 422 `invalid_node` with every problem listed. */
export function parseLens(record: NodeRecord): LensDef {
  const fm = record.frontmatter;
  const problems: FieldError[] = [];
  const refs = new Set<string>();
  const query: LensDef['query'] = {};
  const rawQuery = fm.query ?? {};
  if (!rawQuery || typeof rawQuery !== 'object' || Array.isArray(rawQuery)) {
    problems.push({ field: 'query', message: 'expected a map' });
  } else {
    for (const [key, value] of Object.entries(rawQuery as Record<string, unknown>)) {
      const field = `query.${key}`;
      if (!(QUERY_KEYS as readonly string[]).includes(key)) {
        problems.push({ field, message: `unknown query key (known: ${QUERY_KEYS.join(', ')})` });
        continue;
      }
      if (value === null || value === undefined) continue;
      if (key === 'type' || key === 'status' || key === 'priority') query[key] = slotList(value, field, problems, refs);
      else if (key === 'project' || key === 'assignee') {
        const slot = slotOf(value, field, problems, refs);
        if (slot) query[key] = slot;
      } else if (key === 'done') {
        if (typeof value !== 'boolean') problems.push({ field, message: 'expected true or false' });
        else query.done = value;
      } else if (key === 'edge') {
        const list = Array.isArray(value) ? value : [value];
        query.edge = [];
        list.forEach((e, i) => {
          const f = Array.isArray(value) ? `${field}[${i}]` : field;
          if (!e || typeof e !== 'object' || Array.isArray(e)) return void problems.push({ field: f, message: 'expected {type, to}' });
          const type = slotOf((e as Record<string, unknown>).type, `${f}.type`, problems, refs);
          const to = slotOf((e as Record<string, unknown>).to, `${f}.to`, problems, refs);
          if (type && to) query.edge!.push({ type, to });
        });
      }
    }
  }

  let columns = DEFAULT_COLUMNS;
  if (fm.columns !== undefined && fm.columns !== null) {
    if (!Array.isArray(fm.columns) || fm.columns.length === 0)
      problems.push({ field: 'columns', message: 'expected a non-empty list of column names' });
    else {
      columns = [];
      fm.columns.forEach((c, i) => {
        if (typeof c !== 'string' || !FIELD_NAME.test(c))
          problems.push({ field: `columns[${i}]`, message: 'expected a column name ([a-z][a-z0-9_]*)' });
        else if (!columns.includes(c)) columns.push(c);
      });
    }
  }

  let groupBy: GroupKey | null = null;
  if (fm.group_by !== undefined && fm.group_by !== null && fm.group_by !== 'none') {
    if (typeof fm.group_by === 'string' && (GROUP_KEYS as readonly string[]).includes(fm.group_by)) groupBy = fm.group_by as GroupKey;
    else problems.push({ field: 'group_by', message: `expected one of ${GROUP_KEYS.join(', ')}` });
  }

  const sort = sortKeysOf(fm.sort, problems);

  const defaults: Record<string, string> = {};
  if (fm.params !== undefined && fm.params !== null) {
    if (typeof fm.params !== 'object' || Array.isArray(fm.params))
      problems.push({ field: 'params', message: 'expected a map of param defaults' });
    else {
      for (const [name, value] of Object.entries(fm.params as Record<string, unknown>)) {
        if (!PARAM_NAME.test(name)) problems.push({ field: `params.${name}`, message: 'param names are [A-Za-z_][A-Za-z0-9_]*' });
        else if (value === null) defaults[name] = '';
        else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') defaults[name] = String(value);
        else if (Array.isArray(value) && value.every((v) => typeof v === 'string')) defaults[name] = value.join(',');
        else problems.push({ field: `params.${name}`, message: 'a default is a string (or a list of strings)' });
      }
    }
  }

  let actions: ActionName[] = [...ACTION_NAMES];
  if (fm.actions !== undefined && fm.actions !== null) {
    if (!Array.isArray(fm.actions)) problems.push({ field: 'actions', message: 'expected a list of action names' });
    else {
      actions = [];
      fm.actions.forEach((a, i) => {
        if (typeof a === 'string' && (ACTION_NAMES as readonly string[]).includes(a)) actions.push(a as ActionName);
        else problems.push({ field: `actions[${i}]`, message: `expected one of ${ACTION_NAMES.join(', ')}` });
      });
    }
  }

  let limit = DEFAULT_LIMIT;
  if (fm.limit !== undefined && fm.limit !== null) {
    if (typeof fm.limit !== 'number' || !Number.isInteger(fm.limit) || fm.limit < 1 || fm.limit > MAX_LIMIT) {
      problems.push({ field: 'limit', message: `expected an integer 1-${MAX_LIMIT}` });
    } else limit = fm.limit;
  }

  const paramNames = [...new Set([...Object.keys(defaults), ...refs])].sort();
  if (paramNames.length > MAX_PARAMS) problems.push({ field: 'params', message: `at most ${MAX_PARAMS} params` });
  if (problems.length > 0)
    throw errors.invalidNode(`lens ${record.id} has an invalid view definition`, { id: record.id, errors: problems });
  return { id: record.id, title: record.title, query, columns, groupBy, sort, defaults, paramNames, actions, limit };
}

/**
 * Supplied render params: known names only, string values of at most 200 characters.
 * A list value (tool form) is joined with commas, as repeated `param.<name>` keys are.
 */
export function checkParams(lens: LensDef, supplied: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  const problems: FieldError[] = [];
  for (const [name, raw] of Object.entries(supplied)) {
    const field = `param.${name}`;
    if (!lens.paramNames.includes(name)) {
      problems.push({
        field,
        message: lens.paramNames.length ? `unknown param (this lens takes: ${lens.paramNames.join(', ')})` : 'this lens takes no params',
      });
      continue;
    }
    let value: string;
    if (typeof raw === 'string') value = raw;
    else if (typeof raw === 'number' || typeof raw === 'boolean') value = String(raw);
    else if (Array.isArray(raw) && raw.every((v) => typeof v === 'string')) value = raw.join(',');
    else {
      problems.push({ field, message: 'expected a string' });
      continue;
    }
    if (value.length > MAX_PARAM_VALUE) problems.push({ field, message: `at most ${MAX_PARAM_VALUE} characters` });
    else out[name] = value;
  }
  if (problems.length > 0) throw errors.validation('invalid render params', problems);
  return out;
}

/** Substitutes params and checks the values; an unset or empty param drops its filter (or list entry). */
export function resolveQuery(lens: LensDef, registry: Registry, supplied: Record<string, string>): ResolvedQuery {
  const params: Record<string, string> = {};
  for (const name of lens.paramNames) params[name] = supplied[name] ?? lens.defaults[name] ?? '';
  const lensProblems: FieldError[] = [];
  const paramProblems: FieldError[] = [];
  const fail = (slot: Slot, lensField: string, message: string) => {
    if ('param' in slot) paramProblems.push({ field: `param.${slot.param}`, message: `${message} (used by ${lensField})` });
    else lensProblems.push({ field: lensField, message });
  };

  /** Values of a list query key: literals as written, a param value split on commas. */
  const list = (key: 'type' | 'status' | 'priority', check: (v: string) => string | null): string[] | null => {
    const slots = lens.query[key];
    if (!slots) return null;
    const out: string[] = [];
    let fromParams = true;
    for (const slot of slots) {
      const values =
        'literal' in slot
          ? [slot.literal]
          : params[slot.param]!.split(',')
              .map((v) => v.trim())
              .filter(Boolean);
      if ('literal' in slot) fromParams = false;
      for (const v of values) {
        const problem = check(v);
        if (problem) fail(slot, `query.${key}`, problem);
        else if (!out.includes(v)) out.push(v);
      }
    }
    // Every entry came from unset params: the filter is off, not "match nothing".
    return out.length === 0 && fromParams ? null : out;
  };
  const scalar = (slot: Slot | undefined, field: string, check: (v: string) => string | null): string | null => {
    if (!slot) return null;
    const v = 'literal' in slot ? slot.literal : params[slot.param]!.trim();
    if (v === '') return null;
    const problem = check(v);
    if (problem) {
      fail(slot, field, problem);
      return null;
    }
    return v;
  };

  const type = list('type', (v) => (registry.nodeTypes.has(v) ? null : `unknown node type '${v}'`));
  const status = list('status', (v) => (TOKEN.test(v) ? null : `malformed status '${v}'`));
  const priority = list('priority', (v) => (PRIORITIES.includes(v) ? null : `unknown priority '${v}' (allowed: ${PRIORITIES.join(', ')})`));
  const project = scalar(lens.query.project, 'query.project', (v) =>
    patterns.id.test(v) && v.length <= 200 ? null : `malformed project slug '${v}'`,
  );
  const assignee = scalar(lens.query.assignee, 'query.assignee', (v) =>
    v === 'me' || (patterns.id.test(v) && v.length <= 200) ? null : `assignee must be 'me' or a person id, got '${v}'`,
  );
  const edge: ResolvedQuery['edge'] = [];
  (lens.query.edge ?? []).forEach((e, i) => {
    const field = lens.query.edge!.length > 1 ? `query.edge[${i}]` : 'query.edge';
    const typeName = scalar(e.type, `${field}.type`, (v) => (registry.normalizeEdge(v) ? null : `unknown edge type '${v}'`));
    const to = scalar(e.to, `${field}.to`, (v) => (patterns.id.test(v) && v.length <= 200 ? null : `malformed node id '${v}'`));
    if (typeName && to) {
      const normalized = registry.normalizeEdge(typeName)!;
      edge.push({ type: normalized.type, to, inverted: normalized.inverted });
    }
  });
  if (lensProblems.length > 0)
    throw errors.invalidNode(`lens ${lens.id} has an invalid view definition`, { id: lens.id, errors: lensProblems });
  if (paramProblems.length > 0) throw errors.validation('invalid render params', paramProblems);
  return { params, type, status, priority, project, assignee, edge, done: lens.query.done ?? null };
}
