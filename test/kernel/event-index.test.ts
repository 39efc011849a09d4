import { expect } from 'chai';
import { EventIndex } from '../../kernel/event-index.js';
import type { CommitEvent } from '../../kernel/graph-index.js';
import type { Tenant } from '../../kernel/tenant.js';

/** A tenant stand-in: commit events are pushed by hand; log lines are collected. */
function fakeTenant(): { tenant: Tenant; emit(commit: string): void; logs: string[]; listeners(): number } {
  let listeners: Array<(e: CommitEvent) => void> = [];
  const logs: string[] = [];
  const tenant = {
    org: 'acme',
    index: {
      head: 'c0',
      subscribe(fn: (e: CommitEvent) => void) {
        listeners.push(fn);
        return () => (listeners = listeners.filter((l) => l !== fn));
      },
    },
    log: { error: (msg: string) => logs.push(msg) },
  } as unknown as Tenant;
  const emit = (commit: string): void => {
    for (const l of listeners) l({ commit } as CommitEvent);
  };
  return { tenant, emit, logs, listeners: () => listeners.length };
}

/** Records the commits it has seen; `stored` is what a load reads. */
class Seen extends EventIndex {
  seen: string[] = [];
  stored: string[] = ['c0'];
  loads = 0;
  failNextLoad = false;
  poison = new Set<string>();
  private gate: Promise<void> = Promise.resolve();
  private open: () => void = () => undefined;

  constructor(tenant: Tenant) {
    super(tenant, 'test index');
    this.start();
  }
  /** the next load waits until `release()` */
  hold(): void {
    this.gate = new Promise((r) => (this.open = r));
  }
  release(): void {
    this.open();
  }
  protected reset(): void {
    this.seen = [];
  }
  protected async load(): Promise<Set<string>> {
    this.loads++;
    const snapshot = [...this.stored];
    await this.gate;
    if (this.failNextLoad) {
      this.failNextLoad = false;
      throw new Error('git went away');
    }
    this.seen.push(...snapshot);
    return new Set(snapshot);
  }
  protected applyEvent(event: CommitEvent): void {
    if (this.poison.has(event.commit)) {
      this.poison.delete(event.commit);
      throw new Error(`cannot apply ${event.commit}`);
    }
    this.seen.push(event.commit);
  }
  protected unavailable(err: unknown): unknown {
    return new Error(`unavailable: ${(err as Error).message}`);
  }
}

describe('kernel/event-index', () => {
  it('buffers events during the build and applies those the load did not cover, in order', async () => {
    const f = fakeTenant();
    const ix = new Seen(f.tenant);
    await ix.ready();
    expect(ix.seen).to.deep.equal(['c0']);
    // a rebuild whose load is held: events arriving meanwhile are buffered
    ix.stored = ['c0', 'c1'];
    ix.hold();
    (ix as unknown as { rebuild(): void }).rebuild();
    f.emit('c1'); // already in the load's snapshot: not applied twice
    f.emit('c2');
    expect(ix.seen).to.deep.equal([]);
    ix.release();
    await ix.ready();
    expect(ix.seen).to.deep.equal(['c0', 'c1', 'c2']);
    f.emit('c3');
    expect(ix.seen).to.deep.equal(['c0', 'c1', 'c2', 'c3']);
  });

  it('an event that cannot be applied is logged and the index is rebuilt from what is stored', async () => {
    const f = fakeTenant();
    const ix = new Seen(f.tenant);
    await ix.ready();
    ix.stored = ['c0', 'c1', 'c2'];
    ix.poison.add('c2');
    f.emit('c1');
    f.emit('c2'); // throws inside the listener: must not escape into the commit path
    expect(f.logs).to.deep.equal(['test index fell out of step; rebuilding']);
    await ix.ready();
    expect(ix.seen).to.deep.equal(['c0', 'c1', 'c2']);
    expect(ix.loads).to.equal(2);
  });

  it('a failed build surfaces as unavailable from ready(), and the next ready() has rebuilt it', async () => {
    const f = fakeTenant();
    const ix = new Seen(f.tenant);
    await ix.ready();
    ix.failNextLoad = true;
    (ix as unknown as { rebuild(): void }).rebuild();
    let err: unknown;
    await ix.ready().catch((e: unknown) => (err = e));
    expect(String(err)).to.contain('unavailable: git went away');
    expect(f.logs).to.deep.equal(['test index build failed']);
    await ix.ready();
    expect(ix.seen).to.deep.equal(['c0']);
    f.emit('c1');
    expect(ix.seen).to.deep.equal(['c0', 'c1']);
  });

  it('close() unsubscribes', async () => {
    const f = fakeTenant();
    const ix = new Seen(f.tenant);
    await ix.ready();
    expect(f.listeners()).to.equal(1);
    ix.close();
    expect(f.listeners()).to.equal(0);
  });
});
