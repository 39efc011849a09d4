/**
 * Test harness: a real server (koa over node:http) on a free loopback port with a fresh
 * data directory, a manual clock, and helpers for REST calls and a real MCP client over
 * Streamable HTTP. Tests pass exactly the plugins they need.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configFromEnv, createLogger, ManualClock, type ServerConfig } from '../../kernel/config.js';
import type { PluginDef } from '../../kernel/plugin.js';
import { startServer, type RunningServer } from '../../kernel/server.js';
import { allPlugins } from '../../scripts/plugins.js';
import { answerChecks } from '../../kernel/operation.js';
import { IdentityAuthority } from '../../kernel/identity-guard.js';
import { createSandbox } from '../../sandbox/index.js';
import type { Sandbox } from '../../sandbox/types.js';

// Every answer of a declared operation is checked against its output schema in test runs.
answerChecks.enabled = true;

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

export interface TestServer {
  url: string;
  dataDir: string;
  adminToken: string;
  adminPerson: string;
  org: string;
  clock: ManualClock;
  server: RunningServer;
  logs: string[];
  api<T = any>(
    method: string,
    path: string,
    opts?: { token?: string | null; body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string> },
  ): Promise<ApiResponse<T>>;
  mcp(token?: string): Promise<Client>;
  /** calls a tool and returns the text of its first content block plus isError */
  tool(client: Client, name: string, args?: Record<string, unknown>): Promise<{ text: string; isError: boolean; json: any }>;
  close(): Promise<void>;
}

/**
 * Every log line of every harness server in this mocha run, and every credential the harness
 * saw (admin tokens, bearer tokens sent, `token`/`ticket` fields of responses): a root hook
 * (test/helpers/root-hooks.ts) proves after every test file that no credential reached any log
 * line this process collected (the whole run when serial, the worker's files with --parallel).
 */
export const runLog: string[] = [];
export const runSecrets = new Set<string>();

/**
 * Throws if any credential in runSecrets appears in runLog. Called by the root hook after every
 * test file (test/helpers/root-hooks.ts) and by test/kernel/observability.test.ts.
 */
export function assertNoCredentialLogged(): void {
  const all = runLog.join('\n');
  for (const secret of runSecrets) {
    if (all.includes(secret)) throw new Error(`a credential reached a log line: ${secret.slice(0, 12)}...`);
  }
}

function collectSecrets(value: unknown, depth = 0): void {
  if (depth > 4 || value === null || typeof value !== 'object') return;
  for (const [k, v] of Object.entries(value)) {
    if (typeof v === 'string' && /^(token|ticket|access_token|refresh_token)$/.test(k) && v.length >= 16) runSecrets.add(v);
    else collectSecrets(v, depth + 1);
  }
}

/**
 * `WG_TEST_STORE=postgres` (`npm run test:pg`) runs the same suites in cluster mode: every
 * test server is a one-member cluster on the shared test PostgreSQL, its operational store
 * there, in a schema of its own (the same one again when a test restarts a server on its
 * data directory).
 */
export const onPostgres = process.env.WG_TEST_STORE === 'postgres';
const clusterSchemas = new Map<string, string>();
export async function testStoreConfig(dataDir: string): Promise<Partial<ServerConfig>> {
  if (process.env.WG_TEST_STORE !== 'postgres') return {};
  let url = clusterSchemas.get(dataDir);
  if (!url) {
    const { sharedPostgres, freshSchemaUrl } = await import('./postgres.js');
    url = await freshSchemaUrl((await sharedPostgres()).url);
    clusterSchemas.set(dataDir, url);
  }
  // A lease is renewed every third of it and held for three quarters of it: at 3 s, a renewal
  // delayed 1.25 s by a loaded machine (seen at load 25 on 2 cores) lost the tenant mid-test
  // ("this process no longer serves tenant local"); at 10 s it still happened at load 17. One
  // process serves each data directory here (no fail-over to bound; the cluster tests set their
  // own leases) and servers the tests stop release at once. The bound above: the cluster tick
  // (every third of the lease) also follows operator settings, which tests wait 10 s for.
  return { databaseUrl: url, clusterLeaseMs: 20_000 };
}

/**
 * The environment an operator CLI process needs to act on the same store as a test server on
 * `dataDir`: its data directory, and in cluster mode (`npm run test:pg`) its PostgreSQL schema.
 */
export async function cliEnv(dataDir: string): Promise<Record<string, string>> {
  const store = await testStoreConfig(dataDir);
  return { SVC_DATA_DIR: dataDir, ...(store.databaseUrl ? { SVC_DATABASE_URL: store.databaseUrl } : {}) };
}

/**
 * One hook sandbox child per test process, shared by its test servers: a server of its own forked
 * a child at its first hook (node, isolated-vm and the seed hooks compiled: ~0.3 s of CPU and a
 * fork of this large process each), about 300 times a run. Each server gets a view whose tenants
 * carry a prefix of their own, so no two servers share an isolate, a context or a quarantine
 * entry; files run one after another in a process, and the child ends with it (the sandbox
 * worker exits when its parent's IPC channel closes). `ownSandbox: true` gives a server the
 * kernel's own sandbox, started and closed with it, as in production.
 */
let sharedSandbox: Sandbox | undefined;
let sandboxViews = 0;
function testSandbox(): Sandbox {
  sharedSandbox ??= createSandbox();
  const base = sharedSandbox;
  const scope = `test-server-${++sandboxViews}/`;
  return {
    run: (call) => base.run({ ...call, tenant: scope + call.tenant }),
    stats: () => base.stats(),
    ready: () => base.ready(),
    close: async () => undefined,
  };
}

/**
 * The configuration a test server runs with: a first start (startTestServer) or the same data
 * directory served again after a stop (each restart test passes it to `startServer`).
 */
export async function testServerConfig(dataDir: string, overrides: Partial<ServerConfig> = {}): Promise<ServerConfig> {
  return {
    ...configFromEnv({}),
    host: '127.0.0.1',
    port: 0,
    dataDir,
    fsync: false,
    tenantPollMs: 200,
    // no test reaches the real GitHub: a linked repository's outbound calls are refused here
    // unless the test points them at its mock (test/helpers/github-mock.ts)
    githubApiUrl: 'http://127.0.0.1:9',
    ...(await testStoreConfig(dataDir)),
    ...overrides,
  };
}

export async function startTestServer(
  opts: { plugins?: PluginDef[]; config?: Partial<ServerConfig>; dataDir?: string; keepData?: boolean; ownSandbox?: boolean } = {},
): Promise<TestServer> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'wg-test-'));
  const clock = new ManualClock();
  const logs: string[] = [];
  const config = await testServerConfig(dataDir, opts.config);
  const server = await startServer({
    config,
    ...(opts.ownSandbox ? {} : { sandbox: testSandbox() }),
    plugins: opts.plugins ?? allPlugins,
    clock,
    log: createLogger((l) => {
      logs.push(l);
      runLog.push(l);
    }),
  });
  if (!server.bootstrap) throw new Error('expected a first start');
  const { token: adminToken, person: adminPerson, org } = server.bootstrap;
  runSecrets.add(adminToken);
  const clients: Client[] = [];
  const t: TestServer = {
    url: server.url,
    dataDir,
    adminToken,
    adminPerson,
    org,
    clock,
    server,
    logs,
    async api(method, path, o = {}) {
      // A fresh connection per call: a pooled keep-alive socket reused just as the server's
      // 5 s keep-alive timeout closes it fails the request ("fetch failed", ECONNRESET); on a
      // loaded machine undici's coarse keep-alive timer lost that race (admin-tokens, export,
      // history at load 25). Tests about connections use fetch directly.
      const headers: Record<string, string> = { connection: 'close', ...(o.headers ?? {}) };
      const token = o.token === undefined ? adminToken : o.token;
      if (token) {
        headers.authorization = `Bearer ${token}`;
        if (token.length >= 16) runSecrets.add(token);
      }
      let body: string | Buffer | undefined;
      if (o.rawBody !== undefined) body = o.rawBody;
      else if (o.body !== undefined) {
        body = JSON.stringify(o.body);
        headers['content-type'] = 'application/json';
      }
      const res = await fetch(server.url + path, { method, headers, body: body as BodyInit | undefined, redirect: 'manual' });
      const text = await res.text();
      let parsed: any;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      collectSecrets(parsed);
      return { status: res.status, body: parsed, text, headers: res.headers };
    },
    async mcp(token = adminToken) {
      const client = new Client({ name: 'test', version: '0.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(server.url + '/mcp'), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
      );
      clients.push(client);
      return client;
    },
    async tool(client, name, args = {}) {
      const result = (await client.callTool({ name, arguments: args })) as {
        content: Array<{ type: string; text?: string }>;
        isError?: boolean;
      };
      const text = result.content[0]?.text ?? '';
      let json: any;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { text, isError: Boolean(result.isError), json };
    },
    async close() {
      for (const c of clients) await c.close().catch(() => undefined);
      await server.close();
      if (!opts.keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return t;
}

/** Markdown for a node from frontmatter fields and a body. */
export function md(frontmatter: Record<string, unknown>, body = ''): string {
  const lines = Object.entries(frontmatter).map(([k, v]) => `${k}: ${JSON.stringify(v)}`);
  return `---\n${lines.join('\n')}\n---\n${body}`;
}

/** Creates nodes through POST /v1/nodes and fails loudly if any entry fails. */
export async function putNodes(t: TestServer, nodes: Array<Record<string, unknown> | string>, token?: string): Promise<any[]> {
  const res = await t.api('POST', '/v1/nodes', {
    token,
    body: { nodes: nodes.map((n) => (typeof n === 'string' ? n : md(n, String(n.body ?? '')))) },
  });
  if (res.status !== 200) throw new Error(`putNodes failed: ${res.status} ${res.text}`);
  return res.body.results;
}

/** Creates a person node directly through the tenant write path and mints a PAT for it (tests only). */
export async function addPerson(t: TestServer, name: string, opts: { admin?: boolean } = {}): Promise<{ id: string; token: string }> {
  const { generateToken, newTokenRecord } = await import('../../kernel/auth.js');
  const { personIdForEmail } = await import('../../kernel/tenants.js');
  const tenant = t.server.services.tenants.get(t.org)!;
  const email = `${name.toLowerCase().replace(/[^a-z0-9]+/g, '.')}@example.test`;
  const id = personIdForEmail(email);
  const actor = { personId: t.adminPerson, name: 'Admin', email: 'admin@localhost', agent: null, session: null };
  // people are identity facts: the test helper writes them as an identity operation would
  await tenant.write(actor, { op: 'test_add_person', via: 'rest', identity: IdentityAuthority.issue('test') }, async (draft) => {
    draft.put({
      frontmatter: {
        id,
        type: 'person',
        status: 'active',
        title: name,
        summary: name,
        name,
        email,
        ...(opts.admin ? { edges: [{ type: 'stewards', to: 'proj-root' }] } : {}),
      },
      body: '',
    });
  });
  const token = generateToken('pat');
  runSecrets.add(token);
  await tenant.tokens.mutate((records) => {
    const rec = newTokenRecord(token, { kind: 'pat', person: id, created: new Date().toISOString(), label: 'test' });
    records.set(rec.hash, rec);
  });
  return { id, token };
}
