/**
 * The PostgreSQL connection of cluster mode: a pool, the schema migrations (run at open, each
 * in its own transaction, all under one advisory lock so processes starting together do not
 * race), and a LISTEN helper: one dedicated connection that LISTENs on the channels asked for,
 * dispatches notifications, and reconnects (re-LISTENing) when it drops. A PostgreSQL error on
 * an idle connection is logged, never thrown at the process.
 */
import type pg from 'pg';

/**
 * The PostgreSQL driver, imported when cluster mode first opens a connection: a server without
 * SVC_DATABASE_URL never loads it. Only this third-party module is imported lazily, not the
 * project's cluster modules: under mocha (tsx) a dynamic import of a project module is a second
 * instance of it and of every project module it imports (docs/decisions.md "A start loads only
 * what it serves").
 */
export async function pgDriver(): Promise<typeof pg> {
  return (await import('pg')).default;
}
import type { Logger } from '../config.js';
import { MIGRATIONS, type Migration } from './migrations.js';

/** Called with a notification's payload, or with `null` after the listening connection was re-established (notifications may have been missed). */
export type NotificationHandler = (payload: string | null) => void;

export interface Database {
  readonly pool: pg.Pool;
  /** A random id of this Database object: stores put it in their NOTIFY payloads to recognise their own. */
  readonly id: string;
  /** LISTENs on `channel` (once per channel); resolves when the LISTEN is in effect. Returns the unsubscribe function. */
  listen(channel: string, handler: NotificationHandler): Promise<() => void>;
  close(): Promise<void>;
}

/** Advisory lock key of the migrations (any constant; 'wg' 'mi' 'gr'). */
const MIGRATION_LOCK = 0x77676d6967;

const quietLog: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

export interface OpenOptions {
  log?: Logger;
  /** pool size (default 10) */
  max?: number;
  /** the migrations to run (default MIGRATIONS; tests pass others) */
  migrations?: Migration[];
}

export async function openDatabase(url: string, logOrOptions: Logger | OpenOptions = {}): Promise<Database> {
  const options: OpenOptions = 'info' in logOrOptions ? { log: logOrOptions as Logger } : (logOrOptions as OpenOptions);
  const log = options.log ?? quietLog;
  // A process paused inside a transaction (SIGSTOP, a long GC) must not hold its row locks on
  // wg_owners for ever: the server ends such a session after 5 s, and a take-over waits at most that.
  const { Pool } = await pgDriver();
  const pool = new Pool({
    connectionString: url,
    max: options.max ?? 10,
    idleTimeoutMillis: 30_000,
    idle_in_transaction_session_timeout: 5000,
  });
  pool.on('error', (err) => log.warn('postgres: idle connection error', { error: err.message }));
  try {
    await migrate(pool, options.migrations ?? MIGRATIONS, log);
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
  return new PgDatabase(url, pool, log);
}

/** Applies the pending migrations under the migration lock; fails if the database is newer than this code. */
export async function migrate(pool: pg.Pool, migrations: Migration[], log: Logger = quietLog): Promise<number[]> {
  const client = await pool.connect();
  const applied: number[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query(
        'CREATE TABLE IF NOT EXISTS wg_schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      const { rows } = await client.query<{ version: number }>('SELECT version FROM wg_schema_migrations ORDER BY version');
      const done = new Set(rows.map((r) => r.version));
      const known = Math.max(0, ...migrations.map((m) => m.version));
      const newest = Math.max(0, ...done);
      if (newest > known) {
        throw new Error(
          `the database schema is at version ${newest} but this workgraph knows versions up to ${known}: ` +
            'a newer workgraph migrated it; run that version (or point SVC_DATABASE_URL to another database)',
        );
      }
      for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
        if (done.has(m.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(m.sql);
          await client.query('INSERT INTO wg_schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw new Error(`database migration ${m.version} (${m.name}) failed: ${(err as Error).message}`, { cause: err });
        }
        applied.push(m.version);
        log.info('database migrated', { version: m.version, name: m.name });
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    }
  } finally {
    client.release();
  }
  return applied;
}

class PgDatabase implements Database {
  readonly id = Math.random().toString(36).slice(2, 12);
  private readonly handlers = new Map<string, Set<NotificationHandler>>();
  /** per channel: resolves once its LISTEN is in effect */
  private readonly listening = new Map<string, Promise<void>>();
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client> | null = null;
  private closed = false;
  private retryMs = 100;
  private retryTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly url: string,
    readonly pool: pg.Pool,
    private readonly log: Logger,
  ) {}

  async listen(channel: string, handler: NotificationHandler): Promise<() => void> {
    if (this.closed) throw new Error('database closed');
    let set = this.handlers.get(channel);
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
    }
    set.add(handler);
    let listening = this.listening.get(channel);
    if (!listening) {
      // a (re)connection LISTENs on every channel with handlers itself; this covers a live connection
      listening = this.listener().then(async (client) => void (await client.query(`LISTEN ${quoteIdent(channel)}`)));
      this.listening.set(channel, listening);
      listening.catch((err: Error) => {
        // the handler stays subscribed: the reconnection LISTENs and tells it to re-read
        this.listening.delete(channel);
        this.log.warn('postgres: LISTEN failed; retrying', { channel, error: err.message });
        this.scheduleReconnect();
      });
    }
    await listening;
    return () => {
      const s = this.handlers.get(channel);
      if (!s) return;
      s.delete(handler);
      if (s.size === 0) {
        this.handlers.delete(channel);
        this.listening.delete(channel);
        this.client?.query(`UNLISTEN ${quoteIdent(channel)}`).catch(() => undefined);
      }
    };
  }

  private listener(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.connectListener().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async connectListener(): Promise<pg.Client> {
    const { Client } = await pgDriver();
    const client = new Client({ connectionString: this.url });
    let dropped = false;
    const drop = (why: string) => {
      if (dropped) return;
      dropped = true;
      if (this.client === client) this.client = null;
      client.end().catch(() => undefined);
      if (this.closed) return;
      this.log.warn('postgres: notification connection lost; reconnecting', { error: why });
      this.scheduleReconnect();
    };
    client.on('error', (err) => drop(err.message));
    client.on('end', () => drop('connection ended'));
    client.on('notification', (msg) => this.dispatch(msg.channel, msg.payload ?? ''));
    await client.connect();
    for (const channel of this.handlers.keys()) await client.query(`LISTEN ${quoteIdent(channel)}`);
    if (this.closed) {
      await client.end().catch(() => undefined);
      throw new Error('database closed');
    }
    this.client = client;
    this.retryMs = 100;
    return client;
  }

  private scheduleReconnect(): void {
    if (this.retryTimer || this.closed) return;
    const wait = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, 10_000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.closed || this.client || this.handlers.size === 0) return;
      this.listener().then(
        () => {
          // notifications sent while we were away are lost: every handler re-reads what it keeps
          for (const channel of this.handlers.keys()) this.dispatch(channel, null);
        },
        (err: Error) => {
          this.log.warn('postgres: notification connection failed', { error: err.message });
          this.scheduleReconnect();
        },
      );
    }, wait);
    this.retryTimer.unref();
  }

  private dispatch(channel: string, payload: string | null): void {
    for (const h of [...(this.handlers.get(channel) ?? [])]) {
      try {
        h(payload);
      } catch (err) {
        this.log.error('postgres: notification handler failed', { channel, error: (err as Error).message });
      }
    }
  }

  /** Test hook: drops the listening connection as a network failure would. */
  dropListener(): void {
    this.client?.emit('error', new Error('dropped by test'));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const client = this.client ?? (await this.connecting?.catch(() => null)) ?? null;
    this.client = null;
    await client?.end().catch(() => undefined);
    await this.pool.end();
  }
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
