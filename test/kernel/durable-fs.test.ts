import { expect } from 'chai';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDurableFs, writeFileDurable } from '../../kernel/durable-fs.js';

describe('kernel/durable-fs', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'durable-fs-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writeFile replaces atomically and leaves no temp files', async () => {
    const { promises: p } = createDurableFs();
    await p.writeFile(join(dir, 'a'), 'one');
    await p.writeFile(join(dir, 'a'), new TextEncoder().encode('two'));
    await p.writeFile(join(dir, 'b'), 'ünï', 'utf8');
    expect(readFileSync(join(dir, 'a'), 'utf8')).to.equal('two');
    expect(readFileSync(join(dir, 'b'), 'utf8')).to.equal('ünï');
    expect(readdirSync(dir).sort()).to.deep.equal(['a', 'b']);
  });

  it('writeFile throws ENOENT when the parent directory is missing', async () => {
    const { promises: p } = createDurableFs();
    let code: string | undefined;
    await p.writeFile(join(dir, 'missing', 'x'), 'x').catch((e: NodeJS.ErrnoException) => (code = e.code));
    expect(code).to.equal('ENOENT');
    await p.mkdir(join(dir, 'missing'));
    await p.writeFile(join(dir, 'missing', 'x'), 'x');
    expect(readFileSync(join(dir, 'missing', 'x'), 'utf8')).to.equal('x');
  });

  it('writeFileDurable writes through temp + rename', async () => {
    await writeFileDurable(join(dir, 'state.json'), '{"a":1}');
    await writeFileDurable(join(dir, 'state.json'), Buffer.from('{"a":2}'), { fsync: false });
    expect(readFileSync(join(dir, 'state.json'), 'utf8')).to.equal('{"a":2}');
    expect(readdirSync(dir)).to.deep.equal(['state.json']);
  });
});
