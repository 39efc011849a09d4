/** Helpers of the questions tests: a server with core + leases + queue + questions, stewards and asks. */
import { expect } from 'chai';
import { corePlugin } from '../../../plugins/core/index.js';
import { leasesPlugin } from '../../../plugins/leases/index.js';
import { queuePlugin } from '../../../plugins/queue/index.js';
import { questionsPlugin } from '../../../plugins/questions/index.js';
import { startTestServer, type ApiResponse, type TestServer } from '../../helpers/harness.js';

export function startQuestionsServer(): Promise<TestServer> {
  return startTestServer({ plugins: [corePlugin, leasesPlugin, queuePlugin, questionsPlugin] });
}

/** Writes `person -stewards-> node`. */
export async function steward(t: TestServer, person: string, node: string): Promise<void> {
  const res = await t.api('POST', `/v1/nodes/${person}/edges`, { body: { type: 'stewards', to: node } });
  expect(res.status, res.text).to.equal(200);
}

export async function put(t: TestServer, nodes: Array<Record<string, unknown>>): Promise<void> {
  const res = await t.api('POST', '/v1/nodes', { body: { nodes } });
  expect(res.status, res.text).to.equal(200);
}

export function ask(t: TestServer, token: string, body: unknown): Promise<ApiResponse> {
  return t.api('POST', '/v1/questions', { token, body });
}

/** Asks and expects a 201. */
export async function asked(t: TestServer, token: string, body: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await ask(t, token, body);
  expect(res.status, res.text).to.equal(201);
  return res.body;
}
