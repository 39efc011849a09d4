/**
 * A tenant: its bare repository, in-memory graph index, registry, token store,
 * operational state and the one serialized write queue through which every graph
 * change is validated, attributed and committed.
 */
import type { KernelMetrics } from './metrics.js';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Sandbox } from '../sandbox/index.js';
import { FileTokenStore, type TokenStore } from './auth.js';
import { parseStoredNode, serializeNode, type Frontmatter } from './codec.js';
import type { Clock, Logger } from './config.js';
import { writeFileDurable } from './durable-fs.js';
import { BackupPusher } from './backup-push.js';
import { errors } from './errors.js';
import { unknownTypeError } from './error-hints.js';
import { describeAjvError } from './operation.js';
import type { ErrorObject } from 'ajv';
import { openGitStore, nodePath, runGit, type FileChange, type GitStore, type StoreFence } from './git-store.js';
import { GraphIndex, makeRecord, type CommitEvent, type IndexChange, type NodeRecord } from './graph-index.js';
import { HookRunner } from './hooks.js';
import { guardIdentityFacts, isIdentityAuthority, type IdentityAuthority } from './identity-guard.js';
import { loadNodeFiles, saveNodeSnapshot, type LoadedFile } from './node-loader.js';
import { LIMITS, Registry, type EdgeTypeDef, type GraphSchemaLayer, type NodeTypeDef, type SchemaPack } from './registry.js';
import { FileStateStore, type StateStore } from './state-store.js';

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

/** Who a write is attributed to. */
export interface WriteActor {
  personId: string;
  name: string;
  email: string;
  agent: string | null;
  session: string | null;
  /**
   * The kind of credential the write came with (`pat`, `agent-standing`, `agent-session`,
   * `oauth-access`, `connector-jwt`, ...): recorded in the commit's `Svc-Credential` trailer so
   * history can tell how a change was made (`workgraph audit identity`).
   */
  credential?: string;
}

export type AuthoredVia = 'rest' | 'mcp' | 'capture' | 'dispatch' | 'distill' | 'gardener' | 'import';

export interface WriteMeta {
  op: string;
  via: AuthoredVia;
  /** server-internal bookkeeping (lease edges, gardener): history marks it `internal` */
  internal?: boolean;
  /**
   * When the change happened (epoch ms), if not now: an admin import replays another tracker's
   * history with its own timestamps (commit author/committer dates, `created`, `updated`).
   */
  at?: number;
  /**
   * The capability to change identity facts (admin rights, agent ownership, people): only the
   * identity operations and the tenant bootstrap hold one (kernel/identity-guard.ts). Without
   * it a write touching an identity fact is 403 `forbidden` and nothing is written.
   */
  identity?: IdentityAuthority;
}

export interface DraftNode {
  frontmatter: Frontmatter;
  body: string;
}

export interface CommittedNode {
  id: string;
  status: 'created' | 'updated' | 'deleted' | 'unchanged';
  revision: string | null;
  record: NodeRecord | null;
}

export interface PutOptions {
  /** stamp author/authored_via from the actor (default true) */
  stamp?: boolean;
  /** skip the transition gate (server-internal moves such as bootstrap) */
  skipTransition?: boolean;
}

interface PendingChange {
  id: string;
  node: DraftNode | null;
  options: PutOptions;
}

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
}

const STAMP_KEYS = ['author', 'authored_via', 'authored_by_agent', 'session'] as const;
/**
 * Self-approval types (schema-, wf-): the people who proposed the current content since it was
 * last active, kept by the server (a client value is ignored). None of them may activate it.
 */
export const PROPOSED_BY = 'proposed_by';
/** commits between index snapshots at least (more on a larger graph: see `noteCommit`) */
const SNAPSHOT_MIN_COMMITS = 2000;

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
    layer.edge_types = fm.edge_types.filter((e): e is EdgeTypeDef => !!e && typeof e === 'object' && typeof (e as EdgeTypeDef).type === 'string');
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
  if (!present) throw new Error(`acknowledged head ${acked} is not in ${gitdir} (head ${head}): refusing to serve a history that lost acknowledged commits`);
  if (head && !ahead && !(await isAncestor(head, acked))) log.warn('cluster: the ref pointed off the acknowledged history; moved back', { gitdir, ref: head, acked });
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
  /** the off-site copy, when SVC_BACKUP_REMOTE is set */
  backup: BackupPusher | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private commitsSinceSnapshot = 0;
  private closed = false;

  private constructor(
    readonly org: string,
    readonly dir: string,
    public config: TenantConfig,
    private readonly deps: TenantDeps,
    stores?: { state: StateStore; tokens: TokenStore },
  ) {
    this.tokens = stores?.tokens ?? new FileTokenStore(join(dir, 'auth'));
    this.state = stores?.state ?? new FileStateStore(join(dir, 'state'));
    this.hooks = new HookRunner(deps.sandbox, org, () => ({
      timeoutMs: this.config.limits.hook_timeout_ms,
      memoryMb: this.config.limits.hook_memory_mb,
    }));
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
      throw err;
    }
    return tenant;
  }

  private async load(owned: OwnedTenant | undefined): Promise<void> {
    const { dir, deps, config } = this;
    const gitdir = join(dir, 'graph.git');
    if (deps.backupRemote) this.backup = new BackupPusher(gitdir, deps.backupRemote, config.org, deps.log);
    const storeOptions = { fsync: deps.fsync, observe: deps.metrics?.storeObserver(config.org), fence: owned?.fence, onCheckpoint: this.backup ? () => this.backup!.checkpointed() : undefined };
    this.store = await openGitStore(gitdir, storeOptions);
    if (owned?.ackedHead && (await ensureAckedHead(this.store, gitdir, owned.ackedHead, deps.log))) this.store = await openGitStore(gitdir, storeOptions);
    const snapshot = join(dir, 'state', 'index-snapshot.v8');
    const loaded = await loadNodeFiles(this.store, snapshot, (text) => parseStoredNode(text));
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
    if (loaded.head && loaded.source !== 'snapshot') await this.saveSnapshot();
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
      return job.then(
        async (result) => {
          await Promise.all(durable);
          return result;
        },
        async (err: unknown) => {
          await Promise.all(durable);
          throw err;
        },
      );
    };
    const tracked = this.deps.metrics ? this.deps.metrics.trackWrite(this.org, queued) : queued();
    this.queue = job.catch(() => undefined);
    return tracked;
  }

  /** Waits for queued writes to finish. */
  async drain(): Promise<void> {
    await this.queue;
  }

  private snapshotting = false;

  async saveSnapshot(): Promise<void> {
    if (!this.index.head) return;
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
    await saveNodeSnapshot(join(this.dir, 'state', 'index-snapshot.v8'), this.index.head, files);
    this.commitsSinceSnapshot = 0;
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
    if (this.commitsSinceSnapshot >= Math.max(SNAPSHOT_MIN_COMMITS, this.index.size) && !this.snapshotting) {
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
    await this.tokens.flush().catch((err: unknown) => this.deps.log.warn('token last_used flush failed', { org: this.org, error: String(err) }));
    await this.tokens.close?.();
    await this.state.close?.();
    await this.saveSnapshot().catch(() => undefined);
    await this.store.close();
  }

  static exists(dir: string): boolean {
    return existsSync(join(dir, 'tenant.json'));
  }
}

/** Whether a write changes a node beyond its status, attribution stamps and timestamps. */
function contentChanged(before: NodeRecord, fm: Frontmatter, body: string): boolean {
  const strip = (f: Frontmatter) => {
    const copy: Frontmatter = { ...f };
    for (const k of [...STAMP_KEYS, 'status', 'created', 'updated', 'revision', PROPOSED_BY]) delete copy[k];
    return copy;
  };
  return serializeNode(strip(before.frontmatter), before.body) !== serializeNode(strip(fm), body);
}

/**
 * The view a write operation works on: reads see the committed index plus this
 * draft's pending changes; `commit()` validates, stamps and commits them as one git commit.
 */
export class WriteDraft {
  private pending = new Map<string, PendingChange>();
  readonly warnings: string[] = [];
  /** fdatasyncs of commits made with `deferDurability`; `Tenant.write` awaits them before it resolves */
  readonly durable: Promise<void>[] = [];

  constructor(
    readonly tenant: Tenant,
    readonly actor: WriteActor,
    readonly meta: WriteMeta,
  ) {}

  get(id: string): (DraftNode & { revision: string | null }) | null {
    const p = this.pending.get(id);
    if (p) return p.node ? { ...structuredClone(p.node), revision: null } : null;
    const r = this.tenant.index.get(id);
    return r ? { frontmatter: structuredClone(r.frontmatter), body: r.body, revision: r.revision } : null;
  }

  put(node: DraftNode, options: PutOptions = {}): void {
    const id = String(node.frontmatter.id);
    this.pending.set(id, { id, node: { frontmatter: structuredClone(node.frontmatter), body: node.body }, options });
  }

  delete(id: string): void {
    this.pending.set(id, { id, node: null, options: {} });
  }

  get dirty(): boolean {
    return this.pending.size > 0;
  }

  /**
   * The self-approval ban, in the kernel so no path around the status route escapes it (a full
   * put with `status: active`, a batch update, an import, a hook or workflow write): whoever
   * proposed the current content (created it, changed it or moved it back towards activation
   * while it was not active) cannot activate it; an agent or session token acts as its owner
   * (`personId` is the owner), so it cannot either. Changing the content and activating in one
   * write is refused too: the new content would be approved by its own author. Keeps the
   * server-owned `proposed_by` list.
   */
  private selfApproval(id: string, before: NodeRecord | null, fm: Frontmatter, body: string, status: string): void {
    const actor = this.actor.personId;
    const previous = before && Array.isArray(before.frontmatter[PROPOSED_BY]) ? (before.frontmatter[PROPOSED_BY] as unknown[]).map(String) : [];
    const changed = before ? contentChanged(before, fm, body) : true;
    let proposers: string[];
    if (!before) proposers = [actor];
    else if (status === 'active' && before.status !== 'active') {
      const lastAuthor = typeof before.frontmatter.author === 'string' ? before.frontmatter.author : null;
      if (previous.includes(actor) || lastAuthor === actor) {
        throw errors.transitionDenied(`self-approval ban: ${actor} proposed ${id}; another identity (not one of their agents or sessions) must activate it`, {
          id,
          gate: 'self-approval',
          proposed_by: previous.length > 0 ? previous : lastAuthor ? [lastAuthor] : [],
          actor,
        });
      }
      if (changed) {
        throw errors.transitionDenied(`self-approval ban: ${id} cannot be changed and activated in one write; write the change, then another identity activates it`, {
          id,
          gate: 'self-approval',
          actor,
        });
      }
      proposers = previous;
    } else if (status !== 'active') {
      if (before.status === 'active') proposers = changed ? [actor] : [];
      else proposers = changed || before.status !== status ? [...new Set([...previous, actor])] : previous;
    } else proposers = previous;
    if (proposers.length > 0) fm[PROPOSED_BY] = proposers;
    else delete fm[PROPOSED_BY];
  }

  /**
   * Validate and commit pending changes; nothing is committed if any of them fails. Resolves
   * once the commit is durable, or with `deferDurability` once it is written to the journal
   * and applied (the durability is then awaited by `Tenant.write` before it acknowledges):
   * only for a caller that persists nothing else on the strength of the commit before
   * `write` returns.
   */
  async commit(options: { deferDurability?: boolean } = {}): Promise<Map<string, CommittedNode>> {
    const pending = [...this.pending.values()];
    this.pending = new Map();
    const out = new Map<string, CommittedNode>();
    if (pending.length === 0) return out;
    const { tenant } = this;
    const registry = tenant.registry;
    const now = new Date(this.meta.at ?? tenant.clock.now()).toISOString();
    const files: FileChange[] = [];
    const prepared: Array<{ id: string; path: string; markdown: string | null; fm: Frontmatter | null; body: string; before: NodeRecord | null }> = [];
    let identityChanged = false;

    for (const change of pending) {
      const before = tenant.index.get(change.id) ?? null;
      if (!change.node) {
        if (!before) continue;
        if (guardIdentityFacts(registry, change.id, before, null, this.meta.identity).length > 0) identityChanged = true;
        files.push({ path: before.path, content: null });
        prepared.push({ id: change.id, path: before.path, markdown: null, fm: null, body: '', before });
        continue;
      }
      const fm = change.node.frontmatter;
      const body = change.node.body;
      const typeDef = registry.nodeTypes.get(String(fm.type));
      if (!typeDef) throw unknownTypeError(registry, change.id, fm.type);
      if (!change.id.startsWith(typeDef.prefix)) {
        throw errors.validation(`id '${change.id}' does not carry the ${typeDef.type} prefix '${typeDef.prefix}'`, [{ field: 'id', message: `must start with ${typeDef.prefix}` }]);
      }
      if (before && before.type !== typeDef.type) {
        throw errors.validation(`node ${change.id} is a ${before.type}; its type cannot change`, [{ field: 'type' }]);
      }
      if (!before && typeDef.forced_initial_status) fm.status = typeDef.forced_initial_status;
      if (fm.status === undefined || fm.status === null || fm.status === '') fm.status = before ? before.status : typeDef.initial;
      // An approved (active) node of a self-approval type that changes content needs a new
      // approval: otherwise anyone could rewrite an active schema hook or workflow unreviewed.
      let demoted = false;
      if (typeDef.self_approval_ban && before && before.status === 'active' && fm.status === 'active' && contentChanged(before, fm, body)) {
        fm.status = 'proposed';
        demoted = true;
        this.warnings.push(`${change.id} changed while active: it is proposed again until another identity activates it`);
      }
      const status = String(fm.status);
      if (typeDef.self_approval_ban) this.selfApproval(change.id, before, fm, body, status);

      if (!change.options.skipTransition && !demoted && (!before || before.status !== status)) {
        const view: Record<string, unknown> = { ...fm, body };
        for (const k of STAMP_KEYS) {
          if (before && before.frontmatter[k] !== undefined) view[k] = before.frontmatter[k];
          else if (!before) delete view[k];
        }
        await tenant.hooks.checkTransition(registry, typeDef.type, { node: view, from: before ? before.status : null, to: status, actor: this.actor.personId });
      }
      // No completion-resolver check here: a create is the move from null through the transition
      // gate above, the same gate a status change passes (docs/decisions.md "patch"). The SPEC's
      // "order resolver first" rule is about a put batch and lives with the put (plugins/core).

      if (change.options.stamp !== false) {
        for (const k of STAMP_KEYS) delete fm[k];
        fm.author = this.actor.personId;
        fm.authored_via = this.actor.agent && (this.meta.via === 'rest' || this.meta.via === 'mcp') ? 'dispatch' : this.meta.via;
        if (this.actor.agent) {
          fm.authored_by_agent = this.actor.agent;
          if (this.actor.session) fm.session = this.actor.session;
        }
      }
      if (before && typeof before.frontmatter.created === 'string') fm.created = before.frontmatter.created;
      else if (typeof fm.created !== 'string') fm.created = now;
      delete fm.updated;
      delete fm.revision;

      const shapeErrors = registry.validateShape(typeDef, fm);
      // the first reason in the message (the full list stays under details.errors)
      if (shapeErrors.length > 0) throw errors.validation(`invalid ${typeDef.type} frontmatter${describeAjvError(shapeErrors[0] as Partial<ErrorObject>)}`, shapeErrors);
      if (Buffer.byteLength(body, 'utf8') > LIMITS.bodyBytes) {
        throw errors.validation(`body exceeds ${LIMITS.bodyBytes} bytes`, [{ field: 'body', message: `at most ${LIMITS.bodyBytes} bytes`, bytes: Buffer.byteLength(body, 'utf8') }]);
      }
      await tenant.hooks.validate(registry, typeDef.type, { ...fm, body });

      // An edit that changes nothing but the timestamp is not a change.
      if (before) {
        const { updated: _u, ...prevRest } = before.frontmatter;
        if (serializeNode(prevRest, before.body) === serializeNode(fm, body)) {
          out.set(change.id, { id: change.id, status: 'unchanged', revision: before.revision, record: before });
          continue;
        }
      }
      // The identity guard: every write passes here, whatever route, tool, hook or plugin made it.
      if (guardIdentityFacts(registry, change.id, before, { frontmatter: fm, body }, this.meta.identity).length > 0) identityChanged = true;
      fm.updated = now;
      const markdown = serializeNode(fm, body);
      const path = nodePath(typeDef.type, change.id);
      files.push({ path, content: markdown });
      prepared.push({ id: change.id, path, markdown, fm, body, before });
    }

    if (files.length === 0) return out;
    const parent = tenant.store.head();
    const ids = prepared.map((p) => p.id);
    const trailers = [`Svc-Op: ${this.meta.op}`, `Svc-Via: ${this.meta.via}`, `Svc-Person: ${this.actor.personId}`];
    if (this.actor.agent) trailers.push(`Svc-Agent: ${this.actor.agent}`);
    if (this.actor.session) trailers.push(`Svc-Session: ${this.actor.session}`);
    if (this.actor.credential) trailers.push(`Svc-Credential: ${this.actor.credential}`);
    if (identityChanged && isIdentityAuthority(this.meta.identity)) trailers.push(`Svc-Identity: ${this.meta.identity.holder}`);
    if (this.meta.internal) trailers.push('Svc-Internal: true');
    const summary = ids.length > 3 ? `${ids.slice(0, 3).join(', ')} and ${ids.length - 3} more` : ids.join(', ');
    const seconds = Math.floor((this.meta.at ?? tenant.clock.now()) / 1000);
    const author = { name: this.actor.name, email: this.actor.email, timestamp: seconds, timezoneOffset: 0 };
    const result = await tenant.store.commitDeferred({
      changes: files,
      author,
      committer: author,
      message: `${this.meta.op}: ${summary}\n\n${trailers.join('\n')}\n`,
      expectedParent: parent,
    });

    const changes: IndexChange[] = [];
    for (const p of prepared) {
      if (p.markdown === null || p.fm === null) {
        changes.push({ id: p.id, before: p.before, after: null });
        out.set(p.id, { id: p.id, status: 'deleted', revision: null, record: null });
        continue;
      }
      const oid = result.blobs[p.path] ?? tenant.store.blobOid(p.markdown);
      const record = makeRecord(p.path, oid, p.markdown, p.fm, p.body);
      changes.push({ id: p.id, before: p.before, after: record });
      out.set(p.id, { id: p.id, status: p.before ? 'updated' : 'created', revision: oid, record });
    }
    const event: CommitEvent = {
      commit: result.commit,
      parent,
      changes,
      actor: { person: this.actor.personId, name: this.actor.name, email: this.actor.email },
      via: this.meta.via,
      op: this.meta.op,
      internal: Boolean(this.meta.internal),
      date: new Date(seconds * 1000).toISOString(),
    };
    // The index follows the store's head at once (the journal record is written: a process
    // crash no longer loses the commit); the acknowledgement waits for the fdatasync.
    tenant.index.applyCommit(event);
    tenant.noteCommit();
    if (options.deferDurability) this.durable.push(result.durable);
    else await result.durable;
    return out;
  }
}
