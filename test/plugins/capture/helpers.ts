/** Helpers of the capture tests: a server with core + capture, the journal, a pinned clock. */
import { expect } from 'chai';
import type { ManualClock, ServerConfig } from '../../../kernel/config.js';
import type { Tenant } from '../../../kernel/tenant.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { capturePlugin } from '../../../plugins/capture/index.js';
import { readCaptureJournal, type CaptureJournalEntry } from '../../../plugins/capture/journal.js';
import { startTestServer, type TestServer } from '../../helpers/harness.js';

export const DAY = 24 * 60 * 60 * 1000;

export function startCaptureServer(config: Partial<ServerConfig> = {}): Promise<TestServer> {
  return startTestServer({ plugins: [corePlugin, capturePlugin], config });
}

export function tenantOf(t: TestServer): Tenant {
  return t.server.services.tenants.get(t.org)!;
}

/** Every journal entry so far (operational state, read the way the analytics plugin reads it). */
export function journal(t: TestServer): CaptureJournalEntry[] {
  return readCaptureJournal(tenantOf(t), { untilMs: t.clock.now() + 365 * DAY });
}

/** Pins the injected clock at `at` (advance still moves it), so two servers compute the same times. */
export function pinClock(clock: ManualClock, at: number): void {
  let now = at;
  const own = clock as unknown as Record<string, unknown>;
  own.now = () => now;
  own.advance = (ms: number) => {
    now += ms;
  };
}

export async function node(t: TestServer, id: string): Promise<{ frontmatter: Record<string, any>; body: string; revision: string }> {
  const res = await t.api('GET', `/v1/nodes/${id}`);
  expect(res.status, res.text).to.equal(200);
  return res.body;
}

export async function nodeCount(t: TestServer): Promise<number> {
  const res = await t.api('GET', '/v1/status');
  return res.body.node_count as number;
}

export function capture(t: TestServer, body: unknown, opts: { token?: string; headers?: Record<string, string> } = {}) {
  return t.api('POST', '/v1/capture', { body, token: opts.token, headers: opts.headers });
}
