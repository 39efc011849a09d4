/**
 * `workgraph mcp`: MCP over stdio, either on the local data directory or as a proxy that
 * forwards every request to a remote server's Streamable HTTP endpoint.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  ResourceUpdatedNotificationSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { buildMcpServer } from '../kernel/mcp.js';
import type { OpContext } from '../kernel/plugin.js';
import type { Kernel } from '../kernel/server.js';

function closeOnStdinEnd(close: () => Promise<void>): void {
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    close().finally(() => process.exit(0));
  };
  process.stdin.on('end', finish);
  process.on('SIGTERM', finish);
  process.on('SIGINT', finish);
}

export async function serveStdioLocal(kernel: Kernel, token: string, org: string | undefined, toolsetsArg?: string): Promise<void> {
  const { services } = kernel;
  let identity;
  try {
    identity = services.tenants.authenticate(token);
  } catch {
    process.stderr.write('workgraph mcp: the token is not valid for any tenant in this data directory\n');
    await kernel.close();
    process.exit(2);
  }
  if (org && identity.tenant.org !== org) {
    process.stderr.write(`workgraph mcp: the token belongs to tenant '${identity.tenant.org}', not '${org}'\n`);
    await kernel.close();
    process.exit(2);
  }
  let toolsets: string[] | null;
  try {
    toolsets = services.host.parseToolsets(identity.tenant, toolsetsArg);
  } catch (err) {
    process.stderr.write(`workgraph mcp: ${(err as Error).message}\n`);
    await kernel.close();
    process.exit(2);
  }
  const ctx: OpContext = { tenant: identity.tenant, actor: identity.actor, via: 'mcp', services, headers: {} };
  const server = await buildMcpServer({
    ctx: () => ctx,
    instructions: services.host.instructionsFor(identity.tenant, toolsets),
    tools: () => services.host.toolsFor(identity.tenant, toolsets),
    resources: () => services.host.resourcesFor(identity.tenant),
    templates: () => services.host.resourceTemplatesFor(identity.tenant),
    log: (err) => services.log.error('tool failed', { error: String(err) }),
    // one process per client: its subscriptions live as long as stdin is open
    subscriptions: true,
  });
  await server.connect(new StdioServerTransport());
  closeOnStdinEnd(async () => {
    await server.close();
    await kernel.close();
  });
}

export async function serveStdioProxy(base: string, token: string, org: string | undefined, toolsets?: string): Promise<void> {
  const root = base.replace(/\/+$/, '');
  // Check the token (and the tenant it selects) before speaking MCP, so a wrong setting fails
  // at start with a plain message instead of on the first tool call.
  let me: Response;
  try {
    me = await fetch(`${root}/v1/me`, { headers: { authorization: `Bearer ${token}` } });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`cannot reach SVC_SERVER ${root}: ${cause?.code ?? cause?.message ?? (err as Error).message}`, { cause: err });
  }
  if (me.status === 401) throw new Error(`SVC_SERVER ${root} refused SVC_TOKEN (401 unauthorized: missing, invalid, expired or revoked)`);
  if (!me.ok) throw new Error(`GET ${root}/v1/me answered ${me.status}`);
  const body = (await me.json()) as { org?: string };
  if (org && body.org !== org) throw new Error(`SVC_TOKEN belongs to org '${body.org}', not SVC_ORG '${org}'`);
  const client = new Client({ name: 'workgraph-proxy', version: '0.1.0' });
  const endpoint = new URL(`${root}/mcp`);
  if (toolsets) endpoint.searchParams.set('toolsets', toolsets);
  const transport = new StreamableHTTPClientTransport(endpoint, { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  // the proxy says what the server says, instructions included
  const server = new Server(
    { name: 'workgraph', version: '0.1.0' },
    { capabilities: { tools: {}, resources: { subscribe: true } }, instructions: client.getInstructions() },
  );
  server.setRequestHandler(ListToolsRequestSchema, (req) => client.listTools(req.params));
  server.setRequestHandler(CallToolRequestSchema, (req) => client.callTool(req.params) as never);
  server.setRequestHandler(ListResourcesRequestSchema, (req) => client.listResources(req.params));
  server.setRequestHandler(ReadResourceRequestSchema, (req) => client.readResource(req.params));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, (req) => client.listResourceTemplates(req.params));
  // subscriptions live in the remote session (the client keeps its Mcp-Session-Id and GET stream);
  // its notifications are passed on as they come
  server.setRequestHandler(SubscribeRequestSchema, (req) => client.subscribeResource(req.params));
  server.setRequestHandler(UnsubscribeRequestSchema, (req) => client.unsubscribeResource(req.params));
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => server.sendResourceUpdated(n.params));
  await server.connect(new StdioServerTransport());
  closeOnStdinEnd(async () => {
    await server.close();
    // DELETE the remote session at once rather than leave it to idle expiry
    await transport.terminateSession().catch(() => undefined);
    await client.close();
  });
}
