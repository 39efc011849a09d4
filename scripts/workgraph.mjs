#!/usr/bin/env node
// `npx workgraph ...`: re-executes the CLI under node with the flags isolated-vm needs
// (--no-node-snapshot). It runs the bundle (dist/workgraph.mjs, `npm run build`) when the bundle
// is at least as new as every source, and the TypeScript sources through tsx otherwise, so an
// edited source is never shadowed by an old bundle. SVC_CLI_FROM_SOURCE=1 forces the sources.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { bundle, bundleIsFresh } from './bundle-state.mjs';

const fromSource = process.env.SVC_CLI_FROM_SOURCE === '1' || !bundleIsFresh();
const entry = fromSource
  ? // tsx is resolved from this file, not from the working directory, so the CLI works from anywhere.
    ['--import', import.meta.resolve('tsx'), fileURLToPath(new URL('./workgraph.ts', import.meta.url))]
  : [bundle];
const child = spawn(process.execPath, ['--no-node-snapshot', ...entry, ...process.argv.slice(2)], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  if (signal) {
    // re-raise the child's fatal signal on ourselves, without our forwarding handler catching it
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else process.exit(code ?? 1);
});
