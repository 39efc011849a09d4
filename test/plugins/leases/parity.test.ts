/**
 * One core, two adapters: each lease tool's text equals the REST body byte for byte, both
 * calls made on the same state at the same (frozen) instant. Success paths use idempotent
 * repeats (own re-claim, renew, capped extend, re-reserve); failure paths compare envelopes.
 */
import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { DAY, freezeClock, post, startLeaseServer, tasks } from './helpers.js';

describe('leases: REST and MCP twins return the same bytes', function () {
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };
  let aliceMcp: Client;
  let bobMcp: Client;
  let unfreeze: () => void;

  before(async () => {
    t = await startLeaseServer();
    alice = await addPerson(t, 'Alice');
    bob = await addPerson(t, 'Bob');
    await tasks(t, ['task-p1', 'task-p2', 'task-p3', 'task-p4']);
    aliceMcp = await t.mcp(alice.token);
    bobMcp = await t.mcp(bob.token);
    unfreeze = freezeClock(t.clock);
    expect((await post(t, '/v1/nodes/task-p1/claim', alice.token)).status).to.equal(200);
    expect((await post(t, '/v1/nodes/task-p2/claim', bob.token)).status).to.equal(200);
  });
  after(async () => {
    unfreeze();
    await t.close();
  });

  async function same(client: Client, tool: string, args: Record<string, unknown>, token: string, path: string, body: unknown, status = 200) {
    const rest = await post(t, path, token, body);
    const mcp = await t.tool(client, tool, args);
    expect(rest.status, rest.text).to.equal(status);
    expect(mcp.isError).to.equal(status !== 200);
    expect(mcp.text).to.equal(rest.text);
    return rest.body;
  }

  it('claim (single, own re-claim) and claim (batch)', async () => {
    const single = await same(aliceMcp, 'claim', { id: 'task-p1', session: 'run-1' }, alice.token, '/v1/nodes/task-p1/claim', { session: 'run-1' });
    expect(single.status).to.equal('renewed');
    const batch = await same(aliceMcp, 'claim', { ids: ['task-p1', 'task-p2', 'task-nope'] }, alice.token, '/v1/queue/claim', { ids: ['task-p1', 'task-p2', 'task-nope'] });
    expect(batch.status).to.equal('partial');
  });

  it('claim refused: the same 409 conflict envelope', async () => {
    const err = await same(bobMcp, 'claim', { id: 'task-p1' }, bob.token, '/v1/nodes/task-p1/claim', {}, 409);
    expect(err.error.details.holder).to.equal(alice.id);
    await same(bobMcp, 'claim', { id: 'Bad_Id' }, bob.token, '/v1/nodes/Bad_Id/claim', {}, 422);
    await same(bobMcp, 'claim', { ids: ['task-p1'], force: true }, bob.token, '/v1/queue/claim', { ids: ['task-p1'], force: true }, 422);
  });

  it('renew (single and batch, with and without ids)', async () => {
    await same(aliceMcp, 'renew', { id: 'task-p1' }, alice.token, '/v1/nodes/task-p1/renew', {});
    await same(aliceMcp, 'renew', { ids: ['task-p1', 'task-p2'] }, alice.token, '/v1/queue/renew', { ids: ['task-p1', 'task-p2'] });
    const all = await same(aliceMcp, 'renew', {}, alice.token, '/v1/queue/renew', {});
    expect(all.renewed).to.deep.equal(['task-p1']);
    await same(bobMcp, 'renew', { id: 'task-p1' }, bob.token, '/v1/nodes/task-p1/renew', {}, 409);
  });

  it('extend (capped, so a repeat lands on the same instant) and its failures', async () => {
    const capped = await same(aliceMcp, 'extend', { id: 'task-p1', ms: 5 * DAY }, alice.token, '/v1/nodes/task-p1/extend', { ms: 5 * DAY });
    expect(capped.capped_to_max).to.equal(true);
    await same(aliceMcp, 'extend', { id: 'task-p1', ms: -1 }, alice.token, '/v1/nodes/task-p1/extend', { ms: -1 }, 422);
    await same(bobMcp, 'extend', { id: 'task-p1', ms: 10 }, bob.token, '/v1/nodes/task-p1/extend', { ms: 10 }, 409);
  });

  it('reserve', async () => {
    await post(t, '/v1/nodes/task-p3/claim', alice.token);
    const r = await same(aliceMcp, 'reserve', { id: 'task-p3' }, alice.token, '/v1/nodes/task-p3/reserve', {});
    expect(r.status).to.equal('reserved');
    await same(bobMcp, 'reserve', { id: 'task-p3' }, bob.token, '/v1/nodes/task-p3/reserve', {}, 409);
  });

  it('release (single: held by another, held by no one; batch: nothing of mine among the ids)', async () => {
    await same(bobMcp, 'release', { id: 'task-p1' }, bob.token, '/v1/nodes/task-p1/release', {}, 409);
    const none = await same(bobMcp, 'release', { id: 'task-p4' }, bob.token, '/v1/nodes/task-p4/release', {});
    expect(none).to.deep.equal({ ok: true, status: 'released', node_id: 'task-p4', lease: null, edge: null });
    const batch = await same(bobMcp, 'release', { ids: ['task-p1', 'task-p3'] }, bob.token, '/v1/queue/release', { ids: ['task-p1', 'task-p3'] });
    expect(batch.count).to.equal(0);
  });

  it('the tools refuse id and ids together', async () => {
    for (const tool of ['claim', 'renew', 'release']) {
      const out = await t.tool(aliceMcp, tool, { id: 'task-p1', ids: ['task-p1'] });
      expect(out.isError, tool).to.equal(true);
      expect(out.json.error.code).to.equal('validation_failed');
    }
  });
});
