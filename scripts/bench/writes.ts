/**
 * Node writes per second at 10,000 existing nodes, durability on (fsync), against the native
 * git CLI doing the same commits and against `git fast-import` streaming them.
 *
 *   ours (tenant.write)   in-process, sequential: one `tenant.write` per node update, one commit
 *                         each, through the whole write path (ajv, seed-pack hooks in the
 *                         sandbox, serialization, journal record fdatasynced, index update);
 *                         each timed block ends with the checkpoint that writes its commits
 *                         out (one fsynced pack, the ref fsynced). This is the headline number.
 *   ours (HTTP)           the real server process (`workgraph serve`, fsync on), POST /v1/nodes
 *                         with one node per request (markdown string, if_exists=update +
 *                         revision), 1 and 4 concurrent keep-alive clients.
 *   git-cli               a working tree cloned from the same repository (same sharded layout,
 *                         10,000 files, a 10,000-entry index), `git add <file>` + `git commit`
 *                         per write, with `core.fsync=all` and `core.fsyncMethod=fsync` (objects,
 *                         index and refs durable, as ours are). This is the ratio's baseline.
 *                         Also shown: the same with git's default durability (loose objects, the
 *                         index and refs are not fsynced) and the plumbing sequence hash-object -w
 *                         / update-index / write-tree / commit-tree / update-ref (5 processes).
 *   fast-import           one `git fast-import` process fed the same commits (same paths and
 *                         bytes, one file per commit, ending with `done`) on a copy of the bare
 *                         repository; wall time from spawn to exit, durable (its pack is fsynced
 *                         once, at the end).
 *   fsync floor           the least a durable loose-object commit can wait for on this disk:
 *                         6 object files written+fsynced in parallel, their directories fsynced,
 *                         then the ref written+fsynced+renamed and its directory fsynced.
 *
 * git replays exactly the file contents ours committed. The machine is shared and noisy, so ours,
 * HTTP and git CLI run interleaved in rounds (ours block, HTTP blocks, git blocks, ours block,
 * ...; the HTTP server works on its own copy of the fixture) and each rate is the total over
 * all rounds. Env: BENCH_WRITES_N (ours, default 500), BENCH_WRITES_GIT_N (git
 * CLI, default 150), BENCH_WRITES_HTTP_N (default 300), BENCH_WRITES_ROUNDS (default 5).
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, promises as fsp, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createLogger } from '../../kernel/config.js';
import { startKernel } from '../../kernel/server.js';
import type { Tenant } from '../../kernel/tenant.js';
import type { WriteActor } from '../../kernel/write-draft.js';
import { allPlugins } from '../plugins.js';
import {
  benchConfig,
  benchId,
  copyFixture,
  fixture,
  fmtMs,
  fmtRate,
  fmtRatio,
  gitAsync,
  gitEnv,
  gitSync,
  machineNote,
  median,
  nowMs,
  recordResult,
  runIfMain,
  scratchDir,
  startServerProcess,
  verdict,
  waitQuiet,
  type Fixture,
  type ServerChild,
} from './lib.js';

const NODES = 10_000;
const N_OURS = Number(process.env.BENCH_WRITES_N ?? 500);
const N_GIT = Number(process.env.BENCH_WRITES_GIT_N ?? 150);
const N_HTTP = Number(process.env.BENCH_WRITES_HTTP_N ?? 300);
const ROUNDS = Math.max(1, Number(process.env.BENCH_WRITES_ROUNDS ?? 5));
const WARMUP = 20;

export interface Change {
  path: string;
  content: string;
  message: string;
}

/** Spread updates over the whole graph (and so over all 256 shards). */
function nodeIndexFor(k: number): number {
  return (k * 7919 + 13) % NODES;
}

/** Accumulated wall and CPU time of one contender over several blocks. */
class Tally {
  ms = 0;
  cpuMs = 0;
  count = 0;
  perBlock: number[] = [];
  async time(count: number, fn: () => Promise<void>): Promise<void> {
    const c0 = process.cpuUsage();
    const t0 = nowMs();
    await fn();
    const ms = nowMs() - t0;
    const c = process.cpuUsage(c0);
    this.ms += ms;
    this.cpuMs += (c.user + c.system) / 1000;
    this.count += count;
    this.perBlock.push((count * 1000) / ms);
  }
  get rate(): number {
    return (this.count * 1000) / this.ms;
  }
}

// ---------------------------------------------------------------------------------------
// ours

function oursWriter(tenant: Tenant, person: string): (k: number) => Promise<Change> {
  const actor: WriteActor = { personId: person, name: 'Admin', email: 'admin@localhost', agent: null, session: null };
  return async (k) => {
    const id = benchId(nodeIndexFor(k));
    const committed = await tenant.write(actor, { op: 'put_node', via: 'rest' }, async (draft) => {
      const cur = draft.get(id)!;
      cur.frontmatter.summary = `Importer drops rows on DST boundaries (write ${k})`;
      draft.put({ frontmatter: cur.frontmatter, body: `${cur.body.replace(/\nWrite \d+\.\n$/, '\n')}\nWrite ${k}.\n` });
      return draft.commit();
    });
    const c = committed.get(id);
    if (!c || c.status !== 'updated' || !c.record) throw new Error(`write ${k} did not update ${id}: ${c?.status}`);
    return {
      path: c.record.path,
      content: c.record.markdown,
      message: `put_node: ${id}\n\nSvc-Op: put_node\nSvc-Via: rest\nSvc-Person: ${person}\n`,
    };
  };
}

/**
 * The real server process on its own copy of the fixture, driven over POST /v1/nodes. Ids are
 * handed out in order; every id is read once up front (its revision), not timed.
 */
class HttpWriter {
  private state = new Map<string, { markdown: string; revision: string }>();
  private seq = 0;
  private constructor(
    private readonly server: ServerChild,
    private readonly token: string,
  ) {}

  static async start(f: Fixture, ids: string[]): Promise<HttpWriter> {
    const server = await startServerProcess(f.dataDir, { SVC_FSYNC: '1' });
    const w = new HttpWriter(server, f.token);
    for (const id of ids) {
      const r = await fetch(`${server.url}/v1/nodes/${id}`, { headers: w.auth });
      const j = (await r.json()) as { markdown: string; revision: string };
      w.state.set(id, { markdown: j.markdown, revision: j.revision });
    }
    return w;
  }

  private get auth(): Record<string, string> {
    return { authorization: `Bearer ${this.token}` };
  }

  async post(id: string): Promise<void> {
    const s = this.state.get(id)!;
    const markdown = s.markdown.replace(/^summary: .*$/m, `summary: Importer drops rows on DST boundaries (http ${this.seq++})`);
    const res = await fetch(`${this.server.url}/v1/nodes`, {
      method: 'POST',
      headers: { ...this.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ nodes: [{ node: markdown, if_exists: 'update', revision: s.revision }] }),
    });
    const body = (await res.json()) as { results: Array<{ status: string; revision: string }> };
    if (res.status !== 200 || body.results[0]?.status !== 'updated')
      throw new Error(`POST /v1/nodes: ${res.status} ${JSON.stringify(body)}`);
    s.revision = body.results[0].revision;
    s.markdown = markdown;
  }

  /** `ids` split round-robin over `clients` concurrent keep-alive clients. */
  async run(ids: string[], clients: number): Promise<void> {
    const lanes: string[][] = Array.from({ length: clients }, () => []);
    ids.forEach((id, k) => lanes[k % clients]!.push(id));
    await Promise.all(
      lanes.map(async (lane) => {
        for (const id of lane) await this.post(id);
      }),
    );
  }

  stop(): Promise<void> {
    return this.server.stop();
  }
}

// ---------------------------------------------------------------------------------------
// git

const DURABLE = ['-c', 'core.fsync=all', '-c', 'core.fsyncMethod=fsync'];
const COMMON = [
  '-c',
  'gc.auto=0',
  '-c',
  'maintenance.auto=false',
  '-c',
  'user.name=Admin',
  '-c',
  'user.email=admin@localhost',
  '-c',
  'commit.gpgSign=false',
  '-c',
  'core.hooksPath=/dev/null',
];
const GIT_DATES = { GIT_AUTHOR_DATE: '1735787045 +0000', GIT_COMMITTER_DATE: '1735787045 +0000' };

/** A working tree of the fixture repository: same sharded layout, every node checked out. */
function makeWorkTree(f: Fixture, label: string): string {
  const wt = join(scratchDir(label), 'wt');
  gitSync(['clone', '-q', '--no-hardlinks', f.gitdir, wt]);
  return wt;
}

/** `git add` + `git commit` per change in a working tree. */
function gitPorcelain(wt: string, durable: boolean): (c: Change) => Promise<void> {
  const cfg = [...COMMON, ...(durable ? DURABLE : [])];
  const env = gitEnv(GIT_DATES);
  return async (c) => {
    writeFileSync(join(wt, c.path), c.content);
    await gitAsync([...cfg, 'add', '--', c.path], { cwd: wt, env });
    await gitAsync([...cfg, 'commit', '-q', '--no-verify', '-F', '-'], { cwd: wt, env, input: c.message });
  };
}

/** hash-object -w / update-index / write-tree / commit-tree / update-ref per change. */
function gitPlumbing(wt: string): (c: Change) => Promise<void> {
  const cfg = [...COMMON, ...DURABLE];
  const env = gitEnv({
    ...GIT_DATES,
    GIT_AUTHOR_NAME: 'Admin',
    GIT_AUTHOR_EMAIL: 'admin@localhost',
    GIT_COMMITTER_NAME: 'Admin',
    GIT_COMMITTER_EMAIL: 'admin@localhost',
  });
  let head = gitSync(['rev-parse', 'HEAD'], { cwd: wt }).trim();
  return async (c) => {
    const blob = (await gitAsync([...cfg, 'hash-object', '-w', '--stdin'], { cwd: wt, env, input: c.content })).trim();
    await gitAsync([...cfg, 'update-index', '--cacheinfo', `100644,${blob},${c.path}`], { cwd: wt, env });
    const tree = (await gitAsync([...cfg, 'write-tree'], { cwd: wt, env })).trim();
    const commit = (await gitAsync([...cfg, 'commit-tree', tree, '-p', head, '-F', '-'], { cwd: wt, env, input: c.message })).trim();
    await gitAsync([...cfg, 'update-ref', 'refs/heads/main', commit, head], { cwd: wt, env });
    head = commit;
  };
}

function fastImportStream(changes: Change[], parent: string): Buffer {
  const parts: Buffer[] = [Buffer.from('feature done\n')];
  changes.forEach((c, i) => {
    const msg = Buffer.from(c.message, 'utf8');
    const content = Buffer.from(c.content, 'utf8');
    const who = `Admin <admin@localhost> ${1735787045 + i} +0000`;
    parts.push(Buffer.from(`commit refs/heads/main\nmark :${i + 1}\nauthor ${who}\ncommitter ${who}\ndata ${msg.length}\n`), msg);
    if (i === 0) parts.push(Buffer.from(`from ${parent}\n`));
    parts.push(Buffer.from(`M 100644 inline ${c.path}\ndata ${content.length}\n`), content, Buffer.from('\n'));
  });
  parts.push(Buffer.from('done\n'));
  return Buffer.concat(parts);
}

export async function fastImport(f: Fixture, changes: Change[], label: string): Promise<{ rate: number; ms: number }> {
  const dir = scratchDir(label);
  const gitdir = join(dir, 'graph.git');
  mkdirSync(gitdir);
  cpSync(f.gitdir, gitdir, { recursive: true });
  const parent = gitSync(['--git-dir', gitdir, 'rev-parse', 'refs/heads/main']).trim();
  const stream = fastImportStream(changes, parent);
  const t0 = nowMs();
  await new Promise<void>((resolvePromise, reject) => {
    const child = spawn('git', ['--git-dir', gitdir, ...COMMON, ...DURABLE, 'fast-import', '--quiet'], {
      env: gitEnv(),
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolvePromise() : reject(new Error(`fast-import failed (${code}): ${err}`))));
    child.stdin.end(stream);
  });
  const ms = nowMs() - t0;
  const count = Number(gitSync(['--git-dir', gitdir, 'rev-list', '--count', `${parent}..refs/heads/main`]).trim());
  if (count !== changes.length) throw new Error(`fast-import wrote ${count} commits, expected ${changes.length}`);
  rmSync(dir, { recursive: true, force: true });
  return { rate: (changes.length * 1000) / ms, ms };
}

// ---------------------------------------------------------------------------------------
// the disk's floor for one durable loose-object commit

async function fsyncFloor(iterations = 150): Promise<{ looseMs: number; journalMs: number }> {
  const dir = scratchDir('writes-fsync');
  for (let i = 0; i < 256; i++) mkdirSync(join(dir, i.toString(16).padStart(2, '0')));
  const data = Buffer.alloc(400, 7);
  const writeDurable = async (path: string): Promise<void> => {
    const tmp = `${path}.tmp`;
    const fh = await fsp.open(tmp, 'wx');
    await fh.writeFile(data);
    await fh.sync();
    await fh.close();
    await fsp.rename(tmp, path);
  };
  const syncDir = async (d: string): Promise<void> => {
    const fh = await fsp.open(d, 'r');
    await fh.sync();
    await fh.close();
  };
  let t0 = nowMs();
  for (let i = 0; i < iterations; i++) {
    const dirs = Array.from({ length: 6 }, (_, j) => join(dir, ((i * 6 + j) % 256).toString(16).padStart(2, '0')));
    await Promise.all(dirs.map((d, j) => writeDurable(join(d, `o${i}_${j}`))));
    await Promise.all(dirs.map(syncDir));
    await writeDurable(join(dir, `ref${i}`));
    await syncDir(dir);
  }
  const looseMs = (nowMs() - t0) / iterations;
  // one append + fdatasync per commit: what a write-ahead journal of whole commits would wait for
  const journal = await fsp.open(join(dir, 'journal'), 'a');
  const record = Buffer.alloc(6 * 400 + 300, 9);
  t0 = nowMs();
  for (let i = 0; i < iterations; i++) {
    await journal.write(record);
    await journal.datasync();
  }
  const journalMs = (nowMs() - t0) / iterations;
  await journal.close();
  rmSync(dir, { recursive: true, force: true });
  return { looseMs, journalMs };
}

// ---------------------------------------------------------------------------------------

export async function main(): Promise<void> {
  console.log(machineNote());
  const base = await fixture(NODES);
  const f = copyFixture(base, 'writes');
  const fHttp = copyFixture(base, 'writes-http');
  console.log(
    `  ${NODES} existing nodes, fsync on; ${ROUNDS} interleaved rounds of: ours ${Math.ceil(N_OURS / ROUNDS)} sequential tenant.write updates, ` +
      `HTTP ${Math.ceil(N_HTTP / ROUNDS)} POSTs with 1 and with 4 clients, git CLI ${Math.ceil(N_GIT / ROUNDS)} of ours' commits (durable, then git defaults); ` +
      `then git plumbing, fast-import of all ${N_OURS} commits, and the disk's fsync floor`,
  );

  const kernel = await startKernel({
    config: benchConfig(f.dataDir, { fsync: true }),
    plugins: allPlugins,
    log: createLogger(undefined, true),
  });
  const tenant = kernel.services.tenants.get(f.org)!;
  if (tenant.index.size < NODES) throw new Error(`tenant has ${tenant.index.size} nodes`);
  const write = oursWriter(tenant, f.person);
  // HTTP ids: disjoint from ours (ours uses k < N_OURS + WARMUP)
  const httpIds = Array.from({ length: 2 * N_HTTP + WARMUP }, (_, k) => benchId(nodeIndexFor(N_OURS + WARMUP + k)));
  const http = await HttpWriter.start(fHttp, httpIds);
  const wtDurable = makeWorkTree(base, 'writes-git');
  const wtDefault = makeWorkTree(base, 'writes-git-default');
  const gitDurable = gitPorcelain(wtDurable, true);
  const gitDefault = gitPorcelain(wtDefault, false);

  // warm-up, not timed: JIT, the sandbox child, ajv; git's page cache
  const warm: Change[] = [];
  for (let k = 0; k < WARMUP; k++) warm.push(await write(N_OURS + k));
  await http.run(httpIds.slice(0, WARMUP), 1);
  for (const c of warm.slice(0, 2)) {
    await gitDurable(c);
    await gitDefault(c);
  }
  // both servers have just opened the tenant: let their start-up indexing finish first
  await waitQuiet('writes');

  const ours = new Tally();
  const http1 = new Tally();
  const http4 = new Tally();
  const cli = new Tally();
  const cliDefault = new Tally();
  const changes: Change[] = [];
  const oursPer = Math.ceil(N_OURS / ROUNDS);
  const httpPer = Math.ceil(N_HTTP / ROUNDS);
  const gitPer = Math.ceil(N_GIT / ROUNDS);
  let httpNext = WARMUP;
  const takeHttp = (n: number): string[] => httpIds.slice(httpNext, (httpNext += n));
  try {
    for (let r = 0; r < ROUNDS; r++) {
      const block: Change[] = [];
      const from = r * oursPer;
      const to = Math.min(N_OURS, from + oursPer);
      await ours.time(to - from, async () => {
        for (let k = from; k < to; k++) block.push(await write(k));
        // timed too: the checkpoint that writes the block's commits out as a pack and moves
        // the ref (a lag timer would otherwise do it while the other contenders run)
        await tenant.store.settled();
      });
      changes.push(...block);
      const h1 = takeHttp(httpPer);
      await http1.time(h1.length, () => http.run(h1, 1));
      const h4 = takeHttp(httpPer);
      await http4.time(h4.length, () => http.run(h4, 4));
      const replay = block.slice(0, gitPer);
      await cli.time(replay.length, async () => {
        for (const c of replay) await gitDurable(c);
      });
      await cliDefault.time(replay.length, async () => {
        for (const c of replay) await gitDefault(c);
      });
      const i = r;
      console.log(
        `  round ${r + 1}: ours ${fmtRate(ours.perBlock[i]!)}/s, HTTP 1 client ${fmtRate(http1.perBlock[i]!)}/s, 4 clients ${fmtRate(http4.perBlock[i]!)}/s, ` +
          `git-cli ${fmtRate(cli.perBlock[i]!)}/s (ours ${fmtRatio(ours.perBlock[i]! / cli.perBlock[i]!)}), git defaults ${fmtRate(cliDefault.perBlock[i]!)}/s`,
      );
    }
  } finally {
    await kernel.close();
    await http.stop();
  }
  const count = Number(gitSync(['rev-list', '--count', 'HEAD'], { cwd: wtDurable }).trim());
  if (count < cli.count) throw new Error('git CLI commits missing');
  const oursCpu = ours.cpuMs / ours.count;
  console.log(
    `  ours tenant.write (sequential)      ${fmtRate(ours.rate)}/s  (${ours.count} commits in ${fmtMs(ours.ms)}; ${oursCpu.toFixed(2)} ms CPU and ${(ours.ms / ours.count - oursCpu).toFixed(2)} ms waiting per commit)`,
  );
  console.log(`  ours POST /v1/nodes, 1 client       ${fmtRate(http1.rate)}/s`);
  console.log(`  ours POST /v1/nodes, 4 clients      ${fmtRate(http4.rate)}/s`);
  console.log(`  git CLI add+commit, core.fsync=all  ${fmtRate(cli.rate)}/s  (${cli.count} commits in ${fmtMs(cli.ms)})`);
  console.log(`  git CLI add+commit, git defaults    ${fmtRate(cliDefault.rate)}/s  (loose objects, index and refs not fsynced)`);
  rmSync(dirname(wtDefault), { recursive: true, force: true });

  const plumbing = new Tally();
  const plumb = gitPlumbing(wtDurable);
  const plumbChanges = changes.slice(0, Math.min(100, changes.length)).map((c) => ({ ...c, content: `${c.content}\n` }));
  await plumbing.time(plumbChanges.length, async () => {
    for (const c of plumbChanges) await plumb(c);
  });
  console.log(`  git plumbing (5 commands), fsync    ${fmtRate(plumbing.rate)}/s`);
  rmSync(dirname(wtDurable), { recursive: true, force: true });

  const fiRuns: number[] = [];
  let fiMs = 0;
  for (let i = 0; i < 3; i++) {
    const fi = await fastImport(base, changes, 'writes-fi');
    fiRuns.push(fi.rate);
    fiMs = fi.ms;
  }
  const fiRate = median(fiRuns);
  console.log(
    `  git fast-import, streamed           ${fmtRate(fiRate)}/s  (${changes.length} commits in ~${fmtMs(fiMs)} incl. process start; median of 3)`,
  );

  const floor = await fsyncFloor();
  const floorMs = floor.looseMs;
  console.log(
    `  fsync floor of one durable loose-object commit on this disk: ${floorMs.toFixed(2)} ms (at most ${fmtRate(1000 / floorMs)} commits/s one at a time); ` +
      `one journal append + fdatasync: ${floor.journalMs.toFixed(2)} ms (${fmtRate(1000 / floor.journalMs)}/s)`,
  );

  const vsCli = ours.rate / cli.rate;
  const vsFi = ours.rate / fiRate;
  console.log(
    `writes: ours ${fmtRate(ours.rate)}/s, git-cli ${fmtRate(cli.rate)}/s (${fmtRatio(vsCli)}, target >= 5x: ${verdict(vsCli >= 5)}), ` +
      `fast-import ${fmtRate(fiRate)}/s (${fmtRatio(vsFi)}, target >= 0.25x: ${verdict(vsFi >= 0.25)})`,
  );
  console.log(
    `writes over HTTP: 1 client ${fmtRate(http1.rate)}/s (${fmtRatio(http1.rate / cli.rate)} git-cli, ${fmtRatio(http1.rate / fiRate)} fast-import), ` +
      `4 clients ${fmtRate(http4.rate)}/s (${fmtRatio(http4.rate / cli.rate)} git-cli, ${fmtRatio(http4.rate / fiRate)} fast-import); ` +
      `loose-object fsync floor ${floorMs.toFixed(2)} ms = ${fmtRatio(1000 / floorMs / fiRate)} fast-import, journal floor ${floor.journalMs.toFixed(2)} ms = ${fmtRatio(1000 / floor.journalMs / fiRate)}`,
  );
  recordResult('writes', {
    nodes: NODES,
    ours_per_s: ours.rate,
    ours_cpu_ms_per_commit: oursCpu,
    ours_per_round: ours.perBlock,
    http_1_client_per_s: http1.rate,
    http_4_clients_per_s: http4.rate,
    git_cli_fsync_per_s: cli.rate,
    git_cli_per_round: cli.perBlock,
    git_cli_default_per_s: cliDefault.rate,
    git_plumbing_fsync_per_s: plumbing.rate,
    fast_import_per_s: fiRate,
    fsync_floor_ms: floorMs,
    journal_fdatasync_ms: floor.journalMs,
    ratio_git_cli: vsCli,
    ratio_fast_import: vsFi,
    target_git_cli_met: vsCli >= 5,
    target_fast_import_met: vsFi >= 0.25,
  });
  rmSync(dirname(f.dataDir), { recursive: true, force: true });
  rmSync(dirname(fHttp.dataDir), { recursive: true, force: true });
}

runIfMain(import.meta.url, main);
