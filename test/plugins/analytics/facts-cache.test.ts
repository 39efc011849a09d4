/**
 * Analytics keeps each node's phase and times until the head moves (docs/performance.md,
 * issue 16): repeated reads between commits reuse them, and every commit, including one that
 * changes a node only through another node's edge, is reflected in the next read; the clock
 * still moves ages between reads without a commit.
 */
import { expect } from 'chai';
import type { TestServer } from '../../helpers/harness.js';
import { addEdge, analytics, DAY, freezeClock, put, setStatus, startAnalyticsServer } from './helpers.js';

describe('analytics: per-head facts cache', function () {
  this.timeout(30_000);
  let t: TestServer;
  let unfreeze: () => void;
  before(async () => {
    t = await startAnalyticsServer();
    unfreeze = freezeClock(t.clock);
  });
  after(async () => {
    unfreeze();
    await t.close();
  });

  it('a read after each kind of commit sees it: status, a resolving edge, a blocker; ages follow the clock without a commit', async () => {
    await put(t, [
      { id: 'task-one', type: 'task', summary: 'one' },
      { id: 'task-two', type: 'task', summary: 'two' },
      { id: 'issue-three', type: 'issue', summary: 'three' },
    ]);
    const first = (await analytics(t)).body;
    expect(first.totals).to.include({ nodes: 3, open: 3, done: 0, active: 0, blocked: 0 });
    expect((await analytics(t)).body.totals).to.deep.equal(first.totals); // the cached read

    await setStatus(t, 'task-one', 'in-progress');
    const second = (await analytics(t)).body;
    expect(second.totals).to.include({ active: 1, open: 2 });
    expect(second.wip.count).to.equal(1);
    expect(second.wip.mean_age_days).to.equal(0);

    // no commit: only the clock moves, and the WIP age with it
    t.clock.advance(3 * DAY);
    expect((await analytics(t)).body.wip.mean_age_days).to.equal(3);

    // issue-three becomes done through task-two's resolves edge: task-two's commit changes issue-three's phase
    await addEdge(t, 'task-two', 'resolves', 'issue-three');
    const third = (await analytics(t)).body;
    expect(third.totals).to.include({ done: 1, active: 1, open: 1 });

    // a blocker: task-two blocks task-one? task-one is active (active wins); block task-two by task-one instead
    await addEdge(t, 'task-one', 'blocks', 'task-two');
    const fourth = (await analytics(t)).body;
    expect(fourth.totals).to.include({ done: 1, active: 1, blocked: 1, open: 0 });
    expect(fourth.bottlenecks.map((b: { id: string }) => b.id)).to.deep.equal(['task-one']);

    // the blocker finishes: task-two is open again on the next read
    await setStatus(t, 'task-one', 'done');
    const fifth = (await analytics(t)).body;
    expect(fifth.totals).to.include({ done: 2, active: 0, blocked: 0, open: 1 });
  });

  it('two links away: a new resolver of a blocker unblocks what it blocks', async () => {
    await put(t, [
      { id: 'issue-blocker', type: 'issue', summary: 'the blocker' },
      { id: 'task-waiting', type: 'task', summary: 'waits for the blocker' },
    ]);
    await addEdge(t, 'issue-blocker', 'blocks', 'task-waiting');
    const before = (await analytics(t)).body;
    const blockedBefore = before.totals.blocked as number;
    expect(before.bottlenecks.map((b: { id: string }) => b.id)).to.include('issue-blocker');
    // task-fix resolves issue-blocker: the commit touches task-fix only; task-waiting is two links from it
    await put(t, [{ id: 'task-fix', type: 'task', summary: 'fixes the blocker', edges: [{ type: 'resolves', to: 'issue-blocker' }] }]);
    const after = (await analytics(t)).body;
    expect(after.totals.blocked).to.equal(blockedBefore - 1);
    expect(after.bottlenecks.map((b: { id: string }) => b.id)).to.not.include('issue-blocker');
  });
});
