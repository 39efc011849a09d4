import { expect } from 'chai';
import { corePlugin } from '../../../plugins/core/index.js';
import { md, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

/**
 * One core, two adapters: a tool's text block equals the REST body byte for byte, for
 * successes and errors alike. Writes are compared on twin nodes in the same state.
 */
describe('core: REST and MCP tool parity', () => {
  let t: TestServer;
  let client: Client;
  before(async () => {
    t = await startTestServer({ plugins: [corePlugin] });
    client = await t.mcp();
    await putNodes(t, [
      { id: 'task-p', type: 'task', summary: 'Parity' },
      { id: 'task-q', type: 'task', summary: 'Other' },
    ]);
  });
  after(async () => t.close());

  it('lists the core tools with input schemas', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((x) => x.name).sort();
    expect(names).to.deep.equal([
      'add_edge',
      'add_edges',
      'dry_run_schema',
      'get_node',
      'hello_mcp_app',
      'list_tenant_plugins',
      'me',
      'patch_node',
      'put_node',
      'remove_edge',
      'remove_edges',
      'schema',
      'set_priorities',
      'set_priority',
      'set_readiness',
      'set_status',
      'set_tenant_plugin',
    ]);
    for (const tool of tools) expect(tool.inputSchema.type).to.equal('object');
  });

  it('get_node: the same bytes for the same include_markdown; REST defaults to the markdown, the tool to the lean form', async () => {
    for (const flag of [true, false]) {
      const rest = await t.api('GET', `/v1/nodes/task-p?include_markdown=${flag}`);
      const tool = await t.tool(client, 'get_node', { id: 'task-p', include_markdown: flag });
      expect(tool.isError).to.equal(false);
      expect(tool.text).to.equal(rest.text);
      expect(Boolean(tool.json.markdown)).to.equal(flag);
    }
    const restDefault = await t.api('GET', '/v1/nodes/task-p');
    expect(restDefault.body.markdown).to.match(/^---\nid: task-p/);
    const toolDefault = await t.tool(client, 'get_node', { id: 'task-p' });
    expect(toolDefault.json).to.not.have.property('markdown');
    expect(toolDefault.text).to.equal((await t.api('GET', '/v1/nodes/task-p?include_markdown=false')).text);
  });

  it('schema (with and without code)', async () => {
    expect((await t.tool(client, 'schema', {})).text).to.equal((await t.api('GET', '/v1/schema')).text);
    expect((await t.tool(client, 'schema', { code: true })).text).to.equal((await t.api('GET', '/v1/schema?code=1')).text);
  });

  it('errors: isError with the same envelope bytes and no structuredContent', async () => {
    const rest = await t.api('GET', '/v1/nodes/task-missing');
    const raw = (await client.callTool({ name: 'get_node', arguments: { id: 'task-missing' } })) as Record<string, unknown>;
    expect(raw.isError).to.equal(true);
    expect(raw).to.not.have.property('structuredContent');
    expect((raw.content as Array<{ text: string }>)[0]!.text).to.equal(rest.text);
    const badRest = await t.api('GET', '/v1/nodes/Bad_Id');
    const badTool = await t.tool(client, 'get_node', { id: 'Bad_Id' });
    expect(badTool.isError).to.equal(true);
    expect(badTool.text).to.equal(badRest.text);
  });

  it('invalid tool arguments are a 422 validation envelope', async () => {
    const res = await t.tool(client, 'set_status', { id: 'task-p' });
    expect(res.isError).to.equal(true);
    expect(res.json.error.code).to.equal('validation_failed');
  });

  /** Runs the same write on two twin nodes, one through REST, one through the tool. */
  async function twinWrite(
    restPath: (id: string) => string,
    body: Record<string, unknown>,
    toolName: string,
    setup?: (id: string) => Promise<void>,
  ) {
    const stamp = Math.random().toString(36).slice(2, 8);
    const a = `task-rest-${stamp}`;
    const b = `task-tool-${stamp}`;
    await putNodes(t, [
      { id: a, type: 'task', summary: 'Twin' },
      { id: b, type: 'task', summary: 'Twin' },
    ]);
    if (setup) {
      await setup(a);
      await setup(b);
    }
    const rest = await t.api('POST', restPath(a), { body });
    const tool = await t.tool(client, toolName, { id: b, ...body });
    const normalize = (text: string, id: string) => text.replaceAll(id, 'ID').replace(/"revision":"[0-9a-f]{40}"/g, '"revision":"R"');
    expect(tool.isError).to.equal(rest.status >= 400);
    expect(normalize(tool.text, b)).to.equal(normalize(rest.text, a));
    return { rest, tool };
  }

  it('set_status', async () => {
    const { rest } = await twinWrite((id) => `/v1/nodes/${id}/status`, { status: 'blocked' }, 'set_status');
    expect(rest.body.status).to.equal('updated');
    await twinWrite((id) => `/v1/nodes/${id}/status`, { status: 'nonsense' }, 'set_status');
  });

  it('set_priority', async () => {
    await twinWrite((id) => `/v1/nodes/${id}/priority`, { priority: 'p2' }, 'set_priority');
    await twinWrite((id) => `/v1/nodes/${id}/priority`, { priority: 'zz' }, 'set_priority');
  });

  it('add_edge and remove_edge (canonical and inverse forms)', async () => {
    await twinWrite((id) => `/v1/nodes/${id}/edges`, { type: 'blocks', to: 'task-q' }, 'add_edge');
    await twinWrite((id) => `/v1/nodes/${id}/edges`, { type: 'relates-to', to: 'task-q', attrs: { kind: 'x' } }, 'add_edge');
    // remove: REST uses DELETE with a body
    const stamp = Math.random().toString(36).slice(2, 8);
    const a = `task-rm-rest-${stamp}`;
    const b = `task-rm-tool-${stamp}`;
    await putNodes(t, [
      { id: a, type: 'task', summary: 'Twin', edges: [{ type: 'blocks', to: 'task-q' }] },
      { id: b, type: 'task', summary: 'Twin', edges: [{ type: 'blocks', to: 'task-q' }] },
    ]);
    const rest = await t.api('DELETE', `/v1/nodes/${a}/edges`, { body: { type: 'blocks', to: 'task-q' } });
    const tool = await t.tool(client, 'remove_edge', { id: b, type: 'blocks', to: 'task-q' });
    const norm = (s: string, id: string) => s.replaceAll(id, 'ID').replace(/"revision":"[0-9a-f]{40}"/g, '"revision":"R"');
    expect(norm(tool.text, b)).to.equal(norm(rest.text, a));
    expect(rest.body.status).to.equal('updated');
  });

  it('put_node', async () => {
    const rest = await t.api('POST', '/v1/nodes', {
      body: { nodes: [md({ id: 'task-put-rest', type: 'task', summary: 'P' }), 'garbage'] },
    });
    const tool = await t.tool(client, 'put_node', { nodes: [md({ id: 'task-put-tool', type: 'task', summary: 'P' }), 'garbage'] });
    expect(rest.status).to.equal(207);
    const norm = (s: string) => s.replace(/task-put-(rest|tool)/g, 'ID').replace(/"revision":"[0-9a-f]{40}"/g, '"revision":"R"');
    expect(norm(tool.text)).to.equal(norm(rest.text));
    // a tool write is stamped authored_via: mcp
    expect((await t.api('GET', '/v1/nodes/task-put-tool')).body.frontmatter.authored_via).to.equal('mcp');
  });

  it('hello_mcp_app is an MCP App: ui:// resource with the mcp-app profile', async () => {
    const { tools } = await client.listTools();
    const hello = tools.find((x) => x.name === 'hello_mcp_app')!;
    const uri = (hello._meta as { ui: { resourceUri: string } }).ui.resourceUri;
    expect(uri).to.match(/^ui:\/\//);
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).to.include(uri);
    const read = await client.readResource({ uri });
    expect(read.contents[0]!.mimeType).to.equal('text/html;profile=mcp-app');
    expect(String((read.contents[0] as { text?: string }).text)).to.contain('<html');
    const result = await t.tool(client, 'hello_mcp_app', {});
    expect(result.json).to.include({ ok: true, org: t.org });
  });

  it('MCP requests need the same bearer tokens (401 without)', async () => {
    const res = await fetch(t.url + '/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    });
    expect(res.status).to.equal(401);
    expect((await res.json()).error.code).to.equal('unauthorized');
  });
});
