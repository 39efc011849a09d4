import { expect } from 'chai';
import { corePlugin } from '../../../plugins/core/index.js';
import { addPerson, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';

describe('core: status, me, org choices, schema registry', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ plugins: [corePlugin], config: { orgSlug: 'acme' } });
    await putNodes(t, [
      { id: 'task-s1', type: 'task', summary: 'First line\nsecond line', project: 'proj-web' },
      { id: 'issue-s2', type: 'issue', summary: 'Issue', title: 'Explicit title', project: 'repo-api' },
    ]);
  });
  after(async () => t.close());

  it('GET /v1/status: node count, projects, head, uptime, metrics; titles=1 adds the title index', async () => {
    const res = await t.api('GET', '/v1/status');
    expect(res.status).to.equal(200);
    expect(res.body).to.include.keys('node_count', 'projects', 'head', 'uptime', 'metrics');
    expect(res.body.node_count).to.equal(4);
    expect(res.body.projects).to.deep.equal(['proj-web', 'repo-api']);
    expect(res.body.head).to.match(/^[0-9a-f]{40}$/);
    expect(res.body).to.not.have.property('titles');
    const titled = await t.api('GET', '/v1/status?titles=1');
    expect(titled.body.titles).to.deep.include({ id: 'task-s1', type: 'task', project: 'proj-web', title: 'First line' });
    expect(titled.body.titles).to.deep.include({ id: 'issue-s2', type: 'issue', project: 'repo-api', title: 'Explicit title' });
  });

  it('GET /v1/me: person, name, email, bound, is_admin, org from the org setting', async () => {
    const me = await t.api('GET', '/v1/me');
    expect(me.body).to.deep.equal({
      person: t.adminPerson,
      name: 'Admin',
      email: 'admin@localhost',
      bound: true,
      is_admin: true,
      org: 'acme',
    });
    const carol = await addPerson(t, 'Carol');
    const other = await t.api('GET', '/v1/me', { token: carol.token });
    expect(other.body).to.include({ person: carol.id, bound: true, is_admin: false, org: 'acme' });
  });

  it('GET /v1/me/org-choices without an identity provider answers source: bound', async () => {
    const res = await t.api('GET', '/v1/me/org-choices');
    expect(res.body).to.deep.equal({ org_choices: [{ slug: 'acme', label: 'acme', default: true }], source: 'bound' });
  });

  it('GET /v1/schema: the full registry shape with every seed type and edge', async () => {
    const res = await t.api('GET', '/v1/schema');
    expect(res.body).to.include.keys(
      'default_edge_weight',
      'node_types',
      'edge_types',
      'queue_policy',
      'policies',
      'registers',
      'stale_overrides',
      'alias_collisions',
    );
    const types = res.body.node_types.map((x: { type: string }) => x.type);
    expect(types).to.include.members([
      'task',
      'issue',
      'dec',
      'spec',
      'question',
      'correction',
      'finding',
      'capture',
      'person',
      'agent',
      'proj',
      'repo',
      'profile',
      'lens',
      'wf',
      'run',
      'schema',
    ]);
    for (const entry of res.body.node_types) {
      expect(entry).to.include.keys(
        'type',
        'description',
        'prefix',
        'always_on',
        'traversable',
        'capturable',
        'queueable',
        'non_resolving',
        'hooks',
        'schema_id',
        'schema_version',
        'source',
      );
      expect(entry.prefix).to.equal(`${entry.type}-`);
      expect(entry.source).to.equal('seed');
      expect(entry).to.not.have.property('code');
    }
    const task = res.body.node_types.find((x: { type: string }) => x.type === 'task');
    expect(task.statuses).to.deep.equal(['open', 'in-progress', 'blocked', 'review', 'done', 'cancelled']);
    expect(task.terminal_statuses).to.deep.equal(['done', 'cancelled']);
    expect(task.queueable).to.equal(true);
    const edges = Object.fromEntries(res.body.edge_types.map((e: { type: string }) => [e.type, e]));
    for (const name of [
      'blocks',
      'resolves',
      'answers',
      'supersedes',
      'assigned',
      'concerns',
      'stewards',
      'owned-by',
      'member-of',
      'part-of',
      'review-requested',
      'reviewed-by',
      'changes-requested-by',
      'approved-by',
      'mentions',
      'relates-to',
    ]) {
      expect(edges[name], name).to.include.keys(
        'type',
        'description',
        'weight',
        'weight_default',
        'inverse_label',
        'aliases',
        'capturable',
        'hooks',
      );
    }
    expect(edges.blocks.inverse_label).to.equal('blocked-by');
    expect(edges.blocks.inverse_aliases).to.deep.equal(['depends-on']);
    expect(res.body.alias_collisions).to.deep.equal([]);
  });

  it("GET /v1/schema: every alias a client may send is in its edge type's `aliases` list, and each one is accepted by an edge write", async () => {
    const res = await t.api('GET', '/v1/schema');
    const blocks = res.body.edge_types.find((e: { type: string }) => e.type === 'blocks');
    expect(blocks.aliases).to.include('depends-on');
    for (const e of res.body.edge_types as Array<{ type: string; aliases: string[]; inverse_aliases: string[] }>) {
      expect(e.aliases, e.type).to.include.members(e.inverse_aliases);
    }
    await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          { node: { id: 'task-alias-a', type: 'task', summary: 'alias source' } },
          { node: { id: 'task-alias-b', type: 'task', summary: 'alias target' } },
        ],
      },
    });
    for (const e of res.body.edge_types as Array<{ type: string; aliases: string[] }>) {
      for (const alias of e.aliases) {
        const added = await t.api('POST', '/v1/nodes/task-alias-a/edges', { body: { type: alias, to: 'task-alias-b' } });
        expect(added.status, `${alias}: ${added.text}`).to.be.oneOf([200, 201]);
      }
    }
  });

  it('GET /v1/schema?code=1 embeds hook sources that are plain function expressions', async () => {
    const res = await t.api('GET', '/v1/schema?code=1');
    const task = res.body.node_types.find((x: { type: string }) => x.type === 'task');
    expect(task.code.transition)
      .to.be.a('string')
      .and.match(/^\(input\) =>/);
    const wf = res.body.node_types.find((x: { type: string }) => x.type === 'wf');
    expect(wf.code.validate).to.contain('steps');
  });
});
