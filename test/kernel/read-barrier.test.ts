/**
 * Durability before visibility (issue 27, item 6; kernel/tenant.ts `readBarrier`): while a
 * commit's fdatasync is held open, the commit is in the index (the next write builds on it),
 * but no answer reveals it: a REST read and an MCP tool read wait at the barrier, its events
 * are not in the log (so no stream, wait or webhook hears of them), and the write itself is not
 * acknowledged. Released, everything answers with the new state.
 */
import { expect } from 'chai';
import { open, type FileHandle } from 'node:fs/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { md, putNodes, startTestServer, type TestServer } from '../helpers/harness.js';
import { until } from '../helpers/until.js';

/** Holds every FileHandle.datasync of this process while `held`, until released. */
class DatasyncGate {
  held = false;
  private waiting: Array<() => void> = [];
  private original: FileHandle['datasync'] | null = null;
  private proto: { datasync: FileHandle['datasync'] } | null = null;

  async install(): Promise<void> {
    const dir = mkdtempSync(join(tmpdir(), 'wg-gate-'));
    const fh = await open(join(dir, 'probe'), 'w');
    this.proto = Object.getPrototypeOf(fh) as { datasync: FileHandle['datasync'] };
    await fh.close();
    rmSync(dir, { recursive: true, force: true });
    const original = this.proto.datasync;
    this.original = original;
    const hold = (): Promise<void> | null => (this.held ? new Promise<void>((resolve) => this.waiting.push(resolve)) : null);
    this.proto.datasync = async function (this: FileHandle) {
      await hold();
      return original.call(this);
    };
  }

  get pending(): number {
    return this.waiting.length;
  }

  release(): void {
    this.held = false;
    for (const wake of this.waiting.splice(0)) wake();
  }

  uninstall(): void {
    this.release();
    if (this.proto && this.original) this.proto.datasync = this.original;
  }
}

describe('durability before visibility: reads wait for the fdatasync of what they would see', function () {
  let t: TestServer;
  const gate = new DatasyncGate();
  before(async () => {
    await gate.install();
    t = await startTestServer({ config: { fsync: true } });
  });
  after(async () => {
    gate.uninstall();
    await t?.close();
  });

  it('a read, a tool read, the event log and the acknowledgement all wait while the commit is not durable', async () => {
    await putNodes(t, [{ id: 'task-durable', type: 'task', summary: 'First' }]);
    const tenant = t.server.services.tenants.get(t.org)!;
    const client = await t.mcp();
    const lastEvent = tenant.events.lastId;
    const revisionBefore = tenant.index.get('task-durable')!.revision;
    // the idle checkpoint of that write done now, so the held fdatasync is the next commit's
    await tenant.store.settled();

    gate.held = true;
    const settled = new Set<string>();
    const track = <T>(name: string, p: Promise<T>): Promise<T> =>
      p.finally(() => {
        settled.add(name);
      });
    const write = track(
      'write',
      t.api('POST', '/v1/nodes', {
        body: {
          nodes: [{ node: md({ id: 'task-durable', type: 'task', summary: 'Second' }), if_exists: 'update', revision: revisionBefore }],
        },
      }),
    );
    // the commit is journaled and in the index while its fdatasync is held
    await until(() => tenant.index.get('task-durable')!.revision !== revisionBefore && gate.pending > 0, 'the commit in the index');
    const waitsBefore = tenant.readWaits;
    const read = track('read', t.api('GET', '/v1/nodes/task-durable'));
    const tool = track('tool', t.tool(client, 'get_node', { id: 'task-durable' }));
    const events = track('events', t.api('GET', `/v1/events?since=${lastEvent}&wait=30`));
    await until(() => tenant.readWaits >= waitsBefore + 2, 'both reads at the barrier');

    expect([...settled], 'nothing answered before the commit is durable').to.deep.equal([]);
    expect(tenant.events.lastId, 'no event of the undurable commit in the log').to.equal(lastEvent);

    gate.release();
    const [w, r, tl, ev] = await Promise.all([write, read, tool, events]);
    expect(w.status, w.text).to.equal(200);
    const revision = w.body.results[0].revision as string;
    expect(r.status).to.equal(200);
    expect(r.body.revision).to.equal(revision);
    expect(JSON.stringify(r.body)).to.include('Second');
    expect(tl.isError, tl.text).to.equal(false);
    expect(tl.json.revision).to.equal(revision);
    expect(ev.status, ev.text).to.equal(200);
    const updated = (ev.body.events as Array<{ type: string; nodes: string[] }>).find(
      (e) => e.type === 'node.updated' && e.nodes[0] === 'task-durable',
    );
    expect(updated, JSON.stringify(ev.body)).to.not.equal(undefined);
  });

  it('without a write in flight a read does not wait', async () => {
    const tenant = t.server.services.tenants.get(t.org)!;
    await until(() => tenant.readBarrier() === null, 'no commit in flight');
    const waits = tenant.readWaits;
    const r = await t.api('GET', '/v1/nodes/task-durable');
    expect(r.status).to.equal(200);
    expect(tenant.readWaits).to.equal(waits);
  });
});
