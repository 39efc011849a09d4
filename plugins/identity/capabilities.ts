/**
 * Capability maps (docs/design.md §10): parsing the three accepted publish forms, the record
 * kept as operational state (collection `capabilities`, keyed by agent id, never
 * committed), and matching a `profile-` node's `requires` against a published map.
 */
import { errors } from '../../kernel/errors.js';
import type { Static } from '../../kernel/operation.js';
import type { CapabilityMap as CapabilityMapSchema, CapabilityRecord as CapabilityRecordSchema } from './api.js';

export const CAP_KINDS = ['harnesses', 'reachable_mcp', 'skills', 'plugins'] as const;
export type CapKind = (typeof CAP_KINDS)[number];

/** The singular noun a `missing <kind>: <slug>` reason uses for each list. */
const KIND_NOUN: Record<CapKind, string> = { harnesses: 'harness', reachable_mcp: 'reachable_mcp', skills: 'skill', plugins: 'plugin' };

/** A published map: one list of slugs per kind, plus what the host refuses (the schema in api.ts). */
export type CapabilityMap = Static<typeof CapabilityMapSchema>;
/** The stored record, as `read_capabilities` answers it. */
export type CapabilityRecord = Static<typeof CapabilityRecordSchema>;

export const CAPABILITIES_COLLECTION = 'capabilities';

/** A capability slug: harness, MCP server, skill or plugin names such as `claude-code`, `github`, `pdf.read`. */
const CAP_SLUG = /^[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,127}$/;
const MAX_PER_LIST = 500;

function invalid(message: string, field: string): never {
  throw errors.validation(`malformed capability map: ${message}`, [{ field, message }]);
}

function slugList(value: unknown, field: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) invalid(`${field} must be a list of slugs`, field);
  if (value.length > MAX_PER_LIST) invalid(`${field} holds more than ${MAX_PER_LIST} entries`, field);
  for (const [i, v] of value.entries()) {
    if (typeof v !== 'string' || !CAP_SLUG.test(v))
      invalid(`${field}[${i}] must be a slug (letters, digits, . _ : @ / + -; at most 128)`, `${field}[${i}]`);
  }
  return [...new Set(value as string[])].sort();
}

function plainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function rejectUnknownKeys(obj: Record<string, unknown>, allowed: readonly string[], where: string): void {
  const unknown = Object.keys(obj).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) invalid(`unknown key(s) ${unknown.join(', ')} in ${where}; allowed: ${allowed.join(', ')}`, where);
}

/**
 * A publish body in any of its three forms, as one normalized map (sorted, de-duplicated
 * lists): the map itself `{harnesses?, reachable_mcp?, skills?, plugins?, deny?}`; the raw
 * `{probed, declared, deny}` form, whose `probed` and `declared` maps are merged; or either
 * of them inside a `{capabilities: {...}}` envelope.
 */
export function parseCapabilities(input: unknown): CapabilityMap {
  if (input === undefined || input === null) invalid('a JSON object is required', 'body');
  if (!plainObject(input)) invalid('the body must be a JSON object', 'body');
  let body = input;
  if ('capabilities' in body) {
    rejectUnknownKeys(body, ['capabilities'], 'the envelope');
    if (!plainObject(body.capabilities)) invalid('capabilities must be an object', 'capabilities');
    body = body.capabilities;
  }
  if ('probed' in body || 'declared' in body) {
    rejectUnknownKeys(body, ['probed', 'declared', 'deny'], 'the raw form');
    const merged: Record<CapKind, string[]> = { harnesses: [], reachable_mcp: [], skills: [], plugins: [] };
    for (const part of ['probed', 'declared'] as const) {
      const map = body[part];
      if (map === undefined || map === null) continue;
      if (!plainObject(map)) invalid(`${part} must be a map of capability lists`, part);
      rejectUnknownKeys(map, CAP_KINDS, part);
      for (const kind of CAP_KINDS) merged[kind].push(...slugList(map[kind], `${part}.${kind}`));
    }
    return {
      harnesses: [...new Set(merged.harnesses)].sort(),
      reachable_mcp: [...new Set(merged.reachable_mcp)].sort(),
      skills: [...new Set(merged.skills)].sort(),
      plugins: [...new Set(merged.plugins)].sort(),
      deny: slugList(body.deny, 'deny'),
    };
  }
  rejectUnknownKeys(body, [...CAP_KINDS, 'deny'], 'the capability map');
  return {
    harnesses: slugList(body.harnesses, 'harnesses'),
    reachable_mcp: slugList(body.reachable_mcp, 'reachable_mcp'),
    skills: slugList(body.skills, 'skills'),
    plugins: slugList(body.plugins, 'plugins'),
    deny: slugList(body.deny, 'deny'),
  };
}

export function sameCapabilities(a: CapabilityMap, b: CapabilityMap): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A profile's `requires` as lists of slugs per kind; anything unusable in the node is ignored. */
export function profileRequirements(requires: unknown): Record<CapKind, string[]> {
  const out: Record<CapKind, string[]> = { harnesses: [], reachable_mcp: [], skills: [], plugins: [] };
  if (!plainObject(requires)) return out;
  for (const kind of CAP_KINDS) {
    const list = requires[kind];
    if (Array.isArray(list)) out[kind] = [...new Set(list.filter((v): v is string => typeof v === 'string' && v !== ''))];
    else if (typeof list === 'string' && list !== '') out[kind] = [list];
  }
  return out;
}

/** The failing requirements of a host: `missing <kind>: <slug>` and `denied: <slug>`. */
export function unmetRequirements(required: Record<CapKind, string[]>, caps: CapabilityMap): string[] {
  const reasons: string[] = [];
  const denied = new Set(caps.deny);
  for (const kind of CAP_KINDS) {
    const have = new Set(caps[kind]);
    for (const slug of required[kind]) {
      if (denied.has(slug)) reasons.push(`denied: ${slug}`);
      else if (!have.has(slug)) reasons.push(`missing ${KIND_NOUN[kind]}: ${slug}`);
    }
  }
  return reasons;
}

const UNITS: Array<[string, number]> = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1000],
];

/** `max_age`: `30m`, `12h`, `7d` (also `45s`, `500ms`) or a plain number of milliseconds; positive. */
export function parseMaxAge(raw: string): number {
  const m = /^(\d{1,12})(ms|s|m|h|d)?$/.exec(raw.trim());
  const n = m ? Number(m[1]) : NaN;
  if (!m || !Number.isSafeInteger(n) || n <= 0) {
    throw errors.validation("max_age must be a positive duration like '30m', '12h', '7d' or a number of milliseconds", [
      { field: 'max_age', message: 'malformed duration', value: raw.slice(0, 100) },
    ]);
  }
  const unit = m[2] ?? 'ms';
  const factor = unit === 'ms' ? 1 : UNITS.find(([u]) => u === unit)![1];
  return n * factor;
}

/** A compact age for `stale: last seen <age> ago`: the largest whole unit (`3d`, `5h`, `12m`, `40s`). */
export function formatAge(ms: number): string {
  const safe = Math.max(0, ms);
  for (const [unit, size] of UNITS) if (safe >= size) return `${Math.floor(safe / size)}${unit}`;
  return '0s';
}
