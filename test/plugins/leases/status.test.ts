/**
 * docs/spec.md: "POST /v1/nodes/{id}/status to an in-progress status on a work node: the caller also
 * gets the same lease as the claim endpoint" (lease table row "none -> status set to
 * in-progress").
 */
import { expect } from 'chai';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { agentToken, assignees, nodeOf, post, startLeaseServer, tasks, TTL } from './helpers.js';

describe('leases: status set to in-progress grants the claim lease', function () {
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };

  before(async () => {
    t = await startLeaseServer();
    alice = await addPerson(t, 'Alice');
    bob = await addPerson(t, 'Bob');
    await tasks(t, ['task-s1', 'task-s2', 'task-s3', 'task-s4', 'issue-s5', 'dec-s6']);
  });
  after(() => t.close());

  it('none -> in-progress: status updated, lease created, assigned edge written; response carries lease and edge', async () => {
    const res = await post(t, '/v1/nodes/task-s1/status', alice.token, { status: 'in-progress' });
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.include({ status: 'updated', id: 'task-s1' });
    expect(res.body.lease).to.include({ node_id: 'task-s1', by: alice.id, state: 'live' });
    expect(res.body.lease.expires - Date.parse(res.body.lease.claimed_at)).to.equal(TTL);
    const node = await nodeOf(t, 'task-s1');
    expect(node.status).to.equal('in-progress');
    expect(res.body.edge).to.deep.equal({ type: 'assigned', from: 'task-s1', to: alice.id, status: 'created', revision: node.revision });
    // the answer's revision is the node's current one (after the edge commit)
    expect(res.body.revision).to.equal(node.revision);
    expect(await assignees(t, 'task-s1')).to.deep.equal([alice.id]);
    const bobClaim = await post(t, '/v1/nodes/task-s1/claim', bob.token);
    expect(bobClaim.status).to.equal(409);
    expect(bobClaim.body.error.details.holder).to.equal(alice.id);
  });

  it('in-progress while another holds a live lease: 409 conflict naming holder and expiry; status unchanged', async () => {
    const claim = await post(t, '/v1/nodes/task-s2/claim', bob.token);
    const res = await post(t, '/v1/nodes/task-s2/status', alice.token, { status: 'in-progress' });
    expect(res.status).to.equal(409);
    expect(res.body.error.code).to.equal('conflict');
    expect(res.body.error.details).to.include({ holder: bob.id, expires_at: claim.body.lease.expires_at });
    expect((await nodeOf(t, 'task-s2')).status).to.equal('open');
    expect(await assignees(t, 'task-s2')).to.deep.equal([bob.id]);
    // the holder itself may move it: its lease renews, no second edge
    const own = await post(t, '/v1/nodes/task-s2/status', bob.token, { status: 'in-progress' });
    expect(own.status, own.text).to.equal(200);
    expect(own.body.lease.claimed_at).to.equal(claim.body.lease.claimed_at);
    expect(own.body.edge.status).to.equal('skipped');
    expect(await assignees(t, 'task-s2')).to.deep.equal([bob.id]);
  });

  it('a status write that fails gives the lease back (abort)', async () => {
    expect((await post(t, '/v1/nodes/task-s3/status', t.adminToken, { status: 'done' })).status).to.equal(200);
    const res = await post(t, '/v1/nodes/task-s3/status', alice.token, { status: 'in-progress' });
    expect(res.status).to.equal(409);
    expect(res.body.error.code).to.equal('transition_denied');
    // no lease was left behind: another person's release finds nothing held, alice holds nothing
    const rel = await post(t, '/v1/nodes/task-s3/release', bob.token);
    expect(rel.status, rel.text).to.equal(200);
    expect(rel.body.lease).to.equal(null);
    const mine = await post(t, '/v1/queue/renew', alice.token);
    expect(mine.body.renewed).to.not.include('task-s3');
    expect(await assignees(t, 'task-s3')).to.deep.equal([]);
  });

  it('issues take the lease too; agent tokens bind it to their session; other statuses and types do not', async () => {
    const agent = await agentToken(t, alice.id, 'agent-alice', 'run-9');
    const res = await post(t, '/v1/nodes/issue-s5/status', agent, { status: 'in-progress' });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.lease).to.include({ by: alice.id, agent: 'agent-alice', session: 'run-9' });
    const blocked = await post(t, '/v1/nodes/task-s4/status', alice.token, { status: 'blocked' });
    expect(Object.keys(blocked.body)).to.deep.equal(['status', 'id', 'revision', 'warnings']);
    const dec = await post(t, '/v1/nodes/dec-s6/status', alice.token, { status: 'accepted' });
    expect(dec.status).to.equal(200);
    expect(dec.body).to.not.have.property('lease');
    expect(await assignees(t, 'task-s4')).to.deep.equal([]);
  });

  it('the MCP set_status tool answers with the same lease keys', async () => {
    const client = await t.mcp(bob.token);
    const out = await t.tool(client, 'set_status', { id: 'task-s4', status: 'in-progress' });
    expect(out.isError, out.text).to.equal(false);
    expect(out.json.lease).to.include({ node_id: 'task-s4', by: bob.id });
    expect(out.json.edge).to.include({ status: 'created', to: bob.id });
  });
});
