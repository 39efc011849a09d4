/**
 * Operational state in PostgreSQL (cluster mode): the `StateStore` of kernel/state-store.ts
 * over `wg_state (org, collection, key) -> value`.
 *
 * A tenant's store: `load()` reads all the tenant's rows once; reads stay in memory (the
 * owner process is the only writer of a tenant's rows while it holds the lease). A write
 * changes the memory at once, as the file store does (lease decisions are made synchronously
 * against the map), and is sent to PostgreSQL as ONE statement that checks the fence and
 * writes; the promise resolves once it committed. A write that fails (fence moved: 503
 * `not_owner`, or a database error) is undone in memory. Writes to a collection go out one
 * statement at a time, in order; the changes made while one is in flight are coalesced into
 * the next (as the file store coalesces its file writes).
 *
 * The data-directory-wide collections (OAuth clients, app sessions: org '') are written by
 * every process: unfenced, loaded lazily per collection, every write NOTIFYs `wg_state` with
 * the changed keys, and the other processes re-read those keys; `fetch(key)` reads through
 * on a local miss.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { TokenStore } from '../auth.js';
import { MemoryCollection, type Collection, type StateStore } from '../state-store.js';
import type { Database } from './db.js';
import { notOwner, okCte, type FenceOf } from './fence.js';
import { PgTokenStore } from './pg-tokens.js';

export type { FenceOf } from './fence.js';

/** NOTIFY payloads are limited to 8000 bytes: past this a notification names the collection only. */
const MAX_NOTIFY_KEYS_BYTES = 7000;

export interface PgStateOptions {
  /** prefix of the collection names in wg_state (the global stores: `<name>/`) */
  prefix?: string;
  /** shared by several processes: writes NOTIFY `wg_state`, notifications refresh the memory, collections load lazily */
  shared?: boolean;
}

interface Notice {
  /** org */
  o: string;
  /** collection (as stored, prefix included) */
  c: string;
  /** changed keys; absent: re-read the collection */
  k?: string[];
  /** the store that wrote (its own notifications are ignored) */
  f: string;
}

export class PgStateStore implements StateStore {
  private readonly collections = new Map<string, PgCollection<unknown>>();
  /** rows read by `load()` for collections nobody asked for yet */
  private preloaded: Map<string, Map<string, unknown>> | null = null;
  private loaded = false;
  readonly id = randomBytes(6).toString('hex');
  private unlisten: Promise<() => void> | null = null;
  private readonly prefix: string;
  readonly shared: boolean;

  constructor(
    readonly db: Database,
    readonly org: string,
    readonly fenceOf: FenceOf,
    options: PgStateOptions = {},
  ) {
    this.prefix = options.prefix ?? '';
    this.shared = options.shared ?? false;
    if (this.shared) {
      this.unlisten = db.listen('wg_state', (payload) => this.onNotice(payload));
      this.unlisten.catch(() => undefined);
    }
  }

  /** Resolves once a shared store LISTENs (a read after it misses no change: later ones are notified). */
  async listening(): Promise<void> {
    await this.unlisten?.catch(() => undefined);
  }

  /** Reads every row of the tenant (of this prefix) into memory. */
  async load(): Promise<void> {
    await this.listening();
    const { rows } = await this.db.pool.query<{ collection: string; key: string; value: unknown }>(
      'SELECT collection, key, value FROM wg_state WHERE org = $1 AND starts_with(collection, $2)',
      [this.org, this.prefix],
    );
    const byCollection = new Map<string, Map<string, unknown>>();
    for (const r of rows) {
      let m = byCollection.get(r.collection);
      if (!m) byCollection.set(r.collection, (m = new Map()));
      m.set(r.key, r.value);
    }
    for (const [name, c] of this.collections) {
      c.applyRows(byCollection.get(name) ?? new Map(), null);
      byCollection.delete(name);
    }
    this.preloaded = byCollection;
    this.loaded = true;
  }

  collection<T>(name: string): Collection<T> {
    const stored = this.prefix + name;
    let c = this.collections.get(stored);
    if (!c) {
      c = new PgCollection<unknown>(this, stored);
      this.collections.set(stored, c);
      const rows = this.preloaded?.get(stored);
      if (rows) {
        c.applyRows(rows, null);
        this.preloaded!.delete(stored);
      } else if (!this.loaded) {
        c.startLoad();
      }
    }
    return c as Collection<T>;
  }

  /** One statement: check the fence (unless unfenced), apply the changes, NOTIFY (shared stores). */
  async write(collection: string, changes: Map<string, unknown>): Promise<void> {
    const fence = this.fenceOf(this.org);
    if (fence === null) throw notOwner(this.org);
    const items = [...changes].map(([k, v]) => (v === null ? { k, d: true } : { k, v }));
    let notice: string | null = null;
    if (this.shared) {
      const keys = [...changes.keys()];
      const n: Notice = { o: this.org, c: collection, k: keys, f: this.id };
      notice = JSON.stringify(n);
      if (Buffer.byteLength(notice) > MAX_NOTIFY_KEYS_BYTES)
        notice = JSON.stringify({ o: this.org, c: collection, f: this.id } satisfies Notice);
    }
    const sql = `
WITH ${okCte(fence !== undefined)},
ch AS (SELECT e->>'k' AS k, e->'v' AS v, coalesce((e->>'d')::boolean, false) AS d FROM json_array_elements($4::json) AS e),
del AS (
  DELETE FROM wg_state s USING ch
  WHERE EXISTS (SELECT 1 FROM ok) AND ch.d AND s.org = $1 AND s.collection = $3 AND s.key = ch.k
),
ins AS (
  INSERT INTO wg_state (org, collection, key, value)
  SELECT $1, $3, ch.k, ch.v FROM ch, ok WHERE NOT ch.d
  ON CONFLICT (org, collection, key) DO UPDATE SET value = EXCLUDED.value
)
SELECT (SELECT count(*) FROM ok)::int AS ok, CASE WHEN $5::text IS NOT NULL AND EXISTS (SELECT 1 FROM ok) THEN pg_notify('wg_state', $5::text) END AS notified`;
    const { rows } = await this.db.pool.query<{ ok: number }>(sql, [this.org, fence ?? null, collection, JSON.stringify(items), notice]);
    if (rows[0]?.ok !== 1) throw notOwner(this.org);
  }

  /** Deletes one row and returns its value (undefined: no row); unfenced shared stores only. NOTIFYs like a write. */
  async takeRow(collection: string, key: string): Promise<unknown> {
    const notice = JSON.stringify({ o: this.org, c: collection, k: [key], f: this.id } satisfies Notice);
    const { rows } = await this.db.pool.query<{ value: unknown }>(
      `WITH d AS (DELETE FROM wg_state WHERE org = $1 AND collection = $2 AND key = $3 RETURNING value)
SELECT value, CASE WHEN EXISTS (SELECT 1 FROM d) THEN pg_notify('wg_state', $4::text) END AS notified FROM d`,
      [this.org, collection, key, notice],
    );
    return rows[0]?.value;
  }

  async read(collection: string, keys: string[] | null): Promise<Map<string, unknown>> {
    const { rows } = keys
      ? await this.db.pool.query<{ key: string; value: unknown }>(
          'SELECT key, value FROM wg_state WHERE org = $1 AND collection = $2 AND key = ANY($3::text[])',
          [this.org, collection, keys],
        )
      : await this.db.pool.query<{ key: string; value: unknown }>('SELECT key, value FROM wg_state WHERE org = $1 AND collection = $2', [
          this.org,
          collection,
        ]);
    return new Map(rows.map((r) => [r.key, r.value]));
  }

  private onNotice(payload: string | null): void {
    if (payload === null) {
      for (const c of this.collections.values()) c.refresh(null);
      return;
    }
    let n: Notice;
    try {
      n = JSON.parse(payload) as Notice;
    } catch {
      return;
    }
    if (n.o !== this.org || n.f === this.id) return;
    this.collections.get(n.c)?.refresh(n.k ?? null);
  }

  /** Every collection of the tenant as stored (after the writes queued so far), for the admin export. */
  async dump(): Promise<Record<string, Record<string, unknown>>> {
    await Promise.all([...this.collections.values()].map((c) => c.idle()));
    const { rows } = await this.db.pool.query<{ collection: string; key: string; value: unknown }>(
      'SELECT collection, key, value FROM wg_state WHERE org = $1 AND starts_with(collection, $2) ORDER BY collection, key',
      [this.org, this.prefix],
    );
    const out: Record<string, Record<string, unknown>> = {};
    for (const r of rows) (out[r.collection.slice(this.prefix.length)] ??= {})[r.key] = r.value;
    return out;
  }

  async close(): Promise<void> {
    await Promise.all([...this.collections.values()].map((c) => c.idle()));
    const off = await this.unlisten?.catch(() => null);
    off?.();
  }
}

interface Batch {
  /** key -> new value (null: deleted) */
  changes: Map<string, unknown>;
  /** key -> the value before this batch's first change of it (undefined: absent) */
  undo: Map<string, unknown>;
  promise: Promise<void>;
  resolve(): void;
  reject(err: unknown): void;
}

class PgCollection<T> extends MemoryCollection<T> implements Collection<T> {
  /** writes and refreshes, one at a time, in order */
  private chain: Promise<void> = Promise.resolve();
  /** the changes not yet sent */
  private collecting: Batch | null = null;
  /** the changes being written */
  private inflight: Batch | null = null;
  /** the initial load of a lazily loaded collection */
  private ready: Promise<void> = Promise.resolve();
  private refreshQueued: { keys: Set<string> | null } | null = null;

  constructor(
    private readonly store: PgStateStore,
    private readonly name: string,
  ) {
    super();
  }

  async fetch(key: string, opts?: { fresh?: boolean }): Promise<T | undefined> {
    await this.ready;
    const local = this.data.get(key);
    if (!this.store.shared || (local !== undefined && !opts?.fresh)) return local;
    // a miss (or `fresh`): another process may have written it a moment ago (its notification
    // not in yet); read after this process's own writes queued before it
    await this.enqueue(async () => {
      if (this.pending(key)) return;
      const rows = await this.store.read(this.name, [key]);
      const value = rows.get(key);
      if (this.pending(key)) return;
      if (value !== undefined) this.data.set(key, value as T);
      // gone from the table (another process deleted it): gone here too
      else if (opts?.fresh) this.data.delete(key);
    });
    return this.data.get(key);
  }

  async take(key: string): Promise<T | undefined> {
    await this.ready;
    if (!this.store.shared) {
      // a tenant's store: its owner is the only writer, memory decides
      const value = this.data.get(key);
      if (value === undefined) return undefined;
      await this.delete(key);
      return value;
    }
    // shared by processes: the DELETE ... RETURNING decides (one caller gets the row), after
    // the writes queued before it (a set of this key just made here is in the table first)
    let taken: T | undefined;
    await this.enqueue(async () => {
      taken = (await this.store.takeRow(this.name, key)) as T | undefined;
      if (!this.pending(key)) this.data.delete(key);
    });
    return taken;
  }

  set(key: string, value: T): Promise<void> {
    this.stage(key, value);
    return this.collecting!.promise;
  }

  delete(key: string): Promise<void> {
    if (!this.data.has(key)) return Promise.resolve();
    this.stage(key, null);
    return this.collecting!.promise;
  }

  batch(changes: Array<{ key: string; value: T | null }>): Promise<void> {
    if (changes.length === 0) return Promise.resolve();
    for (const c of changes) this.stage(c.key, c.value);
    return this.collecting!.promise;
  }

  private stage(key: string, value: T | null): void {
    const b = (this.collecting ??= this.newBatch());
    if (!b.undo.has(key)) b.undo.set(key, this.data.get(key));
    b.changes.set(key, value);
    if (value === null) this.data.delete(key);
    else this.data.set(key, value);
  }

  private newBatch(): Batch {
    const b = { changes: new Map(), undo: new Map() } as Batch;
    b.promise = new Promise<void>((resolve, reject) => {
      b.resolve = resolve;
      b.reject = reject;
    });
    b.promise.catch(() => undefined); // the caller gets the rejection; no unhandled one if it does not wait
    void this.enqueue(() => this.flush(b));
    return b;
  }

  private enqueue(job: () => Promise<void>): Promise<void> {
    const next = this.chain.then(job);
    this.chain = next.catch(() => undefined);
    return next;
  }

  private async flush(b: Batch): Promise<void> {
    if (this.collecting === b) this.collecting = null;
    this.inflight = b;
    try {
      await this.ready;
      await this.store.write(this.name, b.changes);
      b.resolve();
    } catch (err) {
      this.rollback(b);
      b.reject(err);
    } finally {
      this.inflight = null;
    }
  }

  /** Undoes a failed batch in memory, except where a later change replaced its value. */
  private rollback(b: Batch): void {
    const next = this.collecting;
    for (const [key, mine] of b.changes) {
      const before = b.undo.get(key);
      const current = this.data.has(key) ? this.data.get(key) : null;
      if (current === mine) {
        if (before === undefined) this.data.delete(key);
        else this.data.set(key, before as T);
      } else if (next && next.undo.has(key)) {
        // the next batch changed it after us: if that batch fails too, it must restore what was before us
        const theirs = next.undo.get(key);
        if (theirs === mine || (theirs === undefined && mine === null)) next.undo.set(key, before);
      }
    }
  }

  /** Whether a local change of `key` is unsent or being written (a refresh must not overwrite it). */
  private pending(key: string): boolean {
    return (this.collecting?.changes.has(key) ?? false) || (this.inflight?.changes.has(key) ?? false);
  }

  /** Replaces memory with `rows` (`keys`: only those keys; null: the whole collection), keeping pending local changes. */
  applyRows(rows: Map<string, unknown>, keys: Iterable<string> | null): void {
    if (keys === null) {
      for (const key of [...this.data.keys()]) if (!rows.has(key) && !this.pending(key)) this.data.delete(key);
      for (const [key, value] of rows) if (!this.pending(key)) this.data.set(key, value as T);
      return;
    }
    for (const key of keys) {
      if (this.pending(key)) continue;
      const value = rows.get(key);
      if (value === undefined) this.data.delete(key);
      else this.data.set(key, value as T);
    }
  }

  /** The first read of a lazily loaded collection (a shared one, or asked for before `load()`). */
  startLoad(): void {
    this.ready = this.enqueue(async () => {
      await this.store.listening();
      const rows = await this.store.read(this.name, null);
      this.applyRows(rows, null);
    }).catch(() => {
      // a failed first read: later fetches read through; a notification or reconnection retries
    });
  }

  /** Re-reads keys another process changed (null: the whole collection). Refreshes queued meanwhile are merged. */
  refresh(keys: string[] | null): void {
    if (this.refreshQueued) {
      const q = this.refreshQueued;
      if (keys === null) q.keys = null;
      else if (q.keys) for (const k of keys) q.keys.add(k);
      return;
    }
    const q = (this.refreshQueued = { keys: keys === null ? null : new Set(keys) });
    void this.enqueue(async () => {
      this.refreshQueued = null;
      const list = q.keys ? [...q.keys] : null;
      const rows = await this.store.read(this.name, list);
      this.applyRows(rows, list);
    }).catch(() => undefined);
  }

  /** Resolves when the writes and refreshes queued so far are done. */
  idle(): Promise<void> {
    return this.chain;
  }
}

/**
 * The data-directory-wide store `name` in PostgreSQL (org '', collections `<name>/<collection>`):
 * what cluster mode sets as `services.globalStore`.
 */
export function pgGlobalStore(db: Database, name: string): PgStateStore {
  return new PgStateStore(db, '', () => undefined, { prefix: `${name}/`, shared: true });
}

/** `services.globalStore` of cluster mode: one `pgGlobalStore` per name, made on first use. */
export function pgGlobalStores(db: Database): (name: string) => PgStateStore {
  const stores = new Map<string, PgStateStore>();
  return (name) => {
    let store = stores.get(name);
    if (!store) stores.set(name, (store = pgGlobalStore(db, name)));
    return store;
  };
}

/**
 * `TenantDeps.operational` of cluster mode: each tenant's state and tokens in PostgreSQL,
 * loaded before the tenant opens, writes fenced by `fenceOf(org)`.
 */
export function pgOperational(
  db: Database,
  fenceOf: FenceOf,
): (org: string, dir: string) => Promise<{ state: StateStore; tokens: TokenStore }> {
  return async (org, dir) => {
    // auth/ stays a directory of the tenant on the shared data directory (file keys: the lens ticket secret)
    mkdirSync(join(dir, 'auth'), { recursive: true, mode: 0o700 });
    mkdirSync(join(dir, 'state'), { recursive: true });
    const state = new PgStateStore(db, org, fenceOf);
    const tokens = new PgTokenStore(db, org, fenceOf, join(dir, 'auth'));
    await Promise.all([state.load(), tokens.load()]);
    return { state, tokens };
  };
}
