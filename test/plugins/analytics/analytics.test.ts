/**
 * docs/spec.md Reads rule 8 (GET /v1/analytics): the payload keys, completion time as the moment a
 * node entered its final terminal status (never its last update), the clamps of Limits,
 * comma-separated and repeatable `type`, 422 for a bad slug or type, `project_warning`
 * for a scope matching nothing, and the `format=text` report; plus what the sections
 * count (throughput, cycle and lead time, WIP aging, bottlenecks, coverage).
 */
import { expect } from 'chai';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { addEdge, analytics, DAY, freezeClock, put, setStatus, startAnalyticsServer, touch, weekIndex } from './helpers.js';

describe('analytics: GET /v1/analytics', function () {
  this.timeout(30_000);
  let t: TestServer;
  let unfreeze: () => void;
  /** commit-time instants (whole seconds, as commits record them) */
  let t0: number;
  let now: number;

  before(async () => {
    t = await startAnalyticsServer();
    unfreeze = freezeClock(t.clock, Math.floor(t.clock.now() / 1000) * 1000);
    t0 = t.clock.now();
    // alpha: one task through in-progress to done, then edited long after
    await put(t, [
      { id: 'task-alpha', type: 'task', summary: 'alpha work', project: 'alpha' },
      { id: 'task-reopen', type: 'task', summary: 'done, reopened, redone', project: 'beta' },
      { id: 'issue-edge', type: 'issue', summary: 'closed by a resolver', project: 'gamma' },
    ]);
    t.clock.advance(1 * DAY);
    await setStatus(t, 'task-reopen', 'done'); // t0+1d
    t.clock.advance(1 * DAY);
    await setStatus(t, 'task-alpha', 'in-progress'); // t0+2d
    await setStatus(t, 'task-reopen', 'open'); // t0+2d
    t.clock.advance(1 * DAY);
    await setStatus(t, 'task-reopen', 'in-progress'); // t0+3d
    t.clock.advance(1 * DAY);
    await setStatus(t, 'task-reopen', 'done'); // t0+4d
    // a resolver committed at t0+4d retires issue-edge though its status stays open
    await put(t, [
      { id: 'task-fixer', type: 'task', summary: 'the fix', project: 'delta', edges: [{ type: 'resolves', to: 'issue-edge' }] },
    ]);
    t.clock.advance(1 * DAY);
    await setStatus(t, 'task-alpha', 'done'); // t0+5d
    t.clock.advance(14 * DAY);
    await touch(t, 'task-alpha', 'alpha work, edited after completion'); // t0+19d
    now = t.clock.now();
  });
  after(async () => {
    unfreeze();
    await t.close();
  });

  it('answers {window, weekly, totals, throughput, cycleTimeDays, wip, bottlenecks, coverage} as JSON by default', async () => {
    const res = await analytics(t);
    expect(res.status, res.text).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/application\/json/);
    expect(res.body).to.include.all.keys('window', 'weekly', 'totals', 'throughput', 'cycleTimeDays', 'wip', 'bottlenecks', 'coverage');
    expect(res.body).not.to.have.property('project_warning');
    expect(res.body.window).to.include({ weeks: 12, to: new Date(now).toISOString() });
    expect(res.body.weekly).to.have.length(12);
    // default scope: the queueable types
    expect(res.body.scope.types).to.deep.equal(['dec', 'issue', 'task']);
    expect(res.body.totals).to.include({ nodes: 4, done: 3, open: 1 });
  });

  it('completion time is when the node entered its final terminal status, not its last update', async () => {
    const res = await analytics(t, '?project=alpha');
    expect(res.status, res.text).to.equal(200);
    const a = res.body;
    expect(a.totals).to.include({ nodes: 1, done: 1 });
    // in-progress at t0+2d, done at t0+5d, created t0, edited at t0+19d
    expect(a.cycleTimeDays).to.include({ count: 1, median: 3, mean: 3, min: 3, max: 3, started: 1 });
    expect(a.leadTimeDays).to.include({ count: 1, median: 5 });
    const doneWeek = weekIndex(t0 + 5 * DAY, now, 12);
    const editWeek = weekIndex(t0 + 19 * DAY, now, 12);
    expect(doneWeek).to.not.equal(editWeek);
    expect(a.weekly[doneWeek].completed).to.equal(1);
    expect(a.weekly[editWeek].completed).to.equal(0);
    expect(a.weekly.reduce((s: number, w: { completed: number }) => s + w.completed, 0)).to.equal(1);
    expect(a.weekly[weekIndex(t0, now, 12)].created).to.equal(1);
  });

  it('a reopened node completes when it entered its final terminal status; its cycle restarts with the reopen', async () => {
    const a = (await analytics(t, '?project=beta')).body;
    // done t0+1d, reopened t0+2d, in-progress t0+3d, done t0+4d
    expect(a.throughput.completed).to.equal(1);
    expect(a.cycleTimeDays).to.include({ count: 1, median: 1 });
    expect(a.leadTimeDays).to.include({ count: 1, median: 4 });
    expect(a.weekly[weekIndex(t0 + 4 * DAY, now, 12)].completed).to.equal(1);
  });

  it('a node done only through a live resolves edge completes when the edge appeared', async () => {
    const a = (await analytics(t, '?project=gamma')).body;
    expect(a.totals).to.include({ nodes: 1, done: 1 });
    expect(a.totals.by_status).to.deep.equal({ open: 1 });
    expect(a.leadTimeDays).to.include({ count: 1, median: 4 });
    expect(a.cycleTimeDays).to.include({ count: 1, never_started: 1 });
  });

  it('type is comma-separated and repeatable', async () => {
    const a = (await analytics(t, '?type=task&type=issue,dec')).body;
    expect(a.scope.types).to.deep.equal(['task', 'issue', 'dec']);
    const tasks = (await analytics(t, '?type=task')).body;
    expect(tasks.totals.nodes).to.equal(3);
    expect(Object.keys(tasks.totals.by_type)).to.deep.equal(['task']);
    const issues = (await analytics(t, '?type=issue')).body;
    expect(issues.totals.nodes).to.equal(1);
  });

  it('weeks, top and aging clamp to 1-52, 1-100 and 1-365; a non-integer is 422', async () => {
    const low = (await analytics(t, '?weeks=0&top=0&aging=0')).body;
    expect(low.window.weeks).to.equal(1);
    expect(low.weekly).to.have.length(1);
    expect(low.scope).to.include({ top: 1, aging: 1 });
    const high = (await analytics(t, '?weeks=99&top=1000&aging=9999')).body;
    expect(high.window.weeks).to.equal(52);
    expect(high.weekly).to.have.length(52);
    expect(high.scope).to.include({ top: 100, aging: 365 });
    expect(high.wip.aging_days).to.equal(365);
    for (const q of ['?weeks=abc', '?top=1.5', '?aging=ten']) {
      const res = await analytics(t, q);
      expect(res.status, q).to.equal(422);
      expect(res.body.error.code).to.equal('validation_failed');
    }
  });

  it('weekly entries are consecutive ISO weeks starting on Monday, oldest first, ending with the current week', async () => {
    const a = (await analytics(t, '?weeks=5')).body;
    const starts = a.weekly.map((w: { start: string }) => Date.parse(`${w.start}T00:00:00Z`));
    for (let i = 0; i < starts.length; i++) {
      expect(new Date(starts[i]).getUTCDay()).to.equal(1);
      if (i > 0) expect(starts[i] - starts[i - 1]).to.equal(7 * DAY);
    }
    expect(starts[4]).to.be.at.most(now);
    expect(now - starts[4]).to.be.below(7 * DAY);
    expect(a.window.from).to.equal(new Date(starts[0]).toISOString());
    for (const w of a.weekly) expect(w.week).to.match(/^\d{4}-W\d{2}$/);
  });

  it('a malformed project slug or an unknown type is 422', async () => {
    for (const q of ['?project=Bad_Slug', '?project=-x', '?type=nope', '?type=task,Bad', '?format=xml']) {
      const res = await analytics(t, q);
      expect(res.status, q).to.equal(422);
      expect(res.body.error.code).to.equal('validation_failed');
    }
    const res = await analytics(t, '?type=task,nope');
    expect(res.body.error.details.errors).to.deep.equal([{ field: 'type', message: 'not a node type in the registry', value: 'nope' }]);
  });

  it('a scope matching nothing adds project_warning and answers zeros', async () => {
    const res = await analytics(t, '?project=nowhere');
    expect(res.status).to.equal(200);
    expect(res.body.project_warning).to.be.a('string').and.include('nowhere');
    expect(res.body.totals.nodes).to.equal(0);
    expect(res.body.cycleTimeDays).to.include({ count: 0, median: null });
    const typed = await analytics(t, '?project=alpha&type=dec');
    expect(typed.body.project_warning).to.be.a('string');
    const fine = await analytics(t, '?project=alpha&type=task');
    expect(fine.body).not.to.have.property('project_warning');
  });

  it('format=text is a human report of the same numbers', async () => {
    const res = await analytics(t, '?project=alpha&format=text');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/plain/);
    expect(res.text).to.match(/^Analytics: /);
    for (const section of [
      'Totals',
      'Throughput',
      'Weekly',
      'Cycle time (days',
      'Lead time (days',
      'Work in progress',
      'Bottlenecks',
      'Coverage',
    ]) {
      expect(res.text).to.include(section);
    }
    expect(res.text).to.include('1 completed in the window');
    expect(res.text).to.include('n=1  mean 3  median 3');
    const warned = await analytics(t, '?project=nowhere&format=text');
    expect(warned.text).to.include('Warning: ');
  });
});

describe('analytics: WIP, bottlenecks and coverage', function () {
  this.timeout(30_000);
  let t: TestServer;
  let unfreeze: () => void;

  before(async () => {
    t = await startAnalyticsServer();
    unfreeze = freezeClock(t.clock, Math.floor(t.clock.now() / 1000) * 1000);
    const alice = await addPerson(t, 'Alice');
    await put(t, [
      { id: 'task-old', type: 'task', summary: 'old work', project: 'web' },
      { id: 'task-mid', type: 'task', summary: 'middle work', project: 'web' },
      { id: 'task-new', type: 'task', summary: 'new work', project: 'web' },
      { id: 'task-review', type: 'task', summary: 'under review', project: 'web' },
      { id: 'task-gate', type: 'task', summary: 'the gate', project: 'web' },
      { id: 'task-x1', type: 'task', summary: 'x1', project: 'web', edges: [{ type: 'blocks', to: 'task-y' }] },
      { id: 'task-x2', type: 'task', summary: 'x2', project: 'web' },
      { id: 'task-y', type: 'task', summary: 'y', project: 'web' },
      { id: 'task-small', type: 'task', summary: 'small blocker', project: 'web', edges: [{ type: 'blocks', to: 'task-x2' }] },
      { id: 'task-shipped', type: 'task', summary: 'shipped with a commit', project: 'web', commits: ['api@abcdef1'] },
      {
        id: 'issue-ext',
        type: 'issue',
        summary: 'an issue outside the type scope',
        project: 'web',
        edges: [{ type: 'blocks', to: 'task-y' }],
      },
    ]);
    await addEdge(t, 'task-gate', 'blocks', 'task-x1');
    await addEdge(t, 'task-gate', 'blocks', 'task-x2');
    await setStatus(t, 'task-old', 'in-progress');
    t.clock.advance(10 * DAY);
    await setStatus(t, 'task-mid', 'in-progress');
    await setStatus(t, 'task-review', 'in-progress');
    t.clock.advance(1 * DAY);
    await setStatus(t, 'task-review', 'review'); // still active: the active run began a day ago
    t.clock.advance(7 * DAY);
    await setStatus(t, 'task-new', 'in-progress');
    await setStatus(t, 'task-shipped', 'done');
    t.clock.advance(2 * DAY);
    const pri = await t.api('POST', '/v1/nodes/task-y/priority', { body: { priority: 'p1' } });
    expect(pri.status, pri.text).to.equal(200);
    await addEdge(t, 'task-x2', 'assigned', alice.id);
  });
  after(async () => {
    unfreeze();
    await t.close();
  });

  it('WIP counts active work; aging lists active work at least `aging` days old, oldest first, at most `top`', async () => {
    const a = (await analytics(t, '?type=task&aging=7')).body;
    expect(a.wip.count).to.equal(4);
    expect(a.wip.by_status).to.deep.equal({ 'in-progress': 3, review: 1 });
    expect(a.wip.aging_count).to.equal(3);
    expect(a.wip.aging.map((e: { id: string }) => e.id)).to.deep.equal(['task-old', 'task-mid', 'task-review']);
    expect(a.wip.aging.map((e: { age_days: number }) => e.age_days)).to.deep.equal([20, 10, 10]);
    const top1 = (await analytics(t, '?type=task&aging=7&top=1')).body;
    expect(top1.wip.aging_count).to.equal(3);
    expect(top1.wip.aging.map((e: { id: string }) => e.id)).to.deep.equal(['task-old']);
    const strict = (await analytics(t, '?type=task&aging=15')).body;
    expect(strict.wip.aging.map((e: { id: string }) => e.id)).to.deep.equal(['task-old']);
  });

  it('bottlenecks rank open blockers by the open work they hold up downstream', async () => {
    const a = (await analytics(t, '?type=task')).body;
    const ids = a.bottlenecks.map((b: { id: string }) => b.id);
    expect(ids[0]).to.equal('task-gate');
    expect(a.bottlenecks[0]).to.include({ blocks: 2, blocks_transitive: 3, in_scope: true, phase: 'open' });
    expect(ids).to.include.members(['task-x1', 'task-small', 'issue-ext']);
    const ext = a.bottlenecks.find((b: { id: string }) => b.id === 'issue-ext');
    expect(ext).to.include({ in_scope: false, blocks: 1 });
    expect((await analytics(t, '?type=task&top=1')).body.bottlenecks).to.have.length(1);
    // a done blocker holds nothing up
    await setStatus(t, 'task-gate', 'done');
    const after = (await analytics(t, '?type=task')).body;
    expect(after.bottlenecks.map((b: { id: string }) => b.id)).not.to.include('task-gate');
    await setStatus(t, 'task-gate', 'open');
  });

  it('coverage: prioritized and assigned share of open work, commit-linked share of completed work', async () => {
    const a = (await analytics(t, '?type=task')).body;
    expect(a.coverage).to.deep.equal({
      open: 9,
      prioritized: 1,
      prioritized_pct: 11,
      assigned: 1,
      assigned_pct: 11,
      completed: 1,
      with_commits: 1,
      with_commits_pct: 100,
    });
  });

  it('totals split the scope into done, active, blocked and open', async () => {
    const a = (await analytics(t, '?type=task')).body;
    // blocked: task-x1 and task-x2 (by task-gate), task-y (by task-x1)
    expect(a.totals).to.include({ nodes: 10, done: 1, active: 4, blocked: 3, open: 2 });
    expect(a.totals.by_status).to.deep.equal({ done: 1, 'in-progress': 3, open: 5, review: 1 });
  });

  it('project scoping follows the repo alias rules', async () => {
    await put(t, [
      { id: 'proj-shop', type: 'proj', summary: 'shop grouping' },
      { id: 'repo-web', type: 'repo', summary: 'the web repo', aliases: ['storefront'], edges: [{ type: 'member-of', to: 'proj-shop' }] },
    ]);
    for (const project of ['web', 'storefront', 'repo-web', 'proj-shop']) {
      const a = (await analytics(t, `?type=task&project=${project}`)).body;
      expect(a.totals.nodes, project).to.equal(10);
      expect(a, project).not.to.have.property('project_warning');
    }
  });
});
