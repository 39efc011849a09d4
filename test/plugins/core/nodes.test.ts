import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { corePlugin } from '../../../plugins/core/index.js';
import { addPerson, md, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';

describe('core: node reads and writes (POST /v1/nodes, GET /v1/nodes/{id})', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ plugins: [corePlugin] });
  });
  after(async () => t.close());

  const gitdir = () => join(t.dataDir, 'tenants', t.org, 'graph.git');
  const git = (...args: string[]) => execFileSync('git', ['--git-dir', gitdir(), ...args], { encoding: 'utf8' });

  it('creates a node from markdown, stamps the author from the token and discards a supplied one', async () => {
    const res = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [md({ id: 'task-alpha', type: 'task', summary: 'Alpha task', author: 'mallory', authored_via: 'capture' }, 'Body text\n')],
      },
    });
    expect(res.status).to.equal(200);
    expect(res.body.results[0]).to.include({ status: 'created', id: 'task-alpha' });
    expect(res.body.results[0].revision).to.match(/^[0-9a-f]{40}$/);
    const node = await t.api('GET', '/v1/nodes/task-alpha');
    expect(node.status).to.equal(200);
    expect(node.body.frontmatter.author).to.equal(t.adminPerson);
    expect(node.body.frontmatter.authored_via).to.equal('rest');
    expect(node.body.frontmatter.status).to.equal('open');
    expect(node.body.body).to.equal('Body text\n');
    expect(node.body.revision).to.equal(res.body.results[0].revision);
    expect(node.body.markdown).to.contain('id: task-alpha');
    // the commit is authored by the acting person
    expect(git('log', '-1', '--format=%an <%ae>|%s')).to.equal('Admin <admin@localhost>|put_node: task-alpha\n');
    // the revision is the git blob id of the stored file
    const path = git('ls-tree', '-r', '--name-only', 'HEAD')
      .split('\n')
      .find((p) => p.endsWith('/task-alpha.md'))!;
    expect(path).to.match(/^nodes\/task\/[0-9a-f]{2}\/task-alpha\.md$/);
    expect(git('rev-parse', `HEAD:${path}`).trim()).to.equal(node.body.revision);
  });

  it('accepts {node, if_exists, revision} entries and object nodes', async () => {
    const res = await t.api('POST', '/v1/nodes', {
      body: { nodes: [{ node: { id: 'issue-beta', type: 'issue', summary: 'Beta', body: 'x' } }] },
    });
    expect(res.status).to.equal(200);
    expect(res.body.results[0]).to.include({ status: 'created', id: 'issue-beta' });
  });

  it('if_exists: error (default) is a 409 conflict, skip reports skipped, update needs the current revision', async () => {
    const current = (await t.api('GET', '/v1/nodes/task-alpha')).body.revision;
    const again = await t.api('POST', '/v1/nodes', { body: { nodes: [md({ id: 'task-alpha', type: 'task', summary: 'Alpha again' })] } });
    expect(again.status).to.equal(207);
    expect(again.body.results[0].status).to.equal('failed');
    expect(again.body.results[0].error.code).to.equal('conflict');

    const skip = await t.api('POST', '/v1/nodes', {
      body: { if_exists: 'skip', nodes: [md({ id: 'task-alpha', type: 'task', summary: 'Alpha again' })] },
    });
    expect(skip.status).to.equal(200);
    expect(skip.body.results[0]).to.include({ status: 'skipped', revision: current });

    const noRevision = await t.api('POST', '/v1/nodes', {
      body: { nodes: [{ node: md({ id: 'task-alpha', type: 'task', summary: 'x' }), if_exists: 'update' }] },
    });
    expect(noRevision.body.results[0].error.code).to.equal('validation_failed');

    const stale = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [{ node: md({ id: 'task-alpha', type: 'task', summary: 'Alpha v2' }), if_exists: 'update', revision: '0'.repeat(40) }],
      },
    });
    expect(stale.status).to.equal(207);
    expect(stale.body.results[0].error.code).to.equal('conflict');
    expect(stale.body.results[0].error.details.current_revision).to.equal(current);

    const ok = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          { node: md({ id: 'task-alpha', type: 'task', summary: 'Alpha v2' }, 'Body text\n'), if_exists: 'update', revision: current },
        ],
      },
    });
    expect(ok.status).to.equal(200);
    expect(ok.body.results[0].status).to.equal('updated');
    expect(ok.body.results[0].revision).to.not.equal(current);
    // the old revision is now stale: never last-write-wins
    const lost = await t.api('POST', '/v1/nodes', {
      body: { nodes: [{ node: md({ id: 'task-alpha', type: 'task', summary: 'Alpha v3' }), if_exists: 'update', revision: current }] },
    });
    expect(lost.body.results[0].error.code).to.equal('conflict');
    expect((await t.api('GET', '/v1/nodes/task-alpha')).body.frontmatter.summary).to.equal('Alpha v2');
  });

  it('applies entries in order; earlier entries stay when a later one fails (207), and a failure commits nothing', async () => {
    const head = git('rev-parse', 'HEAD').trim();
    const res = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          md({ id: 'task-gamma', type: 'task', summary: 'Gamma' }),
          md({ id: 'task-delta', type: 'task', summary: '' }),
          md({ id: 'task-eps', type: 'task', summary: 'Eps' }),
        ],
      },
    });
    expect(res.status).to.equal(207);
    expect(res.body.results.map((r: { status: string }) => r.status)).to.deep.equal(['created', 'failed', 'created']);
    expect(res.body.results[1].error.code).to.equal('validation_failed');
    expect(res.body.results[1].error.details.errors).to.be.an('array').that.is.not.empty;
    expect((await t.api('GET', '/v1/nodes/task-delta')).status).to.equal(404);
    // exactly two commits were added: one per applied entry
    expect(git('rev-list', '--count', `${head}..HEAD`).trim()).to.equal('2');
  });

  it('completion-resolver gate: a node created already terminal needs its resolver applied first', async () => {
    const wrongOrder = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          md({ id: 'task-done-early', type: 'task', status: 'done', summary: 'Done already' }),
          md({ id: 'task-fixer', type: 'task', summary: 'Fixer', edges: [{ type: 'resolves', to: 'task-done-early' }] }),
        ],
      },
    });
    expect(wrongOrder.status).to.equal(207);
    expect(wrongOrder.body.results[0].error.code).to.equal('transition_denied');
    const rightOrder = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          md({ id: 'task-fixer-2', type: 'task', summary: 'Fixer', edges: [{ type: 'resolves', to: 'task-done-2' }] }),
          md({ id: 'task-done-2', type: 'task', status: 'done', summary: 'Done with resolver' }),
        ],
      },
    });
    expect(rightOrder.status).to.equal(200);
    const read = await t.api('GET', '/v1/nodes/task-done-2');
    expect(read.body.resolution).to.include({ by: 'task-fixer-2', edge: 'resolves', lagging: false });
  });

  it('reports a lagging resolution, open findings and supersession on a node read', async () => {
    await putNodes(t, [
      { id: 'issue-lag', type: 'issue', summary: 'Still open' },
      { id: 'task-resolver', type: 'task', summary: 'Resolves it', edges: [{ type: 'resolves', to: 'issue-lag' }] },
      { id: 'spec-old', type: 'spec', summary: 'Old spec' },
      { id: 'spec-new', type: 'spec', summary: 'New spec', edges: [{ type: 'supersedes', to: 'spec-old' }] },
      {
        id: 'finding-lag',
        type: 'finding',
        summary: 'lagging resolution',
        check: 'lagging-resolution',
        edges: [{ type: 'concerns', to: 'issue-lag' }],
      },
    ]);
    const lag = await t.api('GET', '/v1/nodes/issue-lag');
    expect(lag.body.resolution).to.include({ by: 'task-resolver', lagging: true, title: 'Resolves it' });
    expect(lag.body.open_findings).to.deep.equal([{ id: 'finding-lag', check: 'lagging-resolution', summary: 'lagging resolution' }]);
    const old = await t.api('GET', '/v1/nodes/spec-old');
    expect(old.body.superseded_by).to.include({ id: 'spec-new' });
    const plain = await t.api('GET', '/v1/nodes/spec-new');
    expect(plain.body).to.not.have.any.keys('resolution', 'open_findings', 'superseded_by');
  });

  it('unknown id is 404, malformed id is 422', async () => {
    const missing = await t.api('GET', '/v1/nodes/task-nope');
    expect(missing.status).to.equal(404);
    expect(missing.body.error.code).to.equal('not_found');
    const bad = await t.api('GET', '/v1/nodes/Task_Bad');
    expect(bad.status).to.equal(422);
    expect(bad.body.error).to.have.keys('code', 'message', 'details');
  });

  it('rejects unknown types, wrong prefixes, bad statuses and bad markdown with 422', async () => {
    const cases = [
      md({ id: 'widget-x', type: 'widget', summary: 'x' }),
      md({ id: 'task-x', type: 'issue', summary: 'x' }),
      md({ id: 'task-y', type: 'task', status: 'finished', summary: 'x' }),
      'no frontmatter at all',
      '---\nid: [unclosed\n---\n',
    ];
    const res = await t.api('POST', '/v1/nodes', { body: { nodes: cases } });
    expect(res.status).to.equal(207);
    const codes = res.body.results.map((r: { error?: { code: string } }) => r.error?.code);
    expect(codes).to.deep.equal(['validation_failed', 'validation_failed', 'transition_denied', 'validation_failed', 'validation_failed']);
  });

  it('enforces the node limits: summary 500, body 8 KB, 40 edges, 40 commits, sha 7-40 hex', async () => {
    const edges = Array.from({ length: 41 }, (_, i) => ({ type: 'relates-to', to: `task-e${i}` }));
    const commits = Array.from({ length: 41 }, (_, i) => `repo-a@${(i + 1).toString(16).padStart(7, '0')}`);
    const res = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          md({ id: 'task-l1', type: 'task', summary: 'x'.repeat(501) }),
          md({ id: 'task-l2', type: 'task', summary: 'ok' }, 'y'.repeat(8 * 1024 + 1)),
          md({ id: 'task-l3', type: 'task', summary: 'ok', edges }),
          md({ id: 'task-l4', type: 'task', summary: 'ok', commits }),
          md({ id: 'task-l5', type: 'task', summary: 'ok', commits: ['repo-a@ABCDEF1'] }),
          md(
            { id: 'task-l6', type: 'task', summary: 'x'.repeat(500), edges: edges.slice(0, 40), commits: commits.slice(0, 40) },
            'y'.repeat(8 * 1024),
          ),
        ],
      },
    });
    expect(res.status).to.equal(207);
    expect(res.body.results.map((r: { status: string }) => r.status)).to.deep.equal([
      'failed',
      'failed',
      'failed',
      'failed',
      'failed',
      'created',
    ]);
    for (const r of res.body.results.slice(0, 5)) expect(r.error.code).to.equal('validation_failed');
  });

  it('refuses person nodes through put_node (only the admin people route creates them)', async () => {
    const res = await t.api('POST', '/v1/nodes', {
      body: { nodes: [md({ id: 'person-sneaky', type: 'person', summary: 'x', name: 'x', email: 'x@y' })] },
    });
    expect(res.body.results[0].error.code).to.equal('forbidden');
  });

  it('an identical re-put is a no-op: skipped, no commit', async () => {
    const before = await t.api('GET', '/v1/nodes/task-gamma');
    const head = git('rev-parse', 'HEAD').trim();
    const res = await t.api('POST', '/v1/nodes', {
      body: { nodes: [{ node: before.body.markdown, if_exists: 'update', revision: before.body.revision }] },
    });
    expect(res.body.results[0].status).to.equal('skipped');
    expect(git('rev-parse', 'HEAD').trim()).to.equal(head);
  });

  it('a token without a person node can read but not write (403)', async () => {
    const other = await addPerson(t, 'Ghost');
    const tenant = t.server.services.tenants.get(t.org)!;
    // unbind: the token now names a person that does not exist
    await tenant.tokens.mutate((records) => {
      for (const r of records.values()) if (r.person === other.id) r.person = 'person-missing';
    });
    const me = await t.api('GET', '/v1/me', { token: other.token });
    if (me.status !== 200) console.log(me.text);
    expect(me.body).to.include({ bound: false, person: null, is_admin: false });
    const write = await t.api('POST', '/v1/nodes', {
      token: other.token,
      body: { nodes: [md({ id: 'task-ghost', type: 'task', summary: 'x' })] },
    });
    expect(write.status).to.equal(403);
  });

  it('keeps git fsck clean', () => {
    execFileSync('git', ['--git-dir', gitdir(), 'fsck', '--full', '--strict'], { stdio: 'pipe' });
  });
});
