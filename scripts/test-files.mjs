#!/usr/bin/env node
// The test files of `npm run test:mocha`'s parallel run, the longest first: mocha --parallel hands
// files to its workers in the order given, so a long file given last ran alone at the end while
// the other workers sat idle (docs/decisions.md "Static checks side by side"). The list below
// holds the files that took longest on the idle VM (wall seconds of the 2026-11-26 runs); every
// other file follows in name order. A listed file that no longer exists is skipped.
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const LONGEST_FIRST = [
  'test/plugins/app/pages.test.ts',
  'test/kernel/cli-client.test.ts',
  'test/plugins/import/import.test.ts',
  'test/cluster/cluster.test.ts',
  'test/cluster/events.test.ts',
  'test/kernel/authorization-matrix.test.ts',
  'test/kernel/hostile-hooks.test.ts',
  'test/plugins/openapi/contract.test.ts',
  'test/kernel/cli.test.ts',
  'test/kernel/codec.test.ts',
  'test/plugins/app/board.test.ts',
  'test/plugins/app/walk.test.ts',
  'test/sandbox/hostile.test.ts',
];
/** run serially before the parallel run (package.json test:mocha) */
const SERIAL = new Set(['test/kernel/build-once.test.ts', 'test/kernel/bundle.test.ts']);

const all = readdirSync(join(root, 'test'), { recursive: true })
  .map((f) =>
    relative(root, join(root, 'test', String(f)))
      .split('\\')
      .join('/'),
  )
  .filter((f) => f.endsWith('.test.ts') && !SERIAL.has(f))
  .sort();
const present = new Set(all);
const first = LONGEST_FIRST.filter((f) => present.has(f));
const rest = all.filter((f) => !first.includes(f));
process.stdout.write([...first, ...rest].join('\n') + '\n');
