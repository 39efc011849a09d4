#!/usr/bin/env node
// Builds dist/workgraph.mjs (scripts/build.mjs, what `npm run build` runs) only when it is missing
// or older than a source it bundles, so a start does not pay for a build it does not need.
// `npm start` (scripts/start.mjs) calls it in its own process; run directly, it only builds.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { bundleIsFresh, root } from './bundle-state.mjs';

/** 0 when the bundle is fresh or was built; the build's exit status otherwise. */
export function buildIfStale() {
  if (bundleIsFresh()) return 0;
  // node itself, not `npm run build`: npm's own start-up would cost about 0.4 s more
  const r = spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
  return r.status ?? 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) process.exit(buildIfStale());
