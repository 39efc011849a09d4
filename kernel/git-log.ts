/**
 * Reads of a tenant's commit log, shared by the plugins that read history (history's commit
 * index, identity's audit): one streamed `git log` (the whole first-parent history of main
 * with raw per-file changes), the synchronous read of one just-written loose commit object
 * (to keep an index in step without a process per commit), the `Svc-*` trailers the write
 * path adds, and the unified diff of one commit and one path. In the kernel because the
 * kernel writes these commits and no plugin may reach into another (docs/decisions.md,
 * "Plugin edges").
 */
import { spawn } from 'node:child_process';
import { gitdirSettled, gitEnv, runGit } from './git/cli.js';
import type { GitStore } from './git/types.js';

export const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
const ZERO_OID = '0000000000000000000000000000000000000000';

export interface ParsedCommit {
  sha: string;
  parent: string | null;
  authorName: string;
  authorEmail: string;
  /** unix seconds of the author date */
  timestamp: number;
  message: string;
}

export interface RawChange {
  status: 'A' | 'M' | 'D';
  path: string;
  oldBlob: string | null;
  newBlob: string | null;
}

const AUTHOR_RE = /^(.*) <(.*)> (\d+) [+-]\d{4}$/;

/**
 * A commit's header and message. `indented` is the `--pretty=raw` form of `git log`, whose
 * message lines carry four leading spaces; a commit object read from disk has none.
 */
export function parseCommitText(sha: string, text: string, indented: boolean): ParsedCommit {
  const split = text.indexOf('\n\n');
  const head = split < 0 ? text : text.slice(0, split);
  let body = split < 0 ? '' : text.slice(split + 2);
  let parent: string | null = null;
  let authorName = '';
  let authorEmail = '';
  let timestamp = 0;
  for (const line of head.split('\n')) {
    if (line.startsWith('parent ') && parent === null) parent = line.slice(7, 47);
    else if (line.startsWith('author ')) {
      const m = AUTHOR_RE.exec(line.slice(7));
      if (m) {
        authorName = m[1]!;
        authorEmail = m[2]!;
        timestamp = Number(m[3]);
      }
    }
  }
  if (indented)
    body = body
      .split('\n')
      .map((l) => (l.startsWith('    ') ? l.slice(4) : l))
      .join('\n');
  return { sha, parent, authorName, authorEmail, timestamp, message: body.replace(/\n+$/, '') };
}

function parseRawMeta(meta: string): { status: 'A' | 'M' | 'D'; oldBlob: string | null; newBlob: string | null } | null {
  // ":100644 100644 <old> <new> M"
  const parts = meta.slice(1).split(' ');
  if (parts.length < 5) return null;
  const [, , oldOid, newOid, status] = parts as [string, string, string, string, string];
  const s = status[0];
  const norm = s === 'A' ? 'A' : s === 'D' ? 'D' : s === 'M' || s === 'T' ? 'M' : null;
  if (!norm) return null;
  return { status: norm, oldBlob: oldOid === ZERO_OID ? null : oldOid, newBlob: newOid === ZERO_OID ? null : newOid };
}

/**
 * Streams `git log --pretty=raw --raw -z` of the first-parent history ending at `tip`,
 * calling `onCommit` newest first, or oldest first with `reverse` (git then holds the list of
 * commits, not the caller: an index that appends in history order needs no copy of the whole
 * log). `tip` may be a range `<from>..<to>`: the first-parent commits of `to` not reachable
 * from `from`. Tokens are NUL-separated: a commit token (header + indented message, possibly
 * followed by the first raw entry's metadata after a "\n:"), then alternating raw metadata and
 * path tokens. The message is indented, so "\n:" can only start the raw section. A throw from
 * `onCommit` stops git and rejects with it.
 */
export async function streamLog(
  gitdir: string,
  tip: string,
  onCommit: (commit: ParsedCommit, changes: RawChange[]) => void,
  options: { reverse?: boolean } = {},
): Promise<void> {
  await gitdirSettled(gitdir);
  return new Promise((resolve, reject) => {
    const child = spawn(
      'git',
      [
        '--git-dir',
        gitdir,
        'log',
        '--first-parent',
        '--diff-merges=first-parent',
        '--no-renames',
        '--raw',
        '--no-abbrev',
        '-z',
        '--pretty=raw',
        ...(options.reverse ? ['--reverse'] : []),
        tip,
        '--',
      ],
      { env: gitEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let current: { commit: ParsedCommit; changes: RawChange[] } | null = null;
    let pendingMeta: ReturnType<typeof parseRawMeta> | undefined;
    let carry: Buffer = Buffer.alloc(0);
    let failure: Error | null = null;
    const err: Buffer[] = [];

    const flush = () => {
      if (current) onCommit(current.commit, current.changes);
      current = null;
    };
    const token = (t: string) => {
      if (pendingMeta !== undefined) {
        if (pendingMeta && current) current.changes.push({ ...pendingMeta, path: t });
        pendingMeta = undefined;
        return;
      }
      if (t === '') return;
      if (t.startsWith('commit ')) {
        flush();
        const nl = t.indexOf('\n');
        const sha = t.slice(7, nl < 0 ? undefined : nl).split(' ')[0]!;
        const rawAt = t.indexOf('\n:');
        const text = rawAt < 0 ? t.slice(nl + 1) : t.slice(nl + 1, rawAt);
        current = { commit: parseCommitText(sha, text, true), changes: [] };
        if (rawAt >= 0) pendingMeta = parseRawMeta(t.slice(rawAt + 1));
        return;
      }
      if (t.startsWith(':')) {
        pendingMeta = parseRawMeta(t);
        return;
      }
      throw new Error(`unexpected git log token: ${t.slice(0, 80)}`);
    };

    child.stdout.on('data', (chunk: Buffer) => {
      if (failure) return;
      const buf = carry.length ? Buffer.concat([carry, chunk]) : chunk;
      let pos = 0;
      try {
        for (;;) {
          const nul = buf.indexOf(0, pos);
          if (nul < 0) break;
          token(buf.toString('utf8', pos, nul));
          pos = nul + 1;
        }
      } catch (e) {
        failure = e as Error;
        child.kill();
        return;
      }
      carry = buf.subarray(pos);
    });
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      if (failure) return reject(failure);
      if (code !== 0) return reject(new Error(`git log failed (${code}): ${Buffer.concat(err).toString('utf8').trim()}`));
      try {
        if (carry.length) token(carry.toString('utf8'));
        flush();
      } catch (e) {
        return reject(e as Error);
      }
      resolve();
    });
  });
}

/**
 * A commit object read synchronously from the store (loose, or just acknowledged and not
 * yet written out); null when it is packed, so the caller falls back to event data.
 */
export function readCommitSync(store: Pick<GitStore, 'readObjectSync'>, sha: string): ParsedCommit | null {
  const o = store.readObjectSync(sha);
  if (!o || o.type !== 'commit') return null;
  return parseCommitText(sha, o.body.toString('utf8'), false);
}

/** `Svc-*` trailers of a commit message written by the server (WriteDraft.commit). */
export function trailersOf(message: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of message.split('\n')) {
    const m = /^(Svc-[A-Za-z]+): ?(.*)$/.exec(line);
    if (m) out[m[1]!] = m[2]!.trim();
  }
  return out;
}

/** The unified diff one commit made to one node file (both paths for a move). */
export async function diffOf(gitdir: string, parent: string | null, sha: string, paths: string[]): Promise<string> {
  const out = await runGit(gitdir, [
    'diff',
    '--no-color',
    '--no-ext-diff',
    '--no-textconv',
    '-M',
    parent ?? EMPTY_TREE,
    sha,
    '--',
    ...paths,
  ]);
  return out.toString('utf8');
}
