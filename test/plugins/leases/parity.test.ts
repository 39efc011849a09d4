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

  async function same(
    client: Client,
    tool: string,
    args: Record<string, unknown>,
    token: string,
    path: string,
    body: unknown,
    status = 200,
  ) {
    const rest = await post(t, path, token, body);
    const mcp = await t.tool(client, tool, args);
    expect(rest.status, rest.text).to.equal(status);
    expect(mcp.isError).to.equal(status !== 200);
    expect(mcp.text).to.equal(rest.text);
    return rest.body;
  }

  it('claim (single, own re-claim) and claim (batch)', async () => {
    const single = await same(aliceMcp, 'claim', { id: 'task-p1', session: 'run-1' }, alice.token, '/v1/nodes/task-p1/claim', {
      session: 'run-1',
    });
    expect(single.status).to.equal('renewed');
    const batch = await same(aliceMcp, 'claim', { ids: ['task-p1', 'task-p2', 'task-nope'] }, alice.token, '/v1/queue/claim', {
      ids: ['task-p1', 'task-p2', 'task-nope'],
    });
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
    const batch = await same(bobMcp, 'release', { ids: ['task-p1', 'task-p3'] }, bob.token, '/v1/queue/release', {
      ids: ['task-p1', 'task-p3'],
    });
    expect(batch.count).to.equal(0);
  });

  it('an unknown field is 422 validation_failed over REST and MCP (closed input schemas, ajv errors verbatim)', async () => {
    // extend: the tool is the route's operation, so the bytes match
    const err = await same(
      aliceMcp,
      'extend',
      { id: 'task-p1', ms: 10, bogus: 1 },
      alice.token,
      '/v1/nodes/task-p1/extend',
      { ms: 10, bogus: 1 },
      422,
    );
    expect(err.error.code).to.equal('validation_failed');
    expect(err.error.details.errors).to.deep.include({
      instancePath: '',
      schemaPath: '#/additionalProperties',
      keyword: 'additionalProperties',
      params: { additionalProperty: 'bogus' },
      message: 'must NOT have additional properties',
    });
    for (const [path, body] of [
      ['/v1/nodes/task-p1/claim', { bogus: 1 }],
      ['/v1/nodes/task-p1/renew', { bogus: 1 }],
      ['/v1/nodes/task-p1/reserve', { bogus: 1 }],
      ['/v1/nodes/task-p1/release', { bogus: 1 }],
      ['/v1/queue/claim', { ids: ['task-p1'], bogus: 1 }],
      ['/v1/queue/renew', { bogus: 1 }],
      ['/v1/queue/release', { bogus: 1 }],
    ] as const) {
      const rest = await post(t, path, alice.token, body);
      expect(rest.status, `${path}: ${rest.text}`).to.equal(422);
      expect(rest.body.error.code).to.equal('validation_failed');
      expect(rest.body.error.details.errors[0]).to.include({ keyword: 'additionalProperties' });
      expect(rest.body.error.details.errors[0].params).to.deep.equal({ additionalProperty: 'bogus' });
    }
    for (const tool of ['claim', 'renew', 'reserve', 'release']) {
      const out = await t.tool(aliceMcp, tool, { id: 'task-p1', bogus: 1 });
      expect(out.isError, tool).to.equal(true);
      expect(out.json.error.code).to.equal('validation_failed');
      expect(out.json.error.details.errors[0].params).to.deep.equal({ additionalProperty: 'bogus' });
    }
    // nothing changed: alice still holds task-p1, bob task-p2
    const renewed = await post(t, '/v1/nodes/task-p1/renew', alice.token, {});
    expect(renewed.status).to.equal(200);
  });

  it("tool arguments get the route operation's checks: a malformed session or an over-long batch is the same 422", async () => {
    await same(
      aliceMcp,
      'claim',
      { id: 'task-p1', session: 'bad session!' },
      alice.token,
      '/v1/nodes/task-p1/claim',
      { session: 'bad session!' },
      422,
    );
    const many = Array.from({ length: 501 }, (_, i) => `task-x${i}`);
    const err = await same(aliceMcp, 'claim', { ids: many }, alice.token, '/v1/queue/claim', { ids: many }, 422);
    expect(err.error.details.errors[0]).to.include({ instancePath: '/ids', keyword: 'maxItems' });
    await same(aliceMcp, 'release', { ids: ['Bad_Id'] }, alice.token, '/v1/queue/release', { ids: ['Bad_Id'] }, 422);
  });

  it('the tools refuse id and ids together', async () => {
    for (const tool of ['claim', 'renew', 'release']) {
      const out = await t.tool(aliceMcp, tool, { id: 'task-p1', ids: ['task-p1'] });
      expect(out.isError, tool).to.equal(true);
      expect(out.json.error.code).to.equal('validation_failed');
    }
  });
});
