/**
 * A member whose lease renewal hangs (a connection dead without a reset, a paused process)
 * stops serving its tenants once their leases have surely run out in PostgreSQL, without
 * waiting for the renewal to come back (kernel/cluster/ownership.ts `lapse`); a renewal that
 * fails does not stop the chain of renewals, and the tenant is claimed again once they work.
 * A hand-off whose lease was taken over meanwhile reports the tenant lost, not handed off.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { createLogger, systemClock } from '../../kernel/config.js';
import { openDatabase, type Database } from '../../kernel/cluster/db.js';
import { Cluster } from '../../kernel/cluster/ownership.js';
import { pgOperational } from '../../kernel/cluster/pg-state.js';
import { creationHooks } from '../../kernel/cluster/runtime.js';
import { TenantManager } from '../../kernel/tenants.js';
import { createSandbox } from '../../sandbox/index.js';
import type { Sandbox } from '../../sandbox/types.js';
import { seedPack } from '../../seed-pack/index.js';
import { allPlugins } from '../../scripts/plugins.js';
import { freshSchemaUrl, sharedPostgres } from '../helpers/postgres.js';
import { until } from '../helpers/until.js';

/** long enough that a tenant's creation under a loaded CI machine stays within its renewed reservation */
const LEASE_MS = 4000;

describe('cluster: a member whose lease renewals hang', function () {
  this.timeout(60_000);
  let db: Database;
  let dataDir: string;
  let sandbox: Sandbox;
  let tenants: TenantManager | null = null;
  let cluster: Cluster | null = null;
  /** fails the hung renewal (a failed test must not leave stop() waiting on it) */
  let release: ((err: Error) => void) | null = null;

  before(async () => {
    const pgServer = await sharedPostgres();
    db = await openDatabase(
      await freshSchemaUrl(pgServer.url),
      createLogger(() => undefined, true),
    );
    dataDir = mkdtempSync(join(tmpdir(), 'wg-lapse-'));
    sandbox = createSandbox();
  });

  after(async () => {
    release?.(new Error('test over'));
    await cluster?.stop().catch(() => undefined);
    await tenants?.closeAll().catch(() => undefined);
    await sandbox?.close();
    await db?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const lines: string[] = [];

  it('closes its tenants once their leases surely ended, then claims them again when renewals work', async () => {
    const log = createLogger((line) => lines.push(line), true);
    // the renewal's own connection: works, then hangs (no answer, no error) until released
    let hanging: Promise<never> | null = null;
    let hungCalls = 0;
    const leasePool = {
      query: (text: string, values?: unknown[]) => {
        if (!hanging) return db.pool.query(text, values);
        hungCalls++;
        return hanging;
      },
    } as unknown as pg.Pool;
    cluster = new Cluster({ pool: db.pool, leasePool, log, leaseMs: LEASE_MS });
    const c = cluster;
    tenants = new TenantManager({
      dataDir,
      sandbox,
      pack: seedPack,
      plugins: allPlugins,
      clock: systemClock,
      log,
      fsync: true,
      creation: creationHooks(c, db),
      operational: pgOperational(db, (org) => c.fenceOf(org)),
    });
    c.attach(tenants);
    // renewals run while the tenant is created (its reservation is a lease like any other)
    await c.start();
    await tenants.create({ org: 'slow', adminName: 'Admin', adminEmail: 'admin@slow.test', plugins: allPlugins.map((p) => p.name) });
    // owned from the claim on, open once its take-over finished
    await until(
      () => c.ownedOrgs.includes('slow') && c.fenceOf('slow') !== null && tenants!.get('slow'),
      'the member to own and open the tenant',
    );

    hanging = new Promise<never>((_, reject) => (release = reject));
    hanging.catch(() => undefined);
    const hungAt = performance.now();
    await until(() => !c.ownedOrgs.includes('slow'), 'the tenant to be dropped while the renewal hangs');
    const after = performance.now() - hungAt;
    expect(hungCalls, 'a renewal was waiting').to.be.at.least(1);
    // not before the lease could have run out: at least the part of a lease the last renewal left
    expect(after, 'dropped before its lease could have ended').to.be.at.least(LEASE_MS / 3);
    expect(c.fenceOf('slow')).to.equal(null);
    const lost = lines.filter((l) => /tenant lost/.test(l));
    expect(lost.join('\n')).to.match(/no lease renewal came back before the lease ran out/);
    await until(() => tenants!.get('slow') === undefined, 'the tenant to be closed here');

    // the hung renewal fails (as the lease connection's query timeout makes it); renewals go on
    hanging = null;
    release!(new Error('Query read timeout'));
    release = null;
    await until(() => c.ownedOrgs.includes('slow') && c.fenceOf('slow') !== null, 'the tenant claimed again', 30_000);
  });
  it('a hand-off that finds its lease already taken over (the process was paused during it) reports the tenant lost, not handed off', async () => {
    const c = cluster!;
    expect(c.ownedOrgs).to.include('slow');
    // renewals stopped, so only the hand-off can notice; then the tenant is taken over meanwhile
    c.halt();
    await db.pool.query(
      `UPDATE wg_owners SET owner = 'intruder', fence = fence + 1, expires_at = now() + interval '1 minute' WHERE org = 'slow'`,
    );
    const before = lines.length;
    await (c as unknown as { handOff(org: string, to: string): Promise<void> }).handOff('slow', 'another-member');
    const after = lines.slice(before).join('\n');
    expect(after).to.not.match(/tenant handed off/);
    expect(after).to.match(/"why":"it was taken over before the hand-off completed".*"msg":"tenant lost"/);
    expect(c.ownedOrgs).to.not.include('slow');
    expect(tenants!.get('slow')).to.equal(undefined);
    const row = await db.pool.query(`SELECT owner FROM wg_owners WHERE org = 'slow'`);
    expect(row.rows[0].owner, 'the take-over stands').to.equal('intruder');
  });
});
