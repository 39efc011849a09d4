/**
 * Completion and start times come from per-node status history, not from the current
 * node: recorded from commit events while the server runs, and rebuilt from the git
 * history (the history plugin's commit index plus the historical blobs) when a tenant
 * opens, also from a packed repository.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { testServerConfig } from '../../helpers/harness.js';
import { createLogger, ManualClock } from '../../../kernel/config.js';
import { startServer, type RunningServer } from '../../../kernel/server.js';
import { analyticsPlugin } from '../../../plugins/analytics/index.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { historyPlugin } from '../../../plugins/history/index.js';
import { DAY, freezeClock, put, setStatus, startAnalyticsServer, touch } from './helpers.js';

async function get(server: RunningServer, token: string, path: string): Promise<{ status: number; text: string; body: any }> {
  const res = await fetch(server.url + path, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) };
}

describe('analytics: status timelines survive a restart', function () {
  this.timeout(40_000);

  it('a restarted server rebuilds the same completion, cycle and WIP times from git, then keeps following commits', async () => {
    const first = await startAnalyticsServer({ keepData: true });
    const unfreeze = freezeClock(first.clock, Math.floor(first.clock.now() / 1000) * 1000);
    let second: RunningServer | null = null;
    let firstOpen = true;
    try {
      await put(first, [
        { id: 'task-t1', type: 'task', summary: 'one', project: 'tl' },
        { id: 'task-t2', type: 'task', summary: 'two', project: 'tl' },
        { id: 'task-t3', type: 'task', summary: 'three', project: 'tl' },
        { id: 'task-gone', type: 'task', summary: 'deleted later', project: 'tl' },
        { id: 'issue-t4', type: 'issue', summary: 'resolved by an edge', project: 'tl' },
      ]);
      first.clock.advance(2 * DAY);
      await setStatus(first, 'task-t1', 'in-progress');
      await setStatus(first, 'task-t2', 'in-progress');
      await setStatus(first, 'task-gone', 'in-progress');
      first.clock.advance(3 * DAY);
      await setStatus(first, 'task-t1', 'review');
      first.clock.advance(1 * DAY);
      await setStatus(first, 'task-t1', 'done');
      await put(first, [
        { id: 'task-t5', type: 'task', summary: 'resolver', project: 'other', edges: [{ type: 'resolves', to: 'issue-t4' }] },
      ]);
      first.clock.advance(2 * DAY);
      await touch(first, 'task-t1', 'one, edited after it was done');
      await touch(first, 'task-t2', 'two, edited while in progress');
      const tenant = first.server.services.tenants.get(first.org)!;
      await tenant.write(
        { personId: first.adminPerson, name: 'Admin', email: 'admin@localhost', agent: null, session: null },
        { op: 'test_delete', via: 'rest' },
        async (draft) => {
          draft.delete('task-gone');
        },
      );
      const at = first.clock.now();
      const before = await first.api('GET', '/v1/analytics?project=tl&aging=1');
      expect(before.status, before.text).to.equal(200);
      const a = before.body;
      expect(a.cycleTimeDays).to.include({ count: 2, started: 1, never_started: 1, min: 4, max: 6 });
      expect(a.leadTimeDays).to.include({ count: 2, min: 6, max: 6 });
      expect(a.wip.aging.map((e: { id: string; age_days: number }) => [e.id, e.age_days])).to.deep.equal([['task-t2', 6]]);
      expect(a.totals.nodes).to.equal(4);
      const program = await first.api('GET', '/v1/program/issue-t4');
      expect(program.status).to.equal(200);
      await first.close();
      firstOpen = false;
      unfreeze();

      // pack every object, so the rebuild reads historical blobs from a pack, not loose files
      const gitdir = join(first.dataDir, 'tenants', first.org, 'graph.git');
      execFileSync('git', ['--git-dir', gitdir, 'gc', '--quiet', '--prune=now'], { env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } });
      const clock = new ManualClock();
      freezeClock(clock, at);
      const config = await testServerConfig(first.dataDir);
      second = await startServer({
        config,
        plugins: [corePlugin, historyPlugin, analyticsPlugin],
        clock,
        log: createLogger(() => undefined),
      });
      expect(second.bootstrap).to.equal(null);

      const after = await get(second, first.adminToken, '/v1/analytics?project=tl&aging=1');
      expect(after.status, after.text).to.equal(200);
      expect(after.text).to.equal(before.text);

      // events after the rebuild are followed: t3 goes straight to done two days later
      clock.advance(2 * DAY);
      const done = await fetch(second.url + '/v1/nodes/task-t3/status', {
        method: 'POST',
        headers: { authorization: `Bearer ${first.adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ status: 'done' }),
      });
      expect(done.status).to.equal(200);
      const later = (await get(second, first.adminToken, '/v1/analytics?project=tl&aging=1')).body;
      expect(later.cycleTimeDays).to.include({ count: 3, never_started: 2 });
      expect(later.leadTimeDays).to.include({ count: 3, max: 10 });
      expect(later.wip.aging.map((e: { id: string; age_days: number }) => [e.id, e.age_days])).to.deep.equal([['task-t2', 8]]);
    } finally {
      if (firstOpen) await first.close();
      if (second) await second.close();
      rmSync(first.dataDir, { recursive: true, force: true });
    }
  });
});
