#!/usr/bin/env node
// `npm start`'s prestart: builds dist/workgraph.mjs (`npm run build`) only when it is missing or
// older than a source it bundles, so a start does not pay for a build it does not need.
import { spawnSync } from 'node:child_process';
import { bundleIsFresh, root } from './bundle-state.mjs';

if (!bundleIsFresh()) {
  const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
