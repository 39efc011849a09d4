/**
 * Events survive `kill -9` (issue 24 item 1): a real server process (fsync on) takes a burst
 * of writes and is killed mid-burst. The events of the last commits are then cut from the log
 * (what a kill between the commit and its events, or a power loss, leaves). At the next start
 * every commit of the history has its events, in commit order, with ids 1..n and no gaps, and
 * every acknowledged write has exactly one node.created.
 */
import { expect } from 'chai';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkEvent } from '../../../kernel/events/types.js';
import { groupAlive, killGroup, startServeProcess } from '../../helpers/processes.js';

const children = new Set<ChildProcess>();
let dataDir = '';

function startServe(dir: string): Promise<{ child: ChildProcess; url: string }> {
  return startServeProcess({ SVC_DATA_DIR: dir }, children);
}

/** Every line of the tenant's event segments, in file order. */
function eventLines(dir: string): Array<Record<string, unknown>> {
  const events = join(dir, 'tenants', 'local', 'events');
  const out: Array<Record<string, unknown>> = [];
  for (const name of readdirSync(events).sort()) {
    for (const line of readFileSync(join(events, name), 'utf8').split('\n'))
      if (line) out.push(JSON.parse(line) as Record<string, unknown>);
  }
  return out;
}

after(async () => {
  for (const child of children) if (groupAlive(child.pid!)) await killGroup(child, 'SIGKILL');
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('events: kill -9', function () {
  this.timeout(180_000);

  it("after a kill mid-burst and the last commits' events cut, the next start derives them again from the history", async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'wg-ev-crash-'));
    let server = await startServe(dataDir);
    const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    const acked: string[] = [];
    let stop = false;
    const worker = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const id = `task-ev-w${w}-${i}`;
        try {
          const res = await fetch(`${server.url}/v1/nodes`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ nodes: [{ id, type: 'task', summary: `write ${i} of worker ${w}` }] }),
          });
          if (res.status !== 200) throw new Error(`write ${id} answered ${res.status}: ${await res.text()}`);
          await res.text();
          acked.push(id);
        } catch (err) {
          if (err instanceof Error && /answered/.test(err.message)) throw err;
          return; // the server is gone
        }
      }
    };
    const burst = [0, 1, 2, 3].map(worker);
    while (acked.length < 20) await new Promise((r) => setTimeout(r, 5));
    await killGroup(server.child, 'SIGKILL');
    stop = true;
    await Promise.all(burst);

    // cut the log back to before the events of the last 5 commits that have any
    const segDir = join(dataDir, 'tenants', 'local', 'events');
    const last = readdirSync(segDir).sort().pop()!;
    const path = join(segDir, last);
    const text = readFileSync(path, 'utf8');
    const lines = text.split('\n').filter(Boolean);
    const commits = [...new Set(lines.map((l) => (JSON.parse(l) as { commit?: string }).commit).filter(Boolean))];
    const cutFrom = lines.findIndex((l) => (JSON.parse(l) as { commit?: string }).commit === commits[commits.length - 5]);
    expect(cutFrom).to.be.greaterThan(0);
    const kept = lines.slice(0, cutFrom).join('\n') + '\n';
    truncateSync(path, Buffer.byteLength(kept));
    // and a torn half line after it, as a power loss can leave
    appendFileSync(path, '{"id":99999,"type":"node.cre');

    server = await startServe(dataDir);
    const gitDir = join(dataDir, 'tenants', 'local', 'graph.git');
    const history = spawnSync('git', ['--git-dir', gitDir, 'log', '--first-parent', '--reverse', '--format=%H', 'main'], {
      encoding: 'utf8',
    })
      .stdout.trim()
      .split('\n');
    const all = eventLines(dataDir);
    const events = all.filter((l): l is Record<string, unknown> & WorkEvent => typeof l.id === 'number');
    expect(events.map((e) => e.id)).to.deep.equal(events.map((_, i) => i + 1));
    // every commit, in history order, has its events (each commit's events are contiguous)
    const eventCommits: string[] = [];
    for (const e of events) if (e.commit && eventCommits[eventCommits.length - 1] !== e.commit) eventCommits.push(e.commit);
    expect(eventCommits).to.deep.equal(history);
    const created = events.filter((e) => e.type === 'node.created').map((e) => e.nodes[0]);
    for (const id of acked) expect(created.filter((c) => c === id).length, id).to.equal(1);
    // the recovered events carry the actor from the commit trailers
    const recovered = events.filter((e) => e.commit && commits.slice(-5).includes(e.commit));
    expect(recovered.length).to.be.at.least(5);
    for (const e of recovered) expect(e.actor).to.deep.include({ via: 'rest', name: 'Admin' });

    // and the server goes on from there: the next write's event follows
    const res = await fetch(`${server.url}/v1/nodes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ nodes: [{ id: 'task-ev-after', type: 'task', summary: 'after' }] }),
    });
    expect(res.status).to.equal(200);
    const next = eventLines(dataDir).filter((l) => typeof l.id === 'number');
    expect(next[next.length - 1]).to.deep.include({ id: events.length + 1, type: 'node.created', nodes: ['task-ev-after'] });
    await killGroup(server.child, 'SIGTERM');
  });
});
