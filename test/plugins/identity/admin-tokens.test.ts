import { expect } from 'chai';
import { generateToken, hashPrefix, hashToken, newTokenRecord } from '../../../kernel/auth.js';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { createAgent, createPerson, DAY_MS, expectError, oauthGrant, sessionToken, standingToken, startIdentityServer } from './helpers.js';

/** Two well-formed tokens whose hashes share their first 8 hex characters (a birthday search, ~65k hashes). */
function collidingTokens(): [string, string, string] {
  const seen = new Map<string, string>();
  for (;;) {
    const token = generateToken('pat');
    const prefix = hashToken(token).slice(0, 8);
    const other = seen.get(prefix);
    if (other) return [other, token, prefix];
    seen.set(prefix, token);
  }
}

describe('identity: team tokens (GET/POST /v1/admin/tokens, DELETE /v1/admin/tokens/{prefix})', () => {
  let t: TestServer;
  let member: { id: string; token: string; email: string };
  before(async () => {
    t = await startIdentityServer();
    member = await createPerson(t, 'Member');
  });
  after(async () => t.close());

  it('Authentication 5: admin routes need the stewards-to-root edge; others get 403', async () => {
    expectError(await t.api('GET', '/v1/admin/tokens', { token: member.token }), 403, 'forbidden');
    expectError(await t.api('POST', '/v1/admin/tokens', { token: member.token, body: { person: member.id } }), 403, 'forbidden');
    expectError(await t.api('DELETE', '/v1/admin/tokens/0123456789ab', { token: member.token }), 403, 'forbidden');
    expectError(await t.api('GET', '/v1/admin/people', { token: member.token }), 403, 'forbidden');
    expectError(
      await t.api('POST', '/v1/admin/people', { token: member.token, body: { name: 'X', email: 'x@example.test' } }),
      403,
      'forbidden',
    );
    expectError(await t.api('DELETE', `/v1/admin/people/${member.id}`, { token: member.token }), 403, 'forbidden');
    expectError(await t.api('POST', '/v1/admin/agents', { token: member.token, body: { label: 'x' } }), 403, 'forbidden');
    expect((await t.api('GET', '/v1/me', { token: member.token })).body.is_admin).to.equal(false);
    // a second person with the stewards edge to proj-root is an admin too
    const second = await addPerson(t, 'Second Admin', { admin: true });
    expect((await t.api('GET', '/v1/me', { token: second.token })).body.is_admin).to.equal(true);
    expect((await t.api('GET', '/v1/admin/tokens', { token: second.token })).status).to.equal(200);
  });

  it("an admin's agent token does not carry admin rights (403)", async () => {
    const agent = await createAgent(t, t.adminToken, 'Admin Helper');
    const ast = await sessionToken(t, t.adminToken, agent);
    const standing = await standingToken(t, t.adminToken, agent);
    for (const token of [ast, standing.token]) {
      expect((await t.api('GET', '/v1/me', { token })).body.is_admin).to.equal(true);
      expectError(await t.api('GET', '/v1/admin/tokens', { token }), 403, 'forbidden');
      expectError(await t.api('POST', '/v1/admin/tokens', { token, body: { person: member.id } }), 403, 'forbidden');
      expectError(await t.api('GET', '/v1/admin/people', { token }), 403, 'forbidden');
    }
  });

  it('rule 3: admin mint binds to an existing person node and returns the plaintext once', async () => {
    const res = await t.api('POST', '/v1/admin/tokens', { body: { person: member.id, expires: '10d' } });
    expect(res.status, res.text).to.equal(201);
    expect(res.body).to.have.all.keys('token', 'hash_prefix', 'person', 'name', 'email', 'expires');
    expect(res.body).to.include({
      person: member.id,
      name: 'Member',
      email: member.email,
      hash_prefix: hashPrefix(hashToken(res.body.token)),
    });
    expect(Date.parse(res.body.expires) - t.clock.now()).to.be.within(10 * DAY_MS - 5000, 10 * DAY_MS + 5000);
    const me = await t.api('GET', '/v1/me', { token: res.body.token });
    expect(me.body).to.include({ person: member.id, bound: true });
    // the member sees it in their own listing, without plaintext
    const own = await t.api('GET', '/v1/me/tokens', { token: member.token });
    expect(own.body.tokens.map((x: any) => x.hash_prefix)).to.include(res.body.hash_prefix);
    expect(own.text).to.not.contain(res.body.token);
  });

  it('rule 3 / Authentication 9: minting for an unknown person is 404 and creates no person', async () => {
    const before = (await t.api('GET', '/v1/admin/people')).body.count;
    expectError(await t.api('POST', '/v1/admin/tokens', { body: { person: 'person-ghost' } }), 404, 'not_found');
    expectError(await t.api('GET', '/v1/nodes/person-ghost'), 404);
    expect((await t.api('GET', '/v1/admin/people')).body.count).to.equal(before);
    expectError(await t.api('POST', '/v1/admin/tokens', { body: {} }), 422);
    expectError(await t.api('POST', '/v1/admin/tokens', { body: { person: 'Person_X' } }), 422);
    expectError(await t.api('POST', '/v1/admin/tokens', { body: { person: 'proj-root' } }), 422);
    expectError(await t.api('POST', '/v1/admin/tokens', { body: { person: member.id, expires: '400d' } }), 422);
    expectError(await t.api('POST', '/v1/admin/tokens', { body: { person: member.id, expires: '2000-01-01' } }), 422);
  });

  it('team listing: every live PAT and standing agent token, without label, plaintext or session tokens', async () => {
    const labelled = await t.api('POST', '/v1/me/tokens', { token: member.token, body: { label: 'secret-label' } });
    const agent = await createAgent(t, member.token, 'Member Bot');
    const ast = await sessionToken(t, member.token, agent);
    const standing = await standingToken(t, member.token, agent, { label: 'standing-label' });
    const res = await t.api('GET', '/v1/admin/tokens');
    expect(res.status).to.equal(200);
    expect(res.body.count).to.equal(res.body.tokens.length);
    const prefixes = res.body.tokens.map((x: any) => x.hash_prefix);
    expect(prefixes).to.include(labelled.body.hash_prefix);
    expect(prefixes).to.include(standing.hash_prefix);
    expect(prefixes).to.not.include(hashPrefix(hashToken(ast)));
    const entry = res.body.tokens.find((x: any) => x.hash_prefix === labelled.body.hash_prefix);
    expect(entry).to.have.all.keys('hash_prefix', 'person', 'name', 'email', 'created', 'expires', 'expired', 'last_used');
    expect(entry).to.include({ person: member.id, name: 'Member' });
    const standingEntry = res.body.tokens.find((x: any) => x.hash_prefix === standing.hash_prefix);
    expect(standingEntry).to.include({ agent, person: member.id });
    expect(res.text).to.not.contain('secret-label');
    expect(res.text).to.not.contain('standing-label');
    for (const token of [labelled.body.token, ast, standing.token]) expect(res.text).to.not.contain(token);
    // the admin's own bootstrap token is there too: the listing is team-wide
    expect(prefixes).to.include(hashPrefix(hashToken(t.adminToken)));
  });

  it('rule 2: admin revoke takes at least 8 hex characters and may revoke any token', async () => {
    const victim = await t.api('POST', '/v1/me/tokens', { token: member.token, body: {} });
    const grant = await oauthGrant(t, victim.body.token);
    for (const bad of ['abc', '0123456', 'ZZZZZZZZ', 'g123456789']) {
      expectError(await t.api('DELETE', `/v1/admin/tokens/${bad}`), 422, 'validation_failed');
    }
    const res = await t.api('DELETE', `/v1/admin/tokens/${hashToken(victim.body.token).slice(0, 8)}`);
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.deep.equal({ revoked: true, hash_prefix: victim.body.hash_prefix });
    expectError(await t.api('GET', '/v1/me', { token: victim.body.token }), 401);
    // the revocation cascades to grants minted from the token
    expectError(await t.api('GET', '/v1/me', { token: grant }), 401);

    // any token: an agent's per-session token and a standing token of someone else's agent
    const agent = await createAgent(t, member.token, 'Member Bot Two');
    const ast = await sessionToken(t, member.token, agent);
    const standing = await standingToken(t, member.token, agent);
    expect((await t.api('DELETE', `/v1/admin/tokens/${hashToken(ast).slice(0, 12)}`)).status).to.equal(200);
    expect((await t.api('DELETE', `/v1/admin/tokens/${standing.hash_prefix}`)).status).to.equal(200);
    expectError(await t.api('GET', '/v1/me', { token: ast }), 401);
    expectError(await t.api('GET', '/v1/me', { token: standing.token }), 401);
    expectError(await t.api('DELETE', '/v1/admin/tokens/ffffffffffffffff'), 404, 'not_found');
  });

  it('rule 2: an ambiguous prefix is 409 and revokes nothing; a longer one resolves it', async () => {
    const [a, b, prefix] = collidingTokens();
    const tenant = t.server.services.tenants.get(t.org)!;
    await tenant.tokens.mutate((records) => {
      for (const token of [a, b]) {
        const rec = newTokenRecord(token, { kind: 'pat', person: member.id, created: new Date(t.clock.now()).toISOString() });
        records.set(rec.hash, rec);
      }
    });
    const res = await t.api('DELETE', `/v1/admin/tokens/${prefix}`);
    expectError(res, 409, 'conflict');
    expect((await t.api('GET', '/v1/me', { token: a })).status).to.equal(200);
    expect((await t.api('GET', '/v1/me', { token: b })).status).to.equal(200);
    const exact = await t.api('DELETE', `/v1/admin/tokens/${hashToken(a).slice(0, 16)}`);
    expect(exact.status).to.equal(200);
    expectError(await t.api('GET', '/v1/me', { token: a }), 401);
    expect((await t.api('GET', '/v1/me', { token: b })).status).to.equal(200);
    // with one of them revoked the short prefix is no longer ambiguous
    expect((await t.api('DELETE', `/v1/admin/tokens/${prefix}`)).status).to.equal(200);
    expectError(await t.api('GET', '/v1/me', { token: b }), 401);
  });
});
