/**
 * kernel/server.ts `acquireDataDirLock`: one serving process per data directory. A process that
 * holds many locks (tests start kernels on many directories) keeps one exit listener for all of
 * them, not one per lock (eleven of them had Node warn of a listener leak), and removes it with
 * the last release.
 */
import { expect } from 'chai';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireDataDirLock } from '../../kernel/server.js';

describe('kernel/server: the data directory lock', () => {
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('twelve locks held at once add one exit listener, and the last release removes it and every lock file', () => {
    const before = process.listenerCount('exit');
    const releases: Array<() => void> = [];
    for (let i = 0; i < 12; i++) {
      const dir = mkdtempSync(join(tmpdir(), 'wg-lock-'));
      dirs.push(dir);
      releases.push(acquireDataDirLock(dir));
      expect(existsSync(join(dir, 'server.lock'))).to.equal(true);
    }
    // a second kernel of this process on the same directory shares its lock
    const again = acquireDataDirLock(dirs[0]!);
    expect(process.listenerCount('exit')).to.equal(before + 1);
    again();
    expect(existsSync(join(dirs[0]!, 'server.lock')), 'still held by the first').to.equal(true);
    for (const release of releases) release();
    expect(process.listenerCount('exit')).to.equal(before);
    for (const d of dirs) expect(existsSync(join(d, 'server.lock')), d).to.equal(false);
  });
});
