/** Helpers of the gardener tests. */
import { expect } from 'chai';
import type { PluginDef } from '../../../kernel/plugin.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { gardenerPlugin } from '../../../plugins/gardener/index.js';
import { startTestServer, type TestServer } from '../../helpers/harness.js';

export const MIN = 60 * 1000;
export const DAY = 24 * 60 * MIN;
/** DEFAULT_LIMITS.grace_window_ms of kernel/tenant.ts, which a fresh tenant gets */
export const GRACE = 2 * DAY;

export function startGardenerServer(extra: PluginDef[] = []): Promise<TestServer> {
  return startTestServer({ plugins: [corePlugin, gardenerPlugin, ...extra] });
}

export interface Sweep {
  checked: number;
  filed: string[];
  resolved: string[];
  skipped: string[];
  generated_at: string;
}

/** POST /v1/gardener, expecting 200. */
export async function sweep(t: TestServer, token = t.adminToken): Promise<Sweep> {
  const res = await t.api('POST', '/v1/gardener', { token });
  expect(res.status, res.text).to.equal(200);
  return res.body as Sweep;
}

export async function put(t: TestServer, nodes: Array<Record<string, unknown>>): Promise<void> {
  const res = await t.api('POST', '/v1/nodes', { body: { nodes } });
  expect(res.status, res.text).to.equal(200);
}

export async function post(t: TestServer, path: string, body: unknown, token = t.adminToken): Promise<Record<string, any>> {
  const res = await t.api('POST', path, { token, body });
  expect(res.status, `${path}: ${res.text}`).to.equal(200);
  return res.body;
}

export async function node(t: TestServer, id: string): Promise<Record<string, any>> {
  const res = await t.api('GET', `/v1/nodes/${id}`);
  expect(res.status, res.text).to.equal(200);
  return res.body;
}

/** The `open_findings` of a node read, as `check` names ([] when the key is absent). */
export async function openChecks(t: TestServer, id: string): Promise<string[]> {
  const view = await node(t, id);
  return ((view.open_findings as Array<{ check: string }> | undefined) ?? []).map((f) => f.check).sort();
}
