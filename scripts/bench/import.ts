/**
 * `npm run bench -- import`: 10,000 beads-like items (a third closed, a third with a parent,
 * dependencies, assignees among 20 people) written as beads JSONL and imported with the real
 * CLI (`workgraph import beads`) against a running server (`npm start`'s bundle, fsync on), as
 * a team would. Target (issue 14): under a minute. The same import run again (nothing changed)
 * is measured too, and the raw commit rate of this machine (`git fast-import`, one commit per
 * item) is the reference measured in the same run.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  fmtMs,
  fmtRatio,
  gitEnv,
  machineNote,
  nowMs,
  recordResult,
  ROOT,
  runIfMain,
  scratchDir,
  startServerProcess,
  verdict,
} from './lib.js';

const N = Number(process.env.BENCH_IMPORT_N ?? 10_000);

function synthesize(file: string): void {
  const lines: string[] = [];
  const day = 86_400_000;
  const t0 = Date.parse('2025-06-01T00:00:00Z');
  for (let i = 0; i < N; i++) {
    const created = t0 + i * 600_000;
    const closed = i % 3 === 0;
    const deps = [];
    if (i % 3 === 1 && i > 10) deps.push({ issue_id: `bd-${i}`, depends_on_id: `bd-${i - (i % 10) - 1}`, type: 'parent-child' });
    if (i % 5 === 2 && i > 5) deps.push({ issue_id: `bd-${i}`, depends_on_id: `bd-${i - 3}`, type: 'blocks' });
    lines.push(
      JSON.stringify({
        id: `bd-${i}`,
        title: `Item ${i}: make the ${i % 7 === 0 ? 'importer' : 'service'} better`,
        description: `Description of item ${i}.\n\n- [ ] first\n- [x] second\n`,
        status: closed ? 'closed' : i % 11 === 0 ? 'in_progress' : 'open',
        priority: i % 5,
        issue_type: i % 9 === 0 ? 'bug' : i % 13 === 0 ? 'epic' : 'task',
        assignee: i % 4 === 0 ? `team/agent-${i % 20}` : undefined,
        created_at: new Date(created).toISOString(),
        updated_at: new Date(created + day).toISOString(),
        ...(closed ? { closed_at: new Date(created + 2 * day).toISOString(), close_reason: 'Closed' } : {}),
        ...(deps.length ? { dependencies: deps } : {}),
      }),
    );
  }
  writeFileSync(file, lines.join('\n') + '\n');
}

function runImport(file: string, url: string, token: string): Promise<{ ms: number; report: Record<string, number> }> {
  const t0 = nowMs();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'scripts', 'workgraph.mjs'), 'import', 'beads', file, '--json'], {
      env: { ...process.env, SVC_SERVER: url, SVC_TOKEN: token },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.on('close', (code) =>
      code === 0 ? resolve({ ms: nowMs() - t0, report: JSON.parse(out) }) : reject(new Error(`import exited ${code}`)),
    );
  });
}

/** One commit per item through `git fast-import`: this machine's raw commit rate, for the ratio. */
function fastImportMs(dir: string): number {
  spawnSync('git', ['init', '--quiet', '--bare', join(dir, 'ref.git')], { env: gitEnv() });
  let stream = '';
  for (let i = 0; i < N; i++) {
    const content = `---\nid: task-${i}\nsummary: item ${i}\n---\nbody ${i}\n`;
    stream += `commit refs/heads/main\ncommitter Bench <b@x> ${1_700_000_000 + i} +0000\ndata 3\nimp\n${i ? '' : ''}M 100644 inline nodes/${(i % 256).toString(16).padStart(2, '0')}/task-${i}.md\ndata ${Buffer.byteLength(content)}\n${content}\n`;
  }
  const t0 = nowMs();
  const res = spawnSync('git', ['--git-dir', join(dir, 'ref.git'), 'fast-import', '--quiet'], {
    input: stream,
    env: gitEnv(),
    maxBuffer: 1 << 30,
  });
  if (res.status !== 0) throw new Error(`fast-import failed: ${res.stderr}`);
  return nowMs() - t0;
}

export async function main(): Promise<void> {
  console.log(machineNote());
  const dir = scratchDir('import');
  const file = join(dir, 'issues.jsonl');
  synthesize(file);
  const dataDir = join(dir, 'data');
  const server = await startServerProcess(dataDir);
  try {
    const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    const first = await runImport(file, server.url, token);
    const again = await runImport(file, server.url, token);
    const refMs = fastImportMs(dir);
    const commits = first.report.created + Math.round(N / 3); // closed items take a second, dated commit
    const met = first.ms < 60_000;
    console.log(
      `import: ${N} beads items in ${fmtMs(first.ms)} (${Math.round((N / first.ms) * 1000)} items/s, ${first.report.created} created, ${first.report.refused} refused, ${first.report.people_created} people), target < 60 s: ${verdict(met)}`,
    );
    console.log(`import again (unchanged): ${fmtMs(again.ms)} (${again.report.unchanged} unchanged)`);
    console.log(
      `import reference: git fast-import of ${N} one-file commits ${fmtMs(refMs)}; import commits/s vs fast-import: ${fmtRatio(commits / first.ms / (N / refMs))}`,
    );
    recordResult('import', { n: N, first_ms: first.ms, again_ms: again.ms, fast_import_ms: refMs, report: first.report, met });
  } finally {
    await server.stop();
  }
}

runIfMain(import.meta.url, main);
