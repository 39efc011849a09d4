#!/usr/bin/env node
// `npm start`'s prestart: builds dist/workgraph.mjs (`npm run build`) only when it is missing or
// older than a source it bundles, so a start does not pay for a build it does not need.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const bundle = join(root, 'dist', 'workgraph.mjs');

function newestSource() {
  let newest = 0;
  const visit = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name === 'bench' || entry.name.startsWith('.')) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (/\.(ts|mjs|js|json)$/.test(entry.name)) newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  for (const dir of ['kernel', 'plugins', 'sandbox', 'seed-pack', 'scripts']) visit(join(root, dir));
  for (const file of ['package.json', 'package-lock.json']) newest = Math.max(newest, statSync(join(root, file)).mtimeMs);
  return newest;
}

let built;
try {
  built = statSync(bundle).mtimeMs;
} catch {
  built = 0;
}
if (built === 0 || built < newestSource()) {
  const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
