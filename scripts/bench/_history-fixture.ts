/**
 * Fixtures of the history benchmark (history.ts), cached under `.bench/fixtures/`:
 *
 *   history-10000-v<version>   the shared 10,000-node fixture (lib.ts `fixture`) with commits
 *                              appended until `main` holds 10,000: 999 edit task-bench-000000
 *                              (1,000 commits in all), the others one task each
 *   history-<n>-v<version>     that one with commits appended until `main` holds n: each edits
 *                              one of ten `issue` nodes in nodes/issue/, cycling their statuses
 *                              (a reopen now and then), so the 10,000 task files are untouched
 *                              and every commit reuses the nodes/task tree (a commit to a flat
 *                              directory of 10,000 files rehashes it: about 100 commits/s here)
 *
 * Every commit carries the server's `Svc-*` trailers; `git fast-import` writes them as one pack,
 * as a repository looks after `git gc`. Built in a `.building-<pid>` directory and renamed into
 * place, like lib.ts's fixtures.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createLogger } from '../../kernel/config.js';
import { serializeNode } from '../../kernel/codec.js';
import { nodePath } from '../../kernel/git/objects.js';
import { startKernel } from '../../kernel/server.js';
import { corePlugin } from '../../plugins/core/index.js';
import { BENCH_DIR, benchConfig, benchId, benchMarkdown, fixture, fmtMs, gitEnv, gitSync, nowMs, type Fixture } from './lib.js';

/** Bump when the fixtures' layout changes: cached ones are rebuilt. */
const VERSION = 2;
export const BASE_COMMITS = 10_000;
export const HOT_COMMITS = 1_000;
export const NODES = 10_000;
export const ISSUES = 10;
/** the statuses an issue cycles through; every 25th edit of one resolves it and the next reopens it */
const ISSUE_CYCLE = ['open', 'in-progress', 'blocked', 'in-progress'];

export function issueId(k: number): string {
  return `issue-bench-${String(k).padStart(2, '0')}`;
}

function issueMarkdown(k: number, rev: number, person: string): string {
  const status = rev % 25 === 24 ? 'resolved' : ISSUE_CYCLE[rev % ISSUE_CYCLE.length]!;
  return serializeNode(
    {
      id: issueId(k),
      type: 'issue',
      status,
      title: `Bench issue ${k}`,
      summary: `Importer stalls on large exports (issue ${k}, revision ${rev})`,
      author: person,
      authored_via: 'rest',
      created: '2025-01-02T03:04:05.000Z',
    },
    `## Notes\n\nRevision ${rev} of issue ${k}.\n`,
  );
}

function commitHeader(ts: number, message: string, from: string | null): string {
  const bytes = Buffer.byteLength(message, 'utf8');
  return (
    `commit refs/heads/main\nauthor Bench Author <bench@localhost> ${ts} +0000\ncommitter Bench Author <bench@localhost> ${ts} +0000\n` +
    `data ${bytes}\n${message}\n` +
    (from ? `from ${from}\n` : '')
  );
}

const trailers = (op: string, person: string) => `\n\nSvc-Op: ${op}\nSvc-Via: rest\nSvc-Person: ${person}\n`;

/** Streams `count` commits made by `commitText(k)` into one `git fast-import`. */
async function fastImport(gitdir: string, count: number, commitText: (k: number) => string, log: (line: string) => void): Promise<void> {
  const child = spawn('git', ['--git-dir', gitdir, 'fast-import', '--quiet'], { env: gitEnv(), stdio: ['pipe', 'ignore', 'pipe'] });
  const err: Buffer[] = [];
  child.stderr.on('data', (c: Buffer) => err.push(c));
  const done = new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git fast-import failed (${code}): ${Buffer.concat(err)}`))));
  });
  const t0 = nowMs();
  for (let k = 0; k < count; k++) {
    if (!child.stdin.write(commitText(k))) await new Promise((r) => child.stdin.once('drain', r));
    if (k > 0 && k % 100_000 === 0) log(`  ${k.toLocaleString('en-US')}/${count.toLocaleString('en-US')} commits (${fmtMs(nowMs() - t0)})`);
  }
  child.stdin.end();
  await done;
}

function commitCount(gitdir: string): number {
  return Number(gitSync(['--git-dir', gitdir, 'rev-list', '--count', 'main']).trim());
}

/** A fixture directory made by `build` once and reused; the fixture's files are the base's plus what `build` did. */
async function cached(name: string, base: Fixture, build: (f: Fixture) => Promise<void>, log: (line: string) => void): Promise<Fixture> {
  const dir = join(BENCH_DIR, 'fixtures', `${name}-v${VERSION}`);
  const fixtureOf = (dataDir: string): Fixture => ({
    ...base,
    dataDir,
    gitdir: join(dataDir, 'tenants', base.org, 'graph.git'),
    snapshot: join(dataDir, 'tenants', base.org, 'state', 'index-snapshot.v8'),
  });
  if (existsSync(join(dir, 'bench.json'))) return fixtureOf(dir);
  const building = `${dir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(dirname(building), { recursive: true });
  cpSync(base.dataDir, building, { recursive: true });
  // derived indexes of the base are not the new history's
  for (const sub of ['commit-index', 'analytics']) rmSync(join(building, 'tenants', base.org, sub), { recursive: true, force: true });
  const t0 = nowMs();
  log(`building fixture ${name} ...`);
  await build(fixtureOf(building));
  await warm(fixtureOf(building));
  writeFileSync(join(building, 'bench.json'), readFileSync(join(base.dataDir, 'bench.json')));
  rmSync(dir, { recursive: true, force: true });
  renameSync(building, dir);
  log(`fixture ${name} built in ${fmtMs(nowMs() - t0)}`);
  return fixtureOf(dir);
}

/**
 * Makes the fixture open as a server that wrote these commits itself would: the event log
 * marked as covering the new head (the server derives a commit's events as it commits; deriving
 * them at open from a history fast-import wrote is a one-off catch-up, about 270 commits/s here,
 * that is not what this benchmark measures), then one start of the kernel with only `core`,
 * which writes the node index snapshot of the new head. The history and analytics indexes are
 * left to the measured servers.
 */
async function warm(f: Fixture): Promise<void> {
  const head = gitSync(['--git-dir', f.gitdir, 'rev-parse', 'main']).trim();
  const events = join(dirname(f.gitdir), 'events');
  const segments = readdirSync(events)
    .filter((n) => /^\d{12}\.jsonl$/.test(n))
    .sort();
  if (segments.length === 0) throw new Error(`no event log in ${events}`);
  appendFileSync(join(events, segments[segments.length - 1]!), JSON.stringify({ covered: head }) + '\n');
  const kernel = await startKernel({
    config: benchConfig(f.dataDir, { fsync: false }),
    plugins: [corePlugin],
    log: createLogger(undefined, true),
  });
  const indexed = kernel.services.tenants.get(f.org)!.index.head;
  await kernel.close();
  if (indexed !== head) throw new Error(`the warmed fixture's index is at ${indexed}, not ${head}`);
}

/** The 10,000-node fixture with 10,000 commits, 1,000 of them on task-bench-000000. */
export async function baseHistory(log: (line: string) => void): Promise<Fixture> {
  const nodes = await fixture(NODES, log);
  return cached(
    `history-${BASE_COMMITS}`,
    nodes,
    async (f) => {
      const toAdd = BASE_COMMITS - commitCount(f.gitdir);
      const head = gitSync(['--git-dir', f.gitdir, 'rev-parse', 'main']).trim();
      const hotEdits = HOT_COMMITS - 1;
      // the hot node's edits spread evenly through the appended history
      const every = Math.floor(toAdd / hotEdits);
      const revs = new Map<number, number>();
      let hotDone = 0;
      let other = 1;
      await fastImport(
        f.gitdir,
        toAdd,
        (k) => {
          const hot = hotDone < hotEdits && k % every === 0;
          const i = hot ? 0 : other;
          if (hot) hotDone++;
          else other = (other % (NODES - 1)) + 1;
          const rev = (revs.get(i) ?? 0) + 1;
          revs.set(i, rev);
          const content = benchMarkdown(i, rev, f.person);
          return (
            commitHeader(1_735_787_045 + 60 + k, `bench_edit: ${benchId(i)}${trailers('bench_edit', f.person)}`, k === 0 ? head : null) +
            `M 100644 inline ${nodePath('task', benchId(i))}\ndata ${Buffer.byteLength(content, 'utf8')}\n${content}\n\n`
          );
        },
        log,
      );
      if (hotDone !== hotEdits) throw new Error(`planned ${hotDone} hot edits, wanted ${hotEdits}`);
      const count = commitCount(f.gitdir);
      if (count !== BASE_COMMITS) throw new Error(`main has ${count} commits, expected ${BASE_COMMITS}`);
    },
    log,
  );
}

/** The base history with commits on ten issue nodes appended until `main` holds `total`. */
export async function longHistory(total: number, log: (line: string) => void): Promise<Fixture> {
  const base = await baseHistory(log);
  if (total <= BASE_COMMITS) return base;
  return cached(
    `history-${total}`,
    base,
    async (f) => {
      const head = gitSync(['--git-dir', f.gitdir, 'rev-parse', 'main']).trim();
      const toAdd = total - BASE_COMMITS;
      await fastImport(
        f.gitdir,
        toAdd,
        (k) => {
          const issue = k % ISSUES;
          const rev = Math.floor(k / ISSUES);
          const content = issueMarkdown(issue, rev, f.person);
          const op = rev === 0 ? 'put_node' : 'set_status';
          return (
            commitHeader(
              1_735_787_045 + 60 + BASE_COMMITS + k,
              `${op}: ${issueId(issue)}${trailers(op, f.person)}`,
              k === 0 ? head : null,
            ) + `M 100644 inline ${nodePath('issue', issueId(issue))}\ndata ${Buffer.byteLength(content, 'utf8')}\n${content}\n\n`
          );
        },
        log,
      );
      const count = commitCount(f.gitdir);
      if (count !== total) throw new Error(`main has ${count} commits, expected ${total}`);
    },
    log,
  );
}
