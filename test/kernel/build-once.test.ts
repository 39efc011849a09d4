/**
 * `npm start` builds the bundle once, not at every start: scripts/start.mjs calls
 * scripts/build-if-stale.mjs's check, which rebuilds dist/workgraph.mjs only when it is missing or older
 * than a source it bundles (issue 16 item 6).
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/processes.js';

describe('npm start builds the bundle only when a source changed', function () {
  this.timeout(60_000);
  const bundle = join(ROOT, 'dist', 'workgraph.mjs');
  const prestart = () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-if-stale.mjs')], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, r.stderr).to.equal(0);
    return statSync(bundle).mtimeMs;
  };

  it('a second prestart leaves the bundle alone; a newer source rebuilds it', () => {
    const first = prestart();
    expect(prestart()).to.equal(first);
    const source = join(ROOT, 'kernel', 'errors.ts');
    const { atime, mtime } = statSync(source);
    try {
      const later = new Date(first + 2000);
      utimesSync(source, later, later);
      expect(prestart()).to.be.greaterThan(first);
    } finally {
      utimesSync(source, atime, mtime);
    }
  });
});
