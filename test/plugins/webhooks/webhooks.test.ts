/**
 * Webhooks (issue 24 item 2) through the real HTTP server against real receivers that verify
 * every request with the `standardwebhooks` package's own verifier: CRUD, the secret shown
 * once, admin-only access, ordered at-least-once delivery through a receiver that is down,
 * answers 500, times out, redirects or is slow; the delivery log, redelivery, ping, the
 * automatic disable after a day of failures (the clock moved, not waited for) with its admin
 * event, the Slack format, SSRF refusals, and the OpenAPI `webhooks`.
 */
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import type { EventLog, WorkEvent } from '../../../kernel/events/types.js';
import { send } from '../../../plugins/webhooks/send.js';
import { addPerson, md, runSecrets, startTestServer, type TestServer } from '../../helpers/harness.js';
import { inOrderAtLeastOnce, Receiver } from './receiver.js';
import { until } from '../../helpers/until.js';

const HOUR = 60 * 60 * 1000;

function eventsOf(t: TestServer): EventLog {
  return t.server.services.tenants.get(t.org)!.events;
}

/** Creates nodes one write each (one commit, one node.created event each) and answers their event ids. */
async function createNodes(t: TestServer, prefix: string, n: number, extra: Record<string, unknown> = {}): Promise<number[]> {
  const log = eventsOf(t);
  const before = log.lastId;
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = `task-${prefix}-${i}`;
    ids.push(id);
    const res = await t.api('POST', '/v1/nodes', {
      body: { nodes: [md({ id, type: 'task', summary: `Webhook test ${prefix} ${i}`, ...extra })] },
    });
    expect(res.status, res.text).to.equal(200);
  }
  const events = await until(async () => {
    const got = (await log.read(before, { types: ['node.created'] }, 1000)).filter((e) => ids.includes(e.nodes[0]!));
    return got.length === n ? got : null;
  }, `node.created events of ${prefix}`);
  return events.map((e: WorkEvent) => e.id);
}

/**
 * Moves the server's clock past each scheduled retry, once per retry: the wait of the backoff
 * passes without sleeping, and the failing day only as far as the retries need.
 */
function driveRetries(t: TestServer, hookId: string): () => Promise<void> {
  let advancedFor: string | null = null;
  return async () => {
    const next = (await t.api('GET', `/v1/webhooks/${hookId}`)).body.next_attempt as string | null;
    if (next && next !== advancedFor) {
      advancedFor = next;
      t.clock.advance(2 * HOUR); // past the longest backoff (1 h)
    }
  };
}

async function createHook(t: TestServer, receiver: Receiver, body: Record<string, unknown> = {}) {
  const res = await t.api('POST', '/v1/webhooks', { body: { url: receiver.url, types: ['node.created'], ...body } });
  expect(res.status, res.text).to.equal(201);
  runSecrets.add(res.body.secret);
  receiver.secret = res.body.secret;
  return res.body.webhook as { id: string };
}

describe('webhooks: management and signed delivery', function () {
  // the burst test waits out delivery backoffs on a loaded machine
  this.timeout(120_000);
  let t: TestServer;
  const receivers: Receiver[] = [];
  const receiver = async () => {
    const r = await new Receiver().start();
    receivers.push(r);
    return r;
  };

  before(async () => {
    t = await startTestServer({ config: { webhookAllowPrivate: true, webhookTimeoutMs: 500 } });
  });
  after(async () => {
    for (const r of receivers) await r.stop();
    await t.close();
  });

  it('CRUD over REST: the secret is answered once, never listed; updates, rotation, delete', async () => {
    const r = await receiver();
    const created = await t.api('POST', '/v1/webhooks', {
      body: { url: r.url, types: ['node.*', 'lease.claimed'], description: 'CI trigger', format: 'json' },
    });
    expect(created.status, created.text).to.equal(201);
    runSecrets.add(created.body.secret);
    expect(created.body.secret).to.match(/^whsec_[A-Za-z0-9+/=]{40,}$/);
    const hook = created.body.webhook;
    expect(hook).to.include({ url: r.url, description: 'CI trigger', format: 'json', enabled: true, state: 'active' });
    expect(hook.types).to.deep.equal(['node.*', 'lease.claimed']);
    expect(hook.id).to.match(/^wh_[0-9a-f]{18}$/);

    const list = await t.api('GET', '/v1/webhooks');
    expect(list.status).to.equal(200);
    expect(list.body.webhooks.map((h: any) => h.id)).to.include(hook.id);
    expect(list.text).to.not.include(created.body.secret);
    const one = await t.api('GET', `/v1/webhooks/${hook.id}`);
    expect(one.status).to.equal(200);
    expect(one.text).to.not.include(created.body.secret);
    expect(one.body).to.not.have.property('secret');

    const updated = await t.api('PATCH', `/v1/webhooks/${hook.id}`, { body: { types: ['*'], enabled: false } });
    expect(updated.status, updated.text).to.equal(200);
    expect(updated.body.webhook).to.include({ enabled: false, state: 'disabled' });
    expect(updated.body.webhook.types).to.deep.equal([]);
    expect(updated.body).to.not.have.property('secret');

    const rotated = await t.api('PATCH', `/v1/webhooks/${hook.id}`, { body: { rotate_secret: true, enabled: true } });
    expect(rotated.status).to.equal(200);
    runSecrets.add(rotated.body.secret);
    expect(rotated.body.secret)
      .to.match(/^whsec_/)
      .and.not.equal(created.body.secret);

    // during the overlap both secrets verify the same request
    r.secret = created.body.secret;
    const ping = await t.api('POST', `/v1/webhooks/${hook.id}/ping`);
    expect(ping.status, ping.text).to.equal(200);
    expect(ping.body.delivery).to.include({ ok: true, status: 200, kind: 'ping', type: 'webhook.ping' });
    const last = r.received.at(-1)!;
    expect(last.verified, last.verifyError ?? '').to.equal(true);
    expect(() => new Webhook(rotated.body.secret).verify(last.body, last.headers)).to.not.throw();
    expect(last.headers['webhook-signature']!.split(' ')).to.have.length(2);

    const bad = await t.api('PATCH', `/v1/webhooks/${hook.id}`, { body: { format: 'xml' } });
    expect(bad.status).to.equal(422);
    const unknown = await t.api('GET', '/v1/webhooks/wh_000000000000000000');
    expect(unknown.status).to.equal(404);
    expect((await t.api('POST', '/v1/webhooks', { body: { url: 'ftp://example.com/x' } })).body.error.code).to.equal('url_refused');
    expect((await t.api('POST', '/v1/webhooks', { body: { url: r.url, types: ['Not A Type'] } })).status).to.equal(422);
    expect((await t.api('POST', '/v1/webhooks', { body: { url: r.url, project: 'proj-nowhere' } })).status).to.equal(422);

    const del = await t.api('DELETE', `/v1/webhooks/${hook.id}`);
    expect(del.status).to.equal(200);
    expect(del.body).to.deep.equal({ id: hook.id, deleted: true });
    expect((await t.api('GET', `/v1/webhooks/${hook.id}`)).status).to.equal(404);

    // the admin events: created, updated, deleted, never the secret or the URL's path
    const admin = await eventsOf(t).read(0, { types: ['webhook.*'], admin: true }, 1000);
    const mine = admin.filter((e) => e.payload.webhook === hook.id).map((e) => e.type);
    expect(mine).to.include.members(['webhook.created', 'webhook.updated', 'webhook.deleted']);
    expect(JSON.stringify(admin)).to.not.include(created.body.secret).and.not.include('/hook');
    expect(await eventsOf(t).read(0, { types: ['webhook.*'] }, 1000)).to.have.length(0, 'admin events hidden from members');
  });

  it('admins only: a member PAT and an admin agent token are 403', async () => {
    const member = await addPerson(t, 'Hook Member');
    const r = await receiver();
    expect((await t.api('POST', '/v1/webhooks', { token: member.token, body: { url: r.url } })).status).to.equal(403);
    expect((await t.api('GET', '/v1/webhooks', { token: member.token })).status).to.equal(403);
    const agent = await t.api('POST', '/v1/agents', { body: { label: 'Hook Bot' } });
    const minted = await t.api('POST', `/v1/agents/${agent.body.id}/token`, { body: { standing: true, label: 'hooks' } });
    expect(minted.status, minted.text).to.equal(201);
    expect((await t.api('GET', '/v1/webhooks', { token: minted.body.token })).status).to.equal(403);
  });

  it('delivers every matching event in order, signed, with a stable webhook-id', async () => {
    const r = await receiver();
    const hook = await createHook(t, r);
    const ids = await createNodes(t, 'order', 12);
    await until(() => r.eventIds().length >= ids.length, 'all deliveries');
    inOrderAtLeastOnce(r.eventIds(), ids);
    for (const rec of r.received) {
      expect(rec.verified, rec.verifyError ?? '').to.equal(true);
      expect(rec.headers['webhook-id']).to.equal(`evt_${t.org}_${rec.json.data.id}`);
      expect(rec.json.type).to.equal('node.created');
      expect(rec.json.data.org).to.equal(t.org);
    }
    const view = await t.api('GET', `/v1/webhooks/${hook.id}`);
    await until(async () => (await t.api('GET', `/v1/webhooks/${hook.id}`)).body.last_event === ids.at(-1), 'cursor');
    expect(view.body.state).to.equal('active');
  });

  it('a slow receiver: one request in flight at a time, every event in order', async () => {
    const r = await receiver();
    let inFlight = 0;
    let most = 0;
    r.reply = () => {
      inFlight++;
      most = Math.max(most, inFlight);
      setTimeout(() => inFlight--, 150);
      return { status: 200, delayMs: 150 };
    };
    await createHook(t, r);
    const ids = await createNodes(t, 'slow', 6);
    await until(() => new Set(r.eventIds()).size === ids.length, 'slow deliveries');
    inOrderAtLeastOnce(r.eventIds(), ids);
    expect(most).to.equal(1);
  });

  it('a burst of 50 concurrent writes: every event reaches the receiver once, in order; the durable cursor catches up', async () => {
    const r = await receiver();
    const hook = await createHook(t, r);
    const log = eventsOf(t);
    const before = log.lastId;
    const names = Array.from({ length: 50 }, (_, i) => `task-burst-${i}`);
    const answers = await Promise.all(
      names.map((id, i) => t.api('POST', '/v1/nodes', { body: { nodes: [md({ id, type: 'task', summary: `Burst ${i}` })] } })),
    );
    for (const res of answers) expect(res.status, res.text).to.equal(200);
    const ids = (await log.read(before, { types: ['node.created'] }, 1000)).filter((e) => names.includes(e.nodes[0]!)).map((e) => e.id);
    expect(ids).to.have.length(50);
    const distinct = (): number[] => [...new Set(r.eventIds())];
    // a delivery that timed out waits its backoff (up to 10 s on a first retry): room for a few on a loaded machine
    await until(() => distinct().length >= ids.length, 'the burst at the receiver', 60_000);
    // each event in the log's order; again only after an attempt the server saw fail: the
    // receiver runs in this process, so on a loaded machine the burst's own writes can hold its
    // answer past this suite's 500 ms delivery timeout (at-least-once, same webhook-id)
    expect(distinct()).to.deep.equal(ids);
    const attempts = (await t.api('GET', `/v1/webhooks/${hook.id}/deliveries?limit=100`)).body.deliveries as Array<{
      ok: boolean;
      event: number;
    }>;
    const failed = attempts.filter((a) => !a.ok);
    const seen = r.eventIds();
    const repeated = [...new Set(seen.filter((id, i) => seen.indexOf(id) !== i))];
    for (const id of repeated)
      expect(
        failed.map((a) => a.event),
        `event ${id} came again without a failed attempt`,
      ).to.include(id);
    for (const rec of r.received) expect(rec.verified, rec.verifyError ?? '').to.equal(true);
    // one kept-alive connection carried the burst, not a handshake per event (a timed-out attempt's connection is not reused)
    expect(r.connections).to.be.at.most(2 + failed.length);
    // the cursor written behind the deliveries reaches the store
    const stored = t.server.services.tenants.get(t.org)!.state.collection<{ cursor: number }>('webhook-cursors');
    await until(() => stored.get(hook.id)?.cursor === ids.at(-1), 'the durable cursor');
    expect((await t.api('GET', `/v1/webhooks/${hook.id}`)).body.last_event).to.equal(ids.at(-1));
  });

  it('redeliver sends one event again with its webhook-id; unknown or unmatched events are 404/409', async () => {
    const r = await receiver();
    const hook = await createHook(t, r);
    const ids = await createNodes(t, 'redeliver', 2);
    await until(() => r.eventIds().length >= 2, 'first deliveries');
    const again = await t.api('POST', `/v1/webhooks/${hook.id}/redeliver`, { body: { event: ids[0] } });
    expect(again.status, again.text).to.equal(200);
    expect(again.body.delivery).to.include({ ok: true, kind: 'redelivery', event: ids[0], message_id: `evt_${t.org}_${ids[0]}` });
    expect(r.received.at(-1)!.json.data.id).to.equal(ids[0]);
    expect(r.received.at(-1)!.verified).to.equal(true);
    expect((await t.api('POST', `/v1/webhooks/${hook.id}/redeliver`, { body: { event: 10_000_000 } })).status).to.equal(404);
    const other = (await eventsOf(t).read(0, { types: ['webhook.created'], admin: true }, 1))[0]!;
    expect((await t.api('POST', `/v1/webhooks/${hook.id}/redeliver`, { body: { event: other.id } })).status).to.equal(409);
    // the cursor did not move back
    expect((await t.api('GET', `/v1/webhooks/${hook.id}`)).body.last_event).to.equal(ids[1]);
  });

  it("format 'slack': a readable line with a link, signed the same way", async () => {
    const r = await receiver();
    await createHook(t, r, { format: 'slack' });
    await createNodes(t, 'slack', 1);
    const rec = await until(() => r.received.find((x) => x.json?.text), 'a slack message');
    expect(rec.verified).to.equal(true);
    expect(rec.json.text).to.match(/created <http:\/\/127\.0\.0\.1:\d+\/app\/nodes\/task-slack-0\|task-slack-0>/);
  });

  it('the OpenAPI document describes every payload under webhooks', async () => {
    const doc = (await t.api('GET', '/v1/openapi.json')).body;
    expect(doc.webhooks).to.include.keys('node.created', 'lease.claimed', 'webhook.disabled', 'webhook.ping', 'slack');
    const created = doc.webhooks['node.created'].post;
    expect(created.requestBody.content['application/json'].schema.properties.type).to.deep.equal({ const: 'node.created' });
    expect(doc.paths['/v1/webhooks']).to.have.keys('get', 'post');
  });
});

// Retries move the server's clock (hours, a day): signatures stamped with that clock are outside the
// verifier's 5-minute tolerance, so these run on a server of their own and check attempts, not signatures.
describe('webhooks: retries (the clock moves)', function () {
  this.timeout(60_000);
  let t: TestServer;
  const receivers: Receiver[] = [];
  const receiver = async () => {
    const r = await new Receiver().start();
    receivers.push(r);
    return r;
  };

  before(async () => {
    t = await startTestServer({ config: { webhookAllowPrivate: true, webhookTimeoutMs: 500 } });
  });
  after(async () => {
    for (const r of receivers) await r.stop();
    await t.close();
  });

  it('a receiver that answers 500 then 200: retried with backoff (clock moved), nothing skipped, in order; the delivery log', async () => {
    const r = await receiver();
    r.reply = (n) => ({ status: n <= 3 ? 500 : 200, body: n <= 3 ? 'boom' : 'ok' });
    const hook = await createHook(t, r);
    const ids = await createNodes(t, 'fail500', 4);
    await until(() => new Set(r.eventIds()).size === ids.length, 'deliveries after 500s', 30_000, { between: driveRetries(t, hook.id) });
    inOrderAtLeastOnce(r.eventIds(), ids);
    expect(r.eventIds().slice(0, 4)).to.deep.equal([ids[0], ids[0], ids[0], ids[0]]);
    const log = await t.api('GET', `/v1/webhooks/${hook.id}/deliveries`);
    expect(log.status).to.equal(200);
    const firstEvent = log.body.deliveries.filter((d: any) => d.event === ids[0]).reverse();
    expect(firstEvent.map((d: any) => [d.attempt, d.status, d.ok])).to.deep.equal([
      [1, 500, false],
      [2, 500, false],
      [3, 500, false],
      [4, 200, true],
    ]);
    expect(firstEvent[0].error).to.equal('answered 500: boom');
    expect(firstEvent[0].latency_ms).to.be.a('number');
    expect(firstEvent[0].message_id).to.equal(`evt_${t.org}_${ids[0]}`);
    const limited = await t.api('GET', `/v1/webhooks/${hook.id}/deliveries?limit=2`);
    expect(limited.body.deliveries).to.have.length(2);
  });

  it('a receiver that is down for a while: delivered once it is back, in order', async () => {
    const r = await receiver();
    const hook = await createHook(t, r);
    const port = r.port;
    await r.stop();
    const ids = await createNodes(t, 'down', 3);
    await until(async () => (await t.api('GET', `/v1/webhooks/${hook.id}`)).body.state === 'failing', 'failing state');
    const failing = await t.api('GET', `/v1/webhooks/${hook.id}`);
    expect(failing.body.next_attempt).to.be.a('string');
    await r.start(port);
    await until(() => new Set(r.eventIds()).size === ids.length, 'deliveries after the receiver came back', 30_000, {
      between: driveRetries(t, hook.id),
    });
    inOrderAtLeastOnce(r.eventIds(), ids);
    await until(async () => (await t.api('GET', `/v1/webhooks/${hook.id}`)).body.state === 'active', 'active again');
  });

  it('a receiver that times out: the attempt fails at the timeout and is retried', async () => {
    const r = await receiver();
    r.reply = (n) => (n === 1 ? { delayMs: 2000 } : { status: 204 });
    const hook = await createHook(t, r);
    const ids = await createNodes(t, 'timeout', 2);
    await until(() => new Set(r.eventIds()).size === 2 && r.received.length >= 3, 'deliveries after a timeout', 30_000, {
      between: driveRetries(t, hook.id),
    });
    inOrderAtLeastOnce(r.eventIds(), ids);
    const log = (await t.api('GET', `/v1/webhooks/${hook.id}/deliveries`)).body.deliveries.reverse();
    expect(log[0]).to.include({ ok: false, status: null, error: 'no answer within 500 ms', attempt: 1 });
    expect(log[1]).to.include({ ok: true, status: 204, attempt: 2, event: ids[0] });
  });

  it('a redirect is not followed and counts as a failure', async () => {
    const elsewhere = await receiver();
    const r = await receiver();
    r.reply = (n) => (n === 1 ? { status: 302, headers: { location: elsewhere.url } } : { status: 200 });
    const hook = await createHook(t, r);
    const ids = await createNodes(t, 'redirect', 1);
    await until(() => r.eventIds().length >= 2, 'the retry after the redirect', 30_000, { between: driveRetries(t, hook.id) });
    expect(elsewhere.received).to.have.length(0);
    const log = (await t.api('GET', `/v1/webhooks/${hook.id}/deliveries`)).body.deliveries.reverse();
    expect(log[0]).to.include({ ok: false, status: 302, event: ids[0] });
    expect(log[0].error).to.match(/redirects are not followed/);
  });

  it('a day of failures disables the subscription with a webhook.disabled admin event; re-enabling resumes at the same event', async () => {
    const r = await receiver();
    r.reply = () => ({ status: 503 });
    const hook = await createHook(t, r);
    const ids = await createNodes(t, 'disable', 2);
    await until(() => r.received.length >= 1, 'the first attempt');
    await until(async () => (await t.api('GET', `/v1/webhooks/${hook.id}`)).body.state === 'disabled', 'disabled', 30_000, {
      between: () => t.clock.advance(5 * HOUR),
    });
    const view = (await t.api('GET', `/v1/webhooks/${hook.id}`)).body;
    expect(view.enabled).to.equal(false);
    expect(view.disabled_reason).to.match(/every delivery failed since/);
    const disabled = await until(
      async () => (await eventsOf(t).read(0, { types: ['webhook.disabled'], admin: true }, 100)).find((e) => e.payload.webhook === hook.id),
      'webhook.disabled event',
    );
    expect(disabled.audience).to.equal('admins');
    expect(disabled.payload).to.include({ event: ids[0], host: `127.0.0.1:${r.port}` });
    // disabled: no more attempts however far the clock moves. A control subscription receiving a
    // later event shows the engine ran past that point (no sleeping for an absence).
    const attempts = r.received.length;
    const control = await receiver();
    await createHook(t, control);
    t.clock.advance(5 * HOUR);
    const later = await createNodes(t, 'disable-later', 1);
    await until(() => control.eventIds().includes(later[0]!), 'the control delivery');
    await until(() => control.received.length >= 1 && r.received.length === attempts, 'no further attempt');
    expect(r.received.length).to.equal(attempts);
    expect((await t.api('GET', `/v1/webhooks/${hook.id}`)).body.next_attempt).to.equal(null);

    r.reply = () => ({ status: 200 });
    const re = await t.api('PATCH', `/v1/webhooks/${hook.id}`, { body: { enabled: true } });
    expect(re.body.webhook).to.include({ state: 'active', disabled_reason: null });
    await until(() => new Set(r.eventIds()).size === 3, 'resumed deliveries');
    inOrderAtLeastOnce(r.eventIds(), [...ids, ...later]);
  });
});

describe('webhooks: SSRF protection without SVC_WEBHOOK_ALLOW_PRIVATE', function () {
  this.timeout(30_000);
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(async () => t.close());

  for (const url of [
    'http://127.0.0.1:9/hook',
    'http://10.1.2.3/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]:8080/hook',
    'http://localhost/hook',
    'http://100.64.0.1/hook',
    'http://0.0.0.0/hook',
    'http://[fd00::1]/hook',
  ]) {
    it(`refuses ${url}`, async () => {
      const res = await t.api('POST', '/v1/webhooks', { body: { url } });
      expect(res.status, res.text).to.equal(422);
      expect(res.body.error.code).to.equal('url_refused');
      expect(res.body.error.message).to.match(/non-public address|does not resolve/);
    });
  }

  it('checks again at delivery, connecting only to the address it checked (DNS rebinding)', async () => {
    // a name that answered a public address when the subscription was made now answers a private one: refused, nothing sent
    const resolve = async () => [{ address: '127.0.0.1', family: 4 }];
    const result = await send('http://rebind.example.test/hook', '{}', {}, { allowPrivate: false, timeoutMs: 500, resolve });
    expect(result.ok).to.equal(false);
    expect(result.status).to.equal(null);
    expect(result.error).to.match(/non-public address \(127\.0\.0\.1\)/);
  });
});
