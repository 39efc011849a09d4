import { expect } from 'chai';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJournal, JOURNAL_NAME } from '../../../kernel/commit-journal.js';
import { openGitStore } from '../../../kernel/git/open.js';
import type { GitStore } from '../../../kernel/git/types.js';
import { until } from '../../helpers/until.js';
import { ann, fsck, gitCli } from './helpers.js';

describe('kernel/git/open: commit journal replay', function () {
  this.timeout(20_000);
  let tmp: string;
  let gitdir: string;
  let store: GitStore;

  beforeEach(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'git-store-'));
    gitdir = join(tmp, 'graph.git');
    store = await openGitStore(gitdir);
  });
  afterEach(async () => {
    await store.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  const journalPath = (): string => join(gitdir, JOURNAL_NAME);
  const objPath = (oid: string): string => join(gitdir, 'objects', oid.slice(0, 2), oid.slice(2));
  const refPath = (): string => join(gitdir, 'refs', 'heads', 'main');
  const paths = ['nodes/t/00/a.md', 'nodes/t/11/b.md', 'nodes/u/22/c.md'];

  /** Three commits journaled but never checkpointed (close skips it, as a crash would). */
  async function uncheckpointed(): Promise<string[]> {
    await store.close();
    store = await openGitStore(gitdir, { checkpointOnClose: false, checkpointIdleMs: 60_000 });
    const commits: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await store.commit({
        changes: [{ path: paths[i]!, content: `content ${i}` }],
        author: ann,
        message: `c${i}`,
        expectedParent: store.head(),
      });
      commits.push(r.commit);
    }
    await store.close();
    expect(statSync(journalPath()).size).to.be.greaterThan(0);
    return commits;
  }
  function records(): ReturnType<typeof decodeJournal>['records'] {
    return decodeJournal(readFileSync(journalPath())).records;
  }
  async function expectRecovered(head: string, files: number): Promise<void> {
    store = await openGitStore(gitdir);
    expect(store.head()).to.equal(head);
    expect(gitCli(gitdir, ['rev-parse', 'HEAD']).trim()).to.equal(head);
    const loaded = await store.loadFiles('');
    expect(loaded.map((f) => f.content)).to.have.length(files);
    expect(statSync(journalPath()).size).to.equal(0);
    const r = fsck(gitdir);
    expect(r.status, r.output).to.equal(0);
    expect(r.output).to.not.match(/error|missing|corrupt/i);
  }

  it('journals each commit and empties the journal at the checkpoint on close', async () => {
    await store.commit({ changes: [{ path: paths[0]!, content: 'x' }], author: ann, message: 'm', expectedParent: null });
    const recs = records();
    expect(recs).to.have.length(1);
    expect(recs[0]!.commit).to.equal(store.head());
    expect(recs[0]!.parent).to.equal(null);
    expect(recs[0]!.objects.map((o) => o.type).sort()).to.deep.equal(['blob', 'commit', 'tree', 'tree', 'tree', 'tree']);
    await store.close();
    expect(statSync(journalPath()).size).to.equal(0);
    expect(fsck(gitdir).status).to.equal(0);
    store = await openGitStore(gitdir);
  });

  it('checkpoints after N commits and when idle', async () => {
    await store.close();
    store = await openGitStore(gitdir, { checkpointEvery: 2, checkpointIdleMs: 60_000, checkpointOnClose: false });
    await store.commit({ changes: [{ path: paths[0]!, content: '1' }], author: ann, message: 'm', expectedParent: store.head() });
    expect(records()).to.have.length(1);
    await store.commit({ changes: [{ path: paths[0]!, content: '2' }], author: ann, message: 'm', expectedParent: store.head() });
    await store.close(); // waits for the queued checkpoint
    expect(records()).to.have.length(0);
    store = await openGitStore(gitdir, { checkpointIdleMs: 30, checkpointOnClose: false });
    await store.commit({ changes: [{ path: paths[0]!, content: '3' }], author: ann, message: 'm', expectedParent: store.head() });
    expect(records()).to.have.length(1);
    // the idle checkpoint (30 ms after the commit): waited for, not slept on (a loaded machine is slower)
    await until(() => records().length === 0, 'the idle checkpoint', 15_000);
  });

  it('reuses the file in place after a checkpoint; stale records of the old epoch are never replayed', async () => {
    await store.close();
    store = await openGitStore(gitdir, { checkpointEvery: 3, checkpointIdleMs: 60_000, checkpointOnClose: false });
    const same = (content: string) => ({
      changes: [{ path: paths[0]!, content }],
      author: ann,
      message: 'same size',
      expectedParent: store.head(),
    });
    for (const c of ['a', 'b', 'c']) await store.commit(same(c)); // the third one queues a checkpoint
    await until(() => records().length === 0, 'the checkpoint', 15_000);
    const sizeAfterCheckpoint = statSync(journalPath()).size;
    expect(sizeAfterCheckpoint).to.be.greaterThan(0); // blocks kept for reuse
    expect(records()).to.have.length(0);
    const d = await store.commit(same('d')); // same length as the old first record: old records line up after it
    const e = await store.commit(same('e'));
    expect(statSync(journalPath()).size).to.equal(sizeAfterCheckpoint); // overwritten in place, not grown
    const recs = records();
    expect(recs.map((r) => r.commit)).to.deep.equal([d.commit, e.commit]);
    await store.close(); // as a crash would: no checkpoint
    // recovery replays exactly d and e (the old third record after them is never applied)
    store = await openGitStore(gitdir);
    expect(store.head()).to.equal(e.commit);
    expect((await store.loadFiles('')).map((f) => f.content)).to.deep.equal(['e']);
    expect(fsck(gitdir).status).to.equal(0);
  });

  it('recovers missing objects and a ref that is behind', async () => {
    const commits = await uncheckpointed();
    for (const rec of records()) for (const o of rec.objects) expect(existsSync(objPath(o.oid)), 'never written loose').to.equal(false);
    writeFileSync(refPath(), `${commits[0]}\n`);
    await expectRecovered(commits[2]!, 3);
  });

  it('recovers from a write-out cut short: temp pack files, an empty ref file', async () => {
    const commits = await uncheckpointed();
    const packDir = join(gitdir, 'objects', 'pack');
    mkdirSync(packDir, { recursive: true });
    writeFileSync(join(packDir, 'tmp_wgpack_123_a'), Buffer.alloc(5000, 1));
    writeFileSync(join(packDir, 'tmp_wgidx_123_b'), Buffer.alloc(100));
    writeFileSync(refPath(), '');
    await expectRecovered(commits[2]!, 3);
    expect(readdirSync(packDir).filter((n) => n.startsWith('tmp_wg'))).to.deep.equal([]);
  });

  it('drops a torn last record (never acknowledged) and one with a bad crc', async () => {
    const commits = await uncheckpointed();
    const full = readFileSync(journalPath());
    const { records: recs } = decodeJournal(full);
    // the ref and objects as they were before the third commit was written
    writeFileSync(refPath(), `${commits[1]}\n`);
    expect(recs).to.have.length(3);
    const cut = full.length - 10;
    writeFileSync(journalPath(), full.subarray(0, cut));
    await expectRecovered(commits[1]!, 2);
    await store.close();

    const commits2 = await uncheckpointed();
    const img = readFileSync(journalPath());
    img[img.length - 5]! ^= 0xff; // last record's payload
    writeFileSync(journalPath(), img);
    writeFileSync(refPath(), `${commits2[1]}\n`);
    await expectRecovered(commits2[1]!, 2);
  });

  it('journals a changed large tree as a delta of its previous version and rebuilds it at replay (bases in the repository and in the chain)', async () => {
    // a directory of 80 files, checkpointed: its tree is in the repository
    const dir = 'nodes/t/00';
    const files = Array.from({ length: 80 }, (_, i) => ({ path: `${dir}/task-${String(i).padStart(3, '0')}.md`, content: `task ${i}` }));
    await store.commit({ changes: files, author: ann, message: 'seed', expectedParent: null });
    await store.close();
    store = await openGitStore(gitdir, { checkpointOnClose: false, checkpointIdleMs: 60_000 });
    const heads: string[] = [];
    for (const i of [5, 6, 7]) {
      const r = await store.commit({
        changes: [{ path: files[i]!.path, content: `changed ${i}` }],
        author: ann,
        message: `c${i}`,
        expectedParent: store.head(),
      });
      heads.push(r.commit);
    }
    await store.close(); // as a crash would: the journal keeps the three commits
    const recs = records();
    expect(recs).to.have.length(3);
    for (const rec of recs) {
      const deltas = rec.objects.filter((o) => o.delta !== undefined);
      // the 80-entry tree, and its parent's (256 buckets would be larger still)
      expect(deltas.map((o) => o.type)).to.include('tree');
      for (const o of deltas) expect(o.body.length, 'the tree itself is not in the record').to.equal(0);
    }
    expect(readFileSync(journalPath()).length, 'three one-file commits, not three 80-entry trees').to.be.lessThan(3 * 2000);
    await expectRecovered(heads[2]!, 80);
    const loaded = await store.loadFiles(dir);
    expect(loaded.filter((f) => f.content.startsWith('changed')).map((f) => f.content)).to.deep.equal([
      'changed 5',
      'changed 6',
      'changed 7',
    ]);
  });

  it('opens with an empty or missing journal, and leaves a ref it does not know alone', async () => {
    const c1 = await store.commit({ changes: [{ path: paths[0]!, content: 'x' }], author: ann, message: 'm', expectedParent: null });
    await store.close();
    writeFileSync(journalPath(), '');
    await expectRecovered(c1.commit, 1);
    await store.close();
    rmSync(journalPath());
    await expectRecovered(c1.commit, 1);
    await store.close();
    // a ref moved outside the chain (by someone else) is not overwritten by replay
    const commits = await uncheckpointed();
    const other = gitCli(gitdir, ['commit-tree', '-m', 'elsewhere', `${c1.commit}^{tree}`]).trim();
    expect(commits).to.have.length(3);
    writeFileSync(refPath(), `${other}\n`);
    store = await openGitStore(gitdir);
    expect(store.head()).to.equal(other);
    expect(statSync(journalPath()).size).to.equal(0);
    expect(fsck(gitdir).status).to.equal(0);
  });

  it('opens a repository whose branch `git gc` packed (no loose ref), and commits on from it', async () => {
    const c1 = await store.commit({ changes: [{ path: paths[0]!, content: 'x' }], author: ann, message: 'm', expectedParent: null });
    await store.close();
    gitCli(gitdir, ['gc', '--quiet']);
    expect(existsSync(refPath()), 'git gc packed the branch').to.equal(false);
    expect(readFileSync(join(gitdir, 'packed-refs'), 'utf8')).to.include(`${c1.commit} refs/heads/main`);
    store = await openGitStore(gitdir);
    expect(store.head()).to.equal(c1.commit);
    expect((await store.loadFiles('')).map((f) => f.content)).to.deep.equal(['x']);
    const c2 = await store.commit({ changes: [{ path: paths[1]!, content: 'y' }], author: ann, message: 'm2', expectedParent: c1.commit });
    await store.close(); // the checkpoint moves the (loose again) ref
    expect(gitCli(gitdir, ['rev-parse', 'refs/heads/main']).trim()).to.equal(c2.commit);
    expect(fsck(gitdir).status).to.equal(0);
    store = await openGitStore(gitdir);
    expect(store.head()).to.equal(c2.commit);
  });
});
