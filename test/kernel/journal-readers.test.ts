/**
 * With durability on, a commit is acknowledged once its journal record is fdatasynced and
 * its loose objects and ref are written out later, in bulk. Everything the server answers
 * through a git process (history patches, commit lookups, bundle exports) must still see
 * every acknowledged write at once; an outside git sees them after the write-out lag.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { putNodes, startTestServer, type TestServer } from '../helpers/harness.js';

function git(args: string[], cwd?: string): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

describe('journal write path: git-backed reads right after acknowledged writes (fsync on)', function () {
  this.timeout(60_000);
  let t: TestServer;
  let work: string;
  let gitdir: string;

  before(async () => {
    t = await startTestServer({ config: { fsync: true } });
    gitdir = join(t.dataDir, 'tenants', t.org, 'graph.git');
    work = mkdtempSync(join(tmpdir(), 'wg-journal-readers-'));
  });
  after(async () => {
    await t.close();
    rmSync(work, { recursive: true, force: true });
  });

  it('history patches and commit details include the write acknowledged just before', async () => {
    await putNodes(t, [{ id: 'task-jr', type: 'task', summary: 'Journal reader' }]);
    for (let i = 0; i < 5; i++) {
      const priority = ['p1', 'p2', 'p3', 'p1', 'p2'][i]!;
      const pr = await t.api('POST', '/v1/nodes/task-jr/priority', { body: { priority } });
      expect(pr.body.status).to.equal('updated');
      const { body: hist } = await t.api('GET', '/v1/nodes/task-jr/history');
      expect(hist.count).to.equal(i + 2);
      const { body: status } = await t.api('GET', '/v1/status');
      expect(hist.history[0].sha).to.equal(status.head);
      const detail = await t.api('GET', `/v1/nodes/task-jr/history/${hist.history[0].sha}`);
      expect(detail.status, JSON.stringify(detail.body)).to.equal(200);
      expect(detail.body.patch).to.include(`+priority: ${priority}`);
    }
  });

  it('a bundle export carries the head acknowledged just before it', async () => {
    for (let round = 0; round < 3; round++) {
      await putNodes(t, [{ id: `task-jb-${round}`, type: 'task', summary: `Bundle ${round}` }]);
      const head = (await t.api('GET', '/v1/status')).body.head;
      const res = await fetch(`${t.url}/v1/export?history=1`, { headers: { authorization: `Bearer ${t.adminToken}` } });
      expect(res.status).to.equal(200);
      expect(res.headers.get('x-svc-head')).to.equal(head);
      const bundle = join(work, `b${round}.bundle`);
      writeFileSync(bundle, Buffer.from(await res.arrayBuffer()));
      const clone = join(work, `clone${round}`);
      git(['clone', '-q', bundle, clone]);
      expect(git(['rev-parse', 'HEAD'], clone).trim()).to.equal(head);
    }
  });

  it('an outside git process sees the head within the write-out lag, and fsck is clean', async () => {
    await putNodes(t, [{ id: 'task-jo', type: 'task', summary: 'Outside reader' }]);
    const head = (await t.api('GET', '/v1/status')).body.head;
    const deadline = Date.now() + 5_000;
    let seen = '';
    while (Date.now() < deadline) {
      seen = git(['--git-dir', gitdir, 'rev-parse', 'refs/heads/main']).trim();
      if (seen === head) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(seen).to.equal(head);
    git(['--git-dir', gitdir, 'fsck', '--full', '--strict']);
  });
});
