/**
 * No source file grows past MAX_LINES without saying why (issue 23, item 4): every .ts file
 * under kernel/, plugins/, sandbox/, scripts/ and test/ is at most 600 lines, unless one of
 * its first 15 lines starts with `// size:` (or ` * size:` inside the header comment) followed
 * by the reason. A long file is hard to carry on; when one must stay long, the reason is the
 * first thing its next reader sees.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIRS = ['kernel', 'plugins', 'sandbox', 'scripts', 'test'];
const MAX_LINES = 600;
const HEADER_LINES = 15;

/** Lines as `wc -l` counts them, plus a last line without its newline. */
function lineCount(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
  return text.length > 0 && !text.endsWith('\n') ? n + 1 : n;
}

/** The reason a long file gives in its header, or null when it gives none. */
function sizeReason(text: string): string | null {
  const head = text.split('\n', HEADER_LINES);
  for (const line of head) {
    const m = /^(?:\/\/| \*) size:(.*)$/.exec(line);
    if (m && m[1]!.trim()) return m[1]!.trim();
  }
  return null;
}

/** Why `text` breaks the rule, or null when it keeps it. */
function violation(text: string): string | null {
  const lines = lineCount(text);
  if (lines <= MAX_LINES || sizeReason(text) !== null) return null;
  return `${lines} lines (at most ${MAX_LINES}, or a "// size: <reason>" line in the first ${HEADER_LINES})`;
}

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...tsFiles(path));
    else if (entry.isFile() && entry.name.endsWith('.ts')) out.push(path);
  }
  return out;
}

describe('source file size', () => {
  const files = DIRS.flatMap((d) => tsFiles(join(ROOT, d))).map((abs) => ({ abs, rel: relative(ROOT, abs).split(sep).join('/') }));

  it('the rule: over 600 lines needs a reason in the header, an empty reason does not count', () => {
    const long = (header: string) => `${header}\n${'x;\n'.repeat(MAX_LINES)}`;
    expect(lineCount('a\nb\n')).to.equal(2);
    expect(lineCount('a\nb')).to.equal(2);
    expect(violation('x;\n'.repeat(MAX_LINES))).to.equal(null);
    expect(violation(long('// plain comment'))).to.match(/^601 lines/);
    expect(violation(long('// size: one generated table, splitting it would scatter it'))).to.equal(null);
    expect(violation(long('/**\n * What this owns.\n * size: one state machine; its states share one closure\n */'))).to.equal(null);
    expect(violation(long('// size:   '))).to.match(/^601 lines/);
    // a reason below the header does not count
    expect(violation(`${'\n'.repeat(HEADER_LINES)}// size: too late\n${'x;\n'.repeat(MAX_LINES)}`)).to.match(/lines/);
  });

  it('finds the source files it checks', () => {
    const rels = new Set(files.map((f) => f.rel));
    for (const known of [
      'kernel/git/store.ts',
      'sandbox/index.ts',
      'scripts/workgraph.ts',
      'test/kernel/file-size.test.ts',
      'plugins/core/index.ts',
    ]) {
      expect(rels.has(known), known).to.equal(true);
    }
  });

  it(`every .ts file under ${DIRS.join('/, ')}/ is at most ${MAX_LINES} lines or says why in its header`, () => {
    const problems: string[] = [];
    for (const f of files) {
      const why = violation(readFileSync(f.abs, 'utf8'));
      if (why) problems.push(`${f.rel}: ${why}`);
    }
    expect(problems, problems.join('\n')).to.deep.equal([]);
  });
});
