import { expect } from 'chai';
import { hashPrefix, hashToken } from '../../../kernel/auth.js';
import type { TestServer } from '../../helpers/harness.js';
import {
  createAgent,
  createPerson,
  DAY_MS,
  expectError,
  oauthGrant,
  sessionToken,
  standingToken,
  startIdentityServer,
  unboundToken,
} from './helpers.js';

describe('identity: own personal access tokens (GET/POST /v1/me/tokens, DELETE /v1/me/tokens/{prefix})', () => {
  let t: TestServer;
  let alice: { id: string; token: string; email: string };
  let bob: { id: string; token: string; email: string };
  before(async () => {
    t = await startIdentityServer();
    alice = await createPerson(t, 'Alice');
    bob = await createPerson(t, 'Bob');
  });
  after(async () => t.close());

  it('rule 1: mint returns the plaintext once with its hash prefix; default expiry is one year', async () => {
    const before = t.clock.now();
    const res = await t.api('POST', '/v1/me/tokens', { token: alice.token, body: { label: 'laptop' } });
    expect(res.status, res.text).to.equal(201);
    expect(res.body).to.have.all.keys('token', 'hash_prefix', 'person', 'name', 'email', 'label', 'expires');
    expect(res.body.token).to.match(/^svc_pat_[0-9A-Za-z]{36}$/);
    expect(res.body.hash_prefix).to.match(/^[0-9a-f]{12}$/);
    expect(res.body).to.include({ person: alice.id, name: 'Alice', email: alice.email, label: 'laptop' });
    const expires = Date.parse(res.body.expires);
    expect(expires - before).to.be.within(365 * DAY_MS - 5000, 365 * DAY_MS + 5000);
    // the new token works and is the caller's
    const me = await t.api('GET', '/v1/me', { token: res.body.token });
    expect(me.status).to.equal(200);
    expect(me.body).to.include({ person: alice.id, bound: true, is_admin: false, org: 'local' });
    // listed by prefix only: no plaintext, no full hash
    const list = await t.api('GET', '/v1/me/tokens', { token: alice.token });
    expect(list.status).to.equal(200);
    const entry = list.body.tokens.find((x: any) => x.hash_prefix === res.body.hash_prefix);
    expect(entry).to.have.all.keys('hash_prefix', 'person', 'label', 'name', 'email', 'created', 'expires', 'expired', 'last_used');
    expect(entry).to.include({ person: alice.id, label: 'laptop', expired: false, email: alice.email });
    expect(list.text).to.not.contain(res.body.token);
    expect(list.text).to.not.match(/[0-9a-f]{64}/);
    expect(list.body.count).to.equal(list.body.tokens.length);
  });

  it('rule 1: expires takes <N>d or an ISO date; past and beyond-cap values are 422, never clamped', async () => {
    const inDays = await t.api('POST', '/v1/me/tokens', { token: alice.token, body: { expires: '30d' } });
    expect(inDays.status).to.equal(201);
    expect(Date.parse(inDays.body.expires) - t.clock.now()).to.be.within(30 * DAY_MS - 5000, 30 * DAY_MS + 5000);

    const date = new Date(t.clock.now() + 90 * DAY_MS).toISOString().slice(0, 10);
    const iso = await t.api('POST', '/v1/me/tokens', { token: alice.token, body: { expires: date } });
    expect(iso.status, iso.text).to.equal(201);
    expect(Date.parse(iso.body.expires)).to.equal(Date.parse(date));

    const year = await t.api('POST', '/v1/me/tokens', { token: alice.token, body: { expires: '365d' } });
    expect(year.status).to.equal(201);

    const countBefore = (await t.api('GET', '/v1/me/tokens', { token: alice.token })).body.count;
    for (const expires of [
      '366d',
      new Date(t.clock.now() + 400 * DAY_MS).toISOString(),
      '2001-01-01',
      new Date(t.clock.now() - 1000).toISOString(),
      '0d',
      'tomorrow',
      12,
      '1w',
    ]) {
      expectError(await t.api('POST', '/v1/me/tokens', { token: alice.token, body: { expires } }), 422, 'validation_failed');
    }
    // nothing was minted by the refused requests
    expect((await t.api('GET', '/v1/me/tokens', { token: alice.token })).body.count).to.equal(countBefore);
  });

  it('rule 1: label is optional and at most 200 characters, single line', async () => {
    const none = await t.api('POST', '/v1/me/tokens', { token: alice.token, body: {} });
    expect(none.status).to.equal(201);
    expect(none.body.label).to.equal(null);
    const noBody = await t.api('POST', '/v1/me/tokens', { token: alice.token });
    expect(noBody.status).to.equal(201);
    expect((await t.api('POST', '/v1/me/tokens', { token: alice.token, body: { label: 'x'.repeat(200) } })).status).to.equal(201);
    expectError(await t.api('POST', '/v1/me/tokens', { token: alice.token, body: { label: 'x'.repeat(201) } }), 422);
    expectError(await t.api('POST', '/v1/me/tokens', { token: alice.token, body: { label: 'two\nlines' } }), 422);
    expectError(await t.api('POST', '/v1/me/tokens', { token: alice.token, body: { label: 7 } }), 422);
    expectError(await t.api('POST', '/v1/me/tokens', { token: alice.token, body: [1] }), 422);
  });

  it("the mint body is the declared input: an unknown field is 422 validation_failed with ajv's error, a malformed prefix too", async () => {
    const countBefore = (await t.api('GET', '/v1/me/tokens', { token: alice.token })).body.count;
    const res = await t.api('POST', '/v1/me/tokens', { token: alice.token, body: { label: 'laptop', scope: 'admin' } });
    expectError(res, 422, 'validation_failed');
    expect(res.body.error.details.errors[0]).to.deep.include({
      instancePath: '',
      keyword: 'additionalProperties',
      params: { additionalProperty: 'scope' },
    });
    expect((await t.api('GET', '/v1/me/tokens', { token: alice.token })).body.count).to.equal(countBefore);
    const short = await t.api('DELETE', '/v1/me/tokens/abc', { token: alice.token });
    expectError(short, 422, 'validation_failed');
    expect(short.body.error.details.errors[0]).to.deep.include({ instancePath: '/prefix', keyword: 'minLength' });
  });

  it("rule 1: the own listing shows only the caller's PATs (no other person's, no agent tokens)", async () => {
    const agent = await createAgent(t, alice.token, 'Alice Listing Bot');
    await sessionToken(t, alice.token, agent);
    const standing = await standingToken(t, alice.token, agent);
    const bobs = await t.api('POST', '/v1/me/tokens', { token: bob.token, body: { label: 'bob-only' } });
    const list = await t.api('GET', '/v1/me/tokens', { token: alice.token });
    expect(list.body.tokens.every((x: any) => x.person === alice.id)).to.equal(true);
    const prefixes = list.body.tokens.map((x: any) => x.hash_prefix);
    expect(prefixes).to.not.include(standing.hash_prefix);
    expect(prefixes).to.not.include(bobs.body.hash_prefix);
    expect(list.body.tokens.length).to.be.greaterThan(3);
  });

  it('rule 1: revoke by hash prefix; the token stops working and leaves the listing', async () => {
    const minted = await t.api('POST', '/v1/me/tokens', { token: alice.token, body: { label: 'to revoke' } });
    expect((await t.api('GET', '/v1/me', { token: minted.body.token })).status).to.equal(200);
    const res = await t.api('DELETE', `/v1/me/tokens/${minted.body.hash_prefix}`, { token: alice.token });
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.deep.equal({ revoked: true, hash_prefix: minted.body.hash_prefix, oauth_grants_revoked: 0 });
    expectError(await t.api('GET', '/v1/me', { token: minted.body.token }), 401, 'unauthorized');
    const list = await t.api('GET', '/v1/me/tokens', { token: alice.token });
    expect(list.body.tokens.map((x: any) => x.hash_prefix)).to.not.include(minted.body.hash_prefix);
    // a revoked token is no longer revocable: 404
    expectError(await t.api('DELETE', `/v1/me/tokens/${minted.body.hash_prefix}`, { token: alice.token }), 404);
  });

  it("rule 1: a prefix that is not the caller's is 404, and the other token keeps working", async () => {
    const bobs = await t.api('POST', '/v1/me/tokens', { token: bob.token, body: {} });
    expectError(await t.api('DELETE', `/v1/me/tokens/${bobs.body.hash_prefix}`, { token: alice.token }), 404, 'not_found');
    expect((await t.api('GET', '/v1/me', { token: bobs.body.token })).status).to.equal(200);
    // an admin is no exception on the own route
    expectError(await t.api('DELETE', `/v1/me/tokens/${bobs.body.hash_prefix}`), 404, 'not_found');
    expectError(await t.api('DELETE', '/v1/me/tokens/ffffffffffff', { token: alice.token }), 404);
    expectError(await t.api('DELETE', '/v1/me/tokens/XYZ', { token: alice.token }), 422);
    expectError(await t.api('DELETE', '/v1/me/tokens/abc', { token: alice.token }), 422);
  });

  it('rule 1: revoking cascades to OAuth grants minted from that token', async () => {
    const minted = await t.api('POST', '/v1/me/tokens', { token: alice.token, body: { label: 'oauth parent' } });
    const grant = await oauthGrant(t, minted.body.token);
    const grantOfGrant = await oauthGrant(t, grant);
    const unrelated = await oauthGrant(t, alice.token);
    expect((await t.api('GET', '/v1/me', { token: grant })).status).to.equal(200);
    expect((await t.api('GET', '/v1/me', { token: grantOfGrant })).status).to.equal(200);
    const res = await t.api('DELETE', `/v1/me/tokens/${minted.body.hash_prefix}`, { token: alice.token });
    expect(res.body).to.deep.equal({ revoked: true, hash_prefix: minted.body.hash_prefix, oauth_grants_revoked: 2 });
    expectError(await t.api('GET', '/v1/me', { token: grant }), 401);
    expectError(await t.api('GET', '/v1/me', { token: grantOfGrant }), 401);
    expect((await t.api('GET', '/v1/me', { token: unrelated })).status).to.equal(200);
    // grants are not personal tokens: never in the own listing
    const list = await t.api('GET', '/v1/me/tokens', { token: alice.token });
    expect(list.body.tokens.length).to.be.greaterThan(0);
    expect(list.body.tokens.map((x: any) => x.hash_prefix)).to.not.include(hashPrefix(hashToken(unrelated)));
  });

  it('rule 1: an expired token is refused (401) and listed as expired; last_used is recorded', async () => {
    const carol = await createPerson(t, 'Carol');
    const short = await t.api('POST', '/v1/me/tokens', { token: carol.token, body: { expires: '1d', label: 'short' } });
    expect((await t.api('GET', '/v1/me', { token: short.body.token })).status).to.equal(200);
    t.clock.advance(DAY_MS + 1000);
    expectError(await t.api('GET', '/v1/me', { token: short.body.token }), 401, 'unauthorized');
    const list = await t.api('GET', '/v1/me/tokens', { token: carol.token });
    const entry = list.body.tokens.find((x: any) => x.hash_prefix === short.body.hash_prefix);
    expect(entry.expired).to.equal(true);
    expect(entry.last_used).to.be.a('string');
    const live = list.body.tokens.find((x: any) => x.hash_prefix !== short.body.hash_prefix);
    expect(live.expired).to.equal(false);
  });

  it('rule 1: 403 for list, mint and revoke when the caller has no person node', async () => {
    const orphan = await unboundToken(t);
    const me = await t.api('GET', '/v1/me', { token: orphan });
    expect(me.body.bound).to.equal(false);
    expectError(await t.api('GET', '/v1/me/tokens', { token: orphan }), 403);
    expectError(await t.api('POST', '/v1/me/tokens', { token: orphan, body: {} }), 403);
    expectError(await t.api('DELETE', '/v1/me/tokens/0123456789ab', { token: orphan }), 403);
  });

  it("agent tokens cannot list, mint or revoke their owner's PATs (403)", async () => {
    const agent = await createAgent(t, alice.token, 'Alice Sneaky Bot');
    const ast = await sessionToken(t, alice.token, agent);
    const standing = await standingToken(t, alice.token, agent);
    for (const token of [ast, standing.token]) {
      expectError(await t.api('GET', '/v1/me/tokens', { token }), 403, 'forbidden');
      expectError(await t.api('POST', '/v1/me/tokens', { token, body: {} }), 403, 'forbidden');
      expectError(await t.api('DELETE', '/v1/me/tokens/0123456789ab', { token }), 403, 'forbidden');
    }
  });

  it('Authentication 1: identity routes need a bearer token; a missing, malformed or unknown one is 401', async () => {
    expectError(await t.api('GET', '/v1/me/tokens', { token: null }), 401, 'unauthorized');
    expectError(await t.api('GET', '/v1/me/tokens', { token: 'svc_pat_nonsense' }), 401, 'unauthorized');
    expectError(await t.api('POST', '/v1/agents', { token: null, body: { label: 'x' } }), 401, 'unauthorized');
    expectError(await t.api('GET', '/v1/me/tokens', { headers: { authorization: `Token ${alice.token}` }, token: null }), 401);
    // there is no way to pass a token as a query parameter
    expectError(await t.api('GET', `/v1/me/tokens?token=${alice.token}`, { token: null }), 401);
  });
});
