#!/usr/bin/env node
// `npx workgraph ...`: re-executes the TypeScript CLI under node with the flags
// isolated-vm needs (--no-node-snapshot) and the tsx loader.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('./workgraph.ts', import.meta.url));
// tsx is resolved from this file, not from the working directory, so the CLI works from anywhere.
const tsx = import.meta.resolve('tsx');
const child = spawn(process.execPath, ['--no-node-snapshot', '--import', tsx, cli, ...process.argv.slice(2)], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  if (signal) {
    // re-raise the child's fatal signal on ourselves, without our forwarding handler catching it
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else process.exit(code ?? 1);
});
