/**
 * The tenant manager: opens every tenant under SVC_DATA_DIR/tenants, creates new ones
 * (first start, `workgraph tenant add`), notices tenants and plugin changes made by the
 * operator CLI while the server runs, and resolves a bearer token to its tenant and actor.
 */
import { emitEvent } from './events/emit.js';
import type { EventActor, NewEvent } from './events/types.js';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Sandbox } from '../sandbox/types.js';
import type { Actor } from './actor.js';
import { generateToken, hashTokenBytes, isLive, isOpaqueToken, isWellFormedToken, newTokenRecord, type TokenRecord } from './auth.js';
import type { Clock, Logger } from './config.js';
import { errors } from './errors.js';
import { bearer } from './http-common.js';
import type { PluginDef } from './plugin.js';
import type { KernelMetrics } from './metrics.js';
import type { EdgeTypeDef, NodeTypeDef, SchemaPack } from './registry.js';
import { DEFAULT_LIMITS, Tenant, type OwnedTenant, type TenantConfig, type TenantDeps } from './tenant.js';
import type { WriteActor } from './write-draft.js';
import type { StoreFence } from './git/types.js';
import { IdentityAuthority } from './identity-guard.js';

/** The kernel's own identity authority: the tenant bootstrap writes the first admin with it. */
const BOOTSTRAP_AUTHORITY = IdentityAuthority.issue('bootstrap');

export const ORG_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;
export const ROOT_ID = 'proj-root';

/** Opaque deterministic person id from an email (never from the display name). */
export function personIdForEmail(email: string): string {
  return `person-${createHash('sha256').update(email.trim().toLowerCase()).digest('hex').slice(0, 16)}`;
}

export interface TenantManagerOptions {
  dataDir: string;
  sandbox: Sandbox;
  pack: SchemaPack;
  plugins: PluginDef[];
  clock: Clock;
  log: Logger;
  fsync: boolean;
  metrics?: KernelMetrics;
  /** cluster mode: tenants are reserved and registered in PostgreSQL, and opened only when owned */
  creation?: TenantCreationHooks;
  /** the off-site copy's git remote (SVC_BACKUP_REMOTE) */
  backupRemote?: string | null;
  /** cluster mode: the PostgreSQL operational store (passed on to every tenant) */
  operational?: TenantDeps['operational'];
  /** how much of each tenant's event log is kept */
  eventRetention?: TenantDeps['eventRetention'];
}

export interface NewTenant {
  org: string;
  adminName: string;
  adminEmail: string;
  plugins: string[];
  /** a given admin PAT (SVC_BOOTSTRAP_TOKEN) instead of a generated one */
  adminToken?: string | null;
}

/** Cluster mode's part in creating a tenant (kernel/cluster/ownership.ts). */
export interface TenantCreationHooks {
  /** own the new org before anything is written (its operational writes are fenced); fails when the org is taken */
  reserve(org: string): Promise<StoreFence>;
  /** add it to the registry once it is whole (the cluster's tenant.json) */
  register(config: TenantConfig): Promise<void>;
  /** creation failed or finished: let the org go (a finished tenant is claimed by its preferred member) */
  release(org: string): Promise<void>;
  /** save a changed tenant config in the registry (an admin's plugin change); the other processes follow it */
  saveConfig?(config: TenantConfig): Promise<void>;
  /** the config the registry holds now (an operator's change this process has not followed yet) */
  loadConfig?(org: string): Promise<TenantConfig | null>;
}

export class TenantManager {
  private readonly tenants = new Map<string, Tenant>();
  private readonly tokenOwners = new Map<string, string>();
  private readonly indexedTokenVersions = new Map<string, number>();
  private readonly configMtimes = new Map<string, number>();
  private readonly opening = new Map<string, Promise<Tenant>>();
  /** plugin changes through the API, one at a time per tenant (a read-modify-write of its plugin list) */
  private readonly configChanges = new Map<string, Promise<unknown>>();
  private readonly deps: TenantDeps;
  /** called when a tenant opens or its plugin set changes */
  onTenantChange: (tenant: Tenant, newlyEnabled: string[]) => Promise<void> = async () => undefined;

  constructor(readonly options: TenantManagerOptions) {
    const nativeTypes: NodeTypeDef[] = [];
    const nativeEdges: EdgeTypeDef[] = [];
    for (const p of options.plugins) {
      nativeTypes.push(...(p.schema?.nodeTypes ?? []));
      nativeEdges.push(...(p.schema?.edgeTypes ?? []));
    }
    this.deps = {
      sandbox: options.sandbox,
      pack: options.pack,
      nativeTypes,
      nativeEdges,
      clock: options.clock,
      log: options.log,
      fsync: options.fsync,
      metrics: options.metrics,
      operational: options.operational,
      backupRemote: options.backupRemote,
      eventRetention: options.eventRetention,
    };
    mkdirSync(this.tenantsDir, { recursive: true });
  }

  get tenantsDir(): string {
    return join(this.options.dataDir, 'tenants');
  }

  get allPluginNames(): string[] {
    return this.options.plugins.map((p) => p.name);
  }

  get(org: string): Tenant | undefined {
    return this.tenants.get(org);
  }

  list(): Tenant[] {
    return [...this.tenants.values()];
  }

  /** Cluster mode: open a tenant this process was given ownership of. */
  async openOwned(org: string, owned: OwnedTenant): Promise<Tenant> {
    await this.closeOne(org);
    // a close begun elsewhere (a lost lease) ends before the tenant opens again
    await this.closing.get(org)?.catch(() => undefined);
    const tenant = await Tenant.open(join(this.tenantsDir, org), this.deps, owned);
    this.tenants.set(org, tenant);
    this.indexTokens(tenant);
    await this.onTenantChange(tenant, tenant.config.plugins);
    return tenant;
  }

  /** Cluster mode: stop serving a tenant here (writes drain, acknowledged commits are written out). */
  async closeOne(org: string): Promise<void> {
    const tenant = this.tenants.get(org);
    if (!tenant) return;
    this.tenants.delete(org);
    for (const [hash, owner] of this.tokenOwners) if (owner === org) this.tokenOwners.delete(hash);
    this.indexedTokenVersions.delete(org);
    const closed = tenant.close().finally(() => {
      if (this.closing.get(org) === closed) this.closing.delete(org);
    });
    this.closing.set(org, closed);
    await closed;
  }
  /** tenants closing in cluster mode (closeOne), by org */
  private readonly closing = new Map<string, Promise<void>>();

  /** Cluster mode: settings changed in the registry. */
  async applyConfig(org: string, config: TenantConfig): Promise<void> {
    const tenant = this.tenants.get(org);
    if (!tenant) return;
    const previous = tenant.config;
    const before = new Set(tenant.config.plugins);
    tenant.config = { ...config, limits: { ...DEFAULT_LIMITS, ...(config.limits ?? {}) } };
    await announceConfigChange(tenant, previous, tenant.config);
    const added = tenant.config.plugins.filter((p) => !before.has(p));
    await this.onTenantChange(tenant, added);
    this.options.log.info('tenant plugins changed', { org, plugins: tenant.config.plugins });
  }

  /**
   * An admin's plugin change through the API (plugins/core/tenant-plugins.ts): `change` maps the
   * current plugin list to the next one (or throws to refuse). Saved where the operator CLI
   * saves it (tenant.json; the cluster registry), then applied here at once, through the same
   * path as a change the poll notices: the events announce it as the admin's, newly enabled
   * plugins open for the tenant. Changes of one tenant run one after another.
   */
  async changePlugins(org: string, change: (plugins: string[]) => string[], actor: EventActor): Promise<TenantConfig> {
    const run = async (): Promise<TenantConfig> => {
      // an operator's CLI change the poll has not seen yet is taken in first, never written over
      if (!this.options.creation) await this.followConfig(org);
      // (cluster mode: the registry row, which the settings poll may not have followed yet)
      const registered = await this.options.creation?.loadConfig?.(org);
      const open = this.tenants.get(org);
      if (registered && open && !samePlugins(registered.plugins, open.config.plugins)) await this.applyConfig(org, registered);
      const tenant = this.tenants.get(org);
      if (!tenant) throw errors.notFound(`tenant ${org}`);
      const previous = tenant.config;
      const plugins = change([...previous.plugins]);
      const next: TenantConfig = { ...previous, plugins };
      if (samePlugins(plugins, previous.plugins)) return previous;
      if (this.options.creation) {
        if (!this.options.creation.saveConfig) throw errors.internal();
        await this.options.creation.saveConfig(next);
      } else {
        await Tenant.writeConfig(tenant.dir, next);
        // the poll must not take our own write for an operator's change and announce it twice
        this.configMtimes.set(org, statSync(join(tenant.dir, 'tenant.json')).mtimeMs);
      }
      tenant.config = next;
      await announceConfigChange(tenant, previous, next, actor);
      await this.onTenantChange(
        tenant,
        plugins.filter((p) => !previous.plugins.includes(p)),
      );
      this.options.log.info('tenant plugins changed', { org, plugins, by: actor.person });
      return next;
    };
    return this.inConfigTurn(org, run);
  }

  /** Runs `fn` in the tenant's turn of configuration changes: an admin's change and the poll's reading of tenant.json never interleave. */
  private inConfigTurn<T>(org: string, fn: () => Promise<T>): Promise<T> {
    const pending = (this.configChanges.get(org) ?? Promise.resolve()).catch(() => undefined).then(fn);
    this.configChanges.set(org, pending);
    return pending;
  }

  /**
   * An operator's change of an open tenant's tenant.json (`workgraph tenant plugins|settings`):
   * taken in and announced once. Runs in the tenant's configuration turn (an admin's own write,
   * between writing the file and noting its time, must not look like an operator's change).
   */
  private async followConfig(org: string): Promise<void> {
    const existing = this.tenants.get(org);
    if (!existing) return;
    const dir = join(this.tenantsDir, org);
    const mtime = statSync(join(dir, 'tenant.json')).mtimeMs;
    if (mtime === this.configMtimes.get(org)) return;
    this.configMtimes.set(org, mtime);
    const previous = existing.config;
    const before = new Set(existing.config.plugins);
    existing.config = Tenant.readConfig(dir);
    await announceConfigChange(existing, previous, existing.config);
    const added = existing.config.plugins.filter((p) => !before.has(p));
    await this.onTenantChange(existing, added);
    this.options.log.info('tenant plugins changed', { org, plugins: existing.config.plugins });
  }

  /** Re-read an open tenant's tokens now (cluster mode: a token minted by another process). */
  async reloadTokens(org: string): Promise<void> {
    const tenant = this.tenants.get(org);
    if (!tenant) return;
    await tenant.tokens.refresh?.();
    this.refreshTokens(tenant);
  }

  /** The org a token hash belongs to, among the tenants open here. */
  orgOfTokenHash(hash: string): string | undefined {
    return this.tokenOwners.get(hash);
  }

  /** Opens every tenant on disk; later calls pick up new tenants and plugin changes. */
  async scan(): Promise<void> {
    if (this.options.creation) {
      // cluster mode: the cluster opens the tenants it owns; only token changes are followed here
      for (const t of this.tenants.values()) this.refreshTokens(t);
      return;
    }
    let names: string[];
    try {
      names = readdirSync(this.tenantsDir);
    } catch {
      return;
    }
    for (const org of names) {
      const dir = join(this.tenantsDir, org);
      if (!ORG_PATTERN.test(org) || !Tenant.exists(dir)) continue;
      const existing = this.tenants.get(org);
      if (!existing) {
        await this.open(org);
        continue;
      }
      if (statSync(join(dir, 'tenant.json')).mtimeMs !== this.configMtimes.get(org))
        await this.inConfigTurn(org, () => this.followConfig(org));
      this.refreshTokens(existing);
    }
  }

  private open(org: string): Promise<Tenant> {
    let pending = this.opening.get(org);
    if (!pending) {
      pending = (async () => {
        const dir = join(this.tenantsDir, org);
        const tenant = await Tenant.open(dir, this.deps);
        this.configMtimes.set(org, statSync(join(dir, 'tenant.json')).mtimeMs);
        this.tenants.set(org, tenant);
        this.indexTokens(tenant);
        await this.onTenantChange(tenant, tenant.config.plugins);
        this.options.log.info('tenant open', { org, nodes: tenant.index.size });
        return tenant;
      })();
      this.opening.set(org, pending);
      pending.finally(() => this.opening.delete(org)).catch(() => undefined);
    }
    return pending;
  }

  indexTokens(tenant: Tenant): void {
    for (const [hash, org] of this.tokenOwners) if (org === tenant.org) this.tokenOwners.delete(hash);
    for (const hash of tenant.tokens.hashes()) this.tokenOwners.set(hash, tenant.org);
    this.indexedTokenVersions.set(tenant.org, tenant.tokens.version);
  }

  /** Re-reads a tenant's token file if another process changed it, and re-indexes after any change. */
  private refreshTokens(tenant: Tenant): void {
    tenant.tokens.reload();
    if (this.indexedTokenVersions.get(tenant.org) !== tenant.tokens.version) this.indexTokens(tenant);
  }

  /**
   * Token -> (tenant, actor). Every failure is the same 401. A miss re-reads the token
   * files (one stat each) so a token minted by the CLI a moment ago works at once; only a
   * checksummed token (the form this project mints) is worth that re-read. An opaque
   * `svc_pat_` token without our checksum (an operator's SVC_BOOTSTRAP_TOKEN) is looked up
   * among the stored hashes, never refused by shape alone.
   */
  authenticate(token: string | undefined): { tenant: Tenant; actor: Actor } {
    const hashed = this.hashed(token);
    if (!hashed) throw errors.unauthorized();
    return this.authenticateHashed(hashed);
  }

  /** A presented token's hash for `authenticateHashed`, or null when it is not token-shaped (401). */
  hashed(token: string | undefined): HashedToken | null {
    if (!token || !isOpaqueToken(token)) return null;
    return { ...hashTokenBytes(token), checksummed: isWellFormedToken(token) };
  }

  /**
   * `hashed` of a request's Authorization header, once per connection: a keep-alive client sends
   * the same header with every request, and a SHA-256 a request was about 5% of a read (the
   * cluster's front door, the direct read lane and the koa routes each hashed it). Only the same
   * header string on the same connection matches (a proxy that mixes clients on one connection
   * sends another header and is hashed again); liveness, revocation and the constant-time
   * comparison still run on every request (`authenticateHashed`).
   */
  hashedHeader(connection: object, header: string | undefined): HashedToken | null {
    if (header === undefined) return null;
    const last = connectionTokens.get(connection);
    if (last && last.header === header) return last.hashed;
    const hashed = this.hashed(bearer(header));
    connectionTokens.set(connection, { header, hashed });
    return hashed;
  }

  /**
   * `authenticate` for a token hashed before (`hashed`): the direct read lane hashes the bearer
   * header once per connection (kernel/direct-reads.ts). Liveness, revocation and the
   * constant-time comparison are checked on every call.
   */
  authenticateHashed({ hash, digest, checksummed }: HashedToken): { tenant: Tenant; actor: Actor } {
    let org = this.tokenOwners.get(hash);
    if (!org && checksummed) {
      for (const t of this.tenants.values()) this.refreshTokens(t);
      org = this.tokenOwners.get(hash);
    }
    const tenant = org ? this.tenants.get(org) : undefined;
    const record = tenant?.tokens.find(hash, digest);
    const now = this.options.clock.now();
    if (!tenant || !record || !isLive(record, now)) throw errors.unauthorized();
    tenant.tokens.touch(hash, now);
    return { tenant, actor: actorFor(tenant, record) };
  }

  /**
   * Creates a tenant: its repository with `proj-root`, an admin person stewarding the root,
   * and the admin's PAT (returned once). tenant.json is written last so a running server
   * never opens a half-made tenant.
   */
  async create(spec: NewTenant): Promise<{ tenant: Tenant; person: string; token: string }> {
    if (!ORG_PATTERN.test(spec.org)) throw new Error(`invalid org slug '${spec.org}' (kebab-case, at most 63 characters)`);
    const dir = join(this.tenantsDir, spec.org);
    if (Tenant.exists(dir)) throw new Error(`tenant '${spec.org}' already exists`);
    const unknown = spec.plugins.filter((p) => !this.allPluginNames.includes(p));
    if (unknown.length > 0) throw new Error(`unknown plugin(s): ${unknown.join(', ')}; known: ${this.allPluginNames.join(', ')}`);
    if (spec.adminToken && !(spec.adminToken.startsWith('svc_pat_') && isOpaqueToken(spec.adminToken))) {
      throw new Error(
        'SVC_BOOTSTRAP_TOKEN must be a svc_pat_<opaque> token: svc_pat_ and 16-256 characters of [A-Za-z0-9_-] (`workgraph token generate` makes one)',
      );
    }
    const hooks = this.options.creation;
    const fence = hooks ? await hooks.reserve(spec.org) : undefined;
    try {
      const created = await this.build(spec, dir, fence);
      await hooks?.register(created.config);
      return created;
    } finally {
      await hooks?.release(spec.org);
    }
  }

  private async build(
    spec: NewTenant,
    dir: string,
    fence: StoreFence | undefined,
  ): Promise<{ tenant: Tenant; person: string; token: string; config: TenantConfig }> {
    // Built in a staging directory the scanner ignores, then renamed into place whole,
    // so a running server never opens a half-made tenant.
    const staging = join(this.tenantsDir, `.staging-${spec.org}-${process.pid}`);
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true, mode: 0o700 });
    const now = new Date(this.options.clock.now()).toISOString();
    const config: TenantConfig = {
      org: spec.org,
      plugins: [...new Set(['core', ...spec.plugins])],
      limits: { ...DEFAULT_LIMITS },
      created: now,
    };
    await Tenant.writeConfig(staging, config);
    const tenant = await Tenant.open(staging, this.deps, fence ? { config, fence, ackedHead: null } : undefined);
    const personId = personIdForEmail(spec.adminEmail);
    const actor: WriteActor = { personId, name: spec.adminName, email: spec.adminEmail, agent: null, session: null };
    await tenant.write(actor, { op: 'bootstrap', via: 'rest', internal: true, identity: BOOTSTRAP_AUTHORITY }, async (draft) => {
      draft.put({
        frontmatter: { id: ROOT_ID, type: 'proj', status: 'active', title: 'Root', summary: `Root of the ${spec.org} work graph` },
        body: '',
      });
      draft.put({
        frontmatter: {
          id: personId,
          type: 'person',
          status: 'active',
          title: spec.adminName,
          summary: `${spec.adminName} (administrator)`,
          name: spec.adminName,
          email: spec.adminEmail,
          roles: ['admin'],
          edges: [{ type: 'stewards', to: ROOT_ID }],
        },
        body: '',
      });
    });
    const token = spec.adminToken ?? generateToken('pat');
    await tenant.tokens.mutate((records) => {
      const rec = newTokenRecord(token, {
        kind: 'pat',
        person: personId,
        created: now,
        label: 'bootstrap admin token',
        minted_by: 'bootstrap',
      });
      rec.expires = null;
      records.set(rec.hash, rec);
    });
    await tenant.close();
    renameSync(staging, dir);
    return { tenant, person: personId, token, config };
  }

  async closeAll(): Promise<void> {
    for (const t of this.tenants.values()) await t.close();
    this.tenants.clear();
  }
}

/**
 * Admin events of a tenant's configuration changed by the operator (`workgraph tenant
 * plugins|settings`, or the cluster registry): plugin.enabled / plugin.disabled per plugin and
 * one settings.changed naming each changed setting or limit with its old and new value.
 */
/** The operator CLI's changes (tenant.json edited on disk, the cluster registry) are the operator's. */
const OPERATOR: EventActor = { person: null, agent: null, name: 'operator', via: 'cli' };

async function announceConfigChange(
  tenant: Tenant,
  before: TenantConfig,
  after: TenantConfig,
  actor: EventActor = OPERATOR,
): Promise<void> {
  const was = new Set(before.plugins);
  const now = new Set(after.plugins);
  const events: NewEvent[] = [];
  const admin = { actor, nodes: [], project: null, audience: 'admins' as const };
  for (const p of after.plugins) if (!was.has(p)) events.push({ ...admin, type: 'plugin.enabled', payload: { plugin: p } });
  for (const p of before.plugins) if (!now.has(p)) events.push({ ...admin, type: 'plugin.disabled', payload: { plugin: p } });
  const changed: Record<string, { from: unknown; to: unknown }> = {};
  const diff = (prefix: string, a: Record<string, unknown>, b: Record<string, unknown>) => {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)]))
      if (JSON.stringify(a[k]) !== JSON.stringify(b[k])) changed[`${prefix}${k}`] = { from: a[k] ?? null, to: b[k] ?? null };
  };
  diff('', before.settings ?? {}, after.settings ?? {});
  diff('limits.', { ...before.limits }, { ...after.limits });
  if (Object.keys(changed).length > 0) events.push({ ...admin, type: 'settings.changed', payload: { changed } });
  for (const e of events) await emitEvent(tenant, e);
}

/** The last Authorization header each connection sent, hashed (`hashedHeader`; gone with the connection). */
const connectionTokens = new WeakMap<object, { header: string; hashed: HashedToken | null }>();

/** A presented token reduced to what authentication needs: its SHA-256 (hex and bytes) and whether it carries our checksum. */
export interface HashedToken {
  hash: string;
  digest: Buffer;
  checksummed: boolean;
}

/**
 * The actor last made for a token record, with the person node it was made from: a node is
 * replaced, never changed, on a write, so the same node object (and the same record fields) gives
 * the same actor, and a token's requests do not build it again (a node read made one a request).
 */
const actors = new WeakMap<
  TokenRecord,
  { tenant: Tenant; person: unknown; personId: string; agent: string | null; session: string | null; actor: Actor }
>();

export function actorFor(tenant: Tenant, record: TokenRecord): Actor {
  const person = tenant.index.get(record.person);
  const last = actors.get(record);
  if (
    last &&
    last.tenant === tenant &&
    last.person === person &&
    last.personId === record.person &&
    last.agent === record.agent &&
    last.session === record.session
  )
    return last.actor;
  const actor = makeActor(tenant, record, person);
  actors.set(record, { tenant, person, personId: record.person, agent: record.agent, session: record.session, actor });
  return actor;
}

function makeActor(tenant: Tenant, record: TokenRecord, person: ReturnType<Tenant['index']['get']>): Actor {
  const bound = person !== undefined && person.type === 'person';
  const isAdmin = bound && person.edges.some((e) => e.type === 'stewards' && e.to === ROOT_ID);
  return {
    org: tenant.org,
    token: record,
    personId: record.person,
    bound,
    name: bound ? String(person.frontmatter.name ?? person.title) : record.person,
    email: bound ? String(person.frontmatter.email ?? '') : '',
    isAdmin,
    agent: record.agent,
    session: record.session,
  };
}

/** The write attribution of an actor; a token without a person node cannot write. */
export function writeActorOf(actor: Actor): WriteActor {
  if (!actor.bound) throw errors.noPersonForbidden('writes need a token bound to a person node');
  return {
    personId: actor.personId,
    name: actor.name,
    email: actor.email || `${actor.personId}@users.noreply`,
    agent: actor.agent,
    session: actor.session,
    credential: actor.token.kind,
  };
}

function samePlugins(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((p) => b.includes(p));
}
