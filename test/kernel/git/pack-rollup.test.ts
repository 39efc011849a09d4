import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodePath } from '../../../kernel/git/objects.js';
import { openGitStore } from '../../../kernel/git/open.js';
import {
  geometricRollCount,
  indexObjectIds,
  listPacks,
  planPackWork,
  rollUpPacks,
  type PackFile,
} from '../../../kernel/git/pack-rollup.js';
import type { GitStore } from '../../../kernel/git/types.js';
import { ann, fsck, gitCli } from './helpers.js';

describe('kernel/git/pack-rollup', function () {
  this.timeout(30_000);
  let tmp: string;
  let gitdir: string;
  let store: GitStore | null;

  beforeEach(() => {
    tmp = mkdtempSync(join(tmpdir(), 'pack-rollup-'));
    gitdir = join(tmp, 'graph.git');
    store = null;
  });
  afterEach(async () => {
    await store?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  /** `n` commits, each written out as its own pack (no background merge). */
  async function packsOf(n: number): Promise<void> {
    store = await openGitStore(gitdir, { checkpointEvery: 1, packLimit: 0 });
    for (let i = 0; i < n; i++) {
      await store.commit({
        changes: [{ path: nodePath('task', `t${i % 3}`), content: `version ${i}\n`.repeat(20) }],
        author: ann,
        message: `m${i}`,
        expectedParent: store.head(),
      });
    }
    await store.close();
    store = null;
  }

  const allObjects = () => gitCli(gitdir, ['cat-file', '--batch-all-objects', '--batch-check=%(objectname)']).trim().split('\n').sort();

  it('merges the smallest packs so the rest form a geometric progression, as git repack --geometric=2 decides', () => {
    expect(geometricRollCount([])).to.equal(0);
    expect(geometricRollCount([7])).to.equal(0);
    expect(geometricRollCount([1, 2, 4, 9])).to.equal(0);
    expect(geometricRollCount([1, 1])).to.equal(2);
    expect(geometricRollCount([1, 1, 10])).to.equal(2);
    expect(geometricRollCount([1, 1, 1, 100, 1000])).to.equal(3);
    // the merged pack would outgrow the next one: that one is merged too, up to everything
    expect(geometricRollCount([5, 5, 12])).to.equal(3);
    expect(geometricRollCount([5, 5, 12, 30, 200])).to.equal(4);
  });

  it('plans a full repack only while no pack is sealed; past the seal, merges by ids among the smaller packs only', () => {
    const packs = (...sizes: number[]): PackFile[] => sizes.map((size, i) => ({ name: `pack-${i}`, size }));
    const names = (w: ReturnType<typeof planPackWork>) => (w?.kind === 'merge' ? w.packs.map((p) => p.name) : w);
    // nothing sealed: the largest would be merged (the rest weigh half of it) -> the full repack
    expect(planPackWork(packs(10, 10, 40), 1000)).to.deep.equal({ kind: 'full' });
    // nothing sealed, the largest left alone -> the geometric merge of the smallest
    expect(names(planPackWork(packs(1, 1, 10, 100), 1000))).to.deep.equal(['pack-0', 'pack-1']);
    expect(planPackWork(packs(1, 2, 4, 16), 1000)).to.equal(null);
    expect(planPackWork(packs(), 1000)).to.equal(null);
    // the same packs with the largest sealed: never a full repack, and the sealed one is never merged
    expect(names(planPackWork(packs(10, 10, 40), 40))).to.deep.equal(['pack-0', 'pack-1']);
    expect(names(planPackWork(packs(5, 5, 12, 500, 900), 100))).to.deep.equal(['pack-0', 'pack-1', 'pack-2']);
    expect(planPackWork(packs(3, 500, 900), 100)).to.equal(null);
  });

  it('a store leaves a sealed pack as it is: the packs written after it are merged by ids, no full repack', async () => {
    await packsOf(6);
    gitCli(gitdir, ['repack', '-a', '-d', '-q']);
    const [sealed] = await listPacks(gitdir);
    const sealedBytes = readFileSync(join(gitdir, 'objects', 'pack', `${sealed!.name}.pack`));
    store = await openGitStore(gitdir, { checkpointEvery: 1, packLimit: 4, packSeal: sealed!.size, checkpointIdleMs: 60_000 });
    for (let i = 0; i < 12; i++) {
      await store.commit({
        changes: [{ path: nodePath('task', `s${i % 4}`), content: `sealed ${i}\n`.repeat(20) }],
        author: ann,
        message: `s${i}`,
        expectedParent: store.head(),
      });
    }
    await store.close(); // waits for a merge in progress
    store = null;
    const after = await listPacks(gitdir);
    expect(after.length).to.be.lessThan(13);
    expect(after.filter((p) => p.name === sealed!.name)).to.have.length(1);
    expect(readFileSync(join(gitdir, 'objects', 'pack', `${sealed!.name}.pack`)).equals(sealedBytes)).to.equal(true);
    expect(gitCli(gitdir, ['rev-list', '--count', 'HEAD']).trim()).to.equal('18');
    expect(fsck(gitdir).status).to.equal(0);
  });

  it('reads the object ids of version 2 and version 1 pack indexes as git lists them', async () => {
    await packsOf(3);
    const [pack] = await listPacks(gitdir);
    const idxPath = join(gitdir, 'objects', 'pack', `${pack!.name}.idx`);
    const fromGit = execFileSync('git', ['show-index'], { input: readFileSync(idxPath), encoding: 'utf8' })
      .trim()
      .split('\n')
      .map((l) => l.split(' ')[1]);
    expect(indexObjectIds(readFileSync(idxPath)).map((b) => b.toString('hex'))).to.deep.equal(fromGit);
    // the same pack indexed in the original format
    const v1 = join(tmp, 'v1.idx');
    gitCli(gitdir, ['index-pack', '--index-version=1', '-o', v1, join(gitdir, 'objects', 'pack', `${pack!.name}.pack`)]);
    expect(indexObjectIds(readFileSync(v1)).map((b) => b.toString('hex'))).to.deep.equal(fromGit);
    expect(() => indexObjectIds(Buffer.from([0xff, 0x74, 0x4f, 0x63, 0, 0, 0, 3]))).to.throw(/version 3/);
    expect(() => indexObjectIds(readFileSync(idxPath).subarray(0, 1100))).to.throw(/truncated/);
  });

  it('merges the given packs and the loose objects into one durable pack; kept and other packs are left alone; nothing is lost', async () => {
    await packsOf(6);
    // a loose object (as a repository written without the journal has) and a pack kept by .keep
    const loose = gitCli(gitdir, ['hash-object', '-w', '--stdin'], 'a loose blob\n').trim();
    const packs = await listPacks(gitdir);
    expect(packs).to.have.length(6);
    expect(packs.map((p) => p.size)).to.deep.equal([...packs.map((p) => p.size)].sort((a, b) => a - b));
    const kept = packs[0]!;
    writeFileSync(join(gitdir, 'objects', 'pack', `${kept.name}.keep`), '');
    const before = allObjects();
    const history = gitCli(gitdir, ['rev-list', 'HEAD']);

    const mergeable = await listPacks(gitdir);
    expect(mergeable.map((p) => p.name)).to.not.include(kept.name);
    const merged = mergeable.slice(0, 3);
    const untouched = mergeable.slice(3);
    const name = await rollUpPacks(gitdir, merged, true);

    const files = readdirSync(join(gitdir, 'objects', 'pack'));
    for (const p of merged) expect(files.filter((f) => f.startsWith(p.name))).to.deep.equal([]);
    for (const p of [kept, ...untouched]) expect(files).to.include.members([`${p.name}.pack`, `${p.name}.idx`]);
    expect(files).to.include.members([`${name}.pack`, `${name}.idx`]);
    expect(files.filter((f) => f.startsWith('.tmp') || f.startsWith('tmp_'))).to.deep.equal([]);
    // the loose object moved into the new pack
    expect(gitCli(gitdir, ['count-objects', '-v'])).to.match(/^count: 0$/m);
    const newIds = indexObjectIds(readFileSync(join(gitdir, 'objects', 'pack', `${name}.idx`))).map((b) => b.toString('hex'));
    expect(newIds).to.include(loose);
    expect(allObjects()).to.deep.equal(before);
    expect(gitCli(gitdir, ['rev-list', 'HEAD'])).to.equal(history);
    expect(fsck(gitdir).status).to.equal(0);

    // and a store opened on the result reads and commits on top of it
    store = await openGitStore(gitdir);
    expect((await store.loadFiles('nodes/')).map((f) => f.content)).to.have.length(3);
    await store.commit({
      changes: [{ path: nodePath('task', 'after'), content: 'x' }],
      author: ann,
      message: 'after',
      expectedParent: store.head(),
    });
    await store.settled();
    expect(fsck(gitdir).status).to.equal(0);
  });

  it('a failed pack-objects deletes nothing', async () => {
    await packsOf(2);
    const packs = await listPacks(gitdir);
    const before = readdirSync(join(gitdir, 'objects', 'pack')).sort();
    // an index naming an object no pack holds: pack-objects fails, the packs stay
    const bogus = { name: 'pack-0000000000000000000000000000000000000000', size: 1 };
    const idx = Buffer.alloc(8 + 1024 + 20 + 4 + 4 + 40);
    idx.writeUInt32BE(0xff744f63, 0);
    idx.writeUInt32BE(2, 4);
    for (let i = 0xab; i < 256; i++) idx.writeUInt32BE(1, 8 + i * 4);
    Buffer.from('ab'.repeat(20), 'hex').copy(idx, 8 + 1024);
    writeFileSync(join(gitdir, 'objects', 'pack', `${bogus.name}.idx`), idx);
    let failed: Error | null = null;
    await rollUpPacks(gitdir, [...packs, bogus], true).catch((e: Error) => (failed = e));
    expect(failed).to.be.an('error');
    rmSync(join(gitdir, 'objects', 'pack', `${bogus.name}.idx`));
    expect(readdirSync(join(gitdir, 'objects', 'pack')).sort()).to.deep.equal(before);
    expect(fsck(gitdir).status).to.equal(0);
  });

  it('an aborted merge (the store closing) stops git and deletes nothing', async () => {
    await packsOf(3);
    const packs = await listPacks(gitdir);
    const before = readdirSync(join(gitdir, 'objects', 'pack')).sort();
    const controller = new AbortController();
    const merging = rollUpPacks(gitdir, packs, true, controller.signal);
    controller.abort();
    let failed: Error | null = null;
    await merging.catch((e: Error) => (failed = e));
    expect(failed).to.be.an('error');
    expect(readdirSync(join(gitdir, 'objects', 'pack')).sort()).to.deep.equal(before);
    expect(fsck(gitdir).status).to.equal(0);
  });
});
