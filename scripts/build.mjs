#!/usr/bin/env node
// `npm run build`: the esbuild bundle `npm start` and the CLI shim run (dist/workgraph.mjs).
//
// - Code splitting: every `await import()` in the sources becomes its own chunk in dist/, loaded
//   the first time that code runs, so a server start does not parse or hold what only a mode, a
//   route or a CLI command it never uses needs (docs/performance.md "Empty server").
// - Chunks sit next to workgraph.mjs (the `../sandbox/` and `../seed-pack/` paths the sources
//   resolve from import.meta.url hold from both) and are named by their content hash: a build
//   never rewrites a chunk a running server may still import later. Chunks no build has named
//   for a day are removed.
// - Whitespace and comments out, and the output made pure ASCII (a non-ASCII character left in
//   a template or regular expression literal becomes its \u escape): V8 keeps a script's source
//   in memory for as long as the process lives, as a two-byte string when one character of it is
//   outside Latin-1 (14.5 MB for the 7.3 MB single-file bundle of before).
// - mime-db stays in node_modules (a dependency of package.json): bundled, its database was two
//   object literals (koa's copy and the top-level one, 283 KB of the 2.9 MB a start loads) that V8
//   parsed and evaluated at every start; required at run time it is one JSON file that Node reads
//   with JSON.parse, shared by both mime-types.
import { build } from 'esbuild';
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = join(root, 'dist');
const CHUNK = /^chunk-[A-Z0-9]+\.mjs(\.map)?$/;
const KEEP_UNNAMED_MS = 24 * 3600 * 1000;

/** Every character outside ASCII as the escape JavaScript reads the same in string, template and regexp literals. */
function asciiOnly(text) {
  return text.replace(/[^\x00-\x7f]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const result = await build({
  entryPoints: { workgraph: join(root, 'scripts', 'workgraph.ts') },
  bundle: true,
  splitting: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['isolated-vm', 'pg-native', 'mime-db'],
  outdir,
  outExtension: { '.js': '.mjs' },
  chunkNames: 'chunk-[hash]',
  minifyWhitespace: true,
  legalComments: 'none',
  charset: 'ascii',
  sourcemap: 'linked',
  banner: { js: "import { createRequire as __wgCreateRequire } from 'node:module'; const require = __wgCreateRequire(import.meta.url);" },
  write: false,
  metafile: true,
  logLevel: 'warning',
});

mkdirSync(outdir, { recursive: true });
const written = new Set();
const entry = join(outdir, 'workgraph.mjs');
// chunks first, the entry last: a reader that sees the new entry finds every chunk it names
const files = [...result.outputFiles].sort((a, b) => Number(a.path === entry) - Number(b.path === entry));
for (const file of files) {
  const name = basename(file.path);
  written.add(name);
  const text = file.path.endsWith('.mjs') ? asciiOnly(file.text) : file.text;
  // written aside and renamed into place: a process starting meanwhile (the CLI shim in a
  // parallel test run, a server started during a rebuild) reads the old file or the new one,
  // never half of one. The rename also gives an unchanged chunk a fresh time for the sweep.
  const aside = `${file.path}.${process.pid}.tmp`;
  writeFileSync(aside, text);
  renameSync(aside, file.path);
}
// which chunk holds which modules: docs/performance.md "Empty server", and the bundle test's check
// that a start loads none of the lazy ones
writeFileSync(join(outdir, 'workgraph.meta.json'), JSON.stringify(result.metafile));
for (const name of readdirSync(outdir)) {
  if (!CHUNK.test(name) || written.has(name)) continue;
  const path = join(outdir, name);
  if (Date.now() - statSync(path).mtimeMs > KEEP_UNNAMED_MS) rmSync(path, { force: true });
}
