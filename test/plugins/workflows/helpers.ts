/**
 * Helpers of the workflow tests: a server with core + workflows (+ extras), workflows
 * defined by the admin and activated by another person, step claims and verdicts.
 */
import { expect } from 'chai';
import { generateToken, newTokenRecord } from '../../../kernel/auth.js';
import type { PluginDef } from '../../../kernel/plugin.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { workflowsPlugin } from '../../../plugins/workflows/index.js';
import { startTestServer, type ApiResponse, type TestServer } from '../../helpers/harness.js';

export const MIN = 60 * 1000;
/** DEFAULT_LIMITS.claim_ttl_ms of kernel/tenant.ts */
export const TTL = 30 * MIN;

export function startWorkflowServer(extra: PluginDef[] = []): Promise<TestServer> {
  return startTestServer({ plugins: [corePlugin, workflowsPlugin, ...extra] });
}

export interface StepSpec {
  id: string;
  title?: string;
  needs?: string[];
  capability?: string;
  approval?: boolean;
  max_attempts?: number;
}

/** Creates a wf- node as the admin (forced to proposed); `activator` (another person) activates it. */
export async function defineWorkflow(
  t: TestServer,
  id: string,
  steps: StepSpec[] | unknown,
  activatorToken?: string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const res = await t.api('POST', '/v1/nodes', {
    body: { nodes: [{ id, type: 'wf', title: `Workflow ${id}`, summary: `workflow ${id}`, steps, ...extra }] },
  });
  expect(res.status, res.text).to.equal(200);
  expect(res.body.results[0].status, res.text).to.equal('created');
  if (activatorToken) {
    const act = await t.api('POST', `/v1/nodes/${id}/status`, { token: activatorToken, body: { status: 'active' } });
    expect(act.status, act.text).to.equal(200);
  }
}

export function startRun(t: TestServer, workflow: string, body?: unknown, token?: string): Promise<ApiResponse> {
  return t.api('POST', `/v1/workflows/${workflow}/run`, { token, body });
}

export async function started(t: TestServer, workflow: string, body?: unknown, token?: string): Promise<string> {
  const res = await startRun(t, workflow, body, token);
  expect(res.status, res.text).to.equal(201);
  return res.body.run_id as string;
}

export function claim(t: TestServer, run: string, step: string, token?: string, body?: unknown): Promise<ApiResponse> {
  return t.api('POST', `/v1/runs/${run}/steps/${step}/claim`, { token, body: body ?? {} });
}

export async function claimed(t: TestServer, run: string, step: string, token?: string, body?: unknown): Promise<string> {
  const res = await claim(t, run, step, token, body);
  expect(res.status, res.text).to.equal(200);
  return res.body.lease.lease_id as string;
}

export function complete(t: TestServer, run: string, step: string, body: unknown, token?: string): Promise<ApiResponse> {
  return t.api('POST', `/v1/runs/${run}/steps/${step}/complete`, { token, body });
}

export async function getRun(t: TestServer, run: string, token?: string): Promise<any> {
  const res = await t.api('GET', `/v1/runs/${run}`, { token });
  expect(res.status, res.text).to.equal(200);
  return res.body;
}

/** The run node as committed (GET /v1/nodes): what the graph holds, without the lease overlay. */
export async function runNode(t: TestServer, run: string): Promise<{ revision: string; status: string; frontmatter: any }> {
  const res = await t.api('GET', `/v1/nodes/${run}`);
  expect(res.status, res.text).to.equal(200);
  return { revision: res.body.revision, status: res.body.frontmatter.status, frontmatter: res.body.frontmatter };
}

export async function work(t: TestServer, query = '', token?: string): Promise<ApiResponse> {
  return t.api('GET', `/v1/work${query}`, { token });
}

export function workKeys(res: ApiResponse): string[] {
  expect(res.status, res.text).to.equal(200);
  return (res.body.work as Array<{ run_id: string; step: string }>).map((w) => `${w.run_id}/${w.step}`);
}

/** A per-session agent token acting for `person` (minted into the token store). */
export async function agentToken(t: TestServer, person: string, agent: string, session: string | null = null): Promise<string> {
  const token = generateToken('ast');
  await t.server.services.tenants.get(t.org)!.tokens.mutate((records) => {
    const rec = newTokenRecord(token, { kind: 'agent-session', person, agent, session, created: new Date().toISOString() });
    records.set(rec.hash, rec);
  });
  return token;
}

/** A token whose person has no node in the graph. */
export async function unboundToken(t: TestServer): Promise<string> {
  const token = generateToken('pat');
  await t.server.services.tenants.get(t.org)!.tokens.mutate((records) => {
    const rec = newTokenRecord(token, { kind: 'pat', person: 'person-ghost', created: new Date().toISOString() });
    records.set(rec.hash, rec);
  });
  return token;
}

export async function nodeCount(t: TestServer): Promise<number> {
  const res = await t.api('GET', '/v1/status');
  return res.body.node_count as number;
}
