/**
 * Issue 10 item 7: graceful stop. On SIGTERM the server stops accepting, finishes in-flight
 * requests (bounded), writes everything out and exits 0; no in-flight client sees a reset, and
 * every acknowledged (2xx) write is there after a restart. `npm start` delivers SIGTERM to the
 * server process itself (no orphan behind a shell wrapper).
 */
import { expect } from 'chai';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanEnv, groupAlive, killGroup, ROOT, SHIM } from '../helpers/processes.js';

interface Outcome {
  id: string;
  status?: number;
  body?: string;
  error?: string;
}

/** One request on a fresh connection (no keep-alive reuse), so every outcome is this request's own. */
function post(url: string, token: string, path: string, body: unknown): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = request(
      url + path,
      {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

function get(url: string, token: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url + path, { agent: false, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on('error', reject);
    req.end();
  });
}

function startServer(
  dataDir: string,
  how: { command?: string; args?: string[] } = {},
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(how.command ?? process.execPath, how.args ?? [SHIM, 'serve'], {
    env: cleanEnv({ PORT: '0', SVC_DATA_DIR: dataDir }),
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start in 60 s: ${out}`)), 60_000);
    const onData = () => {
      const m = /^listening on (http:\/\/\S+)$/m.exec(out);
      if (!m) return;
      clearTimeout(timer);
      resolve({ child, url: m[1]!, output: () => out });
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code} before listening: ${out}`));
    });
  });
}

const exitOf = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve({ code: child.exitCode, signal: child.signalCode })
    : new Promise<{ code: number | null; signal: string | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));

describe('graceful stop (SIGTERM, SIGINT)', function () {
  this.timeout(180_000);
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  after(async () => {
    for (const c of children) if (groupAlive(c.pid!)) await killGroup(c, 'SIGKILL');
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('SIGTERM in the middle of a write burst: every request gets a complete response, exit 0, every 2xx write is there after restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wg-graceful-'));
    dirs.push(dataDir);
    const server = await startServer(dataDir);
    children.push(server.child);
    const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    const outcomes: Outcome[] = [];
    let stopSent = false;
    const worker = async (w: number) => {
      for (let i = 0; i < 400; i++) {
        const id = `task-burst-${w}-${i}`;
        try {
          const res = await post(server.url, token, '/v1/nodes', { nodes: [{ node: { id, type: 'task', summary: `burst ${w} ${i}` } }] });
          outcomes.push({ id, status: res.status, body: res.body });
          if (res.status === 503) return; // told the server is stopping: this client goes elsewhere
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code ?? String(err);
          outcomes.push({ id, error: code });
          if (code === 'ECONNREFUSED') return; // the server stopped accepting: this client is done
        }
        if (stopSent && i > 398) return;
      }
    };
    const workers = [0, 1, 2, 3, 4, 5].map(worker);
    // let the burst get going, then stop the server in the middle of it
    while (outcomes.filter((o) => o.status === 200).length < 30) await new Promise((r) => setTimeout(r, 10));
    const exited = exitOf(server.child);
    process.kill(-server.child.pid!, 'SIGTERM');
    stopSent = true;
    await Promise.all(workers);
    const exit = await exited;
    expect(exit, server.output()).to.deep.equal({ code: 0, signal: null });
    // nobody in flight saw a reset: each request either got a whole response or was refused a connection
    const failures = outcomes.filter((o) => o.error && o.error !== 'ECONNREFUSED');
    expect(failures, JSON.stringify(failures.slice(0, 3))).to.deep.equal([]);
    const acknowledged = outcomes.filter((o) => o.status === 200);
    for (const o of outcomes.filter((x) => x.status === 503)) expect(JSON.parse(o.body!).error.code).to.equal('shutting_down');
    expect(
      outcomes.every((o) => o.status === undefined || o.status === 200 || o.status === 503),
      JSON.stringify(outcomes.filter((o) => o.status && o.status !== 200 && o.status !== 503).slice(0, 2)),
    ).to.equal(true);
    for (const o of outcomes.filter((x) => x.status !== undefined)) expect(() => JSON.parse(o.body!), o.body).to.not.throw();
    // the 30 the stop waited for; a request still on its way when the signal came may be refused
    // (503 shutting_down) rather than served, so none more is owed (a CI run at f3437b1 had none)
    expect(acknowledged.length).to.be.at.least(30);
    // the stop came in the middle of the burst: not every worker got through its 400 writes
    expect(outcomes.length).to.be.below(6 * 400);
    expect(server.output()).to.match(/"msg":"stopped"/);

    const again = await startServer(dataDir);
    children.push(again.child);
    try {
      for (const o of acknowledged) {
        const res = await get(again.url, token, `/v1/nodes/${o.id}`);
        expect(res.status, o.id).to.equal(200);
      }
    } finally {
      await killGroup(again.child, 'SIGTERM');
    }
    execFileSync('git', ['--git-dir', join(dataDir, 'tenants', 'local', 'graph.git'), 'fsck', '--full', '--strict'], { stdio: 'pipe' });
  });

  it('SIGINT stops the same way (exit 0)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wg-graceful-int-'));
    dirs.push(dataDir);
    const server = await startServer(dataDir);
    children.push(server.child);
    const exited = exitOf(server.child);
    process.kill(-server.child.pid!, 'SIGINT');
    expect(await exited).to.deep.equal({ code: 0, signal: null });
  });

  it('`npm start` delivers SIGTERM to the server process: a signal to npm alone stops the server and leaves no orphan', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wg-graceful-npm-'));
    dirs.push(dataDir);
    const server = await startServer(dataDir, { command: 'npm', args: ['start', '--silent'] });
    children.push(server.child);
    expect((await get(server.url, '', '/healthz')).status).to.equal(200);
    const exited = exitOf(server.child);
    process.kill(server.child.pid!, 'SIGTERM'); // npm only, not its process group
    const exit = await exited;
    expect(exit.code === 0 || exit.signal === 'SIGTERM', JSON.stringify(exit)).to.equal(true);
    for (let i = 0; i < 200 && groupAlive(server.child.pid!); i++) await new Promise((r) => setTimeout(r, 50));
    expect(groupAlive(server.child.pid!), 'a process of npm start outlived npm').to.equal(false);
    expect(server.output()).to.match(/"msg":"stopped"/);
  });
});
