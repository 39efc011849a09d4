/**
 * Issue 15, item 5: the optional off-site copy. With SVC_BACKUP_REMOTE every tenant's
 * repository is pushed to a standard git remote after each checkpoint; a remote that fails
 * is logged and never fails or blocks a write.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/harness.js';
import { until } from '../helpers/until.js';

function git(args: string[]): { status: number | null; out: string } {
  const r = spawnSync('git', args, { encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}`.trim() };
}

describe('off-site copy: SVC_BACKUP_REMOTE', function () {
  this.timeout(60_000);
  let remote: string;
  let t: TestServer;

  before(async () => {
    remote = mkdtempSync(join(tmpdir(), 'wg-remote-'));
    expect(git(['init', '--bare', '--quiet', remote]).status).to.equal(0);
  });
  after(async () => {
    await t?.close();
    rmSync(remote, { recursive: true, force: true });
  });

  it('each checkpoint is pushed to refs/heads/<org> of a standard git remote; the copy clones', async () => {
    t = await startTestServer({ config: { backupRemote: remote, fsync: true } });
    for (let i = 0; i < 3; i++) {
      const r = await t.api('POST', '/v1/nodes', { body: { nodes: [{ id: `task-offsite-${i}`, type: 'task', summary: `copy ${i}` }] } });
      expect(r.status, r.text).to.equal(200);
    }
    const tenant = t.server.services.tenants.get(t.org)!;
    await tenant.store.settled();
    const head = tenant.head!;
    await until(() => git(['--git-dir', remote, 'rev-parse', `refs/heads/${t.org}`]).out === head);
    const clone = mkdtempSync(join(tmpdir(), 'wg-clone-'));
    try {
      expect(git(['clone', '--quiet', '--branch', t.org, remote, join(clone, 'c')]).status).to.equal(0);
      expect(git(['-C', join(clone, 'c'), 'ls-files']).out).to.match(/task-offsite-2\.md/);
    } finally {
      rmSync(clone, { recursive: true, force: true });
    }
  });

  it('a failing remote is logged and retried; writes are not affected', async () => {
    await t.close();
    const missing = join(remote, 'does-not-exist.git');
    t = await startTestServer({ config: { backupRemote: `file://${missing}`, fsync: false } });
    const r = await t.api('POST', '/v1/nodes', { body: { nodes: [{ id: 'task-offsite-fail', type: 'task', summary: 'still written' }] } });
    expect(r.status, r.text).to.equal(200);
    await until(() => t.logs.some((l) => l.includes('backup push failed')));
    expect((await t.api('GET', '/v1/nodes/task-offsite-fail')).status).to.equal(200);
  });
});
