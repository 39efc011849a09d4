/**
 * The git CLI: `runGit` (one command against a bare repository), `streamBlobs` (one
 * `git cat-file --batch --buffer` for many blobs), `git ls-tree` parsing and pack counting.
 * Bulk reads go through git because it is an order of magnitude faster than
 * isomorphic-git's readBlob for thousands of blobs (FACTS.md). Also the registry of open
 * stores (`openStores`): a git process first waits for the store open on its gitdir to write
 * its acknowledged commits out (`gitdirSettled`).
 */
import type { GitStore } from './types.js';
import { promises as fsp } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { spawn } from 'node:child_process';

/** git's environment without the caller's GIT_* overrides, in the C locale. */
export function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  env.GIT_CONFIG_NOSYSTEM = '1';
  env.LC_ALL = 'C';
  return env;
}

/** Open stores by resolved gitdir: git processes wait for a store's writes to settle. */
export const openStores = new Map<string, GitStore>();
/** Resolves when the store open on `gitdir` (if any) has written every acknowledged commit out. */
export function gitdirSettled(gitdir: string): Promise<void> {
  return openStores.get(resolvePath(gitdir))?.settled() ?? Promise.resolve();
}

/** Runs one git command against a bare repository and collects its stdout. */
export async function runGit(gitdir: string, args: string[]): Promise<Buffer> {
  await gitdirSettled(gitdir);
  return runGitNoSettle(gitdir, args);
}

/** Number of pack files in the repository. */
export async function countPacks(gitdir: string): Promise<number> {
  try {
    return (await fsp.readdir(`${gitdir}/objects/pack`)).filter((n) => n.endsWith('.pack')).length;
  } catch {
    return 0;
  }
}

export function runGitNoSettle(gitdir: string, args: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['--git-dir', gitdir, '--literal-pathspecs', ...args], {
      env: gitEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(Buffer.concat(out));
      else reject(new Error(`git ${args[0]} failed (${code}): ${Buffer.concat(err).toString('utf8').trim()}`));
    });
  });
}

/** Parse `git ls-tree -r -z` output, keeping blobs only. */
export function parseLsTree(out: Buffer): Array<{ path: string; oid: string }> {
  const files: Array<{ path: string; oid: string }> = [];
  let pos = 0;
  while (pos < out.length) {
    const end = out.indexOf(0, pos);
    const stop = end < 0 ? out.length : end;
    const tab = out.indexOf(0x09, pos);
    if (tab < 0 || tab > stop) throw new Error('unexpected ls-tree output');
    // "<mode> SP <type> SP <oid> TAB <path>"
    const meta = out.toString('latin1', pos, tab);
    const [, type, oid] = meta.split(' ');
    if (type === 'blob' && oid) files.push({ path: out.toString('utf8', tab + 1, stop), oid });
    pos = stop + 1;
  }
  return files;
}

/**
 * Streams every oid through one `git cat-file --batch --buffer`, handing each blob to
 * `onBlob` in input order as it arrives (the whole set is never held at once). An oid git
 * reports missing is skipped, or fails the call with `missing: 'fail'`.
 */
export async function streamBlobs(
  gitdir: string,
  oids: string[],
  onBlob: (oid: string, text: string) => void,
  opts: { missing?: 'skip' | 'fail' } = {},
): Promise<void> {
  if (oids.length === 0) return;
  await gitdirSettled(gitdir);
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['--git-dir', gitdir, 'cat-file', '--batch', '--buffer'], {
      env: gitEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let chunks: Buffer[] = [];
    let avail = 0;
    /** bytes of the current record (content + LF); -1 while its header is unread */
    let need = -1;
    let current = '';
    let failure: Error | null = null;
    const errOut: Buffer[] = [];

    const fail = (e: Error): void => {
      if (failure) return;
      failure = e;
      child.kill();
    };
    const pump = (): void => {
      let buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, avail);
      let pos = 0;
      for (;;) {
        if (need < 0) {
          const nl = buf.indexOf(10, pos);
          if (nl < 0) break;
          const header = buf.toString('latin1', pos, nl).split(' ');
          pos = nl + 1;
          if (header.length === 2 && header[1] === 'missing' && opts.missing !== 'fail') continue;
          if (header.length !== 3 || header[1] !== 'blob') {
            fail(new Error(`cat-file: unexpected header "${header.join(' ')}"`));
            return;
          }
          current = header[0]!;
          need = Number(header[2]) + 1;
        }
        if (buf.length - pos < need) break;
        try {
          onBlob(current, buf.toString('utf8', pos, pos + need - 1));
        } catch (e) {
          fail(e as Error);
          return;
        }
        pos += need;
        need = -1;
      }
      buf = buf.subarray(pos);
      chunks = buf.length ? [buf] : [];
      avail = buf.length;
    };

    child.stdout.on('data', (c: Buffer) => {
      if (failure) return;
      chunks.push(c);
      avail += c.length;
      // re-scan only when the pending record can be complete (no O(n^2) on a large blob)
      if (need < 0 || avail >= need) pump();
    });
    child.stderr.on('data', (c: Buffer) => errOut.push(c));
    child.stdin.on('error', (e) => fail(e));
    child.on('error', (e) => fail(e));
    child.on('close', (code) => {
      if (failure) return reject(failure);
      if (code !== 0) return reject(new Error(`git cat-file failed (${code}): ${Buffer.concat(errOut).toString('utf8').trim()}`));
      resolve();
    });
    child.stdin.end(oids.join('\n') + '\n');
  });
}

/** Every oid's blob through one `git cat-file --batch`, in input order, utf8-decoded. */
export async function catFileBatch(gitdir: string, oids: string[]): Promise<string[]> {
  const results: string[] = [];
  await streamBlobs(gitdir, oids, (_oid, text) => void results.push(text), { missing: 'fail' });
  if (results.length !== oids.length) throw new Error(`git cat-file returned ${results.length} of ${oids.length} objects`);
  return results;
}
