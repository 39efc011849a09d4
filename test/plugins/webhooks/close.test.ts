/**
 * A tenant closing in this process while a delivery is in flight (cluster mode's hand-off or
 * lost lease, a stop): the engine cuts the request at once instead of letting it run beside the
 * next owner's, records no failure (the next owner inherits no backoff), and its cursor names
 * the last answered delivery, written out before the tenant's stores close (Tenant.onClose).
 */
import { expect } from 'chai';
import { storesOf } from '../../../plugins/webhooks/store.js';
import { md, runSecrets, startTestServer, type TestServer } from '../../helpers/harness.js';
import { Receiver } from './receiver.js';
import { until } from '../../helpers/until.js';

describe('webhooks: the tenant closes during a delivery', function () {
  this.timeout(60_000);
  let t: TestServer | null = null;
  let receiver: Receiver | null = null;

  after(async () => {
    await receiver?.stop();
    await t?.close();
  });

  it('cuts the request in flight, records no failure, and leaves the cursor at the last answered event', async () => {
    // closing one tenant is cluster mode's move; one process's data-directory watcher would reopen it at once
    t = await startTestServer({ config: { webhookAllowPrivate: true, webhookTimeoutMs: 30_000, tenantPollMs: 3_600_000 } });
    receiver = await new Receiver().start();
    // the first two answer at once; the third is still unanswered when the tenant closes
    receiver.reply = (n) => (n <= 2 ? { status: 200 } : { status: 200, delayMs: 20_000 });
    const created = await t.api('POST', '/v1/webhooks', { body: { url: receiver.url, types: ['node.created'] } });
    expect(created.status, created.text).to.equal(201);
    runSecrets.add(created.body.secret);
    receiver.secret = created.body.secret;
    const hookId = created.body.webhook.id as string;
    for (const id of ['task-close-1', 'task-close-2', 'task-close-3']) {
      const res = await t.api('POST', '/v1/nodes', { body: { nodes: [md({ id, type: 'task', summary: id })] } });
      expect(res.status, res.text).to.equal(200);
    }
    await until(() => receiver!.received.length === 3 && receiver!.inFlight === 1, 'the third delivery in flight');
    const [, second, third] = receiver.eventIds();
    const tenant = t.server.services.tenants.get(t.org)!;

    const closedAt = performance.now();
    await t.server.services.tenants.closeOne(t.org);
    // cut, not waited for: the receiver would answer only after 20 s
    await until(() => receiver!.inFlight === 0, 'the request in flight to be cut', 5000);
    expect(performance.now() - closedAt).to.be.lessThan(10_000);

    const stores = storesOf(tenant);
    const cursor = stores.cursors.get(hookId)!;
    expect(cursor.cursor, 'the last answered event').to.equal(second);
    expect(cursor.attempts).to.equal(0);
    expect(cursor.failing_since).to.equal(null);
    expect(cursor.next_attempt_ms).to.equal(null);
    const log = stores.deliveries.get(hookId) ?? [];
    expect(
      log.filter((a) => !a.ok),
      'no failed attempt recorded',
    ).to.deep.equal([]);
    expect(log.map((a) => a.event)).to.not.include(third);
  });
});
