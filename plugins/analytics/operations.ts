/**
 * Analytics operations: flow analytics, program progress and capture metrics. One
 * function per operation; the REST routes and the MCP tools (`analytics`,
 * `render_program`) are declared in api.ts, whose schemas check the input's shape; the
 * rules that need the registry (known node types, calendar dates) and clamping stay here.
 */
import { errors } from '../../kernel/errors.js';
import { RawResponse, type OpContext } from '../../kernel/plugin.js';
import { patterns } from '../../kernel/registry.js';
import type { Static } from '../../kernel/operation.js';
import { computeCaptureMetrics, pseudonymKey } from './capture-metrics.js';
import { buildProgram } from './program.js';
import { renderAnalyticsText, renderProgramText } from './render.js';
import { computeAnalytics, DAY_MS, type AnalyticsParams } from './report.js';
import type {
  AnalyticsInput,
  AnalyticsPayload,
  CaptureMetrics,
  GetCaptureMetricsInput,
  GetProgramInput,
  ProgramPayload,
} from './schemas.js';
import { timelinesOf } from './timeline.js';

/** An integer bound (a tool may send its digits as a string; the schema allows only digits), clamped. */
function clamped(value: number | string | undefined, bound: { def: number; min: number; max: number }): number {
  if (value === undefined || value === '') return bound.def;
  return Math.min(bound.max, Math.max(bound.min, Number(value)));
}

/** docs/spec.md Limits: weeks 1-52, top 1-100, aging 1-365, clamped. */
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

// ---------------------------------------------------------------- analytics

function analyticsParams(ctx: OpContext, input: Static<typeof AnalyticsInput>): AnalyticsParams {
  const project = input.project || null;
  const { registry } = ctx.tenant;
  const requested = [input.type ?? []]
    .flat()
    .flatMap((p) => p.split(','))
    .map((p) => p.trim())
    .filter(Boolean);
  const unknown = requested.filter((t) => !patterns.id.test(t) || !registry.nodeTypes.has(t));
  if (unknown.length > 0) {
    throw errors.validation(
      `unknown node type(s): ${unknown.map((t) => t.slice(0, 50)).join(', ')}`,
      unknown.map((t) => ({ field: 'type', message: 'not a node type in the registry', value: t.slice(0, 50) })),
    );
  }
  const types =
    requested.length > 0
      ? [...new Set(requested)]
      : [...registry.nodeTypes.values()]
          .filter((t) => t.queueable)
          .map((t) => t.type)
          .sort();
  const lim = ANALYTICS_LIMITS;
  return {
    project,
    types,
    weeks: clamped(input.weeks, lim.weeks),
    top: clamped(input.top, lim.top),
    aging: clamped(input.aging, lim.aging),
  };
}

export async function analytics(ctx: OpContext, input: Static<typeof AnalyticsInput>): Promise<AnalyticsPayload | RawResponse> {
  const params = analyticsParams(ctx, input);
  const fmt = input.format ?? 'json';
  const timelines = timelinesOf(ctx.tenant);
  await timelines.ready();
  const payload = computeAnalytics(ctx.tenant, timelines, params, ctx.services.clock.now());
  if (fmt === 'text') return new RawResponse(200, TEXT_HEADERS, renderAnalyticsText(ctx.tenant.org, payload));
  return payload;
}

// ---------------------------------------------------------------- program

export async function getProgram(ctx: OpContext, input: Static<typeof GetProgramInput>): Promise<ProgramPayload | RawResponse> {
  const id = input.id;
  const lim = PROGRAM_LIMITS;
  const bounds = { depth: clamped(input.depth, lim.depth), max_nodes: clamped(input.max_nodes, lim.max_nodes) };
  const fmt = input.format ?? 'json';
  const root = ctx.tenant.index.get(id);
  if (!root) throw errors.notFound(`node ${id}`);
  const payload = buildProgram(ctx.tenant, root, bounds);
  if (fmt === 'text') return new RawResponse(200, TEXT_HEADERS, renderProgramText(payload));
  return payload;
}

// ---------------------------------------------------------------- capture metrics

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
    throw errors.validation('since must be a calendar date YYYY-MM-DD', [
      { field: 'since', message: 'expected YYYY-MM-DD', value: raw.slice(0, 50) },
    ]);
  }
  return { since: raw, sinceMs: ms };
}

export async function getCaptureMetrics(ctx: OpContext, input: Static<typeof GetCaptureMetricsInput>): Promise<CaptureMetrics> {
  // Off unless the deployment exports metrics (SVC_CAPTURE_METRICS=1): the route does not exist.
  if (!ctx.services.config.captureMetrics) throw errors.notFound(`route GET /v1/metrics/capture`);
  if (!ctx.actor.isAdmin) throw errors.forbidden('capture metrics are for administrators');
  const nowMs = ctx.services.clock.now();
  const { since, sinceMs } = parseSinceDate(input.since, nowMs);
  const timelines = timelinesOf(ctx.tenant);
  await timelines.ready();
  const key = await pseudonymKey(ctx.tenant, nowMs);
  const capture = ctx.services.host.plugins.find((p) => p.name === 'capture');
  const captureEnabled = capture !== undefined && ctx.services.host.usable(ctx.tenant, capture);
  return computeCaptureMetrics(ctx.tenant, timelines, { since, sinceMs, nowMs, key, captureEnabled });
}
