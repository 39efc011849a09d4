/**
 * The capture request as the adapters hand it over, checked once at the edge: text,
 * context (project, during, blocks, needed_by), source and the idempotency key. Every
 * failure here is a 422 raised before any ingestion runs.
 */
import { errors } from '../../kernel/errors.js';
import { patterns } from '../../kernel/registry.js';
import { requireId, requireObject } from '../../kernel/validate.js';

/** The text is preserved whole as a node body when it fits no schema, so it obeys the body limit. */
export const TEXT_MAX_BYTES = 8 * 1024;
const KEY_MAX = 255;
const SOURCE_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;
const CONTEXT_KEYS = new Set(['project', 'during', 'blocks', 'needed_by']);

export interface CaptureContext {
  project?: string;
  during?: string;
  blocks?: string;
  needed_by?: string;
}

export interface CaptureRequest {
  text: string;
  context: CaptureContext;
  source: string | null;
  idempotencyKey: string | null;
}

export function requireProjectSlug(value: unknown, field: string): string {
  if (typeof value !== 'string' || !patterns.id.test(value) || value.length > 200) {
    throw errors.validation(`${field} must be a project slug matching ^[a-z0-9][a-z0-9-]*$`, [{ field, message: 'malformed slug', value: typeof value === 'string' ? value.slice(0, 200) : value }]);
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
  throw errors.validation(`${field} must be a date YYYY-MM-DD`, [{ field, message: 'not a YYYY-MM-DD date', value: typeof value === 'string' ? value.slice(0, 40) : value }]);
}

function idempotencyKeyOf(body: Record<string, unknown>, headers: Record<string, string | undefined>, fromHeaders: boolean): string | null {
  const check = (v: unknown, field: string): string => {
    if (typeof v !== 'string' || v.length === 0 || v.length > KEY_MAX || /[\u0000-\u001f\u007f]/.test(v)) {
      throw errors.validation(`${field} must be 1-${KEY_MAX} printable characters`, [{ field, message: 'malformed idempotency key' }]);
    }
    return v;
  };
  const inBody = body.idempotency_key === undefined || body.idempotency_key === null ? null : check(body.idempotency_key, 'idempotency_key');
  const header = fromHeaders ? headers['idempotency-key'] : undefined;
  const inHeader = header === undefined || header === '' ? null : check(header, 'Idempotency-Key');
  if (inBody !== null && inHeader !== null && inBody !== inHeader) {
    throw errors.validation('idempotency_key and the Idempotency-Key header disagree', [{ field: 'idempotency_key', message: 'differs from the Idempotency-Key header' }]);
  }
  return inBody ?? inHeader;
}

/** Parses and checks a capture request; `fromHeaders` is true on REST (the header is a REST affordance). */
export function parseCaptureRequest(input: unknown, headers: Record<string, string | undefined>, fromHeaders: boolean): CaptureRequest {
  const body = requireObject(input);
  const text = body.text;
  if (typeof text !== 'string' || text.trim() === '') throw errors.validation('text is required', [{ field: 'text', message: 'required non-empty string' }]);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > TEXT_MAX_BYTES) {
    throw errors.validation(`text exceeds ${TEXT_MAX_BYTES} bytes`, [{ field: 'text', message: `at most ${TEXT_MAX_BYTES} bytes (the node body limit)`, bytes }]);
  }
  const context: CaptureContext = {};
  const raw = body.context;
  if (raw !== undefined && raw !== null) {
    const c = requireObject(raw, 'context');
    for (const k of Object.keys(c)) {
      if (!CONTEXT_KEYS.has(k)) throw errors.validation(`unknown context key '${k}'`, [{ field: `context.${k}`, message: 'allowed: project, during, blocks, needed_by' }]);
    }
    const present = (k: string) => c[k] !== undefined && c[k] !== null && c[k] !== '';
    if (present('project')) context.project = requireProjectSlug(c.project, 'context.project');
    if (present('during')) context.during = requireId(c.during, 'context.during');
    if (present('blocks')) context.blocks = requireId(c.blocks, 'context.blocks');
    if (present('needed_by')) context.needed_by = requireDate(c.needed_by, 'context.needed_by');
  }
  if (context.blocks && !context.project) {
    throw errors.validation('context.blocks needs context.project (the project the new work belongs to)', [{ field: 'context.project', message: 'required with context.blocks' }]);
  }
  if (context.needed_by && !context.blocks) {
    throw errors.validation('context.needed_by dates the blocks edge; give context.blocks too', [{ field: 'context.blocks', message: 'required with context.needed_by' }]);
  }
  let source: string | null = null;
  if (body.source !== undefined && body.source !== null) {
    if (typeof body.source !== 'string' || !SOURCE_PATTERN.test(body.source)) {
      throw errors.validation('source must be a short lowercase token such as distill', [{ field: 'source', message: 'must match ^[a-z0-9][a-z0-9_-]{0,63}$' }]);
    }
    source = body.source;
  }
  return { text, context, source, idempotencyKey: idempotencyKeyOf(body, headers, fromHeaders) };
}
