/**
 * Group commit (issue 16): commits written while a journal fdatasync runs share the next one;
 * a write is acknowledged only once its own record is durable, and the write queue's order,
 * revision checks and 409s are what they were.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openGitStore } from '../../kernel/git/open.js';
import type { CommitAuthor } from '../../kernel/git/types.js';
import type { StoreObserver } from '../../kernel/metrics.js';
import { corePlugin } from '../../plugins/core/index.js';
import { md, startTestServer, type TestServer } from '../helpers/harness.js';

const ann: CommitAuthor = { name: 'Ann Example', email: 'ann@example.com', timestamp: 1_700_000_000 };

describe('group commit', function () {
  this.timeout(60_000);

  describe('git store', () => {
    let dir: string;
    beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'group-commit-'))));
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('ten commits written back to back share two fdatasyncs; each resolves durable only after a sync that started after its record', async () => {
      const syncs: number[] = [];
      const observe: StoreObserver = { journalSync: (s) => syncs.push(s), checkpoint: () => undefined };
      const store = await openGitStore(join(dir, 'g.git'), { fsync: true, observe, checkpointIdleMs: 60_000, writeOutLagMs: 60_000 });
      const order: string[] = [];
      const durables: Promise<void>[] = [];
      let parent: string | null = null;
      for (let i = 0; i < 10; i++) {
        const out = await store.commitDeferred({
          changes: [{ path: `nodes/task/0${i % 3}/task-${i}.md`, content: `n ${i}\n` }],
          author: ann,
          message: `c${i}`,
          expectedParent: parent,
        });
        parent = out.commit;
        order.push(`written ${i}`);
        durables.push(out.durable.then(() => void order.push(`durable ${i}`)));
      }
      expect(store.head()).to.equal(parent);
      expect(syncs).to.have.length(0); // nothing is durable yet: all ten records were written first
      await Promise.all(durables);
      // the first sync started right after the first record; the second covers the other nine
      expect(syncs).to.have.length(2);
      expect(order.slice(0, 10)).to.deep.equal(Array.from({ length: 10 }, (_, i) => `written ${i}`));
      expect(order.slice(10)).to.deep.equal(Array.from({ length: 10 }, (_, i) => `durable ${i}`));
      await store.close();
      const again = await openGitStore(join(dir, 'g.git'), { fsync: true });
      expect(again.head()).to.equal(parent);
      await again.close();
    });
  });

  describe('through the real server (fsync on)', () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ plugins: [corePlugin], config: { fsync: true } });
    });
    after(async () => t.close());

    it('concurrent creates are all acknowledged with distinct revisions that read back; concurrent updates from one revision give one 200 and 409s', async () => {
      const ids = Array.from({ length: 16 }, (_, i) => `task-group-${i}`);
      const created = await Promise.all(
        ids.map((id) => t.api('POST', '/v1/nodes', { body: { nodes: [md({ id, type: 'task', summary: `group ${id}` })] } })),
      );
      for (const r of created) expect(r.status, r.text).to.equal(200);
      const revisions = created.map((r) => r.body.results[0].revision as string);
      expect(new Set(revisions).size).to.equal(16);
      for (const [i, id] of ids.entries()) expect((await t.api('GET', `/v1/nodes/${id}`)).body.revision).to.equal(revisions[i]);

      // eight writers update task-group-0 from the same revision: the queue still serializes the check
      const base = revisions[0]!;
      const updates = await Promise.all(
        Array.from({ length: 8 }, (_, k) =>
          t.api('POST', '/v1/nodes', {
            body: { if_exists: 'update', nodes: [{ node: md({ id: ids[0], type: 'task', summary: `update ${k}` }), revision: base }] },
          }),
        ),
      );
      const statuses = updates.map((r) => (r.status === 200 ? 'ok' : (r.body.results?.[0]?.error?.code ?? String(r.status))));
      expect(statuses.filter((s) => s === 'ok')).to.have.length(1);
      expect(statuses.filter((s) => s === 'revision_conflict' || s === 'conflict')).to.have.length(7);
      const winner = updates.find((r) => r.status === 200)!;
      expect((await t.api('GET', `/v1/nodes/${ids[0]}`)).body.revision).to.equal(winner.body.results[0].revision);
    });
  });
});
