/**
 * Historical node blobs for the timeline rebuild: every oid streams through one
 * `git cat-file --batch --buffer` (packed or loose alike, about 0.4 s per 10,000 blobs),
 * and each blob is handed to the caller as it arrives, so the whole history is never held
 * in memory at once. Used only when a tenant opens, never per request.
 */
import { spawn } from 'node:child_process';
import { gitEnv } from '../../kernel/git-store.js';

/** Calls `onBlob` for each oid in input order; an oid git reports missing is skipped. */
export function streamBlobs(gitdir: string, oids: string[], onBlob: (oid: string, text: string) => void): Promise<void> {
  if (oids.length === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['--git-dir', gitdir, 'cat-file', '--batch', '--buffer'], { env: gitEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
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
          if (header.length === 2 && header[1] === 'missing') continue;
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
