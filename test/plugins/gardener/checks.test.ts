/**
 * docs/design.md §9 and docs/spec.md Writes rule 13: POST /v1/gardener runs lagging-resolution,
 * dangling-edge, superseded-open and overdue-block (stale-assignment: stale.test.ts) and keeps
 * one open `finding-` node per (check, node) with a `concerns` edge, resolving it in the same
 * run once the condition no longer holds; `filed`, `resolved`, `skipped` are id lists and
 * `checked` a count; any valid team token may run it. A node read lists open findings under
 * `open_findings`.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { leasesPlugin } from '../../../plugins/leases/index.js';
import { queuePlugin } from '../../../plugins/queue/index.js';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { unboundToken } from '../leases/helpers.js';
import { DAY, node, openChecks, post, put, startGardenerServer, sweep } from './helpers.js';

describe('gardener: POST /v1/gardener', function () {
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };

  before(async () => {
    t = await startGardenerServer([leasesPlugin, queuePlugin]);
    alice = await addPerson(t, 'Alice');
    bob = await addPerson(t, 'Bob');
  });
  after(async () => t.close());

  it('any team token runs it (not admin-gated); the answer has exactly {checked, filed, resolved, skipped, generated_at}', async () => {
    const res = await t.api('POST', '/v1/gardener', { token: alice.token });
    expect(res.status, res.text).to.equal(200);
    expect(Object.keys(res.body)).to.deep.equal(['checked', 'filed', 'resolved', 'skipped', 'generated_at']);
    const status = (await t.api('GET', '/v1/status')).body;
    expect(res.body.checked).to.equal(status.node_count);
    expect(res.body).to.deep.include({ filed: [], resolved: [], skipped: [] });
    expect(Date.parse(res.body.generated_at)).to.be.closeTo(t.clock.now(), 5000);
    // nothing to file: no commit
    expect((await t.api('GET', '/v1/status')).body.head).to.equal(status.head);
  });

  it('the request takes no fields: an empty body runs the sweep, a field in it is 422 validation_failed (ajv error list)', async () => {
    expect((await t.api('POST', '/v1/gardener', { token: alice.token, body: {} })).status).to.equal(200);
    const res = await t.api('POST', '/v1/gardener', { token: alice.token, body: { dry_run: true } });
    expect(res.status, res.text).to.equal(422);
    expect(res.body.error.code).to.equal('validation_failed');
    expect(res.body.error.details.errors[0]).to.deep.include({
      keyword: 'additionalProperties',
      params: { additionalProperty: 'dry_run' },
    });
  });

  it('a token without a person node is 403 no_person; no token is 401', async () => {
    expect((await t.api('POST', '/v1/gardener', { token: await unboundToken(t) })).status).to.equal(403);
    expect((await t.api('POST', '/v1/gardener', { token: null })).status).to.equal(401);
  });

  it('lagging-resolution: filed with a concerns edge, listed in open_findings, skipped while it holds, resolved when the status catches up, reopened when it lags again', async () => {
    await put(t, [
      { id: 'task-lag', type: 'task', summary: 'lagging status', project: 'web' },
      { id: 'spec-fix', type: 'spec', summary: 'the fix', edges: [{ type: 'resolves', to: 'task-lag' }] },
    ]);
    const id = 'finding-lagging-resolution-task-lag';
    const first = await sweep(t, alice.token);
    expect(first.filed).to.deep.equal([id]);
    const finding = await node(t, id);
    expect(finding.frontmatter).to.include({
      type: 'finding',
      status: 'open',
      check: 'lagging-resolution',
      project: 'web',
      author: alice.id,
      authored_via: 'gardener',
    });
    expect(finding.frontmatter.edges).to.deep.equal([{ type: 'concerns', to: 'task-lag' }]);
    expect(finding.frontmatter.summary).to.match(/task-lag is resolved by spec-fix but its status is still 'open'/);
    const view = await node(t, 'task-lag');
    expect(view.open_findings).to.deep.equal([{ id, check: 'lagging-resolution', summary: finding.frontmatter.summary }]);

    // one open finding per (check, node): a second run files nothing new
    const second = await sweep(t);
    expect(second.filed).to.deep.equal([]);
    expect(second.skipped).to.deep.equal([id]);

    await post(t, '/v1/nodes/task-lag/status', { status: 'done' });
    const third = await sweep(t);
    expect(third.resolved).to.deep.equal([id]);
    expect(third.skipped).to.deep.equal([]);
    expect((await node(t, id)).frontmatter).to.include({ status: 'resolved', resolution: 'condition no longer holds' });
    expect(await node(t, 'task-lag')).to.not.have.property('open_findings');

    await post(t, '/v1/nodes/task-lag/status', { status: 'open' });
    const fourth = await sweep(t);
    expect(fourth.filed).to.deep.equal([id]);
    expect((await node(t, id)).frontmatter.status).to.equal('open');
    expect(await openChecks(t, 'task-lag')).to.deep.equal(['lagging-resolution']);
    await post(t, '/v1/nodes/task-lag/status', { status: 'done' });
    expect((await sweep(t)).resolved).to.deep.equal([id]);
  });

  it("dangling-edge: an edge to a missing node; the finding reaches the carrier's queue; fixed by removing the edge", async () => {
    await put(t, [
      {
        id: 'task-dangle',
        type: 'task',
        summary: 'points nowhere',
        edges: [
          { type: 'blocks', to: 'task-ghost' },
          { type: 'relates-to', to: 'spec-fix' },
        ],
      },
    ]);
    await post(t, `/v1/nodes/${bob.id}/edges`, { type: 'stewards', to: 'task-dangle' });
    const id = 'finding-dangling-edge-task-dangle';
    const run = await sweep(t);
    expect(run.filed).to.deep.equal([id]);
    expect((await node(t, id)).frontmatter.detail).to.deep.equal({ missing: ['blocks:task-ghost'] });
    expect(await openChecks(t, 'task-dangle')).to.deep.equal(['dangling-edge']);
    const bobs = await t.api('GET', '/v1/queue', { token: bob.token });
    expect(bobs.body.findings.map((f: { id: string }) => f.id)).to.include(id);
    const alices = await t.api('GET', '/v1/queue', { token: alice.token });
    expect(alices.body.findings.map((f: { id: string }) => f.id)).to.not.include(id);

    const removed = await t.api('DELETE', '/v1/nodes/task-dangle/edges', { body: { type: 'blocks', to: 'task-ghost' } });
    expect(removed.status).to.equal(200);
    expect((await sweep(t)).resolved).to.deep.equal([id]);
    expect(await openChecks(t, 'task-dangle')).to.deep.equal([]);
  });

  it('superseded-open: superseded but not terminal; resolved once closed', async () => {
    await put(t, [
      { id: 'task-old', type: 'task', summary: 'old plan' },
      { id: 'task-new', type: 'task', summary: 'new plan', edges: [{ type: 'supersedes', to: 'task-old' }] },
    ]);
    const id = 'finding-superseded-open-task-old';
    expect((await sweep(t)).filed).to.deep.equal([id]);
    expect(await openChecks(t, 'task-old')).to.deep.equal(['superseded-open']);
    await post(t, '/v1/nodes/task-old/status', { status: 'cancelled' });
    expect((await sweep(t)).resolved).to.deep.equal([id]);
  });

  it('overdue-block: a needed_by date passed while the blocker is open (not when the blocked node is done); resolved when the blocker closes', async () => {
    const day = (offsetDays: number) => new Date(t.clock.now() + offsetDays * DAY).toISOString().slice(0, 10);
    await put(t, [
      { id: 'task-needy', type: 'task', summary: 'needs the blocker' },
      { id: 'task-needy-done', type: 'task', summary: 'needed it once' },
      { id: 'task-blocker', type: 'task', summary: 'blocks', edges: [{ type: 'blocks', to: 'task-needy', needed_by: day(1) }] },
      {
        id: 'task-blocker-2',
        type: 'task',
        summary: 'blocks a done node',
        edges: [{ type: 'blocks', to: 'task-needy-done', needed_by: day(-3) }],
      },
    ]);
    await post(t, '/v1/nodes/task-needy-done/status', { status: 'done' });
    // the due day itself is not overdue
    t.clock.advance(DAY);
    expect((await sweep(t)).filed).to.deep.equal([]);
    t.clock.advance(DAY);
    const id = 'finding-overdue-block-task-blocker';
    expect((await sweep(t)).filed).to.deep.equal([id]);
    expect((await node(t, id)).frontmatter.detail).to.deep.equal({ overdue: [`task-needy:${day(-1)}`] });
    expect(await openChecks(t, 'task-blocker-2')).to.deep.equal([]);
    await post(t, '/v1/nodes/task-blocker/status', { status: 'done' });
    expect((await sweep(t)).resolved).to.deep.equal([id]);
  });

  it('one finding per (check, node): two checks give two findings; a duplicate open finding is resolved; a deleted subject resolves its finding', async () => {
    await put(t, [
      { id: 'task-two', type: 'task', summary: 'two problems', edges: [{ type: 'blocks', to: 'task-nowhere' }] },
      { id: 'task-two-new', type: 'task', summary: 'replaces two', edges: [{ type: 'supersedes', to: 'task-two' }] },
    ]);
    const run = await sweep(t);
    expect(run.filed).to.deep.equal(['finding-dangling-edge-task-two', 'finding-superseded-open-task-two']);
    expect(await openChecks(t, 'task-two')).to.deep.equal(['dangling-edge', 'superseded-open']);

    await put(t, [
      {
        id: 'finding-by-hand',
        type: 'finding',
        summary: 'same thing, by hand',
        check: 'dangling-edge',
        edges: [{ type: 'concerns', to: 'task-two' }],
      },
    ]);
    const dedup = await sweep(t);
    expect(dedup.resolved).to.deep.equal(['finding-by-hand']);
    expect(dedup.filed).to.deep.equal([]);
    expect((await node(t, 'finding-by-hand')).frontmatter.resolution).to.equal('duplicate of finding-dangling-edge-task-two');

    // a subject deleted outside the API (operator clean-up): its findings are resolved
    const tenant = t.server.services.tenants.get(t.org)!;
    const actor = { personId: t.adminPerson, name: 'Admin', email: 'admin@localhost', agent: null, session: null };
    await tenant.write(actor, { op: 'test_delete', via: 'rest' }, async (draft) => draft.delete('task-two'));
    const after = await sweep(t);
    expect(after.resolved).to.deep.equal(['finding-dangling-edge-task-two', 'finding-superseded-open-task-two']);
    expect((await node(t, 'finding-superseded-open-task-two')).frontmatter.resolution).to.equal('task-two no longer exists');
    // task-two-new's supersedes edge now dangles; the resolved findings' own concerns edges
    // dangle too, but findings are never subjects
    expect(after.filed).to.deep.equal(['finding-dangling-edge-task-two-new']);
  });

  it('a summary that would pass the 500-character node limit is cut, so the finding still lands', async () => {
    const edges = Array.from({ length: 15 }, (_, i) => ({ type: 'relates-to', to: `task-a-missing-target-with-a-rather-long-name-${i}` }));
    await put(t, [{ id: 'task-many', type: 'task', summary: 'many dangling edges', edges }]);
    const run = await sweep(t);
    expect(run.filed).to.deep.equal(['finding-dangling-edge-task-many']);
    const finding = await node(t, 'finding-dangling-edge-task-many');
    expect(finding.frontmatter.summary).to.have.length(500);
    expect(finding.frontmatter.summary.endsWith('…')).to.equal(true);
    expect(finding.frontmatter.detail.missing).to.have.length(15);
    await put(t, [
      { node: { id: 'task-many', type: 'task', summary: 'fixed' }, if_exists: 'update', revision: (await node(t, 'task-many')).revision },
    ]);
    expect((await sweep(t)).resolved).to.deep.equal(['finding-dangling-edge-task-many']);
  });

  it('the sweep is one internal commit stamped authored_via gardener', async () => {
    await put(t, [{ id: 'task-commit', type: 'task', summary: 'x', edges: [{ type: 'relates-to', to: 'task-void' }] }]);
    const before = (await t.api('GET', '/v1/status')).body.head;
    const run = await sweep(t, bob.token);
    expect(run.filed).to.deep.equal(['finding-dangling-edge-task-commit']);
    const gitDir = join(t.dataDir, 'tenants', t.org, 'graph.git');
    const log = execFileSync('git', ['--git-dir', gitDir, 'log', '--format=%H%n%B%n--end--', `${before}..main`], { encoding: 'utf8' });
    const commits = log
      .split('--end--')
      .map((c) => c.trim())
      .filter(Boolean);
    expect(commits).to.have.length(1);
    expect(commits[0]).to.include('Svc-Via: gardener').and.include('Svc-Internal: true').and.include(`Svc-Person: ${bob.id}`);
    const finding = await node(t, 'finding-dangling-edge-task-commit');
    expect(finding.frontmatter).to.include({ author: bob.id, authored_via: 'gardener' });
  });

  it('a finding write refused by a graph schema hook is reported under skipped; the others still land', async () => {
    const hook =
      "(input) => String(input.node.summary || '').includes('task-refused') ? { allow: false, reason: 'not this one' } : { allow: true }";
    await put(t, [
      { id: 'schema-finding-gate', type: 'schema', summary: 'refuse some findings', applies_to: 'finding', hooks: { transition: hook } },
    ]);
    await post(t, '/v1/nodes/schema-finding-gate/status', { status: 'active' }, alice.token);
    await put(t, [
      { id: 'task-refused', type: 'task', summary: 'its finding is refused', edges: [{ type: 'blocks', to: 'task-void-1' }] },
      { id: 'task-accepted', type: 'task', summary: 'its finding lands', edges: [{ type: 'blocks', to: 'task-void-2' }] },
    ]);
    const run = await sweep(t);
    expect(run.filed).to.deep.equal(['finding-dangling-edge-task-accepted']);
    expect(run.skipped).to.include('finding-dangling-edge-task-refused');
    expect((await t.api('GET', '/v1/nodes/finding-dangling-edge-task-refused')).status).to.equal(404);
    expect(await openChecks(t, 'task-accepted')).to.deep.equal(['dangling-edge']);
  });
});
