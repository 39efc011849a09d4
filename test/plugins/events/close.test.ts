/**
 * A tenant closing in this process (cluster mode's hand-off or lost lease) ends its event
 * streams at once, not at their next heartbeat (15 s): the clients reconnect with Last-Event-ID
 * within the retry delay and reach whoever serves the tenant now.
 */
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../../helpers/harness.js';
import { openStream } from './helpers.js';
import { until } from '../../helpers/until.js';

describe('events: the tenant closes in this process', function () {
  this.timeout(30_000);
  let t: TestServer | null = null;

  after(async () => {
    await t?.close();
  });

  it("ends the tenant's open streams at once", async () => {
    // closing one tenant is cluster mode's move; one process's data-directory watcher would reopen it at once
    t = await startTestServer({ config: { tenantPollMs: 3_600_000 } });
    const stream = await openStream(t, '/v1/events', t.adminToken);
    expect(stream.status).to.equal(200);
    await until(() => stream.text().includes('events after'), 'the stream to open', 5000);
    expect(t.server.services.config.events.heartbeatMs, 'the heartbeat alone would take longer').to.be.at.least(10_000);
    const closedAt = performance.now();
    await t.server.services.tenants.closeOne(t.org);
    await until(() => stream.ended(), 'the stream to end', 5000);
    expect(performance.now() - closedAt).to.be.lessThan(5000);
  });
});
