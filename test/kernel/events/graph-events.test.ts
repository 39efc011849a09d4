/**
 * The tenant's event log (kernel/events/log.ts) follows every commit through the real
 * server: writes yield node and edge events in order with ids 1..n, a restart continues the
 * ids and `read` sees every event once across it, `subscribe` hears each append.
 */
import { expect } from 'chai';
import { corePlugin } from '../../../plugins/core/index.js';
import { startTestServer, type TestServer, testServerConfig } from '../../helpers/harness.js';
import type { WorkEvent } from '../../../kernel/events/types.js';
import { createLogger, ManualClock } from '../../../kernel/config.js';
import { startServer, type RunningServer } from '../../../kernel/server.js';
import { rmSync } from 'node:fs';

/** The same data directory served again (not a first start, so not through startTestServer). */
async function restart(dataDir: string): Promise<RunningServer> {
  const config = await testServerConfig(dataDir);
  return startServer({ config, plugins: [corePlugin], clock: new ManualClock(), log: createLogger(() => undefined) });
}

const tenantOf = (t: TestServer) => t.server.services.tenants.get(t.org)!;

describe('events: graph changes derived from commits', function () {
  this.timeout(60_000);
  let t: TestServer;

  before(async () => {
    t = await startTestServer({ plugins: [corePlugin], keepData: true });
  });
  after(async () => {
    await t?.server.close().catch(() => undefined);
  });

  it('writes yield node.created, node.updated, node.status_changed, edge.added/removed and node.deleted in order with ids 1..n', async () => {
    const log = tenantOf(t).events;
    const heard: WorkEvent[] = [];
    const unsubscribe = log.subscribe((e) => heard.push(e));
    const start = log.lastId;
    const existing = await log.read(0, undefined, 1000);
    expect(existing.map((e) => e.id)).to.deep.equal(Array.from({ length: start }, (_, i) => i + 1));

    let res = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          { id: 'task-e1', type: 'task', summary: 'first', project: 'alpha' },
          { id: 'task-e2', type: 'task', summary: 'second' },
        ],
      },
    });
    expect(res.status, res.text).to.equal(200);
    res = await t.api('POST', '/v1/nodes/task-e1/edges', { body: { type: 'blocks', to: 'task-e2' } });
    expect(res.status, res.text).to.equal(200);
    res = await t.api('PATCH', '/v1/nodes/task-e1', { body: { revision: res.body.revision, set: { summary: 'first, reworded' } } });
    expect(res.status, res.text).to.equal(200);
    res = await t.api('POST', '/v1/nodes/task-e1/status', { body: { status: 'done' } });
    expect(res.status, res.text).to.equal(200);
    res = await t.api('DELETE', '/v1/nodes/task-e1/edges', { body: { type: 'blocks', to: 'task-e2' } });
    expect(res.status, res.text).to.equal(200);
    const tenant = tenantOf(t);
    const actor = { personId: t.adminPerson, name: 'Admin', email: 'admin@localhost', agent: null, session: null };
    await tenant.write(actor, { op: 'test_delete', via: 'rest' }, async (draft) => draft.delete('task-e2'));

    const events = await log.read(start);
    expect(events.map((e) => e.id)).to.deep.equal(Array.from({ length: events.length }, (_, i) => start + i + 1));
    expect(events.map((e) => `${e.type} ${e.nodes.join('>')}`)).to.deep.equal([
      'node.created task-e1',
      'node.created task-e2',
      'edge.added task-e1>task-e2',
      'node.updated task-e1',
      'node.status_changed task-e1',
      'edge.removed task-e1>task-e2',
      'node.deleted task-e2',
    ]);
    const [created, , edge, updated, status, , deleted] = events as [
      WorkEvent,
      WorkEvent,
      WorkEvent,
      WorkEvent,
      WorkEvent,
      WorkEvent,
      WorkEvent,
    ];
    expect(created.project).to.equal('alpha');
    expect(created.org).to.equal(t.org);
    expect(created.actor).to.deep.equal({ person: t.adminPerson, agent: null, name: 'Admin', via: 'rest' });
    expect(created.commit).to.match(/^[0-9a-f]{40}$/);
    expect(created.revision).to.match(/^[0-9a-f]{40}$/);
    expect(created.payload).to.include({ type: 'task', link: '/v1/nodes/task-e1' });
    expect(edge.payload).to.deep.include({ from: 'task-e1', type: 'blocks', to: 'task-e2' });
    expect(updated.payload.fields).to.deep.equal(['summary']);
    expect(status.payload).to.include({ to: 'done' });
    expect(status.commit).to.not.equal(updated.commit);
    expect(deleted.project).to.equal(null);
    expect(heard.map((e) => e.id)).to.deep.equal(events.map((e) => e.id));
    unsubscribe();

    // filters: by node, by type prefix, by project
    expect((await log.read(start, { node: 'task-e2' })).map((e) => e.type)).to.deep.equal([
      'node.created',
      'edge.added',
      'edge.removed',
      'node.deleted',
    ]);
    expect((await log.read(start, { types: ['edge.*'] })).length).to.equal(2);
    expect((await log.read(start, { project: 'alpha' })).length).to.equal(5);
    expect((await log.read(start, undefined, 2)).map((e) => e.id)).to.deep.equal([start + 1, start + 2]);
  });

  it('a restart continues the ids and read(after) across it sees every event once', async () => {
    const before = tenantOf(t).events.lastId;
    const all = await tenantOf(t).events.read(0, undefined, 10_000);
    await t.server.close();
    const second = await restart(t.dataDir);
    try {
      const log = second.services.tenants.get(t.org)!.events;
      expect(log.lastId).to.equal(before);
      expect(log.firstId).to.equal(1);
      expect(await log.read(0, undefined, 10_000)).to.deep.equal(all);
      const res = await fetch(`${second.url}/v1/nodes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ nodes: [{ id: 'task-e3', type: 'task', summary: 'third' }] }),
      });
      expect(res.status).to.equal(200);
      const after = await log.read(before - 1);
      expect(after.map((e) => [e.id, e.type])).to.deep.equal([
        [before, all[all.length - 1]!.type],
        [before + 1, 'node.created'],
      ]);
    } finally {
      await second.close();
      rmSync(t.dataDir, { recursive: true, force: true });
    }
  });
});
