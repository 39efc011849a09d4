import { expect } from 'chai';
import { isSvcError } from '../../../kernel/errors.js';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeFileAtomicSync, writeFileDurable } from '../../../kernel/durable-fs.js';
import { JOURNAL_NAME } from '../../../kernel/commit-journal.js';
import { nodePath } from '../../../kernel/git/objects.js';
import { openGitStore } from '../../../kernel/git/open.js';
import { HeadMismatchError, type CommitAuthor, type GitStore } from '../../../kernel/git/types.js';
import { writePack, type PackObject } from '../../../kernel/pack-writer.js';
import { until } from '../../helpers/until.js';
import { ann, fsck, gitCli } from './helpers.js';

/** A loose-object/ref writer that throws for matching paths while `armed`. */
function failingWriter(shouldFail: (path: string) => boolean): {
  writeFile(path: string, data: Buffer | string): void;
  arm(on: boolean): void;
  armed(): boolean;
  failures(): number;
} {
  let armed = false;
  let failures = 0;
  return {
    writeFile(path, data) {
      if (armed && shouldFail(path)) {
        failures++;
        throw Object.assign(new Error(`injected failure writing ${path}`), { code: 'EIO' });
      }
      writeFileAtomicSync(path, data);
    },
    arm: (on) => (armed = on),
    armed: () => armed,
    failures: () => failures,
  };
}

describe('kernel/git/store', function () {
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

  it('nodePath shards by the first two hex digits of sha1(id)', () => {
    const h2 = createHash('sha1').update('task-1').digest('hex').slice(0, 2);
    expect(nodePath('task', 'task-1')).to.equal(`nodes/task/${h2}/task-1.md`);
    expect(() => nodePath('task', 'a/b')).to.throw();
    expect(() => nodePath('', 'x')).to.throw();
  });

  it('creates a bare repo that git accepts, with HEAD -> main', async () => {
    expect(store.head()).to.equal(null);
    expect(gitCli(gitdir, ['rev-parse', '--is-bare-repository']).trim()).to.equal('true');
    expect(gitCli(gitdir, ['symbolic-ref', 'HEAD']).trim()).to.equal('refs/heads/main');
    expect(await store.loadFiles('nodes/')).to.deep.equal([]);
    expect(await store.listFiles('')).to.deep.equal([]);
  });

  it('creates, updates and deletes files; blobs map and head move', async () => {
    const p1 = nodePath('task', 't1');
    const p2 = nodePath('task', 't2');
    const c1 = await store.commit({
      changes: [
        { path: p1, content: 'one\n' },
        { path: p2, content: 'two\n' },
      ],
      author: ann,
      message: 'create t1 t2',
      expectedParent: null,
    });
    expect(store.head()).to.equal(c1.commit);
    expect(c1.blobs).to.deep.equal({ [p1]: store.blobOid('one\n'), [p2]: store.blobOid('two\n') });
    await store.settled(); // git processes see acknowledged commits once written out
    expect(gitCli(gitdir, ['rev-parse', 'refs/heads/main']).trim()).to.equal(c1.commit);

    const c2 = await store.commit({
      changes: [
        { path: p1, content: 'one v2\n' },
        { path: p2, content: null },
      ],
      author: ann,
      message: 'update t1, delete t2',
      expectedParent: c1.commit,
    });
    expect(c2.blobs).to.deep.equal({ [p1]: store.blobOid('one v2\n'), [p2]: null });
    expect(store.head()).to.equal(c2.commit);
    await store.settled(); // git processes see acknowledged commits once written out
    expect(gitCli(gitdir, ['rev-parse', 'HEAD^']).trim()).to.equal(c1.commit);
    const files = await store.loadFiles('nodes/');
    expect(files).to.deep.equal([{ path: p1, oid: store.blobOid('one v2\n'), content: 'one v2\n' }]);
    expect(await store.listFiles('nodes')).to.deep.equal([{ path: p1, oid: store.blobOid('one v2\n') }]);
    expect(await store.readBlob(store.blobOid('one\n'))).to.equal('one\n');
  });

  it('blobOid matches git hash-object', () => {
    const text = 'héllo wörld ✓ 😀\n';
    expect(store.blobOid(text)).to.equal(gitCli(gitdir, ['hash-object', '--stdin'], text).trim());
  });

  it('stays fsck --strict clean over many commits; git log and git show agree', async () => {
    const model = new Map<string, string>();
    let rnd = 12345;
    const rand = (n: number): number => (rnd = (rnd * 1103515245 + 12345) & 0x7fffffff) % n;
    const types = ['task', 'person', 'goal'];
    for (let i = 0; i < 40; i++) {
      const changes: Array<{ path: string; content: string | null }> = [];
      const used = new Set<string>();
      for (let k = 0; k < 1 + rand(3); k++) {
        const path = nodePath(types[rand(3)]!, `n${rand(25)}`);
        if (used.has(path)) continue;
        used.add(path);
        if (model.has(path) && rand(3) === 0) {
          changes.push({ path, content: null });
          model.delete(path);
        } else {
          const content = `---\nid: x\nrev: ${i}\n---\nbody ${i} — ü\n`;
          changes.push({ path, content });
          model.set(path, content);
        }
      }
      await store.commit({
        changes,
        author: { name: `Person ${i % 3}`, email: `p${i % 3}@example.com` },
        message: `op ${i}`,
        expectedParent: store.head(),
      });
    }
    await store.settled(); // git processes see acknowledged commits once written out
    const r = fsck(gitdir);
    expect(r.output).to.equal('');
    expect(r.status).to.equal(0);

    const log = gitCli(gitdir, ['log', '--format=%an|%ae|%s']).trim().split('\n');
    expect(log).to.have.length(40);
    expect(log[0]).to.equal('Person 0|p0@example.com|op 39');
    expect(log[39]).to.equal('Person 0|p0@example.com|op 0');

    const files = await store.loadFiles('nodes/');
    expect(new Map(files.map((f) => [f.path, f.content]))).to.deep.equal(model);
    for (const [path, content] of [...model].slice(0, 5)) {
      expect(gitCli(gitdir, ['show', `HEAD:${path}`])).to.equal(content);
    }
  });

  it('writes author, committer, timezone and message as git reads them', async () => {
    const bob: CommitAuthor = { name: 'Bob <b>', email: 'bob@example.com', timestamp: 1_700_000_100, timezoneOffset: 330 };
    await store.commit({
      changes: [{ path: nodePath('task', 'a'), content: 'a' }],
      author: ann,
      committer: bob,
      message: 'create a\n\ninternal: true',
      expectedParent: null,
    });
    await store.settled(); // git processes see acknowledged commits once written out
    const out = gitCli(gitdir, ['log', '-1', '--format=%an|%ae|%at|%ai|%cn|%ce|%ci|%B']);
    expect(out).to.equal(
      'Ann Example|ann@example.com|1700000000|2023-11-15 00:13:20 +0200|Bob b|bob@example.com|2023-11-14 16:45:00 -0530|create a\n\ninternal: true\n\n',
    );
    expect(fsck(gitdir).status).to.equal(0);
  });

  it('rejects an expectedParent mismatch and leaves head', async () => {
    const c1 = await store.commit({
      changes: [{ path: 'nodes/x/00/a.md', content: 'a' }],
      author: ann,
      message: 'm',
      expectedParent: null,
    });
    let err: unknown;
    await store
      .commit({ changes: [{ path: 'nodes/x/00/b.md', content: 'b' }], author: ann, message: 'm', expectedParent: null })
      .catch((e: unknown) => (err = e));
    expect(err).to.be.instanceOf(HeadMismatchError);
    err = undefined;
    await store
      .commit({ changes: [{ path: 'nodes/x/00/b.md', content: 'b' }], author: ann, message: 'm', expectedParent: '0'.repeat(40) })
      .catch((e: unknown) => (err = e));
    expect(err).to.be.instanceOf(HeadMismatchError);
    expect(store.head()).to.equal(c1.commit);
    await store.settled(); // git processes see acknowledged commits once written out
    expect(gitCli(gitdir, ['rev-parse', 'HEAD']).trim()).to.equal(c1.commit);
    expect((await store.listFiles('')).map((f) => f.path)).to.deep.equal(['nodes/x/00/a.md']);
  });

  it('rejects empty change lists, bad paths, and deleting missing files', async () => {
    const bad = [
      [],
      [{ path: '/abs.md', content: 'x' }],
      [{ path: 'a/../b.md', content: 'x' }],
      [{ path: 'a/.git/b', content: 'x' }],
      [{ path: 'nodes/x/00/missing.md', content: null }],
      [
        { path: 'a.md', content: 'x' },
        { path: 'a.md', content: 'y' },
      ],
    ];
    for (const changes of bad) {
      let failed = false;
      await store.commit({ changes, author: ann, message: 'm', expectedParent: null }).catch(() => (failed = true));
      expect(failed, JSON.stringify(changes)).to.equal(true);
    }
    expect(store.head()).to.equal(null);
  });

  it('removes a directory when its last file is deleted', async () => {
    const a = nodePath('task', 'only');
    const b = nodePath('person', 'p1');
    const c1 = await store.commit({
      changes: [
        { path: a, content: 'a' },
        { path: b, content: 'b' },
      ],
      author: ann,
      message: 'two',
      expectedParent: null,
    });
    await store.commit({ changes: [{ path: a, content: null }], author: ann, message: 'del', expectedParent: c1.commit });
    await store.settled(); // git processes see acknowledged commits once written out
    const trees = gitCli(gitdir, ['ls-tree', '-r', '-t', '--name-only', 'HEAD']).trim().split('\n');
    expect(trees).to.deep.equal(['nodes', 'nodes/person', b.split('/').slice(0, 3).join('/'), b]);
    // and everything: the root becomes the empty tree
    await store.commit({ changes: [{ path: b, content: null }], author: ann, message: 'del all', expectedParent: store.head() });
    await store.settled();
    expect(gitCli(gitdir, ['ls-tree', '-r', '-t', 'HEAD']).trim()).to.equal('');
    expect(fsck(gitdir).status).to.equal(0);
    // and recreate afterwards
    await store.commit({ changes: [{ path: a, content: 'again' }], author: ann, message: 'again', expectedParent: store.head() });
    await store.settled();
    expect(gitCli(gitdir, ['show', `HEAD:${a}`])).to.equal('again');
    expect(fsck(gitdir).status).to.equal(0);
  });

  it('refuses a file where a directory is (and vice versa)', async () => {
    await store.commit({ changes: [{ path: 'nodes/a', content: 'file' }], author: ann, message: 'm', expectedParent: null });
    let failed = 0;
    await store
      .commit({ changes: [{ path: 'nodes/a/b.md', content: 'x' }], author: ann, message: 'm', expectedParent: store.head() })
      .catch(() => failed++);
    await store
      .commit({ changes: [{ path: 'nodes', content: 'x' }], author: ann, message: 'm', expectedParent: store.head() })
      .catch(() => failed++);
    expect(failed).to.equal(2);
  });

  for (const where of ['object', 'ref'] as const) {
    /** fails the third object file written, or the ref */
    const victimOf = (): ((p: string) => boolean) => {
      let objectWrites = 0;
      let victim = '';
      return (p) => {
        if (where === 'ref') return p.endsWith('/refs/heads/main');
        if (!p.includes('/objects/')) return false;
        if (++objectWrites === 3) victim = p;
        return p === victim;
      };
    };
    const a = 'nodes/t/00/a.md';
    const b = 'nodes/t/00/b.md';
    const c = 'nodes/t/00/c.md';
    const other = 'nodes/u/11/o.md';
    const second = (parent: string) => ({
      changes: [
        { path: a, content: 'a2' },
        { path: b, content: 'b2' },
        { path: other, content: null },
      ],
      author: ann,
      message: 'second',
      expectedParent: parent,
    });
    const first = {
      changes: [
        { path: a, content: 'a1' },
        { path: other, content: 'o1' },
      ],
      author: ann,
      message: 'c1',
      expectedParent: null,
    };

    it(`without a journal: a failed ${where} write fails the commit and leaves head and tree cache unchanged`, async () => {
      await store.close();
      const fw = failingWriter(victimOf());
      store = await openGitStore(gitdir, { fsync: false, writeFile: fw.writeFile });
      const c1 = await store.commit(first);
      fw.arm(true);
      let err: unknown;
      await store.commit(second(c1.commit)).catch((e: unknown) => (err = e));
      fw.arm(false);
      expect(fw.failures()).to.be.greaterThan(0);
      expect(String(err)).to.contain('injected failure');
      expect(store.head()).to.equal(c1.commit);
      expect(gitCli(gitdir, ['rev-parse', 'HEAD']).trim()).to.equal(c1.commit);

      // the next commit builds on c1's trees, not on the failed overlay
      await store.commit({ changes: [{ path: c, content: 'c3' }], author: ann, message: 'c3', expectedParent: c1.commit });
      const files = await store.loadFiles('');
      expect(files.map((f) => [f.path, f.content])).to.deep.equal([
        [a, 'a1'],
        [c, 'c3'],
        [other, 'o1'],
      ]);
      expect(fsck(gitdir).status).to.equal(0);
    });

    it(`with the journal: a failed ${where} write-out after the acknowledgement stops commits; reopening recovers every acknowledged one`, async () => {
      await store.close();
      const fw = failingWriter(victimOf());
      let packFailures = 0;
      const failingPack = async (dir: string, objects: PackObject[], durable: boolean): Promise<string> => {
        if (where === 'object' && fw.armed()) {
          packFailures++;
          throw Object.assign(new Error('injected failure writing a pack'), { code: 'EIO' });
        }
        return writePack(dir, objects, durable);
      };
      store = await openGitStore(gitdir, {
        writeFile: fw.writeFile,
        writePack: failingPack,
        checkpointIdleMs: 60_000,
        writeOutLagMs: 60_000,
      });
      const c1 = await store.commit(first);
      await store.settled();
      fw.arm(true);
      const c2 = await store.commit(second(c1.commit)); // acknowledged: the journal has it
      expect(store.head()).to.equal(c2.commit);
      await store.settled();
      fw.arm(false);
      expect(fw.failures() + packFailures).to.be.greaterThan(0);
      // reads still answer from memory; further commits are refused until the store is reopened
      expect((await store.readBlob(c2.blobs[b]!)).toString()).to.equal('b2');
      let err: unknown;
      await store
        .commit({ changes: [{ path: c, content: 'c3' }], author: ann, message: 'c3', expectedParent: c2.commit })
        .catch((e: unknown) => (err = e));
      expect(String(err)).to.contain('needs reopening');
      expect(isSvcError(err) && err.status === 503 && err.code === 'storage_unavailable', String(err)).to.equal(true);
      await store.close();

      store = await openGitStore(gitdir);
      expect(store.head()).to.equal(c2.commit);
      expect(gitCli(gitdir, ['rev-parse', 'HEAD']).trim()).to.equal(c2.commit);
      const files = await store.loadFiles('');
      expect(files.map((f) => [f.path, f.content])).to.deep.equal([
        [a, 'a2'],
        [b, 'b2'],
      ]);
      expect(fsck(gitdir).status).to.equal(0);
    });
  }

  it('git processes see acknowledged commits after settled(), and on their own after the write-out lag', async () => {
    await store.close();
    store = await openGitStore(gitdir, { writeOutLagMs: 50, checkpointIdleMs: 60_000 });
    const c1 = await store.commit({
      changes: [{ path: 'nodes/t/00/a.md', content: 'one' }],
      author: ann,
      message: 'm',
      expectedParent: null,
    });
    const c2 = await store.commit({
      changes: [{ path: 'nodes/t/00/a.md', content: 'two' }],
      author: ann,
      message: 'm',
      expectedParent: c1.commit,
    });
    // in-process reads never wait
    expect(await store.readBlob(c2.blobs['nodes/t/00/a.md']!)).to.equal('two');
    // the write-out lag (50 ms) moves the ref on its own: waited for, not slept on
    const gitHead = () => {
      try {
        return gitCli(gitdir, ['rev-parse', 'HEAD']).trim();
      } catch {
        return null; // no ref written yet
      }
    };
    await until(() => gitHead() === c2.commit, 'the write-out lag', 15_000);
    const c3 = await store.commit({
      changes: [{ path: 'nodes/t/00/a.md', content: 'three' }],
      author: ann,
      message: 'm',
      expectedParent: c2.commit,
    });
    await store.settled();
    expect(gitCli(gitdir, ['show', 'HEAD:nodes/t/00/a.md'])).to.equal('three');
    expect(gitCli(gitdir, ['rev-parse', 'HEAD']).trim()).to.equal(c3.commit);
    // runGit-backed reads settle by themselves
    const c4 = await store.commit({
      changes: [{ path: 'nodes/t/00/b.md', content: 'b' }],
      author: ann,
      message: 'm',
      expectedParent: c3.commit,
    });
    expect((await store.listFiles('nodes/')).map((f) => f.path)).to.deep.equal(['nodes/t/00/a.md', 'nodes/t/00/b.md']);
    expect(gitCli(gitdir, ['rev-parse', 'HEAD']).trim()).to.equal(c4.commit);
    expect(fsck(gitdir).status).to.equal(0);
  });

  it('packs accumulate one per write-out and a background geometric repack merges them; everything stays readable', async () => {
    await store.close();
    store = await openGitStore(gitdir, { checkpointEvery: 1, packLimit: 4, checkpointIdleMs: 60_000, writeOutLagMs: 60_000 });
    const written = new Map<string, string>();
    for (let i = 0; i < 12; i++) {
      const path = nodePath('task', `p${i % 5}`);
      written.set(path, `v${i}`);
      await store.commit({ changes: [{ path, content: `v${i}` }], author: ann, message: `m${i}`, expectedParent: store.head() });
    }
    await store.close(); // waits for a repack in progress
    const packs = readdirSync(join(gitdir, 'objects', 'pack')).filter((n) => n.endsWith('.pack'));
    expect(packs.length).to.be.lessThan(12);
    expect(fsck(gitdir).status).to.equal(0);
    // a fresh store reads its trees out of the merged packs and commits on top of them
    store = await openGitStore(gitdir);
    const c = await store.commit({
      changes: [{ path: nodePath('task', 'p0'), content: 'after' }],
      author: ann,
      message: 'after',
      expectedParent: store.head(),
    });
    written.set(nodePath('task', 'p0'), 'after');
    expect(new Map((await store.loadFiles('nodes/')).map((f) => [f.path, f.content]))).to.deep.equal(written);
    expect(await store.readBlob(c.blobs[nodePath('task', 'p0')]!)).to.equal('after');
    await store.settled();
    expect(gitCli(gitdir, ['rev-list', '--count', 'HEAD']).trim()).to.equal('13');
    expect(fsck(gitdir).status).to.equal(0);
  });

  it('close() while write-outs are queued by readers and the lag timer: one clean stop, everything written', async () => {
    await store.close();
    store = await openGitStore(gitdir, { writeOutLagMs: 1, checkpointIdleMs: 2 });
    const commits: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await store.commit({
        changes: [{ path: nodePath('task', `c${i}`), content: `${i}` }],
        author: ann,
        message: `m${i}`,
        expectedParent: store.head(),
      });
      commits.push(r.commit);
    }
    const racing = [store.settled(), store.close(), store.settled(), new Promise((r) => setTimeout(r, 5)).then(() => store.settled())];
    await Promise.all(racing);
    expect(statSync(join(gitdir, JOURNAL_NAME)).size).to.equal(0);
    expect(gitCli(gitdir, ['rev-parse', 'HEAD']).trim()).to.equal(commits[4]);
    expect(fsck(gitdir).status).to.equal(0);
    store = await openGitStore(gitdir);
    expect(store.head()).to.equal(commits[4]);
  });

  it('reopens an existing repo with the same head and files', async () => {
    const c1 = await store.commit({
      changes: [
        { path: nodePath('task', 'r1'), content: 'r1' },
        { path: nodePath('task', 'r2'), content: 'r2' },
      ],
      author: ann,
      message: 'm',
      expectedParent: null,
    });
    const before = await store.loadFiles('nodes/');
    await store.close();
    store = await openGitStore(gitdir);
    expect(store.head()).to.equal(c1.commit);
    expect(await store.loadFiles('nodes/')).to.deep.equal(before);
    const c2 = await store.commit({
      changes: [{ path: nodePath('task', 'r1'), content: null }],
      author: ann,
      message: 'm',
      expectedParent: c1.commit,
    });
    await store.settled(); // git processes see acknowledged commits once written out
    expect(gitCli(gitdir, ['ls-tree', '-r', '--name-only', c2.commit]).trim()).to.equal(nodePath('task', 'r2'));
  });

  it('refuses to open a non-empty directory that is not a repo', async () => {
    await writeFileDurable(join(tmp, 'x'), 'x');
    let failed = false;
    await openGitStore(tmp).catch(() => (failed = true));
    expect(failed).to.equal(true);
    expect(existsSync(join(tmp, 'HEAD'))).to.equal(false);
  });

  it('loadFiles returns multibyte content intact, loose and packed', async () => {
    const big = ('αβγ—😀漢字ü'.repeat(7000) + 'x').slice(0, 70_001); // > one 64 KiB pipe chunk, odd byte boundaries
    const texts = ['plain', 'ünïcödé ✓', '😀😃😄 emoji', '漢字かな', big, '', 'line1\nline2\n'];
    const changes = texts.map((t, i) => ({ path: nodePath('task', `m${i}`), content: t }));
    const c1 = await store.commit({ changes, author: ann, message: 'multibyte', expectedParent: null });
    const expected = new Map(changes.map((c) => [c.path, c.content]));
    const check = async (s: GitStore): Promise<void> => {
      const files = await s.loadFiles('nodes/');
      expect(files).to.have.length(texts.length);
      expect(new Map(files.map((f) => [f.path, f.content]))).to.deep.equal(expected);
      for (const f of files) expect(f.oid).to.equal(s.blobOid(f.content));
    };
    await check(store);

    // pack everything: the loose files are gone, reads go through git cat-file / pack reading
    await store.close();
    gitCli(gitdir, ['gc', '--quiet']);
    expect(gitCli(gitdir, ['count-objects', '-v'])).to.match(/^count: 0$/m);
    store = await openGitStore(gitdir);
    expect(store.head()).to.equal(c1.commit);
    await check(store);
    const d = await store.diffFiles(null, c1.commit, 'nodes/task');
    expect(d).to.have.length(texts.length);
    // committing on top of packed trees works too
    const c2 = await store.commit({
      changes: [{ path: nodePath('task', 'm0'), content: 'plain 2' }],
      author: ann,
      message: 'm',
      expectedParent: c1.commit,
    });
    expect(await store.diffFiles(c1.commit, c2.commit, 'nodes/')).to.deep.equal([
      { path: nodePath('task', 'm0'), oid: store.blobOid('plain 2'), content: 'plain 2' },
    ]);
    expect(fsck(gitdir).status).to.equal(0);
  });

  it('diffFiles reports added, modified and deleted files under a prefix', async () => {
    const keep = nodePath('task', 'keep');
    const mod = nodePath('task', 'mod');
    const del = nodePath('goal', 'del');
    const c1 = await store.commit({
      changes: [
        { path: keep, content: 'k' },
        { path: mod, content: 'm1' },
        { path: del, content: 'd' },
        { path: 'README.md', content: 'outside' },
      ],
      author: ann,
      message: 'c1',
      expectedParent: null,
    });
    const add = nodePath('person', 'add');
    const c2 = await store.commit({
      changes: [
        { path: mod, content: 'm2 ✓' },
        { path: del, content: null },
        { path: add, content: 'new' },
        { path: 'README.md', content: 'changed outside' },
      ],
      author: ann,
      message: 'c2',
      expectedParent: c1.commit,
    });
    const sortByPath = <T extends { path: string }>(xs: T[]): T[] => [...xs].sort((x, y) => (x.path < y.path ? -1 : 1));
    expect(sortByPath(await store.diffFiles(c1.commit, c2.commit, 'nodes/'))).to.deep.equal(
      sortByPath([
        { path: mod, oid: store.blobOid('m2 ✓'), content: 'm2 ✓' },
        { path: del, oid: null, content: null },
        { path: add, oid: store.blobOid('new'), content: 'new' },
      ]),
    );
    expect(await store.diffFiles(c1.commit, c2.commit, 'nodes/goal')).to.deep.equal([{ path: del, oid: null, content: null }]);
    expect(await store.diffFiles(c2.commit, c2.commit, 'nodes/')).to.deep.equal([]);
    expect((await store.diffFiles(c1.commit, c2.commit, '')).map((x) => x.path)).to.include('README.md');
    // backwards works too
    expect(sortByPath(await store.diffFiles(c2.commit, c1.commit, 'nodes/')).map((x) => [x.path, x.content])).to.deep.equal(
      sortByPath([
        { path: mod, content: 'm1' },
        { path: del, content: 'd' },
        { path: add, content: null },
      ]).map((x) => [x.path, x.content]),
    );
    // from null: everything under the prefix
    expect(sortByPath(await store.diffFiles(null, c2.commit, 'nodes/')).map((x) => x.path)).to.deep.equal([add, mod, keep].sort());
    let failed = false;
    await store.diffFiles('1'.repeat(40), c2.commit, 'nodes/').catch(() => (failed = true));
    expect(failed).to.equal(true);
  });

  it('serializes concurrent commits through the expectedParent guard', async () => {
    const c1 = await store.commit({
      changes: [{ path: 'nodes/a/00/x.md', content: '0' }],
      author: ann,
      message: 'm',
      expectedParent: null,
    });
    const results = await Promise.allSettled(
      [1, 2, 3].map((i) =>
        store.commit({ changes: [{ path: 'nodes/a/00/x.md', content: String(i) }], author: ann, message: 'm', expectedParent: c1.commit }),
      ),
    );
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'rejected']);
    await store.settled(); // git processes see acknowledged commits once written out
    expect(gitCli(gitdir, ['show', 'HEAD:nodes/a/00/x.md'])).to.equal('1');
  });
});
