/**
 * Shared helpers for the benchmarks in scripts/bench/.
 *
 * Conventions (so a new benchmark plugs in by just existing):
 *   - every `scripts/bench/<name>.ts` except `run.ts`, `lib.ts` and files starting with `_`
 *     is a benchmark; `npm run bench` (run.ts) runs each one as its own child process
 *     (`node --no-node-snapshot --import tsx scripts/bench/<name>.ts`), in name order, and
 *     `npm run bench -- <name> [<name>...]` runs only those;
 *   - a benchmark is runnable on its own, prints human-readable lines (the headline line
 *     starts with `<name>:`), and exits non-zero only when it could not measure (a missed
 *     target is a result, not a failure);
 *   - it may call `recordResult(name, data)` to leave a JSON summary under
 *     `.bench/results/<name>.json`, which run.ts lists at the end;
 *   - fixtures and scratch data live under `.bench/` (gitignored), built once and reused.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { configFromEnv, createLogger, type ServerConfig } from '../../kernel/config.js';
import { serializeNode, type Frontmatter } from '../../kernel/codec.js';
import { nodePath } from '../../kernel/git/objects.js';
import { openGitStore } from '../../kernel/git/open.js';
import { startKernel } from '../../kernel/server.js';
import { allPlugins } from '../plugins.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BENCH_DIR = join(ROOT, '.bench');
export const NODE_ARGS = ['--no-node-snapshot', '--import', 'tsx'];
/** Bump when the fixture layout or node shape changes: cached fixtures are rebuilt. */
const FIXTURE_VERSION = 1;

/** True when the module at `importMetaUrl` is the process entry point. */
export function isMain(importMetaUrl: string): boolean {
  const entry = process.argv[1];
  return entry !== undefined && pathToFileURL(resolve(entry)).href === importMetaUrl;
}

/** Runs `main` when the file is executed directly; prints the error and exits 1 on failure. */
export function runIfMain(importMetaUrl: string, main: () => Promise<void>): void {
  if (!isMain(importMetaUrl)) return;
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}

// ---------------------------------------------------------------------------------------
// numbers and printing

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return NaN;
  return n % 2 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
}

export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** 612 -> "612", 21.3 -> "21.3", 1850.4 -> "1,850" */
export function fmtRate(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  if (x >= 100) return Math.round(x).toLocaleString('en-US');
  if (x >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

export function fmtRatio(x: number): string {
  return x >= 10 ? `${x.toFixed(1)}x` : `${x.toFixed(2)}x`;
}

export function fmtMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`;
}

export function verdict(met: boolean): string {
  return met ? 'met' : 'NOT met';
}

/** One line describing the machine and its load, printed by every benchmark. */
export function machineNote(): string {
  const c = cpus();
  const git = spawnSync('git', ['--version'], { encoding: 'utf8' })
    .stdout.trim()
    .replace(/^git version /, '');
  const load = loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  return `machine: ${c.length} x ${c[0]?.model.trim() ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(1)} GB, node ${process.version}, git ${git}, load avg ${load}, server allocator ${serverAllocator()}`;
}

/** What scripts/with-allocator.sh preloads for the server processes here: jemalloc's path, or glibc's malloc. */
export function serverAllocator(): string {
  const preload = spawnSync('sh', [join(ROOT, 'scripts', 'with-allocator.sh'), 'sh', '-c', 'printf %s "$LD_PRELOAD"'], {
    encoding: 'utf8',
  }).stdout;
  return preload ? `jemalloc (${preload})` : 'glibc malloc';
}

export function recordResult(name: string, data: Record<string, unknown>): void {
  const dir = join(BENCH_DIR, 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, `${name}.json`),
    JSON.stringify({ name, at: new Date().toISOString(), machine: machineNote(), ...data }, null, 2) + '\n',
  );
}

export function scratchDir(label: string): string {
  const dir = join(BENCH_DIR, 'tmp', `${label}-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

// ---------------------------------------------------------------------------------------
// git CLI

/** An environment for spawning git that ignores the caller's GIT_* and system config. */
export function gitEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return { ...env, GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C', ...extra };
}

export function gitSync(args: string[], opts: { cwd?: string; input?: string | Buffer; env?: NodeJS.ProcessEnv } = {}): string {
  const r = spawnSync('git', args, { cwd: opts.cwd, input: opts.input, env: opts.env ?? gitEnv(), encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

/** Runs git asynchronously (so the event loop and timers stay honest); rejects on failure. */
export function gitAsync(args: string[], opts: { cwd?: string; input?: string | Buffer; env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn('git', args, {
      cwd: opts.cwd,
      env: opts.env ?? gitEnv(),
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout!.on('data', (c: Buffer) => out.push(c));
    child.stderr!.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolvePromise(Buffer.concat(out).toString('utf8'));
      else reject(new Error(`git ${args.join(' ')} failed (${code}): ${Buffer.concat(err).toString('utf8')}`));
    });
    if (child.stdin) {
      child.stdin.on('error', () => undefined); // a command that exits without reading its input
      child.stdin.end(opts.input);
    }
  });
}

// ---------------------------------------------------------------------------------------
// node fixtures

export const BENCH_AUTHOR = { name: 'Bench Author', email: 'bench@localhost' };

export function benchId(i: number): string {
  return `task-bench-${String(i).padStart(6, '0')}`;
}

const LOREM =
  'The importer drops rows whose timestamps fall on a DST boundary; reproduce with the March export, ' +
  'then fix the parser so local times are resolved against the tenant zone. Add a regression test and ' +
  'note the change in the release log.';

/** A valid task node of about 600 bytes once serialized; `rev` varies the content. */
export function benchNode(i: number, rev = 0, person = 'person-bench'): { frontmatter: Frontmatter; body: string } {
  const id = benchId(i);
  const edges: Array<Record<string, string>> = [];
  if (i > 0 && i % 3 === 0) edges.push({ type: 'relates-to', to: benchId(i - 1) });
  if (i > 10 && i % 10 === 0) edges.push({ type: 'blocks', to: benchId(i - 7) });
  const frontmatter: Frontmatter = {
    id,
    type: 'task',
    status: 'open',
    title: `Bench task ${i}: fix the importer for case ${i % 97}`,
    summary: `Importer drops rows on DST boundaries (case ${i}, revision ${rev})`,
    author: person,
    authored_via: 'rest',
    created: '2025-01-02T03:04:05.000Z',
    updated: `2025-01-02T03:04:${String(5 + (rev % 50)).padStart(2, '0')}.000Z`,
  };
  if (edges.length) frontmatter.edges = edges;
  const body = `## Notes\n\n${LOREM}\n\nRevision ${rev} of node ${i}.\n`;
  return { frontmatter, body };
}

export function benchMarkdown(i: number, rev = 0, person = 'person-bench'): string {
  const n = benchNode(i, rev, person);
  return serializeNode(n.frontmatter, n.body);
}

// ---------------------------------------------------------------------------------------
// data directories with N nodes (cached under .bench/)

export interface Fixture {
  /** a complete SVC_DATA_DIR (tenant `local`) */
  dataDir: string;
  nodes: number;
  org: string;
  /** the first-start admin PAT */
  token: string;
  person: string;
  gitdir: string;
  snapshot: string;
}

export function benchConfig(dataDir: string, over: Partial<ServerConfig> = {}): ServerConfig {
  return { ...configFromEnv({}), host: '127.0.0.1', port: 0, dataDir, fsync: true, tenantPollMs: 500, ...over };
}

/**
 * Enables every plugin of the composition root (`allPlugins`) in the fixture's tenant.json, as
 * `tenant add` would for a new tenant today, so a fixture built before a plugin existed still
 * measures the server as it is now.
 */
function enableAllPlugins(tenantDir: string): void {
  const file = join(tenantDir, 'tenant.json');
  const config = JSON.parse(readFileSync(file, 'utf8')) as { plugins?: string[] };
  const names = allPlugins.map((p) => p.name);
  const current = config.plugins ?? [];
  if (names.every((n) => current.includes(n))) return;
  config.plugins = [...new Set([...names, ...current])];
  writeFileSync(file, JSON.stringify(config, null, 2) + '\n');
}

function fixtureFromDir(dataDir: string): Fixture {
  const meta = JSON.parse(readFileSync(join(dataDir, 'bench.json'), 'utf8')) as { nodes: number; org: string; person: string };
  const tenantDir = join(dataDir, 'tenants', meta.org);
  enableAllPlugins(tenantDir);
  return {
    dataDir,
    nodes: meta.nodes,
    org: meta.org,
    person: meta.person,
    token: readFileSync(join(dataDir, 'admin-token'), 'utf8').trim(),
    gitdir: join(tenantDir, 'graph.git'),
    snapshot: join(tenantDir, 'state', 'index-snapshot.v8'),
  };
}

/**
 * A data directory whose tenant `local` holds `n` bench nodes (plus the first-start root and
 * admin person), built once into `.bench/fixtures/nodes-<n>-v<version>` and reused. Built
 * with a first start (bootstrap through the real kernel), then ONE commit of all `n` files
 * through the git store (loose objects, exactly as the server writes them), then one kernel
 * start that does the cold load and writes the index snapshot.
 */
export async function fixture(n: number, log: (line: string) => void = (l) => process.stderr.write(l + '\n')): Promise<Fixture> {
  const dir = join(BENCH_DIR, 'fixtures', `nodes-${n}-v${FIXTURE_VERSION}`);
  if (existsSync(join(dir, 'bench.json'))) return fixtureFromDir(dir);
  const building = `${dir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  const t0 = nowMs();
  log(`building fixture with ${n} nodes in ${building} ...`);
  const quiet = createLogger(undefined, true);
  const k1 = await startKernel({ config: benchConfig(building, { fsync: false }), plugins: allPlugins, log: quiet });
  const boot = k1.bootstrap!;
  await k1.close();
  const tenantDir = join(building, 'tenants', boot.org);
  rmSync(join(tenantDir, 'state', 'index-snapshot.v8'), { force: true });
  if (n > 0) {
    const store = await openGitStore(join(tenantDir, 'graph.git'), { fsync: false });
    const batch = 20000;
    for (let start = 0; start < n; start += batch) {
      const changes = [];
      for (let i = start; i < Math.min(n, start + batch); i++)
        changes.push({ path: nodePath('task', benchId(i)), content: benchMarkdown(i, 0, boot.person) });
      await store.commit({
        changes,
        author: { ...BENCH_AUTHOR, timestamp: 1735787045 },
        message: `bench: load nodes ${start}..${start + changes.length - 1}\n\nSvc-Op: bench_load\nSvc-Via: rest\nSvc-Person: ${boot.person}\n`,
        expectedParent: store.head(),
      });
      log(`  committed ${Math.min(n, start + batch)}/${n} (${fmtMs(nowMs() - t0)})`);
    }
    await store.close();
  }
  // one start: cold load + snapshot write, so the fixture starts warm
  const k2 = await startKernel({ config: benchConfig(building, { fsync: false }), plugins: allPlugins, log: quiet });
  const size = k2.services.tenants.get(boot.org)!.index.size;
  await k2.close();
  if (size !== n + 2) throw new Error(`fixture has ${size} nodes, expected ${n + 2}`);
  spawnSync('sync');
  writeFileSync(join(building, 'bench.json'), JSON.stringify({ nodes: n, org: boot.org, person: boot.person }) + '\n');
  // another benchmark process may have finished the same fixture meanwhile: keep theirs
  if (existsSync(join(dir, 'bench.json'))) {
    rmSync(building, { recursive: true, force: true });
    return fixtureFromDir(dir);
  }
  rmSync(dir, { recursive: true, force: true }); // a leftover without bench.json is a broken build
  mkdirSync(dirname(dir), { recursive: true });
  try {
    renameSync(building, dir);
  } catch (err) {
    rmSync(building, { recursive: true, force: true });
    if (existsSync(join(dir, 'bench.json'))) return fixtureFromDir(dir);
    throw err;
  }
  log(`fixture with ${n} nodes built in ${fmtMs(nowMs() - t0)}`);
  return fixtureFromDir(dir);
}

/** A private, writable copy of a fixture (benchmarks that write must not touch the cache). */
export function copyFixture(f: Fixture, label: string): Fixture {
  const dest = join(scratchDir(label), 'data');
  cpSync(f.dataDir, dest, { recursive: true });
  return fixtureFromDir(dest);
}

// ---------------------------------------------------------------------------------------
// server child processes

export interface ServerChild {
  child: ChildProcess;
  url: string;
  /** ms from spawn() to the `listening on` line */
  readyMs: number;
  /** CPU time (user + system) the server process had used by then; NaN where /proc is missing */
  cpuMs: number;
  /** SIGTERM (a clean close, which saves the index snapshot); `hard` sends SIGKILL instead */
  stop(hard?: boolean): Promise<void>;
}

let bundled = false;
/** `npm run build` once per benchmark process: the dist/ bundle `npm start` runs. */
function ensureBundle(): void {
  if (bundled) return;
  const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`npm run build failed (${r.status})`);
  bundled = true;
}

/**
 * A reference server: the bench file `moduleUrl` run again with `args` (its own `--bare...` mode),
 * one process, ready once it prints `listening on URL`.
 */
export function startReference(moduleUrl: string, args: string[], what: string): Promise<ServerChild> {
  const t0 = nowMs();
  const child = spawn(process.execPath, [...NODE_ARGS, fileURLToPath(moduleUrl), ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve({ child, url: m[1]!, readyMs: nowMs() - t0, cpuMs: NaN, stop: () => stopChild(child) });
    });
    child.on('exit', (code) => reject(new Error(`${what} exited (${code})`)));
  });
}
/**
 * Starts `workgraph serve` exactly as `npm start` does (`node dist/workgraph.mjs serve`, the
 * bundle built first, not timed) on `dataDir` with PORT=0, and
 * resolves when it prints its `listening on` line.
 */
export function startServerProcess(dataDir: string, env: Record<string, string> = {}, timeoutMs = 120_000): Promise<ServerChild> {
  ensureBundle();
  const t0 = nowMs();
  // BENCH_SERVER_NODE_ARGS adds node flags to the server child (e.g. --cpu-prof for profiling)
  const extra = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  // through the allocator wrapper, as `npm start` runs it (jemalloc when the system has it)
  const child = spawn(
    'sh',
    [join(ROOT, 'scripts', 'with-allocator.sh'), process.execPath, ...extra, join(ROOT, 'dist', 'workgraph.mjs'), 'serve'],
    {
      cwd: ROOT,
      env: { ...process.env, HOST: '127.0.0.1', PORT: '0', SVC_DATA_DIR: dataDir, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  return new Promise((resolvePromise, reject) => {
    let out = '';
    let errText = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start within ${timeoutMs} ms: ${errText.slice(-2000)}`));
    }, timeoutMs);
    child.stderr!.on('data', (c: Buffer) => {
      errText += c.toString('utf8');
      if (errText.length > 20000) errText = errText.slice(-10000);
    });
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const m = /listening on (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout!.removeAllListeners('data');
        // BENCH_SERVER_LOG: the server's output after its listening line goes to that file (a
        // `--trace-gc` of BENCH_SERVER_NODE_ARGS, say); otherwise it is read and dropped
        const logTo = process.env.BENCH_SERVER_LOG;
        if (logTo) {
          const file = createWriteStream(logTo, { flags: 'a' });
          child.stdout!.pipe(file);
          child.stderr!.pipe(file);
        } else child.stdout!.resume();
        const readyMs = nowMs() - t0;
        resolvePromise({
          child,
          url: m[1]!,
          readyMs,
          cpuMs: processCpuMs(child.pid),
          stop: (hard) => stopChild(child, hard ? 0 : undefined),
        });
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code ?? signal}) before listening: ${errText.slice(-2000)}`));
    });
  });
}

/** user + system CPU ms of a live process, from /proc (clock ticks assumed 100/s); NaN if unavailable. */
export function processCpuMs(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

/** SIGTERM, then SIGKILL after `graceMs` (0: SIGKILL at once); resolves when the child is gone. */
export function stopChild(child: ChildProcess, graceMs = 60_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolvePromise) => {
    const timer = graceMs > 0 ? setTimeout(() => child.kill('SIGKILL'), graceMs) : undefined;
    child.once('exit', () => {
      clearTimeout(timer);
      resolvePromise();
    });
    child.kill(graceMs > 0 ? 'SIGTERM' : 'SIGKILL');
  });
}

export function sha1(text: string): string {
  return createHash('sha1').update(text).digest('hex');
}

/** Machine-wide busy fraction of all CPUs over `ms` (from /proc/stat; 0 where unavailable). */
async function busyFraction(ms: number): Promise<number> {
  const read = (): { idle: number; total: number } | null => {
    try {
      const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
      const v = line.trim().split(/\s+/).slice(1).map(Number);
      return { idle: (v[3] ?? 0) + (v[4] ?? 0), total: v.reduce((a, b) => a + b, 0) };
    } catch {
      return null;
    }
  };
  const a = read();
  await new Promise((r) => setTimeout(r, ms));
  const b = read();
  if (!a || !b || b.total === a.total) return 0;
  return 1 - (b.idle - a.idle) / (b.total - a.total);
}

/**
 * Wait until the machine is quiet: a server that just opened a tenant finishes its
 * background start-up work (history and analytics indexes read the whole git log) before a
 * steady-state rate is timed. Quiet means `windows` quarter-seconds in a row below `busyBelow`.
 * Gives up after `maxMs` and says so.
 */
export async function waitQuiet(label: string, maxMs = 20_000, busyBelow = 0.25, windows = 3): Promise<void> {
  const t0 = nowMs();
  let quiet = 0;
  while (nowMs() - t0 < maxMs) {
    if ((await busyFraction(250)) < busyBelow) {
      if (++quiet >= windows) return;
    } else quiet = 0;
  }
  console.log(`  (${label}: the machine did not go quiet within ${fmtMs(maxMs)}; timing anyway)`);
}

/**
 * The RSS a process settles at (KB): sampled every 500 ms until the last `windowMs` of samples
 * are within 1% of each other, or `maxMs` passed (then the last sample). A server that has just
 * gone quiet still changes: its idle collection (kernel/idle-gc.ts) comes within a few seconds.
 */
export async function settledRssKb(pid: number | undefined, windowMs = 6000, maxMs = 30_000): Promise<number> {
  const samples: number[] = [];
  const need = Math.ceil(windowMs / 500) + 1;
  const t0 = nowMs();
  for (;;) {
    samples.push(rssKb(pid));
    const last = samples.slice(-need);
    if (last.length === need && Math.max(...last) <= Math.min(...last) * 1.01) return last[last.length - 1]!;
    if (nowMs() - t0 >= maxMs) return samples[samples.length - 1]!;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Resident set size of a live process in KB (VmRSS), NaN where /proc is missing. */
export function rssKb(pid: number | undefined): number {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}
