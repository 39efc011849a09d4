/**
 * A tenant: its bare repository, in-memory graph index, registry, token store,
 * operational state and the one serialized write queue through which every graph
 * change is validated, attributed and committed (the transaction each write works on,
 * `WriteDraft`: kernel/write-draft.ts).
 */
import type { KernelMetrics } from './metrics.js';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Sandbox } from '../sandbox/types.js';
import { FileTokenStore, type TokenStore } from './auth.js';
import { parseStoredNode, type Frontmatter } from './codec.js';
import type { Clock, Logger } from './config.js';
import { writeFileDurable } from './durable-fs.js';
import { BackupPusher } from './backup-push.js';
import { errors } from './errors.js';
import { eventsOfCommit, type DeriveContext } from './events/derive.js';
import { DEFAULT_RETENTION, FileEventLog, type EventRetention } from './events/log.js';
import { commitsSince } from './events/recover.js';
import type { NewEvent } from './events/types.js';
import { runGit } from './git/cli.js';
import { openGitStore } from './git/open.js';
import type { GitStore, StoreFence } from './git/types.js';
import { GraphIndex, makeRecord, type NodeRecord } from './graph-index.js';
import { HookRunner } from './hooks.js';
import { loadNodeFiles, prefetchNodeSnapshot, saveNodeSnapshot, type LoadedFile } from './node-loader.js';
import { Registry, type EdgeTypeDef, type GraphSchemaLayer, type NodeTypeDef, type SchemaPack } from './registry.js';
import { FileStateStore, type StateStore } from './state-store.js';
import { WriteDraft, type WriteActor, type WriteMeta } from './write-draft.js';

export interface TenantLimits {
  claim_ttl_ms: number;
  claim_ttl_max_ms: number;
  grace_window_ms: number;
  hook_timeout_ms: number;
  hook_memory_mb: number;
}

export interface TenantConfig {
  org: string;
  plugins: string[];
  limits: TenantLimits;
  created: string;
  /**
   * Per-tenant behaviour switches declared by plugins (`PluginDef.settings`, e.g. `leases:
   * strict`); an absent key means the plugin's default. Set with `workgraph tenant settings`.
   */
  settings?: Record<string, string>;
}

export const DEFAULT_LIMITS: TenantLimits = {
  claim_ttl_ms: 30 * 60 * 1000,
  claim_ttl_max_ms: 8 * 60 * 60 * 1000,
  grace_window_ms: 2 * 24 * 60 * 60 * 1000,
  hook_timeout_ms: 50,
  hook_memory_mb: 16,
};

export interface TenantDeps {
  sandbox: Sandbox;
  pack: SchemaPack;
  nativeTypes: NodeTypeDef[];
  nativeEdges: EdgeTypeDef[];
  clock: Clock;
  log: Logger;
  fsync: boolean;
  /** the kernel's metrics (absent in CLI tools that open tenants without a server) */
  metrics?: KernelMetrics;
  /** the off-site copy: a git remote each tenant is pushed to after each checkpoint (SVC_BACKUP_REMOTE) */
  backupRemote?: string | null;
  /**
   * The tenant's operational stores, if not the files under its directory (auth/, state/):
   * cluster mode passes `pgOperational(db, fenceOf)` (kernel/cluster/pg-state.ts). Awaited
   * by `Tenant.open` before anything reads them.
   */
  operational?: (org: string, dir: string) => Promise<{ state: StateStore; tokens: TokenStore }>;
  /** how much of the event log is kept (SVC_EVENTS_MAX, SVC_EVENTS_RETENTION_DAYS) */
  eventRetention?: EventRetention;
}

/** commits between index snapshots at least (more on a larger graph: see `noteCommit`); tests lower it to check the policy without 2,000 commits */
export const snapshotPolicy = { minCommits: 2000 };

/** A schema node's frontmatter as a registry layer (only `active` ones are merged). */
export function schemaLayerOf(record: NodeRecord): GraphSchemaLayer {
  const fm = record.frontmatter;
  const appliesTo = Array.isArray(fm.applies_to) ? fm.applies_to.map(String) : typeof fm.applies_to === 'string' ? [fm.applies_to] : [];
  const hooks: Record<string, string> = {};
  if (fm.hooks && typeof fm.hooks === 'object' && !Array.isArray(fm.hooks)) {
    for (const [name, src] of Object.entries(fm.hooks as Record<string, unknown>)) if (typeof src === 'string') hooks[name] = src;
  }
  const layer: GraphSchemaLayer = { id: record.id, revision: record.revision, applies_to: appliesTo, hooks };
  if (Array.isArray(fm.statuses)) layer.statuses = fm.statuses.map(String);
  if (Array.isArray(fm.edge_types)) {
    layer.edge_types = fm.edge_types.filter(
      (e): e is EdgeTypeDef => !!e && typeof e === 'object' && typeof (e as EdgeTypeDef).type === 'string',
    );
  }
  return layer;
}

export interface OwnedTenant {
  config: TenantConfig;
  fence: StoreFence;
  ackedHead: string | null;
}

/**
 * Cluster mode: the repository's head is brought to the head acknowledged under the previous
 * fence. Commits past it that the journal replay just brought back were journaled by a former
 * owner but never acknowledged (their writers were answered 503 `not_owner`; only
 * acknowledged commits are ever written out): they are dropped, left unreachable. A head past
 * it with nothing replayed holds commits made outside the server (an operator's `git commit`
 * while the cluster was down) and is kept. A head behind it (moved back by a former owner
 * paused between its fence check and its rename), or off it, is moved to it. Returns true when
 * the ref was moved: the store is then closed and must be reopened. An acknowledged head
 * missing from the repository would lose acknowledged writes: the tenant is not served.
 */
async function ensureAckedHead(store: GitStore, gitdir: string, acked: string, log: Logger): Promise<boolean> {
  const head = store.head();
  if (head === acked) return false;
  const isAncestor = async (a: string, b: string) => {
    try {
      await runGit(gitdir, ['merge-base', '--is-ancestor', a, b]);
      return true;
    } catch {
      return false;
    }
  };
  const ahead = head !== null && (await isAncestor(acked, head));
  if (ahead && store.replayedCommits === 0) return false;
  let present = true;
  try {
    await runGit(gitdir, ['cat-file', '-e', `${acked}^{commit}`]);
  } catch {
    present = false;
  }
  if (!present)
    throw new Error(
      `acknowledged head ${acked} is not in ${gitdir} (head ${head}): refusing to serve a history that lost acknowledged commits`,
    );
  if (head && !ahead && !(await isAncestor(head, acked)))
    log.warn('cluster: the ref pointed off the acknowledged history; moved back', { gitdir, ref: head, acked });
  await store.close();
  await writeFileDurable(join(gitdir, 'refs', 'heads', 'main'), `${acked}\n`);
  return true;
}

export class Tenant {
  readonly index = new GraphIndex();
  registry!: Registry;
  readonly tokens: TokenStore;
  readonly state: StateStore;
  readonly hooks: HookRunner;
  store!: GitStore;
  /**
   * The tenant's event log (kernel/events/types.ts `EventLog`; docs/events.md): graph
   * events derived from every commit, operational events emitted by the operations.
   */
  events!: FileEventLog;
  /** the off-site copy, when SVC_BACKUP_REMOTE is set */
  backup: BackupPusher | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private commitsSinceSnapshot = 0;
  private closed = false;
  private readonly closing: Array<() => Promise<void>> = [];

  /**
   * Runs `fn` when the tenant closes in this process (a hand-off, a lost lease, a stop), after
   * its writes drained and before its stores close: what a plugin still holds for the tenant
   * (webhook cursors written behind deliveries) goes out under this process's fence.
   */
  onClose(fn: () => Promise<void>): void {
    this.closing.push(fn);
  }

  private constructor(
    readonly org: string,
    readonly dir: string,
    public config: TenantConfig,
    private readonly deps: TenantDeps,
    stores?: { state: StateStore; tokens: TokenStore },
  ) {
    this.tokens = stores?.tokens ?? new FileTokenStore(join(dir, 'auth'));
    this.state = stores?.state ?? new FileStateStore(join(dir, 'state'));
    this.hooks = new HookRunner(
      deps.sandbox,
      org,
      () => ({
        timeoutMs: this.config.limits.hook_timeout_ms,
        memoryMb: this.config.limits.hook_memory_mb,
      }),
      deps.pack.hook_inputs,
    );
  }

  static readConfig(dir: string): TenantConfig {
    const raw = JSON.parse(readFileSync(join(dir, 'tenant.json'), 'utf8')) as Partial<TenantConfig>;
    return {
      org: String(raw.org),
      plugins: Array.isArray(raw.plugins) ? raw.plugins.map(String) : [],
      limits: { ...DEFAULT_LIMITS, ...(raw.limits ?? {}) },
      created: String(raw.created ?? ''),
      ...(raw.settings && typeof raw.settings === 'object' && !Array.isArray(raw.settings)
        ? { settings: Object.fromEntries(Object.entries(raw.settings).map(([k, v]) => [k, String(v)])) }
        : {}),
    };
  }

  static async writeConfig(dir: string, config: TenantConfig): Promise<void> {
    await writeFileDurable(join(dir, 'tenant.json'), JSON.stringify(config, null, 2) + '\n');
  }

  /**
   * Open a tenant directory. `owned` is cluster mode's (kernel/cluster/ownership.ts): the
   * settings from the registry, the ownership fence the store acknowledges commits through,
   * and the head last acknowledged under an earlier fence, which the repository must contain.
   */
  static async open(dir: string, deps: TenantDeps, owned?: OwnedTenant): Promise<Tenant> {
    const config = owned?.config ?? Tenant.readConfig(dir);
    const stores = deps.operational ? await deps.operational(config.org, dir) : undefined;
    const tenant = new Tenant(config.org, dir, config, deps, stores);
    try {
      await tenant.load(owned);
    } catch (err) {
      // the operational stores may hold listeners: released when the tenant does not open
      await stores?.tokens.close?.().catch(() => undefined);
      await stores?.state.close?.().catch(() => undefined);
      await tenant.store?.close().catch(() => undefined);
      await tenant.events?.close().catch(() => undefined);
      throw err;
    }
    return tenant;
  }

  private async load(owned: OwnedTenant | undefined): Promise<void> {
    const { dir, deps, config } = this;
    const gitdir = join(dir, 'graph.git');
    if (deps.backupRemote) this.backup = new BackupPusher(gitdir, deps.backupRemote, config.org, deps.log);
    const storeOptions = {
      fsync: deps.fsync,
      observe: deps.metrics?.storeObserver(config.org),
      fence: owned?.fence,
      onCheckpoint: this.backup ? () => this.backup!.checkpointed() : undefined,
    };
    const snapshot = join(dir, 'state', 'index-snapshot.v8');
    // read and inflated in the thread pool while the store opens
    const prefetched = prefetchNodeSnapshot(snapshot);
    this.store = await openGitStore(gitdir, storeOptions);
    if (owned?.ackedHead && (await ensureAckedHead(this.store, gitdir, owned.ackedHead, deps.log)))
      this.store = await openGitStore(gitdir, storeOptions);
    const loaded = await loadNodeFiles(this.store, snapshot, (text) => parseStoredNode(text), { prefetched });
    this.index.load(
      loaded.files.map((f) => {
        const parsed = f.parsed as { frontmatter: Frontmatter; body: string };
        return makeRecord(f.path, f.oid, f.content, parsed.frontmatter, parsed.body);
      }),
      loaded.head,
    );
    this.rebuildRegistry();
    this.index.subscribe((event) => {
      if (event.changes.some((c) => c.before?.type === 'schema' || c.after?.type === 'schema')) this.rebuildRegistry();
    });
    if (loaded.source === 'snapshot') this.snapshotHead = loaded.head;
    if (loaded.head && loaded.source !== 'snapshot') await this.saveSnapshot();
    await this.openEvents(owned !== undefined);
  }

  /** A proposed decision, or a proposed node of a self-approval type, waits for approval (as the queue sees it). */
  private readonly deriveContext: DeriveContext = {
    awaitsApproval: (type) => type === 'dec' || Boolean(this.registry.nodeTypes.get(type)?.self_approval_ban),
  };

  /**
   * Opens the event log, first appending the events of commits it has not covered (a crash
   * after a commit was acknowledged and before its events were written), then follows every
   * commit. Runs before the tenant serves, so no commit falls between the two.
   */
  private async openEvents(cluster: boolean): Promise<void> {
    const { deps } = this;
    const events = FileEventLog.open(
      {
        dir: join(this.dir, 'events'),
        org: this.org,
        fsync: deps.fsync,
        clock: deps.clock,
        log: deps.log,
        retention: deps.eventRetention ?? DEFAULT_RETENTION,
        freshInode: cluster,
      },
      this.index.head,
    );
    this.events = events;
    const head = this.index.head;
    if (head && events.covered !== head) {
      try {
        const missed = await commitsSince(this.store, events.covered, head);
        for (const c of missed) events.appendCommit(c.commit, eventsOfCommit(c, this.deriveContext));
        if (missed.length > 0) deps.log.info('events recovered from history', { org: this.org, commits: missed.length });
      } catch (err) {
        // the covered commit is gone (cluster mode dropped unacknowledged commits): go on from here
        deps.log.warn('event recovery failed; the log continues from the head', { org: this.org, error: String(err) });
      }
      if (events.covered !== head) events.appendCommit(head, []);
    }
    if (events.restoredFrom) {
      await events.emit({
        type: 'graph.restored',
        actor: { person: null, agent: null, name: 'operator', via: 'restore' },
        nodes: [...this.index.nodes.keys()].slice(0, 100),
        project: null,
        ...(head ? { commit: head } : {}),
        payload: {
          op: 'restore',
          total: this.index.size,
          head,
          backup_head: events.restoredFrom.head || null,
          truncated: this.index.size > 100,
        },
      });
      events.restoreAnnounced();
    }
    this.index.subscribe((c) => {
      const append = (derived: NewEvent[]) => {
        try {
          events.appendCommit(c.commit, derived);
        } catch (err) {
          // never throws into the commit path: the next open recovers what was not written
          deps.log.error('events of a commit not written', { org: this.org, commit: c.commit, error: String(err) });
        }
      };
      let derived: NewEvent[];
      try {
        const actor = { person: c.actor.person, agent: c.actor.agent ?? null, name: c.actor.name, via: c.via };
        // derived now, from the index as this commit left it
        derived = eventsOfCommit({ commit: c.commit, changes: c.changes, actor, op: c.op, date: c.date }, this.deriveContext);
      } catch (err) {
        deps.log.error('events of a commit not derived', { org: this.org, commit: c.commit, error: String(err) });
        return;
      }
      // durability before visibility: a commit's events reach the log (and so streams, waits and
      // webhooks) once the commit is durable, in commit order
      const barrier = this.undurable;
      if (!barrier && this.appendsPending === 0) return append(derived);
      this.appendsPending++;
      this.eventAppends = this.eventAppends
        .then(() => barrier ?? undefined)
        .then(() => append(derived))
        .finally(() => {
          this.appendsPending--;
        });
    });
  }

  rebuildRegistry(): void {
    const layers = [...this.index.idsOfType('schema')]
      .map((id) => this.index.get(id)!)
      .filter((r) => r.status === 'active')
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map(schemaLayerOf);
    this.registry = new Registry(this.deps.pack, this.deps.nativeTypes, this.deps.nativeEdges, layers);
  }

  enabled(plugin: string): boolean {
    return plugin === 'core' || this.config.plugins.includes(plugin);
  }

  get head(): string | null {
    return this.index.head;
  }

  /**
   * Runs `fn` alone in the tenant's write queue; pending draft changes commit when it returns.
   * Resolves once every commit it made is durable. Group commit: the queue moves on to the
   * next write as soon as this one's commits are written to the journal, and their fdatasync
   * is awaited outside the queue, so writes queued meanwhile share it.
   */
  write<T>(actor: WriteActor, meta: WriteMeta, fn: (draft: WriteDraft) => Promise<T>): Promise<T> {
    let durable: Promise<void>[] = [];
    let job!: Promise<T>;
    const queued = () => {
      job = this.queue.then(async () => {
        if (this.closed) throw errors.unavailable('closing', 'the tenant is shutting down');
        const draft = new WriteDraft(this, actor, meta);
        durable = draft.durable;
        const result = await fn(draft);
        await draft.commit({ deferDurability: true });
        return result;
      });
      // acknowledged only once durable, whether `fn` succeeded or threw after committing
      // and once the commits' events are in the log (a client that heard the answer finds them)
      return job.then(
        async (result) => {
          await Promise.all(durable);
          await this.eventsAppended();
          return result;
        },
        async (err: unknown) => {
          await Promise.all(durable);
          await this.eventsAppended();
          throw err;
        },
      );
    };
    const tracked = this.deps.metrics ? this.deps.metrics.trackWrite(this.org, queued) : queued();
    this.queue = job.catch(() => undefined);
    return tracked;
  }

  /**
   * The newest commit not yet durable (its journal fdatasync; in cluster mode also the fence's
   * acknowledgement), null once every commit is. The index shows a commit as soon as its journal
   * record is written (the next write in the queue builds on it); an answer must not reveal it
   * before it is durable, so reads wait here (kernel/operation.ts `invoke`, MCP resources): at
   * most one fdatasync, and only while a write is in flight.
   */
  private undurable: Promise<void> | null = null;
  /** commit-derived events waiting for their commit's durability, appended in commit order */
  private eventAppends: Promise<void> = Promise.resolve();
  private appendsPending = 0;

  /** A commit was journaled (kernel/write-draft.ts): reads wait for `durable` until it settles. */
  noteUndurable(durable: Promise<void>): void {
    const settled: Promise<void> = durable
      .catch(() => undefined)
      .then(() => {
        if (this.undurable === settled) this.undurable = null;
      });
    this.undurable = settled;
  }

  /** reads that waited at the barrier (observability; the read-barrier test watches it) */
  readWaits = 0;

  /** Resolves once every commit made so far is durable; null (no wait) when they all are. */
  readBarrier(): Promise<void> | null {
    if (this.undurable) this.readWaits++;
    return this.undurable;
  }

  /** Resolves once the events of every durable commit so far are in the log. */
  eventsAppended(): Promise<void> | null {
    return this.appendsPending > 0 ? this.eventAppends : null;
  }

  /** Waits for queued writes to finish. */
  async drain(): Promise<void> {
    await this.queue;
  }

  private snapshotting = false;
  /** the head the snapshot on disk holds (null: unknown or none) */
  private snapshotHead: string | null = null;
  private snapshotsWritten = 0;

  /** The index snapshot's bookkeeping: a write under way, commits since the last one, snapshots this process wrote (tests check the policy by it). */
  get snapshotStats(): { writing: boolean; commitsSince: number; written: number } {
    return { writing: this.snapshotting, commitsSince: this.commitsSinceSnapshot, written: this.snapshotsWritten };
  }

  /** Writes the index snapshot, unless the one on disk already holds the index's head (a stop without writes). */
  async saveSnapshot(): Promise<void> {
    if (!this.index.head || this.index.head === this.snapshotHead) return;
    this.snapshotting = true;
    try {
      await this.writeSnapshot();
    } finally {
      this.snapshotting = false;
    }
  }

  private async writeSnapshot(): Promise<void> {
    if (!this.index.head) return;
    const files: LoadedFile[] = [];
    for (const r of this.index.nodes.values()) {
      files.push({ path: r.path, oid: r.revision, content: r.markdown, parsed: { frontmatter: r.frontmatter, body: r.body } });
    }
    const head = this.index.head;
    await saveNodeSnapshot(join(this.dir, 'state', 'index-snapshot.v8'), head, files);
    this.snapshotHead = head;
    this.commitsSinceSnapshot = 0;
    this.snapshotsWritten++;
  }

  /**
   * Called by the draft after each commit: keeps a recent snapshot without writing one per
   * commit. A snapshot serializes every node (O(graph)), so it is written once per as many
   * commits as the graph has nodes (at least 2,000): its cost per commit stays flat as the
   * graph grows. Every 2,000 commits regardless made a 100,000-node seed (one commit per node)
   * serialize ~100 MB every 2,000 nodes: most of its slowdown and its memory peaks.
   */
  noteCommit(): void {
    this.commitsSinceSnapshot++;
    if (this.commitsSinceSnapshot >= Math.max(snapshotPolicy.minCommits, this.index.size) && !this.snapshotting) {
      this.saveSnapshot().catch((err) => this.deps.log.warn('index snapshot failed', { org: this.org, error: String(err) }));
    }
  }

  get clock(): Clock {
    return this.deps.clock;
  }

  get log(): Logger {
    return this.deps.log;
  }

  async close(): Promise<void> {
    await this.drain();
    this.closed = true;
    for (const fn of this.closing.splice(0))
      await fn().catch((err: unknown) => this.deps.log.warn('a close hook failed', { org: this.org, error: String(err) }));
    await this.events?.close();
    await this.tokens
      .flush()
      .catch((err: unknown) => this.deps.log.warn('token last_used flush failed', { org: this.org, error: String(err) }));
    await this.tokens.close?.();
    await this.state.close?.();
    await this.saveSnapshot().catch(() => undefined);
    await this.store.close();
  }

  static exists(dir: string): boolean {
    return existsSync(join(dir, 'tenant.json'));
  }
}
