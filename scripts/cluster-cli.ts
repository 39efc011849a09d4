/**
 * The operator CLI in cluster mode (SVC_DATABASE_URL set): the tenant registry, tokens and
 * ownership are in PostgreSQL, so these commands act there (never on a live tenant's
 * repository), and `workgraph cluster status` shows who owns what.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { generateToken, hashPrefix, newTokenRecord, type TokenRecord } from '../kernel/auth.js';
import { configFromEnv, createLogger, systemClock, type ServerConfig } from '../kernel/config.js';
import { openDatabase, type Database } from '../kernel/cluster/db.js';
import { clusterStatus, Cluster } from '../kernel/cluster/ownership.js';
import { pgOperational } from '../kernel/cluster/pg-state.js';
import { PgTokenStore } from '../kernel/cluster/pg-tokens.js';
import { creationHooks } from '../kernel/cluster/runtime.js';
import { gitEnv } from '../kernel/git/cli.js';
import { nodePath } from '../kernel/git/objects.js';
import type { TenantConfig } from '../kernel/tenant.js';
import { ORG_PATTERN, TenantManager } from '../kernel/tenants.js';
import { createSandbox } from '../sandbox/index.js';
import { seedPack } from '../seed-pack/index.js';
import { allPlugins } from './plugins.js';

export const CLUSTER_HELP = `usage:
  workgraph cluster status
      prints {members: [{id, url, pid, host, started_at, heartbeat_at, live}],
              tenants: [{org, owner, fence, expired, url, head, expires_at, preferred}]}
      (needs SVC_DATABASE_URL; docs/scale-out.md)`;

function out(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + '\n');
}

function fail(message: string): never {
  process.stderr.write(`workgraph: ${message}\n`);
  process.exit(2);
}

async function withDatabase<T>(config: ServerConfig, fn: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase(config.databaseUrl!, createLogger(undefined, true));
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

export async function clusterCommand(args: string[]): Promise<void> {
  const [sub] = args;
  if (!sub || sub === '--help' || sub === 'help') return void process.stdout.write(CLUSTER_HELP + '\n');
  const config = configFromEnv();
  if (!config.databaseUrl) fail('cluster commands need SVC_DATABASE_URL (cluster mode: docs/scale-out.md)');
  if (sub !== 'status') fail(`unknown cluster command '${sub}'\n${CLUSTER_HELP}`);
  await withDatabase(config, async (db) => out(await clusterStatus(db.pool, config.clusterLeaseMs)));
}

/** `workgraph tenant add` in cluster mode: built on the shared data directory, registered in PostgreSQL. */
export async function clusterTenantAdd(spec: {
  org: string;
  adminEmail: string;
  adminName: string;
  plugins: string[];
}): Promise<{ org: string; person: string; token: string }> {
  const config = configFromEnv();
  return withDatabase(config, async (db) => {
    const cluster = new Cluster({ pool: db.pool, log: createLogger(undefined, true), leaseMs: config.clusterLeaseMs });
    const sandbox = createSandbox();
    try {
      const manager = new TenantManager({
        dataDir: config.dataDir,
        sandbox,
        pack: seedPack,
        plugins: allPlugins,
        clock: systemClock,
        log: createLogger(undefined, true),
        fsync: config.fsync,
        creation: creationHooks(cluster, db),
        operational: pgOperational(db, (org) => cluster.fenceOf(org)),
      });
      cluster.attach(manager);
      const created = await manager.create(spec);
      return { org: spec.org, person: created.person, token: created.token };
    } finally {
      await sandbox.close();
    }
  });
}

export async function clusterTenantList(): Promise<Array<{ org: string; plugins: string[] }>> {
  return withDatabase(configFromEnv(), async (db) => {
    const r = await db.pool.query<{ org: string; config: TenantConfig }>('SELECT org, config FROM wg_tenants ORDER BY org');
    return r.rows.map((row) => ({ org: row.org, plugins: row.config.plugins }));
  });
}

/** Read-modify-write of a tenant's settings in the registry; its owner applies them within a tick. */
export async function clusterTenantPlugins(org: string, change: (config: TenantConfig) => TenantConfig | null): Promise<TenantConfig> {
  return withDatabase(configFromEnv(), async (db) => {
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      const r = await client.query<{ config: TenantConfig }>('SELECT config FROM wg_tenants WHERE org = $1 FOR UPDATE', [org]);
      if (r.rowCount !== 1) fail(`no tenant '${org}' in the cluster registry`);
      const next = change(r.rows[0]!.config);
      if (next) await client.query('UPDATE wg_tenants SET config = $2, updated_at = now() WHERE org = $1', [org, JSON.stringify(next)]);
      await client.query('COMMIT');
      return next ?? r.rows[0]!.config;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  });
}

/**
 * `workgraph token mint` in cluster mode: the person is looked up in the tenant's repository
 * read-only (git, never opening the live tenant), the token's hash written to PostgreSQL; the
 * owner learns of it by notification, or at the token's first use.
 */
export async function clusterTokenMint(opts: { org: string; person: string; expires: string; label: string | null }): Promise<void> {
  const config = configFromEnv();
  if (!ORG_PATTERN.test(opts.org)) fail(`'${opts.org}' is not an org slug (kebab-case)`);
  await withDatabase(config, async (db) => {
    const known = await db.pool.query('SELECT 1 FROM wg_tenants WHERE org = $1', [opts.org]);
    if (known.rowCount !== 1) fail(`no tenant '${opts.org}'`);
    const gitdir = join(config.dataDir, 'tenants', opts.org, 'graph.git');
    const found = spawnSync('git', ['--git-dir', gitdir, 'cat-file', '-e', `refs/heads/main:${nodePath('person', opts.person)}`], {
      env: gitEnv(),
    });
    if (found.status !== 0) fail(`no person node '${opts.person}' in ${opts.org}`);
    const token = generateToken('pat');
    const rec = newTokenRecord(token, {
      kind: 'pat',
      person: opts.person,
      created: new Date().toISOString(),
      expires: opts.expires,
      label: opts.label,
      minted_by: 'cli',
    });
    // unfenced: the operator writes beside the owner, serialized with it by the store's advisory lock
    await new PgTokenStore(db, opts.org, () => undefined, join(config.dataDir, 'tenants', opts.org, 'auth')).mutate(
      (records) => void records.set(rec.hash, rec),
    );
    out({ org: opts.org, person: opts.person, token, hash_prefix: hashPrefix(rec.hash), expires: opts.expires });
  });
}

/**
 * The token records of a tenant in cluster mode (`workgraph audit identity`): hashes and their
 * records from `wg_tokens`, read-only, never a token.
 */
export async function clusterTokenRecords(org: string): Promise<TokenRecord[]> {
  return withDatabase(configFromEnv(), async (db) => {
    const r = await db.pool.query<{ record: TokenRecord }>('SELECT record FROM wg_tokens WHERE org = $1', [org]);
    return r.rows.map((row) => row.record);
  });
}
