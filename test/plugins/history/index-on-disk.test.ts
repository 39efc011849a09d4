/**
 * The commit index on disk across restarts (issue 27 item 3), through the real HTTP server:
 * it catches up with commits made while it was closed (here by plain git), cuts a torn tail
 * and appends what it lost, rebuilds when the history was rewritten, and answers node
 * history, history entries and the change feed the same whether it was kept in step live,
 * reopened from its snapshot, read back without the snapshot, or rebuilt from git.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createLogger, ManualClock } from '../../../kernel/config.js';
import { nodePath } from '../../../kernel/git/objects.js';
import { startServer, type RunningServer } from '../../../kernel/server.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { historyPlugin } from '../../../plugins/history/index.js';
import { addPerson, putNodes, startTestServer, testServerConfig } from '../../helpers/harness.js';
import { directWrite, relaxHookTimeout } from './helpers.js';

function git(args: string[], cwd?: string): string {
  const env = {
    ...process.env,
    GIT_AUTHOR_NAME: 'Mia Member',
    GIT_AUTHOR_EMAIL: 'mia.member@example.test',
    GIT_COMMITTER_NAME: 'Mia Member',
    GIT_COMMITTER_EMAIL: 'mia.member@example.test',
  };
  return execFileSync('git', args, { cwd, encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Commits made with plain git in a clone of the tenant's repository, pushed back (`force` for a rewrite). */
function withClone(gitdir: string, fn: (work: string) => void, force = false): void {
  const work = mkdtempSync(join(tmpdir(), 'wg-index-disk-work-'));
  try {
    git(['clone', '-q', '--branch', 'main', gitdir, work]);
    fn(work);
    git(['push', '-q', ...(force ? ['-f'] : []), 'origin', 'main'], work);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

interface Running {
  server: RunningServer;
  logs: string[];
  get(path: string): Promise<{ status: number; body: any }>;
}

describe('history: the commit index on disk across restarts', function () {
  this.timeout(120_000);
  let dataDir: string;
  let token = '';
  let gitdir = '';
  let indexDir = '';

  async function start(): Promise<Running> {
    const logs: string[] = [];
    const config = await testServerConfig(dataDir);
    const server = await startServer({
      config,
      plugins: [corePlugin, historyPlugin],
      clock: new ManualClock(),
      log: createLogger((l) => logs.push(l)),
    });
    const get = async (path: string) => {
      const res = await fetch(server.url + path, { headers: { authorization: `Bearer ${token}` } });
      return { status: res.status, body: (await res.json()) as any };
    };
    return { server, logs, get };
  }

  /** Every read of history the plugin answers, for these nodes; the feed without its generation time. */
  async function answers(r: Running, ids: string[]): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {};
    for (const id of ids) {
      const list = await r.get(`/v1/nodes/${id}/history?limit=200`);
      expect(list.status, JSON.stringify(list.body)).to.equal(200);
      out[`history ${id}`] = list.body;
      out[`history ${id} limit 2`] = (await r.get(`/v1/nodes/${id}/history?limit=2`)).body;
      // every entry of the short histories; the hot node's newest and oldest few
      const entries = list.body.history as Array<{ sha: string; short: string }>;
      for (const h of entries.length > 8 ? [...entries.slice(0, 4), ...entries.slice(-2)] : entries) {
        out[`entry ${id} ${h.sha}`] = (await r.get(`/v1/nodes/${id}/history/${h.sha}`)).body;
        out[`entry ${id} ${h.short}`] = (await r.get(`/v1/nodes/${id}/history/${h.short}`)).body;
      }
    }
    const feed = async (query: string) => {
      const res = await r.get(`/v1/changes${query}`);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      delete res.body.generated_at;
      return res.body;
    };
    out.feed = await feed('?limit=500');
    out['feed limit 2'] = await feed('?limit=2');
    out['feed limit 5'] = await feed('?limit=5');
    const all = (out.feed as { changes: Array<{ commit: string }> }).changes;
    out['feed since'] = await feed(`?since=${all[Math.min(3, all.length - 1)]!.commit.slice(0, 9)}`);
    out['feed since date'] = await feed(`?since=${encodeURIComponent('2000-01-01T00:00:00Z')}&limit=3`);
    return out;
  }

  const logged = (r: Running, text: string) => r.logs.filter((l) => l.includes(text)).map((l) => JSON.parse(l) as Record<string, unknown>);
  const ids = ['task-d1', 'task-d2', 'task-d3', 'task-d4', 'task-hot', 'task-old'];
  let reference: Record<string, unknown> = {};

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'wg-index-disk-'));
    const t = await startTestServer({ plugins: [corePlugin, historyPlugin], dataDir, keepData: true });
    relaxHookTimeout(t);
    token = t.adminToken;
    gitdir = join(dataDir, 'tenants', t.org, 'graph.git');
    indexDir = join(dataDir, 'tenants', t.org, 'commit-index');
    // the commit index is loaded a second after start (kernel/warm.ts) or by its first read: read
    // now, so every commit below is appended to the index on disk as it is made
    expect((await t.api('GET', '/v1/changes?limit=1')).status).to.equal(200);
    const member = await addPerson(t, 'Mia Member');
    // one node per commit: the order of several nodes inside one commit is the event's live and
    // git's path order when read back from git (as it always was)
    await putNodes(t, [{ id: 'task-old', type: 'task', summary: 'Changed long ago' }]);
    for (const id of ['task-d1', 'task-d2', 'task-d3', 'task-d4', 'task-hot'])
      await putNodes(t, [{ id, type: 'task', summary: `Node ${id}` }]);
    t.clock.advance(60_000);
    await t.api('POST', '/v1/nodes/task-d1/status', { token: member.token, body: { status: 'blocked' } });
    await directWrite(t, { op: 'delete_node', via: 'rest' }, (d) => d.delete('task-d3'));
    // 300 commits on one node: the feed's walk leaves the commits for the per-node table
    for (let i = 0; i < 300; i++) {
      t.clock.advance(1_000);
      await directWrite(t, { op: 'touch', via: 'rest', internal: i % 2 === 0 }, (d) => {
        const n = d.get('task-hot')!;
        d.put({ frontmatter: n.frontmatter, body: `touch ${i}\n` });
      });
    }
    await t.close();
    // made with git while no server runs: an edit, a move (change R) and a deletion
    withClone(gitdir, (work) => {
      const p1 = join(work, nodePath('task', 'task-d1'));
      writeFileSync(p1, readFileSync(p1, 'utf8').replace('summary: Node task-d1', 'summary: Node task-d1, edited by hand'));
      git(['commit', '-qam', 'hand edit of task-d1'], work);
      const from = nodePath('task', 'task-d2');
      const to = from.replace(/\/[0-9a-f]{2}\//, '/zz/');
      mkdirSync(dirname(join(work, to)), { recursive: true });
      renameSync(join(work, from), join(work, to));
      git(['add', '-A'], work);
      git(['commit', '-qm', 'move task-d2'], work);
      git(['rm', '-q', nodePath('task', 'task-d4')], work);
      git(['commit', '-qm', 'remove task-d4'], work);
    });
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('a restart appends only the commits made while it was closed, here by plain git', async () => {
    const r = await start();
    try {
      reference = await answers(r, ids);
      expect(logged(r, 'commits appended from git').map((l) => l.commits)).to.deep.equal([3]);
      expect(logged(r, 'rebuilding')).to.deep.equal([]);
      const d1 = reference['history task-d1'] as { history: Array<{ sha: string; message: string }>; total: number };
      expect(d1.history[0]!.message).to.equal('hand edit of task-d1');
      const gitShas = git(['--git-dir', gitdir, 'log', '--format=%H', 'main', '--', nodePath('task', 'task-d1')])
        .trim()
        .split('\n');
      expect(d1.history.map((h) => h.sha)).to.deep.equal(gitShas);
      const move = reference[`entry task-d2 ${(reference['history task-d2'] as any).history[0].sha}`] as Record<string, unknown>;
      expect(move).to.include({ change: 'R', previous_path: nodePath('task', 'task-d2') });
      const removal = reference[`entry task-d4 ${(reference['history task-d4'] as any).history[0].sha}`] as Record<string, unknown>;
      expect(removal).to.include({ change: 'D', content: null });
      const deleted = (reference.feed as any).changes.find((c: { id: string }) => c.id === 'task-d3');
      expect(deleted).to.include({ change: 'D', title: 'Node task-d3' });
      expect((reference['feed limit 2'] as any).changes.map((c: { id: string }) => c.id)).to.deep.equal(['task-d4', 'task-d2']);
      // past the hot node's 300 commits the walk continues from the per-node table
      expect((reference['feed limit 5'] as any).changes.map((c: { id: string }) => c.id)).to.deep.equal([
        'task-d4',
        'task-d2',
        'task-d1',
        'task-hot',
        'task-d3',
      ]);
      expect((reference['history task-hot'] as { total: number }).total).to.equal(301);
    } finally {
      await r.server.close();
    }
  });

  it('the feed equals a newest-first walk of git log (the first change met per node)', async () => {
    const log = git(['--git-dir', gitdir, 'log', '--first-parent', '--no-renames', '--name-only', '--format=@%H', 'main']);
    const met: string[] = [];
    for (const line of log.split('\n')) {
      const id = /^nodes\/(?:[^/]+\/)*([^/]+)\.md$/.exec(line)?.[1];
      if (id && !met.includes(id)) met.push(id);
    }
    expect((reference.feed as any).changes.map((c: { id: string }) => c.id)).to.deep.equal(met);
    expect((reference['feed limit 5'] as any).changes.map((c: { id: string }) => c.id)).to.deep.equal(met.slice(0, 5));
  });

  it('reopened from its snapshot, read back without it, and rebuilt from git, it answers the same', async () => {
    for (const prepare of [
      () => undefined,
      () => rmSync(join(indexDir, 'nodes.snap')),
      () => rmSync(indexDir, { recursive: true, force: true }),
    ]) {
      prepare();
      const r = await start();
      try {
        expect(await answers(r, ids)).to.deep.equal(reference);
        expect(logged(r, 'torn tail')).to.deep.equal([]);
      } finally {
        await r.server.close();
      }
    }
  });

  it('a torn tail after a crash is cut, and the commit it lost is appended again from git', async () => {
    const older = join(dataDir, 'nodes.snap.older');
    copyFileSync(join(indexDir, 'nodes.snap'), older);
    let r = await start();
    let expected: Record<string, unknown>;
    try {
      for (const status of ['blocked', 'open']) {
        const res = await fetch(`${r.server.url}/v1/nodes/task-d1/status`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ status }),
        });
        expect(res.status).to.equal(200);
      }
      expected = await answers(r, ids);
    } finally {
      await r.server.close();
    }
    // as a crash would leave it: the snapshot from before those commits, the last record half written
    renameSync(older, join(indexDir, 'nodes.snap'));
    const records = join(indexDir, 'commits.dat');
    truncateSync(records, statSync(records).size - 5);
    r = await start();
    try {
      expect(await answers(r, ids)).to.deep.equal(expected);
      expect(logged(r, 'torn tail')).to.have.length(1);
      expect(logged(r, 'commits appended from git').map((l) => l.commits)).to.deep.equal([1]);
    } finally {
      await r.server.close();
    }
  });

  it('a history rewritten under it (reset and force-pushed) is rebuilt from git', async () => {
    withClone(
      gitdir,
      (work) => {
        git(['reset', '-q', '--hard', 'HEAD~2'], work);
        const p = join(work, nodePath('task', 'task-old'));
        writeFileSync(p, readFileSync(p, 'utf8').replace('summary: Changed long ago', 'summary: Changed in the new history'));
        git(['commit', '-qam', 'edit in the rewritten history'], work);
      },
      true,
    );
    const r = await start();
    try {
      await r.get('/v1/changes?limit=1');
      expect(logged(r, 'not a first-parent ancestor'), r.logs.join('\n')).to.have.length(1);
      for (const id of ['task-d1', 'task-old']) {
        const list = (await r.get(`/v1/nodes/${id}/history?limit=200`)).body;
        const gitShas = git(['--git-dir', gitdir, 'log', '--format=%H', 'main', '--', nodePath('task', id)])
          .trim()
          .split('\n');
        expect(list.history.map((h: { sha: string }) => h.sha)).to.deep.equal(gitShas);
        expect(list.total).to.equal(gitShas.length);
      }
      const feed = (await r.get('/v1/changes?limit=1')).body;
      expect(feed.changes[0]).to.include({ id: 'task-old', change: 'M' });
      expect(feed.head).to.equal(git(['--git-dir', gitdir, 'rev-parse', 'main']).trim());
    } finally {
      await r.server.close();
    }
  });
});
