/**
 * The MCP adapter: a server built per request (HTTP) or per process (stdio) for one
 * tenant and actor, listing exactly the tools of the plugins enabled for that tenant.
 * A tool result's text block is the same `serialize()` bytes as the REST body; errors
 * come back as `isError: true` with the REST envelope and no structuredContent.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { errors, isSvcError, type SvcError } from './errors.js';
import { RawResponse, serialize, StatusPayload, type OpContext, type ResourceDef, type Tool } from './plugin.js';
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
  ctx: OpContext;
  /** the server's `instructions` (PluginHost.instructionsFor) */
  instructions: string;
  tools: Tool[];
  resources: ResourceDef[];
  log: (err: unknown) => void;
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

export async function buildMcpServer(spec: McpServerSpec): Promise<Server> {
  const { ServerClass, CallToolRequestSchema, ListResourcesRequestSchema, ListToolsRequestSchema, ReadResourceRequestSchema } = await sdk();
  const server = new ServerClass(
    { name: 'workgraph', version: '0.1.0' },
    { capabilities: { tools: {}, resources: {} }, instructions: spec.instructions },
  );
  const byName = new Map(spec.tools.map((t) => [t.name, t]));
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: spec.tools.map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: listingSchema(t.inputSchema) as { type: 'object'; properties?: Record<string, object> },
      ...(t.annotations ? { annotations: t.annotations } : {}),
      ...(t._meta ? { _meta: t._meta } : {}),
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = byName.get(request.params.name);
    if (!tool) return errorResult(errors.notFound(`tool ${request.params.name}`));
    // the SDK aborts it when the client cancels or its connection closes: a waiting tool (wait_for_events) stops
    const ctx = { ...spec.ctx, signal: extra.signal };
    return callTool(tool, ctx, (request.params.arguments ?? {}) as Record<string, unknown>, spec.log);
  });
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: spec.resources.map((r) => ({
      uri: r.uri,
      name: r.name,
      mimeType: r.mimeType,
      ...(r.description ? { description: r.description } : {}),
      ...(r._meta ? { _meta: r._meta } : {}),
    })),
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const resource = spec.resources.find((r) => r.uri === request.params.uri);
    if (!resource) throw new Error(`unknown resource ${request.params.uri}`);
    return {
      contents: [
        {
          uri: resource.uri,
          mimeType: resource.mimeType,
          text: await resource.read(),
          ...(resource._meta ? { _meta: resource._meta } : {}),
        },
      ],
    };
  });
  return server;
}

const listed = new WeakMap<object, JsonSchema>();

/**
 * The input schema as tools/list shows it: the same fields, types, enums and limits, without
 * what only the validator or the API reference needs (docs/decisions.md, "tools"; the whole
 * list is held to 20 KB): per-field descriptions (each tool's description names its arguments,
 * limits and errors; the OpenAPI document keeps the field texts), regex `pattern`s, empty
 * `required` lists, `additionalProperties: false` (an unknown field is still a 422 naming it),
 * and the integer-or-digits unions REST query strings need (a tool sends the integer).
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
