/**
 * The operational stores: one conformance suite run against the file stores (a temp
 * directory) and the PostgreSQL stores of cluster mode (the shared test server, a fresh
 * schema for this file), then what only PostgreSQL has: fencing, migrations, the
 * data-directory-wide collections kept fresh across processes.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { FileTokenStore, hashTokenBytes, newTokenRecord, generateToken, type TokenRecord, type TokenStore } from '../../kernel/auth.js';
import { isSvcError } from '../../kernel/errors.js';
import { FileStateStore, type StateStore } from '../../kernel/state-store.js';
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

interface Backend {
  name: string;
  setup(): Promise<void>;
  teardown(): Promise<void>;
  /** A new tenant (a key space of its own); `state()`/`tokens()` open new store instances on it. */
  tenant(): Promise<{ state(): Promise<StateStore>; tokens(): Promise<TokenStore> }>;
  /** Waits until `store` took in a change another instance made (file: at once; PostgreSQL: its notification). */
  settle(store: TokenStore, check: () => boolean): Promise<void>;
}

async function until(check: () => boolean, what: string, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

let seq = 0;
const orgName = () => `org-${process.pid}-${++seq}`;

function fileBackend(): Backend {
  let root = '';
  return {
    name: 'file',
    async setup() {
      root = mkdtempSync(join(tmpdir(), 'wg-stores-'));
    },
    async teardown() {
      rmSync(root, { recursive: true, force: true });
    },
    async tenant() {
      const dir = join(root, orgName());
      return {
        state: async () => new FileStateStore(join(dir, 'state')),
        tokens: async () => new FileTokenStore(join(dir, 'auth')),
      };
    },
    async settle(store, check) {
      store.reload();
      expect(check()).to.equal(true);
    },
  };
}

let url = '';
let db: Database;
const opened: Array<{ close?(): Promise<void> }> = [];

function pgBackend(): Backend {
  return {
    name: 'postgres',
    async setup() {
      url ||= await freshSchemaUrl((await sharedPostgres()).url);
      db ??= await openDatabase(url);
    },
    async teardown() {
      for (const s of opened.splice(0)) await s.close?.();
    },
    async tenant() {
      const org = orgName();
      await db.pool.query("INSERT INTO wg_owners (org, owner, fence, expires_at) VALUES ($1, 'me', 1, now() + interval '1 hour')", [org]);
      const open = pgOperational(db, (o) => (o === org ? 1 : null));
      return {
        state: async () => {
          const s = (await open(org, join(tmpdir(), org))).state;
          opened.push(s);
          return s;
        },
        tokens: async () => {
          const t = (await open(org, join(tmpdir(), org))).tokens;
          opened.push(t);
          return t;
        },
      };
    },
    async settle(store, check) {
      await until(() => {
        store.reload();
        return check();
      }, 'the token notification');
    },
  };
}

function record(token: string, person = 'person-a'): TokenRecord {
  return newTokenRecord(token, { kind: 'pat', person, created: new Date().toISOString() });
}

for (const backend of [fileBackend(), pgBackend()]) {
  describe(`operational stores: ${backend.name}`, () => {
    before(() => backend.setup());
    after(() => backend.teardown());

    it('get, set, delete, batch, entries, size, fetch', async () => {
      const t = await backend.tenant();
      const c = (await t.state()).collection<{ n: number }>('things');
      expect(c.size).to.equal(0);
      expect(c.get('a')).to.equal(undefined);
      await c.set('a', { n: 1 });
      await c.set('b', { n: 2 });
      expect(c.get('a')).to.deep.equal({ n: 1 });
      expect(c.has('b')).to.equal(true);
      expect(c.size).to.equal(2);
      await c.delete('a');
      await c.delete('never-there');
      expect(c.has('a')).to.equal(false);
      await c.batch([
        { key: 'c', value: { n: 3 } },
        { key: 'b', value: null },
        { key: 'd', value: { n: 4 } },
      ]);
      expect([...c.entries()].sort()).to.deep.equal([
        ['c', { n: 3 }],
        ['d', { n: 4 }],
      ]);
      expect([...c.values()].map((v) => v.n).sort()).to.deep.equal([3, 4]);
      expect(await c.fetch('c')).to.deep.equal({ n: 3 });
      expect(await c.fetch('zz')).to.equal(undefined);
      // a write changes memory before it resolves (lease decisions rely on it)
      const pending = c.set('e', { n: 5 });
      expect(c.get('e')).to.deep.equal({ n: 5 });
      await pending;
      // take: removes and returns; of two takers one gets the value
      const [first, second] = await Promise.all([c.take('e'), c.take('e')]);
      expect([first, second].filter(Boolean)).to.deep.equal([{ n: 5 }]);
      expect(c.has('e')).to.equal(false);
      expect(await c.take('never-there')).to.equal(undefined);
    });

    it('is durable: a fresh store instance sees every acknowledged write; collections are separate', async () => {
      const t = await backend.tenant();
      const s = await t.state();
      await s.collection('one').set('k', 'v1');
      await s.collection('two').batch([
        { key: 'x', value: 1 },
        { key: 'y', value: 2 },
      ]);
      await s.collection('two').delete('x');
      const again = await t.state();
      expect(again.collection('one').get('k')).to.equal('v1');
      expect([...again.collection('two').entries()]).to.deep.equal([['y', 2]]);
      expect(again.collection('three').size).to.equal(0);
    });

    it('concurrent writes keep their order and all resolve; the last one wins', async () => {
      const t = await backend.tenant();
      const c = (await t.state()).collection<number>('counter');
      const done: number[] = [];
      const writes = [];
      for (let i = 0; i < 50; i++) writes.push(c.set('n', i).then(() => done.push(i)));
      writes.push(c.delete('n').then(() => done.push(50)));
      writes.push(c.set('n', 51).then(() => done.push(51)));
      for (let i = 0; i < 20; i++) writes.push(c.set(`k${i}`, i));
      await Promise.all(writes);
      expect(done).to.deep.equal([...done].sort((a, b) => a - b));
      expect(c.get('n')).to.equal(51);
      const fresh = (await t.state()).collection<number>('counter');
      expect(fresh.get('n')).to.equal(51);
      expect(fresh.size).to.equal(21);
    });

    it('tokens: mutate, find in constant time, a throwing mutation changes nothing', async () => {
      const t = await backend.tenant();
      const store = await t.tokens();
      const token = generateToken('pat');
      const rec = record(token);
      const v0 = store.version;
      const result = await store.mutate((records) => {
        records.set(rec.hash, rec);
        return 'minted';
      });
      expect(result).to.equal('minted');
      expect(store.version).to.be.greaterThan(v0);
      const { hash, digest } = hashTokenBytes(token);
      expect(store.find(hash, digest)?.person).to.equal('person-a');
      expect(store.find(hash)?.person).to.equal('person-a');
      // the same key with other bytes (never in practice: a guard of the constant-time compare)
      const other = Buffer.from(digest);
      other[0] = other[0]! ^ 1;
      expect(store.find(hash, other)).to.equal(undefined);
      expect(store.find(hashTokenBytes(generateToken('pat')).hash)).to.equal(undefined);
      expect(store.hashes()).to.deep.equal([rec.hash]);

      let err: unknown;
      try {
        await store.mutate((records) => {
          records.get(rec.hash)!.revoked_at = 'now';
          records.delete(rec.hash);
          throw new Error('changed my mind');
        });
      } catch (e) {
        err = e;
      }
      expect((err as Error).message).to.equal('changed my mind');
      expect(store.find(hash)?.revoked_at).to.equal(null);
      const fresh = await t.tokens();
      expect(fresh.all().map((r) => r.hash)).to.deep.equal([rec.hash]);
      expect(fresh.find(hash)?.revoked_at).to.equal(null);

      await store.mutate((records) => void records.delete(rec.hash));
      expect(store.find(hash)).to.equal(undefined);
      expect((await t.tokens()).all()).to.deep.equal([]);
    });

    it('tokens: a change made by another instance is seen after reload()', async () => {
      const t = await backend.tenant();
      const server = await t.tokens();
      const cli = await t.tokens();
      const token = generateToken('pat');
      const rec = record(token, 'person-cli');
      const before = server.version;
      await cli.mutate((records) => void records.set(rec.hash, rec));
      await backend.settle(server, () => server.find(rec.hash) !== undefined);
      expect(server.version).to.not.equal(before);
      expect(server.find(rec.hash)?.person).to.equal('person-cli');
      // and a revocation by the other instance
      await cli.mutate((records) => void (records.get(rec.hash)!.revoked_at = '2030-01-01T00:00:00.000Z'));
      await backend.settle(server, () => server.find(rec.hash)?.revoked_at !== null);
      // read-modify-write sees the other instance's change even before the reload
      await server.mutate((records) => {
        expect(records.get(rec.hash)?.revoked_at).to.equal('2030-01-01T00:00:00.000Z');
      });
    });

    it('tokens: touch keeps last_used in memory; flush (or the next mutation) makes it durable', async () => {
      const t = await backend.tenant();
      const store = await t.tokens();
      const a = record(generateToken('pat'));
      const b = record(generateToken('pat'));
      await store.mutate((records) => {
        records.set(a.hash, a);
        records.set(b.hash, b);
      });
      const at = Date.parse('2026-01-02T03:04:05.000Z');
      store.touch(a.hash, at);
      store.touch(a.hash, at + 10); // within the second: kept as is
      expect(store.find(a.hash)?.last_used).to.equal('2026-01-02T03:04:05.000Z');
      expect((await t.tokens()).find(a.hash)?.last_used).to.equal(null);
      await store.flush();
      expect((await t.tokens()).find(a.hash)?.last_used).to.equal('2026-01-02T03:04:05.000Z');
      store.touch(b.hash, at + 5000);
      await store.mutate(() => undefined);
      expect((await t.tokens()).find(b.hash)?.last_used).to.equal('2026-01-02T03:04:10.000Z');
      await store.flush(); // nothing pending: no write
    });
  });
}

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
  before(async () => {
    base = (await sharedPostgres()).url;
    url ||= await freshSchemaUrl(base);
    db ??= await openDatabase(url);
  });
  after(async () => {
    for (const s of opened.splice(0)) await s.close?.();
    await db?.close();
  });

  async function owned(fence = 1): Promise<string> {
    const org = orgName();
    await db.pool.query("INSERT INTO wg_owners (org, owner, fence, expires_at) VALUES ($1, 'me', $2, now() + interval '1 hour')", [org, fence]);
    return org;
  }
  const bump = (org: string) => db.pool.query('UPDATE wg_owners SET fence = fence + 1 WHERE org = $1', [org]);

  it('fencing: once the fence moved, set/delete/batch and token mutations fail 503 not_owner and memory is unchanged', async () => {
    const org = await owned();
    const fences = new Map([[org, 1 as number | null]]);
    const { state, tokens } = await pgOperational(db, (o) => fences.get(o))(org, tmpdir());
    opened.push(state, tokens);
    const c = state.collection<string>('leases');
    await c.set('a', 'mine');
    await c.set('b', 'mine too');
    const rec = record(generateToken('pat'));
    await tokens.mutate((records) => void records.set(rec.hash, rec));

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
    const owner = new PgTokenStore(db, org, () => 1, tmpdir());
    const cli = new PgTokenStore(db, org, () => undefined, tmpdir());
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
    const intruder = new PgTokenStore(db, elsewhere, () => 1, tmpdir());
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
      const owner = new PgTokenStore(own, org, () => 1, tmpdir());
      await owner.load();
      (own as unknown as { dropListener(): void }).dropListener();
      const rec = record(generateToken('pat'));
      await new PgTokenStore(db, org, () => undefined, tmpdir()).mutate((records) => void records.set(rec.hash, rec));
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
      const services = (database: Database) => ({ config: { dataDir: '/nonexistent' }, clock: systemClock, globalStore: pgGlobalStores(database) }) as unknown as KernelServices;
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
      const deps = { sandbox: {} as Sandbox, pack: seedPack, nativeTypes: [], nativeEdges: [], clock: systemClock, log: quiet, fsync: false, operational: pgOperational(db, () => 1) };
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
    const broken = [...extra, { version: 901, name: 'broken', sql: 'ALTER TABLE wg_members ADD COLUMN ok2 text; SELECT no_such_function()' }];
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
      const cols = await c.query("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'wg_members' AND column_name = 'ok2'");
      expect(cols.rowCount).to.equal(0);
      expect((await c.query('SELECT max(version)::int AS v FROM wg_schema_migrations')).rows[0].v).to.equal(900);
    } finally {
      await c.end();
    }
  });
});
