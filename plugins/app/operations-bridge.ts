/**
 * The one place the app reaches the other plugins' operations: the same core functions the
 * REST routes and MCP tools call, with an OpContext built for the signed-in person. When the
 * way operations are declared changes (issue 13), this file is the one to adapt.
 *
 * A page that needs a plugin the tenant has disabled gets a 404, like the REST route would.
 */
import type { Actor } from '../../kernel/actor.js';
import { errors } from '../../kernel/errors.js';
import { invoke, type Answer, type OperationDef } from '../../kernel/operation.js';
import { RawResponse, StatusPayload, type KernelServices, type OpContext } from '../../kernel/plugin.js';
import type { Tenant } from '../../kernel/tenant.js';
import * as analyticsApi from '../analytics/api.js';
import * as captureApi from '../capture/api.js';
import * as commentsApi from '../comments/api.js';
import * as coreApi from '../core/api.js';
import * as eventsApi from '../events/api.js';
import * as githubApi from '../github/api.js';
import * as historyApi from '../history/api.js';
import * as identityApi from '../identity/api.js';
import * as inboxApi from '../inbox/api.js';
import * as leasesApi from '../leases/api.js';
import { leasesOf, leaseView } from '../leases/public.js';
import * as lensesApi from '../lenses/api.js';
import { COOKIE_NAME as TICKET_COOKIE, ticketAuthenticator, verifyTicket } from '../lenses/public.js';
import * as queueApi from '../queue/api.js';
import * as webhooksApi from '../webhooks/api.js';

/** An operation as the bridge calls it: any input, any answer (its own types flow through `AnswerOf`). */
type AnyOperation = OperationDef<never, unknown>;
/** The JSON inside an answer: the answer itself, or the payload of a `StatusPayload`. */
type JsonOf<A> = Exclude<A, RawResponse | StatusPayload<unknown>> | (A extends StatusPayload<infer P> ? P : never);
/** An operation whose `run` declares only a raw answer (JSON bytes, not yet typed from its schema) answers an open object. */
type OrOpen<T> = [T] extends [never] ? Record<string, unknown> : T;
/** The JSON answer an operation declares: `O` of the `Answer<O>` its `run` resolves to. */
export type AnswerOf<Op extends AnyOperation> = Awaited<ReturnType<Op['run']>> extends Answer<infer O> ? OrOpen<JsonOf<O>> : never;
/** The input an operation's schema admits. */
type InputOf<Op extends AnyOperation> = Parameters<Op['run']>[1];

/**
 * The JSON answer of an operation, whatever form `run` resolved to: the payload of a
 * `StatusPayload` (a 207), or the parsed body of a JSON `RawResponse` (the node read answers
 * its cached bytes). A page needs the object; a raw answer that is not JSON (a stream, text)
 * is a programming error here, not something to render.
 */
async function call<Op extends AnyOperation>(op: Op, ctx: OpContext, input: InputOf<Op>): Promise<AnswerOf<Op>> {
  const answer: unknown = await invoke(op, ctx, input);
  if (answer instanceof StatusPayload) return answer.payload as AnswerOf<Op>;
  if (answer instanceof RawResponse) {
    if (!/json/.test(answer.headers['content-type'] ?? '') || typeof answer.body !== 'string')
      throw new Error(`operation ${op.name} answered a non-JSON response`);
    // the body is the operation's own JSON answer (the contract tests check it against its output schema)
    return JSON.parse(answer.body) as AnswerOf<Op>;
  }
  return answer as AnswerOf<Op>;
}

/**
 * The operations of one signed-in person in one tenant. Each method is named after the
 * operation it calls and answers that operation's declared answer type.
 */
export class Bridge {
  readonly ctx: OpContext;

  constructor(
    readonly services: KernelServices,
    tenant: Tenant,
    actor: Actor,
  ) {
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
    return call(coreApi.me, this.ctx, {});
  }
  getOrgChoices() {
    return call(coreApi.getOrgChoices, this.ctx, {});
  }
  showQueue(input: InputOf<typeof queueApi.showQueue>) {
    this.need('queue', 'the queue');
    return call(queueApi.showQueue, this.ctx, dropUndefined(input));
  }
  getNode(id: string) {
    return call(coreApi.getNode, this.ctx, { id });
  }
  /**
   * The people of the tenant by name, for pickers. list_people is an admin operation (it
   * carries token counts); names are graph reads any member may make, so they come from the
   * person nodes of the index, as the board's assignee filter reads them.
   */
  people(): Array<{ id: string; name: string }> {
    const index = this.ctx.tenant.index;
    return [...index.idsOfType('person')]
      .map((id) => {
        const r = index.get(id);
        return { id, name: String(r?.frontmatter.name ?? r?.title ?? id) };
      })
      .sort((a, b) => a.name.localeCompare(b.name));
  }
  /** A new node: put_node with if_exists error (an existing id is a 409, never an overwrite). */
  createNode(node: Record<string, unknown>) {
    return call(coreApi.putNode, this.ctx, { nodes: [{ node, if_exists: 'error' }] });
  }
  /** Named fields only, with the revision echo (the node page's title, summary and fields form). */
  patchNode(input: InputOf<typeof coreApi.patchNode>) {
    return call(coreApi.patchNode, this.ctx, dropUndefined(input));
  }
  removeEdge(id: string, type: string, to: string) {
    return call(coreApi.removeEdge, this.ctx, { id, type, to });
  }
  /** The node's lease, if one is live or reserved (operational state, read like the queue shows holders; not an operation). */
  lease(id: string) {
    if (!this.has('leases')) return null;
    const live = leasesOf(this.ctx.tenant).live(id, this.services.clock.now());
    return live ? leaseView(live) : null;
  }
  getNodeHistory(id: string, limit = 50) {
    this.need('history', 'history');
    return call(historyApi.getNodeHistory, this.ctx, { id, limit });
  }
  getHistoryEntry(id: string, sha: string) {
    this.need('history', 'history');
    return call(historyApi.getHistoryEntry, this.ctx, { id, sha });
  }
  claimNode(id: string) {
    this.need('leases', 'leases');
    return call(leasesApi.claimNode, this.ctx, { id });
  }
  releaseNode(id: string) {
    this.need('leases', 'leases');
    return call(leasesApi.releaseNode, this.ctx, { id });
  }
  /** With `revision` (the board's move), a stale view is 409 conflict instead of a move over someone else's change. */
  setStatus(id: string, status: string, revision?: string) {
    return call(coreApi.setStatus, this.ctx, dropUndefined({ id, status, revision }));
  }
  setPriority(id: string, priority: string) {
    return call(coreApi.setPriority, this.ctx, { id, priority });
  }
  setReadiness(id: string, readiness: string) {
    return call(coreApi.setReadiness, this.ctx, { id, readiness });
  }
  addEdge(id: string, type: string, to: string) {
    return call(coreApi.addEdge, this.ctx, { id, type, to });
  }
  /** A full put with the revision echo: a stale revision comes back as a failed entry carrying the 409 (a 207 answer). */
  putNode(node: Record<string, unknown>, revision: string) {
    return call(coreApi.putNode, this.ctx, { nodes: [{ node, if_exists: 'update', revision }] });
  }
  getProgram(id: string, depth?: string) {
    this.need('analytics', 'programs');
    return call(analyticsApi.getProgram, this.ctx, dropUndefined({ id, depth, format: 'json' as const }));
  }
  analytics(input: { project?: string; type?: string; weeks?: string }) {
    this.need('analytics', 'analytics');
    return call(analyticsApi.analytics, this.ctx, dropUndefined({ ...input, format: 'json' as const }));
  }
  exploreGraph(input: InputOf<typeof captureApi.exploreGraph>) {
    this.need('capture', 'the graph pictures');
    return call(captureApi.exploreGraph, this.ctx, input);
  }
  queryGraph(query: string) {
    this.need('capture', 'search');
    return call(captureApi.queryGraph, this.ctx, { query, mode: 'digest' });
  }
  /**
   * The event stream of GET /v1/events for this person: the same operation, asked for
   * `text/event-stream`, with the reconnect's Last-Event-ID. Answers the stream response.
   */
  async openEventStream(input: InputOf<typeof eventsApi.getEvents>, lastEventId: string | undefined): Promise<RawResponse> {
    this.need('events', 'the event stream');
    const ctx: OpContext = {
      ...this.ctx,
      headers: { accept: 'text/event-stream', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
    };
    const answer: unknown = await invoke(eventsApi.getEvents, ctx, dropUndefined(input));
    if (!(answer instanceof RawResponse) || !answer.readable) throw new Error('get_events answered no stream');
    return answer;
  }
  showInbox(input: InputOf<typeof inboxApi.showInbox>) {
    this.need('inbox', 'the inbox');
    return call(inboxApi.showInbox, this.ctx, dropUndefined(input));
  }
  markInboxRead(input: InputOf<typeof inboxApi.markInboxRead>) {
    this.need('inbox', 'the inbox');
    return call(inboxApi.markInboxRead, this.ctx, dropUndefined(input));
  }
  /** The header's unread count: absent when the tenant has no inbox or the identity no person. */
  async unreadCount(): Promise<number | undefined> {
    if (!this.has('inbox') || !this.ctx.actor.bound) return undefined;
    return (await call(inboxApi.showInbox, this.ctx, { limit: 1 })).unread_count;
  }
  listComments(id: string, limit: number) {
    this.need('comments', 'comments');
    return call(commentsApi.listComments, this.ctx, { id, limit });
  }
  addComment(id: string, body: string) {
    this.need('comments', 'comments');
    return call(commentsApi.addComment, this.ctx, { id, body });
  }
  editComment(id: string, body: string, revision?: string) {
    this.need('comments', 'comments');
    return call(commentsApi.editComment, this.ctx, revision ? { id, body, revision } : { id, body });
  }
  deleteComment(id: string) {
    this.need('comments', 'comments');
    return call(commentsApi.deleteComment, this.ctx, { id });
  }
  /** The registry as GET /v1/schema answers it; `code` embeds the hook sources (the schema pages; the create form's type chooser without). */
  schema(code = false) {
    return call(coreApi.schema, this.ctx, code ? { code } : {});
  }
  /** A schema's hooks run against nodes in the sandbox, nothing written (the proposal page and the hook editor). */
  dryRunSchema(input: InputOf<typeof coreApi.dryRunSchema>) {
    return call(coreApi.dryRunSchema, this.ctx, dropUndefined(input));
  }
  /** The hook editor's save: a new schema node (`revision` null: 409 if the id exists) or a change with the revision echo. */
  proposeSchema(markdown: string, revision: string | null) {
    const entry =
      revision === null ? { node: markdown, if_exists: 'error' as const } : { node: markdown, if_exists: 'update' as const, revision };
    return call(coreApi.putNode, this.ctx, { nodes: [entry] });
  }
  // ---- the operator console (pages/admin/): the admin operations, each gated by its own 403
  listTenantPlugins() {
    return call(coreApi.listTenantPlugins, this.ctx, {});
  }
  setTenantPlugin(name: string, enabled: boolean, confirm: boolean) {
    return call(coreApi.setTenantPlugin, this.ctx, { name, enabled, confirm });
  }
  listPeople() {
    this.need('identity', 'people');
    return call(identityApi.listPeople, this.ctx, {});
  }
  createPerson(input: { name: string; email: string; roles?: string[] }) {
    this.need('identity', 'people');
    return call(identityApi.createPerson, this.ctx, dropUndefined(input));
  }
  grantAdmin(id: string) {
    this.need('identity', 'people');
    return call(identityApi.grantAdmin, this.ctx, { id });
  }
  revokeAdmin(id: string) {
    this.need('identity', 'people');
    return call(identityApi.revokeAdmin, this.ctx, { id });
  }
  offboardPerson(id: string) {
    this.need('identity', 'people');
    return call(identityApi.offboardPerson, this.ctx, { id });
  }
  invitePerson(id: string, expiresInHours?: number) {
    this.need('identity', 'people');
    return call(identityApi.invitePerson, this.ctx, dropUndefined({ id, expires_in_hours: expiresInHours }));
  }
  listTeamTokens() {
    this.need('identity', 'tokens');
    return call(identityApi.listTeamTokens, this.ctx, {});
  }
  adminMintToken(input: { person: string; expires?: string; label?: string }) {
    this.need('identity', 'tokens');
    return call(identityApi.adminMintToken, this.ctx, dropUndefined(input));
  }
  adminRevokeToken(prefix: string) {
    this.need('identity', 'tokens');
    return call(identityApi.adminRevokeToken, this.ctx, { prefix });
  }
  listAllAgents() {
    this.need('identity', 'agents');
    return call(identityApi.listAgents, this.ctx, { all: true });
  }
  readCapabilities(id: string) {
    this.need('identity', 'agents');
    return call(identityApi.readCapabilities, this.ctx, { id });
  }
  auditIdentity(flagged: boolean) {
    this.need('identity', 'the identity audit');
    return call(identityApi.auditIdentity, this.ctx, { flagged });
  }
  listGithubLinks() {
    this.need('github', 'GitHub links');
    return call(githubApi.listGithubLinks, this.ctx, {});
  }
  setGithubLinkEnabled(id: string, enabled: boolean) {
    this.need('github', 'GitHub links');
    return call(githubApi.updateGithubLink, this.ctx, { id, enabled });
  }
  listWebhooks() {
    this.need('webhooks', 'webhooks');
    return call(webhooksApi.listWebhooks, this.ctx, {});
  }
  createWebhook(input: InputOf<typeof webhooksApi.createWebhook>) {
    this.need('webhooks', 'webhooks');
    return call(webhooksApi.createWebhook, this.ctx, dropUndefined(input));
  }
  setWebhookEnabled(id: string, enabled: boolean) {
    this.need('webhooks', 'webhooks');
    return call(webhooksApi.updateWebhook, this.ctx, { id, enabled });
  }
  deleteWebhook(id: string) {
    this.need('webhooks', 'webhooks');
    return call(webhooksApi.deleteWebhook, this.ctx, { id });
  }
  pingWebhook(id: string) {
    this.need('webhooks', 'webhooks');
    return call(webhooksApi.pingWebhook, this.ctx, { id });
  }
  listWebhookDeliveries(id: string) {
    this.need('webhooks', 'webhooks');
    return call(webhooksApi.listWebhookDeliveries, this.ctx, { id, limit: 100 });
  }
  listLenses() {
    this.need('lenses', 'views');
    return call(lensesApi.listLenses, this.ctx, {});
  }
  renderLens(id: string, params: Record<string, string>) {
    this.need('lenses', 'views');
    return call(lensesApi.renderLens, this.ctx, { lens_id: id, params });
  }
}

/** Optional inputs the app leaves unset are absent, as in a request that does not send them. */
function dropUndefined<T extends object>(input: T): T {
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as T;
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
  const found = await ticketAuthenticator(services)({
    params: {},
    query: {},
    body: undefined,
    headers: { cookie: `${TICKET_COOKIE}=${blob}` },
    path: `/v1/lens/${lensId}/render`,
  });
  return found ? new Bridge(services, found.tenant, found.actor) : null;
}

export { TICKET_COOKIE };
/** the comments plugin's `@mention` pattern, so the node page links exactly the handles it resolved */
export { mentionPattern } from '../comments/public.js';
