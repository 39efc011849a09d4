import { expect } from 'chai';
import { BENIGN, TRANSITION_INPUT, sandboxScope } from './helpers.js';

describe('sandbox: cost of a benign call on a warm isolate', function () {
  this.timeout(60_000);
  const scope = sandboxScope();
  after(() => scope.closeAll());

  it('is well under 1 ms end to end, one at a time and 64 in flight', async () => {
    const t = scope.make();
    await t.sandbox.ready();
    for (let i = 0; i < 2000; i++) await t.run(BENIGN, TRANSITION_INPUT); // warm up both sides

    const sequential = 5000;
    let started = performance.now();
    for (let i = 0; i < sequential; i++) await t.run(BENIGN, TRANSITION_INPUT);
    const sequentialUs = ((performance.now() - started) / sequential) * 1000;

    const total = 20_000;
    let issued = 0;
    started = performance.now();
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (issued++ < total) await t.run(BENIGN, TRANSITION_INPUT);
      }),
    );
    const pipelinedUs = ((performance.now() - started) / total) * 1000;

    console.log(`      sandbox call: ${sequentialUs.toFixed(1)} µs one at a time, ${pipelinedUs.toFixed(1)} µs each with 64 in flight`);
    expect(sequentialUs).to.be.below(1000);
    expect(pipelinedUs).to.be.below(500);
  });
});
