import { expect } from 'chai';
import { startFakeIdp, type FakeIdp } from '../../helpers/fake-idp.js';
import type { TestServer } from '../../helpers/harness.js';
import { createPerson, expectError, startIdentityServer, unboundToken } from './helpers.js';

describe('identity: org choices through the identity provider (GET /v1/me/org-choices)', () => {
  let idp: FakeIdp;
  let t: TestServer;
  before(async () => {
    idp = await startFakeIdp();
    t = await startIdentityServer({ idpUrl: idp.url });
  });
  after(async () => {
    await t.close();
    await idp.stop();
  });

  it('Reads rule 2: with a provider configured the answer is a live enumeration, source: idp', async () => {
    idp.addMembership('admin@localhost', 'local', 'Local HQ');
    idp.addMembership('admin@localhost', 'acme', 'Acme Corp');
    const res = await t.api('GET', '/v1/me/org-choices');
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.deep.equal({
      org_choices: [
        { slug: 'local', label: 'Local HQ', default: true },
        { slug: 'acme', label: 'Acme Corp' },
      ],
      source: 'idp',
    });
    expect(idp.requests).to.include(`GET /v1/memberships?email=${encodeURIComponent('admin@localhost')}`);
    // live: a membership added at the provider shows on the next call, with no restart
    idp.addMembership('admin@localhost', 'globex', 'Globex');
    const again = await t.api('GET', '/v1/me/org-choices');
    expect(again.body.org_choices.map((o: any) => o.slug)).to.deep.equal(['local', 'acme', 'globex']);
  });

  it('a member with no memberships gets an empty idp list; a token without a person cannot be expanded (bound)', async () => {
    const member = await createPerson(t, 'Lonely');
    expect((await t.api('GET', '/v1/me/org-choices', { token: member.token })).body).to.deep.equal({ org_choices: [], source: 'idp' });
    const orphan = await unboundToken(t);
    const requestsBefore = idp.requests.length;
    expect((await t.api('GET', '/v1/me/org-choices', { token: orphan })).body).to.deep.equal({
      org_choices: [{ slug: 'local', label: 'local', default: true }],
      source: 'bound',
    });
    expect(idp.requests.length).to.equal(requestsBefore);
  });

  it('Reads rule 2: a provider error is 502 membership_requery_failed', async () => {
    idp.failWith = 503;
    try {
      expectError(await t.api('GET', '/v1/me/org-choices'), 502, 'membership_requery_failed');
    } finally {
      idp.failWith = null;
    }
    expect((await t.api('GET', '/v1/me/org-choices')).body.source).to.equal('idp');
  });

  it('Reads rule 2: an unreachable provider is 502 membership_requery_failed', async () => {
    const gone = await startFakeIdp();
    await gone.stop();
    const t2 = await startIdentityServer({ idpUrl: gone.url });
    try {
      expectError(await t2.api('GET', '/v1/me/org-choices'), 502, 'membership_requery_failed');
      // the rest of the server is unaffected
      expect((await t2.api('GET', '/v1/me')).status).to.equal(200);
    } finally {
      await t2.close();
    }
  });

  it('a tenant with the identity plugin disabled answers source: bound without asking the provider', async () => {
    const plain = await t.server.services.tenants.create({
      org: 'plain',
      adminEmail: 'admin@localhost',
      adminName: 'Plain Admin',
      plugins: [],
    });
    await t.server.services.tenants.scan();
    const requestsBefore = idp.requests.length;
    const res = await t.api('GET', '/v1/me/org-choices', { token: plain.token });
    expect(res.body).to.deep.equal({ org_choices: [{ slug: 'plain', label: 'plain', default: true }], source: 'bound' });
    expect(idp.requests.length).to.equal(requestsBefore);
    expectError(await t.api('GET', '/v1/me/tokens', { token: plain.token }), 404);
  });

  it('with no provider configured (another server in the same process) the answer is source: bound', async () => {
    const t3 = await startIdentityServer();
    try {
      const requestsBefore = idp.requests.length;
      expect((await t3.api('GET', '/v1/me/org-choices')).body).to.deep.equal({
        org_choices: [{ slug: 'local', label: 'local', default: true }],
        source: 'bound',
      });
      expect(idp.requests.length).to.equal(requestsBefore);
      // the first server still enumerates live
      expect((await t.api('GET', '/v1/me/org-choices')).body.source).to.equal('idp');
    } finally {
      await t3.close();
    }
  });
});
