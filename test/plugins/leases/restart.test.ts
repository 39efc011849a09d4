/**
 * Issue rule 3: lease state is operational state that survives a server restart (it lives in
 * the tenant's state store, outside the git repository), and expiry is computed from the
 * injected clock, not from timers.
 */
import { expect } from 'chai';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, ManualClock } from '../../../kernel/config.js';
import { startServer, type RunningServer } from '../../../kernel/server.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { leasesPlugin } from '../../../plugins/leases/index.js';
import { addPerson, onPostgres, startTestServer, testServerConfig } from '../../helpers/harness.js';
import { GRACE, post, tasks, TTL } from './helpers.js';

async function call(server: RunningServer, path: string, token: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(server.url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body ?? {}),
  });
  return { status: res.status, body: await res.json() };
}

describe('leases: durability across a restart', function () {
  this.timeout(30_000);

  it('leases and reservations survive a restart; expiry still comes from the clock', async () => {
    const first = await startTestServer({ plugins: [corePlugin, leasesPlugin], keepData: true });
    const dataDir = first.dataDir;
    let second: RunningServer | null = null;
    try {
      const alice = await addPerson(first, 'Alice');
      const bob = await addPerson(first, 'Bob');
      await tasks(first, ['task-r1', 'task-r2', 'task-r3']);
      const claim = await post(first, '/v1/nodes/task-r1/claim', alice.token, { session: 'run-1' });
      expect(claim.status).to.equal(200);
      await post(first, '/v1/nodes/task-r2/claim', alice.token);
      await post(first, '/v1/nodes/task-r2/reserve', alice.token);
      if (!onPostgres) {
        // the embedded store's file (in cluster mode the rows are in PostgreSQL)
        const stateFile = join(dataDir, 'tenants', first.org, 'state', 'leases.json');
        expect(existsSync(stateFile)).to.equal(true);
        expect(Object.keys(JSON.parse(readFileSync(stateFile, 'utf8')))).to.have.members(['task-r1', 'task-r2']);
      }
      await first.close();

      const clock = new ManualClock();
      const config = await testServerConfig(dataDir);
      second = await startServer({ config, plugins: [corePlugin, leasesPlugin], clock, log: createLogger(() => undefined) });
      expect(second.bootstrap).to.equal(null);

      const taken = await call(second, '/v1/nodes/task-r1/claim', bob.token);
      expect(taken.status).to.equal(409);
      expect(taken.body.error.details).to.include({ holder: alice.id, session: 'run-1', expires_at: claim.body.lease.expires_at });
      const parked = await call(second, '/v1/nodes/task-r2/claim', bob.token);
      expect(parked.status).to.equal(409);
      expect(parked.body.error.details).to.include({ holder: alice.id, state: 'reserved' });
      const renewAll = await call(second, '/v1/queue/renew', alice.token);
      expect(renewAll.body).to.include({ count: 1, skipped_reserved: 1 });
      expect(renewAll.body.renewed).to.deep.equal(['task-r1']);

      // no timer needed: moving the clock past the TTL and the grace window frees both
      clock.advance(GRACE + TTL + 1);
      expect((await call(second, '/v1/nodes/task-r1/claim', bob.token)).status).to.equal(200);
      expect((await call(second, '/v1/nodes/task-r2/claim', bob.token)).status).to.equal(200);
      const lost = await call(second, '/v1/nodes/task-r1/renew', alice.token, { session: 'run-1' });
      expect(lost.body.error).to.include({ code: 'lease_lost' });
    } finally {
      await second?.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
