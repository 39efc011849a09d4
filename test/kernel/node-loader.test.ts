import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { gunzipSync } from 'node:zlib';
import { nodePath } from '../../kernel/git/objects.js';
import { openGitStore } from '../../kernel/git/open.js';
import type { CommitAuthor, GitStore } from '../../kernel/git/types.js';
import { loadNodeFiles, saveNodeSnapshot, type LoadedFile } from '../../kernel/node-loader.js';

const ann: CommitAuthor = { name: 'Ann', email: 'ann@example.com' };

describe('kernel/node-loader', function () {
  this.timeout(20_000);
  let tmp: string;
  let store: GitStore;
  let snap: string;
  let parsed: string[];
  const parse = (text: string): unknown => {
    parsed.push(text);
    return { title: text.split('\n')[0], len: text.length, tags: new Set(['a']) };
  };
  const byPath = (files: LoadedFile[]): Record<string, unknown> =>
    Object.fromEntries(files.map((f) => [f.path, { oid: f.oid, content: f.content, parsed: f.parsed }]));
  const put = (changes: Array<[string, string | null]>, message = 'm') =>
    store.commit({
      changes: changes.map(([id, content]) => ({ path: nodePath('task', id), content })),
      author: ann,
      message,
      expectedParent: store.head(),
    });

  beforeEach(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'node-loader-'));
    store = await openGitStore(join(tmp, 'graph.git'), { fsync: false });
    snap = join(tmp, 'state', 'index.snapshot');
    parsed = [];
  });
  afterEach(async () => {
    await store.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  it("'empty' when the repo has no commits", async () => {
    const r = await loadNodeFiles(store, snap, parse);
    expect(r).to.deep.equal({ head: null, files: [], source: 'empty' });
  });

  it("'full' without a snapshot, then 'snapshot' once saved", async () => {
    await put([
      ['a', 'A title\nbody ✓'],
      ['b', 'B title'],
    ]);
    const full = await loadNodeFiles(store, snap, parse);
    expect(full.source).to.equal('full');
    expect(full.head).to.equal(store.head());
    expect(full.files).to.have.length(2);
    expect(parsed).to.have.length(2);
    expect(byPath(full.files)[nodePath('task', 'a')]).to.deep.include({ content: 'A title\nbody ✓' });

    await saveNodeSnapshot(snap, full.head!, full.files);
    parsed = [];
    const fromSnap = await loadNodeFiles(store, snap, parse);
    expect(fromSnap.source).to.equal('snapshot');
    expect(parsed).to.deep.equal([]);
    expect(byPath(fromSnap.files)).to.deep.equal(byPath(full.files));
    expect((fromSnap.files[0]!.parsed as { tags: Set<string> }).tags).to.be.instanceOf(Set);
  });

  it("'snapshot+diff' parses only the files changed since the snapshot", async () => {
    await put([
      ['a', 'a1'],
      ['b', 'b1'],
      ['c', 'c1'],
    ]);
    const first = await loadNodeFiles(store, snap, parse);
    await saveNodeSnapshot(snap, first.head!, first.files);
    await put([
      ['a', 'a2'],
      ['b', null],
    ]);
    await put([['d', 'd1']]);
    parsed = [];
    const r = await loadNodeFiles(store, snap, parse);
    expect(r.source).to.equal('snapshot+diff');
    expect(r.head).to.equal(store.head());
    expect(parsed.sort()).to.deep.equal(['a2', 'd1']);

    const fresh = await loadNodeFiles(store, join(tmp, 'none'), parse);
    expect(fresh.source).to.equal('full');
    expect(byPath(r.files)).to.deep.equal(byPath(fresh.files));
  });

  it("falls back to 'full' on a corrupt, truncated, foreign or mismatched-tag snapshot", async () => {
    await put([
      ['a', 'a1'],
      ['b', 'b1'],
    ]);
    const good = await loadNodeFiles(store, snap, parse);
    await saveNodeSnapshot(snap, good.head!, good.files);
    const bytes = readFileSync(snap);

    const cases: Array<[string, Buffer]> = [
      ['garbage', Buffer.from('this is not a v8 snapshot \u0000\u00ff')],
      ['truncated', bytes.subarray(0, Math.floor(bytes.length / 2))],
      ['empty file', Buffer.alloc(0)],
    ];
    for (const [name, data] of cases) {
      writeFileSync(snap, data);
      const r = await loadNodeFiles(store, snap, parse);
      expect(r.source, name).to.equal('full');
      expect(byPath(r.files), name).to.deep.equal(byPath(good.files));
    }

    // a snapshot whose head is not in this repo (e.g. another tenant's)
    await saveNodeSnapshot(snap, 'f'.repeat(40), good.files);
    expect((await loadNodeFiles(store, snap, parse)).source).to.equal('full');

    // wrong shape
    await saveNodeSnapshot(snap, good.head!, [{ path: 'x' } as unknown as LoadedFile]);
    expect((await loadNodeFiles(store, snap, parse)).source).to.equal('full');

    // a snapshot written for another parser version
    await saveNodeSnapshot(snap, good.head!, good.files, { tag: 'v1' });
    expect((await loadNodeFiles(store, snap, parse, { tag: 'v2' })).source).to.equal('full');
    expect((await loadNodeFiles(store, snap, parse, { tag: 'v1' })).source).to.equal('snapshot');

    // the snapshot path is a directory: unreadable, still no crash
    const r = await loadNodeFiles(store, tmp, parse);
    expect(r.source).to.equal('full');
  });

  it('writes the snapshot gzipped (a fraction of its serialized size) and still reads one written before, not gzipped', async () => {
    const many = Array.from({ length: 200 }, (_, k): [string, string] => [
      `n${k}`,
      `title ${k}\nstatus: open\nsummary: the same words again ${k}`,
    ]);
    await put(many);
    const full = await loadNodeFiles(store, snap, parse);
    await saveNodeSnapshot(snap, full.head!, full.files);
    const written = readFileSync(snap);
    expect([written[0], written[1]], 'gzip magic').to.deep.equal([0x1f, 0x8b]);
    const inner = gunzipSync(written);
    expect(written.length).to.be.below(inner.length / 3);
    expect((deserialize(inner) as { head: string }).head).to.equal(full.head);

    // the format before: the serialized data itself
    writeFileSync(snap, inner);
    parsed = [];
    const old = await loadNodeFiles(store, snap, parse);
    expect(old.source).to.equal('snapshot');
    expect(parsed).to.deep.equal([]);
    expect(byPath(old.files)).to.deep.equal(byPath(full.files));

    // gzip magic over bytes that are not gzip: a full load, no crash
    writeFileSync(snap, Buffer.concat([Buffer.from([0x1f, 0x8b]), serialize({ not: 'gzip' })]));
    expect((await loadNodeFiles(store, snap, parse)).source).to.equal('full');
  });
});
