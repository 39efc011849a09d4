/**
 * Edge checks that are not an operation's input schema: ids met inside parsed markdown or per
 * batch item (where a failure is one entry's, not the request's), and raw query values read
 * outside a declared operation (a render ticket). Request shapes are validated by the
 * operation declarations (kernel/operation.ts).
 */
import { errors } from './errors.js';
import { patterns } from './registry.js';

export function requireId(value: unknown, field = 'id'): string {
  if (typeof value !== 'string' || !patterns.id.test(value) || value.length > 200) {
    throw errors.validation(`${field} must match ^[a-z0-9][a-z0-9-]*$`, [
      { field, message: 'malformed id', value: typeof value === 'string' ? value.slice(0, 200) : value },
    ]);
  }
  return value;
}

/** A query value as one string (the last when repeated). */
export function queryString(value: string | string[] | undefined): string | undefined {
  if (Array.isArray(value)) return value[value.length - 1];
  return value;
}

/** Comma-separated and repeatable values, flattened. */
export function queryList(value: string | string[] | undefined): string[] {
  const parts = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return parts
    .flatMap((p) => p.split(','))
    .map((p) => p.trim())
    .filter(Boolean);
}
