/**
 * The OpenAPI 3.1 document, generated from the routes' operation declarations: every route of
 * the given plugins, its parameters (path, query), request body, success answer, and the error
 * envelope for each status the adapters or the operation may answer. Nothing here is written
 * by hand per route: a route whose operation is not declared is a boot-time bug, reported as
 * such.
 */
import {
  answer,
  isOperationDef,
  pathParamsOf,
  queryFieldsOf,
  s,
  type JsonSchema,
  type OperationDef,
  type Static,
} from '../../kernel/operation.js';
import type { PluginDef, RouteDef } from '../../kernel/plugin.js';
import { describeAccess, openApiCallers } from '../../kernel/access.js';

export const ErrorEnvelope: JsonSchema = {
  type: 'object',
  description:
    "Every non-2xx answer: a stable `code`, a human `message`, and `details` (for 422 `validation_failed`, `details.errors` is the validator's error list verbatim).",
  properties: {
    error: {
      type: 'object',
      properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object' } },
      required: ['code', 'message', 'details'],
    },
  },
  required: ['error'],
};

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  207: 'Partial success: read the per-entry results',
  302: 'Redirect',
  400: 'Bad request',
  401: 'Missing, malformed, unknown, expired or revoked credential (`unauthorized`)',
  403: 'Not allowed for this identity (`forbidden`, `no_person`)',
  404: 'Unknown resource, or a plugin not enabled for this tenant (`not_found`)',
  409: 'Conflict: revision mismatch, holder, transition denied, lease lost or expired',
  410: 'Gone: what the cursor points at was pruned (`events_pruned`)',
  413: 'Request body over 1 MB (`too_large`)',
  422: "Invalid input (`validation_failed` with the validator's errors, or a more specific code)",
  429: 'Too many requests or open streams (`rate_limited`, `too_many_streams`)',
  502: 'An upstream service failed',
  503: 'Unavailable (an upstream service, or the server is stopping)',
};

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** A non-JSON answer's schema: text, and for an event stream what each event carries. */
function streamSchema(type: string): Json {
  if (type !== 'text/event-stream') return { type: 'string' };
  return {
    type: 'string',
    description:
      'Server-Sent Events: per event `id: <id>`, `event: <type>`, `data: <the event as JSON>` (the `events` items of the JSON answer); `event: gap`, `event: overflow` as described; comment lines as heartbeat.',
  };
}

export interface DocumentOptions {
  /** the server's public base URL when known (absolute OAuth endpoints); else relative */
  baseUrl?: string;
  version: string;
}

type Json = Record<string, unknown>;

function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z_$][\w$]*)/g, '{$1}');
}

function describeQuery(name: string, schema: JsonSchema | undefined, required: boolean): Json {
  const param: Json = { name, in: 'query', required, schema: schema ?? {} };
  if (schema?.description) param.description = schema.description;
  const types = [schema?.type].flat();
  // arrays travel as comma-separated values (repeating the key works too)
  if (types.includes('array')) Object.assign(param, { style: 'form', explode: false });
  return param;
}

/** One route as an OpenAPI operation object. */
export function operationObject(plugin: PluginDef, route: RouteDef, op: OperationDef, security: Json[]): Json {
  const props = (op.input.properties as Record<string, JsonSchema> | undefined) ?? {};
  const required = new Set((op.input.required as string[] | undefined) ?? []);
  const pathParams = pathParamsOf(route.path);
  const queryFields = queryFieldsOf(op, route);
  const parameters: Json[] = pathParams.map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: props[name] ?? { type: 'string' },
    ...(props[name]?.description ? { description: props[name]!.description } : {}),
  }));
  for (const name of queryFields) parameters.push(describeQuery(name, props[name], required.has(name)));
  const prefixed = Object.entries(route.queryPrefixes ?? {});

  const out: Json = {
    operationId: op.name,
    summary: op.summary,
    ...(op.description && op.description !== op.summary ? { description: op.description } : {}),
    tags: [plugin.name],
  };
  // who may call it (kernel/access.ts): the declaration as an extension, and a sentence for readers
  const access = plugin.access?.[op.name];
  if (access) {
    out['x-callers'] = openApiCallers(access);
    out.description = `${(out.description as string | undefined) ?? op.summary}\n\n${describeAccess(access)}`;
  }
  if (parameters.length > 0) out.parameters = parameters;
  for (const [prefix, field] of prefixed) {
    out['x-query-prefixes'] = { ...((out['x-query-prefixes'] as Json | undefined) ?? {}), [prefix]: field };
    out.description = `${(out.description as string | undefined) ?? op.summary}\n\nQuery keys \`${prefix}<name>=<value>\` fill \`${field}\`.`;
  }

  let hasBody = false;
  if (BODY_METHODS.has(route.method)) {
    const taken = new Set([...pathParams, ...queryFields]);
    const bodyProps = Object.fromEntries(Object.entries(props).filter(([k]) => !taken.has(k)));
    if (Object.keys(bodyProps).length > 0) {
      hasBody = true;
      const bodyRequired = [...required].filter((k) => k in bodyProps);
      const bodySchema: Json = { type: 'object', properties: bodyProps, additionalProperties: false };
      if (bodyRequired.length > 0) bodySchema.required = bodyRequired;
      const example = op.example ? Object.fromEntries(Object.entries(op.example).filter(([k]) => k in bodyProps)) : undefined;
      out.requestBody = {
        required: bodyRequired.length > 0,
        content: { 'application/json': { schema: bodySchema, ...(example && Object.keys(example).length > 0 ? { example } : {}) } },
      };
    }
  }

  const success = route.status ?? 200;
  const responses: Json = {};
  const successContent = op.produces
    ? Object.fromEntries(op.produces.map((type) => [type, { schema: /json/.test(type) && op.output ? op.output : streamSchema(type) }]))
    : { 'application/json': { schema: op.output ?? {} } };
  for (const status of [success, ...(op.alsoSucceedsWith ?? [])]) {
    responses[String(status)] = { description: STATUS_TEXT[status] ?? 'Success', content: successContent };
  }
  for (const status of op.redirects ?? []) {
    responses[String(status)] = {
      description: STATUS_TEXT[status] ?? 'Redirect',
      headers: { Location: { description: 'where to go next', schema: { type: 'string' } } },
    };
  }
  const errorStatuses = new Set<number>([401, 404, ...(op.errors ?? [])]);
  if (Object.keys(props).length > 0 || hasBody || prefixed.length > 0) errorStatuses.add(422);
  if (BODY_METHODS.has(route.method)) errorStatuses.add(413).add(422); // an unparsable or non-object body
  for (const status of [...errorStatuses].sort((a, b) => a - b)) {
    responses[String(status)] = {
      description: STATUS_TEXT[status] ?? 'Error',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
    };
  }
  out.responses = responses;
  out.security = route.auth === 'ticket' ? [...security, { renderTicket: [] }] : security;
  return out;
}

/** The document's top level, as get_openapi answers it. */
export const OpenApiDocument = answer(
  {
    openapi: s.string(),
    info: s.object(),
    jsonSchemaDialect: s.string(),
    servers: s.array(s.object()),
    security: s.array(s.object()),
    tags: s.array(s.object()),
    paths: s.object(),
    webhooks: s.object(),
    components: s.object(),
  },
  ['openapi', 'info', 'paths', 'components'],
);

/** The whole document for these plugins (their declared routes, in plugin order). */
export function buildDocument(plugins: PluginDef[], opts: DocumentOptions): Static<typeof OpenApiDocument> {
  const oauth = plugins.some((p) => p.name === 'oauth');
  const base = opts.baseUrl ?? '';
  const securitySchemes: Json = {
    bearer: {
      type: 'http',
      scheme: 'bearer',
      description:
        'A personal access token (`svc_pat_...`), an agent token, an OAuth access token (`svc_oat_...`) or a connector JWT, as `Authorization: Bearer <token>`. Never in a URL.',
    },
  };
  if (plugins.some((p) => p.routes?.some((r) => r.auth === 'ticket'))) {
    securitySchemes.renderTicket = {
      type: 'apiKey',
      in: 'cookie',
      name: 'svc_render_ticket',
      description:
        'A read-only lens share ticket: sent once as `?ticket=`, exchanged by a 302 for this HttpOnly cookie. Honoured only on the lens render route.',
    };
  }
  const security: Json[] = [{ bearer: [] }];
  if (oauth) {
    securitySchemes.oauth = {
      type: 'oauth2',
      description:
        'OAuth 2.1 with PKCE for remote clients (discovery at /.well-known/oauth-authorization-server; dynamic client registration at /oauth/register).',
      flows: {
        authorizationCode: {
          authorizationUrl: `${base}/oauth/authorize`,
          tokenUrl: `${base}/oauth/token`,
          refreshUrl: `${base}/oauth/token`,
          scopes: { workgraph: 'act for the signed-in person in the chosen tenant' },
        },
      },
    };
    security.push({ oauth: ['workgraph'] });
  }

  const paths: Record<string, Json> = {};
  const tags: Json[] = [];
  for (const plugin of plugins) {
    if (!plugin.routes?.length) continue;
    tags.push({ name: plugin.name, ...(plugin.version ? { description: `${plugin.name} plugin ${plugin.version}` } : {}) });
    for (const route of plugin.routes) {
      const op = route.operation;
      if (!isOperationDef(op)) throw new Error(`plugin '${plugin.name}': route ${route.method} ${route.path} has no declared operation`);
      const key = openApiPath(route.path);
      paths[key] = { ...(paths[key] ?? {}), [route.method.toLowerCase()]: operationObject(plugin, route, op, security) };
    }
  }
  // requests the server sends (OpenAPI 3.1 `webhooks`): each plugin's declared payloads, by name
  const webhooks: Record<string, Json> = {};
  for (const plugin of plugins) {
    for (const w of plugin.webhookPayloads ?? []) {
      webhooks[w.name] = {
        post: {
          operationId: `webhook_${w.name.replace(/[^A-Za-z0-9]+/g, '_')}`,
          summary: w.summary,
          ...(w.description ? { description: w.description } : {}),
          tags: [plugin.name],
          requestBody: { required: true, content: { 'application/json': { schema: w.schema } } },
          responses: { '2XX': { description: 'Received: any 2xx answer moves the subscription on to its next event' } },
        },
      };
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Work graph API',
      version: opts.version,
      summary: 'Typed work nodes in git, shared by people and coding agents',
      description:
        'Every route sits under /v1 and needs `Authorization: Bearer <token>`. Bodies are JSON both ways; every non-2xx answer carries `{error: {code, message, details}}`. Every operation is also an MCP tool at /mcp (Streamable HTTP) with the same payload bytes. Getting started: docs/api.md in the repository.',
    },
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    servers: [{ url: base || '/' }],
    security,
    tags,
    paths,
    ...(Object.keys(webhooks).length ? { webhooks } : {}),
    components: { schemas: { ErrorEnvelope }, securitySchemes },
  };
}
