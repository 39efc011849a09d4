/**
 * Issue 23 item 6: the contract lives in the repository. Comments and docs cite
 * docs/spec.md and docs/design.md (never a bare "SPEC" or "DESIGN.md", files no checkout has),
 * and every repository path a comment or a doc names (docs/x.md, kernel/y.ts, plugins/z/...)
 * exists, so a newcomer can follow each reference. Paths are read from markdown text (URLs removed) and from the
 * comments of source files only (the TypeScript scanner finds them, so strings and import
 * specifiers are not mistaken for citations).
 */
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { ROOT } from '../helpers/processes.js';

/** The folders whose comments and docs cite the contract, and the top-level README. */
const SCANNED = ['kernel', 'plugins', 'sandbox', 'scripts', 'test', 'docs', 'seed-pack'];
/** Data, not prose: import fixtures quote other projects' paths; screenshots are images. */
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'screenshots', 'fixtures']);
const SOURCE = /\.(ts|mts|mjs|js)$/;
const TEXT = /\.(ts|mts|mjs|js|md)$/;

/** Repository-relative paths (always with `/`) of every scanned file. */
function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = `${dir}/${name}`;
    if (statSync(join(ROOT, path)).isDirectory()) {
      if (!SKIPPED_DIRS.has(name)) out.push(...walk(path));
    } else if (TEXT.test(name)) out.push(path);
  }
  return out;
}

/** Every file of the checkout under the scanned folders, for glob citations like `plugins/*\/index.ts`. */
function allFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    if (name === 'node_modules') continue;
    const path = `${dir}/${name}`;
    if (statSync(join(ROOT, path)).isDirectory()) out.push(path, ...allFiles(path));
    else out.push(path);
  }
  return out;
}

/** Tokens after which a `/` divides; anywhere else it starts a regular expression literal. */
const ENDS_OPERAND = new Set<ts.SyntaxKind>([
  ts.SyntaxKind.Identifier,
  ts.SyntaxKind.PrivateIdentifier,
  ts.SyntaxKind.NumericLiteral,
  ts.SyntaxKind.BigIntLiteral,
  ts.SyntaxKind.StringLiteral,
  ts.SyntaxKind.RegularExpressionLiteral,
  ts.SyntaxKind.NoSubstitutionTemplateLiteral,
  ts.SyntaxKind.TemplateTail,
  ts.SyntaxKind.CloseParenToken,
  ts.SyntaxKind.CloseBracketToken,
  ts.SyntaxKind.CloseBraceToken,
  ts.SyntaxKind.PlusPlusToken,
  ts.SyntaxKind.MinusMinusToken,
  ts.SyntaxKind.ThisKeyword,
  ts.SyntaxKind.SuperKeyword,
  ts.SyntaxKind.TrueKeyword,
  ts.SyntaxKind.FalseKeyword,
  ts.SyntaxKind.NullKeyword,
]);

/**
 * The text of every comment in a source file, each with the line it starts on. TypeScript's
 * scanner does the lexing (strings, templates, regular expressions are skipped whole); the two
 * places where lexing needs the grammar are settled the usual way: a `}` that closes a template
 * substitution resumes the template, and a `/` after an operand divides (after `!` or a keyword
 * such as `return` it starts a regular expression).
 */
function commentsOf(path: string, text: string): Array<{ line: number; text: string }> {
  const variant = /\.(tsx|jsx)$/.test(path) ? ts.LanguageVariant.JSX : ts.LanguageVariant.Standard;
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, variant, text);
  const comments: Array<{ line: number; text: string }> = [];
  // open braces per template substitution being scanned: at 0, a `}` resumes the template
  const templates: number[] = [];
  let previous = ts.SyntaxKind.Unknown;
  let line = 1;
  let counted = 0;
  const lineAt = (pos: number): number => {
    for (; counted < pos; counted++) if (text.charCodeAt(counted) === 10) line++;
    return line;
  };
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    if (kind === ts.SyntaxKind.SingleLineCommentTrivia || kind === ts.SyntaxKind.MultiLineCommentTrivia) {
      comments.push({ line: lineAt(scanner.getTokenStart()), text: scanner.getTokenText() });
      continue;
    }
    if (kind === ts.SyntaxKind.WhitespaceTrivia || kind === ts.SyntaxKind.NewLineTrivia || kind === ts.SyntaxKind.ShebangTrivia) continue;
    if ((kind === ts.SyntaxKind.SlashToken || kind === ts.SyntaxKind.SlashEqualsToken) && !ENDS_OPERAND.has(previous)) {
      kind = scanner.reScanSlashToken();
    } else if (kind === ts.SyntaxKind.TemplateHead) {
      templates.push(0);
    } else if (kind === ts.SyntaxKind.OpenBraceToken && templates.length > 0) {
      templates[templates.length - 1]++;
    } else if (kind === ts.SyntaxKind.CloseBraceToken && templates.length > 0) {
      if (templates[templates.length - 1] === 0) {
        kind = scanner.reScanTemplateToken(false);
        if (kind === ts.SyntaxKind.TemplateTail) templates.pop();
      } else templates[templates.length - 1]--;
    }
    previous = kind;
  }
  return comments;
}

/** The prose of a file: a markdown file whole, a source file's comments; URLs removed. */
function proseOf(path: string): Array<{ line: number; text: string }> {
  const text = readFileSync(join(ROOT, path), 'utf8');
  const parts = SOURCE.test(path) ? commentsOf(path, text) : text.split('\n').map((line, i) => ({ line: i + 1, text: line }));
  return parts.map((p) => ({ line: p.line, text: p.text.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, ' ') }));
}

const CITED = /(?<![\w./@-])((?:docs|kernel|plugins|sandbox|scripts|test|seed-pack)\/[\w./*-]*[\w*])/g;

describe('doc references (issue 23: the contract lives in the repository)', function () {
  this.timeout(60_000);
  const files = [...SCANNED.flatMap((d) => walk(d)), 'README.md'];
  const self = relative(ROOT, fileURLToPath(import.meta.url))
    .split(sep)
    .join('/');
  const known = new Set(SCANNED.flatMap((d) => [d, ...allFiles(d)]));

  it('docs/spec.md exists and keeps the contract sections comments cite', () => {
    const spec = readFileSync(join(ROOT, 'docs', 'spec.md'), 'utf8');
    const headings = [
      'What the service does',
      'Resources and their fields',
      'States and transitions',
      'Endpoints',
      'Authentication',
      'Events',
      'Errors',
      'Limits',
      'Versioning',
    ];
    headings.forEach((h, i) => expect(spec, h).to.match(new RegExp(`^## ${i + 1}\\. ${h}$`, 'm')));
    for (const sub of ['Reads', 'Writes', 'Leases', 'Lenses', 'Identity and agents', 'Workflow runs'])
      expect(spec).to.match(new RegExp(`^### 4\\.\\d+ ${sub}$`, 'm'));
  });

  it('docs/design.md keeps the numbered sections comments cite', () => {
    const design = readFileSync(join(ROOT, 'docs', 'design.md'), 'utf8');
    for (let n = 1; n <= 10; n++) expect(design).to.match(new RegExp(`^## ${n}\\. \\S`, 'm'));
  });

  it('no comment or doc cites a bare SPEC or DESIGN.md (the files are docs/spec.md, docs/design.md)', () => {
    expect(files.length).to.be.greaterThan(100);
    const bare: string[] = [];
    for (const path of files) {
      if (path === self) continue;
      readFileSync(join(ROOT, path), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (/\b(SPEC|DESIGN)\b/.test(line)) bare.push(`${path}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(bare, 'cite docs/spec.md or docs/design.md instead').to.deep.equal([]);
  });

  it('every repository path a comment or a doc cites exists', () => {
    const exists = (cited: string): boolean => {
      if (cited.includes('*')) {
        const pattern = new RegExp(
          `^${cited
            .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
            .replace(/\*\*/g, '\u0000')
            .replace(/\*/g, '[^/]*')
            .replace(/\u0000/g, '.*')}$`,
        );
        return [...known].some((p) => pattern.test(p));
      }
      // A module named without its suffix (`kernel/codec`) or by its built name (`kernel/x.js`).
      const candidates = [cited, `${cited}.ts`, `${cited}.md`, cited.replace(/\.js$/, '.ts')];
      return candidates.some((c) => known.has(c) || existsSync(join(ROOT, c)));
    };
    let citations = 0;
    const missing: string[] = [];
    for (const path of files) {
      if (path === self) continue;
      for (const part of proseOf(path)) {
        for (const m of part.text.matchAll(CITED)) {
          const cited = m[1] ?? '';
          citations++;
          if (!exists(cited)) missing.push(`${path}:${part.line}: ${cited}`);
        }
      }
    }
    expect(citations, 'the scan finds citations at all').to.be.greaterThan(200);
    expect(missing, 'cited paths that do not exist').to.deep.equal([]);
  });

  it('no file carries a merge conflict left unresolved (a marker line of <, = or > runs)', () => {
    const marker = /^(<{7} |={7}$|>{7} )/m;
    const left = files.filter((f) => marker.test(readFileSync(join(ROOT, f), 'utf8')));
    expect(left).to.deep.equal([]);
  });

  it('finds comments the way the check relies on (strings and imports are not citations)', () => {
    const source = [
      "import { x } from '../kernel/absent.js';",
      "const s = 'plugins/absent/a.ts'; // cites docs/one.md",
      'const t = `kernel/${s}`; /* cites kernel/two.ts:12 */',
      'function f() {',
      '  return 1;',
      '  // cites sandbox/three.ts before the brace',
      '}',
    ].join('\n');
    const cited = commentsOf('x.ts', source).flatMap((c) => [...c.text.matchAll(CITED)].map((m) => m[1]));
    expect(cited.sort()).to.deep.equal(['docs/one.md', 'kernel/two.ts', 'sandbox/three.ts']);
  });
});
