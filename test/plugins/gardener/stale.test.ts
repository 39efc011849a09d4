/**
 * docs/design.md §9 stale-assignment: "an `assigned` edge with no live lease past the grace
 * window". With the leases plugin enabled the lease table is read (plugins/leases/store.ts);
 * without it the node's last write is the only heartbeat (plugins/gardener README).
 */
import { expect } from 'chai';
import { leasesPlugin } from '../../../plugins/leases/index.js';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { DAY, GRACE, MIN, node, openChecks, post, put, startGardenerServer, sweep } from './helpers.js';

describe('gardener: stale-assignment with the leases plugin', function () {
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };

  before(async () => {
    t = await startGardenerServer([leasesPlugin]);
    alice = await addPerson(t, 'Alice');
    bob = await addPerson(t, 'Bob');
  });
  after(async () => t.close());

  it('a lapsed lease is stale only once the grace window has passed since it lapsed; a fresh claim resolves it', async () => {
    await put(t, [{ id: 'task-claimed', type: 'task', summary: 'claimed then forgotten' }]);
    await post(t, '/v1/nodes/task-claimed/claim', {}, alice.token);
    const id = 'finding-stale-assignment-task-claimed';
    // the 30-minute lease lapsed, but the grace window has not passed since
    t.clock.advance(30 * MIN + GRACE - 5 * MIN);
    expect((await sweep(t)).filed).to.deep.equal([]);
    t.clock.advance(10 * MIN);
    expect((await sweep(t)).filed).to.deep.equal([id]);
    const finding = await node(t, id);
    expect(finding.frontmatter.detail).to.include({ leases: 'enabled' });
    expect(finding.frontmatter.detail.assignees).to.deep.equal([alice.id]);
    expect(await openChecks(t, 'task-claimed')).to.deep.equal(['stale-assignment']);

    await post(t, '/v1/nodes/task-claimed/claim', {}, alice.token);
    expect((await sweep(t)).resolved).to.deep.equal([id]);
    await post(t, '/v1/nodes/task-claimed/release', {}, alice.token);
  });

  it('a live lease keeps an old assignment fresh, per assignee; done work is never stale', async () => {
    await put(t, [
      { id: 'task-held', type: 'task', summary: 'held by alice' },
      { id: 'task-finished', type: 'task', summary: 'done long ago' },
    ]);
    await t.api('POST', '/v1/nodes/task-held/edges', { body: { type: 'assigned', to: alice.id } });
    await t.api('POST', '/v1/nodes/task-held/edges', { body: { type: 'assigned', to: bob.id } });
    await t.api('POST', '/v1/nodes/task-finished/edges', { body: { type: 'assigned', to: bob.id } });
    await post(t, '/v1/nodes/task-finished/status', { status: 'done' });
    t.clock.advance(GRACE + DAY);
    // alice's claim finds her edge in place (no commit), so the node's last write stays 3 days old
    const claim = await post(t, '/v1/nodes/task-held/claim', {}, alice.token);
    expect(claim.edge.status).to.equal('skipped');
    const run = await sweep(t);
    expect(run.filed).to.deep.equal(['finding-stale-assignment-task-held']);
    expect((await node(t, 'finding-stale-assignment-task-held')).frontmatter.detail.assignees).to.deep.equal([bob.id]);
    expect(await openChecks(t, 'task-finished')).to.deep.equal([]);

    // bob's edge retired: the condition no longer holds
    const removed = await t.api('DELETE', '/v1/nodes/task-held/edges', { body: { type: 'assigned', to: bob.id } });
    expect(removed.status).to.equal(200);
    expect((await sweep(t)).resolved).to.deep.equal(['finding-stale-assignment-task-held']);
  });

  it('a reservation counts as a live lease for its grace window', async () => {
    await put(t, [{ id: 'task-parked', type: 'task', summary: 'parked' }]);
    await post(t, '/v1/nodes/task-parked/claim', {}, bob.token);
    await post(t, '/v1/nodes/task-parked/reserve', {}, bob.token);
    t.clock.advance(GRACE - MIN);
    expect((await sweep(t)).filed).to.not.include('finding-stale-assignment-task-parked');
    // lapsed at the end of the reservation, then another grace window
    t.clock.advance(GRACE + 2 * MIN);
    expect((await sweep(t)).filed).to.include('finding-stale-assignment-task-parked');
  });
});

describe('gardener: stale-assignment without the leases plugin', function () {
  let t: TestServer;
  let alice: { id: string; token: string };

  before(async () => {
    t = await startGardenerServer();
    alice = await addPerson(t, 'Alice');
  });
  after(async () => t.close());

  it("the node's last write is the heartbeat: stale past the grace window, fresh again after any write", async () => {
    expect((await t.api('POST', '/v1/nodes/task-x/claim', { body: {} })).status).to.equal(404);
    await put(t, [{ id: 'task-manual', type: 'task', summary: 'assigned by hand' }]);
    await t.api('POST', '/v1/nodes/task-manual/edges', { body: { type: 'assigned', to: alice.id } });
    t.clock.advance(GRACE - MIN);
    expect((await sweep(t, alice.token)).filed).to.deep.equal([]);
    t.clock.advance(2 * MIN);
    const id = 'finding-stale-assignment-task-manual';
    expect((await sweep(t, alice.token)).filed).to.deep.equal([id]);
    expect((await node(t, id)).frontmatter.detail).to.include({ leases: 'disabled' });
    await post(t, '/v1/nodes/task-manual/priority', { priority: 'p2' }, alice.token);
    expect((await sweep(t, alice.token)).resolved).to.deep.equal([id]);
  });
});
