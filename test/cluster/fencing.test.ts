/**
 * Issue 15, item 3: the fencing token makes a former owner's late writes fail instead of
 * forking the history. Two members in one process on one data directory and one real
 * PostgreSQL: A owns a tenant; its lease is taken (the fence moves on) while A still runs;
 * A's next commit and operational write fail with 503 `not_owner`, A never moves the ref,
 * and the member that takes the tenant over serves exactly the acknowledged history. The
 * webhooks' cursors and delivery state (issue 24, item 6) are such operational writes: a former
 * owner can move neither, and the next owner resumes from the cursor the fence last accepted.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, systemClock } from '../../kernel/config.js';
import { openDatabase, type Database } from '../../kernel/cluster/db.js';
import { Cluster } from '../../kernel/cluster/ownership.js';
import { pgOperational } from '../../kernel/cluster/pg-state.js';
import { creationHooks } from '../../kernel/cluster/runtime.js';
import { isSvcError } from '../../kernel/errors.js';
import { TenantManager } from '../../kernel/tenants.js';
import type { Tenant } from '../../kernel/tenant.js';
import type { WriteActor } from '../../kernel/write-draft.js';
import { createSandbox } from '../../sandbox/index.js';
import type { Sandbox } from '../../sandbox/types.js';
import { seedPack } from '../../seed-pack/index.js';
import { allPlugins } from '../../scripts/plugins.js';
import {
  CursorBook,
  DeliveryLog,
  storesOf,
  type DeliveryAttempt,
  type StoredWebhook,
  type WebhookCursor,
} from '../../plugins/webhooks/store.js';
import { freshSchemaUrl, sharedPostgres } from '../helpers/postgres.js';

const quiet = createLogger(() => undefined, true);

describe('cluster: fencing a former owner', function () {
  this.timeout(60_000);
  let db: Database;
  let dataDir: string;
  let sandbox: Sandbox;
  const managers: TenantManager[] = [];

  function member(pool: Database['pool'] = db.pool): { cluster: Cluster; tenants: TenantManager } {
    const cluster = new Cluster({ pool, log: quiet, leaseMs: 60_000 });
    const tenants = new TenantManager({
      dataDir,
      sandbox,
      pack: seedPack,
      plugins: allPlugins,
      clock: systemClock,
      log: quiet,
      fsync: true,
      creation: creationHooks(cluster, db),
      operational: pgOperational(db, (org) => cluster.fenceOf(org)),
    });
    cluster.attach(tenants);
    managers.push(tenants);
    return { cluster, tenants };
  }

  async function ownerRow(org: string): Promise<{ owner: string; fence: number; head: string | null }> {
    const r = await db.pool.query('SELECT owner, fence, head FROM wg_owners WHERE org = $1', [org]);
    return { ...r.rows[0], fence: Number(r.rows[0].fence) };
  }

  const refOf = (org: string) =>
    spawnSync('git', ['--git-dir', join(dataDir, 'tenants', org, 'graph.git'), 'rev-parse', 'refs/heads/main'], {
      encoding: 'utf8',
    }).stdout.trim();

  function put(tenant: Tenant, person: string, id: string): Promise<unknown> {
    const actor: WriteActor = { personId: person, name: 'Admin', email: 'admin@acme.test', agent: null, session: null };
    return tenant.write(actor, { op: 'test_put', via: 'rest' }, async (draft) => {
      draft.put({ frontmatter: { id, type: 'task', summary: `node ${id}` }, body: '' });
    });
  }

  before(async () => {
    const pg = await sharedPostgres();
    db = await openDatabase(await freshSchemaUrl(pg.url), quiet);
    dataDir = mkdtempSync(join(tmpdir(), 'wg-fence-'));
    sandbox = createSandbox();
  });

  after(async () => {
    for (const m of managers) await m.closeAll().catch(() => undefined);
    await sandbox?.close();
    await db?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('a late commit and a late operational write of a former owner fail; the next owner serves the acknowledged history', async () => {
    const a = member();
    const created = await a.tenants.create({
      org: 'acme',
      adminName: 'Admin',
      adminEmail: 'admin@acme.test',
      plugins: allPlugins.map((p) => p.name),
    });
    const registered = await ownerRow('acme');
    expect(registered.head, 'the creation commit was acknowledged under the reservation fence').to.be.a('string');

    const tenantA = (await a.cluster.claim('acme'))!;
    expect(tenantA).to.not.equal(null);
    await put(tenantA, created.person, 'task-before');
    const acked = await ownerRow('acme');
    expect(acked.head).to.equal(tenantA.head);

    // another process takes the lease over while A still runs (A was paused, partitioned, slow)
    await db.pool.query(
      `UPDATE wg_owners SET owner = 'intruder', fence = fence + 1, expires_at = now() + interval '1 minute' WHERE org = 'acme'`,
    );

    let commitError: unknown = null;
    await put(tenantA, created.person, 'task-late').catch((err: unknown) => (commitError = err));
    expect(isSvcError(commitError) && commitError.status === 503 && commitError.code === 'not_owner', String(commitError)).to.equal(true);
    let stateError: unknown = null;
    await tenantA.state
      .collection<{ v: number }>('fence-test')
      .set('k', { v: 1 })
      .catch((err: unknown) => (stateError = err));
    expect(isSvcError(stateError) && stateError.status === 503, String(stateError)).to.equal(true);
    // A's write-out of the late commit does not move the shared ref
    await tenantA.store.settled().catch(() => undefined);
    expect(refOf('acme')).to.not.equal(tenantA.head);
    expect((await ownerRow('acme')).head).to.equal(acked.head);

    // the lease expires; B takes the tenant over from the shared repository
    await db.pool.query(`UPDATE wg_owners SET expires_at = now() - interval '1 second' WHERE org = 'acme'`);
    const b = member();
    const tenantB = (await b.cluster.claim('acme'))!;
    expect(tenantB).to.not.equal(null);
    expect(tenantB.head, 'B serves the acknowledged head').to.equal(acked.head);
    expect(tenantB.index.has('task-before')).to.equal(true);
    expect(tenantB.index.has('task-late'), 'the unacknowledged late commit is not in the history').to.equal(false);
    expect(tenantB.state.collection('fence-test').get('k')).to.equal(undefined);
    await put(tenantB, created.person, 'task-after');
    expect((await ownerRow('acme')).head).to.equal(tenantB.head);

    // A still cannot write: its store stopped at the first refused acknowledgement
    let again: unknown = null;
    await put(tenantA, created.person, 'task-later').catch((err: unknown) => (again = err));
    expect(again).to.not.equal(null);
    await tenantB.store.settled();
    expect(refOf('acme')).to.equal(tenantB.head);
    const fsck = spawnSync(
      'git',
      ['--git-dir', join(dataDir, 'tenants', 'acme', 'graph.git'), 'fsck', '--full', '--strict', '--no-dangling'],
      { encoding: 'utf8' },
    );
    expect(fsck.status, fsck.stdout + fsck.stderr).to.equal(0);
  });

  it('a write whose head the database did not confirm answers 503 owner_unavailable; the tenant reopens at the confirmed head and takes writes', async () => {
    // the pool as the cluster sees it, with the acknowledged heads' statement failing on demand
    let failHeads = false;
    const flaky = new Proxy(db.pool, {
      get(target, prop) {
        if (prop === 'query')
          return (q: unknown, ...rest: unknown[]) =>
            failHeads && (q as { name?: string } | null)?.name === 'wg_record_heads'
              ? Promise.reject(new Error('Connection terminated unexpectedly'))
              : (target.query as (...a: unknown[]) => unknown).call(target, q, ...rest);
        const v: unknown = Reflect.get(target, prop, target);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const a = member(flaky);
    const created = await a.tenants.create({ org: 'flaky', adminName: 'Admin', adminEmail: 'admin@flaky.test', plugins: ['core'] });
    const first = (await a.cluster.claim('flaky'))!;
    expect(first).to.not.equal(null);
    await put(first, created.person, 'task-one');
    const confirmed = (await ownerRow('flaky')).head;
    expect(confirmed).to.equal(first.head);

    failHeads = true;
    let error: unknown = null;
    await put(first, created.person, 'task-unconfirmed').catch((err: unknown) => (error = err));
    failHeads = false;
    expect(isSvcError(error) && error.status === 503 && error.code === 'owner_unavailable', String(error)).to.equal(true);
    expect(a.cluster.localTenant('flaky'), 'no longer served from the stopped store').to.equal(undefined);

    // the next renewal finds the lease still this process's and opens the tenant again
    await (a.cluster as unknown as { renew(): Promise<void> }).renew();
    let again: Tenant | undefined;
    for (const deadline = Date.now() + 30_000; !again && Date.now() < deadline;) {
      again = a.cluster.localTenant('flaky');
      if (!again) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(again, 'reopened').to.not.equal(undefined);
    expect(again).to.not.equal(first);
    expect(again!.head, 'the head the database confirmed').to.equal(confirmed);
    expect(again!.index.has('task-one')).to.equal(true);
    expect(again!.index.has('task-unconfirmed'), 'the unconfirmed commit is not in the history').to.equal(false);
    await put(again!, created.person, 'task-two');
    expect((await ownerRow('flaky')).head).to.equal(again!.head);
    await again!.store.settled();
    expect(refOf('flaky')).to.equal(again!.head);
    const fsck = spawnSync(
      'git',
      ['--git-dir', join(dataDir, 'tenants', 'flaky', 'graph.git'), 'fsck', '--full', '--strict', '--no-dangling'],
      { encoding: 'utf8' },
    );
    expect(fsck.status, fsck.stdout + fsck.stderr).to.equal(0);
  });

  it('a former owner cannot move a webhook cursor or write delivery state; the next owner resumes from the accepted cursor', async () => {
    const a = member();
    await a.tenants.create({ org: 'hooks', adminName: 'Admin', adminEmail: 'admin@hooks.test', plugins: allPlugins.map((p) => p.name) });
    const tenantA = (await a.cluster.claim('hooks'))!;
    expect(tenantA).to.not.equal(null);
    const stores = storesOf(tenantA);
    const now = new Date().toISOString();
    const hook: StoredWebhook = {
      id: 'wh_fence',
      url: 'https://hooks.example.com/in',
      types: [],
      project: null,
      description: '',
      format: 'json',
      enabled: true,
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      previous_secret: null,
      previous_until: null,
      disabled_reason: null,
      created: now,
      created_by: 'person-admin',
      updated: now,
    };
    const accepted: WebhookCursor = { cursor: 3, attempts: 0, failing_since: null, next_attempt_ms: null, last_success: now };
    const attempt = (event: number): DeliveryAttempt => ({
      at: now,
      event,
      type: 'node.created',
      message_id: `evt_hooks_${event}`,
      attempt: 1,
      kind: 'delivery',
      ok: true,
      status: 200,
      latency_ms: 3,
      error: null,
    });
    // written by the owner under its fence
    await stores.hooks.set(hook.id, hook);
    await stores.cursors.set(hook.id, accepted);
    await stores.deliveries.set(hook.id, [attempt(3)]);
    const rows = async () =>
      (
        await db.pool.query(
          `SELECT collection, key, value FROM wg_state WHERE org = 'hooks' AND collection LIKE 'webhook%' ORDER BY collection, key`,
        )
      ).rows;
    const before = await rows();
    expect(before.map((r) => r.collection)).to.deep.equal(['webhook-cursors', 'webhook-deliveries', 'webhooks']);

    // another process takes the lease over while A still runs (and still believes it owns the tenant)
    await db.pool.query(
      `UPDATE wg_owners SET owner = 'intruder', fence = fence + 1, expires_at = now() + interval '1 minute' WHERE org = 'hooks'`,
    );
    const refused = (err: unknown) => isSvcError(err) && err.status === 503 && err.code === 'not_owner';

    // the engine's paths: the cursor written behind a delivery, the delivery log after an attempt
    const failures: unknown[] = [];
    const book = new CursorBook(stores, (err) => failures.push(err));
    book.set(hook.id, { ...accepted, cursor: 9 });
    await book.settled();
    const log = new DeliveryLog(stores, (err) => failures.push(err));
    log.append(hook.id, attempt(9));
    await log.settled();
    expect(failures.length, failures.map(String).join('; ')).to.equal(2);
    expect(failures.every(refused), failures.map(String).join('; ')).to.equal(true);
    // a durable write (an admin's re-enable, a disable after a day of failures)
    let direct: unknown = null;
    await stores.cursors.set(hook.id, { ...accepted, cursor: 12, attempts: 4 }).catch((err: unknown) => (direct = err));
    expect(direct, 'a direct cursor write').to.not.equal(null);

    // nothing changed in PostgreSQL, and A's memory is back to what PostgreSQL holds
    expect(await rows()).to.deep.equal(before);
    expect(stores.cursors.get(hook.id)).to.deep.equal(accepted);

    // the next owner resumes from the accepted cursor
    await db.pool.query(`UPDATE wg_owners SET expires_at = now() - interval '1 second' WHERE org = 'hooks'`);
    const b = member();
    const tenantB = (await b.cluster.claim('hooks'))!;
    expect(tenantB).to.not.equal(null);
    expect(storesOf(tenantB).cursors.get(hook.id)).to.deep.equal(accepted);
    expect(storesOf(tenantB).deliveries.get(hook.id)).to.deep.equal([attempt(3)]);
    await storesOf(tenantB).cursors.set(hook.id, { ...accepted, cursor: 9 });
    expect((await rows()).find((r) => r.collection === 'webhook-cursors')!.value.cursor).to.equal(9);
  });
});
