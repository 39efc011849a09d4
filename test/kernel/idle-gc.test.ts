/**
 * The serving process collects garbage once it goes quiet after allocating a lot
 * (kernel/idle-gc.ts): the policy with its probes injected, V8's own collection in this
 * process, and `workgraph serve` doing it (its debug line) unless SVC_IDLE_GC=0.
 */
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { constants, performance, PerformanceObserver } from 'node:perf_hooks';
import { join } from 'node:path';
import { startIdleGc, startupSetting, v8Gc } from '../../kernel/idle-gc.js';
import { killGroup, startServeProcess } from '../helpers/processes.js';
import { until } from '../helpers/until.js';

const MB = 1024 * 1024;

describe('idle garbage collection (workgraph serve)', function () {
  this.timeout(60_000);

  it('collects only in a quiet interval, and only after growth of at least the bytes and the ratio since the last collection', async () => {
    let busy = 0.5;
    let footprint = 100 * MB;
    // what the next collection frees; what a collection's finalizers release, the one after it frees
    let garbage = 40 * MB;
    let released = 3 * MB;
    const collections: Array<{ beforeBytes: number; afterBytes: number; compacted: boolean }> = [];
    let checks = 0;
    // a compaction fits under the high-water mark only at the first collection
    let fits = true;
    const compactions: boolean[] = [];
    const { stop } = startIdleGc({
      intervalMs: 5,
      compactFits: () => {
        const now = fits;
        fits = false;
        return now;
      },
      committed: () => 0,
      settleMs: 0,
      minGrowthBytes: 8 * MB,
      minGrowthRatio: 0.1,
      utilization: () => {
        checks++;
        return busy;
      },
      footprint: () => footprint,
      gc: (compact) => {
        compactions.push(compact);
        footprint -= garbage;
        garbage = released;
        released = 0;
      },
      onCollect: (info) => collections.push(info),
    });
    try {
      await until(() => checks >= 5, 'a few busy intervals');
      expect(collections, 'not while busy').to.deep.equal([]);
      busy = 0.01;
      await until(() => collections.length >= 1, 'the first quiet interval');
      expect(collections[0]).to.include({ beforeBytes: 100 * MB, afterBytes: 60 * MB, compacted: true });
      // it gave back more than 4 MB: one more at the next quiet interval, without growth, for what its finalizers let go
      await until(() => collections.length >= 2, 'the follow-up');
      expect(collections[1]).to.include({ beforeBytes: 60 * MB, afterBytes: 57 * MB, compacted: false });
      // quiet, but 5 MB of growth is under both the 8 MB and 10% of 57 MB; and the follow-up gave back under 4 MB: the run ends
      footprint += 5 * MB;
      const seen = checks;
      await until(() => checks >= seen + 5, 'more quiet intervals');
      expect(collections).to.have.length(2);
      // 7 MB: past 10% (5.7 MB) but under 8 MB
      footprint += 2 * MB;
      const seen2 = checks;
      await until(() => checks >= seen2 + 5, 'more quiet intervals');
      expect(collections).to.have.length(2);
      // growth of 8 MB, busy: still nothing until quiet again
      footprint += 1 * MB;
      busy = 0.9;
      const seen3 = checks;
      await until(() => checks >= seen3 + 5, 'busy intervals');
      expect(collections).to.have.length(2);
      busy = 0;
      await until(() => collections.length === 3, 'the next quiet interval');
      expect(collections[2]!.beforeBytes).to.equal(65 * MB);
      // it gave back nothing: no follow-up
      const seen4 = checks;
      await until(() => checks >= seen4 + 5, 'more quiet intervals');
      expect(collections).to.have.length(3);
      expect(compactions, 'compacting only when it fits under the high-water mark').to.deep.equal([true, false, false]);
    } finally {
      stop();
    }
    const after = checks;
    await new Promise((r) => setTimeout(r, 30));
    expect(checks, 'stopped').to.equal(after);
  });

  it('goes on while each collection gives back committed pages, at most maxRun in a row', async () => {
    let committed = 400 * MB;
    /** a monitor whose collections each give back `perCollection` of committed heap; the committed bytes after each */
    const monitor = (perCollection: number, opts: { maxRun?: number; settleMs?: number }) => {
      const collections: number[] = [];
      const { stop } = startIdleGc({
        intervalMs: 5,
        ...opts,
        utilization: () => 0,
        compactFits: () => false,
        footprint: () => 200 * MB,
        committed: () => committed,
        gc: () => {
          committed -= perCollection;
        },
        onCollect: () => collections.push(committed),
      });
      return { collections, stop };
    };
    const long = monitor(10 * MB, { maxRun: 4 });
    try {
      await until(() => long.collections.length >= 4, 'a run of collections');
      // four in a row, then nothing: no growth since, and the run is at its cap
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(long.collections).to.deep.equal([390 * MB, 380 * MB, 370 * MB, 360 * MB]);
    } finally {
      long.stop();
    }
    // a run ends early once a collection gives back less than followUpBytes
    const short = monitor(1 * MB, { settleMs: 0 });
    try {
      await until(() => short.collections.length >= 1, 'the first collection');
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(short.collections).to.have.length(1);
    } finally {
      short.stop();
    }
  });

  it('a run goes on until settleMs after its first collection, whatever each gives back', async () => {
    const at: number[] = [];
    const { stop } = startIdleGc({
      intervalMs: 10,
      settleMs: 150,
      maxRun: 1000,
      utilization: () => 0,
      compactFits: () => false,
      footprint: () => 200 * MB,
      committed: () => 0,
      gc: () => undefined,
      onCollect: () => at.push(performance.now()),
    });
    try {
      await until(() => at.length >= 1, 'the first collection');
      await until(() => performance.now() - at[0]! > 400, 'well past settleMs');
      const last = at[at.length - 1]! - at[0]!;
      expect(at.length, 'more than one').to.be.at.least(2);
      expect(last, 'the last at or past settleMs').to.be.at.least(150);
      // the collection before the last was still within settleMs: the run ended at the first past it
      expect(at[at.length - 2]! - at[0]!).to.be.below(150);
      const count = at.length;
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(at).to.have.length(count);
    } finally {
      stop();
    }
  });

  it('after a piece of work (a warm-up), collects at once if the footprint grew enough, busy or not', async () => {
    let footprint = 10 * MB;
    const collections: number[] = [];
    const monitor = startIdleGc({
      intervalMs: 60_000,
      minGrowthBytes: 8 * MB,
      minGrowthRatio: 0.25,
      utilization: () => 1,
      busy: () => true,
      compactFits: () => false,
      committed: () => 0,
      footprint: () => footprint,
      gc: () => {
        footprint = 40 * MB;
      },
      onCollect: (info) => collections.push(info.beforeBytes),
    });
    try {
      monitor.afterWork();
      expect(collections, 'grew 10 MB from nothing: collected').to.deep.equal([10 * MB]);
      footprint = 45 * MB;
      monitor.afterWork();
      expect(collections, '5 MB more: under 8 MB').to.have.length(1);
      footprint = 60 * MB;
      monitor.afterWork();
      expect(collections, '20 MB more: past 8 MB and a quarter of 40').to.deep.equal([10 * MB, 60 * MB]);
    } finally {
      monitor.stop();
    }
    monitor.afterWork();
    expect(collections, 'nothing once stopped').to.have.length(2);
  });

  it('waits until no request started or finished for the quiet period, however idle the event loop', async () => {
    let lastRequest = performance.now();
    let checks = 0;
    const collections: number[] = [];
    const { stop } = startIdleGc({
      intervalMs: 5,
      quietMs: 200,
      lastRequestAt: () => lastRequest,
      utilization: () => {
        checks++;
        // requests keep coming (a writer waiting on fdatasync: the loop is idle between them)
        if (checks < 10) lastRequest = performance.now();
        return 0;
      },
      footprint: () => 500 * MB,
      gc: () => undefined,
      onCollect: () => collections.push(performance.now() - lastRequest),
    });
    try {
      await until(() => checks >= 10, 'intervals with requests');
      expect(collections, 'not while requests come').to.deep.equal([]);
      await until(() => collections.length > 0, 'the collection once they stop');
      expect(collections[0]).to.be.at.least(200);
    } finally {
      stop();
    }
  });

  it('waits while the kernel says work is under way (the warm-ups after a start)', async () => {
    let warming = true;
    let checks = 0;
    let collected = 0;
    const { stop } = startIdleGc({
      intervalMs: 5,
      busy: () => warming,
      utilization: () => {
        checks++;
        return 0;
      },
      footprint: () => 500 * MB,
      gc: () => undefined,
      onCollect: () => collected++,
    });
    try {
      await until(() => checks >= 10, 'quiet intervals while warming up');
      expect(collected, 'not while warming up').to.equal(0);
      warming = false;
      await until(() => collected > 0, 'the collection once the warm-ups are done');
    } finally {
      stop();
    }
  });

  it("a flag set around a collection goes back to the process's own setting of it, else V8's default", () => {
    expect(startupSetting('flush-bytecode', '--flush-bytecode', [])).to.equal('--flush-bytecode');
    expect(startupSetting('flush-bytecode', '--flush-bytecode', ['--no-node-snapshot', '--no-flush-bytecode'])).to.equal(
      '--no-flush-bytecode',
    );
    // NODE_OPTIONS after the command line, the last one winning; V8's underscores count as dashes
    expect(startupSetting('flush-bytecode', '--flush-bytecode', ['--no-flush-bytecode', '--flush_bytecode'])).to.equal('--flush-bytecode');
    expect(startupSetting('optimize-for-size', '--no-optimize-for-size', ['--optimize_for_size'])).to.equal('--optimize-for-size');
    // a flag that only starts with the name is another flag
    expect(startupSetting('flush-bytecode', '--flush-bytecode', ['--no-flush-bytecode-now'])).to.equal('--flush-bytecode');
  });

  it("reaches V8's own full collection, which the real probes ask for once this process is quiet", async () => {
    const gc = v8Gc();
    expect(gc).to.be.a('function');
    const majors: number[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        if ((e as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors.push(e.startTime);
      }
    });
    observer.observe({ entryTypes: ['gc'] });
    try {
      gc!();
      await until(() => majors.length >= 1, 'the major collection a call makes');
      const collected: number[] = [];
      const seen = majors.length;
      const { stop } = startIdleGc({ intervalMs: 20, minGrowthBytes: 1, minGrowthRatio: 0, onCollect: () => collected.push(1) });
      try {
        await until(() => collected.length > 0, 'a collection while the test waits');
      } finally {
        stop();
      }
      await until(() => majors.length > seen, 'its major collection');
    } finally {
      observer.disconnect();
    }
  });

  describe('the serving process', () => {
    const children = new Set<ChildProcess>();
    const dirs: string[] = [];
    after(async () => {
      for (const c of children) await killGroup(c, 'SIGKILL');
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });

    const serve = async (env: Record<string, string>) => {
      const dir = mkdtempSync(join(tmpdir(), 'idle-gc-'));
      dirs.push(dir);
      return startServeProcess({ SVC_DATA_DIR: dir, LOG_LEVEL: 'debug', ...env }, children);
    };

    it('collects once it is quiet after its start; not with SVC_IDLE_GC=0', async () => {
      const started = Date.now();
      const on = await serve({});
      await until(() => on.output().includes('collected garbage while idle'), 'the idle collection after the start', 30_000);
      const took = Date.now() - started;
      await killGroup(on.child, 'SIGTERM');
      const off = await serve({ SVC_IDLE_GC: '0' });
      // nothing to wait for but time: twice what the first server took to collect, at least 5 s
      await new Promise((r) => setTimeout(r, Math.max(5000, 2 * took)));
      expect(off.output()).to.not.include('collected garbage while idle');
      await killGroup(off.child, 'SIGTERM');
    });
  });
});
