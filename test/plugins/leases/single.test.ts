/**
 * docs/spec.md "States and transitions / Lease", single routes: every row of the lease table, the
 * response shapes, the config-driven TTL / max TTL / grace window, and bad input.
 */
import { expect } from 'chai';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import {
  agentToken,
  assignees,
  DAY,
  freezeClock,
  GRACE,
  MAX_TTL,
  MIN,
  nodeOf,
  post,
  startLeaseServer,
  tasks,
  TTL,
  unboundToken,
} from './helpers.js';
import { onPostgres } from '../../helpers/harness.js';
import { until } from '../../helpers/until.js';

describe('leases: single routes (docs/spec.md lease table)', function () {
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
    await tasks(t, [
      'task-a',
      'task-b',
      'task-c',
      'task-d',
      'task-e',
      'task-f',
      'task-g',
      'task-h',
      'task-i',
      'task-done',
      'spec-x',
      'issue-a',
      'dec-a',
    ]);
    expect((await t.api('POST', '/v1/nodes/task-done/status', { body: { status: 'done' } })).status).to.equal(200);
    unfreeze = freezeClock(t.clock);
  });
  after(async () => {
    unfreeze();
    await t.close();
  });

  it('none -> claim: lease created, assigned edge written once, response {ok, status, lease, edge}', async () => {
    const now = t.clock.now();
    const res = await post(t, '/v1/nodes/task-a/claim', alice.token, {});
    expect(res.status, res.text).to.equal(200);
    expect(Object.keys(res.body)).to.deep.equal(['ok', 'status', 'lease', 'edge']);
    expect(res.body.ok).to.equal(true);
    expect(res.body.status).to.equal('claimed');
    const lease = res.body.lease;
    expect(Object.keys(lease)).to.include.members(['node_id', 'by', 'expires', 'expires_at', 'session', 'claimed_at']);
    expect(lease).to.include({ node_id: 'task-a', by: alice.id, session: null, agent: null, state: 'live' });
    expect(lease.expires).to.equal(now + TTL);
    expect(lease.expires_at).to.equal(new Date(now + TTL).toISOString());
    expect(lease.claimed_at).to.equal(new Date(now).toISOString());
    const node = await nodeOf(t, 'task-a');
    expect(res.body.edge).to.deep.equal({ type: 'assigned', from: 'task-a', to: alice.id, status: 'created', revision: node.revision });
    expect(await assignees(t, 'task-a')).to.deep.equal([alice.id]);
    // the lease bookkeeping commit keeps the node's author (internal write)
    expect(node.frontmatter.author).to.equal(t.adminPerson);
  });

  it('none -> claim while another holds a live lease: 409 conflict naming holder and expiry', async () => {
    const mine = await post(t, '/v1/nodes/task-a/renew', alice.token, {});
    const res = await post(t, '/v1/nodes/task-a/claim', bob.token, {});
    expect(res.status).to.equal(409);
    expect(res.body.error.code).to.equal('conflict');
    expect(res.body.error.details).to.include({ node_id: 'task-a', holder: alice.id, expires_at: mine.body.expires_at });
    expect(res.body.error.message).to.include(alice.id).and.to.include(mine.body.expires_at);
    expect(await assignees(t, 'task-a')).to.deep.equal([alice.id]);
  });

  it('live (own) -> claim again: renews only (no graph commit)', async () => {
    const before = await nodeOf(t, 'task-a');
    t.clock.advance(10 * MIN);
    const res = await post(t, '/v1/nodes/task-a/claim', alice.token, {});
    expect(res.status).to.equal(200);
    expect(res.body.status).to.equal('renewed');
    expect(res.body.lease.expires).to.equal(t.clock.now() + TTL);
    expect(res.body.edge).to.include({ status: 'skipped', to: alice.id, revision: before.revision });
    expect((await nodeOf(t, 'task-a')).revision).to.equal(before.revision);
    expect(await assignees(t, 'task-a')).to.deep.equal([alice.id]);
  });

  it('live -> renew: expiry bumped, no graph commit; a supplied session binds the lease to that run', async () => {
    const before = await nodeOf(t, 'task-a');
    t.clock.advance(5 * MIN);
    const res = await post(t, '/v1/nodes/task-a/renew', alice.token, { session: 'run-1' });
    expect(res.status, res.text).to.equal(200);
    expect(Object.keys(res.body)).to.include.members(['node_id', 'by', 'expires', 'expires_at', 'session', 'claimed_at']);
    expect(res.body).to.include({ node_id: 'task-a', by: alice.id, session: 'run-1', expires: t.clock.now() + TTL });
    expect((await nodeOf(t, 'task-a')).revision).to.equal(before.revision);
    // bound: another run of the same person has lost it, the person itself still owns it
    const other = await post(t, '/v1/nodes/task-a/renew', alice.token, { session: 'run-2' });
    expect(other.status).to.equal(409);
    expect(other.body.error.code).to.equal('lease_lost');
    expect(other.body.error.details).to.include({ holder: alice.id, session: 'run-1' });
    const person = await post(t, '/v1/nodes/task-a/renew', alice.token);
    expect(person.status).to.equal(200);
    expect(person.body.session).to.equal('run-1');
    expect(person.body.claimed_at).to.equal(res.body.claimed_at);
  });

  it('live -> extend {ms}: stretched, capped at the max claim TTL (capped_to_max), never shortened', async () => {
    const claim = await post(t, '/v1/nodes/task-b/claim', alice.token);
    const start = claim.body.lease.expires;
    const res = await post(t, '/v1/nodes/task-b/extend', alice.token, { ms: 20 * MIN });
    expect(res.status, res.text).to.equal(200);
    expect(Object.keys(res.body)).to.deep.equal(['ok', 'status', 'lease']);
    expect(res.body).to.include({ ok: true, status: 'extended' });
    expect(res.body.lease.expires).to.equal(start + 20 * MIN);
    const capped = await post(t, '/v1/nodes/task-b/extend', alice.token, { ms: 3 * DAY });
    expect(capped.body).to.include({ capped_to_max: true, claim_ttl_max_ms: MAX_TTL });
    expect(capped.body.lease.expires).to.equal(t.clock.now() + MAX_TTL);
    // never shortened: a later renew (now + TTL) keeps the longer expiry
    const renewed = await post(t, '/v1/nodes/task-b/renew', alice.token);
    expect(renewed.body.expires).to.equal(t.clock.now() + MAX_TTL);
    t.clock.advance(HOURS(1));
    const again = await post(t, '/v1/nodes/task-b/extend', alice.token, { ms: 1 });
    expect(again.body.lease.expires).to.equal(capped.body.lease.expires + 1);
    expect(again.body.capped_to_max).to.equal(undefined);
    for (const ms of [0, -5, 'abc', null, Number.MAX_VALUE * 10]) {
      const bad = await post(t, '/v1/nodes/task-b/extend', alice.token, { ms });
      expect(bad.status, String(ms)).to.equal(422);
    }
    expect((await post(t, '/v1/nodes/task-b/extend', alice.token, {})).status).to.equal(422);
  });

  it('live -> reserve: reserved for the grace window, assigned edge kept', async () => {
    const before = await nodeOf(t, 'task-b');
    const res = await post(t, '/v1/nodes/task-b/reserve', alice.token);
    expect(res.status, res.text).to.equal(200);
    expect(Object.keys(res.body)).to.deep.equal(['ok', 'status', 'lease', 'grace_window_ms']);
    expect(res.body).to.include({ ok: true, status: 'reserved', grace_window_ms: GRACE });
    expect(res.body.lease).to.include({ state: 'reserved', expires: t.clock.now() + GRACE });
    expect(await assignees(t, 'task-b')).to.deep.equal([alice.id]);
    expect((await nodeOf(t, 'task-b')).revision).to.equal(before.revision);
    // reserved is still held: others are refused
    const bobClaim = await post(t, '/v1/nodes/task-b/claim', bob.token);
    expect(bobClaim.status).to.equal(409);
    expect(bobClaim.body.error.details).to.include({ holder: alice.id, state: 'reserved' });
  });

  it('reserved -> claim, renew or extend by the owner: a fresh live heartbeat lease', async () => {
    const renew = await post(t, '/v1/nodes/task-b/renew', alice.token);
    expect(renew.body).to.include({ state: 'live', expires: t.clock.now() + TTL });
    await post(t, '/v1/nodes/task-b/reserve', alice.token);
    const claim = await post(t, '/v1/nodes/task-b/claim', alice.token);
    expect(claim.body.status).to.equal('renewed');
    expect(claim.body.lease).to.include({ state: 'live', expires: t.clock.now() + TTL });
    await post(t, '/v1/nodes/task-b/reserve', alice.token);
    const extend = await post(t, '/v1/nodes/task-b/extend', alice.token, { ms: MIN });
    expect(extend.body.lease).to.include({ state: 'live', expires: t.clock.now() + TTL + MIN });
  });

  it('reserved -> grace window passes: back to the pool, another person may claim', async () => {
    await post(t, '/v1/nodes/task-c/claim', alice.token);
    await post(t, '/v1/nodes/task-c/reserve', alice.token);
    t.clock.advance(GRACE - 1000);
    expect((await post(t, '/v1/nodes/task-c/claim', bob.token)).status).to.equal(409);
    t.clock.advance(1000);
    const res = await post(t, '/v1/nodes/task-c/claim', bob.token);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.status).to.equal('claimed');
    // the lapsed holder's edge is retired by the takeover, the new holder's written
    expect(await assignees(t, 'task-c')).to.deep.equal([bob.id]);
    const lost = await post(t, '/v1/nodes/task-c/renew', alice.token);
    expect(lost.status).to.equal(409);
    expect(lost.body.error.code).to.equal('lease_lost');
    expect(lost.body.error.details.holder).to.equal(bob.id);
  });

  it('live or reserved -> release by the holder: lease dropped, assigned edge retired', async () => {
    const claim = await post(t, '/v1/nodes/task-d/claim', alice.token);
    const res = await post(t, '/v1/nodes/task-d/release', alice.token);
    expect(res.status, res.text).to.equal(200);
    expect(Object.keys(res.body)).to.deep.equal(['ok', 'status', 'node_id', 'lease', 'edge']);
    expect(res.body).to.include({ ok: true, status: 'released', node_id: 'task-d' });
    expect(res.body.lease).to.deep.equal(claim.body.lease);
    const node = await nodeOf(t, 'task-d');
    expect(res.body.edge).to.deep.equal({ type: 'assigned', from: 'task-d', to: alice.id, status: 'deleted', revision: node.revision });
    expect(await assignees(t, 'task-d')).to.deep.equal([]);
    expect((await post(t, '/v1/nodes/task-d/claim', bob.token)).status).to.equal(200);
    // a reservation releases the same way
    await post(t, '/v1/nodes/task-e/claim', alice.token);
    await post(t, '/v1/nodes/task-e/reserve', alice.token);
    const rel = await post(t, '/v1/nodes/task-e/release', alice.token);
    expect(rel.body.lease.state).to.equal('reserved');
    expect(await assignees(t, 'task-e')).to.deep.equal([]);
  });

  it('none -> release: still succeeds and removes a lingering own assigned edge', async () => {
    const add = await t.api('POST', '/v1/nodes/task-f/edges', { token: alice.token, body: { type: 'assigned', to: alice.id } });
    expect(add.status, add.text).to.equal(200);
    const add2 = await t.api('POST', '/v1/nodes/task-f/edges', { token: alice.token, body: { type: 'assigned', to: carol.id } });
    expect(add2.status).to.equal(200);
    const res = await post(t, '/v1/nodes/task-f/release', alice.token);
    expect(res.status).to.equal(200);
    expect(res.body.lease).to.equal(null);
    expect(res.body.edge.status).to.equal('deleted');
    expect(await assignees(t, 'task-f')).to.deep.equal([carol.id]);
    const again = await post(t, '/v1/nodes/task-f/release', alice.token);
    expect(again.status).to.equal(200);
    expect(again.body).to.deep.equal({ ok: true, status: 'released', node_id: 'task-f', lease: null, edge: null });
  });

  it("live (other's) -> release: 409 naming the holder, nothing changes", async () => {
    await post(t, '/v1/nodes/task-g/claim', alice.token);
    const res = await post(t, '/v1/nodes/task-g/release', bob.token);
    expect(res.status).to.equal(409);
    expect(res.body.error.code).to.equal('conflict');
    expect(res.body.error.details.holder).to.equal(alice.id);
    expect(await assignees(t, 'task-g')).to.deep.equal([alice.id]);
    expect((await post(t, '/v1/nodes/task-g/renew', alice.token)).status).to.equal(200);
  });

  it('live -> heartbeat absent until expiry: lapsed; renew/extend/reserve fail 409 lease_lost naming the current holder', async () => {
    const claim = await post(t, '/v1/nodes/task-h/claim', alice.token);
    t.clock.advance(TTL - 1);
    expect((await post(t, '/v1/nodes/task-h/claim', carol.token)).status).to.equal(409);
    t.clock.advance(1);
    for (const verb of ['renew', 'extend', 'reserve']) {
      const res = await post(t, `/v1/nodes/task-h/${verb}`, alice.token, verb === 'extend' ? { ms: MIN } : {});
      expect(res.status, verb).to.equal(409);
      expect(res.body.error.code).to.equal('lease_lost');
      expect(res.body.error.details.holder).to.equal(null);
      expect(res.body.error.message).to.include(claim.body.lease.expires_at);
    }
    expect((await post(t, '/v1/nodes/task-h/claim', carol.token)).status).to.equal(200);
    for (const verb of ['renew', 'extend', 'reserve']) {
      const res = await post(t, `/v1/nodes/task-h/${verb}`, alice.token, verb === 'extend' ? { ms: MIN } : {});
      expect(res.status).to.equal(409);
      expect(res.body.error.code).to.equal('lease_lost');
      expect(res.body.error.details.holder, verb).to.equal(carol.id);
    }
    expect(await assignees(t, 'task-h')).to.deep.equal([carol.id]);
  });

  it('renew/extend/reserve of a node never claimed: 409 lease_lost with no holder', async () => {
    for (const verb of ['renew', 'extend', 'reserve']) {
      const res = await post(t, `/v1/nodes/task-i/${verb}`, bob.token, verb === 'extend' ? { ms: MIN } : {});
      expect(res.status).to.equal(409);
      expect(res.body.error).to.include({ code: 'lease_lost' });
      expect(res.body.error.details).to.include({ node_id: 'task-i', holder: null });
    }
  });

  it('claims are for work nodes only, by a bound identity, with well-formed input', async () => {
    const cases: Array<[string, string, unknown, number, string]> = [
      ['/v1/nodes/Bad_Id/claim', alice.token, {}, 422, 'validation_failed'],
      ['/v1/nodes/task-nope/claim', alice.token, {}, 404, 'not_found'],
      ['/v1/nodes/spec-x/claim', alice.token, {}, 422, 'validation_failed'],
      ['/v1/nodes/proj-root/claim', alice.token, {}, 422, 'validation_failed'],
      ['/v1/nodes/task-done/claim', alice.token, {}, 409, 'conflict'],
      ['/v1/nodes/task-i/claim', alice.token, { session: 'bad session!' }, 422, 'validation_failed'],
      ['/v1/nodes/task-i/claim', alice.token, [1, 2], 422, 'validation_failed'],
      ['/v1/nodes/task-i/claim', alice.token, { force: 'yes' }, 422, 'validation_failed'],
      ['/v1/nodes/task-i/claim', alice.token, { force: true }, 403, 'forbidden'],
      ['/v1/nodes/task-i/claim', await unboundToken(t), {}, 403, 'no_person'],
      ['/v1/nodes/spec-x/release', alice.token, {}, 422, 'validation_failed'],
      ['/v1/nodes/task-nope/renew', alice.token, {}, 404, 'not_found'],
    ];
    for (const [path, token, body, status, code] of cases) {
      const res = await post(t, path, token, body);
      expect(res.status, `${path} ${JSON.stringify(body)}: ${res.text}`).to.equal(status);
      expect(res.body.error.code, path).to.equal(code);
    }
    expect(await assignees(t, 'task-i')).to.deep.equal([]);
    // issues are work nodes too; decisions are queueable and claimable
    expect((await post(t, '/v1/nodes/issue-a/claim', alice.token)).status).to.equal(200);
    expect((await post(t, '/v1/nodes/dec-a/claim', alice.token)).status).to.equal(200);
  });

  it('admin force takes over a live lease and names the previous holder; nonce is echoed', async () => {
    await post(t, '/v1/nodes/task-i/claim', bob.token, { nonce: 'n-1' }).then((r) => expect(r.body.nonce).to.equal('n-1'));
    const res = await post(t, '/v1/nodes/task-i/claim', t.adminToken, { force: true });
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.include({ status: 'claimed', previous_holder: bob.id });
    expect(await assignees(t, 'task-i')).to.deep.equal([t.adminPerson]);
    expect((await post(t, '/v1/nodes/task-i/renew', bob.token)).body.error.details.holder).to.equal(t.adminPerson);
  });

  // edits tenant.json (cluster mode keeps settings in wg_tenants: test/cluster)
  (onPostgres ? it.skip : it)("claim TTL, its maximum and the grace window come from the tenant's config (tenant.json)", async () => {
    const file = join(t.dataDir, 'tenants', t.org, 'tenant.json');
    const original = readFileSync(file, 'utf8');
    const tenant = t.server.services.tenants.get(t.org)!;
    const config = JSON.parse(original);
    config.limits = { ...config.limits, claim_ttl_ms: 5 * MIN, claim_ttl_max_ms: 20 * MIN, grace_window_ms: HOURS(3) };
    writeFileSync(file, JSON.stringify(config));
    try {
      await until(() => tenant.config.limits.claim_ttl_ms === 5 * MIN, 'the edited limits to be read');
      await tasks(t, ['task-cfg']);
      const claim = await post(t, '/v1/nodes/task-cfg/claim', bob.token);
      expect(claim.body.lease.expires).to.equal(t.clock.now() + 5 * MIN);
      const extend = await post(t, '/v1/nodes/task-cfg/extend', bob.token, { ms: HOURS(1) });
      expect(extend.body).to.include({ capped_to_max: true, claim_ttl_max_ms: 20 * MIN });
      expect(extend.body.lease.expires).to.equal(t.clock.now() + 20 * MIN);
      const reserve = await post(t, '/v1/nodes/task-cfg/reserve', bob.token);
      expect(reserve.body.grace_window_ms).to.equal(HOURS(3));
      expect(reserve.body.lease.expires).to.equal(t.clock.now() + HOURS(3));
    } finally {
      writeFileSync(file, original);
      await until(() => tenant.config.limits.claim_ttl_ms === TTL, 'the original limits to be read again');
    }
    expect(tenant.config.limits.claim_ttl_ms).to.equal(TTL);
  });

  it('agent tokens: the lease is the owner person, with the agent and its session; other runs are other holders', async () => {
    const run1 = await agentToken(t, carol.id, 'agent-carol-bot', 'run-a');
    const run2 = await agentToken(t, carol.id, 'agent-carol-bot', 'run-b');
    await tasks(t, ['task-agent']);
    const res = await post(t, '/v1/nodes/task-agent/claim', run1);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.lease).to.include({ by: carol.id, agent: 'agent-carol-bot', session: 'run-a' });
    expect(await assignees(t, 'task-agent')).to.deep.equal([carol.id]);
    const other = await post(t, '/v1/nodes/task-agent/claim', run2);
    expect(other.status).to.equal(409);
    expect(other.body.error.details).to.include({ holder: carol.id, session: 'run-a' });
    const mismatch = await post(t, '/v1/nodes/task-agent/renew', run1, { session: 'run-z' });
    expect(mismatch.status).to.equal(409);
    expect(mismatch.body.error.code).to.equal('conflict');
    // the person itself (no session) still owns its run's lease
    expect((await post(t, '/v1/nodes/task-agent/renew', carol.token)).status).to.equal(200);
  });
});

function HOURS(n: number): number {
  return n * 60 * MIN;
}
