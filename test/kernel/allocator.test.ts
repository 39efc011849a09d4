/**
 * scripts/with-allocator.sh, through which `npm start` and the benchmarks start the server:
 * jemalloc preloaded when the system has it, unless turned off or something is preloaded already.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../../scripts/with-allocator.sh', import.meta.url));
const PACKAGE = fileURLToPath(new URL('../../package.json', import.meta.url));

/** LD_PRELOAD as the wrapped command sees it, with `env` on top of this process's environment minus LD_PRELOAD */
function preloadWith(env: Record<string, string>): string {
  const base = { ...process.env };
  delete base.LD_PRELOAD;
  const r = spawnSync('sh', [SCRIPT, 'sh', '-c', 'printf %s "$LD_PRELOAD"'], { env: { ...base, ...env }, encoding: 'utf8' });
  expect(r.status, r.stderr).to.equal(0);
  return r.stdout;
}

describe('the allocator wrapper (scripts/with-allocator.sh)', () => {
  let dir: string;
  let lib: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'alloc-'));
    // a stand-in file: the script only checks that the library exists, the command here never loads it
    lib = join(dir, 'libjemalloc.so.2');
    writeFileSync(lib, '');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('preloads the library SVC_JEMALLOC names; nothing with SVC_JEMALLOC=0', () => {
    expect(preloadWith({ SVC_JEMALLOC: lib })).to.equal(lib);
    expect(preloadWith({ SVC_JEMALLOC: '0' })).to.equal('');
  });

  it('leaves a preload that is already set alone', () => {
    expect(preloadWith({ SVC_JEMALLOC: lib, LD_PRELOAD: '/elsewhere/libother.so' })).to.equal('/elsewhere/libother.so');
  });

  it('falls back to the system paths when the named library is missing, and runs the command with its arguments and exit code', () => {
    const found = preloadWith({ SVC_JEMALLOC: join(dir, 'missing.so') });
    // the system may or may not have jemalloc: either one of the known paths or nothing
    expect(found === '' || /libjemalloc\.so\.2$/.test(found), found).to.equal(true);
    const r = spawnSync('sh', [SCRIPT, 'sh', '-c', 'printf "%s|%s" "$0" "$1"; exit 7', 'first arg', 'second arg'], { encoding: 'utf8' });
    expect(r.stdout).to.equal('first arg|second arg');
    expect(r.status).to.equal(7);
  });

  it("sizes libuv's thread pool to 16 unless UV_THREADPOOL_SIZE is set", () => {
    const pool = (env: Record<string, string>) => {
      const base = { ...process.env };
      delete base.UV_THREADPOOL_SIZE;
      const r = spawnSync('sh', [SCRIPT, 'sh', '-c', 'printf %s "$UV_THREADPOOL_SIZE"'], { env: { ...base, ...env }, encoding: 'utf8' });
      expect(r.status, r.stderr).to.equal(0);
      return r.stdout;
    };
    expect(pool({})).to.equal('16');
    expect(pool({ UV_THREADPOOL_SIZE: '6' })).to.equal('6');
    expect(pool({ SVC_JEMALLOC: '0' })).to.equal('16');
  });

  it('is how `npm start` runs the server', () => {
    const start = (JSON.parse(readFileSync(PACKAGE, 'utf8')) as { scripts: Record<string, string> }).scripts.start;
    expect(start).to.match(/^exec sh scripts\/with-allocator\.sh node scripts\/start\.mjs serve$/);
  });
});
