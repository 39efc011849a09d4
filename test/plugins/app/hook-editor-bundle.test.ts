/**
 * plugins/app/static/hook-editor.js is generated (`npm run build:editor`: esbuild bundles
 * plugins/app/editor/hook-editor.js with CodeMirror 6) and committed, so the app serves it
 * without a build step. This rebuilds it with the same command into a temporary file and
 * compares bytes: a change to the editor's source or a CodeMirror upgrade without a rebuild
 * fails here.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';

describe('app: the hook editor bundle is the build of its source', function () {
  this.timeout(60_000);
  it('npm run build:editor reproduces plugins/app/static/hook-editor.js byte for byte', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
    const script = pkg.scripts['build:editor']!;
    const target = '--outfile=plugins/app/static/hook-editor.js';
    expect(script).to.include(target);
    const dir = mkdtempSync(join(tmpdir(), 'wg-editor-'));
    try {
      const out = join(dir, 'hook-editor.js');
      execFileSync('sh', ['-c', script.replace(target, `--outfile=${out}`)], {
        env: { ...process.env, PATH: `${join(process.cwd(), 'node_modules', '.bin')}:${process.env.PATH}` },
        stdio: 'pipe',
      });
      expect(readFileSync(out).equals(readFileSync('plugins/app/static/hook-editor.js')), 'rebuild with npm run build:editor').to.equal(
        true,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
