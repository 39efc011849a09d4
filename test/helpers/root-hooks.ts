/**
 * Root hooks of every mocha run (.mocharc.json `require`). Mocha runs root `beforeAll`/`afterAll`
 * once per run when serial and once per test file in each worker with `--parallel` (`npm test`).
 *
 * - After the file(s): no credential the harness saw reached a log line of a harness server in
 *   this process (harness.ts runLog/runSecrets).
 * - With WG_TEST_TIMINGS=<file>: one JSON line per test file appended to <file>.lines: its wall
 *   seconds, the CPU seconds (user+sys) of this process and of the child processes it reaped,
 *   and the load average at its end. (For per-file figures of a serial run, use the reporter
 *   test/helpers/timing-reporter.cjs.)
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { relative } from 'node:path';
import type { Context, Suite } from 'mocha';
import { assertNoCredentialLogged } from './harness.js';

const TICK = 100; // USER_HZ on Linux

/** CPU seconds of this process and of its reaped children (stat(5) fields 14-17). */
function cpuSeconds(): { self: number; children: number } {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const f = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    return { self: ((f[11] ?? 0) + (f[12] ?? 0)) / TICK, children: ((f[13] ?? 0) + (f[14] ?? 0)) / TICK };
  } catch {
    const u = process.cpuUsage();
    return { self: (u.user + u.system) / 1e6, children: 0 };
  }
}

function filesOf(root: Suite | undefined): string {
  const files = new Set((root?.suites ?? []).map((s) => s.file).filter((f): f is string => typeof f === 'string'));
  return files.size === 1 ? relative(process.cwd(), [...files][0] ?? '') : `(${files.size} files)`;
}

let started: { t: bigint; cpu: { self: number; children: number } } | null = null;

export const mochaHooks = {
  beforeAll(): void {
    started = { t: process.hrtime.bigint(), cpu: cpuSeconds() };
  },
  afterAll(this: Context): void {
    const out = process.env.WG_TEST_TIMINGS;
    if (out && started) {
      const cpu = cpuSeconds();
      const row = {
        file: filesOf(this.test?.parent),
        wall: Number(process.hrtime.bigint() - started.t) / 1e9,
        cpu: cpu.self - started.cpu.self,
        childCpu: cpu.children - started.cpu.children,
        load: loadavg()[0],
        pid: process.pid,
      };
      appendFileSync(`${out}.lines`, JSON.stringify(row) + '\n');
    }
    assertNoCredentialLogged();
  },
};
