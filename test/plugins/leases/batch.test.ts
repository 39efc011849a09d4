/**
 * docs/spec.md "Leases" rules 2-5: the batch routes run the singular logic per item, are never
 * rolled back, report per item, and the renew-all / release-all modes.
 */
import { expect } from 'chai';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { agentToken, assignees, freezeClock, GRACE, MIN, post, startLeaseServer, tasks, TTL } from './helpers.js';

describe('leases: batch routes', function () {
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };
  let carol: { id: string; token: string };
  let unfreeze: () => void;

  before(async () => {
    t = await startLeaseServer();
    alice = await addPerson(t, 'Alice');
    bob = await addPerson(t, 'Bob');
    carol = await addPerson(t, 'Carol');
    await tasks(t, ['task-1', 'task-2', 'task-3', 'task-4', 'task-5', 'task-6', 'task-7', 'task-8', 'task-9', 'spec-s']);
    unfreeze = freezeClock(t.clock);
  });
  after(async () => {
    unfreeze();
    await t.close();
  });

  it('batch claim: per-item outcome, never rolled back; held-by-other is already_claimed naming the holder', async () => {
    expect((await post(t, '/v1/nodes/task-2/claim', bob.token)).status).to.equal(200);
    const res = await post(t, '/v1/queue/claim', alice.token, {
      ids: ['task-1', 'task-2', 'task-nope', 'Bad!', 'spec-s', 'task-3', 'task-1'],
    });
    expect(res.status, res.text).to.equal(200);
    expect(Object.keys(res.body)).to.deep.equal(['ok', 'status', 'count', 'claimed', 'leases', 'failed']);
    expect(res.body).to.include({ ok: true, status: 'partial', count: 2 });
    expect(res.body.claimed).to.deep.equal(['task-1', 'task-3']);
    expect(res.body.leases.map((l: { node_id: string; by: string }) => [l.node_id, l.by])).to.deep.equal([
      ['task-1', alice.id],
      ['task-3', alice.id],
    ]);
    expect(res.body.leases[0].expires).to.equal(t.clock.now() + TTL);
    const failed = res.body.failed as Array<Record<string, string>>;
    expect(failed.map((f) => [f.node_id, f.code])).to.deep.equal([
      ['task-2', 'already_claimed'],
      ['task-nope', 'not_found'],
      ['Bad!', 'validation_failed'],
      ['spec-s', 'validation_failed'],
    ]);
    expect(failed[0]).to.include({ holder: bob.id });
    expect(failed[0]!.message).to.include(bob.id);
    expect(Object.keys(failed[0]!)).to.deep.equal(['node_id', 'code', 'message', 'holder']);
    expect(failed[1]).to.not.have.property('holder');
    expect(await assignees(t, 'task-1')).to.deep.equal([alice.id]);
    expect(await assignees(t, 'task-3')).to.deep.equal([alice.id]);
    expect(await assignees(t, 'task-2')).to.deep.equal([bob.id]);
  });

  it('batch claim status: claimed when all land (own ones renew), refused when none do', async () => {
    const all = await post(t, '/v1/queue/claim', alice.token, { ids: ['task-1', 'task-4'] });
    expect(all.body).to.include({ status: 'claimed', count: 2 });
    const none = await post(t, '/v1/queue/claim', carol.token, { ids: ['task-1', 'task-2'] });
    expect(none.status).to.equal(200);
    expect(none.body).to.include({ ok: true, status: 'refused', count: 0 });
    expect(none.body.claimed).to.deep.equal([]);
    expect(none.body.failed.map((f: { holder: string }) => f.holder)).to.deep.equal([alice.id, bob.id]);
  });

  it('batch claim requires ids and refuses the singular-only nonce and force options', async () => {
    for (const body of [
      undefined,
      {},
      { ids: [] },
      { ids: 'task-5' },
      { ids: ['task-5'], nonce: 'x' },
      { ids: ['task-5'], force: true },
      { ids: ['task-5'], session: 'no way' },
    ]) {
      const res = await post(t, '/v1/queue/claim', alice.token, body);
      expect(res.status, JSON.stringify(body)).to.equal(422);
      expect(res.body.error.code).to.equal('validation_failed');
    }
    const many = await post(t, '/v1/queue/claim', alice.token, { ids: Array.from({ length: 501 }, (_, i) => `task-x${i}`) });
    expect(many.status).to.equal(422);
    expect(await assignees(t, 'task-5')).to.deep.equal([]);
  });

  it('batch renew with ids: per item; a node held by another is lease_lost naming the holder', async () => {
    t.clock.advance(MIN);
    const res = await post(t, '/v1/queue/renew', alice.token, { ids: ['task-1', 'task-2', 'task-5'] });
    expect(res.status).to.equal(200);
    expect(Object.keys(res.body)).to.deep.equal(['ok', 'status', 'count', 'renewed', 'leases', 'failed']);
    expect(res.body).to.include({ ok: true, status: 'partial', count: 1 });
    expect(res.body.renewed).to.deep.equal(['task-1']);
    expect(res.body.leases[0].expires).to.equal(t.clock.now() + TTL);
    expect(res.body.failed).to.deep.equal([
      { node_id: 'task-2', code: 'lease_lost', message: res.body.failed[0].message, holder: bob.id },
      { node_id: 'task-5', code: 'lease_lost', message: res.body.failed[1].message },
    ]);
  });

  it('batch renew without ids: every live lease held; by session; skipped_other_session and skipped_reserved', async () => {
    // alice holds task-1, task-3, task-4 person-scoped; bind task-3 to run-a and task-4 to run-b; reserve task-6
    await post(t, '/v1/nodes/task-3/renew', alice.token, { session: 'run-a' });
    await post(t, '/v1/nodes/task-4/renew', alice.token, { session: 'run-b' });
    await post(t, '/v1/nodes/task-6/claim', alice.token);
    await post(t, '/v1/nodes/task-6/reserve', alice.token);
    t.clock.advance(MIN);
    const all = await post(t, '/v1/queue/renew', alice.token, {});
    expect(all.status).to.equal(200);
    expect(Object.keys(all.body)).to.deep.equal([
      'ok',
      'status',
      'count',
      'renewed',
      'leases',
      'failed',
      'skipped_other_session',
      'skipped_reserved',
    ]);
    expect(all.body).to.include({ status: 'renewed', count: 3, skipped_other_session: 0, skipped_reserved: 1 });
    expect(all.body.renewed).to.deep.equal(['task-1', 'task-3', 'task-4']);
    // sessions are not re-bound by the heartbeat
    expect(all.body.leases.map((l: { session: string | null }) => l.session)).to.deep.equal([null, 'run-a', 'run-b']);
    const runA = await post(t, '/v1/queue/renew', alice.token, { session: 'run-a' });
    expect(runA.body).to.include({ count: 1, skipped_other_session: 1, skipped_reserved: 1 });
    expect(runA.body.renewed).to.deep.equal(['task-3']);
    // an agent token of run-b renews its own run's leases only
    const agent = await agentToken(t, alice.id, 'agent-alice', 'run-b');
    const runB = await post(t, '/v1/queue/renew', agent);
    expect(runB.body.renewed).to.deep.equal(['task-4']);
    expect(runB.body.skipped_other_session).to.equal(1);
    // the reservation stays parked until the end of its grace window
    const reserved = await post(t, '/v1/nodes/task-6/release', bob.token);
    expect(reserved.body.error.details).to.include({ holder: alice.id, state: 'reserved' });
    t.clock.advance(GRACE);
    const late = await post(t, '/v1/queue/renew', alice.token, {});
    expect(late.body).to.include({ count: 0, skipped_reserved: 0 });
    // nothing held: ok, nothing renewed
    const nothing = await post(t, '/v1/queue/renew', carol.token);
    expect(nothing.body).to.deep.equal({
      ok: true,
      status: 'renewed',
      count: 0,
      renewed: [],
      leases: [],
      failed: [],
      skipped_other_session: 0,
      skipped_reserved: 0,
    });
  });

  it("batch release: never fails on a holder mismatch and drops only the caller's own leases", async () => {
    await post(t, '/v1/queue/claim', alice.token, { ids: ['task-7', 'task-8'] });
    await post(t, '/v1/nodes/task-9/claim', bob.token);
    const agent = await agentToken(t, alice.id, 'agent-alice', 'run-c');
    await post(t, '/v1/nodes/task-5/claim', agent);
    const bySession = await post(t, '/v1/queue/release', alice.token, { session: 'run-c' });
    expect(bySession.status).to.equal(200);
    expect(bySession.body).to.deep.equal({ ok: true, status: 'released', released: ['task-5'], count: 1 });
    expect(await assignees(t, 'task-5')).to.deep.equal([]);
    const withIds = await post(t, '/v1/queue/release', alice.token, { ids: ['task-7', 'task-9'] });
    expect(withIds.body).to.deep.equal({ ok: true, status: 'released', released: ['task-7'], count: 1 });
    expect(await assignees(t, 'task-9')).to.deep.equal([bob.id]);
    const rest = await post(t, '/v1/queue/release', alice.token);
    expect(rest.status).to.equal(200);
    expect(rest.body.status).to.equal('released');
    expect(rest.body.released).to.include('task-8');
    expect(rest.body.count).to.equal(rest.body.released.length);
    for (const id of ['task-1', 'task-3', 'task-4', 'task-7', 'task-8']) expect(await assignees(t, id), id).to.deep.equal([]);
    expect((await post(t, '/v1/nodes/task-9/renew', bob.token)).status).to.equal(200);
    const empty = await post(t, '/v1/queue/release', carol.token, {});
    expect(empty.body).to.deep.equal({ ok: true, status: 'released', released: [], count: 0 });
  });
});
