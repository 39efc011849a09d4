/**
 * Shared helpers of the lease and queue tests: a server with core + leases (+ queue), people,
 * agent tokens minted straight into the token store, a clock that can be frozen so two calls
 * see the same instant, and node edge reads.
 */
import { expect } from 'chai';
import { generateToken, newTokenRecord } from '../../../kernel/auth.js';
import type { ManualClock } from '../../../kernel/config.js';
import type { PluginDef } from '../../../kernel/plugin.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { leasesPlugin } from '../../../plugins/leases/index.js';
import { startTestServer, type TestServer } from '../../helpers/harness.js';

export const MIN = 60 * 1000;
export const HOUR = 60 * MIN;
export const DAY = 24 * HOUR;
/** DEFAULT_LIMITS of kernel/tenant.ts, which a fresh tenant gets */
export const TTL = 30 * MIN;
export const MAX_TTL = 8 * HOUR;
export const GRACE = 2 * DAY;

export async function startLeaseServer(extra: PluginDef[] = []): Promise<TestServer> {
  return startTestServer({ plugins: [corePlugin, leasesPlugin, ...extra] });
}

export function tenantOf(t: TestServer) {
  return t.server.services.tenants.get(t.org)!;
}

/** A per-session agent token acting for `person` (minted directly; the identity plugin is not needed). */
export async function agentToken(t: TestServer, person: string, agent: string, session: string | null): Promise<string> {
  const token = generateToken('ast');
  await tenantOf(t).tokens.mutate((records) => {
    const rec = newTokenRecord(token, { kind: 'agent-session', person, agent, session, created: new Date().toISOString() });
    records.set(rec.hash, rec);
  });
  return token;
}

/** A token whose person has no node in the graph (`bound: false`). */
export async function unboundToken(t: TestServer): Promise<string> {
  const token = generateToken('pat');
  await tenantOf(t).tokens.mutate((records) => {
    const rec = newTokenRecord(token, { kind: 'pat', person: 'person-ghost', created: new Date().toISOString() });
    records.set(rec.hash, rec);
  });
  return token;
}

/**
 * Freezes the injected clock at its current instant (advance still moves it), so a REST call
 * and its tool twin compute the same times. Returns the function that unfreezes it.
 */
export function freezeClock(clock: ManualClock): () => void {
  let at = clock.now();
  const own = clock as unknown as Record<string, unknown>;
  const advance = clock.advance.bind(clock);
  own.now = () => at;
  own.advance = (ms: number) => {
    at += ms;
    advance(ms);
  };
  return () => {
    delete own.now;
    delete own.advance;
  };
}

export async function nodeOf(
  t: TestServer,
  id: string,
): Promise<{ revision: string; status: string; edges: Array<Record<string, string>>; frontmatter: Record<string, unknown> }> {
  const res = await t.api('GET', `/v1/nodes/${id}`);
  expect(res.status, res.text).to.equal(200);
  const fm = res.body.frontmatter as Record<string, unknown>;
  return {
    revision: res.body.revision,
    status: String(fm.status),
    edges: (fm.edges as Array<Record<string, string>>) ?? [],
    frontmatter: fm,
  };
}

export async function assignees(t: TestServer, id: string): Promise<string[]> {
  const node = await nodeOf(t, id);
  return node.edges.filter((e) => e.type === 'assigned').map((e) => e.to!);
}

export async function tasks(t: TestServer, ids: string[], extra: Record<string, unknown> = {}): Promise<void> {
  const res = await t.api('POST', '/v1/nodes', {
    body: { nodes: ids.map((id) => ({ id, type: id.split('-')[0], summary: `work ${id}`, ...extra })) },
  });
  expect(res.status, res.text).to.equal(200);
}

export function post(t: TestServer, path: string, token: string, body?: unknown) {
  return t.api('POST', path, { token, body });
}
