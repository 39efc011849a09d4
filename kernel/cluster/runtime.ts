/**
 * Cluster mode's wiring (SVC_DATABASE_URL): the database (migrations run at open), the
 * member (kernel/cluster/ownership.ts), the tenant manager's hooks (tenants reserved and
 * registered in PostgreSQL, opened only when owned, their operational store in PostgreSQL),
 * the first-start bootstrap under an advisory lock, and the request router.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../config.js';
import type { RequestRouter } from '../plugin.js';
import type { TenantCreationHooks, TenantManager } from '../tenants.js';
import type { TenantConfig } from '../tenant.js';
import { openDatabase, pgDriver, type Database } from './db.js';
import { clusterRequestHandler } from './forward.js';
import { Cluster } from './ownership.js';

export interface ClusterRuntime {
  db: Database;
  cluster: Cluster;
  creation: TenantCreationHooks;
  /** runs `fn` (the first-start check and creation) alone across the cluster */
  exclusively<T>(fn: () => Promise<T>): Promise<T>;
  hasTenants(): Promise<boolean>;
  /** join the cluster once the listener is up (its URL is what other members forward to) */
  join(url: string): Promise<void>;
  handler(
    local: (req: IncomingMessage, res: ServerResponse) => void,
    selfUrl: () => string,
    routers: () => RequestRouter[],
  ): (req: IncomingMessage, res: ServerResponse) => void;
  close(): Promise<void>;
}

/** Bootstrap advisory lock key ('wgboot' as an integer). */
const BOOTSTRAP_LOCK = 0x7767626f6f74;

export async function openClusterRuntime(opts: {
  databaseUrl: string;
  leaseMs: number;
  log: Logger;
  tenants: () => TenantManager;
}): Promise<ClusterRuntime> {
  const db = await openDatabase(opts.databaseUrl, opts.log);
  const { pool } = db;
  // the lease renewal's own connection: never queued behind requests holding the pool's
  const { Pool } = await pgDriver();
  // a renewal answered after a lease is worth nothing (its validity would already be over): one
  // that hangs (a connection dead without a reset) fails then, the connection is dropped, and the
  // next renewal opens a new one instead of the chain of renewals stopping behind it
  const leasePool = new Pool({
    connectionString: opts.databaseUrl,
    max: 1,
    idleTimeoutMillis: 0,
    query_timeout: opts.leaseMs,
    connectionTimeoutMillis: opts.leaseMs,
  });
  leasePool.on('error', (err) => opts.log.warn('postgres: lease connection error', { error: err.message }));
  const cluster = new Cluster({ pool, leasePool, log: opts.log, leaseMs: opts.leaseMs });
  const creation = creationHooks(cluster, db);
  let joined = false;
  return {
    db,
    cluster,
    creation,
    async exclusively(fn) {
      const client = await pool.connect();
      try {
        await client.query('SELECT pg_advisory_lock($1)', [BOOTSTRAP_LOCK]);
        try {
          return await fn();
        } finally {
          await client.query('SELECT pg_advisory_unlock($1)', [BOOTSTRAP_LOCK]);
        }
      } finally {
        client.release();
      }
    },
    async hasTenants() {
      return ((await pool.query('SELECT 1 FROM wg_tenants LIMIT 1')).rowCount ?? 0) > 0;
    },
    async join(url) {
      cluster.url = url;
      await cluster.start();
      joined = true;
    },
    handler(local, selfUrl, routers) {
      return clusterRequestHandler({
        cluster,
        tenants: opts.tenants(),
        pool,
        log: opts.log,
        waitMs: 2 * opts.leaseMs + 5000,
        local,
        selfUrl,
        routers,
        ensureToken: async (org, hash) => {
          const tenants = opts.tenants();
          if (tenants.orgOfTokenHash(hash)) return;
          await tenants.reloadTokens(org);
        },
      });
    },
    async close() {
      try {
        if (joined) await cluster.stop();
      } finally {
        await leasePool.end().catch(() => undefined);
        await db.close();
      }
    },
  };
}

/** Creating a tenant in cluster mode: own the org under a fence while it is built, register it, let it go. */
export function creationHooks(cluster: Cluster, db: Database): TenantCreationHooks {
  return {
    reserve: (org) => cluster.reserve(org),
    async register(config: TenantConfig) {
      await db.pool.query('INSERT INTO wg_tenants (org, config) VALUES ($1, $2)', [config.org, JSON.stringify(config)]);
    },
    release: (org) => cluster.releaseReserved(org),
    async saveConfig(config: TenantConfig) {
      // the owners follow wg_tenants (ownership.ts followSettings); this process applies it itself at once
      await db.pool.query('UPDATE wg_tenants SET config = $2, updated_at = now() WHERE org = $1', [config.org, JSON.stringify(config)]);
    },
    async loadConfig(org: string) {
      const r = await db.pool.query<{ config: TenantConfig }>('SELECT config FROM wg_tenants WHERE org = $1', [org]);
      return r.rows[0]?.config ?? null;
    },
  };
}
