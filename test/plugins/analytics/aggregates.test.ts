/**
 * Issue 27 item 5: the analytics aggregates kept per commit (aggregates.ts) answer GET
 * /v1/analytics byte for byte as aggregates built from the index afresh, after a mix of
 * creates over several weeks, updates, status changes (active, done, reopened), edge changes
 * (blocks, resolves, assigned) and deletes, for several scopes and windows, JSON and text.
 */
import { expect } from 'chai';
import type { TestServer } from '../../helpers/harness.js';
import { dropAggregates } from '../../../plugins/analytics/aggregates.js';
import { directWrite } from '../history/helpers.js';
import { tenantOf } from '../leases/helpers.js';
import { addEdge, analytics, DAY, freezeClock, put, setStatus, startAnalyticsServer, touch } from './helpers.js';

const QUERIES = [
  '',
  '?weeks=52',
  '?weeks=1&top=1',
  '?type=task',
  '?type=issue,task&aging=1',
  '?project=api',
  '?project=web&weeks=4&top=3&aging=2',
  '?project=nowhere',
  '?format=text',
  '?project=api&format=text&weeks=26',
];

describe('analytics: aggregates kept per commit equal aggregates built afresh', function () {
  this.timeout(120_000);
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

  const id = (i: number) => (i % 4 === 0 ? `issue-ag-${i}` : `task-ag-${i}`);

  async function same(label: string): Promise<void> {
    const kept: string[] = [];
    for (const q of QUERIES) {
      const r = await analytics(t, q);
      expect(r.status, r.text).to.equal(200);
      kept.push(r.text);
    }
    dropAggregates(tenantOf(t));
    for (const [k, q] of QUERIES.entries()) expect((await analytics(t, q)).text, `${label}: GET /v1/analytics${q}`).to.equal(kept[k]);
  }

  it('creates over weeks, statuses, edges and deletes: every read equals a fresh build', async () => {
    for (let week = 0; week < 6; week++) {
      const nodes: Array<Record<string, unknown>> = [];
      for (let i = week * 20; i < (week + 1) * 20; i++) {
        const node: Record<string, unknown> = { id: id(i), type: id(i).split('-')[0], summary: `work ${i}` };
        if (i % 3) node.project = i % 3 === 1 ? 'api' : 'web';
        nodes.push(node);
      }
      await put(t, nodes);
      for (let i = week * 20; i < (week + 1) * 20; i += 3) await setStatus(t, id(i), 'in-progress');
      t.clock.advance(2 * DAY);
      for (let i = week * 20 + 1; i < (week + 1) * 20; i += 4) await setStatus(t, id(i), id(i).startsWith('issue') ? 'resolved' : 'done');
      t.clock.advance(5 * DAY);
      if (week === 2) await same('after three weeks');
    }
    await same('after six weeks of creates and statuses');

    for (let i = 2; i < 120; i += 9) await addEdge(t, id(i), 'blocks', id((i * 5) % 120));
    for (let i = 5; i < 120; i += 17) await addEdge(t, id(i), 'resolves', id((i * 3) % 120));
    await addEdge(t, id(6), 'assigned', t.adminPerson);
    for (let i = 0; i < 120; i += 10) await setStatus(t, id(i), 'open'); // reopened or back from active
    await touch(t, id(3), 'renamed work 3');
    const res = await t.api('POST', '/v1/nodes/task-ag-7/priority', { body: { priority: 'p1' } });
    expect(res.status, res.text).to.equal(200);
    t.clock.advance(DAY);
    await put(t, [
      { id: 'issue-ag-blocker', type: 'issue', summary: 'blocks', project: 'api' },
      { id: 'task-ag-waiting', type: 'task', summary: 'waits', project: 'api', edges: [{ type: 'blocked-by', to: 'issue-ag-blocker' }] },
    ]);
    await same('after edges, reopens, an update and a priority');
    // a new resolver of the blocker: task-ag-waiting is two links from the only changed node
    await put(t, [{ id: 'task-ag-fix', type: 'task', summary: 'fixes', edges: [{ type: 'resolves', to: 'issue-ag-blocker' }] }]);
    await same('after a resolver two links away');

    const res2 = await t.api('DELETE', `/v1/nodes/${id(2)}/edges`, { body: { type: 'blocks', to: id(10) } });
    expect(res2.status, res2.text).to.equal(200);
    await directWrite(t, { op: 'delete_node', via: 'rest' }, (d) => {
      for (const x of [id(5), id(11), id(12), id(47), id(101)]) d.delete(x);
    });
    await same('after an edge removal and deletes');
    t.clock.advance(40 * DAY);
    await same('forty days later');
  });
});
