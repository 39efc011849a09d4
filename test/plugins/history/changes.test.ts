import { expect } from 'chai';
import { corePlugin } from '../../../plugins/core/index.js';
import { historyPlugin } from '../../../plugins/history/index.js';
import { addPerson, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';
import { directWrite, ok, relaxHookTimeout } from './helpers.js';

const DAY = 24 * 60 * 60 * 1000;
const ids = (body: any) => body.changes.map((c: any) => c.id);

describe('history: GET /v1/changes (docs/spec.md Reads rule 7)', () => {
  describe('since: commit sha, ISO date or relative phrase', () => {
    let t: TestServer;
    let t0 = 0;
    let midCommit = '';

    before(async () => {
      t = await startTestServer({ plugins: [corePlugin, historyPlugin] });
      relaxHookTimeout(t);
      t0 = t.clock.now();
      await putNodes(t, [
        { id: 'task-c-old', type: 'task', summary: 'Old' },
        { id: 'task-c-mid', type: 'task', summary: 'Mid' },
      ]);
      t.clock.advance(5 * DAY);
      await t.api('POST', '/v1/nodes/task-c-mid/priority', { body: { priority: 'p1' } });
      midCommit = (await ok(t, '/v1/status')).head;
      t.clock.advance(60_000);
      await putNodes(t, [{ id: 'task-c-new', type: 'task', summary: 'New' }]);
    });
    after(async () => t.close());

    it('without since: the newest change per node, newest first', async () => {
      const body = await ok(t, '/v1/changes');
      expect(ids(body).slice(0, 3)).to.deep.equal(['task-c-new', 'task-c-mid', 'task-c-old']);
      expect(new Set(ids(body)).size).to.equal(body.changes.length, 'one entry per node');
      const mid = body.changes.find((c: any) => c.id === 'task-c-mid');
      expect(mid.change).to.equal('M', 'the newest change of task-c-mid is the priority edit, not its creation');
      expect(mid.commit).to.equal(midCommit);
      expect(body).to.include.keys('changes', 'count', 'head', 'since', 'generated_at');
      expect(body.count).to.equal(body.changes.length);
      expect(body.since).to.equal(null);
      expect(body.head).to.equal((await ok(t, '/v1/status')).head);
      expect(body.generated_at).to.equal(new Date(Date.parse(body.generated_at)).toISOString());
    });

    it('a relative phrase is read against the injected clock', async () => {
      const body = await ok(t, `/v1/changes?since=${encodeURIComponent('3 days ago')}`);
      expect(ids(body)).to.deep.equal(['task-c-new', 'task-c-mid']);
      expect(Date.parse(body.since)).to.be.closeTo(t.clock.now() - 3 * DAY, 5000);
      expect(ids(await ok(t, '/v1/changes?since=yesterday'))).to.deep.equal(['task-c-new', 'task-c-mid']);
    });

    it('an ISO date or timestamp', async () => {
      const iso = new Date(t0 + 2 * DAY).toISOString();
      const body = await ok(t, `/v1/changes?since=${encodeURIComponent(iso)}`);
      expect(ids(body)).to.deep.equal(['task-c-new', 'task-c-mid']);
      expect(body.since).to.equal(iso);
      const day = new Date(t0 - 2 * DAY).toISOString().slice(0, 10);
      expect(ids(await ok(t, `/v1/changes?since=${day}`))).to.include('task-c-old');
    });

    it('a graph sha (full or abbreviated): only changes after that commit', async () => {
      const full = await ok(t, `/v1/changes?since=${midCommit}`);
      expect(ids(full)).to.deep.equal(['task-c-new']);
      expect(full.since).to.equal(midCommit);
      const short = await ok(t, `/v1/changes?since=${midCommit.slice(0, 7)}`);
      expect(ids(short)).to.deep.equal(['task-c-new']);
      const atHead = await ok(t, `/v1/changes?since=${full.head}`);
      expect(atHead.changes).to.deep.equal([]);
    });

    it('an unresolvable sha is 422, and so is an unreadable date', async () => {
      for (const since of ['deadbeef', '0000000000000000000000000000000000000000', 'not a date at all', '2024-13-45', 'x'.repeat(300)]) {
        const res = await t.api('GET', `/v1/changes?since=${encodeURIComponent(since)}`);
        expect(res.status, since).to.equal(422);
        expect(res.body.error.code).to.equal('validation_failed');
      }
    });

    it('moves with the clock: after two more days "yesterday" holds nothing', async () => {
      t.clock.advance(2 * DAY);
      expect((await ok(t, '/v1/changes?since=yesterday')).changes).to.deep.equal([]);
    });
  });

  describe('project scoping, deletions, attribution', () => {
    let t: TestServer;
    let member: { id: string; token: string };

    before(async () => {
      t = await startTestServer({ plugins: [corePlugin, historyPlugin] });
      relaxHookTimeout(t);
      member = await addPerson(t, 'Mia Member');
      await putNodes(t, [
        { id: 'proj-alpha', type: 'proj', summary: 'Alpha grouping', aliases: ['alpha-group'] },
        {
          id: 'repo-alpha-api',
          type: 'repo',
          summary: 'Alpha API repo',
          aliases: ['api'],
          edges: [{ type: 'member-of', to: 'proj-alpha' }],
        },
        { id: 'repo-beta', type: 'repo', summary: 'Beta repo' },
        { id: 'task-pa', type: 'task', summary: 'Alpha grouping work', project: 'proj-alpha' },
        { id: 'task-pr', type: 'task', summary: 'Alpha API work', project: 'alpha-api' },
        { id: 'task-pb', type: 'task', summary: 'Beta work', project: 'repo-beta' },
        { id: 'task-pdel', type: 'task', summary: 'Alpha work to delete', project: 'proj-alpha' },
      ]);
      await directWrite(t, { op: 'delete_node', via: 'rest' }, (d) => d.delete('task-pdel'));
      await t.api('POST', '/v1/nodes/task-pa/status', { token: member.token, body: { status: 'blocked' } });
      await directWrite(t, { op: 'sweep', via: 'gardener', internal: true }, (d) =>
        d.put({ frontmatter: { id: 'finding-g', type: 'finding', status: 'open', summary: 'Gardener finding' }, body: '' }),
      );
      await directWrite(t, { op: 'capture', via: 'capture' }, (d) =>
        d.put({ frontmatter: { id: 'task-captured', type: 'task', summary: 'Captured work', project: 'proj-alpha' }, body: '' }),
      );
    });
    after(async () => t.close());

    it('unscoped: a deletion is listed with change D and the deleted node’s type and title', async () => {
      const body = await ok(t, '/v1/changes');
      const del = body.changes.find((c: any) => c.id === 'task-pdel');
      expect(del).to.include({ change: 'D', type: 'task', title: 'Alpha work to delete' });
    });

    it('proj-<slug> scopes to the grouping and its member repos, omitting deletions', async () => {
      const body = await ok(t, '/v1/changes?project=proj-alpha');
      expect(ids(body).sort()).to.deep.equal(['task-captured', 'task-pa', 'task-pr']);
      expect(body.changes.every((c: any) => c.change !== 'D')).to.equal(true);
    });

    it('repo-<slug> pins one repository', async () => {
      expect(ids(await ok(t, '/v1/changes?project=repo-alpha-api'))).to.deep.equal(['task-pr']);
      expect(ids(await ok(t, '/v1/changes?project=repo-beta'))).to.deep.equal(['task-pb']);
    });

    it('a bare slug resolves through aliases and rides up to the grouping', async () => {
      expect(ids(await ok(t, '/v1/changes?project=api')).sort()).to.deep.equal(['task-captured', 'task-pa', 'task-pr']);
      expect(ids(await ok(t, '/v1/changes?project=alpha-group')).sort()).to.deep.equal(['task-captured', 'task-pa', 'task-pr']);
      expect((await ok(t, '/v1/changes?project=nothing-here')).changes).to.deep.equal([]);
    });

    it('a malformed project slug is 422', async () => {
      const res = await t.api('GET', '/v1/changes?project=Not_A_Slug');
      expect(res.status).to.equal(422);
    });

    it('entries carry commit, committer, author and authored_via; capture, distill and gardener are machine', async () => {
      const body = await ok(t, '/v1/changes');
      const byId = new Map(body.changes.map((c: any) => [c.id, c]));
      const pa = byId.get('task-pa') as any;
      expect(pa).to.include.keys('id', 'change', 'commit', 'date', 'committed_by', 'type', 'title', 'authored_via', 'author');
      expect(pa).to.include({
        change: 'M',
        committed_by: member.id,
        author: member.id,
        authored_via: 'rest',
        origin: 'human',
        type: 'task',
        title: 'Alpha grouping work',
      });
      expect(byId.get('finding-g')).to.include({ authored_via: 'gardener', origin: 'machine', committed_by: t.adminPerson });
      expect(byId.get('task-captured')).to.include({ authored_via: 'capture', origin: 'machine' });
      expect(byId.get('task-pb')).to.include({ authored_via: 'rest', origin: 'human' });
    });
  });

  describe('limit', () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ plugins: [corePlugin, historyPlugin] });
      relaxHookTimeout(t);
      await directWrite(t, { op: 'bulk_import', via: 'rest' }, (d) => {
        for (let i = 0; i < 510; i++) d.put({ frontmatter: { id: `task-bulk-${i}`, type: 'task', summary: `Bulk ${i}` }, body: '' });
      });
    });
    after(async () => t.close());

    it('defaults to 100, clamps at 500, and a malformed limit is 422', async () => {
      expect((await ok(t, '/v1/changes')).count).to.equal(100);
      expect((await ok(t, '/v1/changes?limit=7')).count).to.equal(7);
      const big = await ok(t, '/v1/changes?limit=5000');
      expect(big.count).to.equal(500);
      expect(new Set(ids(big)).size).to.equal(500);
      expect((await t.api('GET', '/v1/changes?limit=many')).status).to.equal(422);
    });
  });
});
