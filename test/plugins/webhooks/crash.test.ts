/**
 * Webhooks survive `kill -9` (issue 24 acceptance): a real `workgraph serve` child process
 * delivers to a slow, verifying receiver while writes keep coming; it is killed with SIGKILL
 * mid-delivery, twice, and restarted on the same data directory. After the last restart every
 * acknowledged write's `node.created` event reaches the receiver at least once, in order within
 * each life of the server (the cursor is written behind the deliveries: after a restart the
 * events since the last durable cursor are repeated, with the same `webhook-id`).
 */
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSecrets } from '../../helpers/harness.js';
import { groupAlive, killGroup, startServeProcess } from '../../helpers/processes.js';
import { Receiver } from './receiver.js';
import { until } from '../../helpers/until.js';

const children = new Set<ChildProcess>();
let dataDir = '';
let receiver: Receiver | null = null;

function startServe(dir: string): Promise<{ child: ChildProcess; url: string }> {
  return startServeProcess({ SVC_DATA_DIR: dir, SVC_WEBHOOK_ALLOW_PRIVATE: '1', SVC_WEBHOOK_TIMEOUT_MS: '2000' }, children);
}

after(async () => {
  for (const child of children) if (groupAlive(child.pid!)) await killGroup(child, 'SIGKILL');
  await receiver?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('webhooks: kill -9 of the server during deliveries', function () {
  this.timeout(240_000);

  it('after each restart every acknowledged event still arrives, at least once and in order', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'wg-hook-crash-'));
    receiver = await new Receiver().start();
    // slow enough that deliveries are in flight when the kill lands
    receiver.reply = () => ({ status: 200, delayMs: 40 });
    const T0 = Date.now();
    const dbg = (m: string) =>
      process.env.HOOK_DEBUG && console.log(`${Date.now() - T0} ms: ${m} (received ${receiver!.received.length}, acked ${acked.length})`);
    const acked: string[] = [];
    let server = await startServe(dataDir);
    const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    runSecrets.add(token);
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(server.url + path, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const created = await call('POST', '/v1/webhooks', { url: receiver.url, types: ['node.created'] });
    expect(created.status).to.equal(201);
    runSecrets.add(created.body.secret);
    receiver.secret = created.body.secret;
    const hookId = created.body.webhook.id as string;

    for (let round = 0; round < 2; round++) {
      let stop = false;
      const writer = async () => {
        // bounded: the backlog stays a few seconds of deliveries
        for (let i = 0; !stop && i < 40; i++) {
          const id = `task-hookcrash-r${round}-${i}`;
          try {
            const res = await fetch(`${server.url}/v1/nodes`, {
              method: 'POST',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              body: JSON.stringify({ nodes: [`---\nid: ${id}\ntype: task\nstatus: open\nsummary: hook crash ${round} ${i}\n---\n`] }),
            });
            await res.text();
            if (res.status === 200) acked.push(id);
          } catch {
            return; // the server is gone
          }
        }
      };
      const writing = writer();
      const base = receiver.received.length;
      // kill once deliveries of this round are under way
      await until(() => receiver!.received.length >= base + 5, `deliveries of round ${round}`, 60_000);
      await killGroup(server.child, 'SIGKILL');
      stop = true;
      await writing;
      dbg('killed');
      server = await startServe(dataDir);
      dbg('restarted');
    }

    // every acknowledged write's event arrives after the last restart
    const nodeOf = (r: { json: any }) => r.json?.data?.nodes?.[0] as string | undefined;
    await until(
      () => {
        const got = new Set(receiver!.received.map(nodeOf));
        return acked.every((id) => got.has(id));
      },
      'every acknowledged event at the receiver',
      90_000,
    );
    dbg('all arrived');
    const ids = receiver.eventIds();
    // in order within each life of the server; a restart may go back to the last durable cursor
    // (written behind the deliveries) and send events already delivered again: never one not yet
    // delivered out of turn, and at most once per restart
    let rewinds = 0;
    for (let i = 1; i < ids.length; i++) {
      if (ids[i]! >= ids[i - 1]!) continue;
      rewinds++;
      expect(ids.slice(0, i), `a rewind repeats a delivered event: ${ids.slice(Math.max(0, i - 3), i + 2).join(',')}`).to.include(ids[i]!);
    }
    expect(rewinds, `rewinds in ${ids.join(',')}`).to.be.at.most(2);
    for (const rec of receiver.received) {
      expect(rec.verified, rec.verifyError ?? '').to.equal(true);
      expect(rec.headers['webhook-id']).to.equal(`evt_local_${rec.json.data.id}`);
    }
    // the restarted server's view: the cursor reached the newest delivered event
    const view = await until(async () => {
      const v = await call('GET', `/v1/webhooks/${hookId}`);
      // at least the newest delivered event (events the subscription does not take move it on too)
      return typeof v.body.last_event === 'number' && v.body.last_event >= ids.at(-1)! ? v : null;
    }, 'the cursor');
    expect(view.body.state).to.equal('active');
    await killGroup(server.child, 'SIGTERM');
  });
});
