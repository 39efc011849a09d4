/**
 * `workgraph mcp` over stdio with the SDK's StdioClientTransport: local mode on a data
 * directory (no server running; SVC_TOKEN or the first-start admin-token file) and proxy mode
 * (SVC_SERVER + SVC_TOKEN, SVC_ORG selecting the tenant) against a running server.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'chai';
import { rmSync, unlinkSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ROOT, SHIM } from '../helpers/processes.js';
import { generateToken } from '../../kernel/auth.js';
import { configFromEnv, createLogger } from '../../kernel/config.js';
import { startServer } from '../../kernel/server.js';
import { corePlugin } from '../../plugins/core/index.js';
import { eventsPlugin } from '../../plugins/events/index.js';
import { addPerson, md, startTestServer, type TestServer } from '../helpers/harness.js';
import { until } from '../helpers/until.js';

interface StdioSession {
  client: Client;
  stderr(): string;
  close(): Promise<void>;
}

const open: StdioSession[] = [];

/** Spawns `node scripts/workgraph.mjs mcp` with exactly `env` (plus the SDK's safe defaults such as PATH and HOME). */
async function stdio(env: Record<string, string>): Promise<StdioSession> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [SHIM, 'mcp'], env, stderr: 'pipe', cwd: ROOT });
  let err = '';
  const stderr = transport.stderr!;
  stderr.on('data', (d: Buffer) => (err += d.toString()));
  // the child's stderr is piped into this stream, which ends when the child's stderr closes
  const stderrEnded = new Promise<void>((r) => stderr.once('end', () => r()));
  const client = new Client({ name: 'stdio-test', version: '0.0.0' });
  const session: StdioSession = { client, stderr: () => err, close: () => client.close() };
  open.push(session);
  try {
    await client.connect(transport);
  } catch (e) {
    await client.close().catch(() => undefined);
    // the last stderr bytes: until the child's stderr ends (bounded: a stuck child still fails
    // with what it wrote by then)
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([stderrEnded, new Promise((r) => (bound = setTimeout(r, 10_000)))]);
    clearTimeout(bound);
    throw Object.assign(new Error(`connect failed: ${(e as Error).message}\nstderr: ${err}`), { stderr: err });
  }
  return session;
}

async function expectConnectFailure(env: Record<string, string>, pattern: RegExp): Promise<void> {
  let failure: (Error & { stderr?: string }) | null = null;
  try {
    const s = await stdio(env);
    await s.close();
  } catch (e) {
    failure = e as Error & { stderr?: string };
  }
  expect(failure, 'the stdio server should have refused to start').to.not.equal(null);
  expect(failure!.stderr).to.match(pattern);
}

/** MCP sessions of the server with an open notification stream (the workgraph_mcp_sessions gauge). */
async function openStreams(t: TestServer): Promise<number> {
  const text = await t.server.services.metrics.text();
  let n = 0;
  for (const m of text.matchAll(/^workgraph_mcp_sessions\{[^}]*stream="open"[^}]*\} (\d+)$/gm)) n += Number(m[1]);
  return n;
}

/** Creates an open task over REST. */
async function putNodesOver(t: TestServer, id: string): Promise<void> {
  const res = await t.api('POST', '/v1/nodes', { body: { nodes: [md({ id, type: 'task', status: 'open', summary: id })] } });
  expect(res.status, res.text).to.equal(200);
}

async function toolText(client: Client, name: string, args: Record<string, unknown>): Promise<{ text: string; isError: boolean }> {
  const res = (await client.callTool({ name, arguments: args })) as {
    content: Array<{ type: string; text?: string }>;
    isError?: boolean;
    structuredContent?: unknown;
  };
  if (res.isError) expect(res.structuredContent).to.equal(undefined);
  return { text: res.content[0]?.text ?? '', isError: Boolean(res.isError) };
}

/** Records the URIs of `notifications/resources/updated` the client receives. */
function resourceUpdates(client: Client): string[] {
  const uris: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    uris.push(n.params.uri);
  });
  return uris;
}

const dirs: string[] = [];
after(async () => {
  for (const s of open) await s.close().catch(() => undefined);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('workgraph mcp over stdio', function () {
  this.timeout(180_000);

  describe('local mode on SVC_DATA_DIR (no server running)', () => {
    let dataDir: string;
    let adminToken: string;
    let other: { id: string; token: string };
    let serverTools: string[];
    let serverInstructions: string | undefined;

    before(async () => {
      // a data directory made by a real first start, then the server is stopped; events is on
      // for every tenant (alwaysOn), so the local process lists its tool too
      const t = await startTestServer({ plugins: [corePlugin, eventsPlugin], keepData: true });
      dataDir = t.dataDir;
      dirs.push(dataDir);
      adminToken = t.adminToken;
      other = await addPerson(t, 'Grace Hopper');
      const client = await t.mcp();
      serverTools = (await client.listTools()).tools.map((x) => x.name).sort();
      serverInstructions = client.getInstructions();
      await t.close();
    });

    it('with the admin-token file: lists the tools and get_node proj-root works', async () => {
      const s = await stdio({ SVC_DATA_DIR: dataDir });
      const tools = (await s.client.listTools()).tools.map((x) => x.name).sort();
      expect(tools).to.deep.equal(serverTools);
      expect(tools).to.include.members([
        'get_node',
        'put_node',
        'add_edge',
        'remove_edge',
        'set_status',
        'set_priority',
        'schema',
        'hello_mcp_app',
      ]);
      // local mode gives the same instructions as the server: how to pick up, claim and finish work
      expect(s.client.getInstructions()).to.equal(serverInstructions);
      const res = await toolText(s.client, 'get_node', { id: 'proj-root' });
      expect(res.isError).to.equal(false);
      const node = JSON.parse(res.text);
      expect(node).to.include({ id: 'proj-root', type: 'proj' });
      expect(node.revision).to.match(/^[0-9a-f]{40}$/);
      const missing = await toolText(s.client, 'get_node', { id: 'task-nope' });
      expect(missing.isError).to.equal(true);
      expect(JSON.parse(missing.text).error.code).to.equal('not_found');
      // the MCP App resource is served too
      const resources = await s.client.listResources();
      expect(resources.resources.length).to.be.greaterThan(0);
      await s.close();
      expect(s.stderr()).to.not.include(adminToken);
    });

    it('SVC_TOOLSETS selects toolsets; an unknown one fails clearly, naming the nearest', async () => {
      const s = await stdio({ SVC_DATA_DIR: dataDir, SVC_TOOLSETS: 'core' });
      expect((await s.client.listTools()).tools.map((x) => x.name).sort()).to.deep.equal(
        serverTools.filter((n) => n !== 'wait_for_events'),
      );
      await s.close();
      await expectConnectFailure({ SVC_DATA_DIR: dataDir, SVC_TOOLSETS: 'cor' }, /unknown toolset 'cor'; did you mean 'core'/);
    });

    it('with SVC_TOKEN: writes are attributed to that person and durable for a server started afterwards', async () => {
      const s = await stdio({ SVC_DATA_DIR: dataDir, SVC_TOKEN: other.token, SVC_ORG: 'local' });
      const put = await toolText(s.client, 'put_node', {
        nodes: [md({ id: 'task-from-stdio', type: 'task', status: 'open', summary: 'written over stdio' }, 'local body')],
      });
      expect(put.isError, put.text).to.equal(false);
      const written = JSON.parse(put.text).results[0];
      expect(written).to.include({ id: 'task-from-stdio', status: 'created' });
      await s.close();
      expect(s.stderr()).to.not.include(other.token);
      // a server started on the same data dir afterwards reads it (startTestServer insists on a first start)
      const server = await startServer({
        config: { ...configFromEnv({}), host: '127.0.0.1', port: 0, dataDir, fsync: false },
        plugins: [corePlugin],
        log: createLogger(() => undefined),
      });
      try {
        const res = await fetch(`${server.url}/v1/nodes/task-from-stdio`, { headers: { authorization: `Bearer ${adminToken}` } });
        expect(res.status).to.equal(200);
        const node = (await res.json()) as { revision: string; body: string; frontmatter: Record<string, unknown> };
        expect(node.revision).to.equal(written.revision);
        expect(node.body).to.include('local body');
        expect(node.frontmatter.author).to.equal(other.id);
        expect(node.frontmatter.authored_via).to.equal('mcp');
      } finally {
        await server.close();
      }
    });

    it('resources/subscribe: the long-lived stdio process notifies a subscribed node when it changes', async () => {
      const s = await stdio({ SVC_DATA_DIR: dataDir, SVC_TOKEN: other.token });
      const updates = resourceUpdates(s.client);
      const put = await toolText(s.client, 'put_node', {
        nodes: [md({ id: 'task-stdio-watch', type: 'task', status: 'open', summary: 'watched over stdio' })],
      });
      expect(put.isError, put.text).to.equal(false);
      expect(s.client.getServerCapabilities()?.resources).to.deep.include({ subscribe: true });
      await s.client.subscribeResource({ uri: 'workgraph://nodes/task-stdio-watch' });
      const status = await toolText(s.client, 'set_status', { id: 'task-stdio-watch', status: 'in-progress' });
      expect(status.isError, status.text).to.equal(false);
      await until(() => updates.length > 0, 'notifications/resources/updated over stdio', 2000);
      expect(updates).to.deep.equal(['workgraph://nodes/task-stdio-watch']);
      const read = await s.client.readResource({ uri: 'workgraph://nodes/task-stdio-watch' });
      const first = read.contents[0];
      expect(JSON.parse(first && 'text' in first ? first.text : '{}').frontmatter.status).to.equal('in-progress');
      await s.close();
    });

    it('fails clearly on an SVC_ORG mismatch, an unknown token, and when there is no token at all', async () => {
      await expectConnectFailure({ SVC_DATA_DIR: dataDir, SVC_ORG: 'elsewhere' }, /belongs to tenant 'local', not 'elsewhere'/);
      await expectConnectFailure({ SVC_DATA_DIR: dataDir, SVC_TOKEN: generateToken('pat') }, /not valid for any tenant/);
      unlinkSync(join(dataDir, 'admin-token'));
      await expectConnectFailure({ SVC_DATA_DIR: dataDir }, /needs SVC_TOKEN/);
    });
  });

  describe('proxy mode (SVC_SERVER + SVC_TOKEN)', () => {
    let t: TestServer;

    before(async () => {
      t = await startTestServer({ plugins: [corePlugin] });
    });
    after(async () => {
      if (t) await t.close();
    });

    it('lists the same tools as the server, and a put_node through the proxy shows up in the REST read', async () => {
      const direct = await (await t.mcp()).listTools();
      const s = await stdio({ SVC_SERVER: t.url, SVC_TOKEN: t.adminToken, SVC_ORG: 'local' });
      const proxied = await s.client.listTools();
      expect(proxied.tools).to.deep.equal(direct.tools);
      expect(s.client.getInstructions()).to.equal((await t.mcp()).getInstructions());
      const put = await toolText(s.client, 'put_node', {
        nodes: [md({ id: 'task-via-proxy', type: 'task', status: 'open', summary: 'through the proxy' }, 'proxied body')],
      });
      expect(put.isError, put.text).to.equal(false);
      const written = JSON.parse(put.text).results[0];
      expect(written).to.include({ id: 'task-via-proxy', status: 'created' });
      const rest = await t.api('GET', '/v1/nodes/task-via-proxy');
      expect(rest.status).to.equal(200);
      expect(rest.body.revision).to.equal(written.revision);
      expect(rest.body.body).to.include('proxied body');
      expect(rest.body.frontmatter.author).to.equal(t.adminPerson);
      // reads and errors pass through byte for byte
      const read = await toolText(s.client, 'get_node', { id: 'task-via-proxy' });
      // the tool's lean default (no markdown) is REST's include_markdown=false
      expect(read.text).to.equal((await t.api('GET', '/v1/nodes/task-via-proxy?include_markdown=false')).text);
      const missing = await toolText(s.client, 'get_node', { id: 'task-nope' });
      expect(missing.isError).to.equal(true);
      expect(missing.text).to.equal((await t.api('GET', '/v1/nodes/task-nope')).text);
      await s.close();
      expect(s.stderr()).to.not.include(t.adminToken);
    });

    it('passes resources/subscribe through to a server session and relays its notifications', async () => {
      await putNodesOver(t, 'task-proxy-watch');
      const streamsBefore = await openStreams(t);
      const s = await stdio({ SVC_SERVER: t.url, SVC_TOKEN: t.adminToken });
      const updates = resourceUpdates(s.client);
      const templates = await s.client.listResourceTemplates();
      expect(templates.resourceTemplates.map((x) => x.uriTemplate)).to.include('workgraph://nodes/{id}');
      await s.client.subscribeResource({ uri: 'workgraph://nodes/task-proxy-watch' });
      // the proxy's session opens its notification stream in the background: wait for it on the server
      const deadline = performance.now() + 10_000;
      while ((await openStreams(t)) <= streamsBefore) {
        if (performance.now() > deadline) throw new Error('the proxy never opened its notification stream');
        await new Promise((r) => setTimeout(r, 10));
      }
      const sent = performance.now();
      const res = await t.api('POST', '/v1/nodes/task-proxy-watch/status', { body: { status: 'in-progress' } });
      expect(res.status, res.text).to.equal(200);
      await until(() => updates.length > 0, 'the relayed notification', 2000);
      expect(performance.now() - sent).to.be.lessThan(2000);
      expect(updates[0]).to.equal('workgraph://nodes/task-proxy-watch');
      await s.close();
    });

    it('SVC_TOOLSETS is forwarded as ?toolsets= (an unknown toolset fails at the first request)', async () => {
      const s = await stdio({ SVC_SERVER: t.url, SVC_TOKEN: t.adminToken, SVC_TOOLSETS: 'core' });
      expect((await s.client.listTools()).tools.map((x) => x.name)).to.include('put_node');
      await s.close();
      await expectConnectFailure({ SVC_SERVER: t.url, SVC_TOKEN: t.adminToken, SVC_TOOLSETS: 'cor' }, /unknown toolset 'cor'/);
    });

    it('local mode refuses a data dir that a running server serves (its commits would be lost)', async () => {
      await expectConnectFailure(
        { SVC_DATA_DIR: t.dataDir, SVC_TOKEN: t.adminToken },
        /another workgraph process \(pid \d+\) is serving .*proxy mode/,
      );
      expect((await t.api('GET', '/v1/me')).status).to.equal(200);
    });

    it('fails clearly on an SVC_ORG mismatch, a refused token and an unreachable server', async () => {
      await expectConnectFailure(
        { SVC_SERVER: t.url, SVC_TOKEN: t.adminToken, SVC_ORG: 'elsewhere' },
        /belongs to org 'local', not SVC_ORG 'elsewhere'/,
      );
      await expectConnectFailure({ SVC_SERVER: t.url, SVC_TOKEN: generateToken('pat') }, /refused SVC_TOKEN \(401 unauthorized/);
      await expectConnectFailure({ SVC_SERVER: t.url }, /needs SVC_TOKEN/);
      const closedPort = await new Promise<number>((resolve) => {
        const probe = createServer().listen(0, '127.0.0.1', () => {
          const { port } = probe.address() as AddressInfo;
          probe.close(() => resolve(port));
        });
      });
      await expectConnectFailure(
        { SVC_SERVER: `http://127.0.0.1:${closedPort}`, SVC_TOKEN: t.adminToken },
        new RegExp(`cannot reach SVC_SERVER http://127.0.0.1:${closedPort}: ECONNREFUSED`),
      );
    });
  });
});
