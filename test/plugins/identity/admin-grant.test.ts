import { expect } from 'chai';
import { runGit } from '../../../kernel/git/cli.js';
import type { TestServer } from '../../helpers/harness.js';
import { createAgent, createPerson, expectError, sessionToken, startIdentityServer } from './helpers.js';

describe('identity: granting and revoking admin rights (POST/DELETE /v1/admin/people/{id}/admin, tools grant_admin/revoke_admin)', () => {
  let t: TestServer;
  let alice: { id: string; token: string; email: string };
  let bob: { id: string; token: string; email: string };
  before(async () => {
    t = await startIdentityServer();
    alice = await createPerson(t, 'Alice');
    bob = await createPerson(t, 'Bob');
  });
  after(async () => t.close());

  const me = async (token: string) => (await t.api('GET', '/v1/me', { token })).body;
  const lastCommit = async () => {
    const gitdir = t.server.services.tenants.get(t.org)!.store.gitdir;
    const [author, ...message] = (await runGit(gitdir, ['log', '-1', '--format=%an <%ae>%n%B', 'refs/heads/main'])).toString().split('\n');
    return { author: author!, message: message.join('\n') };
  };

  it('an admin grants admin rights: the person becomes an admin; history names the granting admin and the op', async () => {
    const res = await t.api('POST', `/v1/admin/people/${alice.id}/admin`);
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.include({ id: alice.id, is_admin: true, status: 'granted' });
    expect((await me(alice.token)).is_admin).to.equal(true);
    const node = (await t.api('GET', `/v1/nodes/${alice.id}`)).body;
    expect(node.frontmatter.edges).to.deep.include({ type: 'stewards', to: 'proj-root' });
    expect(node.frontmatter.author).to.equal(t.adminPerson);
    const commit = await lastCommit();
    expect(commit.message).to.match(new RegExp(`^grant_admin: ${alice.id}`));
    expect(commit.message).to.contain(`Svc-Person: ${t.adminPerson}`);
    expect(commit.message).to.contain('Svc-Identity: identity');
    expect(commit.author).to.contain('admin');
    // again: unchanged, no commit
    const head = (await t.api('GET', '/v1/status')).body.head;
    const again = await t.api('POST', `/v1/admin/people/${alice.id}/admin`);
    expect(again.body.status).to.equal('unchanged');
    expect((await t.api('GET', '/v1/status')).body.head).to.equal(head);
  });

  it('members, agent tokens of admins and unknown people: 403 / 404, nothing written', async () => {
    const agent = await createAgent(t, alice.token, 'Alice Bot');
    const ast = await sessionToken(t, alice.token, agent);
    const head = (await t.api('GET', '/v1/status')).body.head;
    expectError(await t.api('POST', `/v1/admin/people/${bob.id}/admin`, { token: bob.token }), 403, 'forbidden');
    expectError(await t.api('DELETE', `/v1/admin/people/${t.adminPerson}/admin`, { token: bob.token }), 403, 'forbidden');
    expectError(await t.api('POST', `/v1/admin/people/${bob.id}/admin`, { token: ast }), 403, 'forbidden');
    expectError(await t.api('POST', '/v1/admin/people/person-nobody/admin'), 404, 'not_found');
    expectError(await t.api('POST', '/v1/admin/people/task-x/admin'), 422);
    expect((await t.api('GET', '/v1/status')).body.head).to.equal(head);
    expect((await me(bob.token)).is_admin).to.equal(false);
  });

  it('revoke removes the rights, authored by the revoking admin; the last admin cannot be removed (409 last_admin)', async () => {
    const res = await t.api('DELETE', `/v1/admin/people/${alice.id}/admin`, { token: alice.token });
    // alice revokes herself: allowed while another admin remains
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.include({ id: alice.id, is_admin: false, status: 'revoked' });
    expect((await me(alice.token)).is_admin).to.equal(false);
    const commit = await lastCommit();
    expect(commit.message).to.match(new RegExp(`^revoke_admin: ${alice.id}`));
    expect(commit.message).to.contain(`Svc-Person: ${alice.id}`);
    // now the bootstrap admin is the only one
    const head = (await t.api('GET', '/v1/status')).body.head;
    const last = await t.api('DELETE', `/v1/admin/people/${t.adminPerson}/admin`);
    expectError(last, 409, 'last_admin');
    expect(last.body.error.details.admins).to.deep.equal([t.adminPerson]);
    expect((await t.api('GET', '/v1/status')).body.head).to.equal(head);
    expect((await t.api('GET', '/v1/me')).body.is_admin).to.equal(true);
    const notAdmin = await t.api('DELETE', `/v1/admin/people/${bob.id}/admin`);
    expect(notAdmin.body.status).to.equal('unchanged');
  });

  it('the MCP twins grant_admin and revoke_admin do the same', async () => {
    const admin = await t.mcp();
    const granted = await t.tool(admin, 'grant_admin', { id: bob.id });
    expect(granted.isError, granted.text).to.equal(false);
    expect(granted.json).to.include({ id: bob.id, is_admin: true, status: 'granted' });
    expect((await me(bob.token)).is_admin).to.equal(true);
    const member = await t.mcp(alice.token);
    const denied = await t.tool(member, 'revoke_admin', { id: bob.id });
    expect(denied.isError).to.equal(true);
    expect(denied.json.error.code).to.equal('forbidden');
    const revoked = await t.tool(admin, 'revoke_admin', { id: bob.id });
    expect(revoked.json).to.include({ status: 'revoked', is_admin: false });
    const last = await t.tool(admin, 'revoke_admin', { id: t.adminPerson });
    expect(last.isError).to.equal(true);
    expect(last.json.error.code).to.equal('last_admin');
  });

  it('concurrent revocations of the two last admins: exactly one succeeds (the other is 409 last_admin, or 403 once its caller lost the rights)', async () => {
    expect((await t.api('POST', `/v1/admin/people/${alice.id}/admin`)).status).to.equal(200);
    const [a, b] = await Promise.all([
      t.api('DELETE', `/v1/admin/people/${alice.id}/admin`),
      t.api('DELETE', `/v1/admin/people/${t.adminPerson}/admin`, { token: alice.token }),
    ]);
    expect(
      [a.status, b.status].filter((s) => s === 200),
      `${a.text} ${b.text}`,
    ).to.have.length(1);
    expect([a.status, b.status].filter((s) => s === 403 || s === 409)).to.have.length(1);
    const people = (await t.api('GET', '/v1/admin/people', { token: a.status === 200 ? t.adminToken : alice.token })).body.people;
    expect(people.filter((p: { is_admin: boolean }) => p.is_admin)).to.have.length(1);
  });
});
