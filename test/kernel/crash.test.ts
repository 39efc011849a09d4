/**
 * Crash safety (issue 2, item 4): a real server process with fsync on takes a burst of
 * concurrent writes and is killed with SIGKILL at a random moment mid-burst. After each kill
 * the repository passes `git fsck --full --strict`, and after the restart every write that was
 * acknowledged (a 200) reads back with the revision the acknowledgement named.
 */
import { expect } from 'chai';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { groupAlive, killGroup, startServeProcess } from '../helpers/processes.js';

/** SIGKILL to the CLI shim and the server it re-executed, then check that both are gone. */
async function killHard(child: ChildProcess): Promise<void> {
  await killGroup(child, 'SIGKILL');
  expect(groupAlive(child.pid!), 'server process group still alive after SIGKILL').to.equal(false);
}

function startServe(dataDir: string): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  // SVC_FSYNC is deliberately unset: durability on, as in production.
  return startServeProcess({ SVC_DATA_DIR: dataDir }, children);
}

function fsck(gitDir: string): { status: number | null; output: string } {
  const res = spawnSync('git', ['--git-dir', gitDir, 'fsck', '--full', '--strict', '--no-progress'], { encoding: 'utf8' });
  return { status: res.status, output: `${res.stdout}${res.stderr}` };
}

const children = new Set<ChildProcess>();
let dataDir = '';

after(async () => {
  for (const child of children) if (groupAlive(child.pid!)) await killHard(child);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('crash safety: SIGKILL mid-burst with fsync on', function () {
  this.timeout(180_000);

  it('every acknowledged write survives, and git fsck --full --strict is clean after each kill', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'wg-crash-'));
    const gitDir = join(dataDir, 'tenants', 'local', 'graph.git');
    const acked = new Map<string, string>(); // id -> revision from the 200
    const attempted = new Set<string>();
    const ROUNDS = 4;
    const WORKERS = 12;
    let token = '';
    let server = await startServe(dataDir);
    token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();

    for (let round = 0; round < ROUNDS; round++) {
      const ackedBefore = acked.size;
      let stop = false;
      let acksThisRound = 0;
      const worker = async (w: number) => {
        for (let i = 0; !stop; i++) {
          const id = `task-crash-r${round}-w${w}-${i}`;
          attempted.add(id);
          const markdown = `---\nid: ${id}\ntype: task\nstatus: open\nsummary: crash round ${round} worker ${w} write ${i}\n---\nBody of ${id}.\n`;
          try {
            const res = await fetch(`${server.url}/v1/nodes`, {
              method: 'POST',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              body: JSON.stringify({ nodes: [markdown] }),
            });
            const text = await res.text();
            if (res.status !== 200) {
              // the only acceptable non-200 is none at all: the server was healthy until killed
              throw new Error(`write ${id} answered ${res.status}: ${text}`);
            }
            const body = JSON.parse(text) as { results: Array<{ id: string; status: string; revision: string }> };
            expect(body.results[0]).to.include({ id, status: 'created' });
            acked.set(id, body.results[0]!.revision);
            acksThisRound++;
          } catch (err) {
            if (err instanceof Error && /answered|expected/.test(err.message)) throw err;
            return; // connection refused or reset: the server is gone
          }
        }
      };
      const burst = Array.from({ length: WORKERS }, (_, w) => worker(w));
      // kill at a random moment once the burst is under way (some writes acknowledged, more in flight)
      while (acksThisRound < 3) await new Promise((r) => setTimeout(r, 5));
      // odd rounds run past the 1 s write-out lag, so the kill can land inside a checkpoint
      // (pack, index and ref being written) as well as between acknowledgements
      const delay = round % 2 === 0 ? Math.floor(Math.random() * 400) : 1000 + Math.floor(Math.random() * 900);
      await new Promise((r) => setTimeout(r, delay));
      await killHard(server.child);
      stop = true;
      await Promise.all(burst);
      expect(acked.size, `round ${round}: writes acknowledged before the kill`).to.be.greaterThan(ackedBefore);
      if (process.env.CRASH_DEBUG)
        console.log(`round ${round}: +${acked.size - ackedBefore} acked, kill after ${delay} ms`, new Date().toISOString());

      const check = fsck(gitDir);
      expect(check.status, `round ${round} (kill after ${delay} ms): git fsck\n${check.output}`).to.equal(0);
      expect(check.output, `round ${round}`).to.not.match(/error|missing|broken|corrupt|bad /i);

      // the killed server could not release its data-dir lock; the restart takes the stale lock over
      expect(existsSync(join(dataDir, 'server.lock')), 'stale lock left by the killed server').to.equal(true);
      server = await startServe(dataDir);
      expect(server.output(), 'a restart must not bootstrap again').to.not.match(/first start/);
      // every acknowledged write, from this round and all earlier ones, reads back unchanged
      const ids = [...acked.keys()];
      const lost: string[] = [];
      const changed: string[] = [];
      for (let i = 0; i < ids.length; i += 32) {
        await Promise.all(
          ids.slice(i, i + 32).map(async (id) => {
            const res = await fetch(`${server.url}/v1/nodes/${id}`, { headers: { authorization: `Bearer ${token}` } });
            if (res.status !== 200) return void lost.push(`${id}: ${res.status}`);
            const node = (await res.json()) as { revision: string; body: string };
            if (node.revision !== acked.get(id)) changed.push(`${id}: ${node.revision} != ${acked.get(id)}`);
            expect(node.body).to.include(`Body of ${id}.`);
          }),
        );
      }
      expect(lost, `round ${round}: acknowledged writes lost`).to.deep.equal([]);
      expect(changed, `round ${round}: acknowledged revisions changed`).to.deep.equal([]);
      // the index after restart agrees with the repository HEAD
      const status = (await (await fetch(`${server.url}/v1/status`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
        head: string;
        node_count: number;
      };
      const head = spawnSync('git', ['--git-dir', gitDir, 'rev-parse', 'refs/heads/main'], { encoding: 'utf8' }).stdout.trim();
      expect(status.head).to.equal(head);
      // nodes: proj-root + admin person + every acknowledged write + in-flight ones that made it before the kill
      expect(status.node_count).to.be.at.least(acked.size + 2);
      expect(status.node_count).to.be.at.most(attempted.size + 2);
    }
    // the restarted server takes writes again
    const res = await fetch(`${server.url}/v1/nodes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ nodes: [`---\nid: task-after-crashes\ntype: task\nstatus: open\nsummary: after the crashes\n---\n`] }),
    });
    expect(res.status).to.equal(200);
    await killHard(server.child);
    const final = fsck(gitDir);
    expect(final.status, final.output).to.equal(0);
  });
});
