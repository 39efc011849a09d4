/**
 * The operational stores: one conformance suite run against the file stores (a temp
 * directory) and the PostgreSQL stores of cluster mode (the shared test server, a fresh
 * schema for this file). What only PostgreSQL has (fencing, migrations, the
 * data-directory-wide collections kept fresh across processes): test/kernel/stores-postgres.test.ts.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileTokenStore, hashTokenBytes, generateToken, type TokenStore } from '../../kernel/auth.js';
import { FileStateStore, type StateStore } from '../../kernel/state-store.js';
import { openDatabase, type Database } from '../../kernel/cluster/db.js';
import { pgOperational } from '../../kernel/cluster/pg-state.js';
import { freshSchemaUrl, sharedPostgres } from '../helpers/postgres.js';
import { orgName, record } from './stores-helpers.js';
import { until } from '../helpers/until.js';

interface Backend {
  name: string;
  setup(): Promise<void>;
  teardown(): Promise<void>;
  /** A new tenant (a key space of its own); `state()`/`tokens()` open new store instances on it. */
  tenant(): Promise<{ state(): Promise<StateStore>; tokens(): Promise<TokenStore> }>;
  /** Waits until `store` took in a change another instance made (file: at once; PostgreSQL: its notification). */
  settle(store: TokenStore, check: () => boolean): Promise<void>;
}

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
/** where the PostgreSQL stores keep their local files (removed at teardown, not left in the system's temp directory) */
let pgRoot = '';

function pgBackend(): Backend {
  return {
    name: 'postgres',
    async setup() {
      url ||= await freshSchemaUrl((await sharedPostgres()).url);
      db ??= await openDatabase(url);
      pgRoot ||= mkdtempSync(join(tmpdir(), 'wg-stores-pg-'));
    },
    async teardown() {
      for (const s of opened.splice(0)) await s.close?.();
      await db?.close();
      if (pgRoot) rmSync(pgRoot, { recursive: true, force: true });
    },
    async tenant() {
      const org = orgName();
      await db.pool.query("INSERT INTO wg_owners (org, owner, fence, expires_at) VALUES ($1, 'me', 1, now() + interval '1 hour')", [org]);
      const open = pgOperational(db, (o) => (o === org ? 1 : null));
      return {
        state: async () => {
          const s = (await open(org, join(pgRoot, org))).state;
          opened.push(s);
          return s;
        },
        tokens: async () => {
          const t = (await open(org, join(pgRoot, org))).tokens;
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
