/**
 * The one place the app reaches the other plugins' operations: the same core functions the
 * REST routes and MCP tools call, with an OpContext built for the signed-in person. When the
 * way operations are declared changes (issue 13), this file is the one to adapt.
 *
 * A page that needs a plugin the tenant has disabled gets a 404, like the REST route would.
 */
import type { Actor } from '../../kernel/actor.js';
import { errors } from '../../kernel/errors.js';
import { StatusPayload, type KernelServices, type OpContext } from '../../kernel/plugin.js';
import type { Tenant } from '../../kernel/tenant.js';
import { analytics as analyticsOp, program as programOp } from '../analytics/operations.js';
import type { AnalyticsPayload } from '../analytics/report.js';
import type { ProgramPayload } from '../analytics/program.js';
import { exploreGraph, programsOverview } from '../capture/explore.js';
import { queryGraph } from '../capture/digest.js';
import { addEdge, getMe, getNode, putNodes, setPriority, setReadiness, setStatus } from '../core/operations.js';
import { orgChoices } from '../core/org-choices.js';
import { historyDetail, nodeHistory } from '../history/operations.js';
import { claim, release } from '../leases/operations.js';
import { leasesOf, leaseView, type LeaseView } from '../leases/store.js';
import { lensCatalog, renderLens } from '../lenses/operations.js';
import { COOKIE_NAME as TICKET_COOKIE, ticketAuthenticator, verifyTicket } from '../lenses/tickets.js';
import { showQueue, type QueueInput } from '../queue/operations.js';

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
    return getMe(this.ctx);
  }
  orgChoices() {
    return orgChoices(this.ctx);
  }
  queue(input: QueueInput) {
    this.need('queue', 'the queue');
    return showQueue(this.ctx, input);
  }
  async node(id: string): Promise<NodeRead> {
    return (await getNode(this.ctx, { id })) as unknown as NodeRead;
  }
  /** The node's lease, if one is live or reserved (operational state, read like the queue shows holders). */
  lease(id: string): LeaseView | null {
    if (!this.has('leases')) return null;
    const live = leasesOf(this.ctx.tenant).live(id, this.services.clock.now());
    return live ? leaseView(live) : null;
  }
  history(id: string, limit = 50) {
    this.need('history', 'history');
    return nodeHistory(this.ctx, { id, limit: String(limit) });
  }
  historyDetail(id: string, sha: string) {
    this.need('history', 'history');
    return historyDetail(this.ctx, { id, sha });
  }
  claim(id: string) {
    this.need('leases', 'leases');
    return claim(this.ctx, { id });
  }
  release(id: string) {
    this.need('leases', 'leases');
    return release(this.ctx, { id });
  }
  setStatus(id: string, status: string) {
    return setStatus(this.ctx, { id, status });
  }
  setPriority(id: string, priority: string) {
    return setPriority(this.ctx, { id, priority });
  }
  setReadiness(id: string, readiness: string) {
    return setReadiness(this.ctx, { id, readiness });
  }
  addEdge(id: string, type: string, to: string) {
    return addEdge(this.ctx, { id, type, to } as Parameters<typeof addEdge>[1]);
  }
  /** A full put with the revision echo: a stale revision comes back as a failed entry carrying the 409. */
  async putNode(node: Record<string, unknown>, revision: string): Promise<PutEntryResult> {
    const answer = await putNodes(this.ctx, { nodes: [{ node, if_exists: 'update', revision }] });
    const payload = answer instanceof StatusPayload ? answer.payload : answer;
    return payload.results[0] as unknown as PutEntryResult;
  }
  async program(id: string, depth?: string): Promise<ProgramPayload> {
    this.need('analytics', 'programs');
    return (await programOp(this.ctx, { id, depth, format: 'json' })) as ProgramPayload;
  }
  programs() {
    return programsOverview(this.ctx.tenant);
  }
  async analytics(input: { project?: string; type?: string; weeks?: string }): Promise<AnalyticsPayload> {
    this.need('analytics', 'analytics');
    return (await analyticsOp(this.ctx, { ...input, format: 'json' })) as AnalyticsPayload;
  }
  neighborhood(id: string, depth: 1 | 2) {
    this.need('capture', 'the graph picture');
    return exploreGraph(this.ctx, { root_id: id, depth }) as Promise<{
      root: { id: string };
      nodes: Array<{ id: string; type: string; status: string; title: string; distance: number; done: boolean }>;
      edges: Array<{ from: string; type: string; to: string }>;
      truncated: boolean;
    }>;
  }
  search(query: string) {
    this.need('capture', 'search');
    return queryGraph(this.ctx, { query, mode: 'digest' }) as Promise<{ found: boolean; text: string; node_ids: string[]; top_sim: number }>;
  }
  lenses() {
    this.need('lenses', 'views');
    return lensCatalog(this.ctx);
  }
  renderLens(id: string, params: Record<string, unknown>) {
    this.need('lenses', 'views');
    return renderLens(this.ctx, { lens_id: id, params });
  }
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
