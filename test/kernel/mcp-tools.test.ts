/**
 * The tool surface as a client sees it (docs/decisions.md, "tools"): tools/list within 20 KB for
 * the full set, toolsets, instructions that name no REST-only route, an over-limit request as
 * a tool error, and the new tool twins answering the same bytes as their REST routes (the
 * webhooks and inbox twins: test/plugins/webhooks/mcp.test.ts, test/plugins/inbox/mcp.test.ts).
 */
import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { addPerson, md, putNodes, startTestServer, type TestServer } from '../helpers/harness.js';
import { corePlugin } from '../../plugins/core/index.js';
import { leasesPlugin } from '../../plugins/leases/index.js';

/** what a member or an agent is shown: every tool it may call */
const LIST_BUDGET = 20 * 1024;
/** an admin's list adds the admin-only tools (people, tokens, webhooks, plugins) */
const ADMIN_LIST_BUDGET = 28 * 1024;

async function connect(t: TestServer, query: string, token = t.adminToken): Promise<Client> {
  const client = new Client({ name: 'test', version: '0.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${t.url}/mcp${query}`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  return client;
}

describe('MCP tool surface', function () {
  let t: TestServer;
  let client: Client;
  before(async () => {
    t = await startTestServer();
    client = await t.mcp();
    await putNodes(t, [
      { id: 'task-alpha', type: 'task', summary: 'Alpha' },
      { id: 'task-beta', type: 'task', summary: 'Beta' },
      { id: 'task-gamma', type: 'task', summary: 'Gamma' },
    ]);
  });
  after(async () => t.close());

  it("tools/list: a member's and an agent's full set at most 20 KB without the admin-only tools; an admin's at most 28 KB", async () => {
    const member = await addPerson(t, 'Budget Member');
    const agent = await t.tool(client, 'create_agent', { label: 'Budget Agent' });
    const minted = await t.tool(client, 'mint_agent_token', { id: agent.json.id, standing: true, label: 'budget' });
    expect(minted.isError, minted.text).to.equal(false);
    let agentNames: string[] = [];
    const adminOnly = ['create_webhook', 'list_webhooks', 'grant_admin', 'revoke_admin', 'audit_identity'];
    for (const [who, token] of [
      ['member', member.token],
      ['agent', minted.json.token as string],
    ] as const) {
      const c = await connect(t, '', token);
      const listed = (await c.listTools()).tools;
      if (who === 'agent') agentNames = listed.map((x) => x.name);
      const size = Buffer.byteLength(JSON.stringify({ tools: listed }));
      if (process.env.WG_PRINT_SIZES) console.log(`tools/list (${who}): ${size} bytes for ${listed.length} tools`);
      expect(size, `${who}: tools/list is ${size} bytes`).to.be.at.most(LIST_BUDGET);
      const names = listed.map((x) => x.name);
      for (const name of adminOnly) expect(names, `${who} is not shown ${name}`).to.not.include(name);
      expect(names).to.include.members(['get_node', 'put_node', 'claim', 'wait_for_events']);
      // not listed is not unreachable: the call gets the operation's own 403
      const refused = await c.callTool({ name: 'list_webhooks', arguments: {} });
      expect(refused.isError, who).to.equal(true);
      expect(JSON.parse((refused.content as Array<{ text: string }>)[0]!.text).error.code, who).to.equal('forbidden');
      await c.close();
    }
    const { tools } = await client.listTools();
    const bytes = Buffer.byteLength(JSON.stringify({ tools }));
    if (process.env.WG_PRINT_SIZES) console.log(`tools/list (admin): ${bytes} bytes for ${tools.length} tools`);
    expect(bytes, `tools/list is ${bytes} bytes`).to.be.at.most(ADMIN_LIST_BUDGET);
    for (const name of adminOnly) expect(tools.map((x) => x.name)).to.include(name);
    const names = tools.map((x) => x.name);
    for (const name of [
      'set_readiness',
      'me',
      'add_edges',
      'remove_edges',
      'set_priorities',
      'answer_question',
      'list_work',
      'claim_step',
      'complete_step',
      'get_run',
      'create_agent',
      'mint_agent_token',
      'list_agents',
      'wait_for_events',
      'create_webhook',
      'list_webhooks',
      'get_webhook',
      'update_webhook',
      'delete_webhook',
      'ping_webhook',
      'list_webhook_deliveries',
      'redeliver_webhook',
      'show_inbox',
      'mark_inbox_read',
    ]) {
      expect(names, name).to.include(name);
    }
    // a per-session agent token's own tool: an admin's PAT or a standing agent token could only get 403 from it
    expect(names).to.not.include('bind_session');
    expect(agentNames).to.not.include('bind_session');
    expect(agentNames).to.include('claim');
    for (const tool of tools) {
      expect(tool.description, tool.name).to.be.a('string').and.have.length.above(15);
      expect(JSON.stringify(tool.inputSchema), tool.name).to.not.include('"pattern"');
    }
    // the rules an agent trips on are in the tool text
    const put = tools.find((x) => x.name === 'put_node')!.description!;
    for (const needle of ['500', '8192', 'edges: [{type, to', 'author', 'revision', '409']) expect(put, needle).to.include(needle);
    // the listing form leaves out the bounds every id, name and list has (the instructions state them once) and keeps the others
    const listed = JSON.stringify(tools.map((x) => x.inputSchema));
    expect(listed).to.not.match(/"maxLength":(100|200|255|300)\b/);
    expect(listed).to.not.include('"minItems":1,');
    const url = (tools.find((x) => x.name === 'create_webhook')!.inputSchema.properties as Record<string, { maxLength?: number }>).url;
    expect(url.maxLength).to.equal(2048);
    expect(client.getInstructions()).to.include('at most 200 characters');
  });

  it('a bound the listing leaves out is still enforced: the 422 names the field and its limit, as over REST', async () => {
    const long = `task-${'x'.repeat(200)}`;
    const tool = await t.tool(client, 'get_node', { id: long });
    expect(tool.isError).to.equal(true);
    expect(tool.json.error.code).to.equal('validation_failed');
    expect(tool.text).to.include('200');
    const empty = await t.tool(client, 'add_edges', { items: [] });
    expect(empty.json.error.code).to.equal('validation_failed');
    expect((await t.api('POST', '/v1/edges', { body: { items: [] } })).text).to.equal(empty.text);
  });

  it("toolsets: ?toolsets=core,leases lists those plugins' tools and instructions; an unknown name is 400 naming the nearest", async () => {
    const subset = await connect(t, '?toolsets=core,leases');
    const names = (await subset.listTools()).tools.map((x) => x.name);
    expect(names).to.include.members(['get_node', 'put_node', 'claim', 'release']);
    expect(names).to.not.include('show_queue');
    expect(names).to.not.include('run_workflow');
    expect(names).to.not.include('create_webhook');
    const inbox = await connect(t, '?toolsets=inbox,webhooks');
    const inboxNames = (await inbox.listTools()).tools.map((x) => x.name);
    expect(inboxNames).to.include.members(['show_inbox', 'mark_inbox_read', 'create_webhook', 'redeliver_webhook']);
    expect(inboxNames).to.not.include('get_node');
    expect(inbox.getInstructions()).to.include('create_webhook').and.not.include('show_queue');
    await inbox.close();
    expect(subset.getInstructions()).to.include('claim').and.not.include('show_queue');
    const all = await connect(t, '?toolsets=all');
    expect((await all.listTools()).tools.length).to.equal((await client.listTools()).tools.length);
    await subset.close();
    await all.close();
    const res = await fetch(`${t.url}/mcp?toolsets=core,leeses`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.adminToken}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(res.status).to.equal(400);
    const body = await res.json();
    expect(body.error.code).to.equal('bad_request');
    expect(body.error.message).to.include("did you mean 'leases'").and.include('allowed: all, core');
  });

  it('instructions name no REST route and say how a lead gets an agent a token', async () => {
    const text = client.getInstructions()!;
    expect(text).to.not.match(/\/v1\//);
    expect(text).to.not.match(/\b(GET|POST|DELETE|PUT|PATCH) \//);
    for (const needle of [
      'create_agent',
      'mint_agent_token',
      'list_work',
      'claim_step',
      'complete_step',
      'answer_question',
      'set_readiness',
      'edges:',
    ])
      expect(text, needle).to.include(needle);
  });

  it('a request over 1 MB is a tool error with the 413 envelope, not a transport failure', async () => {
    const huge = 'x'.repeat(1024 * 1024 + 10);
    const res = await t.tool(client, 'put_node', { nodes: [md({ id: 'task-huge', summary: 'Huge' }, huge)] });
    expect(res.isError).to.equal(true);
    expect(res.json.error).to.include({ code: 'too_large' });
    expect(res.json.error.details).to.deep.equal({ limit_bytes: 1024 * 1024 });
    // the connection is still usable, and nothing was written
    expect((await t.tool(client, 'get_node', { id: 'task-huge' })).json.error.code).to.equal('not_found');
    // another method than tools/call: a JSON-RPC error carrying the envelope
    const raw = await fetch(`${t.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.adminToken}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'resources/read', params: { uri: huge }, id: 'r-7' }),
    });
    expect(raw.status).to.equal(200);
    const rpc = await raw.json();
    expect(rpc).to.include({ jsonrpc: '2.0', id: 'r-7' });
    expect(rpc.error.data.error.code).to.equal('too_large');
  });

  it('lean answers: show_queue without the policy unless include_policy, the same bytes as REST for the same flag', async () => {
    const lean = await t.tool(client, 'show_queue', {});
    expect(lean.json).to.not.have.property('policy');
    const rest = await t.api('GET', '/v1/queue');
    expect(rest.body).to.have.property('policy');
    const strip = (s: string) => s.replace(/"generated_at":"[^"]+"/, '');
    for (const flag of [true, false]) {
      const r = await t.api('GET', `/v1/queue?include_policy=${flag}`);
      const tl = await t.tool(client, 'show_queue', { include_policy: flag });
      expect(strip(tl.text)).to.equal(strip(r.text));
      expect('policy' in tl.json).to.equal(flag);
    }
    expect(lean.text.length).to.be.below(rest.text.length - 300);
  });

  it('set_readiness and me: the same bytes as their REST routes', async () => {
    const me = await t.tool(client, 'me', {});
    expect(me.text).to.equal((await t.api('GET', '/v1/me')).text);
    await putNodes(t, [
      { id: 'task-ready-rest', type: 'task', summary: 'R' },
      { id: 'task-ready-tool', type: 'task', summary: 'R' },
    ]);
    const norm = (s: string) => s.replace(/task-ready-(rest|tool)/g, 'ID').replace(/"revision":"[0-9a-f]{40}"/g, '"revision":"R"');
    for (const readiness of ['agent', 'human', null]) {
      const rest = await t.api('POST', '/v1/nodes/task-ready-rest/readiness', { body: { readiness } });
      const tool = await t.tool(client, 'set_readiness', { id: 'task-ready-tool', readiness });
      expect(norm(tool.text)).to.equal(norm(rest.text));
      expect(tool.isError).to.equal(rest.status >= 400);
    }
  });

  it('add_edges, remove_edges, set_priorities: per-item results like the batch claim, the same bytes as REST', async () => {
    const items = [
      { id: 'task-alpha', type: 'blocks', to: 'task-beta' },
      { id: 'task-alpha', type: 'depends_on', to: 'task-gamma' },
      { id: 'task-nope', type: 'blocks', to: 'task-beta' },
    ];
    const tool = await t.tool(client, 'add_edges', { items });
    expect(tool.isError).to.equal(false);
    expect(tool.json).to.include({ ok: false, status: 'partial', count: 1 });
    expect(tool.json.failed.map((f: { index: number; code: string }) => [f.index, f.code])).to.deep.equal([
      [1, 'validation_failed'],
      [2, 'not_found'],
    ]);
    expect(tool.json.failed[0].message).to.include("did you mean 'depends-on'");
    // REST on the same state: the first item is now a skip, the failures the same
    const rest = await t.api('POST', '/v1/edges', { body: { items } });
    expect(rest.status).to.equal(207);
    const again = await t.tool(client, 'add_edges', { items });
    const norm = (s: string) => s.replace(/"revision":"[0-9a-f]{40}"/g, '"revision":"R"');
    expect(norm(again.text)).to.equal(norm(rest.text));
    const removed = await t.tool(client, 'remove_edges', { items: [items[0]] });
    expect(removed.json).to.include({ ok: true, status: 'applied' });
    expect(removed.json.results[0].status).to.equal('updated');
    const restRemove = await t.api('DELETE', '/v1/edges', { body: { items: [items[0]] } });
    expect(restRemove.status).to.equal(200);
    expect(restRemove.body.results[0].status).to.equal('skipped');
    // every item failing: 207 over REST, an error result for the tool
    const bad = await t.tool(client, 'set_priorities', { items: [{ id: 'task-alpha', priority: 'urgent' }] });
    expect(bad.isError).to.equal(true);
    expect(bad.json.status).to.equal('refused');
    expect(bad.json.failed[0].message).to.include('p1').and.include('p3');
    const badRest = await t.api('POST', '/v1/priorities', { body: { items: [{ id: 'task-alpha', priority: 'urgent' }] } });
    expect(badRest.status).to.equal(207);
    expect(badRest.text).to.equal(bad.text);
    const good = await t.tool(client, 'set_priorities', {
      items: [
        { id: 'task-alpha', priority: 'p1' },
        { id: 'task-beta', priority: null },
      ],
    });
    expect(good.json).to.include({ ok: true, status: 'applied', count: 2 });
    expect((await t.api('GET', '/v1/nodes/task-alpha')).body.frontmatter.priority).to.equal('p1');
    // the batch is bounded
    const tooMany = await t.tool(client, 'add_edges', { items: Array.from({ length: 101 }, () => items[0]) });
    expect(tooMany.json.error.code).to.equal('validation_failed');
  });

  it('answer_question: the answer node, its answers edge and the question answered, in one commit; REST the same bytes', async () => {
    const bob = await addPerson(t, 'Bob Asker');
    const ask = async (text: string) => (await t.api('POST', '/v1/questions', { token: bob.token, body: { text } })).body.id as string;
    const q1 = await ask('Which database for the ledger?');
    const q2 = await ask('Which queue for the ledger?');
    const headBefore = t.server.services.tenants.get(t.org)!.head;
    const tool = await t.tool(client, 'answer_question', { id: q1, summary: 'PostgreSQL.', body: 'We run it already.' });
    expect(tool.isError, tool.text).to.equal(false);
    expect(tool.json).to.include({ status: 'created', question: q1, question_status: 'answered' });
    // one commit: the answer's only version is the question's newest one
    const answerLog = (await t.tool(client, 'node_history', { id: tool.json.id })).json.history;
    const questionLog = (await t.tool(client, 'node_history', { id: q1 })).json.history;
    expect(answerLog).to.have.length(1);
    expect(questionLog[0].sha).to.equal(answerLog[0].sha);
    expect(questionLog[1].sha).to.not.equal(answerLog[0].sha);
    expect(t.server.services.tenants.get(t.org)!.head).to.not.equal(headBefore);
    const answerNode = (await t.tool(client, 'get_node', { id: tool.json.id })).json;
    expect(answerNode.frontmatter.edges).to.deep.equal([{ type: 'answers', to: q1 }]);
    expect(answerNode.frontmatter.type).to.equal('dec');
    const rest = await t.api('POST', `/v1/questions/${q2}/answer`, { body: { summary: 'PostgreSQL.', body: 'We run it already.' } });
    expect(rest.status).to.equal(201);
    const norm = (s: string, q: string) =>
      s
        .split(q.replace(/^question-/, ''))
        .join('Q')
        .split(q)
        .join('Q')
        .replace(/"revision":"[0-9a-f]{40}"/g, '"revision":"R"');
    expect(norm(rest.text, q2)).to.equal(norm(tool.text, q1));
    // errors: not a question, unknown question (nearest ids), the same bytes over both adapters
    for (const id of ['task-alpha', 'question-which-database-for-the-ledgr']) {
      const r = await t.api('POST', `/v1/questions/${id}/answer`, { body: { summary: 'x' } });
      const tl = await t.tool(client, 'answer_question', { id, summary: 'x' });
      expect(tl.isError).to.equal(true);
      expect(tl.text).to.equal(r.text);
    }
    const unknown = await t.tool(client, 'answer_question', { id: 'question-which-database-for-the-ledgr', summary: 'x' });
    expect(unknown.json.error.message).to.include(q1);
  });

  it('identity tools: create_agent, mint_agent_token, bind_session, list_agents', async () => {
    const created = await t.tool(client, 'create_agent', { label: 'Night Runner' });
    expect(created.isError, created.text).to.equal(false);
    const deferred = await t.tool(client, 'mint_agent_token', { id: created.json.id, session: null });
    expect(deferred.json.session).to.equal(null);
    const agentClient = await t.mcp(deferred.json.token);
    const bound = await t.tool(agentClient, 'bind_session', { session: 'night-1' });
    expect(bound.json).to.include({ ok: true, agent: created.json.id, session: 'night-1' });
    expect((await t.tool(agentClient, 'bind_session', { session: 'night-1' })).json).to.deep.equal({ unchanged: true });
    const other = await t.tool(agentClient, 'bind_session', { session: 'night-2' });
    expect(other.isError).to.equal(true);
    expect(other.json.error.code).to.equal('conflict');
    const listed = await t.tool(client, 'list_agents', {});
    expect(listed.text).to.equal((await t.api('GET', '/v1/agents')).text);
    const standing = await t.tool(client, 'mint_agent_token', { id: created.json.id, standing: true, label: 'ci' });
    expect(standing.json).to.include({ standing: true, agent: created.json.id });
  });

  it('workflow tools answer the same bytes as their REST routes', async () => {
    const bob = await addPerson(t, 'Bob Activator');
    await putNodes(t, [{ id: 'wf-parity', type: 'wf', title: 'Parity', summary: 'parity', steps: [{ id: 'one' }] }]);
    expect((await t.api('POST', '/v1/nodes/wf-parity/status', { token: bob.token, body: { status: 'active' } })).status).to.equal(200);
    const run = (await t.api('POST', '/v1/workflows/wf-parity/run', { body: {} })).body.run_id as string;
    const strip = (s: string) => s.replace(/"generated_at":"[^"]+"/, '');
    expect(strip((await t.tool(client, 'list_work', {})).text)).to.equal(strip((await t.api('GET', '/v1/work')).text));
    expect((await t.tool(client, 'get_run', { id: run })).text).to.equal((await t.api('GET', `/v1/runs/${run}`)).text);
    const claimed = await t.tool(client, 'claim_step', { id: run, sid: 'one' });
    expect(claimed.json.status).to.equal('claimed');
    // claiming again renews; REST and the tool agree on a refusal
    const missingRest = await t.api('POST', `/v1/runs/${run}/steps/nope/claim`, { body: {} });
    const missingTool = await t.tool(client, 'claim_step', { id: run, sid: 'nope' });
    expect(missingTool.text).to.equal(missingRest.text);
    const done = await t.tool(client, 'complete_step', { id: run, sid: 'one', lease: claimed.json.lease.lease_id, status: 'succeeded' });
    expect(done.json.replayed).to.equal(false);
    const replay = await t.api('POST', `/v1/runs/${run}/steps/one/complete`, {
      body: { lease: claimed.json.lease.lease_id, status: 'succeeded' },
    });
    expect(replay.body.replayed).to.equal(true);
  });
});

describe('MCP toolsets on a tenant with fewer plugins', () => {
  it('names only the toolsets the tenant has', async () => {
    const t = await startTestServer({ plugins: [corePlugin, leasesPlugin] });
    try {
      const res = await fetch(`${t.url}/mcp?toolsets=queue`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${t.adminToken}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      });
      expect(res.status).to.equal(400);
      expect((await res.json()).error.details.allowed).to.deep.equal(['all', 'core', 'leases']);
    } finally {
      await t.close();
    }
  });
});
