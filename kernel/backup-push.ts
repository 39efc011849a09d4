/**
 * The optional off-site copy (SVC_BACKUP_REMOTE): after each checkpoint a tenant's
 * repository is pushed to a git remote, `refs/heads/main` to `refs/heads/<org>`, with the
 * git CLI (any URL or path `git push` accepts; credentials the usual git way). Pushes of a
 * tenant never overlap: checkpoints during a push are covered by one more push after it.
 * The push is forced: the remote mirrors the tenant's history as served (in cluster mode a
 * take-over can drop a written-out commit that was never acknowledged). A failed push is
 * logged and retried with the next checkpoint; it never blocks or fails a write. This is a
 * backup, not a failover path (docs/scale-out.md).
 */
import { spawn } from 'node:child_process';
import type { Logger } from './config.js';
import { gitEnv } from './git/cli.js';

export class BackupPusher {
  private running = false;
  private again = false;
  private lastError: string | null = null;
  /** pushes that succeeded (tests and metrics read it) */
  pushed = 0;

  constructor(
    private readonly gitdir: string,
    private readonly remote: string,
    private readonly org: string,
    private readonly log: Logger,
  ) {}

  /** A checkpoint moved the ref: push (now, or after the push in flight). */
  checkpointed(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void this.loop();
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.again = false;
        await this.push();
      } while (this.again);
    } finally {
      this.running = false;
    }
  }

  private push(): Promise<void> {
    return new Promise((resolve) => {
      const child = spawn(
        'git',
        ['--git-dir', this.gitdir, 'push', '--quiet', '--force', this.remote, `refs/heads/main:refs/heads/${this.org}`],
        {
          env: gitEnv(),
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let err = '';
      child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      child.on('error', (e) => {
        err += String(e);
      });
      child.on('close', (code) => {
        if (code === 0) {
          this.pushed++;
          if (this.lastError) this.log.info('backup push recovered', { org: this.org });
          this.lastError = null;
        } else {
          const message = (err.trim().slice(0, 500) || `git push exited ${code}`).replace(/\/\/[^/@\s]+@/g, '//***@'); // never a credential in a log line
          if (message !== this.lastError)
            this.log.warn('backup push failed; retried after the next checkpoint', { org: this.org, error: message });
          this.lastError = message;
        }
        resolve();
      });
    });
  }
}
