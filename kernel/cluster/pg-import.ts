/**
 * Copies a tenant's file stores into PostgreSQL: auth/tokens.json into wg_tokens and every
 * state/<collection>.json (not the index snapshot) into wg_state. For switching an existing
 * data directory to cluster mode, and for a restore (`workgraph restore` writes the files of
 * an admin export into the tenant's directory). One transaction; unfenced (an operator tool:
 * run it before any process serves the tenant, or while the caller owns it); NOTIFYs
 * `wg_tokens` so a process holding the tenant's tokens re-reads them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TokenRecord } from '../auth.js';
import type { Database } from './db.js';

export interface ImportOptions {
  /** drop the tenant's rows first (a restore); default: merge, the files winning */
  replace?: boolean;
}

export async function importTenantFiles(
  db: Database,
  org: string,
  dir: string,
  options: ImportOptions = {},
): Promise<{ tokens: number; rows: number }> {
  let tokens: TokenRecord[] = [];
  try {
    tokens = JSON.parse(readFileSync(join(dir, 'auth', 'tokens.json'), 'utf8')) as TokenRecord[];
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const state: Array<{ c: string; k: string; v: unknown }> = [];
  let names: string[] = [];
  try {
    names = readdirSync(join(dir, 'state')).filter((n) => n.endsWith('.json') && !n.startsWith('.') && !n.startsWith('index-snapshot'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  for (const name of names.sort()) {
    const data = JSON.parse(readFileSync(join(dir, 'state', name), 'utf8')) as Record<string, unknown>;
    const collection = name.slice(0, -'.json'.length);
    for (const [k, v] of Object.entries(data)) if (v !== null && v !== undefined) state.push({ c: collection, k, v });
  }
  const client = await db.pool.connect();
  let done = false;
  try {
    await client.query('BEGIN');
    await client.query("SELECT pg_advisory_xact_lock(hashtext('wg_tokens'), hashtext($1))", [org]);
    if (options.replace) {
      await client.query('DELETE FROM wg_tokens WHERE org = $1', [org]);
      await client.query('DELETE FROM wg_state WHERE org = $1', [org]);
    }
    if (tokens.length > 0) {
      const res = await client.query(
        `INSERT INTO wg_tokens (hash, org, record)
         SELECT e->>'hash', $1, e FROM jsonb_array_elements($2::jsonb) AS e
         ON CONFLICT (hash) DO UPDATE SET record = EXCLUDED.record WHERE wg_tokens.org = EXCLUDED.org`,
        [org, JSON.stringify(tokens)],
      );
      if (res.rowCount !== tokens.length) throw new Error(`tenant ${org}: some token hashes already belong to another tenant`);
    }
    if (state.length > 0) {
      await client.query(
        `INSERT INTO wg_state (org, collection, key, value)
         SELECT $1, e->>'c', e->>'k', e->'v' FROM json_array_elements($2::json) AS e
         ON CONFLICT (org, collection, key) DO UPDATE SET value = EXCLUDED.value`,
        [org, JSON.stringify(state)],
      );
    }
    await client.query("SELECT pg_notify('wg_tokens', $1)", [org]);
    await client.query('COMMIT');
    done = true;
  } finally {
    let broken = false;
    if (!done) await client.query('ROLLBACK').catch(() => (broken = true));
    client.release(broken);
  }
  return { tokens: tokens.length, rows: state.length };
}
