/**
 * Leases that mean something (docs/decisions.md "patch"): a write by anyone but the live
 * holder warns naming the holder and reaches them (lease_notices on their next lease call);
 * the tenant setting `leases: strict` (set with `workgraph tenant settings`) refuses it with
 * 409 lease_held unless the writer holds the lease or is an admin passing force; a terminal
 * status releases the lease (the assigned edge stays); renew on a finished node says so.
 */
import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { queuePlugin } from '../../../plugins/queue/index.js';
import { addPerson, cliEnv, md, type TestServer } from '../../helpers/harness.js';
import { runCli } from '../../helpers/processes.js';
import { assignees, nodeOf, post, startLeaseServer, tasks, tenantOf } from './helpers.js';
import { until } from '../../helpers/until.js';

// Polls every 25 ms rather than every turn of the event loop: a busy poll competes with the
// in-process server whose settings poll it waits for (it missed 5 s at load 25). The bound is a
// hang detector; the server polls tenant settings every 200 ms here.
describe('leases: the holder is named, told, and (strict) protected', function () {
  this.timeout(120_000);
  let t: TestServer;
  let ada: { id: string; token: string };
  let bob: { id: string; token: string };
  let bobClient: Client;
  let adaClient: Client;

  before(async () => {
    t = await startLeaseServer([queuePlugin]);
    ada = await addPerson(t, 'Ada Lovelace');
    bob = await addPerson(t, 'Bob Builder');
    bobClient = await t.mcp(bob.token);
    adaClient = await t.mcp(ada.token);
    await tasks(t, ['task-h1', 'task-h2', 'task-h3', 'task-h4', 'task-h5', 'task-h6', 'task-h7', 'task-s1', 'task-s2']);
  });
  after(() => t.close());

  const heldBy = (lease: { expires_at: string }) => `held by Ada Lovelace (${ada.id}) until ${lease.expires_at}`;

  it("a non-holder's set_status done warns naming the holder; the lease is released; the holder's renew says the node is done and carries the notice", async () => {
    const claim = await post(t, '/v1/nodes/task-h1/claim', ada.token);
    expect(claim.status, claim.text).to.equal(200);
    const done = await post(t, '/v1/nodes/task-h1/status', bob.token, { status: 'done' });
    expect(done.status, done.text).to.equal(200);
    expect(done.body.warnings[0]).to.equal(
      `task-h1 is ${heldBy(claim.body.lease)}: written anyway; the holder is told (claim it, or ask them first)`,
    );
    expect(done.body.warnings[1]).to.match(/^the lease held by Ada Lovelace .* was released: done is a terminal status$/);
    // the assigned edge stays as the record of who carried the work
    expect(await assignees(t, 'task-h1')).to.deep.equal([ada.id]);

    const renew = await post(t, '/v1/nodes/task-h1/renew', ada.token);
    expect(renew.status).to.equal(409);
    expect(renew.body.error.code).to.equal('lease_lost');
    expect(renew.body.error.details).to.include({ reason: 'terminal', status: 'done', node_id: 'task-h1' });
    expect(renew.body.error.message).to.match(/task-h1 is done \(status done is terminal\)/);
    const [notice] = renew.body.error.details.lease_notices;
    expect(notice).to.include({
      node_id: 'task-h1',
      op: 'set_status',
      by: bob.id,
      by_name: 'Bob Builder',
      status: 'done',
      released: true,
      forced: false,
    });
    expect(notice.message).to.match(
      /^Bob Builder \(person-[0-9a-f]+\) changed task-h1 \(set_status\) while you held it; it is done now and your lease was released$/,
    );
    // delivered once
    const again = await post(t, '/v1/nodes/task-h1/renew', ada.token);
    expect(again.body.error.details).to.not.have.property('lease_notices');
    expect(again.body.error.details.released).to.equal(false);
  });

  it("a non-holder's put_node, patch_node, add_edge and set_priority each warn (REST and MCP alike) and the holder's next renew lists them", async () => {
    const claim = await post(t, '/v1/nodes/task-h2/claim', ada.token);
    const warning = `task-h2 is ${heldBy(claim.body.lease)}: written anyway; the holder is told (claim it, or ask them first)`;
    const read = await nodeOf(t, 'task-h2');
    const { author: _a, authored_via: _v, ...fm } = read.frontmatter;
    const put = await t.tool(bobClient, 'put_node', {
      nodes: [{ node: md({ ...fm, summary: 'Edited by Bob' }), if_exists: 'update', revision: read.revision }],
    });
    expect(put.isError, put.text).to.equal(false);
    expect(put.json.results[0].warnings).to.deep.equal([warning]);
    const patch = await t.api('PATCH', '/v1/nodes/task-h2', {
      token: bob.token,
      body: { revision: put.json.results[0].revision, set: { project: 'web' } },
    });
    expect(patch.status, patch.text).to.equal(200);
    expect(patch.body.warnings).to.deep.equal([warning]);
    const edgeRest = await post(t, '/v1/nodes/task-h2/edges', bob.token, { type: 'relates-to', to: 'task-h3' });
    expect(edgeRest.body.warnings).to.deep.equal([warning]);
    const prio = await t.tool(bobClient, 'set_priority', { id: 'task-h2', priority: 'p1' });
    expect(prio.json.warnings).to.deep.equal([warning]);

    const renew = await t.tool(adaClient, 'renew', { id: 'task-h2' });
    expect(renew.isError, renew.text).to.equal(false);
    expect(renew.json.lease_notices.map((n: { op: string }) => n.op)).to.deep.equal(['put_node', 'patch_node', 'add_edge', 'set_priority']);
    expect(renew.json.lease_notices.every((n: { by: string; released: boolean }) => n.by === bob.id && !n.released)).to.equal(true);
    const quiet = await post(t, '/v1/nodes/task-h2/renew', ada.token);
    expect(quiet.status).to.equal(200);
    expect(quiet.body).to.not.have.property('lease_notices');
  });

  it("the holder's own writes do not warn; finishing its own node releases its lease and says so", async () => {
    await post(t, '/v1/nodes/task-h3/claim', ada.token);
    const edit = await post(t, '/v1/nodes/task-h3/priority', ada.token, { priority: 'p2' });
    expect(edit.body.warnings).to.deep.equal([]);
    const done = await t.tool(adaClient, 'set_status', { id: 'task-h3', status: 'done' });
    expect(done.isError, done.text).to.equal(false);
    expect(done.json.warnings).to.deep.equal([
      `your lease on task-h3 was released: done is a terminal status (the assigned edge stays as the record of who carried it)`,
    ]);
    expect(await assignees(t, 'task-h3')).to.deep.equal([ada.id]);
    const renew = await t.tool(adaClient, 'renew', { id: 'task-h3' });
    expect(renew.isError).to.equal(true);
    expect(renew.json.error).to.include({ code: 'lease_lost' });
    expect(renew.json.error.details.reason).to.equal('terminal');
    // extend and reserve say the same
    expect((await post(t, '/v1/nodes/task-h3/extend', ada.token, { ms: 1000 })).body.error.details.reason).to.equal('terminal');
    expect((await post(t, '/v1/nodes/task-h3/reserve', ada.token)).body.error.details.reason).to.equal('terminal');
  });

  it('renew-all drops a lease whose node was resolved meanwhile and reports it in failed', async () => {
    await post(t, '/v1/nodes/task-h4/claim', ada.token);
    await post(t, '/v1/nodes/task-h5/claim', ada.token);
    // a resolver retires task-h4 without touching its status
    const res = await t.api('POST', '/v1/nodes', {
      token: bob.token,
      body: { nodes: [md({ id: 'task-h4-fix', summary: 'Fix', edges: [{ type: 'resolves', to: 'task-h4' }] })] },
    });
    expect(res.status, res.text).to.equal(200);
    const all = await post(t, '/v1/queue/renew', ada.token, {});
    expect(all.status, all.text).to.equal(200);
    expect(all.body.renewed).to.include('task-h5').and.not.include('task-h4');
    const failed = all.body.failed.find((f: { node_id: string }) => f.node_id === 'task-h4');
    expect(failed).to.include({ code: 'lease_lost' });
    expect(failed.message).to.match(/resolved or superseded/);
    expect(tenantOf(t).state.collection('leases').get('task-h4')).to.equal(undefined);
  });

  describe('leases: strict', () => {
    before(async () => {
      const set = await runCli(['tenant', 'settings', t.org, '--set', 'leases=strict'], await cliEnv(t.dataDir));
      expect(set.code, set.stderr).to.equal(0);
      expect(JSON.parse(set.stdout)).to.deep.equal({ org: t.org, settings: { leases: 'strict' } });
      await until(() => tenantOf(t).config.settings?.leases === 'strict');
    });
    after(async () => {
      const unset = await runCli(['tenant', 'settings', t.org, '--unset', 'leases'], await cliEnv(t.dataDir));
      expect(JSON.parse(unset.stdout)).to.deep.equal({ org: t.org, settings: { leases: 'advisory' } });
    });

    it('the CLI refuses unknown settings and values', async () => {
      const [bad, unknown] = await Promise.all([
        runCli(['tenant', 'settings', t.org, '--set', 'leases=loose'], await cliEnv(t.dataDir)),
        runCli(['tenant', 'settings', t.org, '--set', 'colour=blue'], await cliEnv(t.dataDir)),
      ]);
      expect(bad.code).to.not.equal(0);
      expect(bad.stderr).to.match(/setting leases takes advisory or strict, not 'loose'/);
      expect(unknown.code).to.not.equal(0);
      expect(unknown.stderr).to.match(/unknown setting 'colour'; known: leases=advisory\|strict/);
    });

    it("a non-holder's status change is 409 lease_held naming the holder; nothing changes; the holder may write", async () => {
      const claim = await post(t, '/v1/nodes/task-s1/claim', ada.token);
      const before = await nodeOf(t, 'task-s1');
      const refused = await post(t, '/v1/nodes/task-s1/status', bob.token, { status: 'done' });
      expect(refused.status).to.equal(409);
      expect(refused.body.error.code).to.equal('lease_held');
      expect(refused.body.error.message).to.include(`task-s1 is ${heldBy(claim.body.lease)}; this tenant runs leases: strict`);
      expect(refused.body.error.details).to.include({
        holder: ada.id,
        holder_name: 'Ada Lovelace',
        expires_at: claim.body.lease.expires_at,
        op: 'set_status',
      });
      const viaTool = await t.tool(bobClient, 'set_status', { id: 'task-s1', status: 'done' });
      expect(viaTool.isError).to.equal(true);
      expect(viaTool.text).to.equal(refused.text);
      const patch = await t.api('PATCH', '/v1/nodes/task-s1', {
        token: bob.token,
        body: { revision: before.revision, set: { summary: 'mine now' } },
      });
      expect(patch.status).to.equal(409);
      expect(patch.body.error.code).to.equal('lease_held');
      const put = await t.api('POST', '/v1/nodes', {
        token: bob.token,
        body: { nodes: [{ node: md({ ...before.frontmatter, summary: 'x' }), if_exists: 'update', revision: before.revision }] },
      });
      expect(put.status).to.equal(207);
      expect(put.body.results[0].error.code).to.equal('lease_held');
      expect((await nodeOf(t, 'task-s1')).revision).to.equal(before.revision);
      // nothing landed: the holder has no notice waiting
      const renew = await post(t, '/v1/nodes/task-s1/renew', ada.token);
      expect(renew.body).to.not.have.property('lease_notices');
      const own = await post(t, '/v1/nodes/task-s1/status', ada.token, { status: 'review' });
      expect(own.status, own.text).to.equal(200);
    });

    it('an admin passing force may write (the holder is told); force from a non-admin is 403', async () => {
      await post(t, '/v1/nodes/task-s2/claim', ada.token);
      const notAdmin = await post(t, '/v1/nodes/task-s2/status', bob.token, { status: 'done', force: true });
      expect(notAdmin.status).to.equal(403);
      expect(notAdmin.body.error.code).to.equal('forbidden');
      const forced = await post(t, '/v1/nodes/task-s2/status', t.adminToken, { status: 'done', force: true });
      expect(forced.status, forced.text).to.equal(200);
      expect(forced.body.warnings[0]).to.match(/^task-s2 is held by Ada Lovelace .*: written with force; the holder is told/);
      const renew = await post(t, '/v1/nodes/task-s2/renew', ada.token);
      expect(renew.body.error.details.reason).to.equal('terminal');
      expect(renew.body.error.details.lease_notices[0]).to.include({ node_id: 'task-s2', forced: true, released: true });
    });

    it('nodes nobody holds are written freely', async () => {
      const res = await post(t, '/v1/nodes/task-h6/priority', bob.token, { priority: 'p3' });
      expect(res.status).to.equal(200);
      expect(res.body.warnings).to.deep.equal([]);
    });
  });

  describe('back to advisory', () => {
    it("without strict again, a non-holder's write lands with the warning", async () => {
      await until(() => tenantOf(t).config.settings?.leases === undefined);
      const claim = await post(t, '/v1/nodes/task-h7/claim', ada.token);
      const res = await post(t, '/v1/nodes/task-h7/status', bob.token, { status: 'blocked' });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.warnings).to.deep.equal([
        `task-h7 is ${heldBy(claim.body.lease)}: written anyway; the holder is told (claim it, or ask them first)`,
      ]);
      const queue = await t.api('GET', '/v1/queue?assignee=me', { token: ada.token });
      expect(queue.body.items.map((i: { id: string }) => i.id)).to.include('task-h7');
    });
  });
});
