/**
 * Warm-ups (kernel/warm.ts): queued work runs only once started and after its delay, one task per
 * event-loop turn in order; a failure is logged and the rest still run; a stop drops what is left.
 */
import { expect } from 'chai';
import { Warmer } from '../../kernel/warm.js';
import { until } from '../plugins/webhooks/receiver.js';

function logger(lines: string[]) {
  const push = (m: string, f?: Record<string, unknown>) => lines.push(`${m} ${JSON.stringify(f ?? {})}`);
  return { info: push, warn: push, error: push };
}

describe('warm-ups', function () {
  it('run in order once started, one a turn, after the delay; a failed one is logged and the rest run', async () => {
    const lines: string[] = [];
    const w = new Warmer(logger(lines));
    const ran: string[] = [];
    w.add('a', () => ran.push('a'));
    w.add('broken', () => {
      throw new Error('no cache today');
    });
    w.add('rejects', () => Promise.reject(new Error('nor tomorrow')));
    w.add('b', () => ran.push('b'));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(ran, 'nothing before start').to.deep.equal([]);
    const started = performance.now();
    w.start(50);
    // a task runs on a turn of its own: synchronously after the first, nothing else has run
    await until(() => ran.length >= 1, 'the first task');
    expect(performance.now() - started).to.be.at.least(45);
    await until(() => ran.length === 2 && w.pending === 0, 'every task');
    expect(ran).to.deep.equal(['a', 'b']);
    await until(() => lines.length === 2, 'both failures logged');
    expect(lines.join('\n')).to.include('"task":"broken"').and.include('no cache today').and.include('"task":"rejects"');
    // queued after the start: on the next turn
    w.add('late', () => ran.push('late'));
    await until(() => ran.includes('late'), 'the late task');
    w.stop();
  });

  it('a stop drops what is left, and nothing queued afterwards runs', async () => {
    const w = new Warmer(logger([]));
    const ran: string[] = [];
    w.add('a', () => ran.push('a'));
    w.start(20);
    w.stop();
    w.add('b', () => ran.push('b'));
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(ran).to.deep.equal([]);
    expect(w.pending).to.equal(0);
  });
});
