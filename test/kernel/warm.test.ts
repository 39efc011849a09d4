/**
 * Warm-ups (kernel/warm.ts): queued work runs only once started and after its delay, one task per
 * event-loop turn in order; a failure is logged and the rest still run; a stop drops what is left;
 * a task's promise holds the next until it settles (at most the hold time); `afterEach` hears of
 * each; `busy` holds while a task is queued or in progress.
 */
import { expect } from 'chai';
import { Warmer } from '../../kernel/warm.js';
import { until } from '../helpers/until.js';

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

  it('one at a time: a promise holds the next task until it settles; afterEach hears of each, in order', async () => {
    const after: string[] = [];
    const w = new Warmer(logger([]), (name) => after.push(name));
    const ran: string[] = [];
    let finish!: () => void;
    w.add('slow', () => {
      ran.push('slow');
      return new Promise<void>((resolve) => (finish = resolve));
    });
    w.add('quick', () => ran.push('quick'));
    w.start(0);
    await until(() => ran.length === 1, 'the first task');
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(ran, 'held by the unsettled promise').to.deep.equal(['slow']);
    expect(after).to.deep.equal([]);
    finish();
    await until(() => after.length === 2, 'both over');
    expect(ran).to.deep.equal(['slow', 'quick']);
    expect(after).to.deep.equal(['slow', 'quick']);
    w.stop();
  });

  it('a task that never settles holds the rest only for the hold time', async () => {
    const after: string[] = [];
    const w = new Warmer(logger([]), (name) => after.push(name), 40);
    const ran: string[] = [];
    w.add('hangs', () => {
      ran.push('hangs');
      return new Promise<void>(() => undefined);
    });
    w.add('next', () => ran.push('next'));
    const started = performance.now();
    w.start(0);
    await until(() => ran.includes('next'), 'the task after it');
    expect(performance.now() - started).to.be.at.least(35);
    expect(after).to.deep.equal(['hangs', 'next']);
    w.stop();
  });

  it('is busy while a task is queued or in progress, failed or not', async () => {
    const w = new Warmer(logger([]));
    expect(w.busy, 'nothing queued').to.equal(false);
    let finish: (() => void) | undefined;
    let fail: ((err: Error) => void) | undefined;
    w.add('slow', () => new Promise<void>((resolve) => (finish = resolve)));
    w.add('failing', () => new Promise<void>((_, reject) => (fail = reject)));
    expect(w.busy, 'queued').to.equal(true);
    w.start(0);
    await until(() => finish !== undefined, 'the first started');
    expect(w.busy, 'one in progress, one queued').to.equal(true);
    finish!();
    await until(() => fail !== undefined, 'the second started');
    expect(w.busy, 'the second in progress').to.equal(true);
    fail!(new Error('no cache'));
    await until(() => !w.busy, 'both settled');
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
