/**
 * Status timelines do not grow with history (issue 27 item 3): a node keeps only the steps
 * completion, cycle and WIP times can still read (plugins/analytics/timeline-steps.ts), the
 * timelines are written to a snapshot at close and read back at open, and a schema change
 * that changes which statuses are terminal replays the history (the compaction was made under
 * the old rules).
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, ManualClock } from '../../../kernel/config.js';
import { startServer, type RunningServer } from '../../../kernel/server.js';
import { analyticsPlugin } from '../../../plugins/analytics/index.js';
import { timelinesOf } from '../../../plugins/analytics/timeline.js';
import { compactSteps, stepTimes, type StatusStep } from '../../../plugins/analytics/timeline-steps.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { historyPlugin } from '../../../plugins/history/index.js';
import { addPerson, md, type TestServer, testServerConfig } from '../../helpers/harness.js';
import { freezeClock, put, setStatus, startAnalyticsServer } from './helpers.js';

const STATUSES = ['s0', 's1', 's2', 's3', 's4', 's5'];

/** Appends `status` the way the timelines record a version: a step only when the status changes. */
function push(steps: StatusStep[], status: string, at: number): StatusStep[] {
  return steps.length > 0 && steps[steps.length - 1]!.status === status ? steps : [...steps, { status, at }];
}

describe('analytics: status timelines are compacted (timeline-steps.ts)', () => {
  it('compacting after every step changes no time derived from the steps, now or after any later steps (property)', function () {
    // synchronous CPU work: no wall-clock limit on a loaded machine
    this.timeout(0);
    fc.assert(
      fc.property(
        fc.subarray(STATUSES),
        fc.subarray(STATUSES),
        fc.array(fc.constantFrom(...STATUSES), { minLength: 1, maxLength: 60 }),
        fc.array(fc.constantFrom(...STATUSES), { maxLength: 12 }),
        (terminalSet, activeSet, history, future) => {
          const terminal = (s: string) => terminalSet.includes(s);
          const active = (s: string) => activeSet.includes(s);
          let full: StatusStep[] = [];
          let kept: StatusStep[] = [];
          let at = 0;
          for (const status of history) {
            at += 10;
            full = push(full, status, at);
            kept = compactSteps(push(kept, status, at), terminal, active);
            expect(kept.length).to.be.at.most(7);
          }
          let fullLater = full;
          let keptLater = kept;
          for (const status of [undefined, ...future]) {
            if (status !== undefined) {
              at += 10;
              fullLater = push(fullLater, status, at);
              keptLater = push(keptLater, status, at);
            }
            for (const doneOtherwise of [false, true])
              expect(stepTimes(keptLater, terminal, active, doneOtherwise)).to.deep.equal(
                stepTimes(fullLater, terminal, active, doneOtherwise),
              );
          }
        },
      ),
      { numRuns: 3000 },
    );
  });
});

describe('analytics: compacted timelines through the server', function () {
  this.timeout(120_000);
  let t: TestServer;
  let unfreeze: () => void;
  /** every status task-long entered, with the commit time, as the full timeline would hold it */
  const full: StatusStep[] = [];
  const commitTime = () => Math.floor(t.clock.now() / 1000) * 1000;
  const ACTIVE = new Set(['in-progress', 'review', 'running']);

  async function restart(): Promise<RunningServer> {
    const clock = new ManualClock();
    freezeClock(clock, t.clock.now());
    const config = await testServerConfig(t.dataDir);
    return startServer({ config, plugins: [corePlugin, historyPlugin, analyticsPlugin], clock, log: createLogger(() => undefined) });
  }

  async function analyticsText(server: RunningServer): Promise<string> {
    const res = await fetch(`${server.url}/v1/analytics?project=long&aging=1`, { headers: { authorization: `Bearer ${t.adminToken}` } });
    expect(res.status).to.equal(200);
    return res.text();
  }

  before(async () => {
    t = await startAnalyticsServer({ keepData: true });
    unfreeze = freezeClock(t.clock, Math.floor(t.clock.now() / 1000) * 1000);
    await put(t, [
      { id: 'task-long', type: 'task', summary: 'a node with a long status history', project: 'long' },
      { id: 'task-short', type: 'task', summary: 'a node with a short one', project: 'long' },
    ]);
    full.push({ status: 'open', at: commitTime() });
    // 15 rounds of work, each ending in done and a reopen; then work again, now in review
    const round = ['in-progress', 'blocked', 'in-progress', 'review', 'done', 'open'];
    for (let r = 0; r < 15; r++) {
      for (const status of round) {
        t.clock.advance(3_600_000);
        await setStatus(t, 'task-long', status);
        full.push({ status, at: commitTime() });
      }
    }
    for (const status of ['in-progress', 'review']) {
      t.clock.advance(3_600_000);
      await setStatus(t, 'task-long', status);
      full.push({ status, at: commitTime() });
    }
    t.clock.advance(3_600_000);
    await setStatus(t, 'task-short', 'in-progress');
  });
  let closed = false;
  after(async () => {
    unfreeze();
    if (!closed) await t.close();
    rmSync(t.dataDir, { recursive: true, force: true });
  });

  it('a node with 93 status changes keeps at most 16 steps, and its times are those of its full history', async () => {
    const tenant = t.server.services.tenants.get(t.org)!;
    const timelines = timelinesOf(tenant);
    await timelines.ready();
    expect(full).to.have.length(93);
    expect(timelines.stepsOf('task-long')!.length).to.be.at.most(16);
    const terminal = (s: string) => tenant.registry.isTerminal('task', s);
    const expected = stepTimes(full, terminal, (s) => ACTIVE.has(s), false);
    expect(timelines.timesOf(tenant.index.get('task-long')!)).to.deep.include(expected);
  });

  it('a schema change that makes done no longer terminal replays the history: the times follow the new rules', async () => {
    const tenant = t.server.services.tenants.get(t.org)!;
    const timelines = timelinesOf(tenant);
    await timelines.ready();
    const reviewer = await addPerson(t, 'Reviewer');
    const created = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          md({
            id: 'schema-task-no-done',
            type: 'schema',
            summary: 'tasks end only by cancelling',
            applies_to: ['task'],
            statuses: ['open', 'in-progress', 'blocked', 'review', 'cancelled'],
          }),
        ],
      },
    });
    expect(created.status, created.text).to.equal(200);
    const active = await t.api('POST', '/v1/nodes/schema-task-no-done/status', { token: reviewer.token, body: { status: 'active' } });
    expect(active.status, active.text).to.equal(200);
    expect(tenant.registry.isTerminal('task', 'done')).to.equal(false);
    await timelines.ready();
    const terminal = (s: string) => tenant.registry.isTerminal('task', s);
    const expected = stepTimes(full, terminal, (s) => ACTIVE.has(s), false);
    // under the new rules the node has been open since its creation and started with its first in-progress
    expect(expected).to.include({ openedAt: full[0]!.at, startedAt: full[1]!.at });
    expect(timelines.timesOf(tenant.index.get('task-long')!)).to.deep.include(expected);
  });

  it('a restart reads the timelines back from their snapshot, and without it replays the history: the same analytics', async () => {
    const before = await analyticsText(t.server);
    closed = true;
    await t.close();
    for (const prepare of [() => undefined, () => rmSync(join(t.dataDir, 'tenants', t.org, 'analytics', 'timelines.v8'))]) {
      prepare();
      const server = await restart();
      try {
        expect(await analyticsText(server)).to.equal(before);
      } finally {
        await server.close();
      }
    }
  });
});
