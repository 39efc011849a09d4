/**
 * What the cluster's tables say about its members and tenants (kernel/cluster/ownership.ts acts
 * on it; `workgraph cluster status` prints it): the member rows, every tenant's owner, and the
 * member each tenant prefers (rendezvous hashing over the live members).
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';

export interface OwnerRow {
  org: string;
  owner: string;
  fence: number;
  expired: boolean;
  url: string | null;
  head: string | null;
}

export interface MemberRow {
  id: string;
  url: string;
  pid: number;
  host: string;
  started_at: string;
  heartbeat_at: string;
  live: boolean;
}

/** Rendezvous (highest random weight) hashing: the member a tenant prefers among `members`. */
export function preferredMember(org: string, members: string[]): string | null {
  let best: string | null = null;
  let bestScore = '';
  for (const m of members) {
    const score = createHash('sha256').update(`${org}\0${m}`).digest('hex');
    if (best === null || score > bestScore) {
      best = m;
      bestScore = score;
    }
  }
  return best;
}

/** Every member, live when its heartbeat is younger than a lease. */
export async function clusterMembers(pool: pg.Pool, leaseMs: number): Promise<MemberRow[]> {
  const r = await pool.query<MemberRow>(
    `SELECT id, url, pid, host, started_at::text, heartbeat_at::text, heartbeat_at > now() - $1 * interval '1 millisecond' AS live
       FROM wg_members ORDER BY id`,
    [leaseMs],
  );
  return r.rows;
}

/** The members and every tenant's owner and preferred member (`workgraph cluster status`, with or without a running member). */
export async function clusterStatus(
  pool: pg.Pool,
  leaseMs: number,
): Promise<{ members: MemberRow[]; tenants: Array<OwnerRow & { preferred: string | null; expires_at: string }> }> {
  const members = await clusterMembers(pool, leaseMs);
  return { members, tenants: await clusterTenants(pool, members) };
}

/** Every registered tenant with its owner and the member it prefers. */
export async function clusterTenants(
  pool: pg.Pool,
  members: MemberRow[],
): Promise<Array<OwnerRow & { preferred: string | null; expires_at: string }>> {
  const live = members.filter((m) => m.live).map((m) => m.id);
  const r = await pool.query<{
    org: string;
    owner: string | null;
    fence: string | null;
    expired: boolean | null;
    url: string | null;
    head: string | null;
    expires_at: string | null;
  }>(
    `SELECT t.org, o.owner, o.fence, o.expires_at < now() AS expired, m.url, o.head, o.expires_at::text
       FROM wg_tenants t LEFT JOIN wg_owners o USING (org) LEFT JOIN wg_members m ON m.id = o.owner ORDER BY t.org`,
  );
  return r.rows.map((row) => ({
    org: row.org,
    owner: row.owner ?? '',
    fence: Number(row.fence ?? 0),
    expired: row.expired ?? true,
    url: row.url,
    head: row.head,
    expires_at: row.expires_at ?? '',
    preferred: preferredMember(row.org, live),
  }));
}
