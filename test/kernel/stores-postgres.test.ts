/**
 * What only the PostgreSQL operational stores of cluster mode have (the conformance suite both
 * backends pass: test/kernel/stores.test.ts): fencing, migrations, the data-directory-wide
 * collections kept fresh across processes, a tenant opened on them, the import of file stores.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { FileTokenStore, generateToken, type TokenRecord } from '../../kernel/auth.js';
import { isSvcError } from '../../kernel/errors.js';
import { FileStateStore } from '../../kernel/state-store.js';
import { systemClock } from '../../kernel/config.js';
import { DEFAULT_LIMITS, Tenant } from '../../kernel/tenant.js';
import type { Sandbox } from '../../sandbox/types.js';
import { seedPack } from '../../seed-pack/index.js';
import type { KernelServices } from '../../kernel/plugin.js';
import { WorkgraphOAuthProvider } from '../../plugins/oauth/provider.js';
import { migrate, openDatabase, type Database } from '../../kernel/cluster/db.js';
import { MIGRATIONS } from '../../kernel/cluster/migrations.js';
import { pgGlobalStore, pgGlobalStores, pgOperational, PgStateStore } from '../../kernel/cluster/pg-state.js';
import { orgOfToken, PgTokenStore } from '../../kernel/cluster/pg-tokens.js';
import { importTenantFiles } from '../../kernel/cluster/pg-import.js';
import { freshSchemaUrl, sharedPostgres } from '../helpers/postgres.js';
import { orgName, record } from './stores-helpers.js';
import { until } from '../helpers/until.js';

let url = '';
let db: Database;
const opened: Array<{ close?(): Promise<void> }> = [];

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

function expectNotOwner(err: unknown): void {
  expect(isSvcError(err), String(err)).to.equal(true);
  expect(err).to.include({ status: 503, code: 'not_owner' });
}

describe('operational stores: postgres only', () => {
  let base = '';
  /** the stores' local directory (not the system's temp directory itself: they create auth/ and state/ in it) */
  let local = '';
  before(async () => {
    base = (await sharedPostgres()).url;
    url ||= await freshSchemaUrl(base);
    db ??= await openDatabase(url);
    local = mkdtempSync(join(tmpdir(), 'wg-pg-stores-'));
  });
  after(async () => {
    for (const s of opened.splice(0)) await s.close?.();
    await db?.close();
    rmSync(local, { recursive: true, force: true });
  });

  async function owned(fence = 1): Promise<string> {
    const org = orgName();
    await db.pool.query("INSERT INTO wg_owners (org, owner, fence, expires_at) VALUES ($1, 'me', $2, now() + interval '1 hour')", [
      org,
      fence,
    ]);
    return org;
  }
  const bump = (org: string) => db.pool.query('UPDATE wg_owners SET fence = fence + 1 WHERE org = $1', [org]);

  it('fencing: once the fence moved, set/delete/batch and token mutations fail 503 not_owner and memory is unchanged', async () => {
    const org = await owned();
    const fences = new Map([[org, 1 as number | null]]);
    const { state, tokens } = await pgOperational(db, (o) => fences.get(o))(org, local);
    opened.push(state, tokens);
    const c = state.collection<string>('leases');
    await c.set('a', 'mine');
    await c.set('b', 'mine too');
    const rec = record(generateToken('pat'));
    await tokens.mutate((records) => void records.set(rec.hash, rec));
    // the insert notifies this store too, and its re-read bumps `version` whenever it lands:
    // waited for here, so the version check below sees only the refused mutation
    const inserted = tokens.version;
    await until(() => tokens.version > inserted, "the store's re-read on its own notification");

    await bump(org); // another process took the tenant over
    expectNotOwner(await rejection(c.set('a', 'late')));
    expect(c.get('a')).to.equal('mine');
    expectNotOwner(await rejection(c.set('new', 'late')));
    expect(c.has('new')).to.equal(false);
    expectNotOwner(await rejection(c.delete('b')));
    expect(c.get('b')).to.equal('mine too');
    expectNotOwner(
      await rejection(
        c.batch([
          { key: 'a', value: null },
          { key: 'c', value: 'late' },
        ]),
      ),
    );
    expect([...c.entries()].sort()).to.deep.equal([
      ['a', 'mine'],
      ['b', 'mine too'],
    ]);
    // several writes queued behind a failing one all fail and all are undone
    const burst = [c.set('a', 'x1'), c.set('a', 'x2'), c.delete('b'), c.set('d', 'x3')];
    expect(c.get('a')).to.equal('x2');
    for (const p of burst) expectNotOwner(await rejection(p));
    expect([...c.entries()].sort()).to.deep.equal([
      ['a', 'mine'],
      ['b', 'mine too'],
    ]);
    const v = tokens.version;
    expectNotOwner(await rejection(tokens.mutate((records) => void records.delete(rec.hash))));
    expect(tokens.find(rec.hash)).to.not.equal(undefined);
    expect(tokens.version).to.equal(v);

    // not the owner at all: refused without asking the database
    fences.set(org, null);
    expectNotOwner(await rejection(c.set('a', 'x')));
    expectNotOwner(await rejection(tokens.mutate(() => undefined)));

    // nothing of it reached the database
    const again = new PgStateStore(db, org, () => 2);
    await again.load();
    expect([...again.collection('leases').entries()].sort()).to.deep.equal([
      ['a', 'mine'],
      ['b', 'mine too'],
    ]);
    // the new owner (fence 2) writes
    await again.collection('leases').set('a', 'new owner');
    expect((await db.pool.query("SELECT value FROM wg_state WHERE org = $1 AND key = 'a'", [org])).rows[0].value).to.equal('new owner');
  });

  it('fencing: a write racing a change of owner either lands before it (and a load after it sees it) or fails', async () => {
    const org = await owned();
    const state = new PgStateStore(db, org, () => 1);
    await state.load();
    const c = state.collection<number>('race');
    await c.set('warm', 0);
    const outcomes: Array<Promise<'ok' | 'refused'>> = [];
    const attempt = (key: string, n: number) =>
      c.set(key, n).then(
        () => 'ok' as const,
        (err: unknown) => {
          expectNotOwner(err);
          return 'refused' as const;
        },
      );
    let bumped: Promise<unknown> | null = null;
    for (let i = 0; i < 60; i++) {
      outcomes.push(attempt(`k${i}`, i));
      if (i === 25) bumped = bump(org);
      if (i % 5 === 0) await new Promise((r) => setImmediate(r));
    }
    await bumped;
    outcomes.push(attempt('k60', 60)); // after the change of owner: refused for sure
    const results = await Promise.all(outcomes);
    const after = new PgStateStore(db, org, () => 2);
    await after.load();
    const seen = after.collection<number>('race');
    results.forEach((r, i) => expect(seen.has(`k${i}`), `k${i} ${r}`).to.equal(r === 'ok'));
    expect(results[60]).to.equal('refused');
    expect(seen.get('warm')).to.equal(0);
    // the refused ones were undone in the old owner's memory too
    results.forEach((r, i) => expect(c.has(`k${i}`)).to.equal(r === 'ok'));
  });

  it('tokens: unfenced writes (operator tools), NOTIFY to the owner, routing by hash, a hash of another tenant is refused', async () => {
    const org = await owned();
    const owner = new PgTokenStore(db, org, () => 1, local);
    const cli = new PgTokenStore(db, org, () => undefined, local);
    opened.push(owner, cli);
    await owner.load();
    await cli.load();
    const token = generateToken('pat');
    const rec = record(token);
    await cli.mutate((records) => void records.set(rec.hash, rec));
    expect(await orgOfToken(db, rec.hash)).to.equal(org);
    expect(await orgOfToken(db, 'f'.repeat(64))).to.equal(null);
    await until(() => owner.find(rec.hash) !== undefined, 'the notification');
    expect(owner.reload()).to.equal(true);
    expect(owner.reload()).to.equal(false);

    const elsewhere = await owned();
    const intruder = new PgTokenStore(db, elsewhere, () => 1, local);
    opened.push(intruder);
    await intruder.load();
    const err = await rejection(intruder.mutate((records) => void records.set(rec.hash, { ...rec, person: 'person-evil' })));
    expect(err).to.include({ status: 409 });
    expect((await db.pool.query('SELECT org, record FROM wg_tokens WHERE hash = $1', [rec.hash])).rows[0]).to.deep.include({ org });
    expect(intruder.all()).to.deep.equal([]);
  });

  it('tokens: the listener reconnects after its connection dropped and re-reads', async () => {
    const own = await openDatabase(url);
    try {
      const org = await owned();
      const owner = new PgTokenStore(own, org, () => 1, local);
      await owner.load();
      (own as unknown as { dropListener(): void }).dropListener();
      const rec = record(generateToken('pat'));
      await new PgTokenStore(db, org, () => undefined, local).mutate((records) => void records.set(rec.hash, rec));
      await until(() => owner.find(rec.hash) !== undefined, 'the re-read after reconnecting');
      await owner.close();
    } finally {
      await own.close();
    }
  });

  it('global collections: unfenced, kept fresh across processes, read-through on a miss', async () => {
    const other = await openDatabase(url);
    try {
      const a = pgGlobalStore(db, 'oauth');
      const b = pgGlobalStore(other, 'oauth');
      opened.push(a);
      const ca = a.collection<{ id: string }>('clients');
      const cb = b.collection<{ id: string }>('clients');
      expect(await cb.fetch('nobody')).to.equal(undefined);
      await ca.set('client-1', { id: 'client-1' });
      // read-through: at once, whether or not the notification arrived
      expect(await cb.fetch('client-1')).to.deep.equal({ id: 'client-1' });
      await ca.set('client-2', { id: 'client-2' });
      await until(() => cb.has('client-2'), 'the notification of client-2');
      await ca.batch([
        { key: 'client-1', value: null },
        { key: 'client-3', value: { id: 'client-3' } },
      ]);
      await until(() => !cb.has('client-1') && cb.has('client-3'), 'the notification of the batch');
      await cb.set('client-2', { id: 'client-2b' });
      await until(() => ca.get('client-2')?.id === 'client-2b', 'the notification back');
      // stored under the store's name: another global store of the same collection name is separate
      const app = pgGlobalStore(db, 'app').collection('clients');
      expect(await app.fetch('client-2')).to.equal(undefined);
      // the services hook keeps one store a name
      const hook = pgGlobalStores(db);
      expect(hook('oauth')).to.equal(hook('oauth'));
      expect(hook('oauth')).to.not.equal(hook('app'));
      expect(await hook('oauth').collection<{ id: string }>('clients').fetch('client-3')).to.deep.equal({ id: 'client-3' });
      // a store opened later loads what is there
      const late = pgGlobalStore(other, 'oauth').collection<{ id: string }>('clients');
      expect(await late.fetch('client-3')).to.deep.equal({ id: 'client-3' });
      await until(() => late.size === 2, 'the lazy load');
      await b.close();
    } finally {
      await other.close();
    }
  });

  it('global collections: fetch with fresh reads the table even when this process has the key (a change whose notification is not in)', async () => {
    const store = pgGlobalStore(db, 'oauth');
    opened.push(store);
    const c = store.collection<{ n: number }>('fresh-read');
    await c.set('k', { n: 1 });
    // another process's change, as the table has it before its notification arrives (none is sent here)
    await db.pool.query(`UPDATE wg_state SET value = '{"n":2}'::jsonb WHERE org = '' AND collection LIKE '%fresh-read' AND key = 'k'`);
    expect(await c.fetch('k'), 'kept here: the stale value').to.deep.equal({ n: 1 });
    expect(await c.fetch('k', { fresh: true })).to.deep.equal({ n: 2 });
    expect(c.get('k'), 'and kept').to.deep.equal({ n: 2 });
    await db.pool.query(`DELETE FROM wg_state WHERE org = '' AND collection LIKE '%fresh-read' AND key = 'k'`);
    expect(await c.fetch('k', { fresh: true }), 'deleted elsewhere').to.equal(undefined);
    expect(c.has('k')).to.equal(false);
  });

  it('global collections: take is exact across processes (one of racing takers gets each record)', async () => {
    const other = await openDatabase(url);
    try {
      const sa = pgGlobalStore(db, 'oauth');
      const sb = pgGlobalStore(other, 'oauth');
      opened.push(sa);
      const a = sa.collection<{ n: number }>('take-race');
      const b = sb.collection<{ n: number }>('take-race');
      for (let i = 0; i < 20; i++) {
        await a.set(`k${i}`, { n: i });
        expect(await b.fetch(`k${i}`)).to.deep.equal({ n: i });
        const got = await Promise.all([a.take(`k${i}`), b.take(`k${i}`), a.take(`k${i}`)]);
        expect(got.filter(Boolean), `k${i}`).to.deep.equal([{ n: i }]);
      }
      await until(() => !b.has('k19'), 'the notification of the take');
      expect(await b.fetch('k0')).to.equal(undefined);
      await sb.close();
    } finally {
      await other.close();
    }
  });

  it('the OAuth plugin through services.globalStore: a client registered on one process is known on another at once', async () => {
    const other = await openDatabase(url);
    try {
      const services = (database: Database) =>
        ({ config: { dataDir: '/nonexistent' }, clock: systemClock, globalStore: pgGlobalStores(database) }) as unknown as KernelServices;
      const one = new WorkgraphOAuthProvider(services(db));
      const two = new WorkgraphOAuthProvider(services(other));
      const client = { client_id: `client-${orgName()}`, redirect_uris: ['http://127.0.0.1/cb'], client_name: 'test' };
      await one.clientsStore.registerClient(client as never);
      expect(await two.clientsStore.getClient(client.client_id)).to.deep.include({ client_name: 'test' });
      const rows = await db.pool.query("SELECT collection FROM wg_state WHERE org = '' AND key = $1", [client.client_id]);
      expect(rows.rows).to.deep.equal([{ collection: 'oauth/clients' }]);
    } finally {
      await other.close();
    }
  });

  it('Tenant.open takes its stores from deps.operational (pgOperational) and closes them', async () => {
    const org = await owned();
    const dir = mkdtempSync(join(tmpdir(), 'wg-tenant-'));
    try {
      const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
      const deps = {
        sandbox: {} as Sandbox,
        pack: seedPack,
        nativeTypes: [],
        nativeEdges: [],
        clock: systemClock,
        log: quiet,
        fsync: false,
        operational: pgOperational(db, () => 1),
      };
      await Tenant.writeConfig(dir, { org, plugins: [], limits: { ...DEFAULT_LIMITS }, created: new Date().toISOString() });
      const tenant = await Tenant.open(dir, deps);
      expect(tenant.state).to.be.instanceOf(PgStateStore);
      expect(tenant.tokens).to.be.instanceOf(PgTokenStore);
      expect(tenant.tokens.dir).to.equal(join(dir, 'auth'));
      const rec = record(generateToken('pat'));
      await tenant.tokens.mutate((records) => void records.set(rec.hash, rec));
      await tenant.state.collection('leases').set('task-1', { by: 'me' });
      tenant.tokens.touch(rec.hash, Date.parse('2026-03-04T05:06:07.000Z'));
      await tenant.close(); // flushes last_used
      const again = await Tenant.open(dir, deps);
      expect(again.tokens.find(rec.hash)?.last_used).to.equal('2026-03-04T05:06:07.000Z');
      expect(again.state.collection('leases').get('task-1')).to.deep.equal({ by: 'me' });
      await again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('importTenantFiles copies the file stores in; the PostgreSQL stores give the export the same files back', async () => {
    const org = await owned();
    const dir = mkdtempSync(join(tmpdir(), 'wg-import-'));
    try {
      const fileTokens = new FileTokenStore(join(dir, 'auth'));
      const a = record(generateToken('pat'), 'person-a');
      const b = record(generateToken('pat'), 'person-b');
      await fileTokens.mutate((records) => {
        records.set(a.hash, a);
        records.set(b.hash, b);
      });
      const fileState = new FileStateStore(join(dir, 'state'));
      await fileState.collection('leases').batch([
        { key: 'task-1', value: { by: 'person-a', expires_ms: 5 } },
        { key: 'task-2', value: { by: 'person-b', expires_ms: 6 } },
      ]);
      await fileState.collection('queue-mutes').set('person-a', { muted: ['x'] });
      expect(await importTenantFiles(db, org, dir)).to.deep.equal({ tokens: 2, rows: 3 });
      const { state, tokens } = await pgOperational(db, () => 1)(org, dir);
      opened.push(state, tokens);
      expect(tokens.find(a.hash)?.person).to.equal('person-a');
      expect(state.collection('leases').get('task-2')).to.deep.equal({ by: 'person-b', expires_ms: 6 });
      // the export's images, in the file stores' formats
      const image = JSON.parse(tokens.exportFile!().toString()) as TokenRecord[];
      expect(image.map((r) => r.hash).sort()).to.deep.equal([a.hash, b.hash].sort());
      expect(await state.dump!()).to.deep.equal({
        leases: { 'task-1': { by: 'person-a', expires_ms: 5 }, 'task-2': { by: 'person-b', expires_ms: 6 } },
        'queue-mutes': { 'person-a': { muted: ['x'] } },
      });
      // a restore replaces
      await fileTokens.mutate((records) => void records.delete(b.hash));
      await importTenantFiles(db, org, dir, { replace: true });
      await until(() => tokens.find(b.hash) === undefined, 'the re-read after the import');
      expect(tokens.hashes()).to.deep.equal([a.hash]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('migrations: a fresh schema gets every version; a rerun is a no-op; two processes starting together both succeed', async () => {
    const fresh = await freshSchemaUrl(base);
    const [one, two] = await Promise.all([openDatabase(fresh), openDatabase(fresh)]);
    try {
      const { rows } = await one.pool.query<{ version: number }>('SELECT version FROM wg_schema_migrations ORDER BY version');
      expect(rows.map((r) => r.version)).to.deep.equal(MIGRATIONS.map((m) => m.version));
      expect(await migrate(one.pool, MIGRATIONS)).to.deep.equal([]);
      const tables = await one.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN ('wg_tenants','wg_tokens','wg_state','wg_owners','wg_members')",
      );
      expect(tables.rows[0]!.n).to.equal(5);
    } finally {
      await one.close();
      await two.close();
    }
  });

  it('migrations: a new version is applied on the next start; a database from the future is refused clearly', async () => {
    const fresh = await freshSchemaUrl(base);
    await (await openDatabase(fresh)).close();
    const extra = [...MIGRATIONS, { version: 900, name: 'test column', sql: 'ALTER TABLE wg_members ADD COLUMN test_note text' }];
    const upgraded = await openDatabase(fresh, { migrations: extra });
    await upgraded.pool.query("INSERT INTO wg_members (id, url, pid, host, test_note) VALUES ('m', 'u', 1, 'h', 'x')");
    await upgraded.close();
    let err: unknown;
    try {
      await openDatabase(fresh);
    } catch (e) {
      err = e;
    }
    expect(String(err)).to.match(/schema is at version 900 but this workgraph knows versions up to \d+/);
    // a failing migration leaves nothing half-applied
    const broken = [
      ...extra,
      { version: 901, name: 'broken', sql: 'ALTER TABLE wg_members ADD COLUMN ok2 text; SELECT no_such_function()' },
    ];
    err = undefined;
    try {
      await openDatabase(fresh, { migrations: broken });
    } catch (e) {
      err = e;
    }
    expect(String(err)).to.match(/migration 901 \(broken\) failed/);
    const c = new pg.Client({ connectionString: fresh });
    await c.connect();
    try {
      const cols = await c.query(
        "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'wg_members' AND column_name = 'ok2'",
      );
      expect(cols.rowCount).to.equal(0);
      expect((await c.query('SELECT max(version)::int AS v FROM wg_schema_migrations')).rows[0].v).to.equal(900);
    } finally {
      await c.end();
    }
  });
});
