import { expect } from 'chai';
import { corePlugin } from '../../../plugins/core/index.js';
import { historyPlugin } from '../../../plugins/history/index.js';
import { leasesPlugin } from '../../../plugins/leases/index.js';
import { queuePlugin } from '../../../plugins/queue/index.js';
import { aliasProposalId } from '../../../plugins/history/operations.js';
import { addPerson, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';
import { ok, relaxHookTimeout } from './helpers.js';

const ROOT_SHA = 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678';

describe('history: GET /v1/briefing/{project} (docs/spec.md Reads rule 3)', () => {
  let t: TestServer;
  let member: { id: string; token: string };

  before(async () => {
    t = await startTestServer({ plugins: [corePlugin, historyPlugin, leasesPlugin, queuePlugin] });
    relaxHookTimeout(t);
    member = await addPerson(t, 'Mia Member');
    await putNodes(t, [
      { id: 'proj-shop', type: 'proj', summary: 'The shop', aliases: ['storefront'] },
      { id: 'repo-shop-web', type: 'repo', summary: 'Shop web app', aliases: ['shopweb'], edges: [{ type: 'member-of', to: 'proj-shop' }] },
      { id: 'repo-lonely', type: 'repo', summary: 'A repo with no grouping' },
      { id: 'task-s1', type: 'task', summary: 'Open shop work', project: 'proj-shop' },
      { id: 'task-s2', type: 'task', summary: 'Done shop web work', project: 'shop-web', status: 'open' },
    ]);
    await t.api('POST', '/v1/nodes/task-s2/status', { body: { status: 'done' } });
    // bodies are set through a full update so the briefing has something to show
    for (const [id, body] of [
      ['proj-shop', '# Shop\nGrouping brief.\n'],
      ['repo-shop-web', '# Shop web\nRepo brief.\n'],
    ]) {
      const node = await ok(t, `/v1/nodes/${id}`);
      const res = await t.api('POST', '/v1/nodes', {
        body: { nodes: [{ node: { ...node.frontmatter, body }, if_exists: 'update', revision: node.revision }] },
      });
      expect(res.status).to.equal(200);
    }
  });
  after(async () => t.close());

  it('proj-<slug>: the grouping briefing from its project node', async () => {
    const node = await ok(t, '/v1/nodes/proj-shop');
    const b = await ok(t, '/v1/briefing/proj-shop');
    expect(Object.keys(b).slice(0, 4)).to.deep.equal(['found', 'version', 'body', 'graph_status']);
    expect(b).to.include({ found: true, version: node.revision, body: '# Shop\nGrouping brief.\n', project: 'proj-shop' });
    expect(b).to.not.have.property('project_brief');
    expect(b.graph_status).to.include({ head: (await ok(t, '/v1/status')).head, scoped_nodes: 2, open: 1, done: 1 });
  });

  it('a bare repo slug (directly or through an alias) also returns its grouping as project_brief', async () => {
    for (const slug of ['shop-web', 'shopweb']) {
      const b = await ok(t, `/v1/briefing/${slug}`);
      expect(b).to.include({ found: true, body: '# Shop web\nRepo brief.\n', project: 'repo-shop-web' });
      expect(b.version).to.equal((await ok(t, '/v1/nodes/repo-shop-web')).revision);
      expect(b.project_brief).to.include({
        found: true,
        id: 'proj-shop',
        body: '# Shop\nGrouping brief.\n',
        version: (await ok(t, '/v1/nodes/proj-shop')).revision,
      });
    }
  });

  it('repo-<slug> returns only the repo brief', async () => {
    const b = await ok(t, '/v1/briefing/repo-shop-web');
    expect(b).to.include({ found: true, project: 'repo-shop-web' });
    expect(b).to.not.have.property('project_brief');
    expect((await ok(t, '/v1/briefing/lonely')).project_brief).to.equal(undefined);
  });

  it('a grouping alias resolves to the grouping', async () => {
    expect(await ok(t, '/v1/briefing/storefront')).to.include({ found: true, project: 'proj-shop' });
  });

  it('an unknown project is a successful found:false; a malformed slug is 422', async () => {
    const b = await ok(t, '/v1/briefing/no-such-project');
    expect(b).to.include({ found: false, version: null, body: null });
    expect(b.graph_status).to.include.keys('head', 'node_count');
    expect((await ok(t, '/v1/briefing/proj-missing')).found).to.equal(false);
    const bad = await t.api('GET', '/v1/briefing/Shop_Web');
    expect(bad.status).to.equal(422);
  });

  it('fp= learns fingerprints onto the owning project, as an internal write by the caller', async () => {
    const before = await ok(t, '/v1/nodes/repo-shop-web');
    const fp = `root:${ROOT_SHA},remote:https://GitHub.com/acme/shop-web.git`;
    const b = await ok(t, `/v1/briefing/shop-web?fp=${encodeURIComponent(fp)}`, member.token);
    expect(b.fingerprints_learned).to.deep.equal([`root:${ROOT_SHA}`, 'remote:github.com/acme/shop-web']);
    const after = await ok(t, '/v1/nodes/repo-shop-web');
    expect(after.frontmatter.fingerprints).to.deep.equal([`root:${ROOT_SHA}`, 'remote:github.com/acme/shop-web']);
    expect(after.frontmatter.author).to.equal(before.frontmatter.author, 'bookkeeping keeps the last editor');
    expect(b.version).to.equal(after.revision);
    const hist = await ok(t, '/v1/nodes/repo-shop-web/history?limit=1');
    expect(hist.history[0]).to.include({ internal: true, person: member.id, message: 'learn_fingerprints: repo-shop-web' });
    // the same fingerprints again (scp form of the remote): nothing new, no commit
    const again = await ok(t, `/v1/briefing/shop-web?fp=${encodeURIComponent('remote:git@github.com:acme/shop-web.git')}`, member.token);
    expect(again.fingerprints_learned).to.deep.equal([]);
    expect((await ok(t, '/v1/nodes/repo-shop-web/history?limit=1')).history[0].sha).to.equal(hist.history[0].sha);
  });

  it('a malformed fingerprint is 422 and changes nothing', async () => {
    const head = (await ok(t, '/v1/status')).head;
    for (const fp of ['root:xyz', 'origin:github.com/a/b', 'remote:', 'remote:nohost']) {
      const res = await t.api('GET', `/v1/briefing/shop-web?fp=${encodeURIComponent(fp)}`);
      expect(res.status, fp).to.equal(422);
    }
    expect((await ok(t, '/v1/status')).head).to.equal(head);
  });

  it('an unknown slug with a known fingerprint (an abbreviated root commit too) files an alias proposal', async () => {
    const b = await ok(t, `/v1/briefing/shop-frontend?fp=root:${ROOT_SHA.slice(0, 12)}`, member.token);
    expect(b.found).to.equal(false);
    const id = aliasProposalId('shop-frontend', 'repo-shop-web');
    expect(b.alias_proposal).to.deep.equal({
      id,
      status: 'proposed',
      alias: 'shop-frontend',
      project: 'repo-shop-web',
      fingerprint: `root:${ROOT_SHA.slice(0, 12)}`,
      filed: true,
    });
    // a proposed decision is a queueable node the queue shows for approval
    const dec = await ok(t, `/v1/nodes/${id}`);
    expect(dec.frontmatter).to.include({ type: 'dec', status: 'proposed' });
    expect((await ok(t, '/v1/schema')).node_types.find((x: any) => x.type === 'dec').queueable).to.equal(true);
    // and it appears in the decision queue as something to approve, scoped to its project
    const queue = await ok(t, '/v1/queue?limit=100');
    const item = queue.items.find((i: { id: string }) => i.id === id);
    expect(item, 'alias proposal in the queue').to.include({ suggest: 'approve', type: 'dec' });
  });

  it('files once per slug and project, and accepting the decision applies the alias', async () => {
    const fp = `root:${ROOT_SHA}`;
    const first = await ok(t, `/v1/briefing/shopfront?fp=${fp}`, member.token);
    const id = aliasProposalId('shopfront', 'repo-shop-web');
    expect(first.alias_proposal).to.include({ id, filed: true, project: 'repo-shop-web' });
    const dec = await ok(t, `/v1/nodes/${id}`);
    expect(dec.frontmatter).to.include({
      type: 'dec',
      status: 'proposed',
      alias: 'shopfront',
      alias_for: 'repo-shop-web',
      project: 'repo-shop-web',
    });
    expect(dec.frontmatter.title).to.equal('alias shopfront -> repo-shop-web');
    const second = await ok(t, `/v1/briefing/shopfront?fp=${fp}`, member.token);
    expect(second.alias_proposal).to.include({ id, filed: false, status: 'proposed' });
    expect((await ok(t, `/v1/nodes/${id}/history`)).count).to.equal(1);

    const accepted = await t.api('POST', `/v1/nodes/${id}/status`, { body: { status: 'accepted' } });
    expect(accepted.status).to.equal(200);
    expect(accepted.body.alias_applied).to.equal(true);
    expect((await ok(t, '/v1/nodes/repo-shop-web')).frontmatter.aliases).to.deep.equal(['shopweb', 'shopfront']);
    expect(await ok(t, '/v1/briefing/shopfront')).to.include({ found: true, project: 'repo-shop-web' });
  });

  it('an unknown slug with an unknown fingerprint files nothing', async () => {
    const head = (await ok(t, '/v1/status')).head;
    const b = await ok(t, '/v1/briefing/mystery?fp=root:ffffffffffff');
    expect(b.found).to.equal(false);
    expect(b).to.not.have.property('alias_proposal');
    expect((await ok(t, '/v1/status')).head).to.equal(head);
  });
});
