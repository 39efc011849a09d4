/**
 * Operational events (docs/events.md): lease claims, releases, take-overs, extensions,
 * reservations and expiry, recorded by the operations through the real server (REST and
 * MCP), durable before the answer; expiry noticed by the server's sweep on the clock. Admin
 * events (people, tokens, plugins, settings) only for readers that are admins.
 */
import { expect } from 'chai';
import type { WorkEvent } from '../../../kernel/events/types.js';
import { join } from 'node:path';
import { Tenant } from '../../../kernel/tenant.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { identityPlugin } from '../../../plugins/identity/index.js';
import { leasesPlugin } from '../../../plugins/leases/index.js';
import { addPerson, startTestServer, type TestServer } from '../../helpers/harness.js';
import { sweepExpired } from '../../../plugins/leases/events.js';
import { post, startLeaseServer, tasks, tenantOf, TTL } from '../../plugins/leases/helpers.js';
import { until } from '../../helpers/until.js';

describe('events: lease events', function () {
  this.timeout(60_000);
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };
  const leaseEvents = async (after: number): Promise<WorkEvent[]> => tenantOf(t).events.read(after, { types: ['lease.*'] }, 1000);

  before(async () => {
    t = await startLeaseServer();
    alice = await addPerson(t, 'Alice');
    bob = await addPerson(t, 'Bob');
    await tasks(t, ['task-l1', 'task-l2', 'task-l3'], { project: 'web' });
  });
  after(async () => t?.close());

  it('claim, extend, reserve, revive, release: one event each; a plain heartbeat none', async () => {
    const start = tenantOf(t).events.lastId;
    expect((await post(t, '/v1/nodes/task-l1/claim', alice.token, { session: 's1' })).status).to.equal(200);
    expect((await post(t, '/v1/nodes/task-l1/renew', alice.token, { session: 's1' })).status).to.equal(200);
    expect((await post(t, '/v1/nodes/task-l1/extend', alice.token, { session: 's1', ms: 60_000 })).status).to.equal(200);
    expect((await post(t, '/v1/nodes/task-l1/reserve', alice.token, { session: 's1' })).status).to.equal(200);
    const client = await t.mcp(alice.token);
    const renew = await t.tool(client, 'renew', { id: 'task-l1', session: 's1' });
    expect(renew.isError, renew.text).to.equal(false);
    expect((await post(t, '/v1/nodes/task-l1/release', alice.token, { session: 's1' })).status).to.equal(200);

    const events = await leaseEvents(start);
    expect(events.map((e) => [e.type, e.payload.reason ?? null, e.actor?.via])).to.deep.equal([
      ['lease.claimed', null, 'rest'],
      ['lease.renewed', 'extended', 'rest'],
      ['lease.reserved', null, 'rest'],
      ['lease.renewed', 'revived', 'mcp'],
      ['lease.released', null, 'rest'],
    ]);
    const claimed = events[0]!;
    expect(claimed.nodes).to.deep.equal(['task-l1']);
    expect(claimed.project).to.equal('web');
    expect(claimed.actor).to.deep.include({ person: alice.id, agent: null });
    expect(claimed.payload).to.include({ holder: alice.id, session: 's1', state: 'live', link: '/v1/nodes/task-l1' });
    // the graph side of the claim (the assigned edge) is its own event, from the commit
    const edges = await tenantOf(t).events.read(start, { types: ['edge.*'], node: 'task-l1' });
    expect(edges.map((e) => [e.type, e.payload.type, e.payload.to])).to.deep.include(['edge.added', 'assigned', alice.id]);
  });

  it('an admin force-claim is lease.taken_over naming the previous holder; a batch claim and release yield one event per node', async () => {
    const start = tenantOf(t).events.lastId;
    expect((await post(t, '/v1/nodes/task-l2/claim', bob.token)).status).to.equal(200);
    const forced = await post(t, '/v1/nodes/task-l2/claim', t.adminToken, { force: true });
    expect(forced.status, JSON.stringify(forced.body)).to.equal(200);
    expect((await post(t, '/v1/queue/claim', alice.token, { ids: ['task-l1', 'task-l3'] })).status).to.equal(200);
    expect((await post(t, '/v1/queue/release', alice.token, { ids: ['task-l1', 'task-l3'] })).status).to.equal(200);
    const events = await leaseEvents(start);
    expect(events.map((e) => `${e.type} ${e.nodes[0]}`)).to.deep.equal([
      'lease.claimed task-l2',
      'lease.taken_over task-l2',
      'lease.claimed task-l1',
      'lease.claimed task-l3',
      'lease.released task-l1',
      'lease.released task-l3',
    ]);
    expect(events[1]!.payload).to.include({ holder: t.adminPerson, previous_holder: bob.id });
  });

  it('a lapsed lease is announced once as lease.expired (actor null, via system) by the sweep, without any request', async () => {
    expect((await post(t, '/v1/nodes/task-l3/claim', bob.token)).status).to.equal(200);
    const start = tenantOf(t).events.lastId;
    t.clock.advance(TTL + 1000);
    const expired = await until(async () => (await leaseEvents(start)).find((e) => e.type === 'lease.expired' && e.nodes[0] === 'task-l3'));
    expect(expired.actor).to.deep.equal({ person: null, agent: null, name: 'system', via: 'system' });
    expect(expired.payload).to.include({ holder: bob.id });
    // the next sweeps do not announce it again; a new claim starts over
    await until(async () => ((await leaseEvents(start)).some((e) => e.nodes[0] === 'task-l2') ? true : undefined));
    const seen = tenantOf(t).events.lastId;
    expect(await sweepExpired(tenantOf(t), t.clock.now())).to.equal(0);
    expect((await leaseEvents(seen)).length).to.equal(0);
    expect((await post(t, '/v1/nodes/task-l3/claim', alice.token)).status).to.equal(200);
    const after = await leaseEvents(seen);
    expect(after.map((e) => [e.type, e.payload.previous_holder])).to.deep.equal([['lease.claimed', bob.id]]);
  });

  it('a lease close to its expiry is announced once as lease.expiring; a renewal re-arms the warning', async () => {
    expect((await post(t, '/v1/nodes/task-l1/claim', bob.token)).status).to.equal(200);
    const start = tenantOf(t).events.lastId;
    t.clock.advance(TTL - 2 * 60_000);
    const first = await until(async () => (await leaseEvents(start)).find((e) => e.type === 'lease.expiring' && e.nodes[0] === 'task-l1'));
    expect(first.payload).to.include({ holder: bob.id });
    expect(first.payload.remaining_ms).to.be.at.most(2 * 60_000);
    expect(first.actor).to.deep.include({ via: 'system' });
    const seen = tenantOf(t).events.lastId;
    expect(await sweepExpired(tenantOf(t), t.clock.now())).to.equal(0);
    expect((await post(t, '/v1/nodes/task-l1/renew', bob.token)).status).to.equal(200);
    t.clock.advance(TTL - 60_000);
    const again = await until(async () => (await leaseEvents(seen)).find((e) => e.type === 'lease.expiring' && e.nodes[0] === 'task-l1'));
    expect(again.id).to.be.greaterThan(first.id);
  });
});

describe('events: admin events (audience admins)', function () {
  this.timeout(60_000);
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ plugins: [corePlugin, leasesPlugin, identityPlugin] });
  });
  after(async () => t?.close());
  const log = () => t.server.services.tenants.get(t.org)!.events;

  it('people and tokens: person.created/updated, token.created/revoked, hidden from non-admin readers, never the token', async () => {
    const start = log().lastId;
    const person = await t.api('POST', '/v1/admin/people', { body: { name: 'Dana', email: 'dana@example.test' } });
    expect(person.status, person.text).to.equal(201);
    const minted = await t.api('POST', '/v1/admin/tokens', { body: { person: person.body.id, label: 'ci' } });
    expect(minted.status, minted.text).to.equal(201);
    const grant = await t.api('POST', `/v1/admin/people/${person.body.id}/admin`);
    expect(grant.status, grant.text).to.equal(200);
    const revoke = await t.api('DELETE', `/v1/admin/tokens/${minted.body.hash_prefix}`);
    expect(revoke.status, revoke.text).to.equal(200);

    const admin = await log().read(start, { admin: true, types: ['person.*', 'token.*'] });
    expect(admin.map((e) => e.type)).to.deep.equal(['person.created', 'token.created', 'person.updated', 'token.revoked']);
    expect(admin.every((e) => e.audience === 'admins')).to.equal(true);
    expect(admin[1]!.payload).to.include({ hash_prefix: minted.body.hash_prefix, person: person.body.id, label: 'ci', kind: 'pat' });
    expect(admin[2]!.payload).to.include({ change: 'admin_granted' });
    expect(JSON.stringify(admin)).to.not.include(minted.body.token);
    // a member's view has the graph events of the same changes, not the admin events
    const member = await log().read(start, { types: ['person.*', 'token.*'] });
    expect(member).to.deep.equal([]);
    expect((await log().read(start, { node: person.body.id })).map((e) => e.type)).to.include('node.created');
  });

  it('the operator enabling a plugin or changing a setting: plugin.enabled and settings.changed', async () => {
    const start = log().lastId;
    const dir = join(t.dataDir, 'tenants', t.org);
    const config = Tenant.readConfig(dir);
    await Tenant.writeConfig(dir, { ...config, plugins: [...config.plugins, 'queue'], settings: { ...config.settings, leases: 'strict' } });
    const events = await until(async () => {
      const got = await log().read(start, { admin: true });
      return got.length >= 2 ? got : undefined;
    });
    expect(events.map((e) => [e.type, e.audience])).to.deep.equal([
      ['plugin.enabled', 'admins'],
      ['settings.changed', 'admins'],
    ]);
    expect(events[0]!.payload).to.deep.equal({ plugin: 'queue' });
    expect(events[1]!.payload).to.deep.equal({ changed: { leases: { from: null, to: 'strict' } } });
    expect(events[1]!.actor).to.deep.include({ person: null, via: 'cli' });
  });
});
