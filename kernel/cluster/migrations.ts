/**
 * The PostgreSQL schema of cluster mode (SVC_DATABASE_URL), as numbered migrations. They run
 * at start, in order, each in its own transaction, under an advisory lock so processes that
 * start together do not race; `wg_schema_migrations` records the applied versions. A
 * migration is never edited once released: a change is a new version.
 *
 * Tables:
 * - wg_tenants: the tenant registry and each tenant's settings (tenant.json: plugins, limits).
 * - wg_tokens: token hashes (never tokens) and their records, by tenant.
 * - wg_state: every operational collection (leases, capability records, idempotency keys,
 *   capture journal, mute lists, workflow step leases, ...): (org, collection, key) -> JSON.
 *   org '' holds the data-directory-wide collections (OAuth clients, app sessions).
 * - wg_owners: one row a tenant: which member serves it, the fencing token (bumped at every
 *   change of owner), the lease expiry, and the tenant's acknowledged git head.
 * - wg_members: the server processes of the cluster and their heartbeats.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'operational store, ownership and membership',
    sql: `
CREATE TABLE wg_tenants (
  org text PRIMARY KEY,
  config jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE wg_tokens (
  hash text PRIMARY KEY,
  org text NOT NULL,
  record jsonb NOT NULL
);
CREATE INDEX wg_tokens_org ON wg_tokens (org);
CREATE TABLE wg_state (
  org text NOT NULL,
  collection text NOT NULL,
  key text NOT NULL,
  value jsonb NOT NULL,
  PRIMARY KEY (org, collection, key)
);
CREATE TABLE wg_owners (
  org text PRIMARY KEY,
  owner text NOT NULL,
  fence bigint NOT NULL,
  expires_at timestamptz NOT NULL,
  head text
);
CREATE TABLE wg_members (
  id text PRIMARY KEY,
  url text NOT NULL,
  pid integer NOT NULL,
  host text NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now()
);
`,
  },
  {
    version: 2,
    name: 'operational values keep their bytes (json, not jsonb)',
    // An idempotency record replays the original answer byte for byte; jsonb reorders keys.
    sql: `ALTER TABLE wg_state ALTER COLUMN value TYPE json USING value::json;`,
  },
];
