/**
 * The plugin contract. A plugin is a plain object: a name, its dependencies, routes and
 * tools over one core function per operation, optional schema contributions and
 * lifecycle hooks. The kernel validates manifests at boot (unknown dependency, cycle,
 * duplicate route or tool) and fails the start with a message naming the plugin.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware } from 'koa';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { EdgeTypeDef, NodeTypeDef } from './registry.js';
import type { Tenant } from './tenant.js';
import type { Actor } from './actor.js';
import type { Clock, Logger, ServerConfig } from './config.js';
import type { NodeRecord } from './graph-index.js';
import type { TenantManager } from './tenants.js';
import type { PluginHost } from './plugin-host.js';
import type { KernelMetrics } from './metrics.js';
import type { IdentityAuthority } from './identity-guard.js';
import type { WorkEvent } from './events/types.js';
import { FileStateStore, type StateStore } from './state-store.js';
import { invoke, isOperationDef, type JsonSchema, type OperationDef } from './operation.js';
import { CREDENTIAL_KINDS, type AccessMap, type OperationAccess } from './access.js';

export type Via = 'rest' | 'mcp';

/**
 * Resolves a non-bearer credential (a render ticket) on routes declared with auth 'ticket'.
 * May answer asynchronously (signature checks through WebCrypto are async).
 */
export type TicketAuthenticator = (
  req: RouteRequest & { path: string },
) => { tenant: Tenant; actor: Actor } | null | Promise<{ tenant: Tenant; actor: Actor } | null>;

export interface KernelServices {
  clock: Clock;
  log: Logger;
  config: ServerConfig;
  tenants: TenantManager;
  host: PluginHost;
  ticketAuthenticators: TicketAuthenticator[];
  /** Prometheus metrics; plugins add scrape-time gauges with `metrics.gauge()` */
  metrics: KernelMetrics;
  /** set when a graceful stop began: responses ask clients to close their connections */
  closing?: boolean;
  /**
   * Aborted when the server begins to stop (graceful or immediate): long-lived answers (event
   * streams, waits) end at once instead of holding the stop for its whole grace period.
   */
  stopSignal: AbortSignal;
  /**
   * Queues a warm-up (kernel/warm.ts): a cache built on first use anyway, built ahead when the
   * kernel has been up a moment, one per event-loop turn. For `tenantOpen` work no request may wait on.
   */
  warm(name: string, run: () => unknown): void;
  /** the server's public base URL (SVC_PUBLIC_URL, else the listening URL), once it listens */
  baseUrl?: string;
  /**
   * Credentials that are not the kernel's own `svc_` tokens (connector JWTs): each is asked in
   * turn, asynchronously; the first identity wins; none is a 401.
   */
  bearerAuthenticators: Array<(token: string) => Promise<{ tenant: Tenant; actor: Actor } | null>>;
  /** the `WWW-Authenticate` value of a 401 on /mcp and /v1/* (a plugin adds `resource_metadata`) */
  authChallenge: () => string;
  /** every API route the REST adapter registered, with its plugin (filled when the app is built) */
  registeredRoutes: Array<{ plugin: string; method: string; path: string }>;
  /**
   * The data-directory-wide operational store `name` (OAuth clients, app sessions): read it
   * through `globalStore(services, name)`. Unset: files under SVC_DATA_DIR/<name>/; cluster
   * mode sets it to the PostgreSQL store (org '' of wg_state), shared by every process.
   */
  globalStore?: (name: string) => StateStore;
  /**
   * Cluster mode's routing of requests that carry no bearer token (docs/scale-out.md): each
   * router recognises requests of its plugin (a session cookie, a render ticket, a sign-in form,
   * an OAuth code) and names the tenant whose owner must serve them. Asked in order; the first
   * answer wins; none: the request is served where it arrived. Unused by a single process.
   */
  requestRouters: RequestRouter[];
  /**
   * Cluster mode: whether this process still surely owns `org` (its lease counted on by the
   * local monotonic clock, kernel/cluster/ownership.ts `fenceOf`). A process paused or cut off
   * past its lease answers false at once, before it learns it lost the tenant, so what it would
   * do unasked (deliver webhooks) waits. Unset (one process): every open tenant is served here.
   */
  serves?: (org: string) => boolean;
}

export interface RequestRouter {
  /** 'headers': decide from method, URL and headers; 'body': the body is needed too (read whole, at most 1 MiB); false: not this router's */
  applies(req: IncomingMessage): 'headers' | 'body' | false;
  /**
   * the tenant's org, or a token's SHA-256 (hex) whose tenant it is, or null. `fresh`: the
   * request was forwarded here by another member, which decided from its own view: read what
   * decides from the database, not this process's copy (two members with different stale copies
   * would otherwise forward a request between them until it gives up)
   */
  route(req: IncomingMessage, body: Buffer | null, opts?: { fresh: boolean }): Promise<{ org: string } | { tokenHash: string } | null>;
}

/** The data-directory-wide store `name`: `services.globalStore` if set, else SVC_DATA_DIR/<name>/ files. */
export function globalStore(services: Pick<KernelServices, 'globalStore' | 'config'>, name: string): StateStore {
  return services.globalStore ? services.globalStore(name) : new FileStateStore(join(services.config.dataDir, name));
}

/** What every operation receives: the caller's tenant and identity, and the kernel services. */
export interface OpContext {
  tenant: Tenant;
  actor: Actor;
  via: Via;
  services: KernelServices;
  headers: Record<string, string | undefined>;
  /** aborted when the client went away before the answer (REST); a wait stops waiting */
  signal?: AbortSignal;
}

export interface RouteRequest {
  params: Record<string, string>;
  query: Record<string, string | string[] | undefined>;
  body: unknown;
  headers: Record<string, string | undefined>;
}

/** A non-JSON response (streams, html, redirects). MCP tools never return these. */
export class RawResponse {
  constructor(
    readonly status: number,
    readonly headers: Record<string, string>,
    readonly body: string | Buffer | Readable | null,
    /**
     * Called with the node response once the body is handed to it: a long-lived stream that
     * may have to cut its connection (a client that stopped reading and never drains) keeps it.
     */
    readonly attach?: (res: ServerResponse) => void,
    /**
     * `attach` writes the body and ends the response itself (an event stream writing its socket):
     * the kernel sets the status and headers and hands the response over once the request's
     * middleware is done; `body` must be null.
     */
    readonly writesBody = false,
    /**
     * With `writesBody`: the same body as a Readable, for an in-process consumer that passes it
     * on instead of the kernel (the app's same-origin event stream); `onCut` disconnects its client.
     */
    readonly readable?: (onCut: () => void) => Readable,
  ) {}
}

/** A JSON payload whose REST status differs from the route default (e.g. 207). */
export class StatusPayload<T = unknown> {
  constructor(
    readonly status: number,
    readonly payload: T,
    /** the MCP tool result carries `isError: true` (same payload bytes), e.g. a batch in which every entry failed */
    readonly toolError = false,
  ) {}
}

export interface RouteDef {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  /**
   * The declared operation: the kernel assembles its input from the path parameters, the query
   * (GET; on other methods only the names in `query`) and the JSON body, coerced and validated
   * against `operation.input`.
   */
  operation: OperationDef;
  /** input fields a body method takes from the query string instead of the body */
  query?: string[];
  /**
   * Query keys under a prefix gathered into one object field of the input: `{ 'param.': 'params' }`
   * turns `?param.project=web` into `params: { project: 'web' }` (a repeated key joins with commas).
   */
  queryPrefixes?: Record<string, string>;
  /** default 200 */
  status?: number;
  /** 'token' (default) requires a bearer token; 'ticket' also admits a render ticket */
  auth?: 'token' | 'ticket';
  /**
   * A route people open in a browser: an error answers a readable HTML page (status kept)
   * when the request prefers text/html; API clients still get the JSON envelope.
   */
  htmlErrors?: boolean;
  /**
   * A side-effect-free read answered from memory (GET, token auth): an ordinary request is
   * answered by the direct read lane without the koa app (kernel/direct-reads.ts), with the same
   * bytes and headers. A request the lane does not answer (a failure among them) goes to koa,
   * where the operation runs again.
   */
  direct?: boolean;
}

export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** An MCP tool over an operation: its name (always) and input schema come from the operation, its description unless given. */
export interface ToolDef {
  /** default: the operation's description, else its summary */
  description?: string;
  operation: OperationDef;
  annotations?: ToolAnnotations;
  _meta?: Record<string, unknown>;
}

/** A tool as the MCP adapter serves it: everything resolved, one call path. */
export interface Tool {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  annotations?: ToolAnnotations;
  _meta?: Record<string, unknown>;
  /** validates the arguments against the input schema (422 with ajv's errors), then runs the operation */
  call: (ctx: OpContext, args: Record<string, unknown>) => Promise<unknown>;
  /** who may call it (the plugin's access.ts entry): tools/list leaves out what the caller never may (kernel/mcp.ts) */
  access?: OperationAccess;
}

export function resolveTool(def: ToolDef): Tool {
  const op = def.operation;
  return {
    name: op.name,
    description: def.description ?? op.description ?? op.summary,
    inputSchema: op.input,
    ...(def.annotations ? { annotations: def.annotations } : {}),
    ...(def._meta ? { _meta: def._meta } : {}),
    call: (ctx, args) => invoke(op, ctx, args),
  };
}

export interface ResourceDef {
  uri: string;
  name: string;
  description?: string;
  mimeType: string;
  /** the text for this caller (`ctx`: the MCP request's tenant and actor) */
  read: (ctx: OpContext) => Promise<string> | string;
  _meta?: Record<string, unknown>;
  /**
   * Whether `event` may have changed what `read` answers `caller` (MCP `resources/subscribe`
   * sends `notifications/resources/updated` when it does; kernel/mcp-subscriptions.ts). Called
   * for every event of the tenant while someone subscribes: synchronous and cheap. Absent: the
   * resource cannot be subscribed to.
   */
  affectedBy?: (event: WorkEvent, caller: Actor) => boolean;
}

/**
 * A family of resources under one RFC 6570 URI template (`workgraph://nodes/{id}`): listed by
 * `resources/templates/list`, never enumerated by `resources/list`.
 */
export interface ResourceTemplateDef {
  uriTemplate: string;
  name: string;
  description?: string;
  mimeType: string;
  /** the URI's variables when it belongs to this template, else null */
  match: (uri: string) => Record<string, string> | null;
  /** the text for this caller; a SvcError (404, 403) when there is none for them */
  read: (ctx: OpContext, params: Record<string, string>) => Promise<string>;
  /** as ResourceDef.affectedBy, for the resource the URI's `params` name */
  affectedBy?: (event: WorkEvent, params: Record<string, string>, caller: Actor) => boolean;
}

/** A plugin's say in a status change: `before` may veto (throw), `after` adds response keys. */
export interface StatusEffect {
  before?: (ctx: OpContext, node: NodeRecord, from: string, to: string) => Promise<void>;
  after?: (ctx: OpContext, node: NodeRecord, from: string, to: string) => Promise<Record<string, unknown> | void>;
  /** the status write failed after `before` succeeded: undo what `before` did */
  abort?: (ctx: OpContext, node: NodeRecord, from: string, to: string) => Promise<void>;
}

/** What a client write to an existing node is about to do (core writes: put, patch, edges, status, priority, ...). */
export interface NodeWriteIntent {
  /** the operation name (put_node, patch_node, set_status, add_edge, ...) */
  op: string;
  /** an admin asked to override a holder's claim (`force: true`) */
  force: boolean;
  /** the status the write moves the node to, when it changes it */
  status?: string;
}

/** A plugin's verdict on a node write: warnings for the answer, and work to do once the write landed. */
export interface NodeWriteVerdict {
  warnings: string[];
  /** called with the node as committed, only when the write landed (not when it failed or changed nothing) */
  landed?: (after: NodeRecord) => Promise<string[] | void>;
}

/**
 * A plugin's say in a client write to an existing node, asked inside the tenant's write queue
 * before the change is drafted: throw to refuse it (a coded error), or return warnings. Never
 * asked for server-internal bookkeeping writes.
 */
export type NodeWriteCheck = (ctx: OpContext, node: NodeRecord, intent: NodeWriteIntent) => NodeWriteVerdict | null;

/**
 * A request the server sends to another system (a webhook), for the OpenAPI document's
 * top-level `webhooks` (OpenAPI 3.1): keyed by `name`, the JSON body's schema.
 */
export interface WebhookPayloadDef {
  /** the key under `webhooks` (an event type, e.g. 'node.created') */
  name: string;
  summary: string;
  description?: string;
  /** the JSON Schema of the request body */
  schema: JsonSchema;
}

/** A per-tenant setting a plugin reads from `tenant.json` `settings` (set with `workgraph tenant settings`). */
export interface TenantSettingDef {
  values: string[];
  default: string;
  description: string;
}

export interface PluginDef {
  name: string;
  version?: string;
  /** one line on what the plugin gives a tenant (the operator console and GET /v1/tenant/plugins show it) */
  description?: string;
  /** on for every tenant, like core (the API description): tenant plugin lists do not switch it */
  alwaysOn?: boolean;
  /**
   * Plugins this one imports and needs: the start is refused without them, and a tenant has
   * this plugin only where they are usable too.
   */
  dependsOn?: string[];
  /**
   * Plugins this one imports but works without (it asks `host.usable` before using them, or
   * only reads what they leave behind): ordered before it when present, part of the cycle
   * check, but a deployment may leave them out and a tenant may disable them without losing
   * this plugin. `dependsOn` and `optionalDependsOn` together name exactly the plugins its
   * files import (test/kernel/plugin-imports.test.ts).
   */
  optionalDependsOn?: string[];
  routes?: RouteDef[];
  tools?: ToolDef[];
  resources?: ResourceDef[];
  /** MCP resource templates (kernel/mcp.ts), e.g. one per node */
  resourceTemplates?: ResourceTemplateDef[];
  /** Lines this plugin adds to the MCP server's `instructions` (how an agent uses its tools), when enabled. */
  instructions?: string[];
  schema?: { nodeTypes?: NodeTypeDef[]; edgeTypes?: EdgeTypeDef[] };
  /**
   * Who may call each declared operation, keyed by operation name (kernel/access.ts; kept in
   * `plugins/<name>/access.ts`). Every declared operation of the plugin needs an entry: the
   * host refuses to boot without one.
   */
  access?: AccessMap;
  statusEffects?: StatusEffect[];
  /** checks on client writes to existing nodes (leases: the holder's claim) */
  nodeWriteChecks?: NodeWriteCheck[];
  /** requests this plugin sends to other systems, described under the OpenAPI document's `webhooks` */
  webhookPayloads?: WebhookPayloadDef[];
  /** tenant settings this plugin reads (`tenant.json` `settings`), validated by the CLI */
  settings?: Record<string, TenantSettingDef>;
  init?: (services: KernelServices) => Promise<void> | void;
  /**
   * The identity plugin only (by name, IDENTITY_PLUGIN): receives at boot the capability to
   * change identity facts (kernel/identity-guard.ts). The kernel hands it to no other plugin.
   */
  receiveIdentityAuthority?: (authority: IdentityAuthority) => void;
  /**
   * Protocol endpoints outside /v1 (OAuth, `/.well-known/*`): one koa middleware, run before the
   * API routers for every request; it handles its own paths and calls `next()` for the rest.
   */
  middleware?: (services: KernelServices) => Middleware;
  /**
   * The path prefixes `middleware` handles: the kernel calls it only for a request whose path
   * starts with one of them (an API read then passes through no plugin's middleware). Without
   * it the middleware sees every request.
   */
  middlewarePaths?: readonly string[];
  /** called once per tenant when it opens (or when the plugin is enabled for it) */
  tenantOpen?: (tenant: Tenant, services: KernelServices) => Promise<void> | void;
  close?: () => Promise<void> | void;
}

/** The plugin that owns identity facts (people, admin rights, agent ownership). */
export const IDENTITY_PLUGIN = 'identity';

export function definePlugin<T extends PluginDef>(def: T): T {
  return def;
}

/** Boot-time manifest check. Throws an Error naming the offending plugin. */
export function checkManifests(plugins: PluginDef[]): void {
  const byName = new Map<string, PluginDef>();
  for (const p of plugins) {
    if (!p.name || !/^[a-z][a-z0-9-]*$/.test(p.name)) throw new Error(`plugin manifest: invalid plugin name '${p.name}'`);
    if (byName.has(p.name)) throw new Error(`plugin '${p.name}': registered twice`);
    byName.set(p.name, p);
  }
  for (const p of plugins) {
    for (const dep of p.dependsOn ?? []) {
      if (!byName.has(dep)) throw new Error(`plugin '${p.name}': depends on unknown plugin '${dep}'`);
    }
    for (const dep of p.optionalDependsOn ?? []) {
      if ((p.dependsOn ?? []).includes(dep))
        throw new Error(`plugin '${p.name}': '${dep}' is listed both in dependsOn and in optionalDependsOn`);
    }
  }
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string, path: string[]) => {
    if (state.get(name) === 'done') return;
    if (state.get(name) === 'visiting') throw new Error(`plugin '${name}': dependency cycle ${[...path, name].join(' -> ')}`);
    state.set(name, 'visiting');
    // an optional dependency left out of this deployment has no edges to follow
    for (const dep of presentDependencies(byName.get(name), byName)) visit(dep, [...path, name]);
    state.set(name, 'done');
  };
  for (const p of plugins) visit(p.name, []);
  for (const p of plugins) checkAccess(p);
  const routes = new Map<string, string>();
  const tools = new Map<string, string>();
  for (const p of plugins) {
    for (const r of p.routes ?? []) {
      // Parameter names do not make a route different: GET /v1/nodes/:id and /v1/nodes/:nodeId collide.
      const key = `${r.method.toUpperCase()} ${r.path.replace(/([:*])[A-Za-z_$][\w$]*/g, '$1')}`;
      const owner = routes.get(key);
      if (owner) throw new Error(`plugin '${p.name}': duplicate route ${r.method} ${r.path} (already registered by '${owner}')`);
      routes.set(key, p.name);
    }
    for (const def of p.tools ?? []) {
      const t = resolveTool(def);
      const owner = tools.get(t.name);
      if (owner) throw new Error(`plugin '${p.name}': duplicate tool ${t.name} (already registered by '${owner}')`);
      tools.set(t.name, p.name);
    }
  }
}

/** The declared operations of a plugin (routes and tools), each once, by name. */
export function declaredOperations(plugin: PluginDef): OperationDef[] {
  const out = new Map<string, OperationDef>();
  for (const op of [...(plugin.routes ?? []).map((r) => r.operation), ...(plugin.tools ?? []).map((t) => t.operation)]) {
    if (isOperationDef(op) && !out.has(op.name)) out.set(op.name, op);
  }
  return [...out.values()];
}

/**
 * Every declared operation has an access declaration (kernel/access.ts), and every declaration
 * names an operation of the plugin with known credential kinds. Undeclared function operations
 * (deprecated; test plugins) are not covered.
 */
function checkAccess(plugin: PluginDef): void {
  const access = plugin.access ?? {};
  const names = new Set<string>();
  for (const op of declaredOperations(plugin)) {
    names.add(op.name);
    if (!Object.hasOwn(access, op.name)) {
      throw new Error(
        `plugin '${plugin.name}': operation '${op.name}' has no access declaration (add it to plugins/${plugin.name}/access.ts: who may call it and on what; see docs/authorization.md)`,
      );
    }
  }
  for (const [name, entry] of Object.entries(access)) {
    if (!names.has(name)) throw new Error(`plugin '${plugin.name}': access declaration '${name}' names no operation of the plugin`);
    const kinds = [...entry.callers, ...(entry.when ?? []).flatMap((c) => c.callers ?? [])];
    const unknown = kinds.filter((k) => !(CREDENTIAL_KINDS as readonly string[]).includes(k));
    if (unknown.length > 0)
      throw new Error(
        `plugin '${plugin.name}': operation '${name}' declares unknown credential kind(s) ${unknown.join(', ')} (known: ${CREDENTIAL_KINDS.join(', ')})`,
      );
    if (!entry.scope) throw new Error(`plugin '${plugin.name}': operation '${name}' declares no scope (on what it may be called)`);
  }
}

/** The dependencies of `plugin` present in this deployment: every `dependsOn`, and the optional ones that were loaded. */
function presentDependencies(plugin: PluginDef | undefined, byName: Map<string, PluginDef>): string[] {
  if (!plugin) return [];
  return [...(plugin.dependsOn ?? []), ...(plugin.optionalDependsOn ?? []).filter((dep) => byName.has(dep))];
}

/** Plugins in dependency order (optional dependencies that are present count too). */
export function orderPlugins(plugins: PluginDef[]): PluginDef[] {
  const byName = new Map(plugins.map((p) => [p.name, p]));
  const out: PluginDef[] = [];
  const seen = new Set<string>();
  const visit = (p: PluginDef | undefined) => {
    if (!p || seen.has(p.name)) return;
    seen.add(p.name);
    for (const dep of presentDependencies(p, byName)) visit(byName.get(dep));
    out.push(p);
  };
  plugins.forEach(visit);
  return out;
}

/** The one serializer both adapters use, so REST bodies and tool text are the same bytes. */
export function serialize(payload: unknown): string {
  return JSON.stringify(payload);
}
