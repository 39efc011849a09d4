#!/usr/bin/env node
// `npx workgraph ...`: runs the bundle (dist/workgraph.mjs, `npm run build`) in this process when
// the bundle is at least as new as every source, and the TypeScript sources through tsx in a child
// otherwise, so an edited source is never shadowed by an old bundle. SVC_CLI_FROM_SOURCE=1 forces
// the sources. The bundle needs no node flag: isolated-vm loads only in the sandbox worker, which
// the sandbox forks with --no-node-snapshot (test/kernel/bundle.test.ts checks that no chunk of
// the bundle imports it), so a command costs one node start, not two (docs/decisions.md "One
// process per CLI command").
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { bundle, bundleIsFresh } from './bundle-state.mjs';

if (process.env.SVC_CLI_FROM_SOURCE !== '1' && bundleIsFresh()) {
  await import(pathToFileURL(bundle).href);
} else {
  // tsx is resolved from this file, not from the working directory, so the CLI works from anywhere.
  const entry = ['--import', import.meta.resolve('tsx'), fileURLToPath(new URL('./workgraph.ts', import.meta.url))];
  const child = spawn(process.execPath, ['--no-node-snapshot', ...entry, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal) {
      // re-raise the child's fatal signal on ourselves, without our forwarding handler catching it
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    } else process.exit(code ?? 1);
  });
}
