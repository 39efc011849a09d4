import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createLogger, ManualClock } from '../../../kernel/config.js';
import { nodePath } from '../../../kernel/git/objects.js';
import { startServer } from '../../../kernel/server.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { historyPlugin } from '../../../plugins/history/index.js';
import { addPerson, putNodes, startTestServer, type TestServer, testServerConfig } from '../../helpers/harness.js';
import { directWrite, ok, tenantOf, relaxHookTimeout } from './helpers.js';

function git(args: string[], cwd?: string, env: Record<string, string> = {}): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

describe('history: GET /v1/nodes/{id}/history (docs/spec.md Reads rule 4)', () => {
  let t: TestServer;
  let member: { id: string; token: string };
  let createdMarkdown = '';
  const pathH = nodePath('task', 'task-h');

  before(async () => {
    t = await startTestServer({ plugins: [corePlugin, historyPlugin] });
    relaxHookTimeout(t);
    member = await addPerson(t, 'Mia Member');
    await putNodes(t, [{ id: 'task-h', type: 'task', summary: 'History subject', body: 'first body\n' }]);
    createdMarkdown = (await ok(t, '/v1/nodes/task-h')).markdown;
    t.clock.advance(60_000);
    expect((await t.api('POST', '/v1/nodes/task-h/status', { token: member.token, body: { status: 'blocked' } })).status).to.equal(200);
    t.clock.advance(60_000);
    expect((await t.api('POST', '/v1/nodes/task-h/priority', { body: { priority: 'p1' } })).status).to.equal(200);
    t.clock.advance(60_000);
    await directWrite(t, { op: 'lease_bookkeeping', via: 'rest', internal: true }, (d) => {
      const n = d.get('task-h')!;
      d.put({ frontmatter: n.frontmatter, body: 'internal touch\n' });
    });
  });
  after(async () => t.close());

  it('lists every commit of the node newest first, attributed from the commit author', async () => {
    const res = await ok(t, '/v1/nodes/task-h/history');
    const status = await ok(t, '/v1/status');
    expect(res.id).to.equal('task-h');
    expect(res.head).to.equal(status.head);
    expect(res.count).to.equal(4);
    expect(res.history).to.have.length(4);
    const gitShas = git(['--git-dir', join(t.dataDir, 'tenants', t.org, 'graph.git'), 'log', '--format=%H', 'main', '--', pathH])
      .trim()
      .split('\n');
    expect(res.history.map((h: any) => h.sha)).to.deep.equal(gitShas);
    const [internal, priority, statusChange, creation] = res.history;
    for (const h of res.history) {
      expect(h).to.include.keys('sha', 'short', 'actor', 'actor_name', 'actor_email', 'date', 'message', 'internal', 'person');
      expect(h.short).to.equal(h.sha.slice(0, 7));
      expect(new Date(h.date).toISOString()).to.equal(h.date);
    }
    expect(creation.message).to.equal('put_node: task-h');
    expect(creation.person).to.equal(t.adminPerson);
    expect(creation.internal).to.equal(false);
    expect(statusChange.person).to.equal(member.id);
    expect(statusChange.actor).to.equal(member.id);
    expect(statusChange.actor_name).to.equal('Mia Member');
    expect(statusChange.actor_email).to.equal('mia.member@example.test');
    expect(statusChange.message).to.equal('set_status: task-h');
    expect(priority.person).to.equal(t.adminPerson);
    expect(internal.internal).to.equal(true, 'Svc-Internal writes are marked internal');
    expect(priority.internal).to.equal(false);
    // dates follow the injected clock, newest first
    expect(Date.parse(internal.date)).to.be.greaterThan(Date.parse(statusChange.date));
  });

  it('keeps up with new commits as they happen', async () => {
    const before = (await ok(t, '/v1/nodes/task-h/history')).count;
    await t.api('POST', '/v1/nodes/task-h/priority', { body: { priority: 'p2' } });
    const after = await ok(t, '/v1/nodes/task-h/history');
    expect(after.count).to.equal(before + 1);
    expect(after.history[0].sha).to.equal(after.head);
  });

  it('limit: default 50, clamped at 200, malformed is 422', async () => {
    await putNodes(t, [{ id: 'task-many', type: 'task', summary: 'Many commits' }]);
    for (let i = 0; i < 205; i++) {
      await directWrite(t, { op: 'bulk_edit', via: 'rest' }, (d) => {
        const n = d.get('task-many')!;
        d.put({ frontmatter: n.frontmatter, body: `revision ${i}\n` });
      });
    }
    const def = await ok(t, '/v1/nodes/task-many/history');
    expect(def.count).to.equal(50);
    expect(def.total).to.equal(206);
    expect((await ok(t, '/v1/nodes/task-many/history?limit=200')).count).to.equal(200);
    expect((await ok(t, '/v1/nodes/task-many/history?limit=1000')).count).to.equal(200);
    expect((await ok(t, '/v1/nodes/task-many/history?limit=3')).history.map((h: any) => h.sha)).to.deep.equal(
      def.history.slice(0, 3).map((h: any) => h.sha),
    );
    const bad = await t.api('GET', '/v1/nodes/task-many/history?limit=lots');
    expect(bad.status).to.equal(422);
    expect(bad.body.error.code).to.equal('validation_failed');
  });

  it('unknown id is 404, malformed id is 422', async () => {
    const missing = await t.api('GET', '/v1/nodes/task-never-was/history');
    expect(missing.status).to.equal(404);
    expect(missing.body.error.code).to.equal('not_found');
    const bad = await t.api('GET', '/v1/nodes/Task_H/history');
    expect(bad.status).to.equal(422);
  });

  it('needs a token', async () => {
    expect((await t.api('GET', '/v1/nodes/task-h/history', { token: null })).status).to.equal(401);
  });

  describe('GET /v1/nodes/{id}/history/{sha} (docs/spec.md Reads rule 5)', () => {
    it('creation: change A, the file content at that commit, an all-added patch', async () => {
      const { history } = await ok(t, '/v1/nodes/task-h/history');
      const creation = history[history.length - 1];
      const detail = await ok(t, `/v1/nodes/task-h/history/${creation.sha}`);
      expect(detail).to.include({ sha: creation.sha, change: 'A', internal: false, person: t.adminPerson });
      expect(detail.content).to.equal(createdMarkdown);
      expect(detail.patch).to.include('--- /dev/null');
      expect(detail.patch).to.include(`+++ b/${pathH}`);
      expect(detail.patch).to.include('+id: task-h');
      expect(detail.patch).to.match(/^@@ -0,0 \+1,\d+ @@/m);
    });

    it('a modification: change M with a unified diff of exactly that commit', async () => {
      const { history } = await ok(t, '/v1/nodes/task-h/history');
      const statusChange = history.find((h: any) => h.message === 'set_status: task-h');
      const detail = await ok(t, `/v1/nodes/task-h/history/${statusChange.sha}`);
      expect(detail.change).to.equal('M');
      expect(detail.patch).to.include(`--- a/${pathH}`);
      expect(detail.patch).to.include('-status: open');
      expect(detail.patch).to.include('+status: blocked');
      expect(detail.patch).to.not.include('priority: p1', 'the later priority commit is not part of this patch');
      expect(detail.content).to.include('status: blocked');
      expect(detail.content).to.not.include('priority:');
      const gitPatch = git([
        '--git-dir',
        join(t.dataDir, 'tenants', t.org, 'graph.git'),
        'show',
        '--format=',
        statusChange.sha,
        '--',
        pathH,
      ]);
      expect(gitPatch).to.include('+status: blocked');
    });

    it('an abbreviated sha (7 hex) resolves to the same entry', async () => {
      const { history } = await ok(t, '/v1/nodes/task-h/history');
      const full = await t.api('GET', `/v1/nodes/task-h/history/${history[1].sha}`);
      const short = await t.api('GET', `/v1/nodes/task-h/history/${history[1].sha.slice(0, 7)}`);
      expect(short.status).to.equal(200);
      expect(short.text).to.equal(full.text);
    });

    it('a sha that did not touch the node, or resolves to nothing, is 404; a malformed sha is 422', async () => {
      const other = (await ok(t, '/v1/nodes/task-many/history?limit=1')).history[0].sha;
      const notTouched = await t.api('GET', `/v1/nodes/task-h/history/${other}`);
      expect(notTouched.status).to.equal(404);
      expect(notTouched.body.error.code).to.equal('not_found');
      expect((await t.api('GET', '/v1/nodes/task-h/history/deadbeefdeadbeef')).status).to.equal(404);
      for (const bad of ['xyz1234', 'abc12', 'a'.repeat(41)]) {
        const res = await t.api('GET', `/v1/nodes/task-h/history/${bad}`);
        expect(res.status, bad).to.equal(422);
        expect(res.body.error.code).to.equal('validation_failed');
      }
      expect((await t.api('GET', '/v1/nodes/task-nope/history/abcdef1')).status).to.equal(404);
    });

    it('a deleted node keeps its history; the deleting commit has change D and content null', async () => {
      await putNodes(t, [{ id: 'task-doomed', type: 'task', summary: 'Will be deleted' }]);
      await directWrite(t, { op: 'delete_node', via: 'rest' }, (d) => d.delete('task-doomed'));
      expect((await t.api('GET', '/v1/nodes/task-doomed')).status).to.equal(404);
      const hist = await ok(t, '/v1/nodes/task-doomed/history');
      expect(hist.count).to.equal(2);
      const detail = await ok(t, `/v1/nodes/task-doomed/history/${hist.history[0].sha}`);
      expect(detail.change).to.equal('D');
      expect(detail.content).to.equal(null);
      expect(detail.patch).to.include('+++ /dev/null');
      expect(detail.patch).to.include('-id: task-doomed');
    });
  });
});

describe('history: the per-node commit index is rebuilt at start from git', () => {
  let dataDir: string;
  let adminToken = '';
  let member: { id: string; token: string };
  const before: Record<string, unknown> = {};

  it('rebuilds the same history, including commits made outside the server', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'wg-history-restart-'));
    const t = await startTestServer({ plugins: [corePlugin, historyPlugin], dataDir, keepData: true });
    relaxHookTimeout(t);
    adminToken = t.adminToken;
    member = await addPerson(t, 'Mia Member');
    await putNodes(t, [
      { id: 'task-r1', type: 'task', summary: 'One' },
      { id: 'task-r2', type: 'task', summary: 'Two' },
      { id: 'task-r3', type: 'task', summary: 'Three, deleted before the restart' },
    ]);
    await directWrite(t, { op: 'delete_node', via: 'rest' }, (d) => d.delete('task-r3'));
    await t.api('POST', '/v1/nodes/task-r1/status', { token: member.token, body: { status: 'blocked' } });
    await directWrite(t, { op: 'sweep', via: 'gardener', internal: true }, (d) => {
      const n = d.get('task-r2')!;
      d.put({ frontmatter: n.frontmatter, body: 'swept\n' });
    });
    for (const id of ['task-r1', 'task-r2']) before[id] = (await ok(t, `/v1/nodes/${id}/history`)).history;
    await tenantOf(t).drain();
    await t.close();

    // Two commits made with plain git, without the server's trailers: an edit by the member
    // (attributed through their email) and a move of task-r2's file (change R).
    const gitdir = join(dataDir, 'tenants', 'local', 'graph.git');
    const work = mkdtempSync(join(tmpdir(), 'wg-history-work-'));
    try {
      git(['clone', '-q', '--branch', 'main', gitdir, work]);
      const env = {
        GIT_AUTHOR_NAME: 'Mia Member',
        GIT_AUTHOR_EMAIL: 'mia.member@example.test',
        GIT_COMMITTER_NAME: 'Mia Member',
        GIT_COMMITTER_EMAIL: 'mia.member@example.test',
      };
      const p1 = join(work, nodePath('task', 'task-r1'));
      writeFileSync(p1, execFileSync('cat', [p1], { encoding: 'utf8' }).replace('summary: One', 'summary: One, edited by hand'));
      git(['commit', '-qam', 'hand edit of task-r1'], work, env);
      const from = nodePath('task', 'task-r2');
      const to = from.replace(/\/[0-9a-f]{2}\//, '/zz/');
      mkdirSync(dirname(join(work, to)), { recursive: true });
      renameSync(join(work, from), join(work, to));
      git(['add', '-A'], work);
      git(['commit', '-qm', 'move task-r2'], work, env);
      git(['push', '-q', 'origin', 'main'], work);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }

    const config = await testServerConfig(dataDir);
    const server = await startServer({
      config,
      plugins: [corePlugin, historyPlugin],
      clock: new ManualClock(),
      log: createLogger(() => undefined),
    });
    try {
      const get = async (path: string) => {
        const res = await fetch(server.url + path, { headers: { authorization: `Bearer ${adminToken}` } });
        return { status: res.status, body: (await res.json()) as any };
      };
      const r1 = (await get('/v1/nodes/task-r1/history')).body;
      const r2 = (await get('/v1/nodes/task-r2/history')).body;
      expect(r1.history.slice(1)).to.deep.equal(before['task-r1'], 'server-written entries rebuilt identically');
      expect(r2.history.slice(1)).to.deep.equal(before['task-r2']);
      const hand = r1.history[0];
      expect(hand).to.include({ message: 'hand edit of task-r1', internal: false, person: member.id, actor_name: 'Mia Member' });
      expect((before['task-r2'] as any[])[0].internal).to.equal(true);
      const move = (await get(`/v1/nodes/task-r2/history/${r2.history[0].sha}`)).body;
      expect(move.change).to.equal('R');
      expect(move.previous_path).to.equal(nodePath('task', 'task-r2'));
      expect(move.path).to.match(/\/zz\/task-r2\.md$/);
      expect(move.patch).to.include('rename from');
      expect(move.content).to.include('id: task-r2');
      const edit = (await get(`/v1/nodes/task-r1/history/${hand.sha.slice(0, 10)}`)).body;
      expect(edit.change).to.equal('M');
      expect(edit.patch).to.include('+summary: One, edited by hand');
      // the change feed reads a deleted node's type and title from its last blob
      const feed = (await get('/v1/changes')).body;
      expect(feed.changes.find((c: any) => c.id === 'task-r3')).to.include({
        change: 'D',
        type: 'task',
        title: 'Three, deleted before the restart',
        author: t.adminPerson,
      });
      expect(feed.changes.slice(0, 2).map((c: any) => c.id)).to.deep.equal(['task-r2', 'task-r1']);
      expect(feed.changes[0]).to.include({ change: 'R', committed_by: member.id });
    } finally {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
