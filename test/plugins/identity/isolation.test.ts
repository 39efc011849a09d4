import { expect } from 'chai';
import { hashPrefix, hashToken } from '../../../kernel/auth.js';
import { md, type TestServer } from '../../helpers/harness.js';
import { createAgent, createPerson, expectError, plugins, sessionToken, standingToken, startIdentityServer } from './helpers.js';

/**
 * Two tenants on one server. Nothing a member or admin of one can reach through any
 * identity route lets them see or change the other's tokens, people, agents or
 * capabilities: a foreign id answers 404 exactly like an unknown one.
 */
describe('identity: tenant isolation', () => {
  let t: TestServer;
  let otherAdmin: string;
  let mine: { member: { id: string; token: string }; agent: string; standing: { token: string; hash_prefix: string } };
  let theirs: {
    member: { id: string; token: string };
    agent: string;
    standing: { token: string; hash_prefix: string };
    pat: { token: string; hash_prefix: string };
  };

  before(async () => {
    t = await startIdentityServer();
    const created = await t.server.services.tenants.create({
      org: 'other',
      adminEmail: 'boss@other.test',
      adminName: 'Other Boss',
      plugins: plugins.map((p) => p.name),
    });
    await t.server.services.tenants.scan();
    otherAdmin = created.token;

    const m = await createPerson(t, 'Mine Member');
    const mAgent = await createAgent(t, m.token, 'Shared Label');
    mine = { member: m, agent: mAgent, standing: await standingToken(t, m.token, mAgent) };

    const o = await createPerson(t, 'Their Member', { adminToken: otherAdmin });
    const oAgent = await createAgent(t, o.token, 'Their Only Bot');
    const pat = await t.api('POST', '/v1/me/tokens', { token: o.token, body: { label: 'theirs' } });
    theirs = {
      member: o,
      agent: oAgent,
      standing: await standingToken(t, o.token, oAgent),
      pat: { token: pat.body.token, hash_prefix: pat.body.hash_prefix },
    };
    const caps = await t.api('POST', `/v1/agents/${oAgent}/capabilities`, {
      token: o.token,
      body: { harnesses: ['codex'], skills: ['rust'] },
    });
    expect(caps.status).to.equal(200);
    const profile = md({ id: 'profile-theirs', type: 'profile', summary: 'Their profile', requires: { skills: ['rust'] } });
    expect((await t.api('POST', '/v1/nodes', { token: otherAdmin, body: { nodes: [profile] } })).status).to.equal(200);
  });
  after(async () => t.close());

  it('each token authenticates in its own tenant only', async () => {
    expect((await t.api('GET', '/v1/me', { token: theirs.member.token })).body.org).to.equal('other');
    expect((await t.api('GET', '/v1/me', { token: mine.member.token })).body.org).to.equal('local');
    expect((await t.api('GET', '/v1/me', { token: otherAdmin })).body).to.include({ org: 'other', is_admin: true });
  });

  it('tokens: foreign prefixes are 404 on every revoke route and never listed; the foreign tokens keep working', async () => {
    const teamMine = await t.api('GET', '/v1/admin/tokens');
    const listed = teamMine.body.tokens.map((x: any) => x.hash_prefix);
    for (const p of [theirs.pat.hash_prefix, theirs.standing.hash_prefix, hashPrefix(hashToken(otherAdmin))])
      expect(listed).to.not.include(p);
    expect(listed).to.include(mine.standing.hash_prefix);
    const teamTheirs = (await t.api('GET', '/v1/admin/tokens', { token: otherAdmin })).body.tokens.map((x: any) => x.hash_prefix);
    expect(teamTheirs).to.include(theirs.pat.hash_prefix);
    expect(teamTheirs).to.not.include(mine.standing.hash_prefix);
    expect(teamTheirs).to.not.include(hashPrefix(hashToken(t.adminToken)));

    expectError(await t.api('DELETE', `/v1/admin/tokens/${theirs.pat.hash_prefix}`), 404);
    expectError(await t.api('DELETE', `/v1/admin/tokens/${theirs.standing.hash_prefix}`), 404);
    expectError(await t.api('DELETE', `/v1/me/tokens/${theirs.pat.hash_prefix}`, { token: mine.member.token }), 404);
    expectError(await t.api('DELETE', `/v1/admin/tokens/${mine.standing.hash_prefix}`, { token: otherAdmin }), 404);
    for (const token of [theirs.pat.token, theirs.standing.token, mine.standing.token])
      expect((await t.api('GET', '/v1/me', { token })).status).to.equal(200);
  });

  it('people: foreign people are not listed, cannot be offboarded, minted for or given agents (404)', async () => {
    const people = (await t.api('GET', '/v1/admin/people')).body.people.map((p: any) => p.id);
    expect(people).to.include(mine.member.id);
    expect(people).to.not.include(theirs.member.id);
    expectError(await t.api('DELETE', `/v1/admin/people/${theirs.member.id}`), 404, 'not_found');
    expectError(await t.api('POST', '/v1/admin/tokens', { body: { person: theirs.member.id } }), 404);
    expectError(await t.api('POST', '/v1/admin/agents', { body: { label: 'Planted', owner: theirs.member.id } }), 404);
    expectError(await t.api('GET', `/v1/nodes/${theirs.member.id}`), 404);
    expect((await t.api('GET', '/v1/me', { token: theirs.member.token })).status).to.equal(200);
  });

  it('people: the same email in both tenants is the same person id, yet offboarding in one leaves the other alone', async () => {
    const here = await createPerson(t, 'Shared Person', { email: 'shared@example.test' });
    const there = await createPerson(t, 'Shared Person', { email: 'shared@example.test', adminToken: otherAdmin });
    expect(here.id).to.equal(there.id);
    const res = await t.api('DELETE', `/v1/admin/people/${here.id}`);
    expect(res.body.tokens_revoked).to.equal(1);
    expectError(await t.api('GET', '/v1/me', { token: here.token }), 401);
    expect((await t.api('GET', '/v1/me', { token: there.token })).body).to.include({ org: 'other', person: there.id });
  });

  it('agents: foreign agents are not listed and every agent route answers 404 for them', async () => {
    const all = (await t.api('GET', '/v1/agents?all=1')).body.agents.map((a: any) => a.id);
    expect(all).to.include(mine.agent);
    expect(all).to.not.include(theirs.agent);
    const a = theirs.agent;
    const probes: Array<[string, string, unknown]> = [
      ['POST', `/v1/agents/${a}/token`, {}],
      ['POST', `/v1/agents/${a}/token`, { standing: true }],
      ['GET', `/v1/agents/${a}/tokens`, undefined],
      ['DELETE', `/v1/agents/${a}/tokens/${theirs.standing.hash_prefix}`, undefined],
      ['POST', `/v1/agents/${a}/capabilities`, { skills: ['hijack'] }],
      ['GET', `/v1/agents/${a}/capabilities`, undefined],
      ['POST', `/v1/agents/${a}/heartbeat`, undefined],
    ];
    for (const token of [t.adminToken, mine.member.token]) {
      for (const [method, path, body] of probes) expectError(await t.api(method, path, { token, body }), 404, 'not_found');
    }
    // an agent token of one tenant cannot publish for the other's agent either
    const ast = await sessionToken(t, mine.member.token, mine.agent);
    expectError(await t.api('POST', `/v1/agents/${a}/capabilities`, { token: ast, body: {} }), 404);
    // nothing changed over there
    const caps = await t.api('GET', `/v1/agents/${a}/capabilities`, { token: theirs.member.token });
    expect(caps.body.capabilities.skills).to.deep.equal(['rust']);
    expect((await t.api('GET', `/v1/agents/${a}/tokens`, { token: theirs.member.token })).body.count).to.equal(1);
  });

  it('agents: the same derived id exists independently in both tenants, with separate capabilities', async () => {
    const twin = await createAgent(t, theirs.member.token, 'Shared Label');
    expect(twin).to.equal(mine.agent);
    await t.api('POST', `/v1/agents/${twin}/capabilities`, { token: theirs.member.token, body: { skills: ['theirs-only'] } });
    expectError(await t.api('GET', `/v1/agents/${mine.agent}/capabilities`, { token: mine.member.token }), 404);
    await t.api('POST', `/v1/agents/${mine.agent}/capabilities`, { token: mine.member.token, body: { skills: ['mine-only'] } });
    expect((await t.api('GET', `/v1/agents/${twin}/capabilities`, { token: theirs.member.token })).body.capabilities.skills).to.deep.equal([
      'theirs-only',
    ]);
    expect(
      (await t.api('GET', `/v1/agents/${mine.agent}/capabilities`, { token: mine.member.token })).body.capabilities.skills,
    ).to.deep.equal(['mine-only']);
    // and the owner listing of each tenant shows its own twin
    expect((await t.api('GET', '/v1/agents', { token: theirs.member.token })).body.agents.find((x: any) => x.id === twin).spiffe).to.equal(
      `spiffe://other/agent/${twin}`,
    );
    expect((await t.api('GET', '/v1/agents', { token: mine.member.token })).body.agents.find((x: any) => x.id === twin).spiffe).to.equal(
      `spiffe://local/agent/${twin}`,
    );
  });

  it('capabilities: host matching never crosses tenants; a foreign profile is 404', async () => {
    expectError(await t.api('GET', '/v1/profiles/profile-theirs/hosts'), 404, 'not_found');
    const there = await t.api('GET', '/v1/profiles/profile-theirs/hosts', { token: otherAdmin });
    expect(there.status).to.equal(200);
    const agents = [...there.body.satisfiable, ...there.body.unsatisfiable].map((h: any) => h.agent);
    expect(there.body.satisfiable.map((h: any) => h.agent)).to.deep.equal([theirs.agent]);
    // the id both tenants have appears once, with the other tenant's owner and published map
    expect(agents.filter((a) => a === mine.agent)).to.have.length(1);
    const twin = [...there.body.unsatisfiable].find((h: any) => h.agent === mine.agent);
    expect(twin.owner).to.equal(theirs.member.id);
    expect(twin.reasons).to.deep.equal(['missing skill: rust']);
  });
});
