import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { BENIGN, TRANSITION_INPUT, sandboxScope } from './helpers.js';

/** CPU microseconds (user+sys) of process `pid` so far, from /proc/<pid>/stat (10 ms ticks). */
function procCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  return ((f[11] ?? 0) + (f[12] ?? 0)) * 10_000;
}

describe('sandbox: cost of a benign call on a warm isolate', function () {
  this.timeout(60_000);
  const scope = sandboxScope();
  after(() => scope.closeAll());

  // The cost is CPU: this process's (send, receive, match the answer) plus the sandbox child's
  // (decode, run in the isolate, encode). CPU rather than wall time, so the bound means the same
  // on an idle machine and on one whose cores are busy with other work (a wall-clock bound
  // there measures the scheduler). Enough calls that the 10 ms tick of /proc is noise.
  it('costs well under 1 ms of CPU per call, one at a time and 64 in flight', async () => {
    const t = scope.make();
    await t.sandbox.ready();
    const pid = t.pid();
    if (pid === undefined) throw new Error('the sandbox child reported no pid');
    for (let i = 0; i < 1000; i++) await t.run(BENIGN, TRANSITION_INPUT); // warm up both sides
    const cpuUs = () => {
      const host = process.cpuUsage();
      return host.user + host.system + procCpuUs(pid);
    };

    const sequential = 2000;
    let wall = performance.now();
    let cpu = cpuUs();
    for (let i = 0; i < sequential; i++) await t.run(BENIGN, TRANSITION_INPUT);
    const sequentialUs = (cpuUs() - cpu) / sequential;
    const sequentialWallUs = ((performance.now() - wall) / sequential) * 1000;

    const total = 8000;
    let issued = 0;
    wall = performance.now();
    cpu = cpuUs();
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (issued++ < total) await t.run(BENIGN, TRANSITION_INPUT);
      }),
    );
    const pipelinedUs = (cpuUs() - cpu) / total;
    const pipelinedWallUs = ((performance.now() - wall) / total) * 1000;

    expect(t.pid(), 'the same child served every call').to.equal(pid);
    console.log(
      `      sandbox call, CPU (wall): ${sequentialUs.toFixed(1)} µs (${sequentialWallUs.toFixed(1)} µs) one at a time, ${pipelinedUs.toFixed(1)} µs (${pipelinedWallUs.toFixed(1)} µs) each with 64 in flight`,
    );
    expect(sequentialUs).to.be.below(1000);
    expect(pipelinedUs).to.be.below(500);
  });
});
