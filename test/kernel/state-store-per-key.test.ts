/**
 * The file store's one-file-per-key layout (`collection(name, { layout: 'file-per-key' })`):
 * the Collection contract (as test/kernel/stores.test.ts checks it for the other layouts), and
 * that a write costs the size of its record, not of the collection.
 */
import { expect } from 'chai';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileStateStore } from '../../kernel/state-store.js';

describe('file state store: one file per key', () => {
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'wg-keyed-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const open = () => new FileStateStore(dir).collection<{ n: number }>('pending', { layout: 'file-per-key' });

  it('get, set, delete, batch, fetch, take; a fresh instance sees every acknowledged write', async () => {
    const c = open();
    await c.set('a', { n: 1 });
    await c.set('b/../weird key', { n: 2 });
    expect(c.get('a')).to.deep.equal({ n: 1 });
    expect(c.size).to.equal(2);
    await c.delete('a');
    await c.delete('never-there');
    await c.batch([
      { key: 'c', value: { n: 3 } },
      { key: 'b/../weird key', value: null },
      { key: 'd', value: { n: 4 } },
    ]);
    expect([...c.entries()].sort()).to.deep.equal([
      ['c', { n: 3 }],
      ['d', { n: 4 }],
    ]);
    expect(await c.fetch('c')).to.deep.equal({ n: 3 });
    const [first, second] = await Promise.all([c.take('c'), c.take('c')]);
    expect([first, second].filter(Boolean)).to.deep.equal([{ n: 3 }]);
    // a crash's leftover temp file is not a record
    writeFileSync(join(dir, 'pending', '.x.tmp.lock'), 'torn');
    const again = open();
    expect([...again.entries()]).to.deep.equal([['d', { n: 4 }]]);
    expect(readdirSync(join(dir, 'pending')).filter((n) => !n.startsWith('.'))).to.have.length(1);
  });

  it('a collection switching from one file imports it at open, once', async () => {
    writeFileSync(join(dir, 'pending.json'), JSON.stringify({ a: { n: 1 }, 'b c': { n: 2 } }));
    const c = open();
    expect([...c.entries()].sort()).to.deep.equal([
      ['a', { n: 1 }],
      ['b c', { n: 2 }],
    ]);
    expect(readdirSync(dir).sort()).to.deep.equal(['pending', 'pending.json.imported']);
    await c.delete('a');
    expect([...open().entries()]).to.deep.equal([['b c', { n: 2 }]]);
  });

  it('writes of one key keep their order; the last one wins on disk', async () => {
    const c = open();
    const writes: Array<Promise<void>> = [];
    for (let i = 0; i < 30; i++) writes.push(c.set('k', { n: i }));
    writes.push(c.delete('k'));
    writes.push(c.set('k', { n: 99 }));
    await Promise.all(writes);
    expect(open().get('k')).to.deep.equal({ n: 99 });
  });

  it('a write costs its own record: the bytes on disk grow linearly, one file each', async () => {
    const c = new FileStateStore(dir).collection<{ blob: string }>('pending', { layout: 'file-per-key' });
    const total = () => readdirSync(join(dir, 'pending')).reduce((sum, n) => sum + statSync(join(dir, 'pending', n)).size, 0);
    const sizes: number[] = [];
    for (let batch = 0; batch < 3; batch++) {
      await Promise.all(Array.from({ length: 100 }, (_, i) => c.set(`key-${batch}-${i}`, { blob: 'x'.repeat(500) })));
      sizes.push(total());
    }
    expect(sizes[1]! - sizes[0]!).to.equal(sizes[0]);
    expect(sizes[2]! - sizes[1]!).to.equal(sizes[0]);
    expect(readdirSync(join(dir, 'pending'))).to.have.length(300);
  });
});
