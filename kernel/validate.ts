/**
 * Edge validation helpers for adapters: path ids, slugs, shas, dates and body fields are
 * checked once, with the SPEC's codes (422 for malformed values).
 */
import { errors } from './errors.js';
import { patterns } from './registry.js';

export function requireId(value: unknown, field = 'id'): string {
  if (typeof value !== 'string' || !patterns.id.test(value) || value.length > 200) {
    throw errors.validation(`${field} must match ^[a-z0-9][a-z0-9-]*$`, [{ field, message: 'malformed id', value: typeof value === 'string' ? value.slice(0, 200) : value }]);
  }
  return value;
}

export function requireSha(value: unknown, field = 'sha', min = 7): string {
  if (typeof value !== 'string' || !new RegExp(`^[0-9a-f]{${min},40}$`).test(value)) {
    throw errors.validation(`${field} must be ${min}-40 lowercase hex characters`, [{ field, message: 'malformed sha' }]);
  }
  return value;
}

export function requireObject(value: unknown, what = 'request body'): Record<string, unknown> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw errors.validation(`${what} must be a JSON object`, [{ field: 'body', message: 'expected an object' }]);
  }
  return value as Record<string, unknown>;
}

export function requireString(body: Record<string, unknown>, field: string, opts: { max?: number; singleLine?: boolean } = {}): string {
  const v = body[field];
  if (typeof v !== 'string' || v.trim() === '') throw errors.validation(`${field} is required`, [{ field, message: 'required non-empty string' }]);
  checkString(v, field, opts);
  return v;
}

export function optionalString(body: Record<string, unknown>, field: string, opts: { max?: number; singleLine?: boolean } = {}): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw errors.validation(`${field} must be a string`, [{ field, message: 'expected a string' }]);
  checkString(v, field, opts);
  return v;
}

function checkString(v: string, field: string, opts: { max?: number; singleLine?: boolean }): void {
  if (opts.max !== undefined && v.length > opts.max) {
    throw errors.validation(`${field} exceeds ${opts.max} characters`, [{ field, message: `at most ${opts.max} characters` }]);
  }
  if (opts.singleLine && /[\r\n]/.test(v)) throw errors.validation(`${field} must be a single line`, [{ field, message: 'single line' }]);
}

/** A query value as one string (the last when repeated). */
export function queryString(value: string | string[] | undefined): string | undefined {
  if (Array.isArray(value)) return value[value.length - 1];
  return value;
}

/** Comma-separated and repeatable query values, flattened. */
export function queryList(value: string | string[] | undefined): string[] {
  const parts = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return parts.flatMap((p) => p.split(',')).map((p) => p.trim()).filter(Boolean);
}

/** Integer query parameter clamped to [min, max]; malformed is 422. */
export function clampedInt(value: string | string[] | undefined, field: string, def: number, min: number, max: number): number {
  const raw = queryString(value);
  if (raw === undefined || raw === '') return def;
  if (!/^-?\d+$/.test(raw)) throw errors.validation(`${field} must be an integer`, [{ field, message: 'expected an integer' }]);
  return Math.min(max, Math.max(min, Number(raw)));
}
