/**
 * Issue 24, agents: stateful MCP sessions over Streamable HTTP (kernel/mcp-sessions.ts), nodes
 * and the caller's queue as resources, and `resources/subscribe` with
 * `notifications/resources/updated` (kernel/mcp-subscriptions.ts), through a real server and
 * the SDK's own client. Stdio subscriptions are in test/kernel/mcp-stdio.test.ts.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'chai';
import type { EventLog, EventListener, NewEvent, WorkEvent } from '../../kernel/events/types.js';
import { ResourceSubscriptions } from '../../kernel/mcp-subscriptions.js';
import type { OpContext } from '../../kernel/plugin.js';
import { addPerson, putNodes, startTestServer, type TestServer } from '../helpers/harness.js';
import { until } from '../helpers/until.js';

interface Watcher {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** every updated URI, in arrival order, with its arrival time (performance.now()) */
  updates: Array<{ uri: string; at: number }>;
  close(): Promise<void>;
}

const MIN = 60_000;

/** The text of a resources/read answer's first content. */
function textOf(read: { contents: Array<object> }): string {
  const first = read.contents[0];
  const text = first && 'text' in first ? first.text : undefined;
  if (typeof text !== 'string') throw new Error('expected a text resource');
  return text;
}

/** The workgraph_mcp_sessions samples of this server: `${stream}` -> count for its tenant. */
async function sessionGauge(t: TestServer): Promise<Record<string, number>> {
  const text = await t.server.services.metrics.text();
  const out: Record<string, number> = { open: 0, none: 0 };
  for (const m of text.matchAll(/^workgraph_mcp_sessions\{([^}]*)\} (\d+)$/gm)) {
    const labels = m[1] ?? '';
    if (!labels.includes(`tenant="${t.org}"`)) continue;
    const stream = /stream="(\w+)"/.exec(labels)?.[1] ?? '';
    out[stream] = Number(m[2]);
  }
  return out;
}

/**
 * An SDK client in session mode that records resource notifications. Resolves once its GET
 * notification stream is open on the server (the SDK opens it in the background after
 * `initialized`; a notification sent before that has no stream to travel on).
 */
async function watcher(t: TestServer, token: string): Promise<Watcher> {
  const before = (await sessionGauge(t)).open ?? 0;
  const client = new Client({ name: 'watcher', version: '0.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const updates: Watcher['updates'] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push({ uri: n.params.uri, at: performance.now() });
  });
  await client.connect(transport);
  await until(async () => ((await sessionGauge(t)).open ?? 0) > before, 'the notification stream to open');
  return { client, transport, updates, close: () => client.close() };
}

/** Sets frontmatter fields of `id` over REST (PATCH with the current revision); answers the status. */
async function patch(t: TestServer, id: string, set: Record<string, unknown>, token?: string): Promise<number> {
  const read = await t.api('GET', `/v1/nodes/${id}`, { token });
  const res = await t.api('PATCH', `/v1/nodes/${id}`, { token, body: { revision: read.body.revision, set } });
  if (res.status !== 200) throw new Error(`PATCH ${id}: ${res.status} ${res.text}`);
  return res.status;
}

/** A raw JSON-RPC POST to /mcp. */
async function rpc(
  t: TestServer,
  token: string,
  message: Record<string, unknown>,
  headers: Record<string, string> = {},
  method = 'POST',
): Promise<Response> {
  return fetch(`${t.url}/mcp`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      connection: 'close',
      ...headers,
    },
    ...(method === 'POST' ? { body: JSON.stringify({ jsonrpc: '2.0', ...message }) } : {}),
  });
}

const INIT = {
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
};

/** Opens a session by a raw initialize (no GET stream), answering its id. */
async function rawSession(t: TestServer, token: string): Promise<string> {
  const res = await rpc(t, token, INIT);
  expect(res.status, await res.clone().text()).to.equal(200);
  const id = res.headers.get('mcp-session-id');
  expect(id).to.match(/^[0-9a-f-]{36}$/);
  await res.text();
  const ack = await rpc(t, token, { method: 'notifications/initialized' }, { 'mcp-session-id': id! });
  expect(ack.status).to.equal(202);
  return id!;
}

describe('MCP sessions, resources and subscriptions', function () {
  this.timeout(60_000);
  let t: TestServer;
  let other: { id: string; token: string };

  before(async () => {
    t = await startTestServer({ config: { mcpSessionsPerToken: 3 } });
    other = await addPerson(t, 'Ada Lovelace');
    await putNodes(t, [
      { id: 'task-watched', type: 'task', status: 'open', summary: 'watched task', project: 'proj-root' },
      { id: 'task-other', type: 'task', status: 'open', summary: 'another task', project: 'proj-root' },
      { id: 'task-claimable', type: 'task', status: 'open', summary: 'a task someone will claim', project: 'proj-root' },
    ]);
  });
  after(async () => {
    if (t) await t.close();
  });

  it('initialize opens a session; requests without a session id stay stateless; GET without one is 405', async () => {
    const w = await watcher(t, t.adminToken);
    try {
      expect(w.transport.sessionId).to.match(/^[0-9a-f-]{36}$/);
      // the session serves tools as before
      const me = await t.tool(w.client, 'me');
      expect(me.isError).to.equal(false);
      expect(me.json.person).to.equal(t.adminPerson);
      const caps = w.client.getServerCapabilities();
      expect(caps?.resources).to.deep.include({ subscribe: true });
    } finally {
      await w.close();
    }
    // a bare tools/call with no initialize and no session: answered statelessly, no session id
    const res = await rpc(t, t.adminToken, { id: 7, method: 'tools/call', params: { name: 'me', arguments: {} } });
    expect(res.status).to.equal(200);
    expect(res.headers.get('mcp-session-id')).to.equal(null);
    const body = (await res.json()) as { result: { content: Array<{ text: string }> } };
    expect(JSON.parse(body.result.content[0]!.text).person).to.equal(t.adminPerson);
    // subscribing needs a session
    const sub = await rpc(t, t.adminToken, { id: 8, method: 'resources/subscribe', params: { uri: 'workgraph://nodes/task-watched' } });
    const subBody = (await sub.json()) as { error?: { code: number; message: string } };
    expect(subBody.error?.code).to.equal(-32600);
    expect(subBody.error?.message).to.match(/needs a session/);
    const get = await rpc(t, t.adminToken, {}, {}, 'GET');
    expect(get.status).to.equal(405);
    expect(((await get.json()) as { error: { code: string } }).error.code).to.equal('method_not_allowed');
  });

  it('lists the queue resource and the node template, not every node; reads answer what REST answers', async () => {
    const w = await watcher(t, t.adminToken);
    try {
      const listed = await w.client.listResources();
      const uris = listed.resources.map((r) => r.uri);
      expect(uris).to.include('workgraph://queue');
      expect(uris.some((u) => u.startsWith('workgraph://nodes/'))).to.equal(false);
      const templates = await w.client.listResourceTemplates();
      expect(templates.resourceTemplates.map((r) => r.uriTemplate)).to.include('workgraph://nodes/{id}');

      const node = await w.client.readResource({ uri: 'workgraph://nodes/task-watched' });
      const rest = await t.api('GET', '/v1/nodes/task-watched');
      expect(node.contents[0]!.mimeType).to.equal('application/json');
      expect(JSON.parse(textOf(node))).to.deep.equal(rest.body);

      const queue = await w.client.readResource({ uri: 'workgraph://queue' });
      const shown = await t.tool(w.client, 'show_queue');
      const read = JSON.parse(textOf(queue));
      expect(read.items.map((i: { id: string }) => i.id)).to.deep.equal(shown.json.items.map((i: { id: string }) => i.id));

      // a missing node is the MCP specification's resource-not-found error, with the envelope as data
      let failure: (Error & { code?: number; data?: { code?: string } }) | null = null;
      await w.client.readResource({ uri: 'workgraph://nodes/task-nope' }).catch((e: Error) => (failure = e));
      expect(failure).to.not.equal(null);
      expect(failure!.code).to.equal(-32002);
      expect(failure!.data?.code).to.equal('not_found');
    } finally {
      await w.close();
    }
  });

  it("notifies a node's subscriber within 1 s when another client changes it over REST; unsubscribe stops it", async () => {
    const w = await watcher(t, t.adminToken);
    try {
      await w.client.subscribeResource({ uri: 'workgraph://nodes/task-watched' });
      // a change to another node says nothing about this one
      const otherChange = await t.api('POST', '/v1/nodes/task-other/status', { token: other.token, body: { status: 'in-progress' } });
      expect(otherChange.status, otherChange.text).to.equal(200);
      const read = await t.api('GET', '/v1/nodes/task-watched', { token: other.token });
      const sent = performance.now();
      const change = await t.api('PATCH', '/v1/nodes/task-watched', {
        token: other.token,
        body: { revision: read.body.revision, set: { summary: 'changed by Ada' } },
      });
      expect(change.status, change.text).to.equal(200);
      await until(() => w.updates.length > 0, 'notifications/resources/updated', 1000);
      expect(w.updates[0]!.uri).to.equal('workgraph://nodes/task-watched');
      expect(w.updates[0]!.at - sent).to.be.lessThan(1000);
      expect(w.updates.every((u) => u.uri === 'workgraph://nodes/task-watched')).to.equal(true);
      const reread = await w.client.readResource({ uri: 'workgraph://nodes/task-watched' });
      expect(JSON.parse(textOf(reread)).frontmatter.summary).to.equal('changed by Ada');

      // unsubscribed: a later change to it sends nothing, while a subscription made after it
      // (a later event, sent in order on the same stream) still arrives
      await w.client.unsubscribeResource({ uri: 'workgraph://nodes/task-watched' });
      await w.client.subscribeResource({ uri: 'workgraph://nodes/task-other' });
      const seen = w.updates.length;
      await patch(t, 'task-watched', { summary: 'again' }, other.token);
      await patch(t, 'task-other', { summary: 'marker' }, other.token);
      await until(() => w.updates.some((u) => u.uri === 'workgraph://nodes/task-other'), 'the marker notification', 2000);
      expect(w.updates.slice(seen).map((u) => u.uri)).to.deep.equal(['workgraph://nodes/task-other']);
    } finally {
      await w.close();
    }
  });

  it('refuses to subscribe to a node that does not exist or a resource that cannot be watched', async () => {
    const w = await watcher(t, t.adminToken);
    try {
      let failure: (Error & { code?: number }) | null = null;
      await w.client.subscribeResource({ uri: 'workgraph://nodes/task-nope' }).catch((e: Error) => (failure = e));
      expect(failure!.code).to.equal(-32002);
      failure = null;
      await w.client.subscribeResource({ uri: 'ui://workgraph/hello.html' }).catch((e: Error) => (failure = e));
      expect(failure!.code).to.equal(-32602);
    } finally {
      await w.close();
    }
  });

  it('notifies the queue subscriber when another client claims an item', async () => {
    const w = await watcher(t, t.adminToken);
    try {
      await w.client.subscribeResource({ uri: 'workgraph://queue' });
      const sent = performance.now();
      const claim = await t.api('POST', '/v1/nodes/task-claimable/claim', { token: other.token, body: {} });
      expect(claim.status, claim.text).to.equal(200);
      await until(() => w.updates.some((u) => u.uri === 'workgraph://queue'), 'the queue notification', 1000);
      expect(w.updates[0]!.at - sent).to.be.lessThan(1000);
    } finally {
      await w.close();
    }
  });

  it('a session is bound to its token and tenant: any other token gets 404', async () => {
    const id = await rawSession(t, t.adminToken);
    const list = { id: 2, method: 'tools/list' };
    expect((await rpc(t, t.adminToken, list, { 'mcp-session-id': id })).status).to.equal(200);
    const stranger = await rpc(t, other.token, list, { 'mcp-session-id': id });
    expect(stranger.status).to.equal(404);
    expect(((await stranger.json()) as { error: { code: string } }).error.code).to.equal('not_found');
    const foreign = await t.server.services.tenants.create({
      org: 'elsewhere',
      adminName: 'E',
      adminEmail: 'e@elsewhere.test',
      plugins: ['core'],
    });
    // the new tenant's token works once the server has opened the tenant
    await until(async () => (await t.api('GET', '/v1/me', { token: foreign.token })).status === 200, 'the new tenant to open');
    expect((await rpc(t, foreign.token, list, { 'mcp-session-id': id })).status).to.equal(404);
    // the owner's session is untouched by the attempts
    expect((await rpc(t, t.adminToken, list, { 'mcp-session-id': id })).status).to.equal(200);
    // and an unknown id is the same 404
    expect((await rpc(t, t.adminToken, list, { 'mcp-session-id': '00000000-0000-4000-8000-000000000000' })).status).to.equal(404);
    expect((await rpc(t, t.adminToken, {}, { 'mcp-session-id': id }, 'DELETE')).status).to.equal(200);
  });

  it('DELETE ends a session; an idle session expires; an open stream keeps its session', async () => {
    const ended = await rawSession(t, other.token);
    expect((await rpc(t, other.token, {}, { 'mcp-session-id': ended }, 'DELETE')).status).to.equal(200);
    expect((await rpc(t, other.token, { id: 3, method: 'tools/list' }, { 'mcp-session-id': ended })).status).to.equal(404);

    const idle = await rawSession(t, other.token);
    const w = await watcher(t, other.token);
    try {
      t.clock.advance(31 * MIN);
      expect((await rpc(t, other.token, { id: 4, method: 'tools/list' }, { 'mcp-session-id': idle })).status).to.equal(404);
      // the watcher's GET stream was open all along: its session lives and still notifies
      await w.client.subscribeResource({ uri: 'workgraph://nodes/task-other' });
      await patch(t, 'task-other', { summary: 'after the idle period' });
      await until(() => w.updates.length > 0, 'a notification after the idle period', 2000);
    } finally {
      await w.close();
    }
  });

  it('a revoked token hears nothing more: its session ends at the next event, its requests are 401', async () => {
    const minted = await t.api('POST', '/v1/me/tokens', { token: other.token, body: { label: 'watcher' } });
    expect(minted.status, minted.text).to.equal(201);
    const w = await watcher(t, minted.body.token);
    try {
      await w.client.subscribeResource({ uri: 'workgraph://nodes/task-watched' });
      const before = await sessionGauge(t);
      const revoked = await t.api('DELETE', `/v1/me/tokens/${minted.body.hash_prefix}`, { token: other.token });
      expect(revoked.status, revoked.text).to.equal(200);
      await patch(t, 'task-watched', { summary: 'after the revocation' });
      // the event ended the session (its stream closed) instead of notifying it
      await until(async () => ((await sessionGauge(t)).open ?? 0) < (before.open ?? 0), 'the revoked session to end');
      expect(w.updates).to.deep.equal([]);
      const res = await rpc(t, minted.body.token, { id: 9, method: 'tools/list' }, { 'mcp-session-id': w.transport.sessionId! });
      expect(res.status).to.equal(401);
    } finally {
      await w.close();
    }
  });

  it('sessions per token are bounded: an abandoned one gives way, live streams get 429', async () => {
    const person = await addPerson(t, 'Bounded Bob');
    const abandoned = await rawSession(t, person.token);
    const live: Watcher[] = [];
    try {
      for (let i = 0; i < 3; i++) live.push(await watcher(t, person.token));
      // the fourth session made room by ending the one without a stream
      expect((await rpc(t, person.token, { id: 5, method: 'tools/list' }, { 'mcp-session-id': abandoned })).status).to.equal(404);
      const refused = await rpc(t, person.token, INIT);
      expect(refused.status).to.equal(429);
      expect(((await refused.json()) as { error: { code: string } }).error.code).to.equal('too_many_sessions');
      // another token is not affected by this one's sessions
      const mine = await rawSession(t, t.adminToken);
      expect((await rpc(t, t.adminToken, {}, { 'mcp-session-id': mine }, 'DELETE')).status).to.equal(200);
      // a client that closes its stream frees its place
      await live.shift()!.close();
      await until(async () => (await rpc(t, person.token, INIT)).status === 200, 'a place after a client closed');
    } finally {
      for (const w of live) await w.close();
    }
  });
});

/** A minimal in-memory EventLog: only what ResourceSubscriptions uses (subscribe), to time the coalescing exactly. */
class MemoryLog implements EventLog {
  private listeners = new Set<EventListener>();
  private next = 1;
  lastId = 0;
  firstId = 1;
  async read(): Promise<WorkEvent[]> {
    return [];
  }
  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  async emit(event: NewEvent): Promise<WorkEvent> {
    const full: WorkEvent = { ...event, id: this.next++, org: 'local', time: new Date().toISOString() };
    this.lastId = full.id;
    for (const l of this.listeners) l(full);
    return full;
  }
  get listening(): number {
    return this.listeners.size;
  }
}

describe('ResourceSubscriptions coalescing', () => {
  const event = (nodes: string[], audience?: 'admins'): NewEvent => ({
    type: 'node.updated',
    actor: null,
    nodes,
    project: null,
    payload: {},
    ...(audience ? { audience } : {}),
  });

  it('sends the first change at once and at most one more per 100 ms window; admin events are not for members', async () => {
    const log = new MemoryLog();
    const actor = { isAdmin: false };
    const ctx = { tenant: { events: log }, actor } as unknown as OpContext;
    const sent: Array<{ uri: string; at: number }> = [];
    const subs = new ResourceSubscriptions({
      context: () => ctx,
      resolve: (uri) => ({
        read: async () => '{}',
        mimeType: 'application/json',
        affectedBy: (e) => e.nodes.includes(uri.slice('workgraph://nodes/'.length)),
      }),
      notify: async (uri) => {
        sent.push({ uri, at: performance.now() });
      },
    });
    await subs.subscribe('workgraph://nodes/task-a');
    expect(log.listening).to.equal(1);
    const start = performance.now();
    for (let i = 0; i < 50; i++) await log.emit(event(['task-a']));
    await log.emit(event(['task-b']));
    await log.emit(event(['task-a'], 'admins'));
    expect(sent.length).to.equal(1); // the leading edge, synchronously
    await until(() => sent.length === 2, 'the trailing notification', 1000);
    expect(sent[1]!.at - sent[0]!.at).to.be.at.least(95);
    expect(sent[0]!.at - start).to.be.lessThan(50);
    // nothing more is scheduled: the burst was one leading and one trailing notification
    expect(subs.pending).to.equal(0);
    subs.unsubscribe('workgraph://nodes/task-a');
    expect(log.listening).to.equal(0);
    await log.emit(event(['task-a']));
    expect(sent.length).to.equal(2);
    subs.close();
  });
});
