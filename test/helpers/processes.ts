/**
 * Helpers for tests that run the real CLI (`scripts/workgraph.mjs`) as child processes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The CLI shim: re-executes the TypeScript CLI with the flags isolated-vm needs. */
export const SHIM = join(ROOT, 'scripts', 'workgraph.mjs');

/** The parent's environment without any server setting, so only what a test says applies. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(SVC_|WORKGRAPH_)/.test(k) && k !== 'HOST' && k !== 'PORT') env[k] = v;
  return { ...env, ...extra };
}

/** Is any process of the group `pid` leads still alive? */
export function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Sends `signal` to the CLI shim and the server it re-executed (one process group, spawned
 * with `detached: true`), escalates to SIGKILL after 10 s, and waits until the whole group is
 * gone. Resolves with the shim's exit code.
 */
export async function killGroup(child: ChildProcess, signal: NodeJS.Signals): Promise<number | null> {
  const exited =
    child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => child.once('exit', () => r()));
  try {
    process.kill(-child.pid!, signal);
  } catch {
    /* already gone */
  }
  const timer = setTimeout(() => groupAlive(child.pid!) && process.kill(-child.pid!, 'SIGKILL'), 10_000);
  await exited;
  for (let i = 0; i < 400 && groupAlive(child.pid!); i++) await new Promise((r) => setTimeout(r, 25));
  clearTimeout(timer);
  return child.exitCode;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI (`scripts/workgraph.mjs <args>`) to completion with only the given settings; resolves once its output is drained. */
export function runCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  const child = spawn(process.execPath, [SHIM, ...args], { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/**
 * Starts `workgraph serve` through the CLI shim as its own process group (PORT=0 plus `env`),
 * resolving once it prints its `listening on` line (60 s bound, a hang detector). `children`
 * collects the process so a suite's `after` can kill what a failed test left running.
 */
export function startServeProcess(
  env: Record<string, string>,
  children?: Set<ChildProcess>,
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(process.execPath, [SHIM, 'serve'], {
    env: cleanEnv({ PORT: '0', ...env }),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children?.add(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in 60 s: ${out}`)), 60_000);
    child.stdout!.on('data', () => {
      const m = /^listening on (http:\/\/\S+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]!, output: () => out });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited ${code}: ${out}`));
    });
  });
}
