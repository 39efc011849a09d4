import { expect } from 'chai';
import { corePlugin } from '../../../plugins/core/index.js';
import { historyPlugin } from '../../../plugins/history/index.js';
import { putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';
import { directWrite, ok, relaxHookTimeout } from './helpers.js';

const FULL = '3f2a9c1d7e8b4a6f0c2d1e3f4a5b6c7d8e9f0a1b';
const OTHER = '3f2a9c1ffffffffffffffffffffffffffffffff0';

describe('history: GET /v1/commits/{sha} (docs/spec.md Reads rule 6)', () => {
  let t: TestServer;

  before(async () => {
    t = await startTestServer({ plugins: [corePlugin, historyPlugin] });
    relaxHookTimeout(t);
    await putNodes(t, [
      { id: 'repo-web', type: 'repo', summary: 'The web repo', aliases: ['frontend'] },
      { id: 'task-linked', type: 'task', summary: 'Linked by full sha', project: 'web', commits: [`web@${FULL}`] },
      { id: 'issue-short', type: 'issue', summary: 'Linked by abbreviation', commits: [`web@${FULL.slice(0, 9)}`] },
      { id: 'task-elsewhere', type: 'task', summary: 'Same sha, another repo', commits: [`api@${FULL.slice(0, 12)}`] },
      { id: 'task-near', type: 'task', summary: 'Shares only seven digits', commits: [`web@${OTHER}`] },
    ]);
  });
  after(async () => t.close());

  it('finds every node linking the commit, abbreviated or full, as commit matches with their project', async () => {
    const full = await ok(t, `/v1/commits/${FULL}`);
    expect(full).to.be.an('array');
    expect(full.map((m: any) => m.id)).to.deep.equal(['task-elsewhere', 'issue-short', 'task-linked']);
    const linked = full.find((m: any) => m.id === 'task-linked');
    expect(linked).to.deep.equal({
      repo: 'web',
      sha: FULL,
      id: 'task-linked',
      type: 'task',
      title: 'Linked by full sha',
      summary: 'Linked by full sha',
      status: 'open',
      project: 'web',
    });
    expect(full.find((m: any) => m.id === 'issue-short').sha).to.equal(FULL.slice(0, 9));
    const ten = await ok(t, `/v1/commits/${FULL.slice(0, 10)}`);
    expect(ten.map((m: any) => m.id)).to.deep.equal(['task-elsewhere', 'issue-short', 'task-linked']);
  });

  it('a seven-digit sha matches every link that agrees on those digits', async () => {
    const seven = await ok(t, `/v1/commits/${FULL.slice(0, 7)}`);
    expect(seven.map((m: any) => m.id).sort()).to.deep.equal(['issue-short', 'task-elsewhere', 'task-linked', 'task-near']);
  });

  it('repo= narrows to one repository (slug, repo-<slug> or an alias)', async () => {
    expect((await ok(t, `/v1/commits/${FULL}?repo=web`)).map((m: any) => m.id)).to.deep.equal(['issue-short', 'task-linked']);
    expect((await ok(t, `/v1/commits/${FULL}?repo=repo-web`)).map((m: any) => m.id)).to.deep.equal(['issue-short', 'task-linked']);
    expect((await ok(t, `/v1/commits/${FULL}?repo=api`)).map((m: any) => m.id)).to.deep.equal(['task-elsewhere']);
    expect(await ok(t, `/v1/commits/${FULL}?repo=nowhere`)).to.deep.equal([]);
    expect((await t.api('GET', `/v1/commits/${FULL}?repo=Bad_Repo`)).status).to.equal(422);
  });

  it('follows links as they are added and removed', async () => {
    const sha = 'abcdef0123456789abcdef0123456789abcdef01';
    expect(await ok(t, `/v1/commits/${sha}`)).to.deep.equal([]);
    expect((await t.api('POST', '/v1/nodes/task-near/commits', { body: { repo: 'web', sha } })).status).to.equal(200);
    expect((await ok(t, `/v1/commits/${sha.slice(0, 8)}`)).map((m: any) => m.id)).to.deep.equal(['task-near']);
    await directWrite(t, { op: 'unlink', via: 'rest' }, (d) => {
      const n = d.get('task-near')!;
      n.frontmatter.commits = [`web@${OTHER}`];
      d.put(n);
    });
    expect(await ok(t, `/v1/commits/${sha}`)).to.deep.equal([]);
    expect((await ok(t, `/v1/commits/${OTHER}`)).map((m: any) => m.id)).to.deep.equal(['task-near']);
  });

  it('an unknown commit is an empty list; fewer than 7 or non-hex characters is 422', async () => {
    expect(await ok(t, '/v1/commits/0123456789')).to.deep.equal([]);
    for (const bad of ['3f2a9c', 'zzzzzzz', 'g3f2a9c1d', '3'.repeat(41)]) {
      const res = await t.api('GET', `/v1/commits/${bad}`);
      expect(res.status, bad).to.equal(422);
      expect(res.body.error.code).to.equal('validation_failed');
    }
  });
});
