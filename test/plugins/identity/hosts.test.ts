import { expect } from 'chai';
import { md, type TestServer } from '../../helpers/harness.js';
import { createAgent, createPerson, expectError, sessionToken, startIdentityServer } from './helpers.js';

const HOUR = 3600_000;

describe('identity: profile-to-host matching (GET /v1/profiles/{id}/hosts)', () => {
  let t: TestServer;
  let ann: { id: string; token: string };
  let ben: { id: string; token: string };
  const publish = async (token: string, agent: string, body: Record<string, unknown>) => {
    const res = await t.api('POST', `/v1/agents/${agent}/capabilities`, { token, body });
    expect(res.status, res.text).to.equal(200);
  };
  const hosts = (query = '', token?: string) => t.api('GET', `/v1/profiles/profile-rust-dev/hosts${query}`, { token });

  before(async () => {
    t = await startIdentityServer();
    ann = await createPerson(t, 'Ann');
    ben = await createPerson(t, 'Ben');
    const profile = md({
      id: 'profile-rust-dev',
      type: 'profile',
      summary: 'Rust development host',
      requires: { harnesses: ['claude-code'], reachable_mcp: ['github'], skills: ['rust'] },
    });
    const task = md({ id: 'task-not-a-profile', type: 'task', summary: 'Not a profile' });
    expect((await t.api('POST', '/v1/nodes', { body: { nodes: [profile, task] } })).status).to.equal(200);
    for (const label of ['Ann Good', 'Ann No Rust', 'Ann Denied', 'Ann Retired']) await createAgent(t, ann.token, label);
    await createAgent(t, ben.token, 'Ben Good');
    await createAgent(t, ben.token, 'Ben Silent'); // never publishes: not a host
    const good = { harnesses: ['claude-code', 'codex'], reachable_mcp: ['github'], skills: ['rust', 'go'] };
    await publish(ann.token, 'agent-ann-good', good);
    t.clock.advance(60_000);
    await publish(ann.token, 'agent-ann-no-rust', { harnesses: ['claude-code'], reachable_mcp: ['github'], skills: ['go'] });
    t.clock.advance(60_000);
    await publish(ann.token, 'agent-ann-denied', { probed: good, deny: ['github'] });
    await publish(ann.token, 'agent-ann-retired', good);
    t.clock.advance(60_000);
    await publish(ben.token, 'agent-ben-good', good);
    const retire = await t.api('POST', '/v1/nodes/agent-ann-retired/status', { token: ann.token, body: { status: 'retired' } });
    expect(retire.status, retire.text).to.equal(200);
  });
  after(async () => t.close());

  it('rule 11: admins see the whole fleet: satisfiable freshest first, unsatisfiable with reasons, counts', async () => {
    const res = await hosts();
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.include.keys('profile', 'satisfiable', 'unsatisfiable', 'counts');
    expect(res.body.profile).to.equal('profile-rust-dev');
    expect(res.body.satisfiable.map((h: any) => h.agent)).to.deep.equal(['agent-ben-good', 'agent-ann-good']);
    const ben0 = res.body.satisfiable[0];
    expect(ben0).to.have.all.keys('agent', 'owner', 'published_at', 'last_seen', 'age_seconds');
    expect(ben0.owner).to.equal(ben.id);
    expect(ben0.age_seconds).to.be.within(0, 5);
    expect(res.body.satisfiable[1].age_seconds).to.be.within(180, 185);
    expect(res.body.unsatisfiable).to.deep.equal([
      {
        agent: 'agent-ann-denied',
        owner: ann.id,
        published_at: res.body.unsatisfiable[0].published_at,
        last_seen: res.body.unsatisfiable[0].last_seen,
        age_seconds: res.body.unsatisfiable[0].age_seconds,
        reasons: ['denied: github'],
      },
      {
        agent: 'agent-ann-no-rust',
        owner: ann.id,
        published_at: res.body.unsatisfiable[1].published_at,
        last_seen: res.body.unsatisfiable[1].last_seen,
        age_seconds: res.body.unsatisfiable[1].age_seconds,
        reasons: ['missing skill: rust'],
      },
    ]);
    expect(res.body.counts).to.deep.equal({ satisfiable: 2, unsatisfiable: 2, total: 4 });
    // the retired agent and the agent that never published are not hosts
    expect(res.text).to.not.contain('agent-ann-retired');
    expect(res.text).to.not.contain('agent-ben-silent');
  });

  it('rule 11: a member sees only their own hosts; owner=me is the same; another person is 403', async () => {
    const own = await hosts('', ann.token);
    expect(own.status).to.equal(200);
    expect(own.body.satisfiable.map((h: any) => h.agent)).to.deep.equal(['agent-ann-good']);
    expect(own.body.unsatisfiable.map((h: any) => h.agent)).to.deep.equal(['agent-ann-denied', 'agent-ann-no-rust']);
    expect((await hosts('?owner=me', ann.token)).body).to.deep.equal(own.body);
    expect((await hosts(`?owner=${ann.id}`, ann.token)).body).to.deep.equal(own.body);
    expectError(await hosts(`?owner=${ben.id}`, ann.token), 403, 'forbidden');
    expectError(await hosts('?owner=person-nobody', ann.token), 403, 'forbidden');
  });

  it("rule 11: admins may scope to any owner; owner=me is the admin's own (empty) fleet", async () => {
    const bens = await hosts(`?owner=${ben.id}`);
    expect(bens.body.satisfiable.map((h: any) => h.agent)).to.deep.equal(['agent-ben-good']);
    expect(bens.body.unsatisfiable).to.deep.equal([]);
    const mine = await hosts('?owner=me');
    expect(mine.body.counts).to.deep.equal({ satisfiable: 0, unsatisfiable: 0, total: 0 });
  });

  it('rule 11: an agent token resolves to its owner (never the whole fleet)', async () => {
    const token = await sessionToken(t, ben.token, 'agent-ben-good');
    const res = await hosts('', token);
    expect(res.status).to.equal(200);
    expect(res.body.satisfiable.map((h: any) => h.agent)).to.deep.equal(['agent-ben-good']);
    expect(res.body.counts.total).to.equal(1);
    expectError(await hosts(`?owner=${ann.id}`, token), 403, 'forbidden');
    // even an admin's agent is scoped to its owner
    const adminAgent = await createAgent(t, t.adminToken, 'Admin Host');
    const adminAgentToken = await sessionToken(t, t.adminToken, adminAgent);
    expect((await hosts('', adminAgentToken)).body.counts.total).to.equal(0);
  });

  it('rule 11: max_age moves hosts last seen earlier into unsatisfiable with a stale reason', async () => {
    t.clock.advance(2 * HOUR);
    const beat = await t.api('POST', '/v1/agents/agent-ben-good/heartbeat', { token: ben.token });
    expect(beat.status).to.equal(200);
    for (const maxAge of ['1h', '30m', String(HOUR)]) {
      const res = await hosts(`?max_age=${maxAge}`);
      expect(res.status, res.text).to.equal(200);
      expect(res.body.satisfiable.map((h: any) => h.agent)).to.deep.equal(['agent-ben-good']);
      const annGood = res.body.unsatisfiable.find((h: any) => h.agent === 'agent-ann-good');
      expect(annGood.reasons).to.deep.equal(['stale: last seen 2h ago']);
      const denied = res.body.unsatisfiable.find((h: any) => h.agent === 'agent-ann-denied');
      expect(denied.reasons).to.deep.equal(['denied: github', 'stale: last seen 2h ago']);
    }
    for (const maxAge of ['12h', '7d', String(3 * HOUR)]) {
      const res = await hosts(`?max_age=${maxAge}`);
      expect(res.body.satisfiable.map((h: any) => h.agent)).to.deep.equal(['agent-ben-good', 'agent-ann-good']);
    }
  });

  it('rule 11: unknown or non-profile id 404; malformed id, bad max_age or bad owner 422', async () => {
    expectError(await t.api('GET', '/v1/profiles/profile-nope/hosts'), 404, 'not_found');
    expectError(await t.api('GET', '/v1/profiles/task-not-a-profile/hosts'), 404, 'not_found');
    expectError(await t.api('GET', '/v1/profiles/Bad_Profile/hosts'), 422);
    for (const maxAge of ['abc', '-5', '0', '5w', '1.5h', '30 m'])
      expectError(await hosts(`?max_age=${encodeURIComponent(maxAge)}`), 422, 'validation_failed');
    for (const owner of ['someone', 'task-x', 'Person-X']) expectError(await hosts(`?owner=${owner}`), 422, 'validation_failed');
  });
});
