/**
 * Cluster mode: the acknowledged heads of every tenant this process owns, recorded in
 * `wg_owners.head` a batch at a time (docs/scale-out.md, "The fencing token").
 *
 * A tenant's store records its newest durable commit before it acknowledges it
 * (kernel/git/store.ts `acknowledge`, one round trip in flight a tenant). Recorded one tenant
 * at a time, each round trip was its own PostgreSQL transaction and WAL flush: 0.87 of them a
 * write with six busy tenants, about 160 µs of the database's CPU a write on top of the
 * server's. Here every tenant's pending head goes out in one statement, one transaction, with
 * at most one statement in flight for the whole process: whatever became durable while one was
 * in flight goes in the next (group commit, as the journal's fdatasyncs are grouped), so the
 * batches grow with the load and a quiet tenant's head goes out at once.
 *
 * Each row is fenced as before (the owner's token must still be the row's), and a row whose
 * fence moved is reported to its own tenant only: the others in the batch are recorded. The
 * rows are locked in org order, as the lease renewal locks them (kernel/cluster/ownership.ts
 * `renew`), so the two multi-row statements of a process never wait on each other in a cycle.
 * A statement that fails (the database unreachable) fails every tenant in it: each stops
 * taking commits until it is reopened, as one tenant's failed acknowledgement did before.
 */
import type pg from 'pg';

interface Pending {
  org: string;
  fence: number;
  commit: string;
  waiters: Array<{ resolve: (recorded: boolean) => void; reject: (err: unknown) => void }>;
}

/**
 * The statement recording a batch: the rows ($1 orgs, $2 fences, $3 heads, as arrays) locked
 * in org order. One text for every batch size, prepared once per connection (a CTE planned
 * for every round trip cost the database more than the update itself).
 */
const RECORD = {
  name: 'wg_record_heads',
  text: `WITH v AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[]) AS v (org, fence, head)),
  l AS (SELECT o.org FROM wg_owners o JOIN v ON o.org = v.org AND o.fence = v.fence ORDER BY o.org FOR NO KEY UPDATE OF o)
UPDATE wg_owners o SET head = v.head FROM v, l WHERE o.org = v.org AND o.fence = v.fence AND l.org = o.org
RETURNING o.org, o.fence::text AS fence`,
};

export class HeadAcks {
  /** by org and fence: the newest head waiting for the next statement */
  private pending = new Map<string, Pending>();
  private flying = false;
  /** statements sent and heads recorded (tests and the metrics of a probe) */
  statements = 0;
  heads = 0;

  constructor(private readonly pool: pg.Pool) {}

  /**
   * Records `commit` as `org`'s acknowledged head under `fence`: true once it is in
   * PostgreSQL, false when the row's fence is no longer `fence` (the tenant was taken over).
   * A later call for the same tenant before the statement leaves replaces the head (a store
   * asks with its newest durable commit, a descendant of the earlier one).
   */
  record(org: string, fence: number, commit: string): Promise<boolean> {
    return new Promise((resolve, reject) => {
      const key = `${fence}\0${org}`;
      const p = this.pending.get(key);
      if (p) {
        p.commit = commit;
        p.waiters.push({ resolve, reject });
      } else this.pending.set(key, { org, fence, commit, waiters: [{ resolve, reject }] });
      if (!this.flying) this.send();
    });
  }

  private send(): void {
    if (this.pending.size === 0) return;
    const batch = [...this.pending.values()].sort((a, b) => (a.org < b.org ? -1 : a.org > b.org ? 1 : a.fence - b.fence));
    this.pending = new Map();
    this.flying = true;
    this.statements++;
    const values = [batch.map((p) => p.org), batch.map((p) => String(p.fence)), batch.map((p) => p.commit)];
    this.pool.query<{ org: string; fence: string }>({ ...RECORD, values }).then(
      (r) => {
        const recorded = new Set(r.rows.map((row) => `${row.fence}\0${row.org}`));
        this.heads += recorded.size;
        for (const p of batch) for (const w of p.waiters) w.resolve(recorded.has(`${p.fence}\0${p.org}`));
        this.next();
      },
      (err: unknown) => {
        for (const p of batch) for (const w of p.waiters) w.reject(err);
        this.next();
      },
    );
  }

  private next(): void {
    this.flying = false;
    this.send();
  }
}
