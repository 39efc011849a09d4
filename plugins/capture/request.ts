/**
 * The capture request after its schema (api.ts) checked the shapes: text, context (project,
 * during, blocks, needed_by), source and the idempotency key. The rules left here are 422s
 * raised before any ingestion runs.
 */
import { errors } from '../../kernel/errors.js';
import type { Static } from '../../kernel/operation.js';
import { patterns } from '../../kernel/registry.js';
import type { CaptureContext, CaptureTextInput } from './schemas.js';

/** The text is preserved whole as a node body when it fits no schema, so it obeys the body limit. */
export const TEXT_MAX_BYTES = 8 * 1024;
export const KEY_MAX = 255;
const DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;

export interface CaptureRequest {
  text: string;
  context: CaptureContext;
  source: string | null;
  idempotencyKey: string | null;
}

export function requireProjectSlug(value: unknown, field: string): string {
  if (typeof value !== 'string' || !patterns.id.test(value) || value.length > 200) {
    throw errors.validation(`${field} must be a project slug matching ^[a-z0-9][a-z0-9-]*$`, [
      { field, message: 'malformed slug', value: typeof value === 'string' ? value.slice(0, 200) : value },
    ]);
  }
  return value;
}

/** A real calendar date in `YYYY-MM-DD` form. */
export function requireDate(value: unknown, field: string): string {
  const m = typeof value === 'string' ? DATE_PATTERN.exec(value) : null;
  if (m) {
    const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
    const date = new Date(Date.UTC(y, mo - 1, d));
    if (date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d) return value as string;
  }
  throw errors.validation(`${field} must be a date YYYY-MM-DD`, [
    { field, message: 'not a YYYY-MM-DD date', value: typeof value === 'string' ? value.slice(0, 40) : value },
  ]);
}

/** The body's key or the REST `Idempotency-Key` header (the schema checked the body's shape). */
function idempotencyKeyOf(inBodyRaw: string | undefined, headers: Record<string, string | undefined>, fromHeaders: boolean): string | null {
  const check = (v: string, field: string): string => {
    if (v.length === 0 || v.length > KEY_MAX || /[\u0000-\u001f\u007f]/.test(v)) {
      throw errors.validation(`${field} must be 1-${KEY_MAX} printable characters`, [{ field, message: 'malformed idempotency key' }]);
    }
    return v;
  };
  const inBody = inBodyRaw === undefined ? null : check(inBodyRaw, 'idempotency_key');
  const header = fromHeaders ? headers['idempotency-key'] : undefined;
  const inHeader = header === undefined || header === '' ? null : check(header, 'Idempotency-Key');
  if (inBody !== null && inHeader !== null && inBody !== inHeader) {
    throw errors.validation('idempotency_key and the Idempotency-Key header disagree', [
      { field: 'idempotency_key', message: 'differs from the Idempotency-Key header' },
    ]);
  }
  return inBody ?? inHeader;
}

/**
 * The rules of a capture request the schema cannot state: the text's size in bytes (the node
 * body limit), a real calendar date, the context keys that need each other, and the REST
 * `Idempotency-Key` header. `fromHeaders` is true on REST (the header is a REST affordance).
 */
export function parseCaptureRequest(
  input: Static<typeof CaptureTextInput>,
  headers: Record<string, string | undefined>,
  fromHeaders: boolean,
): CaptureRequest {
  const text = input.text;
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > TEXT_MAX_BYTES) {
    throw errors.validation(`text exceeds ${TEXT_MAX_BYTES} bytes`, [
      { field: 'text', message: `at most ${TEXT_MAX_BYTES} bytes (the node body limit)`, bytes },
    ]);
  }
  const context: CaptureContext = {};
  const c = input.context ?? {};
  // An empty value is an absent one.
  if (c.project) context.project = c.project;
  if (c.during) context.during = c.during;
  if (c.blocks) context.blocks = c.blocks;
  if (c.needed_by) context.needed_by = requireDate(c.needed_by, 'context.needed_by');
  if (context.blocks && !context.project) {
    throw errors.validation('context.blocks needs context.project (the project the new work belongs to)', [
      { field: 'context.project', message: 'required with context.blocks' },
    ]);
  }
  if (context.needed_by && !context.blocks) {
    throw errors.validation('context.needed_by dates the blocks edge; give context.blocks too', [
      { field: 'context.blocks', message: 'required with context.needed_by' },
    ]);
  }
  return { text, context, source: input.source ?? null, idempotencyKey: idempotencyKeyOf(input.idempotency_key, headers, fromHeaders) };
}
