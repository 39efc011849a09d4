/**
 * `npm run bench [-- <name> ...]`: runs every benchmark in scripts/bench/ (each
 * `<name>.ts` except run.ts, lib.ts and files starting with `_`), or only the named ones,
 * one after another, each in its own process:
 *   node --no-node-snapshot --import tsx scripts/bench/<name>.ts
 * Output streams through; a summary of the headline lines (those starting with `<name>:` or
 * `<name> `) and exit codes is printed at the end. Exits non-zero if any benchmark failed to
 * run (a missed target is reported, not a failure). See lib.ts for the conventions.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fmtMs, machineNote, NODE_ARGS, nowMs, ROOT, runIfMain } from './lib.js';

const BENCH_DIR_SRC = join(ROOT, 'scripts', 'bench');
const NOT_BENCHMARKS = new Set(['run', 'lib']);
/** run only when named (`npm run bench -- soak`): they take as long as they are told, an hour by default */
const ON_REQUEST = new Set(['soak']);

export function listBenchmarks(): string[] {
  return readdirSync(BENCH_DIR_SRC)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.startsWith('_'))
    .map((f) => basename(f, '.ts'))
    .filter((n) => !NOT_BENCHMARKS.has(n))
    .sort();
}

function runOne(name: string): Promise<{ code: number; ms: number; headlines: string[] }> {
  const t0 = nowMs();
  const headlines: string[] = [];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...NODE_ARGS, join(BENCH_DIR_SRC, `${name}.ts`)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let partial = '';
    child.stdout!.on('data', (c: Buffer) => {
      process.stdout.write(c);
      partial += c.toString('utf8');
      const lines = partial.split('\n');
      partial = lines.pop()!;
      for (const l of lines) if (l.startsWith(`${name}:`) || l.startsWith(`${name} `)) headlines.push(l);
    });
    child.on('close', (code, signal) => {
      if (partial && (partial.startsWith(`${name}:`) || partial.startsWith(`${name} `))) headlines.push(partial);
      resolve({ code: code ?? (signal ? 128 : 1), ms: nowMs() - t0, headlines });
    });
  });
}

export async function main(): Promise<void> {
  const all = listBenchmarks();
  const wanted = process.argv.slice(2).map((a) => basename(a, '.ts'));
  const unknown = wanted.filter((w) => !all.includes(w));
  if (unknown.length) {
    process.stderr.write(`unknown benchmark(s): ${unknown.join(', ')}; available: ${all.join(', ')}\n`);
    process.exit(2);
  }
  const names = wanted.length ? wanted : all.filter((n) => !ON_REQUEST.has(n));
  console.log(`running ${names.join(', ')}`);
  console.log(machineNote());
  const summary: string[] = [];
  let failed = 0;
  for (const name of names) {
    console.log(`\n=== ${name} ===`);
    const r = await runOne(name);
    if (r.code !== 0) failed++;
    summary.push(`${name.padEnd(10)} ${r.code === 0 ? 'ok    ' : `FAILED (exit ${r.code})`} ${fmtMs(r.ms)}`);
    for (const h of r.headlines) summary.push(`  ${h}`);
  }
  console.log('\n=== summary ===');
  for (const s of summary) console.log(s);
  if (failed) process.exit(1);
}

runIfMain(import.meta.url, main);
