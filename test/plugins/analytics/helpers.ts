/**
 * Helpers of the analytics tests: a server with core + history + analytics (+ extras), a
 * clock frozen at one instant (advance still moves it) so two calls compute the same
 * times, and small write helpers.
 */
import { expect } from 'chai';
import type { ManualClock, ServerConfig } from '../../../kernel/config.js';
import type { PluginDef } from '../../../kernel/plugin.js';
import { analyticsPlugin } from '../../../plugins/analytics/index.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { historyPlugin } from '../../../plugins/history/index.js';
import { md, startTestServer, type TestServer } from '../../helpers/harness.js';

export const DAY = 24 * 60 * 60 * 1000;
export const WEEK = 7 * DAY;

export function startAnalyticsServer(
  opts: { extra?: PluginDef[]; config?: Partial<ServerConfig>; keepData?: boolean } = {},
): Promise<TestServer> {
  return startTestServer({
    plugins: [corePlugin, historyPlugin, analyticsPlugin, ...(opts.extra ?? [])],
    config: opts.config,
    keepData: opts.keepData,
  });
}

/** Freezes a manual clock at its current instant; `advance` still moves it. Returns the unfreeze. */
export function freezeClock(clock: ManualClock, at = clock.now()): () => void {
  let now = at;
  const own = clock as unknown as Record<string, unknown>;
  const advance = clock.advance.bind(clock);
  own.now = () => now;
  own.advance = (ms: number) => {
    now += ms;
    advance(ms);
  };
  return () => {
    delete own.now;
    delete own.advance;
  };
}

/** Monday 00:00 UTC of the week holding `ms` (an independent statement of the bucketing rule). */
export function mondayOf(ms: number): number {
  const d = new Date(ms);
  const dayIndex = (d.getUTCDay() + 6) % 7;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - dayIndex);
}

/** Index of `ms` in a window of `weeks` weeks that ends with the week holding `now`. */
export function weekIndex(ms: number, now: number, weeks: number): number {
  return weeks - 1 - Math.round((mondayOf(now) - mondayOf(ms)) / WEEK);
}

export async function put(t: TestServer, nodes: Array<Record<string, unknown>>, token?: string): Promise<void> {
  const res = await t.api('POST', '/v1/nodes', { token, body: { nodes: nodes.map((n) => md(n, String(n.body ?? ''))) } });
  expect(res.status, res.text).to.equal(200);
}

export async function setStatus(t: TestServer, id: string, status: string, token?: string): Promise<void> {
  const res = await t.api('POST', `/v1/nodes/${id}/status`, { token, body: { status } });
  expect(res.status, res.text).to.equal(200);
}

export async function addEdge(t: TestServer, id: string, type: string, to: string, attrs?: Record<string, string>): Promise<void> {
  const res = await t.api('POST', `/v1/nodes/${id}/edges`, { body: { type, to, ...(attrs ? { attrs } : {}) } });
  expect(res.status, res.text).to.equal(200);
}

/** Rewrites a node's summary (a later update that must not move its completion time). */
export async function touch(t: TestServer, id: string, summary: string): Promise<void> {
  const read = await t.api('GET', `/v1/nodes/${id}`);
  expect(read.status, read.text).to.equal(200);
  const { revision, frontmatter, body } = read.body as { revision: string; frontmatter: Record<string, unknown>; body: string };
  const res = await t.api('POST', '/v1/nodes', {
    body: { nodes: [{ node: { ...frontmatter, summary, body }, if_exists: 'update', revision }] },
  });
  expect(res.status, res.text).to.equal(200);
}

export function analytics(t: TestServer, query = '', token?: string) {
  return t.api('GET', `/v1/analytics${query}`, { token });
}
