/**
 * The link's mappings between GitHub and the graph (docs/github.md "Mappings"): labels to a
 * node type and a priority, GitHub logins to people, issue states to statuses and back. A link
 * stores its mappings whole (the defaults below filled in at link time, so what an admin reads
 * is what applies); the functions here read them, falling back on the node type's own statuses
 * (the tenant's registry: a schema may add types) where a mapping names none.
 */
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Tenant } from '../../kernel/tenant.js';
import type { LinkMappings } from './store.js';

export const PRIORITIES = ['p1', 'p2', 'p3'] as const;

/** The defaults (docs/import.md's GitHub reading, extended with the common priority labels). */
export const DEFAULT_MAPPINGS: LinkMappings = {
  label_types: {
    bug: 'issue',
    defect: 'issue',
    'type: bug': 'issue',
    'kind/bug': 'issue',
    enhancement: 'task',
    feature: 'task',
    task: 'task',
    'type: feature': 'task',
    'kind/feature': 'task',
  },
  label_priorities: {
    p0: 'p1',
    p1: 'p1',
    'priority:high': 'p1',
    'priority: high': 'p1',
    'priority/high': 'p1',
    'priority:critical': 'p1',
    'priority: critical': 'p1',
    critical: 'p1',
    urgent: 'p1',
    p2: 'p2',
    'priority:medium': 'p2',
    'priority: medium': 'p2',
    'priority/medium': 'p2',
    p3: 'p3',
    'priority:low': 'p3',
    'priority: low': 'p3',
    'priority/low': 'p3',
  },
  people: {},
  open_status: { task: 'open', issue: 'open' },
  closed_status: { task: 'done', issue: 'resolved' },
  not_planned_status: { task: 'cancelled', issue: 'wontfix' },
  default_type: 'issue',
};

const lowerKeys = (map: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(map).map(([k, v]) => [k.trim().toLowerCase(), v]));

/** An admin's (partial) mappings over the defaults: each map given is merged over the default one. */
export function withDefaults(given: Partial<LinkMappings> = {}, base: LinkMappings = DEFAULT_MAPPINGS): LinkMappings {
  return {
    label_types: { ...base.label_types, ...lowerKeys(given.label_types ?? {}) },
    label_priorities: { ...base.label_priorities, ...lowerKeys(given.label_priorities ?? {}) },
    people: { ...base.people, ...lowerKeys(given.people ?? {}) },
    open_status: { ...base.open_status, ...(given.open_status ?? {}) },
    closed_status: { ...base.closed_status, ...(given.closed_status ?? {}) },
    not_planned_status: { ...base.not_planned_status, ...(given.not_planned_status ?? {}) },
    default_type: given.default_type ?? base.default_type,
  };
}

/** The node type of a new node from its issue's labels: the first label that maps, else the default. */
export function typeOfLabels(m: LinkMappings, labels: readonly string[]): string {
  for (const label of labels) {
    const type = m.label_types[label.trim().toLowerCase()];
    if (type) return type;
  }
  return m.default_type;
}

/** The priority the labels give (the highest when several do), null when none maps. */
export function priorityOfLabels(m: LinkMappings, labels: readonly string[]): string | null {
  let best: string | null = null;
  for (const label of labels) {
    const p = m.label_priorities[label.trim().toLowerCase()];
    if (p && (best === null || p < best)) best = p;
  }
  return best;
}

/** GitHub's closing reasons that mean "not done" (REST `state_reason`). */
const NOT_PLANNED = new Set(['not_planned', 'duplicate']);

/**
 * The status of a node of `type` for an issue in `state` (`state_reason` from the payload).
 * A mapping that names none falls back on the type: its first status when open, its first
 * terminal status when closed (the last when not planned).
 */
export function statusOfState(
  tenant: Tenant,
  m: LinkMappings,
  type: string,
  state: 'open' | 'closed',
  stateReason: string | null | undefined,
): string {
  const def = tenant.registry.nodeTypes.get(type);
  if (state === 'open') return m.open_status[type] ?? def?.initial ?? def?.statuses[0] ?? 'open';
  if (stateReason && NOT_PLANNED.has(stateReason)) return m.not_planned_status[type] ?? def?.terminal[def.terminal.length - 1] ?? 'closed';
  return m.closed_status[type] ?? def?.terminal[0] ?? 'closed';
}

/**
 * The issue state of a node status (outbound): a terminal status of its type is `closed`,
 * with `not_planned` when the mappings name it as the not-planned status, else `completed`.
 */
export function stateOfStatus(
  tenant: Tenant,
  m: LinkMappings,
  type: string,
  status: string,
): { state: 'open' | 'closed'; state_reason: 'completed' | 'not_planned' | null } {
  const def = tenant.registry.nodeTypes.get(type);
  const terminal = def ? def.terminal.includes(status) : status === m.closed_status[type] || status === m.not_planned_status[type];
  if (!terminal) return { state: 'open', state_reason: null };
  return { state: 'closed', state_reason: m.not_planned_status[type] === status ? 'not_planned' : 'completed' };
}

/** A person node's `github` field (the login, without @), lower-case; null when it has none. */
export function githubLoginOf(person: NodeRecord): string | null {
  const raw = person.frontmatter.github;
  if (typeof raw !== 'string' || raw.trim() === '') return null;
  return raw.trim().replace(/^@/, '').toLowerCase();
}

/** The person a GitHub login maps to: the link's explicit map, else the person whose `github` field names it; null: nobody. */
export function personOfLogin(tenant: Tenant, m: LinkMappings, login: string | null | undefined): string | null {
  if (!login) return null;
  const key = login.toLowerCase();
  const explicit = m.people[key];
  if (explicit) {
    const person = tenant.index.get(explicit);
    return person && person.type === 'person' ? explicit : null;
  }
  for (const id of tenant.index.idsOfType('person')) {
    const person = tenant.index.get(id);
    if (person && githubLoginOf(person) === key) return id;
  }
  return null;
}

/** The GitHub login of a person (outbound assignees): the explicit map read backwards, else the person's `github` field. */
export function loginOfPerson(tenant: Tenant, m: LinkMappings, personId: string): string | null {
  for (const [login, person] of Object.entries(m.people)) if (person === personId) return login;
  const person = tenant.index.get(personId);
  return person && person.type === 'person' ? githubLoginOf(person) : null;
}

/** The node's assignees as GitHub logins, lower-case, sorted (people with no login are left out). */
export function assigneeLoginsOf(tenant: Tenant, m: LinkMappings, node: NodeRecord): string[] {
  const logins = node.edges
    .filter((e) => e.type === 'assigned')
    .map((e) => loginOfPerson(tenant, m, e.to))
    .filter((l): l is string => l !== null);
  return [...new Set(logins)].sort();
}

/** Label names as `synced` keeps them: trimmed, deduplicated, sorted. */
export function normalizeLabels(labels: readonly string[]): string[] {
  return [...new Set(labels.map((l) => l.trim()).filter((l) => l !== ''))].sort();
}

/** Logins as `synced` keeps them: lower-case, deduplicated, sorted. */
export function normalizeLogins(logins: readonly string[]): string[] {
  return [...new Set(logins.map((l) => l.toLowerCase()))].sort();
}
