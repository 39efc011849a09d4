/**
 * A mocha reporter for finding where the suite's time goes: the spec reporter's output, plus
 * one line per test file with its wall time and the CPU seconds (user+sys) this process and
 * the child processes it waited for spent on it, and the load average when it ended. Use in
 * a serial run (in `--parallel` runs the workers replay their events after each file, so the
 * clock here would measure nothing):
 *
 *   npx mocha --reporter test/helpers/timing-reporter.cjs 'test/**\/*.test.ts'
 *
 * With WG_TEST_TIMINGS=<file> the table is also written there as JSON at the end, and one JSON
 * line per file to <file>.lines as each file ends.
 */
'use strict';
/* eslint-disable @typescript-eslint/no-require-imports -- mocha loads reporters with require() */
const { appendFileSync, readFileSync, writeFileSync } = require('node:fs');
const { loadavg } = require('node:os');
const Mocha = require('mocha');

const TICK = 100; // USER_HZ on Linux

/** CPU seconds of this process and of its reaped children, from /proc/self/stat. */
function cpuSeconds() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields 14..17 of stat(5), counted from the state field (3) here
    const [utime, stime, cutime, cstime] = [f[11], f[12], f[13], f[14]].map(Number);
    return { self: (utime + stime) / TICK, children: (cutime + cstime) / TICK };
  } catch {
    const u = process.cpuUsage();
    return { self: (u.user + u.system) / 1e6, children: 0 };
  }
}

class TimingReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const rows = new Map();
    let open = null;
    runner.on('suite', (suite) => {
      if (!suite.file || !suite.parent || !suite.parent.root) return;
      open = { file: suite.file, t: process.hrtime.bigint(), cpu: cpuSeconds() };
    });
    runner.on('suite end', (suite) => {
      if (!open || suite.file !== open.file || !suite.parent || !suite.parent.root) return;
      const cpu = cpuSeconds();
      const row = rows.get(open.file) ?? { file: open.file, wall: 0, cpu: 0, childCpu: 0, tests: 0, load: 0 };
      row.wall += Number(process.hrtime.bigint() - open.t) / 1e9;
      row.cpu += cpu.self - open.cpu.self;
      row.childCpu += cpu.children - open.cpu.children;
      row.load = loadavg()[0];
      row.tests += suite.total();
      rows.set(open.file, row);
      // streamed as each file ends, so a long run can be read while it goes
      if (process.env.WG_TEST_TIMINGS)
        appendFileSync(
          `${process.env.WG_TEST_TIMINGS}.lines`,
          `${JSON.stringify({ ...row, file: row.file.replace(process.cwd() + '/', '') })}\n`,
        );
      open = null;
    });
    runner.once('end', () => {
      const list = [...rows.values()].sort((a, b) => b.wall - a.wall);
      const rel = (f) => f.replace(process.cwd() + '/', '');
      const sum = (k) => list.reduce((s, r) => s + r[k], 0);
      const lines = ['', 'file timings (wall s, cpu s, child cpu s, tests, load1):'];
      for (const r of list)
        lines.push(
          `${r.wall.toFixed(1).padStart(7)} ${r.cpu.toFixed(1).padStart(7)} ${r.childCpu.toFixed(1).padStart(7)} ${String(r.tests).padStart(4)} ${r.load.toFixed(1).padStart(5)}  ${rel(r.file)}`,
        );
      lines.push(
        `${sum('wall').toFixed(1).padStart(7)} ${sum('cpu').toFixed(1).padStart(7)} ${sum('childCpu').toFixed(1).padStart(7)} ${String(sum('tests')).padStart(4)}        total`,
      );
      process.stdout.write(lines.join('\n') + '\n');
      if (process.env.WG_TEST_TIMINGS)
        writeFileSync(
          process.env.WG_TEST_TIMINGS,
          JSON.stringify(
            list.map((r) => ({ ...r, file: rel(r.file) })),
            null,
            1,
          ),
        );
    });
  }
}

module.exports = TimingReporter;
