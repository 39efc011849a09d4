/**
 * Ingestion (docs/design.md §6): an ingester turns captured text into draft nodes against the
 * live registry. The built-in one is deterministic (`<type>: <summary>` lines); an external
 * one is an HTTP endpoint (`SVC_INGEST_URL`, wire format in this plugin's README). Whatever
 * drafted them, drafts are normalized and validated here the same way the kernel will
 * validate the commit (shape, body limit, validate and transition hooks), so errors can be
 * bounced back to the ingester once before anything is written.
 */
import { STAMP_KEYS, type Frontmatter } from '../../kernel/codec.js';
import { isSvcError } from '../../kernel/errors.js';
import type { Edge } from '../../kernel/graph-index.js';
import { LIMITS, patterns, type Registry } from '../../kernel/registry.js';
import type { Tenant } from '../../kernel/tenant.js';
import type { CaptureContext } from './schemas.js';

/** How long one external ingester call may take before it counts as unreachable. */
export const INGEST_TIMEOUT_MS = 20_000;
/** At most this many drafts per capture. */
export const MAX_DRAFTS = 50;

/** Frontmatter keys an ingester may not set through `fields` (server-owned or set elsewhere). */
const RESERVED_FIELDS = new Set([
  'id',
  'type',
  'status',
  'summary',
  'title',
  'body',
  'edges',
  'project',
  ...STAMP_KEYS,
  'created',
  'updated',
  'revision',
  'commits',
  'priority',
  'priority_by',
  'priority_at',
  'priority_via',
  'readiness',
  'readiness_by',
  'readiness_at',
  'readiness_via',
  'routed_to',
  'asker',
]);

/** Type words of the built-in ingester that are not type names. */
const TYPE_ALIASES: Record<string, string> = { decision: 'dec' };

export interface Draft {
  type: string;
  summary: string;
  title?: string;
  body: string;
  status?: string;
  project?: string;
  edges: Edge[];
  fields: Record<string, unknown>;
}

export interface DraftError {
  /** index of the draft in the ingester's list, or null for the list itself */
  draft: number | null;
  field: string;
  message: string;
}

export interface IngestCall {
  org: string;
  text: string;
  context: CaptureContext;
  source: string | null;
  attempt: 1 | 2;
  /** attempt 2: what was wrong with attempt 1 */
  errors?: DraftError[];
  previous?: unknown;
}

export interface IngestAnswer {
  /** raw drafts, normalized and checked by the caller */
  drafts: unknown;
  warnings: string[];
}

export interface Ingester {
  kind: 'builtin' | 'external';
  /** whether a bounce can change the answer (the built-in ingester would repeat itself) */
  bounces: boolean;
  draft(call: IngestCall, registry: Registry): Promise<IngestAnswer>;
}

/** The ingestion step did not answer usably: the capture is 503 `ingestion_unavailable`. */
export class IngestUnavailable extends Error {}

export function capturableTypeOf(registry: Registry, word: string): string | null {
  const lower = word.toLowerCase();
  const type = TYPE_ALIASES[lower] ?? lower;
  return registry.nodeTypes.get(type)?.capturable ? type : null;
}

// ---------------------------------------------------------------- built-in

const HEADER = /^\s*(?:[-*+]\s+)?([A-Za-z][A-Za-z-]*)\s*:\s*(\S.*?)\s*$/;

function trimBlankLines(lines: string[]): string[] {
  let start = 0;
  let end = lines.length;
  while (start < end && lines[start]!.trim() === '') start++;
  while (end > start && lines[end - 1]!.trim() === '') end--;
  return lines.slice(start, end);
}

/**
 * Each `<type>: <summary>` line whose type is capturable starts a draft; the lines below it,
 * up to the next such line, are its body. Lines before the first one open the first draft's
 * body, so no text is lost.
 */
export const builtinIngester: Ingester = {
  kind: 'builtin',
  bounces: false,
  async draft(call, registry) {
    const lines = call.text.replace(/\r\n?/g, '\n').split('\n');
    const drafts: Array<{ type: string; summary: string; lines: string[] }> = [];
    const preamble: string[] = [];
    const warnings: string[] = [];
    for (const line of lines) {
      const m = HEADER.exec(line);
      const type = m ? capturableTypeOf(registry, m[1]!) : null;
      if (m && type) drafts.push({ type, summary: m[2]!, lines: [] });
      else if (drafts.length > 0) drafts[drafts.length - 1]!.lines.push(line);
      else preamble.push(line);
    }
    const out: Draft[] = drafts.map((d, i) => {
      let summary = d.summary;
      const bodyLines = trimBlankLines(d.lines);
      if (summary.length > LIMITS.summaryChars) {
        const cut = summary.lastIndexOf(' ', LIMITS.summaryChars);
        const at = cut > LIMITS.summaryChars / 2 ? cut : LIMITS.summaryChars;
        bodyLines.unshift(`…${summary.slice(at).trim()}`, '');
        summary = summary.slice(0, at).trim();
        warnings.push(`the summary of draft ${i + 1} was cut to ${LIMITS.summaryChars} characters; the rest opens its body`);
      }
      return { type: d.type, summary, body: bodyLines.join('\n'), edges: [], fields: {} };
    });
    const kept = trimBlankLines(preamble);
    if (out.length > 0 && kept.length > 0) {
      const first = out[0]!;
      first.body = first.body ? `${kept.join('\n')}\n\n${first.body}` : kept.join('\n');
      warnings.push(`${kept.length} line(s) before the first typed line were kept at the top of the first draft's body`);
    }
    return { drafts: out, warnings };
  },
};

// ---------------------------------------------------------------- external

function describeFailure(err: unknown): string {
  const e = err as Error & { cause?: unknown };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `no answer within ${INGEST_TIMEOUT_MS} ms`;
  const cause = e?.cause instanceof Error ? e.cause.message : undefined;
  return cause ?? e?.message ?? String(err);
}

/** The HTTP ingester at `url`: POST {version, org, text, context, source, attempt, errors?, previous?, registry} -> {drafts, warnings?}. */
export function externalIngester(url: string): Ingester {
  return {
    kind: 'external',
    bounces: true,
    async draft(call, registry) {
      const payload = {
        version: 1,
        org: call.org,
        text: call.text,
        context: call.context,
        source: call.source,
        attempt: call.attempt,
        ...(call.errors ? { errors: call.errors, previous: call.previous ?? null } : {}),
        registry: registry.describe(false),
      };
      let res: Response;
      try {
        res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify(payload),
          signal: AbortSignal.timeout(INGEST_TIMEOUT_MS),
        });
      } catch (err) {
        throw new IngestUnavailable(`ingester unreachable: ${describeFailure(err)}`);
      }
      let text: string;
      try {
        text = await res.text();
      } catch (err) {
        throw new IngestUnavailable(`ingester connection failed: ${describeFailure(err)}`);
      }
      if (res.status < 200 || res.status > 299) throw new IngestUnavailable(`ingester answered HTTP ${res.status}`);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new IngestUnavailable('ingester answered something other than JSON');
      }
      const obj = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
      const warnings = Array.isArray(obj.warnings)
        ? obj.warnings
            .filter((w): w is string => typeof w === 'string')
            .slice(0, 20)
            .map((w) => `ingester: ${w.slice(0, 300)}`)
        : [];
      return { drafts: 'drafts' in obj ? obj.drafts : body, warnings };
    },
  };
}

// ---------------------------------------------------------------- normalize and check

function attrsOf(raw: Record<string, unknown>, index: number, at: string, errors: DraftError[]): Record<string, string> | null {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (k === 'type' || k === 'to') continue;
    const value = typeof v === 'number' || typeof v === 'boolean' ? String(v) : v;
    if (!patterns.attrValue.test(k) || typeof value !== 'string' || !patterns.attrValue.test(value)) {
      errors.push({ draft: index, field: `${at}.${k}`, message: 'edge attributes are flat [A-Za-z0-9_-] tokens' });
      return null;
    }
    out[k] = value;
  }
  return out;
}

/** Turns an ingester's raw answer into drafts, collecting every structural error. */
export function normalizeDrafts(raw: unknown, tenant: Tenant): { drafts: Draft[]; errors: DraftError[] } {
  const { registry, index } = tenant;
  const errors: DraftError[] = [];
  if (!Array.isArray(raw)) return { drafts: [], errors: [{ draft: null, field: 'drafts', message: 'expected an array of drafts' }] };
  if (raw.length > MAX_DRAFTS)
    return { drafts: [], errors: [{ draft: null, field: 'drafts', message: `at most ${MAX_DRAFTS} drafts per capture` }] };
  const drafts: Draft[] = [];
  raw.forEach((item, i) => {
    const before = errors.length;
    const fail = (field: string, message: string) => errors.push({ draft: i, field, message });
    if (!item || typeof item !== 'object' || Array.isArray(item))
      return fail('', 'a draft is an object {type, summary, body?, title?, status?, edges?, fields?}');
    const d = item as Record<string, unknown>;
    const type = typeof d.type === 'string' ? capturableTypeOf(registry, d.type) : null;
    if (!type) {
      const capturable = [...registry.nodeTypes.values()].filter((t) => t.capturable).map((t) => t.type);
      fail('type', `must be a capturable type: ${capturable.join(', ')}`);
    }
    const summary = typeof d.summary === 'string' ? d.summary.trim() : '';
    if (!summary) fail('summary', 'required non-empty string');
    else if (summary.length > LIMITS.summaryChars) fail('summary', `at most ${LIMITS.summaryChars} characters`);
    let title: string | undefined;
    if (d.title !== undefined && d.title !== null) {
      if (typeof d.title !== 'string' || d.title.length > 500 || /[\r\n]/.test(d.title))
        fail('title', 'a single line of at most 500 characters');
      else if (d.title.trim()) title = d.title.trim();
    }
    let body = '';
    if (d.body !== undefined && d.body !== null) {
      if (typeof d.body !== 'string') fail('body', 'must be a string');
      else if (Buffer.byteLength(d.body, 'utf8') > LIMITS.bodyBytes) fail('body', `at most ${LIMITS.bodyBytes} bytes`);
      else body = d.body;
    }
    let status: string | undefined;
    if (d.status !== undefined && d.status !== null && type) {
      const def = registry.nodeTypes.get(type)!;
      if (typeof d.status !== 'string' || !def.statuses.includes(d.status)) fail('status', `one of ${def.statuses.join(', ')}`);
      else if (def.terminal.includes(d.status)) fail('status', `a capture creates open work; '${d.status}' is terminal`);
      else status = d.status;
    }
    let project: string | undefined;
    if (d.project !== undefined && d.project !== null) {
      if (typeof d.project !== 'string' || !patterns.id.test(d.project)) fail('project', 'a slug matching ^[a-z0-9][a-z0-9-]*$');
      else project = d.project;
    }
    const edges: Edge[] = [];
    if (d.edges !== undefined && d.edges !== null) {
      if (!Array.isArray(d.edges)) fail('edges', 'must be an array of {type, to, ...attributes}');
      else {
        d.edges.forEach((e, j) => {
          const at = `edges[${j}]`;
          if (!e || typeof e !== 'object' || Array.isArray(e)) return fail(at, 'an edge is {type, to, ...attributes}');
          const edge = e as Record<string, unknown>;
          const normalized = typeof edge.type === 'string' ? registry.normalizeEdge(edge.type) : undefined;
          if (!normalized) return fail(`${at}.type`, 'not an edge type of the registry');
          if (normalized.inverted)
            return fail(
              `${at}.type`,
              `'${String(edge.type)}' is an inverse form, written on the target node; a capture only writes new nodes`,
            );
          if (typeof edge.to !== 'string' || !patterns.id.test(edge.to)) return fail(`${at}.to`, 'a node id');
          if (!index.has(edge.to)) return fail(`${at}.to`, `no node ${edge.to}`);
          const attrs = attrsOf(edge, i, at, errors);
          if (attrs) edges.push({ ...attrs, type: normalized.type, to: edge.to });
        });
      }
    }
    const fields: Record<string, unknown> = {};
    if (d.fields !== undefined && d.fields !== null) {
      if (typeof d.fields !== 'object' || Array.isArray(d.fields)) fail('fields', 'must be an object of extra frontmatter fields');
      else {
        for (const [k, v] of Object.entries(d.fields as Record<string, unknown>)) {
          if (RESERVED_FIELDS.has(k) || !/^[a-z][a-z0-9_]*$/.test(k)) fail(`fields.${k}`, 'reserved or malformed field name');
          else if (!(
            typeof v === 'string' ||
            typeof v === 'number' ||
            typeof v === 'boolean' ||
            (Array.isArray(v) && v.every((x) => typeof x === 'string'))
          )) {
            fail(`fields.${k}`, 'a string, number, boolean or list of strings');
          } else fields[k] = v;
        }
      }
    }
    if (errors.length === before && type) {
      drafts.push({
        type,
        summary,
        ...(title ? { title } : {}),
        body,
        ...(status ? { status } : {}),
        ...(project ? { project } : {}),
        edges,
        fields,
      });
    }
  });
  return { drafts: errors.length > 0 ? [] : drafts, errors };
}

/** The context edges every new node of a capture gets (docs/design.md §6). */
export function contextEdges(context: CaptureContext, duringExists: boolean): Edge[] {
  const edges: Edge[] = [];
  if (context.during && duringExists) edges.push({ type: 'relates-to', to: context.during, kind: 'found-during' });
  if (context.blocks && context.project)
    edges.push({ type: 'blocks', to: context.blocks, ...(context.needed_by ? { needed_by: context.needed_by } : {}) });
  return edges;
}

/** A draft's frontmatter as it will be committed (the kernel adds the stamps and timestamps). */
export function frontmatterOf(draft: Draft, id: string, project: string | undefined, extraEdges: Edge[]): Frontmatter {
  const edges = new Map<string, Edge>();
  for (const e of draft.edges) edges.set(`${e.type}\u0000${e.to}`, e);
  for (const e of extraEdges) edges.set(`${e.type}\u0000${e.to}`, e);
  const fm: Frontmatter = { id, type: draft.type };
  if (draft.status) fm.status = draft.status;
  fm.summary = draft.summary;
  if (draft.title) fm.title = draft.title;
  const p = project ?? draft.project;
  if (p) fm.project = p;
  Object.assign(fm, draft.fields);
  if (edges.size > 0) fm.edges = [...edges.values()];
  return fm;
}

/**
 * Validates drafts as the commit will (edge count, ajv shape, body size, validate hooks,
 * the create transition), without writing. Returns every error found.
 */
export async function checkDrafts(
  tenant: Tenant,
  drafts: Draft[],
  project: string | undefined,
  extraEdges: Edge[],
  author: string,
): Promise<DraftError[]> {
  const { registry } = tenant;
  const errors: DraftError[] = [];
  for (const [i, draft] of drafts.entries()) {
    const def = registry.nodeTypes.get(draft.type)!;
    const fm = frontmatterOf(draft, `${def.prefix}draft-${i + 1}`, project, extraEdges);
    if (fm.status === undefined) fm.status = def.initial;
    fm.author = author;
    fm.authored_via = 'capture';
    if (Array.isArray(fm.edges) && fm.edges.length > LIMITS.edges) {
      errors.push({ draft: i, field: 'edges', message: `at most ${LIMITS.edges} edges per node, context edges included` });
      continue;
    }
    for (const e of registry.validateShape(def, fm) as Array<{ instancePath?: string; message?: string }>) {
      errors.push({
        draft: i,
        field: (e.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.') || 'frontmatter',
        message: e.message ?? 'invalid',
      });
    }
    try {
      await tenant.hooks.validate(registry, def.type, { ...fm, body: draft.body });
      await tenant.hooks.checkTransition(registry, def.type, {
        node: { ...fm, body: draft.body },
        from: null,
        to: String(fm.status),
        actor: author,
      });
    } catch (err) {
      if (!isSvcError(err)) throw err;
      const list = Array.isArray(err.details.errors) ? (err.details.errors as Array<{ message?: unknown }>) : [];
      if (list.length === 0) errors.push({ draft: i, field: 'node', message: err.message });
      for (const e of list)
        errors.push({ draft: i, field: 'node', message: typeof e.message === 'string' ? e.message : JSON.stringify(e) });
    }
  }
  return errors;
}
