import { expect } from 'chai';
import { corePlugin } from '../../../plugins/core/index.js';
import { eventsPlugin } from '../../../plugins/events/index.js';
import { identityPlugin } from '../../../plugins/identity/index.js';
import { leasesPlugin } from '../../../plugins/leases/index.js';
import { streamCounts } from '../../../plugins/events/slots.js';
import { addPerson, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';
import { emit } from './helpers.js';
import { until } from '../../helpers/until.js';

const ids = (body: any) => body.events.map((e: any) => e.id);

describe('events: GET /v1/events?wait= (JSON) and the MCP tool wait_for_events', function () {
  this.timeout(60_000);
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };

  before(async () => {
    t = await startTestServer({ plugins: [corePlugin, identityPlugin, leasesPlugin, eventsPlugin] });
    alice = await addPerson(t, 'Alice');
    bob = await addPerson(t, 'Bob');
    await putNodes(t, [
      { id: 'proj-alpha', type: 'proj', summary: 'Alpha' },
      { id: 'proj-beta', type: 'proj', summary: 'Beta' },
    ]);
  });
  after(async () => t.close());

  it('without since: nothing yet, and last_id is the cursor of now; since: the events after it, ascending', async () => {
    const now = await t.api('GET', '/v1/events');
    expect(now.status).to.equal(200);
    expect(now.body).to.deep.include({ events: [], count: 0, more: false });
    const cursor = now.body.last_id;
    expect(cursor).to.be.a('number').at.least(1, 'creating the projects made events');
    await putNodes(t, [{ id: 'task-w1', type: 'task', summary: 'one', project: 'proj-alpha' }]);
    const after = await t.api('GET', `/v1/events?since=${cursor}`);
    expect(after.status).to.equal(200);
    expect(after.body.count).to.be.at.least(1);
    const created = after.body.events.find((e: any) => e.type === 'node.created' && e.nodes[0] === 'task-w1');
    expect(created, JSON.stringify(after.body)).to.not.equal(undefined);
    expect(created).to.include({ org: t.org, project: 'proj-alpha' });
    expect(ids(after.body)).to.deep.equal([...ids(after.body)].sort((a: number, b: number) => a - b));
    expect(after.body.events.every((e: any) => e.id > cursor)).to.equal(true);
    expect(after.body.last_id).to.equal(after.body.events.at(-1).id);
    // the same cursor answers the same events; the returned cursor answers nothing new
    expect((await t.api('GET', `/v1/events?since=${cursor}`)).text).to.equal(after.text);
    expect((await t.api('GET', `/v1/events?since=${after.body.last_id}`)).body.count).to.equal(0);
  });

  it('limit pages through with more: true; last_id carries on exactly', async () => {
    const start = (await t.api('GET', '/v1/events')).body.last_id;
    await putNodes(
      t,
      Array.from({ length: 7 }, (_, i) => ({ id: `task-page-${i}`, type: 'task', summary: `page ${i}` })),
    );
    const seen: number[] = [];
    let since = start;
    for (let round = 0; round < 10; round++) {
      const page = await t.api('GET', `/v1/events?since=${since}&limit=3&types=node.created`);
      expect(page.status).to.equal(200);
      expect(page.body.count).to.be.at.most(3);
      seen.push(...ids(page.body));
      since = page.body.last_id;
      if (!page.body.more) break;
    }
    expect(seen).to.have.length(7);
    expect(new Set(seen).size).to.equal(7);
  });

  it('filters: types (exact and prefix), project, node; a non-admin never sees admin events', async () => {
    const start = (await t.api('GET', '/v1/events')).body.last_id;
    await putNodes(t, [
      { id: 'task-fa', type: 'task', summary: 'alpha', project: 'proj-alpha' },
      { id: 'task-fb', type: 'task', summary: 'beta', project: 'proj-beta' },
    ]);
    await emit(t, { type: 'lease.claimed', nodes: ['task-fa', alice.id], project: 'proj-alpha', actor: null });
    await emit(t, { type: 'token.created', nodes: [alice.id], audience: 'admins', payload: { label: 'ci' } });

    const types = (q: string, token = t.adminToken) =>
      t.api('GET', `/v1/events?since=${start}&${q}`, { token }).then((r) => r.body.events.map((e: any) => e.type));
    expect(await types('types=lease.claimed')).to.deep.equal(['lease.claimed']);
    expect(await types('types=lease.*')).to.deep.equal(['lease.claimed']);
    expect(await types('types=lease.*,token.created')).to.deep.equal(['lease.claimed', 'token.created']);
    expect(await types('types=node.created&types=lease.claimed')).to.include.members(['node.created', 'lease.claimed']);
    const beta = await t.api('GET', `/v1/events?since=${start}&project=proj-beta`);
    expect(beta.body.events.map((e: any) => e.nodes[0])).to.deep.equal(['task-fb']);
    const fa = await t.api('GET', `/v1/events?since=${start}&node=task-fa`);
    expect(fa.body.events.map((e: any) => e.type)).to.deep.equal(['node.created', 'lease.claimed']);

    expect(await types('types=token.created')).to.deep.equal(['token.created'], 'the admin sees it');
    expect(await types('types=token.created', alice.token)).to.deep.equal([], 'a member never');
    expect(await types('', alice.token)).to.not.include('token.created');
    // and the cursor still moves past what the member may not see
    const member = await t.api('GET', `/v1/events?since=${start}`, { token: alice.token });
    expect(member.body.last_id).to.be.at.least((await t.api('GET', '/v1/events')).body.last_id);
  });

  it("a member's own token minted: the admins hear token.created, the member never (not even as about them)", async () => {
    const start = (await t.api('GET', '/v1/events')).body.last_id;
    const minted = await t.api('POST', '/v1/me/tokens', { token: alice.token, body: { label: 'laptop' } });
    expect(minted.status, minted.text).to.equal(201);
    const admin = await t.api('GET', `/v1/events?since=${start}&types=token.*`);
    const created = admin.body.events.find((e: any) => e.type === 'token.created');
    expect(created, admin.text).to.not.equal(undefined);
    expect(created).to.include({ audience: 'admins' });
    expect(created.nodes).to.include(alice.id);
    expect(JSON.stringify(created)).to.not.include(minted.body.token);
    for (const q of ['', '&assignee=me', '&types=token.*', `&node=${alice.id}`]) {
      const member = await t.api('GET', `/v1/events?since=${start}${q}`, { token: alice.token });
      expect(member.status).to.equal(200);
      expect(
        member.body.events.map((e: any) => e.type),
        q,
      ).to.not.include('token.created');
    }
  });

  it('assignee=me: events about the caller or a node assigned to the caller', async () => {
    const start = (await t.api('GET', '/v1/events')).body.last_id;
    await putNodes(t, [
      { id: 'task-mine', type: 'task', summary: 'mine', edges: [{ type: 'assigned', to: alice.id }] },
      { id: 'task-theirs', type: 'task', summary: 'theirs', edges: [{ type: 'assigned', to: bob.id }] },
    ]);
    await emit(t, { type: 'question.routed', nodes: ['q-about-alice', alice.id], payload: {} });
    const mine = await t.api('GET', `/v1/events?since=${start}&assignee=me`, { token: alice.token });
    expect(mine.status).to.equal(200);
    const about = mine.body.events.map((e: any) => e.nodes[0]);
    expect(about).to.include.members(['task-mine', 'q-about-alice']);
    expect(about).to.not.include('task-theirs');
    const bobs = await t.api('GET', `/v1/events?since=${start}&assignee=me`, { token: bob.token });
    expect([...new Set(bobs.body.events.map((e: any) => e.nodes[0]))]).to.deep.equal(['task-theirs']);
  });

  it('wait: answers within 1 s of a matching write by another client; empty at the deadline', async () => {
    const start = (await t.api('GET', '/v1/events')).body.last_id;
    const began = Date.now();
    const waiting = t.api('GET', `/v1/events?since=${start}&wait=20&node=task-late`, { token: alice.token });
    // a non-matching write does not answer the wait
    await putNodes(t, [{ id: 'task-other', type: 'task', summary: 'other' }], bob.token);
    let wroteAt = 0;
    setTimeout(() => {
      wroteAt = Date.now();
      void putNodes(t, [{ id: 'task-late', type: 'task', summary: 'late' }], bob.token);
    }, 300);
    const res = await waiting;
    const answeredAt = Date.now();
    expect(res.status).to.equal(200);
    expect(res.body.events.map((e: any) => e.nodes[0])).to.deep.equal(['task-late']);
    expect(wroteAt).to.be.above(0);
    expect(answeredAt - wroteAt, 'answered within 1 s of the write').to.be.below(1000);
    expect(answeredAt - began).to.be.below(15_000);

    const empty0 = Date.now();
    const none = await t.api('GET', `/v1/events?since=${res.body.last_id}&wait=1&node=task-never`);
    const took = Date.now() - empty0;
    expect(none.status).to.equal(200);
    expect(none.body).to.deep.include({ events: [], count: 0, more: false });
    expect(none.body.last_id).to.be.at.least(res.body.last_id);
    expect(took).to.be.at.least(950).and.below(5000);
  });

  it('wait_for_events over MCP returns within 1 s of an event written by another client, the same bytes as REST', async () => {
    const client = await t.mcp(alice.token);
    const start = (await t.api('GET', '/v1/events')).body.last_id;
    let wroteAt = 0;
    setTimeout(() => {
      wroteAt = Date.now();
      void putNodes(t, [{ id: 'task-mcp', type: 'task', summary: 'for the agent' }], bob.token);
    }, 300);
    const result = await t.tool(client, 'wait_for_events', { since: start, types: ['node.created'], wait: 20 });
    const answeredAt = Date.now();
    expect(result.isError).to.equal(false);
    expect(result.json.events.map((e: any) => e.nodes[0])).to.deep.equal(['task-mcp']);
    expect(answeredAt - wroteAt).to.be.below(1000);
    const rest = await t.api('GET', `/v1/events?since=${start}&types=node.created`, { token: alice.token });
    expect(rest.text).to.equal(result.text);
  });

  it('an agent blocked on wait_for_events {assignee: me} hears at once that its claim was taken over', async () => {
    await putNodes(t, [{ id: 'task-contested', type: 'task', summary: 'contested' }]);
    const claimed = await t.api('POST', '/v1/nodes/task-contested/claim', { token: alice.token, body: {} });
    expect(claimed.status, claimed.text).to.equal(200);
    const client = await t.mcp(alice.token);
    const start = (await t.api('GET', '/v1/events')).body.last_id;
    let tookAt = 0;
    setTimeout(() => {
      tookAt = Date.now();
      void t.api('POST', '/v1/nodes/task-contested/claim', { body: { force: true } });
    }, 300);
    const result = await t.tool(client, 'wait_for_events', { since: start, assignee: 'me', types: ['lease.*'], wait: 20 });
    const answeredAt = Date.now();
    expect(result.isError, result.text).to.equal(false);
    const taken = result.json.events.find((e: any) => e.type === 'lease.taken_over');
    expect(taken, result.text).to.not.equal(undefined);
    expect(taken.nodes[0]).to.equal('task-contested');
    expect(taken.payload).to.include({ previous_holder: alice.id, holder: t.adminPerson });
    expect(answeredAt - tookAt).to.be.below(1000);
  });

  it('a wait whose client went away stops waiting (REST and MCP): its slot is free at once', async () => {
    const open = () => streamCounts(t.server.services).byToken.size;
    await until(() => open() === 0, 'no wait open', 5000);
    const ac = new AbortController();
    const rest = fetch(`${t.url}/v1/events?wait=30&node=task-nobody`, {
      headers: { authorization: `Bearer ${bob.token}` },
      signal: ac.signal,
    }).catch(() => 'aborted');
    await until(() => open() === 1, 'the REST wait to begin', 5000);
    ac.abort();
    expect(await rest).to.equal('aborted');
    await until(() => open() === 0, 'the REST wait to stop', 5000);

    const client = await t.mcp(bob.token);
    const call = t.tool(client, 'wait_for_events', { node: 'task-nobody', wait: 30 }).catch(() => 'closed');
    await until(() => open() === 1, 'the MCP wait to begin', 5000);
    const closedAt = Date.now();
    await client.close();
    await until(() => open() === 0, 'the MCP wait to stop', 5000);
    expect(Date.now() - closedAt).to.be.below(5000);
    await call;
  });

  it('bad input is the envelope: 422 for a malformed type or cursor, 409 cursor_ahead, and the same over MCP', async () => {
    const bad = await t.api('GET', '/v1/events?types=Not%20A%20Type');
    expect(bad.status).to.equal(422);
    expect(bad.body.error.code).to.equal('validation_failed');
    expect((await t.api('GET', '/v1/events?since=-1')).status).to.equal(422);
    expect((await t.api('GET', '/v1/events?assignee=bob')).status).to.equal(422);
    const ahead = await t.api('GET', '/v1/events?since=999999999');
    expect(ahead.status).to.equal(409);
    expect(ahead.body.error).to.include({ code: 'cursor_ahead' });
    const client = await t.mcp();
    const tool = await t.tool(client, 'wait_for_events', { since: 999999999, wait: 0 });
    expect(tool.isError).to.equal(true);
    expect(tool.text).to.equal(ahead.text);
  });

  it('wait and limit are clamped (60 s, 500), not refused', async () => {
    const res = await t.api('GET', '/v1/events?since=0&wait=0&limit=100000');
    expect(res.status).to.equal(200);
    expect(res.body.count).to.be.at.most(500);
    // a clamped wait still answers at once when events exist
    const at = Date.now();
    const waited = await t.api('GET', '/v1/events?since=0&wait=3600&limit=1');
    expect(waited.body.count).to.equal(1);
    expect(Date.now() - at).to.be.below(5000);
  });

  it('a stopping server answers waits at once', async () => {
    const s = await startTestServer({ plugins: [corePlugin, eventsPlugin] });
    try {
      const waiting = s.api('GET', '/v1/events?wait=60');
      // the wait is in flight once the stop begins: it must not hold the stop for its 60 s
      await until(() => (streamCounts(s.server.services).byTenant.get(s.org) ?? 0) > 0, 'the wait to begin', 10_000);
      const stopAt = Date.now();
      await s.server.shutdown(30_000);
      const res = await waiting;
      expect(res.status).to.equal(200);
      expect(res.body.events).to.deep.equal([]);
      expect(Date.now() - stopAt).to.be.below(10_000);
    } finally {
      await s.close().catch(() => undefined);
    }
  });
});
