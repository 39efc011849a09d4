/**
 * Cluster mode (docs/scale-out.md): tenants are owned, not shared. Each tenant is served by
 * one process at a time, the holder of its row in `wg_owners`: an ownership lease (expiry
 * kept by PostgreSQL's clock) with a fencing token that every change of owner bumps. The
 * owner renews its leases every third of the lease; a process that cannot renew stops
 * serving the tenant before the lease runs out, and any process may claim a tenant whose
 * lease expired. Every write of the owner is fenced: a commit is acknowledged only after its
 * head was recorded under the owner's token (kernel/git/types.ts `StoreFence`), and the
 * operational store's writes check the token in the same statement (kernel/cluster/pg-*.ts),
 * so a paused or partitioned former owner's late writes fail instead of forking history.
 *
 * Placement is rendezvous hashing over the live members (heartbeat within one lease): a
 * tenant's preferred member claims it when it is free, and an owner hands a tenant to its
 * preferred member once that member has been up for two leases (one hand-off a tick, so a
 * joining process takes its share gradually; a leaving one hands everything back at once).
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import type { Logger } from '../config.js';
import { errors } from '../errors.js';
import type { StoreFence } from '../git/types.js';
import { HeadAcks } from './head-acks.js';
import type { Tenant, TenantConfig } from '../tenant.js';
import type { TenantManager } from '../tenants.js';
import { clusterMembers, clusterStatus, preferredMember, type MemberRow, type OwnerRow } from './status.js';

export { clusterMembers, clusterStatus, clusterTenants, preferredMember, type MemberRow, type OwnerRow } from './status.js';

export interface ClusterOptions {
  pool: pg.Pool;
  log: Logger;
  /** ownership lease length (ms); renewed every third of it */
  leaseMs: number;
  /**
   * A connection of its own for the heartbeat and the lease renewal (runtime.ts opens one): a
   * renewal queued behind a busy `pool` (every connection held by requests waiting on locks or a
   * starved database) would let the leases run out while this process still serves. Without
   * it, `pool` is used.
   */
  leasePool?: pg.Pool;
}

interface Owned {
  fence: number;
  /** local monotonic time (performance.now) until which the lease is surely ours */
  validUntil: number;
  /**
   * local monotonic time after which the lease has surely ended in PostgreSQL (the last claim
   * or renewal answer's arrival plus a lease): past it, with no renewal back, the tenant is
   * dropped here (lapse) even when the renewal itself hangs
   */
  endsBy: number;
}

/**
 * Renews every lease of member $1 for $2 ms: the rows locked in org order, as the acknowledged
 * heads' batches lock them (head-acks.ts), so the two never wait on each other in a cycle.
 */
export const RENEW_LEASES = `UPDATE wg_owners o SET expires_at = now() + $2 * interval '1 millisecond'
  FROM (SELECT org FROM wg_owners WHERE owner = $1 AND expires_at > now() ORDER BY org FOR NO KEY UPDATE) l
 WHERE o.org = l.org RETURNING o.org, o.fence`;

export type Route =
  | { kind: 'local'; tenant: Tenant }
  | { kind: 'remote'; url: string; owner: string }
  | { kind: 'unknown' }
  | { kind: 'unavailable'; reason: string };

export class Cluster {
  readonly id = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  private readonly owned = new Map<string, Owned>();
  /** tenants being opened or handed off: requests for them wait on this */
  private readonly pending = new Map<string, Promise<Tenant | null>>();
  private timer: NodeJS.Timeout | null = null;
  /** drops tenants whose lease surely ended without a renewal back (a renewal that hangs, a paused process) */
  private lapseTimer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  /** the slower part of a tick (settings, claims, rebalance), run beside the renewals, never in their way */
  private housekeeping: Promise<void> | null = null;
  private stopped = false;
  private members: MemberRow[] = [];
  private configVersions = new Map<string, string>();
  private readonly startedAt = performance.now();
  /** where tenants owned elsewhere were found, for a short while (routing reads no table per request) */
  private readonly remotes = new Map<string, { url: string; owner: string; until: number }>();
  private readonly inflight = new Map<string, number>();
  /** every owned tenant's acknowledged head, recorded a batch at a time */
  private readonly headAcks: HeadAcks;

  /** the URL other members forward requests to (set once the listener is up) */
  url = '';
  private tenantManager: TenantManager | null = null;

  constructor(private readonly options: ClusterOptions) {
    this.headAcks = new HeadAcks(options.pool);
  }

  /** The tenant manager whose tenants this member opens and closes. */
  attach(tenants: TenantManager): void {
    this.tenantManager = tenants;
  }

  private get opts(): ClusterOptions & { tenants: TenantManager; url: string } {
    if (!this.tenantManager) throw new Error('cluster: no tenant manager attached');
    const { tenantManager: tenants, url } = this;
    const o = this.optsCache;
    if (o && o.tenants === tenants && o.url === url) return o;
    return (this.optsCache = { ...this.options, tenants, url });
  }
  private optsCache: (ClusterOptions & { tenants: TenantManager; url: string }) | null = null;

  /** The tenant when this process surely owns it and has it open (the routing fast path, no await). */
  localTenant(org: string): Tenant | undefined {
    if (this.pending.has(org) || this.fenceOf(org) === null) return undefined;
    return this.tenantManager?.get(org);
  }

  get leaseMs(): number {
    return this.options.leaseMs;
  }

  /**
   * Own a new org before it is created (`TenantManager.create`): its operational writes are
   * fenced like any owner's. Fails when the org exists or another process is creating it.
   */
  async reserve(org: string): Promise<StoreFence> {
    const { pool, leaseMs } = this.options;
    const sent = performance.now();
    const r = await pool.query<{ fence: string }>(
      `INSERT INTO wg_owners (org, owner, fence, expires_at)
         SELECT $1, $2, 1, now() + $3 * interval '1 millisecond' WHERE NOT EXISTS (SELECT 1 FROM wg_tenants WHERE org = $1)
       ON CONFLICT (org) DO UPDATE SET owner = EXCLUDED.owner, fence = wg_owners.fence + 1, expires_at = EXCLUDED.expires_at
         WHERE wg_owners.expires_at < now()
       RETURNING fence`,
      [org, this.id, leaseMs],
    );
    if (r.rowCount !== 1) throw new Error(`tenant '${org}' already exists (or is being created by another process)`);
    const fence = Number(r.rows[0]!.fence);
    this.owned.set(org, { fence, validUntil: sent + leaseMs * 0.75, endsBy: performance.now() + leaseMs });
    return this.storeFence(org, fence);
  }

  /** The creation of `org` is over: let its lease go, so its preferred member claims it. */
  async releaseReserved(org: string): Promise<void> {
    const o = this.owned.get(org);
    if (!o) return;
    this.owned.delete(org);
    await this.options.pool.query(`UPDATE wg_owners SET expires_at = now() - interval '1 millisecond' WHERE org = $1 AND fence = $2`, [
      org,
      o.fence,
    ]);
  }

  /** The fencing token this process holds for `org`, or null when it does not (surely) own it. */
  fenceOf(org: string): number | null {
    const o = this.owned.get(org);
    if (!o || performance.now() >= o.validUntil) return null;
    return o.fence;
  }

  /** The store fence of a tenant opened under `fence`. */
  storeFence(org: string, fence: number): StoreFence {
    const { pool } = this.opts;
    const lost = () => {
      this.lose(org, fence, 'its fence moved on');
      return errors.unavailable(
        'not_owner',
        `this process lost tenant ${org} to another before the write was acknowledged; it was not applied: retry it`,
      );
    };
    return {
      acknowledge: async (commit) => {
        let recorded: boolean;
        try {
          recorded = await this.headAcks.record(org, fence, commit);
        } catch (err) {
          // whether PostgreSQL took the head is unknown: the store stops (kernel/git/store.ts), and
          // the tenant is reopened here from the journal and the head PostgreSQL holds (the next
          // renewal finds the lease still ours and adopts it), or by whoever takes it over
          this.lose(org, fence, `its acknowledged head could not be recorded: ${String(err)}`);
          throw errors.unavailable(
            'owner_unavailable',
            `the database did not confirm this write of tenant ${org}; it may or may not have been applied: read it back, then retry`,
          );
        }
        if (!recorded) throw lost();
      },
      check: async () => {
        const r = await pool.query('SELECT 1 FROM wg_owners WHERE org = $1 AND fence = $2', [org, fence]);
        if (r.rowCount !== 1) throw lost();
      },
      syncStarted: () => this.headAcks.syncStarted(org),
    };
  }

  async start(): Promise<void> {
    const { pool, url } = this.opts;
    await pool.query(
      `INSERT INTO wg_members (id, url, pid, host) VALUES ($1, $2, $3, $4)
       ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, heartbeat_at = now()`,
      [this.id, url, process.pid, hostname()],
    );
    this.opts.log.info('cluster member up', { member: this.id, url, lease_ms: this.opts.leaseMs });
    await this.tick();
    // renewals start now, not once the claimed tenants are open: on a loaded machine opening
    // them can take longer than the quarter of a lease left before the claims stop counting
    this.arm();
    this.lapseTimer = setInterval(() => this.lapse(), Math.max(50, Math.floor(this.opts.leaseMs / 4)));
    this.lapseTimer.unref();
    // the tenants claimed at start are open before the member reports itself up
    await Promise.allSettled([...this.pending.values()]);
  }

  private arm(): void {
    if (this.stopped) return;
    this.timer = setTimeout(
      () => {
        // the renewal is on its own beat: a slow settings read or claim (a loaded database, a
        // tenant being opened) must not let this process's leases run out while it still serves
        this.ticking = this.renew()
          .then(() => {
            if (this.housekeeping || this.stopped) return;
            this.housekeeping = this.keepHouse()
              .catch((err) => this.opts.log.warn('cluster tick failed', { error: String(err) }))
              .finally(() => {
                this.housekeeping = null;
              });
          })
          .catch((err) => this.opts.log.warn('cluster lease renewal failed', { error: String(err) }))
          .finally(() => {
            this.ticking = null;
            this.arm();
          });
      },
      Math.max(50, Math.floor(this.opts.leaseMs / 3)),
    );
    this.timer.unref();
  }

  /**
   * A tenant whose lease has surely ended in PostgreSQL with no renewal back (the renewal hangs
   * on a dead connection, or the process was paused) is closed here at once: its writes already
   * stop at `validUntil`; this stops serving it, as a renewal that came back would.
   */
  private lapse(): void {
    const now = performance.now();
    for (const [org, o] of [...this.owned]) {
      if (now > o.endsBy && !this.pending.has(org)) this.lose(org, o.fence, 'no lease renewal came back before the lease ran out');
    }
  }

  /** Heartbeat, renew leases (dropping lost ones), follow settings, claim free tenants, rebalance. */
  async tick(): Promise<void> {
    await this.renew();
    await this.keepHouse();
  }

  /** Heartbeat and lease renewal (dropping lost leases, adopting handed-over ones). */
  private async renew(): Promise<void> {
    if (this.stopped) return;
    const { leaseMs } = this.opts;
    const pool = this.opts.leasePool ?? this.opts.pool;
    const sent = performance.now();
    await pool.query('UPDATE wg_members SET heartbeat_at = now() WHERE id = $1', [this.id]);
    const renewed = await pool.query<{ org: string; fence: string }>(RENEW_LEASES, [this.id, leaseMs]);
    const held = new Map(renewed.rows.map((r) => [r.org, Number(r.fence)]));
    for (const [org, o] of [...this.owned]) {
      const fence = held.get(org);
      if (fence === o.fence) {
        o.validUntil = sent + leaseMs * 0.75;
        o.endsBy = performance.now() + leaseMs;
      } else this.lose(org, o.fence, fence === undefined ? 'its lease was taken' : 'it was reassigned');
    }
    // tenants handed to this process by another member
    for (const [org, fence] of held) if (!this.owned.has(org) && !this.pending.has(org)) void this.adopt(org, fence);
  }

  /** Follow settings, claim free tenants, rebalance. */
  private async keepHouse(): Promise<void> {
    if (this.stopped) return;
    const { pool, leaseMs } = this.opts;
    const live = await this.liveMembers();
    const ids = live.map((m) => m.id);
    await this.followSettings();

    // free tenants this process should serve: preferred here, or orphaned for a whole lease
    const free = await pool.query<{ org: string; orphaned: boolean }>(
      `SELECT t.org, (o.org IS NULL OR o.expires_at < now() - $1 * interval '1 millisecond') AS orphaned
         FROM wg_tenants t LEFT JOIN wg_owners o USING (org)
        WHERE o.org IS NULL OR o.expires_at < now()`,
      [leaseMs],
    );
    for (const { org, orphaned } of free.rows) {
      if (this.pending.has(org)) continue;
      if (preferredMember(org, ids) === this.id || orphaned) void this.claim(org).catch(() => undefined);
    }

    // rebalance: hand one tenant to its preferred member once that member is settled
    const settled = new Set(live.filter((m) => Date.now() - Date.parse(m.started_at) > 2 * leaseMs).map((m) => m.id));
    for (const org of this.owned.keys()) {
      const preferred = preferredMember(org, ids);
      if (preferred && preferred !== this.id && settled.has(preferred) && !this.pending.has(org)) {
        await this.handOff(org, preferred).catch((err) =>
          this.opts.log.warn('hand-off failed', { org, to: preferred, error: String(err) }),
        );
        break;
      }
    }
  }

  private async liveMembers(): Promise<MemberRow[]> {
    this.members = await clusterMembers(this.opts.pool, this.opts.leaseMs);
    return this.members.filter((m) => m.live);
  }

  /** Plugin and limit changes (`workgraph tenant plugins` writes wg_tenants) reach the tenants served here. */
  private async followSettings(): Promise<void> {
    if (this.owned.size === 0) return;
    const r = await this.opts.pool.query<{ org: string; config: TenantConfig; v: string }>(
      'SELECT org, config, updated_at::text AS v FROM wg_tenants WHERE org = ANY($1)',
      [[...this.owned.keys()]],
    );
    for (const row of r.rows) {
      if (this.configVersions.get(row.org) === row.v) continue;
      const first = !this.configVersions.has(row.org);
      this.configVersions.set(row.org, row.v);
      if (!first) await this.opts.tenants.applyConfig(row.org, row.config);
    }
  }

  /** Take a free tenant: bump its fence to this process, then open it. Null when another process won. */
  claim(org: string): Promise<Tenant | null> {
    const existing = this.pending.get(org);
    if (existing) return existing;
    const run = (async () => {
      const { pool, leaseMs } = this.opts;
      const sent = performance.now();
      const r = await pool.query<{ fence: string }>(
        `INSERT INTO wg_owners (org, owner, fence, expires_at)
           SELECT $1, $2, 1, now() + $3 * interval '1 millisecond' FROM wg_tenants WHERE org = $1
         ON CONFLICT (org) DO UPDATE SET owner = EXCLUDED.owner, fence = wg_owners.fence + 1, expires_at = EXCLUDED.expires_at
           WHERE wg_owners.expires_at < now()
         RETURNING fence`,
        [org, this.id, leaseMs],
      );
      if (r.rowCount !== 1) return null;
      return this.openOwned(org, Number(r.rows[0]!.fence), sent);
    })();
    return this.track(org, run);
  }

  /** A tenant another member assigned to this process (hand-off): open it under the fence given. */
  private adopt(org: string, fence: number): Promise<Tenant | null> {
    return this.track(org, this.openOwned(org, fence, performance.now()));
  }

  private track(org: string, run: Promise<Tenant | null>): Promise<Tenant | null> {
    this.pending.set(org, run);
    run.then(
      () => this.pending.delete(org),
      (err) => {
        this.pending.delete(org);
        this.opts.log.error('tenant take-over failed', { org, error: String(err) });
      },
    );
    return run;
  }

  private async openOwned(org: string, fence: number, sent: number): Promise<Tenant | null> {
    const { pool, leaseMs, tenants } = this.opts;
    this.owned.set(org, { fence, validUntil: sent + leaseMs * 0.75, endsBy: performance.now() + leaseMs });
    try {
      const row = await pool.query<{ config: TenantConfig; v: string; head: string | null }>(
        'SELECT t.config, t.updated_at::text AS v, o.head FROM wg_tenants t JOIN wg_owners o USING (org) WHERE org = $1 AND o.fence = $2',
        [org, fence],
      );
      if (row.rowCount !== 1) throw errors.unavailable('not_owner', `tenant ${org} moved while it was being opened`);
      this.configVersions.set(org, row.rows[0]!.v);
      const started = performance.now();
      const tenant = await tenants.openOwned(org, {
        config: row.rows[0]!.config,
        fence: this.storeFence(org, fence),
        ackedHead: row.rows[0]!.head,
      });
      if (this.owned.get(org)?.fence !== fence) {
        await tenants.closeOne(org);
        return null;
      }
      this.opts.log.info('tenant taken over', {
        org,
        fence,
        member: this.id,
        nodes: tenant.index.size,
        open_ms: Math.round(performance.now() - started),
      });
      return tenant;
    } catch (err) {
      if (this.owned.get(org)?.fence === fence) this.owned.delete(org);
      await tenants.closeOne(org).catch(() => undefined);
      // give it back at once so another member can try
      await pool
        .query(`UPDATE wg_owners SET expires_at = now() - interval '1 millisecond' WHERE org = $1 AND fence = $2`, [org, fence])
        .catch(() => undefined);
      throw err;
    }
  }

  /** This process no longer owns `org` (under `fence`): stop serving it; nothing more is written. */
  private lose(org: string, fence: number, why: string): void {
    const o = this.owned.get(org);
    if (!o || o.fence !== fence) return;
    this.owned.delete(org);
    this.opts.log.warn('tenant lost', { org, fence, why });
    void this.opts.tenants.closeOne(org).catch(() => undefined);
  }

  /** Planned move: drain and close the tenant here, then assign it to `to` under a new fence. */
  private async handOff(org: string, to: string): Promise<void> {
    const o = this.owned.get(org);
    if (!o) return;
    let release!: (t: Tenant | null) => void;
    this.pending.set(org, new Promise((r) => (release = r)));
    try {
      // new requests now wait (route); the ones being served here finish first (at most 10 s)
      const deadline = performance.now() + 10_000;
      while ((this.inflight.get(org) ?? 0) > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      await this.opts.tenants.closeOne(org); // drains writes and checkpoints under our fence
      this.owned.delete(org);
      const moved = await this.opts.pool.query(
        `UPDATE wg_owners SET owner = $3, fence = fence + 1, expires_at = now() + $4 * interval '1 millisecond' WHERE org = $1 AND fence = $2`,
        [org, o.fence, to, this.opts.leaseMs],
      );
      // a process paused (or slowed) during the hand-off finds its lease already taken over
      if (moved.rowCount === 1) this.opts.log.info('tenant handed off', { org, to });
      else this.opts.log.warn('tenant lost', { org, fence: o.fence, why: 'it was taken over before the hand-off completed' });
    } finally {
      this.pending.delete(org);
      release(null);
    }
  }

  /**
   * Where a request for `org` is served. Local when this process owns it (opening it first
   * when it was just assigned here or is free); remote when a live member owns it; waits up
   * to `waitMs` for a hand-off or take-over in progress.
   */
  async route(org: string, waitMs: number, fresh = false): Promise<Route> {
    const deadline = performance.now() + waitMs;
    for (;;) {
      const pending = this.pending.get(org);
      if (pending) await pending.catch(() => undefined);
      const local = this.fenceOf(org) !== null ? this.opts.tenants.get(org) : undefined;
      if (local) return { kind: 'local', tenant: local };
      const cached = fresh ? undefined : this.remotes.get(org);
      if (cached && cached.until > performance.now()) return { kind: 'remote', url: cached.url, owner: cached.owner };
      let row: OwnerRow | null;
      try {
        row = await this.ownerOf(org);
        if (!row) {
          const known = await this.opts.pool.query('SELECT 1 FROM wg_tenants WHERE org = $1', [org]);
          if (known.rowCount === 0) return { kind: 'unknown' };
        }
      } catch (err) {
        // PostgreSQL unreachable for a moment (a connection it ended, a restart): retry until the deadline
        if (performance.now() >= deadline)
          return { kind: 'unavailable', reason: `the cluster database is unreachable (${(err as Error).message})` };
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      if (row && !row.expired && row.owner === this.id) {
        const o = this.owned.get(org);
        const t = o && o.fence === row.fence ? this.opts.tenants.get(org) : !o ? await this.adopt(org, row.fence) : null; // !o: assigned here (hand-off), not yet opened
        if (t) return { kind: 'local', tenant: t };
      } else if (row && !row.expired && row.url) {
        // remembered for a tick: a moved tenant's old owner forwards on, a dead one fails the forward (`forget`)
        this.remotes.set(org, { url: row.url, owner: row.owner, until: performance.now() + Math.min(1000, this.options.leaseMs / 3) });
        return { kind: 'remote', url: row.url, owner: row.owner };
      } else {
        const t = await this.claim(org).catch(() => null);
        if (t) return { kind: 'local', tenant: t };
      }
      if (performance.now() >= deadline) return { kind: 'unavailable', reason: `no process is serving tenant ${org} yet` };
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** A request for `org` is being served here (a planned hand-off waits for it). */
  enter(org: string): () => void {
    this.inflight.set(org, (this.inflight.get(org) ?? 0) + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const n = (this.inflight.get(org) ?? 1) - 1;
      if (n > 0) this.inflight.set(org, n);
      else this.inflight.delete(org);
    };
  }

  /** A forward to the remembered owner of `org` failed: look it up again. */
  forget(org: string): void {
    this.remotes.delete(org);
  }

  async ownerOf(org: string): Promise<OwnerRow | null> {
    const r = await this.opts.pool.query<{
      org: string;
      owner: string;
      fence: string;
      expired: boolean;
      url: string | null;
      head: string | null;
    }>(
      `SELECT o.org, o.owner, o.fence, o.expires_at < now() AS expired, m.url, o.head
         FROM wg_owners o LEFT JOIN wg_members m ON m.id = o.owner WHERE o.org = $1`,
      [org],
    );
    const row = r.rows[0];
    return row ? { ...row, fence: Number(row.fence) } : null;
  }

  /** Who owns what (`workgraph cluster status`). */
  status(): ReturnType<typeof clusterStatus> {
    return clusterStatus(this.options.pool, this.options.leaseMs);
  }

  /** Graceful stop: close every tenant served here and release its lease so others take over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.lapseTimer) clearInterval(this.lapseTimer);
    await this.ticking?.catch(() => undefined);
    await this.housekeeping?.catch(() => undefined);
    await Promise.allSettled([...this.pending.values()]);
    const { pool, tenants } = this.opts;
    for (const [org, o] of [...this.owned]) {
      await tenants.closeOne(org).catch(() => undefined);
      this.owned.delete(org);
      await pool
        .query(`UPDATE wg_owners SET expires_at = now() - interval '1 millisecond' WHERE org = $1 AND fence = $2`, [org, o.fence])
        .catch(() => undefined);
    }
    await pool.query('DELETE FROM wg_members WHERE id = $1', [this.id]).catch(() => undefined);
  }

  /** Crash simulation for tests: stop renewing without releasing anything. */
  halt(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.lapseTimer) clearInterval(this.lapseTimer);
  }

  get ownedOrgs(): string[] {
    return [...this.owned.keys()];
  }

  get knownMembers(): MemberRow[] {
    return this.members;
  }

  get uptimeMs(): number {
    return performance.now() - this.startedAt;
  }
}
