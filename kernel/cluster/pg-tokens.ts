/**
 * Token records in PostgreSQL (cluster mode): the `TokenStore` of kernel/auth.ts over
 * `wg_tokens (hash, org, record)`.
 *
 * `load()` reads the tenant's records; lookups stay in memory. `mutate` is one transaction:
 * the fence check (`wg_owners ... FOR SHARE`, held to the commit, so a change of owner waits
 * for it or refuses it), a per-tenant advisory lock (the owner and the operator CLI serialize
 * their read-modify-writes), a fresh read of the records, `fn`, the changed rows written, and
 * `NOTIFY wg_tokens, '<org>'`. The memory takes the new records only once it committed.
 * Every process holding the tenant's store LISTENs: a notification re-reads the records in
 * the background and swaps them in (bumping `version`), so `reload()` stays cheap and
 * synchronous: it only reports whether that happened.
 *
 * Operator tools write unfenced (`fenceOf` returns undefined).
 */
import { notOwner, type FenceOf } from './fence.js';
import { MemoryTokenRecords, tokensFileImage, type TokenRecord, type TokenStore } from '../auth.js';
import { errors } from '../errors.js';
import type { Database } from './db.js';

export class PgTokenStore extends MemoryTokenRecords implements TokenStore {
  private reported = 0;
  /** mutations and re-reads, one at a time, in order */
  private chain: Promise<unknown> = Promise.resolve();
  private rereadQueued = false;
  private unlisten: (() => void) | null = null;
  private closed = false;

  constructor(
    readonly db: Database,
    readonly org: string,
    readonly fenceOf: FenceOf,
    /** the tenant's auth/ directory on the shared data directory (file keys such as the lens ticket secret) */
    readonly dir: string,
  ) {
    super();
  }

  /** LISTENs for changes, then reads the tenant's records. */
  async load(): Promise<void> {
    this.unlisten ??= await this.db.listen('wg_tokens', (payload) => {
      if (payload === null || payload === this.org) this.scheduleReread();
    });
    await this.enqueue(() => this.reread());
  }

  reload(): boolean {
    const changed = this.version !== this.reported;
    this.reported = this.version;
    return changed;
  }

  /** Re-reads the records now (a caller that can wait for a change another process just made). */
  async refresh(): Promise<void> {
    await this.enqueue(() => this.reread());
  }

  mutate<T>(fn: (records: Map<string, TokenRecord>) => T): Promise<T> {
    return this.enqueue(() => this.transact(fn));
  }

  async flush(): Promise<void> {
    if (this.pendingLastUsed.size > 0) await this.mutate(() => undefined);
  }

  exportFile(): Buffer {
    return Buffer.from(tokensFileImage([...this.records.values()].sort((a, b) => (a.hash < b.hash ? -1 : 1))));
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.chain.catch(() => undefined);
    this.unlisten?.();
    this.unlisten = null;
  }

  /** The record-to-org lookup of cluster routing: which tenant a bearer token's hash belongs to. */
  static async orgOfToken(db: Database, hash: string): Promise<string | null> {
    const { rows } = await db.pool.query<{ org: string }>('SELECT org FROM wg_tokens WHERE hash = $1', [hash]);
    return rows[0]?.org ?? null;
  }

  private enqueue<T>(job: () => Promise<T>): Promise<T> {
    const next = this.chain.then(job);
    this.chain = next.catch(() => undefined);
    return next;
  }

  private scheduleReread(): void {
    if (this.rereadQueued || this.closed) return;
    this.rereadQueued = true;
    void this.enqueue(async () => {
      this.rereadQueued = false;
      await this.reread();
    }).catch(() => undefined);
  }

  private async reread(): Promise<void> {
    const { rows } = await this.db.pool.query<{ record: TokenRecord }>('SELECT record FROM wg_tokens WHERE org = $1', [this.org]);
    this.swap(rows.map((r) => r.record));
  }

  /** New records in memory; the last_used times not yet written stay on them. */
  private swap(list: TokenRecord[]): void {
    const next = new Map<string, TokenRecord>();
    for (const r of list) next.set(r.hash, r);
    for (const [hash, at] of this.pendingLastUsed) {
      const r = next.get(hash);
      if (r) r.last_used = at;
    }
    this.records = next;
    this.version++;
  }

  private async transact<T>(fn: (records: Map<string, TokenRecord>) => T): Promise<T> {
    const fence = this.fenceOf(this.org);
    if (fence === null) throw notOwner(this.org);
    const client = await this.db.pool.connect();
    let done = false;
    try {
      await client.query('BEGIN');
      if (fence !== undefined) {
        const owned = await client.query('SELECT 1 FROM wg_owners WHERE org = $1 AND fence = $2 FOR SHARE', [this.org, fence]);
        if (owned.rowCount !== 1) throw notOwner(this.org);
      }
      await client.query("SELECT pg_advisory_xact_lock(hashtext('wg_tokens'), hashtext($1))", [this.org]);
      const { rows } = await client.query<{ record: TokenRecord }>('SELECT record FROM wg_tokens WHERE org = $1', [this.org]);
      const before = new Map<string, string>();
      const records = new Map<string, TokenRecord>();
      for (const { record } of rows) {
        before.set(record.hash, JSON.stringify(record));
        records.set(record.hash, record);
      }
      const written = new Map(this.pendingLastUsed);
      for (const [hash, at] of written) {
        const r = records.get(hash);
        if (r) r.last_used = at;
      }
      const result = fn(records);
      const upserts: TokenRecord[] = [];
      for (const [hash, r] of records) {
        if (r.hash !== hash) throw new Error(`token record stored under ${hash.slice(0, 12)} has hash ${r.hash.slice(0, 12)}`);
        if (before.get(hash) !== JSON.stringify(r)) upserts.push(r);
      }
      const deletes = [...before.keys()].filter((h) => !records.has(h));
      if (upserts.length > 0) {
        const res = await client.query(
          `INSERT INTO wg_tokens (hash, org, record)
           SELECT e->>'hash', $1, e FROM jsonb_array_elements($2::jsonb) AS e
           ON CONFLICT (hash) DO UPDATE SET record = EXCLUDED.record WHERE wg_tokens.org = EXCLUDED.org`,
          [this.org, JSON.stringify(upserts)],
        );
        if (res.rowCount !== upserts.length) throw errors.conflict('a token with this hash belongs to another tenant', { org: this.org });
      }
      if (deletes.length > 0) await client.query('DELETE FROM wg_tokens WHERE org = $1 AND hash = ANY($2::text[])', [this.org, deletes]);
      if (upserts.length > 0 || deletes.length > 0) await client.query("SELECT pg_notify('wg_tokens', $1)", [this.org]);
      await client.query('COMMIT');
      done = true;
      for (const [hash, at] of written) if (this.pendingLastUsed.get(hash) === at) this.pendingLastUsed.delete(hash);
      this.swap([...records.values()]);
      return result;
    } finally {
      let broken = false;
      if (!done) await client.query('ROLLBACK').catch(() => (broken = true));
      client.release(broken); // a connection that cannot roll back is discarded
    }
  }
}

/** Which tenant holds the token with this SHA-256 (hex), or null: routes a request by its bearer token. */
export function orgOfToken(db: Database, hash: string): Promise<string | null> {
  return PgTokenStore.orgOfToken(db, hash);
}
