import { expect } from 'chai';
import { request, type IncomingHttpHeaders } from 'node:http';
import { EventSource } from 'eventsource';
import { hashToken } from '../../../kernel/auth.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { eventsPlugin } from '../../../plugins/events/index.js';
import { streamCounts } from '../../../plugins/events/slots.js';
import { addPerson, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';
import { emit, openStream } from './helpers.js';
import { until } from '../../helpers/until.js';

const openCount = (t: TestServer) => streamCounts(t.server.services).byTenant.get(t.org) ?? 0;

describe('events: GET /v1/events as Server-Sent Events', function () {
  this.timeout(60_000);
  let t: TestServer;
  let alice: { id: string; token: string };

  before(async () => {
    t = await startTestServer({
      plugins: [corePlugin, eventsPlugin],
      config: {
        events: { heartbeatMs: 200, streamsPerToken: 3, streamsPerTenant: 50, bufferEvents: 1000, bufferBytes: 1 << 20, cutGraceMs: 5000 },
      },
    });
    alice = await addPerson(t, 'Alice');
  });
  after(async () => t.close());

  it('an eventsource client receives events live, each with id, type and the event as data', async () => {
    const got: MessageEvent[] = [];
    const es = new EventSource(`${t.url}/v1/events?types=node.*`, {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, authorization: `Bearer ${alice.token}` } }),
    });
    try {
      es.addEventListener('node.created', (e) => got.push(e));
      await until(() => es.readyState === EventSource.OPEN, 'the stream to open', 5000);
      await putNodes(t, [{ id: 'task-live-1', type: 'task', summary: 'live' }]);
      await until(() => got.length >= 1, 'the live event', 5000);
      const data = JSON.parse(got[0]!.data);
      expect(data).to.include({ type: 'node.created', org: t.org });
      expect(data.nodes[0]).to.equal('task-live-1');
      expect(got[0]!.lastEventId).to.equal(String(data.id));
    } finally {
      es.close();
    }
    await until(() => openCount(t) === 0, 'the slot to be released', 5000);
  });

  it('headers, heartbeat comments, since resume, and filters on the stream', async () => {
    const start = (await t.api('GET', '/v1/events')).body.last_id;
    await putNodes(t, [
      { id: 'task-s1', type: 'task', summary: 's1' },
      { id: 'task-s2', type: 'task', summary: 's2' },
    ]);
    await emit(t, { type: 'lease.claimed', nodes: ['task-s1'] });
    const s = await openStream(t, `/v1/events?since=${start}&types=lease.*`, alice.token);
    try {
      expect(s.status).to.equal(200);
      expect(s.headers.get('content-type')).to.match(/^text\/event-stream/);
      expect(s.headers.get('cache-control')).to.include('no-cache');
      await until(() => s.frames().length >= 1, 'the catch-up', 5000);
      expect(s.frames().map((f) => f.event)).to.deep.equal(['lease.claimed']);
      await until(() => /: heartbeat\n\n/.test(s.text()), 'a heartbeat', 5000);
      expect(s.text()).to.match(/^retry: \d+\n/);
      await emit(t, { type: 'lease.released', nodes: ['task-s2'] });
      await putNodes(t, [{ id: 'task-s3', type: 'task', summary: 's3' }]);
      await until(() => s.frames().length >= 2, 'the live lease event', 5000);
      expect(s.frames().map((f) => f.event)).to.deep.equal(['lease.claimed', 'lease.released']);
    } finally {
      s.close();
    }
  });

  it('Last-Event-ID wins over since; a non-admin stream never carries admin events', async () => {
    const start = (await t.api('GET', '/v1/events')).body.last_id;
    const first = await emit(t, { type: 'lease.claimed', nodes: ['task-x'] });
    await emit(t, { type: 'token.created', nodes: [alice.id], audience: 'admins' });
    const second = await emit(t, { type: 'lease.released', nodes: ['task-x'] });
    const member = await openStream(t, `/v1/events?since=${start}`, alice.token, { 'last-event-id': String(first.id) });
    const admin = await openStream(t, `/v1/events?since=${start}`, t.adminToken);
    try {
      await until(() => member.frames().some((f) => f.id === String(second.id)), 'the member catch-up', 5000);
      expect(member.frames().map((f) => f.event)).to.deep.equal(['lease.released']);
      await until(() => admin.frames().length >= 3, 'the admin catch-up', 5000);
      expect(admin.frames().map((f) => f.event)).to.deep.equal(['lease.claimed', 'token.created', 'lease.released']);
      await emit(t, { type: 'person.created', nodes: [alice.id], audience: 'admins' });
      const last = await emit(t, { type: 'lease.claimed', nodes: ['task-y'] });
      await until(() => member.frames().some((f) => f.id === String(last.id)), 'the live member event', 5000);
      expect(member.frames().map((f) => f.event)).to.not.include('person.created');
      await until(() => admin.frames().some((f) => f.event === 'person.created'), 'the live admin event', 5000);
    } finally {
      member.close();
      admin.close();
    }
  });

  it('too many streams for one token is 429 too_many_streams; closing one frees its slot', async () => {
    await until(() => openCount(t) === 0, 'earlier streams to close', 5000);
    const open = [];
    for (let i = 0; i < 3; i++) open.push(await openStream(t, '/v1/events', alice.token));
    try {
      for (const s of open) expect(s.status).to.equal(200);
      const refused = await openStream(t, '/v1/events', alice.token);
      expect(refused.status).to.equal(429);
      await until(() => refused.ended(), 'the refused stream to end', 5000);
      expect(JSON.parse(refused.text()).error).to.include({ code: 'too_many_streams' });
      // waits count too
      const wait = await t.api('GET', '/v1/events?wait=5&node=task-none', { token: alice.token });
      expect(wait.status).to.equal(429);
      // another token is not affected
      const other = await openStream(t, '/v1/events', t.adminToken);
      expect(other.status).to.equal(200);
      other.close();
      open.shift()!.close();
      await until(() => openCount(t) <= 2, 'the closed stream to free its slot', 5000);
      const again = await openStream(t, '/v1/events', alice.token);
      expect(again.status).to.equal(200);
      open.push(again);
    } finally {
      for (const s of open) s.close();
    }
    await until(() => openCount(t) === 0, 'every slot released', 5000);
  });

  it('HEAD with the event-stream Accept: the stream headers, no body, and its slot is free at once', async () => {
    await until(() => openCount(t) === 0, 'earlier streams to close', 5000);
    const { status, headers, body } = await new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>(
      (resolve, reject) => {
        const req = request(
          new URL('/v1/events', t.url),
          { method: 'HEAD', headers: { accept: 'text/event-stream', authorization: `Bearer ${alice.token}` } },
          (res) => {
            let text = '';
            res.on('data', (chunk: Buffer) => (text += chunk.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
          },
        );
        // a body after the headers would be a parse error of the next response on this connection
        req.on('error', reject);
        req.end();
      },
    );
    expect(status).to.equal(200);
    expect(headers['content-type']).to.match(/^text\/event-stream/);
    expect(body).to.equal('');
    await until(() => openCount(t) === 0, 'the HEAD stream to free its slot', 5000);
    // the same token can still open its three streams
    const open = [];
    for (let i = 0; i < 3; i++) open.push(await openStream(t, '/v1/events', alice.token));
    for (const s of open) s.close();
    for (const s of open) expect(s.status).to.equal(200);
  });

  it('a JSON client without the event-stream Accept gets JSON; a bad Last-Event-ID is 422', async () => {
    const json = await t.api('GET', '/v1/events', { headers: { accept: 'application/json' } });
    expect(json.status).to.equal(200);
    expect(json.headers.get('content-type')).to.match(/json/);
    const bad = await openStream(t, '/v1/events', alice.token, { 'last-event-id': 'abc' });
    expect(bad.status).to.equal(422);
  });

  it("a revoked token's stream ends at the next heartbeat, and its reconnect is 401", async () => {
    const bob = await addPerson(t, 'Bob');
    const s = await openStream(t, '/v1/events', bob.token);
    expect(s.status).to.equal(200);
    const tenant = t.server.services.tenants.get(t.org)!;
    const hash = hashToken(bob.token);
    await tenant.tokens.mutate((records) => {
      const r = records.get(hash)!;
      records.set(hash, { ...r, revoked_at: new Date().toISOString() });
    });
    await until(() => s.ended(), 'the stream to end', 5000);
    expect(s.text()).to.include('stream ended by the server');
    expect((await openStream(t, '/v1/events', bob.token)).status).to.equal(401);
  });

  it('a graceful stop ends open streams at once (the client reconnects with its last id)', async () => {
    const s2 = await startTestServer({ plugins: [corePlugin, eventsPlugin] });
    try {
      const s = await openStream(s2, '/v1/events', s2.adminToken);
      expect(s.status).to.equal(200);
      await until(() => openCount(s2) === 1, 'the stream to open', 5000);
      const at = Date.now();
      await s2.server.shutdown(30_000);
      expect(Date.now() - at, 'the stop did not wait out its grace period').to.be.below(10_000);
      await until(() => s.ended(), 'the stream to end', 5000);
      expect(s.text()).to.include('stream ended by the server');
    } finally {
      await s2.close().catch(() => undefined);
    }
  });
});
