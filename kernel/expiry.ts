/**
 * `expires` values of token and ticket mints: `<N>d` or an ISO date. Past dates and
 * values beyond the cap are rejected (422), never clamped.
 */
import { errors } from './errors.js';

const DAY_MS = 24 * 60 * 60 * 1000;

export function parseExpiry(value: unknown, opts: { nowMs: number; defaultDays: number; maxDays: number; field?: string }): string {
  const field = opts.field ?? 'expires';
  const cap = opts.nowMs + opts.maxDays * DAY_MS;
  if (value === undefined || value === null || value === '') return new Date(opts.nowMs + opts.defaultDays * DAY_MS).toISOString();
  if (typeof value !== 'string') throw errors.validation(`${field} must be '<N>d' or an ISO date`, [{ field }]);
  let at: number;
  const days = /^(\d{1,5})d$/.exec(value);
  if (days) {
    const n = Number(days[1]);
    if (n < 1) throw errors.validation(`${field} must be at least 1d`, [{ field }]);
    at = opts.nowMs + n * DAY_MS;
  } else if (/^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value) && !Number.isNaN(Date.parse(value))) {
    at = Date.parse(value);
  } else {
    throw errors.validation(`${field} must be '<N>d' or an ISO date`, [{ field, value }]);
  }
  if (at <= opts.nowMs) throw errors.validation(`${field} is in the past`, [{ field, value }]);
  if (at > cap + 60_000)
    throw errors.validation(`${field} is beyond the ${opts.maxDays}-day maximum`, [{ field, value, max_days: opts.maxDays }]);
  return new Date(at).toISOString();
}
