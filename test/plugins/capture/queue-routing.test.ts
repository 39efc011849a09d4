/**
 * Integration with the queue plugin: a capture-pending node is routed to the person who
 * captured it and shows in that person's `pending` section only.
 */
import { expect } from 'chai';
import { capturePlugin } from '../../../plugins/capture/index.js';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { startLeaseServer } from '../leases/helpers.js';
import { queuePlugin } from '../../../plugins/queue/index.js';

describe('capture: pending captures in the decision queue', function () {
  let t: TestServer;
  before(async () => {
    t = await startLeaseServer([queuePlugin, capturePlugin]);
  });
  after(() => t.close());

  it("a pending capture appears in its author's queue `pending` section, not in a teammate's", async () => {
    const bob = await addPerson(t, 'Bob');
    const res = await t.api('POST', '/v1/capture', { token: bob.token, body: { text: 'we keep forgetting the release notes' } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.status).to.equal('pending');
    const id = res.body.ids[0];
    const bobs = await t.api('GET', '/v1/queue', { token: bob.token });
    expect(bobs.body.pending.map((p: { id: string }) => p.id)).to.deep.equal([id]);
    expect(bobs.body.pending[0].routed_to).to.deep.equal([bob.id]);
    const admins = await t.api('GET', '/v1/queue');
    expect(admins.body.pending).to.deep.equal([]);
    const created = await t.api('POST', '/v1/capture', { token: bob.token, body: { text: 'task: Write the release notes' } });
    const queued = await t.api('GET', '/v1/queue', { token: bob.token });
    expect(queued.body.items.map((i: { id: string }) => i.id)).to.include(created.body.ids[0]);
  });
});
