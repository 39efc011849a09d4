/**
 * Issue 10 item 4: two agents of the same owner are different claimants. Agent B claiming,
 * renewing, reserving or releasing a node agent A holds gets 409 naming the holder, unless
 * both act in the same bound session.
 */
import { expect } from 'chai';
import { identityPlugin } from '../../../plugins/identity/index.js';
import { leasesOf } from '../../../plugins/leases/store.js';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { agentToken, post, startLeaseServer, tasks, tenantOf } from './helpers.js';

describe('leases: agents of one owner are different claimants', function () {
  let t: TestServer;
  let carol: { id: string; token: string };

  before(async () => {
    t = await startLeaseServer([identityPlugin]);
    carol = await addPerson(t, 'Carol');
  });
  after(async () => {
    await t.close();
  });
  it('two agents of the same owner are different claimants (REST and MCP), unless both act in the same bound session', async () => {
    const mint = async (label: string, body: Record<string, unknown>) => {
      const agent = await t.api('POST', '/v1/agents', { token: carol.token, body: { label } });
      expect(agent.status, agent.text).to.equal(201);
      const token = await t.api('POST', `/v1/agents/${agent.body.id}/token`, { token: carol.token, body });
      expect(token.status, token.text).to.equal(201);
      return { id: agent.body.id as string, token: token.body.token as string };
    };
    const a = await mint('Builder A', { standing: true });
    const b = await mint('Builder B', { standing: true });
    await tasks(t, ['task-two-agents', 'task-same-session']);
    const first = await post(t, '/v1/nodes/task-two-agents/claim', a.token);
    expect(first.status, first.text).to.equal(200);
    const before = first.body.lease.expires;
    const taken = await post(t, '/v1/nodes/task-two-agents/claim', b.token);
    expect(taken.status, taken.text).to.equal(409);
    expect(taken.body.error.code).to.equal('conflict');
    expect(taken.body.error.details).to.include({ holder: carol.id, agent: a.id });
    for (const verb of ['renew', 'reserve']) {
      const res = await post(t, `/v1/nodes/task-two-agents/${verb}`, b.token);
      expect(res.status, `${verb}: ${res.text}`).to.equal(409);
      expect(res.body.error.details).to.include({ agent: a.id });
    }
    expect((await post(t, '/v1/nodes/task-two-agents/release', b.token)).status).to.equal(409);
    const client = await t.mcp(b.token);
    const viaTool = await t.tool(client, 'claim', { id: 'task-two-agents' });
    expect(viaTool.isError).to.equal(true);
    expect(viaTool.json.error.details).to.include({ holder: carol.id, agent: a.id });
    // A's lease is untouched by B's attempts
    const lease = leasesOf(tenantOf(t)).get('task-two-agents')!;
    expect(lease).to.include({ agent: a.id, expires_ms: before });
    // the same bound session: one run, two agents, one lease
    const s1 = await agentToken(t, carol.id, a.id, 'run-shared');
    const s2 = await agentToken(t, carol.id, b.id, 'run-shared');
    expect((await post(t, '/v1/nodes/task-same-session/claim', s1)).status).to.equal(200);
    const shared = await post(t, '/v1/nodes/task-same-session/renew', s2);
    expect(shared.status, shared.text).to.equal(200);
  });
});
