/**
 * Issue 27 item 7: the acknowledged heads of every tenant a process owns go to PostgreSQL a
 * batch at a time (kernel/cluster/head-acks.ts): one statement in flight, fenced row by row, the
 * rows locked in org order like the lease renewal's. Against a real PostgreSQL.
 */
import { expect } from 'chai';
import { createLogger } from '../../kernel/config.js';
import { openDatabase, type Database } from '../../kernel/cluster/db.js';
import { GATHER_MAX_MS, HeadAcks } from '../../kernel/cluster/head-acks.js';
import { RENEW_LEASES } from '../../kernel/cluster/ownership.js';
import { freshSchemaUrl, sharedPostgres } from '../helpers/postgres.js';

const quiet = createLogger(() => undefined, true);
const ORGS = ['acme', 'beta', 'corp', 'delta', 'echo', 'foxtrot'];

describe('cluster: acknowledged heads recorded in batches', function () {
  this.timeout(60_000);
  let db: Database;

  before(async () => {
    const pg = await sharedPostgres();
    db = await openDatabase(await freshSchemaUrl(pg.url), quiet);
  });
  after(async () => {
    await db?.close();
  });

  beforeEach(async () => {
    await db.pool.query('DELETE FROM wg_owners');
    // inserted in reverse: a scan in the table's own order meets the rows against org order
    for (const org of [...ORGS].reverse())
      await db.pool.query(`INSERT INTO wg_owners (org, owner, fence, expires_at) VALUES ($1, 'me', 7, now() + interval '1 minute')`, [org]);
  });

  const headOf = async (org: string): Promise<string | null> =>
    (await db.pool.query<{ head: string | null }>('SELECT head FROM wg_owners WHERE org = $1', [org])).rows[0]!.head;
  const commit = (org: string, n: number) => `${org}-${n}`.padEnd(40, '0');

  it('records concurrent heads of many tenants in fewer statements, each under its own fence', async () => {
    const acks = new HeadAcks(db.pool);
    // a tenant taken over by another process: its fence moved on
    await db.pool.query(`UPDATE wg_owners SET owner = 'other', fence = 8 WHERE org = 'corp'`);
    const results = await Promise.all(ORGS.map((org) => acks.record(org, 7, commit(org, 1))));
    expect(results).to.deep.equal(ORGS.map((org) => org !== 'corp'));
    for (const org of ORGS) expect(await headOf(org), org).to.equal(org === 'corp' ? null : commit(org, 1));
    // the first went out alone (nothing was waiting); the five that came meanwhile went in one
    expect(acks.statements).to.equal(2);
    expect(acks.heads).to.equal(ORGS.length - 1);
  });

  it('a tenant asked twice before its statement leaves gets its newer head; a head never moves back', async () => {
    const acks = new HeadAcks(db.pool);
    const first = acks.record('acme', 7, commit('acme', 1)); // in flight
    const second = acks.record('acme', 7, commit('acme', 2)); // waits
    const third = acks.record('acme', 7, commit('acme', 3)); // joins the waiting one with a newer head
    expect(await Promise.all([first, second, third])).to.deep.equal([true, true, true]);
    expect(await headOf('acme')).to.equal(commit('acme', 3));
    expect(acks.statements).to.equal(2);
    // many rounds of every tenant at once: each ends at its newest head
    const rounds: Array<Promise<boolean>> = [];
    for (let n = 4; n < 40; n++) for (const org of ORGS) rounds.push(acks.record(org, 7, commit(org, n)));
    expect((await Promise.all(rounds)).every(Boolean)).to.equal(true);
    for (const org of ORGS) expect(await headOf(org), org).to.equal(commit(org, 39));
    expect(acks.statements, 'batched: far fewer statements than heads asked').to.be.below(rounds.length / 4);
  });

  it("a batch waits for the other tenants' fdatasyncs in flight, and leaves with their heads in one statement", async () => {
    // a wait bound no loaded machine reaches between two steps here (the bound has its own test)
    const acks = new HeadAcks(db.pool, 60_000);
    // every tenant's journal fdatasync in flight; they end one after another, each tenant then
    // asking for its head (as kernel/git/store.ts does once its record is durable)
    const ends = ORGS.map((org) => acks.syncStarted(org));
    const heads: Array<Promise<boolean>> = [];
    for (const [i, org] of ORGS.entries()) {
      ends[i]!();
      heads.push(acks.record(org, 7, commit(org, 1)));
      await new Promise((resolve) => setImmediate(resolve));
      if (i < ORGS.length - 1) expect(acks.statements, `sent before ${ORGS[i + 1]}'s fdatasync ended`).to.equal(0);
    }
    expect(await Promise.all(heads)).to.deep.equal(ORGS.map(() => true));
    expect(acks.statements, 'one statement for the six').to.equal(1);
    for (const org of ORGS) expect(await headOf(org), org).to.equal(commit(org, 1));
  });

  it("a lone tenant's head is not held back by its own next fdatasync, and nobody waits past GATHER_MAX_MS", async () => {
    const acks = new HeadAcks(db.pool, 60_000);
    // acme's next group is already syncing when its head is asked for: that one goes in a later batch
    acks.syncStarted('acme')();
    const nextGroup = acks.syncStarted('acme');
    expect(await acks.record('acme', 7, commit('acme', 1))).to.equal(true);
    expect(acks.statements).to.equal(1);
    nextGroup();
    // an fdatasync that never ends (a hung disk) holds another tenant's batch only so long: with
    // the production bound (GATHER_MAX_MS) the head is recorded, not held until the test times out
    const bounded = new HeadAcks(db.pool);
    bounded.syncStarted('corp');
    expect(await bounded.record('beta', 7, commit('beta', 1))).to.equal(true);
    expect(bounded.statements).to.equal(1);
    expect(await headOf('beta')).to.equal(commit('beta', 1));
    expect(GATHER_MAX_MS).to.be.at.most(5);
  });

  it('a failing statement rejects every head in it, and the next batch goes out', async () => {
    const acks = new HeadAcks(db.pool);
    // a fence that is not a number fails the statement it is in (sent alone: nothing was waiting)
    const bad = acks.record('acme', Number.NaN, commit('acme', 1));
    const also = acks.record('beta', 7, commit('beta', 1));
    const [b, a] = await Promise.allSettled([bad, also]);
    expect(b.status).to.equal('rejected');
    expect(a).to.deep.equal({ status: 'fulfilled', value: true });
    expect(await acks.record('delta', 7, commit('delta', 1))).to.equal(true);
    expect(await headOf('delta')).to.equal(commit('delta', 1));
  });

  it('a lease renewal and a batch of heads that wait on the same locked rows do not deadlock', async () => {
    // Two other sessions hold 'acme' and 'corp'. The first head ('acme') goes out alone and
    // waits on 'acme'; the other five queue behind it as one batch. The renewal starts and waits
    // too. Released one at a time, the batch and the renewal each hold some rows and want the
    // rest: locked in different orders (the renewal's by the table's own order, here the reverse
    // of org order) that is a cycle, which PostgreSQL breaks by failing one of them after
    // deadlock_timeout; locked in the same order, one waits for the other.
    const acks = new HeadAcks(db.pool);
    const waitingOnLocks = async (n: number) => {
      for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
        const r = await db.pool.query<{ n: string }>(
          `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        if (Number(r.rows[0]!.n) >= n) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error(`never ${n} sessions waiting on locks`);
    };
    const holdA = await db.pool.connect();
    const holdC = await db.pool.connect();
    try {
      await holdA.query(`BEGIN; SELECT 1 FROM wg_owners WHERE org = 'acme' FOR UPDATE`);
      await holdC.query(`BEGIN; SELECT 1 FROM wg_owners WHERE org = 'corp' FOR UPDATE`);
      const heads = ORGS.map((org) => acks.record(org, 7, commit(org, 1)));
      await waitingOnLocks(1); // the first head, on 'acme'
      const renewal = db.pool.query(RENEW_LEASES, ['me', 60_000]);
      await waitingOnLocks(2);
      await holdA.query('COMMIT'); // the first head goes through; the batch of five goes out
      for (const deadline = Date.now() + 20_000; acks.statements < 2 && Date.now() < deadline;)
        await new Promise((resolve) => setTimeout(resolve, 10));
      expect(acks.statements, 'the batch of five was sent').to.equal(2);
      await waitingOnLocks(2); // the batch on 'corp', the renewal on 'corp' or on the batch's rows
      await holdC.query('COMMIT');
      const [renewed, recorded] = await Promise.allSettled([renewal, Promise.all(heads)]);
      expect(renewed.status, String((renewed as PromiseRejectedResult).reason)).to.equal('fulfilled');
      expect(recorded).to.deep.equal({ status: 'fulfilled', value: ORGS.map(() => true) });
      expect(acks.statements).to.equal(2);
    } finally {
      await holdA.query('ROLLBACK').catch(() => undefined);
      await holdC.query('ROLLBACK').catch(() => undefined);
      holdA.release();
      holdC.release();
    }
    for (const org of ORGS) expect(await headOf(org), org).to.equal(commit(org, 1));
  });
});
