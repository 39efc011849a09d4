/**
 * The MCP adapter: a server built per request (stateless HTTP), per session (HTTP sessions,
 * kernel/mcp-sessions.ts) or per process (stdio) for one tenant and actor, listing exactly the
 * tools of the plugins enabled for that tenant, its resources and resource templates, and (when
 * long-lived) serving `resources/subscribe` (kernel/mcp-subscriptions.ts).
 * A tool result's text block is the same `serialize()` bytes as the REST body; errors
 * come back as `isError: true` with the REST envelope and no structuredContent.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { credentialKindOf, mayEverCall } from './access.js';
import type { Actor } from './actor.js';
import { errors, isSvcError, type SvcError } from './errors.js';
import { RawResponse, serialize, StatusPayload, type OpContext, type ResourceDef, type ResourceTemplateDef, type Tool } from './plugin.js';
import { ResourceSubscriptions, resolveResource } from './mcp-subscriptions.js';
import type { JsonSchema } from './operation.js';

export function errorResult(err: SvcError): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: serialize(err.envelope()) }] };
}

/** Runs one tool call against the core operation; shared by every MCP transport. */
export async function callTool(
  tool: Tool,
  ctx: OpContext,
  args: Record<string, unknown>,
  log: (err: unknown) => void,
): Promise<CallToolResult> {
  try {
    let payload = await tool.call(ctx, args);
    let isError = false;
    if (payload instanceof StatusPayload) {
      isError = payload.toolError;
      payload = payload.payload;
    }
    if (payload instanceof RawResponse) {
      const text = typeof payload.body === 'string' ? payload.body : Buffer.isBuffer(payload.body) ? payload.body.toString('utf8') : '';
      return { content: [{ type: 'text', text }] };
    }
    return { ...(isError ? { isError: true } : {}), content: [{ type: 'text', text: serialize(payload) }] };
  } catch (err) {
    if (isSvcError(err)) return errorResult(err);
    log(err);
    return errorResult(errors.internal());
  }
}

export interface McpServerSpec {
  /** the caller when no request context is running (stdio; a session's notifications: as of its latest request) */
  ctx: () => OpContext;
  /** the server's `instructions` (PluginHost.instructionsFor) */
  instructions: string;
  /** asked per request, so a long-lived session follows the tenant's plugin settings */
  tools: () => Tool[];
  resources: () => ResourceDef[];
  templates: () => ResourceTemplateDef[];
  log: (err: unknown) => void;
  /**
   * A long-lived server (an HTTP session, stdio): `resources/subscribe` is served and
   * `notifications/resources/updated` sent. A per-request stateless server refuses it (there is
   * no stream to send notifications on).
   */
  subscriptions?: boolean;
  /** for a session: whether its credential is still good (kernel/mcp-sessions.ts ends it when not) */
  valid?: () => boolean;
}

/**
 * The request a long-lived server is handling now (kernel/http.ts runs each HTTP request of a
 * session inside it): its headers (Idempotency-Key) and the actor as just authenticated.
 */
const requestContext = new AsyncLocalStorage<OpContext>();

export function withRequestContext<T>(ctx: OpContext, fn: () => T): T {
  return requestContext.run(ctx, fn);
}

/** A kernel error as the JSON-RPC error of a resources request: -32002 for a missing resource (the MCP specification's code), the envelope as data. */
function rpcError(err: unknown, mcpError: new (code: number, message: string, data?: unknown) => Error): Error {
  if (!isSvcError(err)) return err instanceof Error ? err : new Error(String(err));
  return new mcpError(err.status === 404 ? -32002 : -32602, err.message, err.envelope().error);
}

/**
 * The SDK is loaded on the first MCP request, not at start: it is about a third of the
 * server's start-up CPU, and a REST-only deployment never needs it.
 */
async function sdk() {
  const [{ Server: ServerClass }, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return { ServerClass, ...types };
}

/**
 * The tools tools/list shows `actor`: those some input lets its credential call (kernel/access.ts
 * `mayEverCall`), so an agent's or a member's list carries no admin-only tool and stays small.
 * A call by name still reaches any tool of the tenant and gets the operation's own 403.
 */
export function listedFor(tools: Tool[], actor: Actor): Tool[] {
  const kind = credentialKindOf(actor.token.kind);
  const admin = actor.isAdmin && actor.agent === null;
  return tools.filter((t) => !t.access || mayEverCall(t.access, kind, admin, actor.bound));
}

export async function buildMcpServer(spec: McpServerSpec): Promise<Server> {
  const {
    ServerClass,
    CallToolRequestSchema,
    ListResourcesRequestSchema,
    ListResourceTemplatesRequestSchema,
    ListToolsRequestSchema,
    McpError,
    ReadResourceRequestSchema,
    SubscribeRequestSchema,
    UnsubscribeRequestSchema,
  } = await sdk();
  const server = new ServerClass(
    { name: 'workgraph', version: '0.1.0' },
    { capabilities: { tools: {}, resources: { subscribe: true } }, instructions: spec.instructions },
  );
  const context = () => requestContext.getStore() ?? spec.ctx();
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: listedFor(spec.tools(), context().actor).map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: listingSchema(t.inputSchema) as { type: 'object'; properties?: Record<string, object> },
      ...(t.annotations ? { annotations: t.annotations } : {}),
      ...(t._meta ? { _meta: t._meta } : {}),
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = spec.tools().find((t) => t.name === request.params.name);
    if (!tool) return errorResult(errors.notFound(`tool ${request.params.name}`));
    // the SDK aborts it when the client cancels or its connection closes: a waiting tool (wait_for_events) stops
    const current = context();
    let joined: AbortSignal | undefined;
    // joined on first use: most tools never look at it (the fields listed are OpContext's)
    const ctx: OpContext = {
      tenant: current.tenant,
      actor: current.actor,
      via: current.via,
      services: current.services,
      headers: current.headers,
      get signal() {
        const outer = current.signal;
        return (joined ??= outer ? AbortSignal.any([extra.signal, outer]) : extra.signal);
      },
    };
    return callTool(tool, ctx, (request.params.arguments ?? {}) as Record<string, unknown>, spec.log);
  });
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: spec.resources().map((r) => ({
      uri: r.uri,
      name: r.name,
      mimeType: r.mimeType,
      ...(r.description ? { description: r.description } : {}),
      ...(r._meta ? { _meta: r._meta } : {}),
    })),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: spec.templates().map((r) => ({
      uriTemplate: r.uriTemplate,
      name: r.name,
      mimeType: r.mimeType,
      ...(r.description ? { description: r.description } : {}),
    })),
  }));
  const resolve = (uri: string) => resolveResource(uri, spec.resources(), spec.templates());
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const { uri } = request.params;
    const resource = resolve(uri);
    if (!resource) throw new McpError(-32002, `resource ${uri} not found`, { uri });
    let text: string;
    try {
      // durability before visibility, as for read operations (kernel/operation.ts `invoke`)
      const barrier = context().tenant.readBarrier();
      if (barrier) await barrier;
      text = await resource.read(context());
    } catch (err) {
      if (!isSvcError(err)) spec.log(err);
      throw rpcError(isSvcError(err) ? err : errors.internal(), McpError);
    }
    return { contents: [{ uri, mimeType: resource.mimeType, text, ...(resource._meta ? { _meta: resource._meta } : {}) }] };
  });

  const subscriptions = spec.subscriptions
    ? new ResourceSubscriptions({
        context,
        resolve,
        notify: (uri) => server.sendResourceUpdated({ uri }),
        ...(spec.valid ? { valid: spec.valid } : {}),
      })
    : null;
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    if (!subscriptions)
      throw new McpError(
        -32600,
        'resources/subscribe needs a session: send initialize first and then the Mcp-Session-Id it answers (docs/events.md)',
      );
    try {
      await subscriptions.subscribe(request.params.uri);
    } catch (err) {
      if (!isSvcError(err)) spec.log(err);
      throw rpcError(isSvcError(err) ? err : errors.internal(), McpError);
    }
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    subscriptions?.unsubscribe(request.params.uri);
    return {};
  });
  if (subscriptions) server.onclose = () => subscriptions.close();
  return server;
}

const listed = new WeakMap<object, JsonSchema>();

/**
 * The input schema as tools/list shows it: the same fields, types, enums and limits, without
 * what only the validator or the API reference needs (docs/decisions.md, "tools"; the whole
 * list is held to 20 KB): per-field descriptions (each tool's description names its arguments,
 * limits and errors; the OpenAPI document keeps the field texts), regex `pattern`s, empty
 * `required` lists, `additionalProperties: false` (an unknown field is still a 422 naming it),
 * the integer-or-digits unions REST query strings need (a tool sends the integer), and the
 * bounds every argument of its kind has (`minLength: 1` and `maxLength` up to SHORT_STRING for
 * ids, names, types and keys; `minItems: 1`; an integer's `minimum` of 0 or 1): the core
 * plugin's instructions state that rule once, and breaking it is a 422 naming the field and the
 * bound. Other limits (texts, bodies, URLs, list and page sizes) stay listed.
 * Arguments are validated against the full schema.
 */
export function listingSchema(schema: JsonSchema): JsonSchema {
  let out = listed.get(schema);
  if (!out) {
    out = compact(schema) as JsonSchema;
    listed.set(schema, out);
  }
  return out;
}

/** The longest `maxLength` the listing leaves out: the bound of ids, names, types and keys (200 for ids, 255 for idempotency keys, 300 for inbox item ids). */
export const SHORT_STRING = 300;

function compact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(compact);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  const src = value as Record<string, unknown>;
  const type = src.type;
  const digits =
    Array.isArray(type) &&
    type.length === 2 &&
    type.includes('string') &&
    (type.includes('integer') || type.includes('number') || type.includes('array'));
  for (const [k, v] of Object.entries(src)) {
    if (k === 'pattern' && typeof v === 'string') continue;
    if (k === 'description' && typeof v === 'string') continue;
    if (k === 'required' && Array.isArray(v) && v.length === 0) continue;
    if (k === 'maxLength' && typeof v === 'number' && v <= SHORT_STRING) continue;
    if (k === 'minLength' && v === 1) continue;
    if (k === 'minItems' && v === 1) continue;
    if (k === 'minimum' && (v === 0 || v === 1) && src.type === 'integer') continue;
    if (k === 'additionalProperties' && v === false) continue;
    if (k === 'type' && digits) {
      out.type = (type as string[]).find((x) => x !== 'string');
      continue;
    }
    // property names are data, not schema keywords: only their values are compacted
    out[k] =
      k === 'properties' && v && typeof v === 'object'
        ? Object.fromEntries(Object.entries(v).map(([n, p]) => [n, compact(p)]))
        : compact(v);
  }
  return out;
}
