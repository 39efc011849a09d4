/**
 * The on-disk commit index (plugins/history/commit-store.ts) on its own: memory that does not
 * grow with history, crash recovery of its three files and its snapshot, prefix lookups, the
 * id index of bulk commits, and the per-node shortcuts the change feed uses.
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { appendFileSync, closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, truncateSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CommitStore } from '../../../plugins/history/commit-store.js';
import type { NewCommit } from '../../../plugins/history/commit-record.js';

const sha = (s: string) => createHash('sha1').update(s).digest('hex');
const T0 = 1_735_787_045_000;

/** Commit `i` of a synthetic history: it edits `ids(i)` (adds each on its first edit). */
function commit(i: number, ids: string[], seen: Set<string>, parent: string | null): NewCommit {
  return {
    sha: sha(`commit ${i}`),
    parent,
    dateMs: T0 + i * 1000,
    authorName: 'Ada Writer',
    authorEmail: 'ada@example.test',
    subject: `set_status: ${ids.join(', ')}`,
    person: 'person-ada',
    agent: null,
    via: 'rest',
    op: 'set_status',
    internal: i % 7 === 0,
    changes: ids.map((id) => {
      const added = !seen.has(id);
      seen.add(id);
      return {
        id,
        change: added ? 'A' : 'M',
        path: `nodes/task/${id.slice(-2)}/${id}.md`,
        oldPath: null,
        blob: sha(`${id} ${i}`),
        oldBlob: added ? null : sha(`${id} before ${i}`),
        previous: -1,
      };
    }),
  };
}

/** Appends commits from..to-1, each editing one of `nodes` ids in turn. */
function fill(store: CommitStore, from: number, to: number, nodes: number, seen: Set<string>): void {
  for (let i = from; i < to; i++) store.append(commit(i, [`task-n${String(i % nodes).padStart(3, '0')}`], seen, store.headSha));
}

function gc(): () => void {
  setFlagsFromString('--expose-gc');
  const collect = runInNewContext('gc') as () => void;
  return () => {
    for (let k = 0; k < 3; k++) collect();
  };
}

describe('history: the on-disk commit index (commit-store.ts)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'wg-commit-store-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('holds no memory per commit: the heap after 5N commits on the same nodes is within a small bound of the heap after N', async () => {
    const collect = gc();
    const store = CommitStore.open(dir);
    const seen = new Set<string>();
    const N = 4_000;
    fill(store, 0, N, 10, seen);
    collect();
    const afterN = process.memoryUsage().heapUsed;
    fill(store, N, 5 * N, 10, seen);
    collect();
    const after5N = process.memoryUsage().heapUsed;
    // the in-memory index of the past held about 1.1 KB a commit: 17 MB for these 16,000 commits
    expect(after5N - afterN).to.be.below(512 * 1024);
    expect(store.count).to.equal(5 * N);
    expect(store.nodeStats('task-n003')).to.deep.equal({ newest: 5 * N - 7, count: (5 * N) / 10 });
    await store.close();
  });

  it('walks a node newest first along its links, and reads commits by seq and newest first', async () => {
    const store = CommitStore.open(dir);
    const seen = new Set<string>();
    fill(store, 0, 300, 7, seen);
    const changes = [...store.changesOf('task-n002')];
    expect(changes.map((c) => c.commit.seq)).to.deep.equal(Array.from({ length: 43 }, (_, k) => 296 - 7 * k));
    expect(changes[changes.length - 1]!.change).to.equal('A');
    expect(changes[0]!.previous).to.equal(289);
    const c = store.commitAt(296);
    expect(c).to.include({ seq: 296, sha: sha('commit 296'), parent: sha('commit 295'), internal: false, person: 'person-ada' });
    expect(c.date).to.equal(new Date(T0 + 296_000).toISOString());
    expect([...store.newestFirst()].map((x) => x.seq)).to.deep.equal(Array.from({ length: 300 }, (_, k) => 299 - k));
    const scanned: number[] = [];
    store.scan(100, 140, (x) => {
      scanned.push(x.seq);
      return x.seq < 130;
    });
    expect(scanned).to.deep.equal(Array.from({ length: 31 }, (_, k) => 100 + k));
    await store.close();
  });

  it('reopens from its snapshot, and without one reads every record: the same per-node table either way', async () => {
    const seen = new Set<string>();
    let store = CommitStore.open(dir);
    fill(store, 0, 500, 13, seen);
    await store.close(); // checkpoint: records synced, snapshot of 500
    store = CommitStore.open(dir);
    expect(store.report).to.include({ replayed: 0, truncated: false, fresh: false });
    fill(store, 500, 620, 13, seen);
    await store.close(true); // as a crash would leave it: records after the snapshot, no new snapshot
    store = CommitStore.open(dir);
    expect(store.report.replayed).to.equal(120);
    const fromSnapshot = Array.from({ length: 13 }, (_, k) => store.nodeStats(`task-n${String(k).padStart(3, '0')}`));
    await store.close(true);
    rmSync(join(dir, 'nodes.snap'));
    store = CommitStore.open(dir);
    expect(store.report.replayed).to.equal(620);
    expect(Array.from({ length: 13 }, (_, k) => store.nodeStats(`task-n${String(k).padStart(3, '0')}`))).to.deep.equal(fromSnapshot);
    await store.close();
  });

  it('a torn tail is cut at open: a half-written record, and table entries without their record', async () => {
    const seen = new Set<string>();
    let store = CommitStore.open(dir);
    fill(store, 0, 50, 5, seen);
    await store.close(true);
    // the last record loses its end; the sha table has a partial entry past it
    truncateSync(join(dir, 'commits.dat'), statSync(join(dir, 'commits.dat')).size - 3);
    appendFileSync(join(dir, 'commits.sha'), Buffer.alloc(7, 0xab));
    store = CommitStore.open(dir);
    expect(store.report.truncated).to.equal(true);
    expect(store.count).to.equal(49);
    expect(store.headSha).to.equal(sha('commit 48'));
    expect(statSync(join(dir, 'commits.sha')).size).to.equal(49 * 20);
    // appending goes on from the cut, and the result reads back whole after another open
    fill(store, 49, 60, 5, new Set(Array.from({ length: 5 }, (_, k) => `task-n00${k}`)));
    await store.close(true);
    store = CommitStore.open(dir);
    expect(store.report.truncated).to.equal(false);
    expect(store.count).to.equal(60);
    expect([...store.changesOf('task-n004')].map((c) => c.commit.seq)).to.deep.equal([59, 54, 49, 44, 39, 34, 29, 24, 19, 14, 9, 4]);
    await store.close();
  });

  it('garbage in place of a record after the snapshot ends the index there (checksum)', async () => {
    const seen = new Set<string>();
    let store = CommitStore.open(dir);
    fill(store, 0, 20, 3, seen);
    await store.close();
    store = CommitStore.open(dir);
    fill(store, 20, 30, 3, seen);
    await store.close(true);
    // flip a byte inside record 25's payload
    const at = readFileSync(join(dir, 'commits.off')).readUIntLE(25 * 12, 6) + 8 + 30;
    const fd = openSync(join(dir, 'commits.dat'), 'r+');
    writeSync(fd, Buffer.from([0x5a]), 0, 1, at);
    closeSync(fd);
    store = CommitStore.open(dir);
    expect(store.count).to.equal(25);
    expect(store.report).to.include({ replayed: 5, truncated: true });
    await store.close();
  });

  it('finds shas by prefix (odd lengths too) as a brute-force scan does, and a full sha from the newest end', async () => {
    const store = CommitStore.open(dir);
    fill(store, 0, 2_000, 50, new Set());
    const all = Array.from({ length: 2_000 }, (_, i) => sha(`commit ${i}`));
    for (const i of [0, 7, 999, 1_999]) {
      for (const len of [1, 2, 3, 7, 8, 11, 40]) {
        const prefix = all[i]!.slice(0, len);
        const expected = all.flatMap((s, seq) => (s.startsWith(prefix) ? [seq] : []));
        expect(store.findPrefix(prefix), prefix).to.deep.equal(expected);
      }
      expect(store.findPrefix(all[i]!, true)).to.deep.equal([i]);
    }
    expect(store.findPrefix('0000000000000000000000000000000000000000', true)).to.deep.equal([]);
    expect(store.findPrefix('not hex')).to.deep.equal([]);
    await store.close();
  });

  it('a bulk commit carries an id index: one node of it is read without its other changes, with the same answer', async () => {
    const store = CommitStore.open(dir);
    const seen = new Set<string>();
    const ids = Array.from({ length: 3_000 }, (_, k) => `task-bulk-${String(k).padStart(4, '0')}-${'x'.repeat(20)}`);
    store.append(commit(0, ids, seen, null));
    store.append(commit(1, [ids[1234]!], seen, store.headSha));
    const full = store.commitAt(0);
    expect(full.changes).to.have.length(3_000);
    for (const k of [0, 1234, 2999]) {
      const hits = store.changesIn(0, ids[k]!);
      expect(hits).to.have.length(1);
      const { commit: by, ...change } = hits[0]!;
      const { commit: fullBy, ...fullChange } = full.changes[k]!;
      expect(change).to.deep.equal(fullChange);
      expect(by).to.deep.include({ seq: fullBy.seq, sha: fullBy.sha, date: fullBy.date, subject: fullBy.subject });
    }
    expect(store.changesIn(0, 'task-not-there')).to.deep.equal([]);
    expect([...store.changesOf(ids[1234]!)].map((c) => [c.commit.seq, c.change])).to.deep.equal([
      [1, 'M'],
      [0, 'A'],
    ]);
    await store.close();
  });

  it('newestBefore and newestChanges agree with a newest-first walk of every commit', async () => {
    const store = CommitStore.open(dir);
    const seen = new Set<string>();
    // commits touching one to three of 40 nodes, some twice in a row
    for (let i = 0; i < 400; i++) {
      const ids = [...new Set([i % 40, (i * 7) % 40, (i * 13) % 11].slice(0, 1 + (i % 3)).map((k) => `task-m${k}`))];
      store.append(commit(i, ids, seen, store.headSha));
    }
    const walk = (after: number, before: number, skip: Set<string>) => {
      const met = new Set(skip);
      const out: Array<[number, string]> = [];
      for (const c of store.newestFirst()) {
        if (c.seq >= before) {
          // the walk met these nodes already, above `before`
          for (const ch of c.changes) met.add(ch.id);
          continue;
        }
        if (c.seq <= after) break;
        for (const ch of c.changes) {
          if (met.has(ch.id)) continue;
          met.add(ch.id);
          out.push([c.seq, ch.id]);
        }
      }
      return out;
    };
    for (const [after, before, skip] of [
      [-1, 400, []],
      [100, 350, ['task-m3', 'task-m9']],
      [390, 400, []],
      [-1, 5, []],
    ] as Array<[number, number, string[]]>) {
      const got = [...store.newestChanges(after, before, new Set(skip))].map((c) => [c.commit.seq, c.id]);
      expect(got, `${after}..${before}`).to.deep.equal(walk(after, before, new Set(skip)));
    }
    expect(store.newestBefore(T0 + 120_500)).to.equal(120);
    expect(store.newestBefore(T0)).to.equal(-1);
    expect(store.newestBefore(T0 + 10_000_000)).to.equal(399);
    await store.close();
  });
});
