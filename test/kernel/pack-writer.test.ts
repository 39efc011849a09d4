import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { writePack, zlibStored, type PackObject } from '../../kernel/pack-writer.js';

function obj(type: PackObject['type'], body: Buffer): PackObject {
  const oid = createHash('sha1').update(`${type} ${body.length}\0`).update(body).digest('hex');
  return { type, oid, body };
}

describe('kernel/pack-writer', () => {
  let dir: string;
  let gitdir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'pack-writer-'));
    gitdir = join(dir, 'g.git');
    execFileSync('git', ['init', '-q', '--bare', gitdir]);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('zlibStored is a valid zlib stream for empty, block-boundary and multi-block inputs', () => {
    for (const n of [0, 1, 100, 65535, 65536, 131071, 200_000]) {
      for (const data of [randomBytes(n), Buffer.alloc(n, 0xff)])
        expect(inflateSync(zlibStored(data)).equals(data), `n=${n}`).to.equal(true);
    }
  });

  it('writes a pack + index git verifies and reads (blobs, trees, a commit; large sizes; duplicates dropped)', async () => {
    const blobs = [
      Buffer.from(''),
      Buffer.from('x'),
      Buffer.from('ünïcödé ✓\n'.repeat(40)),
      randomBytes(70_000),
      Buffer.alloc(300_000, 'a'),
    ].map((b) => obj('blob', b));
    const tree = obj(
      'tree',
      Buffer.concat(blobs.slice(0, 3).map((b, i) => Buffer.concat([Buffer.from(`100644 f${i}\0`), Buffer.from(b.oid, 'hex')]))),
    );
    const commit = obj(
      'commit',
      Buffer.from(`tree ${tree.oid}\nauthor A <a@b> 1700000000 +0000\ncommitter A <a@b> 1700000000 +0000\n\nm\n`),
    );
    const name = await writePack(gitdir, [...blobs, tree, commit, blobs[1]!], true);
    const packDir = join(gitdir, 'objects', 'pack');
    expect(readdirSync(packDir).sort()).to.deep.equal([`${name}.idx`, `${name}.pack`]);
    const verify = execFileSync('git', ['--git-dir', gitdir, 'verify-pack', '-v', join(packDir, `${name}.idx`)], { encoding: 'utf8' });
    expect(verify).to.match(/non delta: 7 objects/);
    for (const o of [...blobs, tree, commit]) {
      expect(execFileSync('git', ['--git-dir', gitdir, 'cat-file', '-t', o.oid], { encoding: 'utf8' }).trim()).to.equal(o.type);
      expect(execFileSync('git', ['--git-dir', gitdir, 'cat-file', o.type, o.oid], { maxBuffer: 1 << 24 }).equals(o.body), o.oid).to.equal(
        true,
      );
    }
    execFileSync('git', ['--git-dir', gitdir, 'update-ref', 'refs/heads/main', commit.oid]);
    execFileSync('git', ['--git-dir', gitdir, 'fsck', '--full', '--strict', '--no-dangling'], { stdio: 'pipe' });
  });
});
