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
 *
 * A batch also waits for the tenants' journal fdatasyncs that were in flight when it opened
 * (`syncStarted`, from kernel/commit-journal.ts through the store's fence), at most
 * `GATHER_MAX_MS`: concurrent tenants' fdatasyncs end within about one fdatasync of each other,
 * and sent as each ended, six busy tenants made 0.28 statements a write (a transaction and a
 * WAL flush of PostgreSQL's each, on the cores the server shares with it). A tenant whose head
 * is already in the batch is not waited for (its next fdatasync goes in the next batch), so a
 * lone writer's acknowledgement leaves at once, as before.
 */
import type pg from 'pg';

/** the longest a batch waits for fdatasyncs in flight before it goes out with what it has */
export const GATHER_MAX_MS = 3;

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
  /** journal fdatasyncs in flight, by id: their tenant */
  private syncs = new Map<number, string>();
  private nextSync = 1;
  /** the open batch waits for these fdatasyncs to end (null: no batch is gathering) */
  private gathering: Set<number> | null = null;
  private gatherTimer: NodeJS.Timeout | null = null;
  /** statements sent and heads recorded (tests and the metrics of a probe) */
  statements = 0;
  heads = 0;

  /** `gatherMaxMs`: how long a batch waits at most for fdatasyncs in flight (GATHER_MAX_MS; tests set their own) */
  constructor(
    private readonly pool: pg.Pool,
    private readonly gatherMaxMs = GATHER_MAX_MS,
  ) {}

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
      if (!this.flying && !this.gathering) this.gather();
    });
  }

  /**
   * A journal fdatasync of `org` started: a batch that opens before it ends (and has no head of
   * `org` yet) waits for it. The returned call marks its end.
   */
  syncStarted(org: string): () => void {
    const id = this.nextSync++;
    this.syncs.set(id, org);
    return () => {
      if (!this.syncs.delete(id)) return;
      // the fdatasync's own acknowledgements reach `record` in the promise jobs that follow: the
      // batch leaves after them
      if (this.gathering?.delete(id) && this.gathering.size === 0) setImmediate(() => this.release());
    };
  }

  /** Opens a batch: it leaves once the fdatasyncs in flight of tenants not in it have ended (at most GATHER_MAX_MS). */
  private gather(): void {
    if (this.pending.size === 0) return;
    const inBatch = new Set<string>();
    for (const p of this.pending.values()) inBatch.add(p.org);
    const waitFor = new Set<number>();
    for (const [id, org] of this.syncs) if (!inBatch.has(org)) waitFor.add(id);
    if (waitFor.size === 0) return this.send();
    this.gathering = waitFor;
    this.gatherTimer = setTimeout(() => this.release(), this.gatherMaxMs);
  }

  private release(): void {
    if (!this.gathering) return;
    this.gathering = null;
    if (this.gatherTimer) clearTimeout(this.gatherTimer);
    this.gatherTimer = null;
    this.send();
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
    this.gather();
  }
}
