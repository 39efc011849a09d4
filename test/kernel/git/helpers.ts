/** Shared by the git store tests (test/kernel/git/*.test.ts): a commit author, git CLI and fsck. */
import { execFileSync, spawnSync } from 'node:child_process';
import type { CommitAuthor } from '../../../kernel/git/types.js';

export const ann: CommitAuthor = { name: 'Ann Example', email: 'ann@example.com', timestamp: 1_700_000_000, timezoneOffset: -120 };

export function gitCli(gitdir: string, args: string[], input?: string): string {
  return execFileSync('git', ['--git-dir', gitdir, ...args], { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] });
}

export function fsck(gitdir: string): { status: number | null; output: string } {
  const r = spawnSync('git', ['--git-dir', gitdir, 'fsck', '--full', '--strict', '--no-dangling'], { encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}
