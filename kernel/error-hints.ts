/**
 * Errors that say what to do next (docs/decisions.md, "tools"): nearest-match suggestions
 * for unknown node ids, edge types and node types, and people named by name beside their id.
 *
 * Both adapters run every declared operation through `invoke`, which passes any `SvcError`
 * through `withHints` with the caller's tenant: the REST body and the tool text stay the same
 * bytes, and every plugin's "node X not found" gains its suggestions without each call site
 * learning about them.
 */
import { distance } from 'fastest-levenshtein';
import { errors, SvcError } from './errors.js';
import type { Registry } from './registry.js';
import type { Tenant } from './tenant.js';

/** Above this many nodes only those sharing the id's type prefix are compared (an error path, but still bounded). */
const WIDE = 20_000;
/** At most this many ids are compared for one 404 (a few milliseconds). */
const MAX_COMPARED = 50_000;

function* bounded<T>(items: Iterable<T>, max: number): Iterable<T> {
  let n = 0;
  for (const item of items) {
    if (n++ >= max) return;
    yield item;
  }
}

/**
 * The candidates nearest to `word` by edit distance, best first: those within a third of the
 * word's length (at least 2 edits), plus any candidate that contains the word or is contained
 * in it (a missing type prefix, a truncated id).
 */
export function nearest(word: string, candidates: Iterable<string>, max = 3): string[] {
  const w = word.toLowerCase();
  const limit = Math.max(2, Math.floor(w.length / 3));
  const scored: Array<{ c: string; d: number }> = [];
  for (const c of candidates) {
    if (c === word) continue;
    const lc = c.toLowerCase();
    let d = distance(w, lc);
    if (d > limit && w.length >= 3 && (lc.includes(w) || w.includes(lc))) d = limit; // containment ranks last among matches
    if (d <= limit) scored.push({ c, d });
  }
  scored.sort((a, b) => a.d - b.d || a.c.localeCompare(b.c));
  return scored.slice(0, max).map((x) => x.c);
}

/** `; did you mean 'a' or 'b'?` or '' */
export function didYouMean(list: string[]): string {
  if (list.length === 0) return '';
  const q = list.map((x) => `'${x}'`);
  return `; did you mean ${q.length === 1 ? q[0] : `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}`}?`;
}

/** The type prefixes of the registry (`task-`, `issue-`, ...), most common kinds first. */
export function typePrefixes(tenant: Tenant): string[] {
  return [...tenant.registry.nodeTypes.values()].map((t) => t.prefix).filter((p): p is string => typeof p === 'string' && p.length > 0);
}

/** What to say about an id the graph does not hold: nearest ids, or the type-prefix rule when it has none. */
export function unknownNodeHint(tenant: Tenant, id: string): { message: string; suggestions: string[] } {
  const prefixes = typePrefixes(tenant);
  const hasPrefix = prefixes.some((p) => id.startsWith(p));
  const dash = id.indexOf('-');
  const prefix = dash > 0 ? id.slice(0, dash + 1) : '';
  const pool = tenant.index.size > WIDE && prefix ? tenant.index.idsOfType(typeOfPrefix(tenant, prefix) ?? '') : tenant.index.nodes.keys();
  const suggestions = nearest(id, bounded(pool, MAX_COMPARED));
  let message = didYouMean(suggestions);
  if (!hasPrefix) message += `${message ? ' ' : '; '}ids start with a type prefix such as ${prefixes.slice(0, 4).join(', ')}`;
  return { message, suggestions };
}

function typeOfPrefix(tenant: Tenant, prefix: string): string | undefined {
  for (const t of tenant.registry.nodeTypes.values()) if (t.prefix === prefix) return t.type;
  return undefined;
}

const NODE_NOT_FOUND = /^node (\S+) not found$/;
const PERSON_ID = /\bperson-[a-z0-9][a-z0-9-]*/g;
const hinted = new WeakSet<SvcError>();

/**
 * The error with its hints: a `node X not found` gains the nearest existing ids (and the
 * type-prefix rule) in its message and `details.did_you_mean`; every person id in a message is
 * preceded by the person's name (`Ada Lovelace (person-ada)`). Idempotent (an
 * operation that invokes another sees its error once).
 */
export function withHints(err: SvcError, tenant: Tenant | undefined): SvcError {
  if (!tenant || hinted.has(err)) return err;
  let message = err.message;
  let details = err.details;
  const missing = err.code === 'not_found' ? NODE_NOT_FOUND.exec(message) : null;
  if (missing && details.did_you_mean === undefined) {
    const hint = unknownNodeHint(tenant, missing[1]!);
    if (hint.message) {
      message += hint.message;
      details = { ...details, did_you_mean: hint.suggestions };
    }
  }
  // a set of allowed values the details carry is named in the message too (an agent reads the message first)
  if (Array.isArray(details.allowed) && details.allowed.length > 0 && details.allowed.length <= 40 && !/\ballowed\b/.test(message)) {
    message += ` (allowed: ${details.allowed.map((v) => (typeof v === 'string' && v !== '' ? v : JSON.stringify(v))).join(', ')})`;
  }
  message = namePeople(tenant, message);
  if (message === err.message && details === err.details) {
    hinted.add(err);
    return err;
  }
  const out = new SvcError(err.status, err.code, message, details);
  hinted.add(out);
  return out;
}

/** `person-ada` -> `Ada Lovelace (person-ada)` where the graph knows the name and the text does not already give it. */
export function namePeople(tenant: Tenant, text: string): string {
  return text.replace(PERSON_ID, (id, offset: number) => {
    if (text[offset - 1] === '(') return id;
    const node = tenant.index.get(id);
    const name = node ? String(node.frontmatter.name ?? node.title ?? '').trim() : '';
    return name && name !== id ? `${name} (${id})` : id;
  });
}

/**
 * A node whose type cannot be told: no `type` and an id without a known prefix (`fix-login`),
 * or a `type` the registry lacks (`taks`, with the nearest types).
 */
export function unknownTypeError(registry: Registry, id: string, type: unknown): SvcError {
  const types = [...registry.nodeTypes.values()];
  const prefixes = types.map((t) => t.prefix).filter(Boolean);
  if (type === undefined || type === null || type === '') {
    return errors.validation(
      `cannot tell the type of '${id}': ids start with a type prefix such as ${prefixes.slice(0, 4).join(', ')} (e.g. task-${id}), or set type`,
      [{ field: 'id', message: `must start with a type prefix: ${prefixes.join(', ')}` }],
    );
  }
  const names = types.map((t) => t.type);
  const hint = didYouMean(nearest(String(type), names));
  return errors.validation(`unknown node type '${String(type)}'${hint || `; the types are ${names.join(', ')}`}`, [
    { field: 'type', message: 'not a type in the registry', allowed: names },
  ]);
}
