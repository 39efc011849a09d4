/**
 * The one place the app reaches the other plugins' operations: the same core functions the
 * REST routes and MCP tools call, with an OpContext built for the signed-in person. When the
 * way operations are declared changes (issue 13), this file is the one to adapt.
 *
 * A page that needs a plugin the tenant has disabled gets a 404, like the REST route would.
 */
import type { Actor } from '../../kernel/actor.js';
import { errors } from '../../kernel/errors.js';
import { invoke } from '../../kernel/operation.js';
import { RawResponse, StatusPayload, type KernelServices, type OpContext } from '../../kernel/plugin.js';
import type { Tenant } from '../../kernel/tenant.js';
import * as analyticsApi from '../analytics/api.js';
import type { AnalyticsPayload } from '../analytics/report.js';
import type { ProgramPayload } from '../analytics/program.js';
import * as captureApi from '../capture/api.js';
import { programsOverview } from '../capture/explore.js';
import * as coreApi from '../core/api.js';
import * as historyApi from '../history/api.js';
import * as leasesApi from '../leases/api.js';
import { leasesOf, leaseView, type LeaseView } from '../leases/store.js';
import * as lensesApi from '../lenses/api.js';
import type { LensTree } from '../lenses/view.js';
import { COOKIE_NAME as TICKET_COOKIE, ticketAuthenticator, verifyTicket } from '../lenses/tickets.js';
import * as queueApi from '../queue/api.js';
import type { QueueInput } from '../queue/operations.js';

export type { AnalyticsPayload, ProgramPayload, LeaseView };

export interface NodeRead {
  id: string;
  type: string;
  markdown: string;
  frontmatter: Record<string, unknown>;
  body: string;
  revision: string;
  resolution?: Record<string, unknown>;
  open_findings?: Array<Record<string, unknown>>;
  superseded_by?: unknown;
}

/** One entry of POST /v1/nodes' results. */
export interface PutEntryResult {
  status: string;
  warnings?: string[];
  error?: { code: string; message: string; details: Record<string, unknown> };
  http_status?: number;
}

/** The operations of one signed-in person in one tenant. */
export class Bridge {
  readonly ctx: OpContext;

  constructor(readonly services: KernelServices, tenant: Tenant, actor: Actor) {
    // Writes from the app are the person's own, through the same path as the REST API.
    this.ctx = { tenant, actor, via: 'rest', services, headers: {} };
  }

  get tenant(): Tenant {
    return this.ctx.tenant;
  }

  /** Whether the tenant has this plugin (and its dependencies) enabled. */
  has(plugin: string): boolean {
    const def = this.services.host.plugins.find((p) => p.name === plugin);
    return def !== undefined && this.services.host.usable(this.ctx.tenant, def);
  }

  private need(plugin: string, what: string): void {
    if (!this.has(plugin)) throw errors.notFound(`${what} (the ${plugin} plugin is not enabled for this tenant)`);
  }

  me() {
    return invoke(coreApi.me, this.ctx, {});
  }
  async orgChoices() {
    const answer = await invoke(coreApi.getOrgChoices, this.ctx, {});
    // get_org_choices answers its payload as is (never a status payload or a raw response)
    if (answer instanceof StatusPayload || answer instanceof RawResponse) throw new Error('get_org_choices answered a status payload or a raw response');
    return answer;
  }
  queue(input: QueueInput) {
    this.need('queue', 'the queue');
    return invoke(queueApi.showQueue, this.ctx, dropUndefined(input));
  }
  async node(id: string): Promise<NodeRead> {
    return readJson(await invoke(coreApi.getNode, this.ctx, { id })) as NodeRead;
  }
  /** The node's lease, if one is live or reserved (operational state, read like the queue shows holders). */
  lease(id: string): LeaseView | null {
    if (!this.has('leases')) return null;
    const live = leasesOf(this.ctx.tenant).live(id, this.services.clock.now());
    return live ? leaseView(live) : null;
  }
  history(id: string, limit = 50) {
    this.need('history', 'history');
    return invoke(historyApi.nodeHistory, this.ctx, { id, limit });
  }
  historyDetail(id: string, sha: string) {
    this.need('history', 'history');
    return invoke(historyApi.historyDetail, this.ctx, { id, sha });
  }
  claim(id: string) {
    this.need('leases', 'leases');
    return invoke(leasesApi.claimNode, this.ctx, { id });
  }
  release(id: string) {
    this.need('leases', 'leases');
    return invoke(leasesApi.releaseNode, this.ctx, { id });
  }
  setStatus(id: string, status: string) {
    return invoke(coreApi.setStatus, this.ctx, { id, status });
  }
  setPriority(id: string, priority: string) {
    return invoke(coreApi.setPriority, this.ctx, { id, priority });
  }
  setReadiness(id: string, readiness: string) {
    return invoke(coreApi.setReadiness, this.ctx, { id, readiness });
  }
  addEdge(id: string, type: string, to: string) {
    return invoke(coreApi.addEdge, this.ctx, { id, type, to });
  }
  /** A full put with the revision echo: a stale revision comes back as a failed entry carrying the 409. */
  async putNode(node: Record<string, unknown>, revision: string): Promise<PutEntryResult> {
    const answer = await invoke(coreApi.putNode, this.ctx, { nodes: [{ node, if_exists: 'update', revision }] });
    const payload = (answer instanceof StatusPayload ? answer.payload : answer) as { results: unknown[] };
    return payload.results[0] as PutEntryResult;
  }
  async program(id: string, depth?: string): Promise<ProgramPayload> {
    this.need('analytics', 'programs');
    return (await invoke(analyticsApi.program, this.ctx, dropUndefined({ id, depth, format: 'json' }))) as ProgramPayload;
  }
  programs() {
    return programsOverview(this.ctx.tenant);
  }
  async analytics(input: { project?: string; type?: string; weeks?: string }): Promise<AnalyticsPayload> {
    this.need('analytics', 'analytics');
    return (await invoke(analyticsApi.analytics, this.ctx, dropUndefined({ ...input, format: 'json' }))) as AnalyticsPayload;
  }
  neighborhood(id: string, depth: 1 | 2) {
    this.need('capture', 'the graph picture');
    return invoke(captureApi.exploreGraph, this.ctx, { root_id: id, depth }) as Promise<{
      root: { id: string };
      nodes: Array<{ id: string; type: string; status: string; title: string; distance: number; done: boolean }>;
      edges: Array<{ from: string; type: string; to: string }>;
      truncated: boolean;
    }>;
  }
  search(query: string) {
    this.need('capture', 'search');
    return invoke(captureApi.queryGraph, this.ctx, { query, mode: 'digest' }) as Promise<{ found: boolean; text: string; node_ids: string[]; top_sim: number }>;
  }
  lenses() {
    this.need('lenses', 'views');
    return invoke(lensesApi.listLenses, this.ctx, {});
  }
  renderLens(id: string, params: Record<string, unknown>) {
    this.need('lenses', 'views');
    // with a lens id the answer is always the view tree, never the catalog
    return invoke(lensesApi.renderLens, this.ctx, { lens_id: id, params }) as Promise<LensTree>;
  }
}

/** Optional inputs the app leaves unset are absent, as in a request that does not send them. */
function dropUndefined<T extends object>(input: T): T {
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as T;
}

/** The node read answers its cached JSON bytes (a RawResponse); the app wants the object. */
function readJson(answer: unknown): unknown {
  if (answer instanceof RawResponse) return JSON.parse(String(answer.body));
  return answer;
}


/** Whether a share ticket is live for this lens (the lenses plugin's own check). */
export async function ticketIsLive(services: KernelServices, lensId: string, blob: string): Promise<{ expMs: number } | null> {
  const verified = await verifyTicket(services, blob, lensId);
  return verified ? { expMs: verified.claims.expMs } : null;
}

/**
 * The read-only identity of a ticket cookie, exactly as the lens render route sees it: the
 * sharer, with the grant that pins the params and names the sharer in the banner.
 */
export async function ticketBridge(services: KernelServices, lensId: string, blob: string): Promise<Bridge | null> {
  const found = await ticketAuthenticator(services)({ params: {}, query: {}, body: undefined, headers: { cookie: `${TICKET_COOKIE}=${blob}` }, path: `/v1/lens/${lensId}/render` });
  return found ? new Bridge(services, found.tenant, found.actor) : null;
}

export { TICKET_COOKIE };
