import { expect } from 'chai';
import { personIdForEmail } from '../../../kernel/tenants.js';
import { startFakeIdp, type FakeIdp } from '../../helpers/fake-idp.js';
import type { TestServer } from '../../helpers/harness.js';
import {
  createAgent,
  createPerson,
  expectError,
  oauthGrant,
  plugins,
  sessionToken,
  standingToken,
  startIdentityServer,
} from './helpers.js';

describe('identity: people (GET/POST /v1/admin/people, DELETE /v1/admin/people/{id})', () => {
  let t: TestServer;
  let idp: FakeIdp;
  before(async () => {
    idp = await startFakeIdp();
    t = await startIdentityServer({ idpUrl: idp.url });
  });
  after(async () => {
    await t.close();
    await idp.stop();
  });

  it('rule 4: create answers 201 {id, name, email, roles, revision}; the id is an opaque hash of the email', async () => {
    const res = await t.api('POST', '/v1/admin/people', {
      body: { name: 'Dana Scully', email: 'dana@example.test', roles: ['reviewer', 'ops-lead'] },
    });
    expect(res.status, res.text).to.equal(201);
    expect(res.body).to.have.all.keys('id', 'name', 'email', 'roles', 'revision');
    expect(res.body.id).to.equal(personIdForEmail('dana@example.test'));
    expect(res.body.id).to.match(/^person-[0-9a-f]{16}$/);
    expect(res.body.id).to.not.contain('dana');
    expect(res.body).to.include({ name: 'Dana Scully', email: 'dana@example.test' });
    expect(res.body.roles).to.deep.equal(['reviewer', 'ops-lead']);
    const node = await t.api('GET', `/v1/nodes/${res.body.id}`);
    expect(node.status).to.equal(200);
    expect(node.body.revision).to.equal(res.body.revision);
    expect(node.body.frontmatter).to.include({
      type: 'person',
      status: 'active',
      name: 'Dana Scully',
      email: 'dana@example.test',
      author: t.adminPerson,
    });
    expect(node.body.frontmatter.roles).to.deep.equal(['reviewer', 'ops-lead']);
    // no stewards edge: the new person is not an admin
    expect(node.body.frontmatter.edges ?? []).to.deep.equal([]);
    const token = (await t.api('POST', '/v1/admin/tokens', { body: { person: res.body.id } })).body.token;
    expect((await t.api('GET', '/v1/me', { token })).body).to.include({ person: res.body.id, bound: true, is_admin: false });
  });

  it('rule 4: an explicit person-<slug> id is used; the same email hashes to the same id (409 on collision)', async () => {
    const res = await t.api('POST', '/v1/admin/people', { body: { name: 'Fox', email: 'fox@example.test', id: 'person-fox' } });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.id).to.equal('person-fox');
    expect(res.body.roles).to.deep.equal([]);
    expectError(
      await t.api('POST', '/v1/admin/people', { body: { name: 'Fox Two', email: 'fox2@example.test', id: 'person-fox' } }),
      409,
      'conflict',
    );
    expectError(await t.api('POST', '/v1/admin/people', { body: { name: 'Dana Again', email: 'dana@example.test' } }), 409, 'conflict');
    // the same email under another explicit id is a duplicate person too
    expectError(
      await t.api('POST', '/v1/admin/people', { body: { name: 'Fox Clone', email: 'FOX@example.test', id: 'person-fox-clone' } }),
      409,
      'conflict',
    );
    expectError(await t.api('GET', '/v1/nodes/person-fox-clone'), 404);
  });

  it('rule 4: invalid bodies are 422 and write nothing', async () => {
    const before = (await t.api('GET', '/v1/admin/people')).body.count;
    const bad: Array<Record<string, unknown>> = [
      { email: 'a@example.test' },
      { name: 'A' },
      { name: '', email: 'a@example.test' },
      { name: 'Two\nLines', email: 'a@example.test' },
      { name: 'A', email: 'a@example.test\nBcc: x@example.test' },
      { name: 'x'.repeat(201), email: 'a@example.test' },
      { name: 'A', email: `${'a'.repeat(190)}@example.test` },
      { name: 'A', email: 'not-an-email' },
      { name: 'A', email: 'a@example.test', id: 'task-a' },
      { name: 'A', email: 'a@example.test', id: 'person-' },
      { name: 'A', email: 'a@example.test', id: 'Person-A' },
      { name: 'A', email: 'a@example.test', roles: 'admin' },
      { name: 'A', email: 'a@example.test', roles: ['Not A Slug'] },
      { name: 'A', email: 'a@example.test', roles: Array.from({ length: 21 }, (_, i) => `role-${i}`) },
      { name: 'A', email: 'a@example.test', invite: 'yes' },
      { name: 'A', email: 'a@example.test', invite: true, connection_id: 'bad connection' },
      { name: 'A', email: 'a@example.test', invite: true, org: 'Not_An_Org' },
    ];
    for (const body of bad) expectError(await t.api('POST', '/v1/admin/people', { body }), 422, 'validation_failed');
    expectError(await t.api('POST', '/v1/admin/people', { rawBody: '[1,2]', headers: { 'content-type': 'application/json' } }), 422);
    expect((await t.api('GET', '/v1/admin/people')).body.count).to.equal(before);
    expect(idp.invitations).to.have.length(0);
    // the limits themselves are accepted
    const edge = await t.api('POST', '/v1/admin/people', {
      body: { name: 'n'.repeat(200), email: `${'e'.repeat(187)}@example.test`, roles: Array.from({ length: 20 }, (_, i) => `role-${i}`) },
    });
    expect(edge.status, edge.text).to.equal(201);
    expect(edge.body.roles).to.have.length(20);
  });

  it('rule 4: core put_node cannot create person nodes; only the admin people route does (Authentication 9)', async () => {
    const res = await t.api('POST', '/v1/nodes', {
      body: { nodes: [{ node: { id: 'person-sneaky', type: 'person', summary: 'x', name: 'x', email: 'x@example.test' } }] },
    });
    expect(res.status).to.equal(207);
    expectError(await t.api('GET', '/v1/nodes/person-sneaky'), 404);
  });

  it('rule 4: invite issues an organization invitation at the provider for the same email', async () => {
    const res = await t.api('POST', '/v1/admin/people', {
      body: { name: 'Gina', email: 'gina@example.test', invite: true, connection_id: 'con-default', org: 'acme' },
    });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.org_invitation.status).to.equal('issued');
    expect(res.body.org_invitation).to.include({ org: 'acme', email: 'gina@example.test', connection_id: 'con-default' });
    const sent = idp.invitations.find((i) => i.email === 'gina@example.test')!;
    expect(sent).to.include({ name: 'Gina', org: 'acme', connection_id: 'con-default', invited_by: t.adminPerson });
    expect(res.body.org_invitation.invitation_id).to.equal(sent.id);
  });

  it('rule 4: a failed invitation never rolls back the created person', async () => {
    // the provider refuses the connection
    const refused = await t.api('POST', '/v1/admin/people', {
      body: { name: 'Hal', email: 'hal@example.test', invite: true, connection_id: 'con-unknown' },
    });
    expect(refused.status, refused.text).to.equal(201);
    expect(refused.body.org_invitation.status).to.equal('failed');
    expect(refused.body.org_invitation.reason).to.match(/404/);
    expect((await t.api('GET', `/v1/nodes/${refused.body.id}`)).status).to.equal(200);
    // the provider errors
    idp.failWith = 500;
    try {
      const failed = await t.api('POST', '/v1/admin/people', { body: { name: 'Ivy', email: 'ivy@example.test', invite: true } });
      expect(failed.status).to.equal(201);
      expect(failed.body.org_invitation.status).to.equal('failed');
      expect((await t.api('GET', `/v1/nodes/${failed.body.id}`)).status).to.equal(200);
    } finally {
      idp.failWith = null;
    }
    // no invitation without invite: true
    const quiet = await t.api('POST', '/v1/admin/people', { body: { name: 'Jay', email: 'jay@example.test' } });
    expect(quiet.body).to.not.have.property('org_invitation');
    expect(idp.invitations.map((i) => i.email)).to.not.include('jay@example.test');
  });

  it('rule 4: on a tenant bound to an org a disagreeing org is 403 and an omitted one pins the bound org', async () => {
    const created = await t.server.services.tenants.create({
      org: 'acme-bound',
      adminEmail: 'root@acme.test',
      adminName: 'Acme Root',
      plugins: plugins.map((p) => p.name),
    });
    await t.server.services.tenants.scan();
    const admin = created.token;
    const denied = await t.api('POST', '/v1/admin/people', {
      token: admin,
      body: { name: 'Kim', email: 'kim@acme.test', invite: true, org: 'elsewhere' },
    });
    expectError(denied, 403, 'forbidden');
    // validated up front: the person was not created
    expect((await t.api('GET', `/v1/nodes/${personIdForEmail('kim@acme.test')}`, { token: admin })).status).to.equal(404);
    const pinned = await t.api('POST', '/v1/admin/people', { token: admin, body: { name: 'Kim', email: 'kim@acme.test', invite: true } });
    expect(pinned.status, pinned.text).to.equal(201);
    expect(pinned.body.org_invitation).to.include({ status: 'issued', org: 'acme-bound' });
    expect(idp.invitations.find((i) => i.email === 'kim@acme.test')!.org).to.equal('acme-bound');
    const agreeing = await t.api('POST', '/v1/admin/people', {
      token: admin,
      body: { name: 'Lee', email: 'lee@acme.test', invite: true, org: 'acme-bound' },
    });
    expect(agreeing.body.org_invitation).to.include({ status: 'issued', org: 'acme-bound' });
  });

  it('rule 4: with the provider unreachable the person is still created and the invitation reports failed', async () => {
    const gone = await startFakeIdp();
    await gone.stop();
    const t2 = await startIdentityServer({ idpUrl: gone.url });
    try {
      const res = await t2.api('POST', '/v1/admin/people', { body: { name: 'Max', email: 'max@example.test', invite: true } });
      expect(res.status).to.equal(201);
      expect(res.body.org_invitation.status).to.equal('failed');
      expect(res.body.org_invitation.reason).to.match(/unreachable/);
      expect((await t2.api('GET', `/v1/nodes/${res.body.id}`)).status).to.equal(200);
    } finally {
      await t2.close();
    }
  });

  it('listing: {id, name, email, roles, is_admin, status, tokens, active_tokens, last_used} for every person', async () => {
    const nora = await createPerson(t, 'Nora');
    await t.api('GET', '/v1/me', { token: nora.token });
    await t.api('POST', '/v1/admin/tokens', { body: { person: nora.id } });
    const res = await t.api('GET', '/v1/admin/people');
    expect(res.status).to.equal(200);
    expect(res.body.count).to.equal(res.body.people.length);
    const entry = res.body.people.find((p: any) => p.id === nora.id);
    expect(entry).to.have.all.keys('id', 'name', 'email', 'roles', 'is_admin', 'status', 'tokens', 'active_tokens', 'last_used');
    expect(entry).to.include({ name: 'Nora', email: nora.email, is_admin: false, status: 'active', tokens: 2, active_tokens: 2 });
    expect(entry.last_used).to.be.a('string');
    const admin = res.body.people.find((p: any) => p.id === t.adminPerson);
    expect(admin).to.include({ is_admin: true, status: 'active' });
  });

  it('rule 5: offboarding revokes every PAT and grant of the subject and keeps the node', async () => {
    const olga = await createPerson(t, 'Olga');
    const second = (await t.api('POST', '/v1/me/tokens', { token: olga.token, body: {} })).body.token;
    const grant = await oauthGrant(t, second);
    const agent = await createAgent(t, olga.token, 'Olga Bot');
    const ast = await sessionToken(t, olga.token, agent);
    const standing = await standingToken(t, olga.token, agent);
    const bystander = await createPerson(t, 'Pat');
    const revisionBefore = (await t.api('GET', `/v1/nodes/${olga.id}`)).body.revision;

    const res = await t.api('DELETE', `/v1/admin/people/${olga.id}`);
    expect(res.status, res.text).to.equal(200);
    // two PATs, the agent's per-session and standing tokens; one grant
    const { render_tickets: note, render_tickets_valid_until: until, ...counts } = res.body;
    expect(counts).to.deep.equal({ offboarded: olga.id, tokens_revoked: 4, oauth_grants_revoked: 1 });
    // share tickets cannot be revoked (expiry is their only bound): the admin is told so
    expect(note)
      .to.match(/not revoked/)
      .and.match(/until it expires/)
      .and.match(/30 days/);
    expect(Date.parse(until) - t.clock.now()).to.be.within(30 * 86_400_000 - 60_000, 30 * 86_400_000);
    for (const token of [olga.token, second, grant, ast, standing.token]) expectError(await t.api('GET', '/v1/me', { token }), 401);
    expect((await t.api('GET', '/v1/me', { token: bystander.token })).status).to.equal(200);
    // the node is kept, unchanged, still active
    const node = await t.api('GET', `/v1/nodes/${olga.id}`);
    expect(node.status).to.equal(200);
    expect(node.body.revision).to.equal(revisionBefore);
    expect(node.body.frontmatter.status).to.equal('active');
    const entry = (await t.api('GET', '/v1/admin/people')).body.people.find((p: any) => p.id === olga.id);
    expect(entry).to.include({ status: 'active', active_tokens: 0, tokens: 2 });
    // offboarding again finds nothing left to revoke
    expect((await t.api('DELETE', `/v1/admin/people/${olga.id}`)).body).to.include({
      offboarded: olga.id,
      tokens_revoked: 0,
      oauth_grants_revoked: 0,
    });
  });

  it('rule 5: self-offboarding is 422; a malformed or non-person id is 422 before the 404 for an unknown one', async () => {
    expectError(await t.api('DELETE', `/v1/admin/people/${t.adminPerson}`), 422);
    expect((await t.api('GET', '/v1/me')).status).to.equal(200);
    expectError(await t.api('DELETE', '/v1/admin/people/Bad_Id'), 422, 'validation_failed');
    expectError(await t.api('DELETE', '/v1/admin/people/agent-ghost'), 422, 'validation_failed');
    expectError(await t.api('DELETE', '/v1/admin/people/proj-root'), 422, 'validation_failed');
    expectError(await t.api('DELETE', '/v1/admin/people/person-ghost'), 404, 'not_found');
  });
});

describe('identity: invitations with no identity provider configured', () => {
  let t: TestServer;
  before(async () => {
    t = await startIdentityServer();
  });
  after(async () => t.close());

  it('rule 4: invite: true yields org_invitation {status: failed, reason} and the person is created', async () => {
    const res = await t.api('POST', '/v1/admin/people', { body: { name: 'Quinn', email: 'quinn@example.test', invite: true } });
    expect(res.status).to.equal(201);
    expect(res.body.org_invitation.status).to.equal('failed');
    expect(res.body.org_invitation.reason)
      .to.be.a('string')
      .and.match(/identity provider/);
    expect((await t.api('GET', `/v1/nodes/${res.body.id}`)).status).to.equal(200);
  });
});
