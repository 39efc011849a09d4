import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { serializeTree, spliceTree, spliceTreeDelta, treeStarts, type TreeChange } from '../../kernel/git/objects.js';
import { openGitStore } from '../../kernel/git/open.js';
import type { CommitAuthor } from '../../kernel/git/types.js';
import { applyDelta, prefixSuffixDelta, writePack } from '../../kernel/pack-writer.js';

const ann: CommitAuthor = { name: 'Ann Example', email: 'ann@example.com', timestamp: 1_700_000_000 };

function git(gitdir: string, args: string[], input?: string): string {
  return execFileSync('git', ['--git-dir', gitdir, ...args], {
    encoding: 'utf8',
    input,
    maxBuffer: 1 << 26,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

type Listing = Map<string, { mode: string; oid: string }>;

const hex = (n: number) => n.toString(16).padStart(40, '0');

/** A starting listing from generated (name, is a tree) pairs. */
function listingOf(start: Array<[string, boolean]>): Listing {
  return new Map(start.map(([n, isTree], i) => [n, { mode: isTree ? '40000' : '100644', oid: hex(i + 1) }]));
}

/**
 * What the store hands a splice for generated operations: one change per name, the base's mode
 * for it (a name keeps its kind: the store refuses a file where a directory is), new ids from
 * `next`. A delete of a missing name is dropped.
 */
function changesOf(listing: Listing, ops: Array<[string, 'set' | 'delete', boolean]>, next: () => number): Map<string, TreeChange> {
  const changes = new Map<string, TreeChange>();
  for (const [name, op, isTree] of ops) {
    const old = listing.get(name);
    if (op === 'delete' && !old) continue;
    const mode = old ? old.mode : isTree ? '40000' : '100644';
    changes.set(name, { name, entry: op === 'set' ? { mode, oid: hex(next()) } : null, oldMode: old ? old.mode : null });
  }
  return changes;
}

/** `listing` after `changes`, in place. */
function applyTo(listing: Listing, changes: Map<string, TreeChange>): Listing {
  for (const c of changes.values()) {
    if (c.entry) listing.set(c.name, c.entry);
    else listing.delete(c.name);
  }
  return listing;
}

/** The tree git itself builds from a listing (`git mktree` sorts and encodes the entries). */
function mktree(gitdir: string, entries: Listing): string {
  const lines = [...entries].map(([name, e]) => `${e.mode === '40000' ? '040000 tree' : `${e.mode} blob`} ${e.oid}\t${name}`);
  return git(gitdir, ['mktree', '--missing'], lines.length ? `${lines.join('\n')}\n` : '').trim();
}

function treeOid(body: Buffer): string {
  return execFileSync('git', ['hash-object', '-t', 'tree', '--literally', '--stdin'], { input: body, encoding: 'utf8' }).trim();
}

function treeBody(gitdir: string, oid: string): Buffer {
  return execFileSync('git', ['--git-dir', gitdir, 'cat-file', 'tree', oid]);
}

describe('kernel/git: trees spliced per commit, stored as deltas in checkpoint packs', () => {
  let dir: string;
  let gitdir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tree-delta-'));
    gitdir = join(dir, 'g.git');
    execFileSync('git', ['init', '-q', '--bare', gitdir]);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('spliceTree gives the bytes git writes for the changed listing (random names, files and subtrees, adds, replaces, deletes)', () => {
    const nameArb = fc.stringMatching(/^[a-z0-9._ü -]{1,6}$/).filter((n) => n !== '.' && n !== '..');
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(nameArb, fc.boolean()), { selector: (t) => t[0], maxLength: 12 }),
        fc.array(fc.tuple(nameArb, fc.constantFrom<'set' | 'delete'>('set', 'delete'), fc.boolean()), { maxLength: 8 }),
        (start, ops) => {
          const listing = listingOf(start);
          let k = 100;
          const changes = changesOf(listing, ops, () => k++);
          const baseBody = treeBody(gitdir, mktree(gitdir, listing));
          const after = applyTo(new Map(listing), changes);
          const spliced = spliceTree(baseBody, [...changes.values()]);
          expect(treeOid(spliced)).to.equal(mktree(gitdir, after));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a chain of splices, each from the entry table the one before returned, gives serializeTree bytes and the table of its result', () => {
    const nameArb = fc.stringMatching(/^[a-z0-9._ü -]{1,5}$/).filter((n) => n !== '.' && n !== '..');
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(nameArb, fc.boolean()), { selector: (t) => t[0], maxLength: 40 }),
        fc.array(fc.array(fc.tuple(nameArb, fc.constantFrom<'set' | 'delete'>('set', 'set', 'delete'), fc.boolean()), { maxLength: 10 }), {
          minLength: 1,
          maxLength: 6,
        }),
        (start, commits) => {
          const listing = listingOf(start);
          let body = serializeTree(listing);
          let starts: Uint32Array | undefined;
          let k = 1000;
          for (const ops of commits) {
            const changes = changesOf(listing, ops, () => k++);
            const withTable = spliceTreeDelta(body, [...changes.values()], starts);
            const scanned = spliceTreeDelta(body, [...changes.values()]);
            applyTo(listing, changes);
            expect(withTable.body.equals(serializeTree(listing))).to.equal(true);
            expect(scanned.body.equals(withTable.body) && scanned.delta.equals(withTable.delta)).to.equal(true);
            expect([...withTable.starts]).to.deep.equal([...treeStarts(withTable.body)]);
            body = withTable.body;
            starts = withTable.starts;
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('spliceTree reads a subtree whose name begins with a space (its mode is five digits, the name starts where a six-digit mode would end)', () => {
    const listing: Listing = new Map([
      [' a', { mode: '40000', oid: hex(1) }],
      [' b', { mode: '100644', oid: hex(2) }],
      ['a', { mode: '40000', oid: hex(3) }],
      ['c', { mode: '100644', oid: hex(4) }],
    ]);
    const baseBody = treeBody(gitdir, mktree(gitdir, listing));
    const changes: TreeChange[] = [
      { name: ' a', entry: { mode: '40000', oid: hex(5) }, oldMode: '40000' },
      { name: ' c', entry: { mode: '100644', oid: hex(6) }, oldMode: null },
      { name: 'c', entry: null, oldMode: '100644' },
    ];
    const after: Listing = new Map(listing);
    after.set(' a', { mode: '40000', oid: hex(5) });
    after.set(' c', { mode: '100644', oid: hex(6) });
    after.delete('c');
    expect(treeOid(spliceTree(baseBody, changes))).to.equal(mktree(gitdir, after));
  });

  it('applyDelta rebuilds what spliceTreeDelta and prefixSuffixDelta encode (the journal replays trees with it), and refuses a delta for another base', () => {
    const nameArb = fc.stringMatching(/^[a-z0-9._-]{1,8}$/).filter((n) => n !== '.' && n !== '..');
    fc.assert(
      fc.property(
        fc.uniqueArray(nameArb, { minLength: 1, maxLength: 40 }),
        fc.array(fc.tuple(nameArb, fc.boolean()), { minLength: 1, maxLength: 8 }),
        (names, ops) => {
          const base = spliceTree(
            Buffer.alloc(0),
            names.map((name, i) => ({ name, entry: { mode: '100644', oid: hex(i + 1) }, oldMode: null })),
          );
          const changes = new Map<string, TreeChange>();
          ops.forEach(([name, del], i) => {
            const had = names.includes(name);
            if (del && !had) return;
            changes.set(name, { name, entry: del ? null : { mode: '100644', oid: hex(1000 + i) }, oldMode: had ? '100644' : null });
          });
          const { body, delta } = spliceTreeDelta(base, [...changes.values()]);
          expect(applyDelta(base, delta).equals(body)).to.equal(true);
        },
      ),
      { numRuns: 200 },
    );
    // copies of 64 KiB (encoded with no size bytes) and longer, inserts between them
    const a = Buffer.from('x'.repeat(0x10000) + 'MIDDLE' + 'y'.repeat(200_000));
    const b = Buffer.from('x'.repeat(0x10000) + 'another middle' + 'y'.repeat(200_000));
    expect(applyDelta(a, prefixSuffixDelta(a, b)).equals(b)).to.equal(true);
    expect(() => applyDelta(b, prefixSuffixDelta(a, b))).to.throw(/base size/);
  });

  it('prefixSuffixDelta is small for a local change, and git rebuilds the target from it in a pack', async () => {
    const a = Buffer.from('x'.repeat(1000) + 'MIDDLE' + 'y'.repeat(70_000));
    const b = Buffer.from('x'.repeat(1000) + 'other middle part' + 'y'.repeat(70_000));
    expect(prefixSuffixDelta(a, b).length).to.be.lessThan(60);
    const blob = (body: Buffer) => ({
      type: 'blob' as const,
      body,
      oid: execFileSync('git', ['hash-object', '--stdin'], { input: body, encoding: 'utf8' }).trim(),
    });
    const base = blob(a);
    const target = { ...blob(b), deltaBase: base.oid };
    const name = await writePack(gitdir, [base, target], true);
    expect(git(gitdir, ['verify-pack', '-v', join(gitdir, 'objects', 'pack', `${name}.idx`)])).to.match(/chain length = 1: 1 object/);
    expect(execFileSync('git', ['--git-dir', gitdir, 'cat-file', 'blob', target.oid], { maxBuffer: 1 << 24 }).equals(b)).to.equal(true);
  });

  it("a checkpoint stores each commit's trees as deltas against the previous ones, chains capped at 50; git reads, fscks and repacks it", async () => {
    const store = await openGitStore(gitdir, {
      fsync: true,
      checkpointEvery: 100_000,
      checkpointIdleMs: 60_000,
      writeOutLagMs: 60_000,
      packLimit: 0,
    });
    const path = (i: number) => `nodes/task/${(i % 3).toString(16).padStart(2, '0')}/task-${i}.md`;
    // a large directory first, then 80 one-file commits into it
    const first = [];
    for (let i = 0; i < 600; i++) first.push({ path: path(i), content: `node ${i}\n` });
    let head = (await store.commit({ changes: first, author: ann, message: 'seed', expectedParent: null })).commit;
    for (let c = 0; c < 80; c++) {
      head = (
        await store.commit({
          changes: [
            { path: path(3 * c), content: `node ${3 * c} v${c}\n` },
            { path: path(1000 + c), content: `new ${c}\n` },
          ],
          author: ann,
          message: `c${c}`,
          expectedParent: head,
        })
      ).commit;
    }
    await store.settled();
    const packDir = join(gitdir, 'objects', 'pack');
    const idx = readdirSync(packDir).filter((n) => n.endsWith('.idx'));
    expect(idx).to.have.length(1);
    const verify = git(gitdir, ['verify-pack', '-v', join(packDir, idx[0]!)]);
    const chains = [...verify.matchAll(/^chain length = (\d+): (\d+) objects?$/gm)].map((m) => Number(m[1]));
    expect(chains.length, verify.slice(-800)).to.be.greaterThan(0);
    expect(Math.max(...chains)).to.be.within(40, 50);
    const pack = readdirSync(packDir).find((n) => n.endsWith('.pack'))!;
    const whole = 100_000; // the 200-entry directory is ~9 KB: stored whole in each of 80 commits it would be ~800 KB
    expect(spawnSync('du', ['-b', join(packDir, pack)], { encoding: 'utf8' }).stdout.split('\t')[0]).to.satisfy(
      (n: string) => Number(n) < whole,
    );
    expect(git(gitdir, ['rev-parse', 'refs/heads/main']).trim()).to.equal(head);
    expect(git(gitdir, ['cat-file', '-p', `${head}:${path(3 * 79)}`])).to.equal(`node ${3 * 79} v79\n`);
    expect(git(gitdir, ['ls-tree', '-r', '--name-only', head]).trim().split('\n')).to.have.length(680);
    const fsck = spawnSync('git', ['--git-dir', gitdir, 'fsck', '--full', '--strict', '--no-dangling'], { encoding: 'utf8' });
    expect(fsck.status, fsck.stderr).to.equal(0);
    // the store reads its own deltified trees back (cold tree cache after reopening)
    await store.close();
    const again = await openGitStore(gitdir, { fsync: true, packLimit: 0 });
    const files = await again.loadFiles('nodes/task/01');
    expect(files.find((f) => f.path === path(3 * 79 + 1))?.content).to.equal(`node ${3 * 79 + 1}\n`);
    const next = await again.commit({
      changes: [{ path: path(5), content: 'five again\n' }],
      author: ann,
      message: 'after reopen',
      expectedParent: head,
    });
    expect((await again.diffFiles(head, next.commit, 'nodes/')).map((f) => f.path)).to.deep.equal([path(5)]);
    await again.close();
    git(gitdir, ['repack', '-a', '-d', '-q']);
    expect(git(gitdir, ['cat-file', '-p', `${next.commit}:${path(5)}`])).to.equal('five again\n');
  });
});
