/**
 * Analytics operations: flow analytics, program progress and capture metrics. One
 * function per operation; the REST routes and the MCP tools (`analytics`,
 * `render_program`) are thin adapters over these. Inputs arrive as query-string values
 * (the tool adapters convert their typed arguments), and are validated here once.
 */
import { errors } from '../../kernel/errors.js';
import { RawResponse, type OpContext } from '../../kernel/plugin.js';
import { patterns } from '../../kernel/registry.js';
import { clampedInt, queryList, queryString, requireId } from '../../kernel/validate.js';
import { computeCaptureMetrics, pseudonymKey, type CaptureMetrics } from './capture-metrics.js';
import { buildProgram, type ProgramPayload } from './program.js';
import { renderAnalyticsText, renderProgramText } from './render.js';
import { computeAnalytics, DAY_MS, type AnalyticsParams, type AnalyticsPayload } from './report.js';
import { timelinesOf } from './timeline.js';

type QueryValue = string | string[] | undefined;

/** SPEC Limits: weeks 1-52, top 1-100, aging 1-365, clamped. */
export const ANALYTICS_LIMITS = {
  weeks: { def: 12, min: 1, max: 52 },
  top: { def: 10, min: 1, max: 100 },
  aging: { def: 14, min: 1, max: 365 },
} as const;

/** GET /v1/program bounds: levels below the root and tree entries (clamped). */
export const PROGRAM_LIMITS = {
  depth: { def: 8, min: 1, max: 50 },
  max_nodes: { def: 200, min: 1, max: 2000 },
} as const;

const TEXT_HEADERS = { 'content-type': 'text/plain; charset=utf-8' };

function format(value: QueryValue, allowed: readonly string[], def: string): string {
  const raw = queryString(value);
  if (raw === undefined || raw === '') return def;
  if (!allowed.includes(raw)) throw errors.validation(`format must be one of ${allowed.join(', ')}`, [{ field: 'format', message: `one of ${allowed.join(', ')}`, value: raw.slice(0, 50) }]);
  return raw;
}

// ---------------------------------------------------------------- analytics

export interface AnalyticsInput {
  project?: QueryValue;
  type?: QueryValue;
  weeks?: QueryValue;
  top?: QueryValue;
  aging?: QueryValue;
  format?: QueryValue;
}

function analyticsParams(ctx: OpContext, input: AnalyticsInput): AnalyticsParams {
  const rawProject = queryString(input.project);
  let project: string | null = null;
  if (rawProject !== undefined && rawProject !== '') {
    if (!patterns.id.test(rawProject) || rawProject.length > 200) {
      throw errors.validation('project must be a slug matching ^[a-z0-9][a-z0-9-]*$', [{ field: 'project', message: 'malformed slug', value: rawProject.slice(0, 200) }]);
    }
    project = rawProject;
  }
  const { registry } = ctx.tenant;
  const requested = queryList(input.type);
  const unknown = requested.filter((t) => !patterns.id.test(t) || !registry.nodeTypes.has(t));
  if (unknown.length > 0) {
    throw errors.validation(`unknown node type(s): ${unknown.map((t) => t.slice(0, 50)).join(', ')}`, unknown.map((t) => ({ field: 'type', message: 'not a node type in the registry', value: t.slice(0, 50) })));
  }
  const types = requested.length > 0 ? [...new Set(requested)] : [...registry.nodeTypes.values()].filter((t) => t.queueable).map((t) => t.type).sort();
  const lim = ANALYTICS_LIMITS;
  return {
    project,
    types,
    weeks: clampedInt(input.weeks, 'weeks', lim.weeks.def, lim.weeks.min, lim.weeks.max),
    top: clampedInt(input.top, 'top', lim.top.def, lim.top.min, lim.top.max),
    aging: clampedInt(input.aging, 'aging', lim.aging.def, lim.aging.min, lim.aging.max),
  };
}

export async function analytics(ctx: OpContext, input: AnalyticsInput): Promise<AnalyticsPayload | RawResponse> {
  const params = analyticsParams(ctx, input);
  const fmt = format(input.format, ['json', 'text'], 'json');
  const timelines = timelinesOf(ctx.tenant);
  await timelines.ready();
  const payload = computeAnalytics(ctx.tenant, timelines, params, ctx.services.clock.now());
  if (fmt === 'text') return new RawResponse(200, TEXT_HEADERS, renderAnalyticsText(ctx.tenant.org, payload));
  return payload;
}

// ---------------------------------------------------------------- program

export interface ProgramInput {
  id: unknown;
  depth?: QueryValue;
  max_nodes?: QueryValue;
  format?: QueryValue;
}

export async function program(ctx: OpContext, input: ProgramInput): Promise<ProgramPayload | RawResponse> {
  const id = requireId(input.id);
  const lim = PROGRAM_LIMITS;
  const bounds = {
    depth: clampedInt(input.depth, 'depth', lim.depth.def, lim.depth.min, lim.depth.max),
    max_nodes: clampedInt(input.max_nodes, 'max_nodes', lim.max_nodes.def, lim.max_nodes.min, lim.max_nodes.max),
  };
  const fmt = format(input.format, ['json', 'text'], 'json');
  const root = ctx.tenant.index.get(id);
  if (!root) throw errors.notFound(`node ${id}`);
  const payload = buildProgram(ctx.tenant, root, bounds);
  if (fmt === 'text') return new RawResponse(200, TEXT_HEADERS, renderProgramText(payload));
  return payload;
}

// ---------------------------------------------------------------- capture metrics

export interface CaptureMetricsInput {
  since?: QueryValue;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** default window when `since` is omitted */
const DEFAULT_SINCE_DAYS = 30;

function parseSinceDate(raw: string | undefined, nowMs: number): { since: string; sinceMs: number } {
  if (raw === undefined || raw === '') {
    const d = new Date(nowMs - DEFAULT_SINCE_DAYS * DAY_MS).toISOString().slice(0, 10);
    return { since: d, sinceMs: Date.parse(`${d}T00:00:00Z`) };
  }
  const m = DATE.exec(raw);
  const ms = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : NaN;
  if (!m || Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== raw) {
    throw errors.validation('since must be a calendar date YYYY-MM-DD', [{ field: 'since', message: 'expected YYYY-MM-DD', value: raw.slice(0, 50) }]);
  }
  return { since: raw, sinceMs: ms };
}

export async function captureMetrics(ctx: OpContext, input: CaptureMetricsInput): Promise<CaptureMetrics> {
  // Off unless the deployment exports metrics (SVC_CAPTURE_METRICS=1): the route does not exist.
  if (!ctx.services.config.captureMetrics) throw errors.notFound(`route GET /v1/metrics/capture`);
  if (!ctx.actor.isAdmin) throw errors.forbidden('capture metrics are for administrators');
  const nowMs = ctx.services.clock.now();
  const { since, sinceMs } = parseSinceDate(queryString(input.since), nowMs);
  const timelines = timelinesOf(ctx.tenant);
  await timelines.ready();
  const key = await pseudonymKey(ctx.tenant, nowMs);
  const capture = ctx.services.host.plugins.find((p) => p.name === 'capture');
  const captureEnabled = capture !== undefined && ctx.services.host.usable(ctx.tenant, capture);
  return computeCaptureMetrics(ctx.tenant, timelines, { since, sinceMs, nowMs, key, captureEnabled });
}
