/**
 * The `openapi` plugin (always on): the API description and its human reference.
 *
 * - `GET /v1/openapi.json`: the OpenAPI 3.1 document of every route of every plugin enabled
 *   for the caller's tenant, generated from the operation declarations (document.ts).
 * - `GET /openapi.json`: the same document for every plugin this server runs, without a token
 *   (the API's shape is not a secret; what a tenant may use is), for the reference page and
 *   for code generators.
 * - `GET /docs`: the rendered reference (Scalar, served from the installed package; no CDN),
 *   under a Content-Security-Policy without inline scripts.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { defineOperation, object } from '../../kernel/operation.js';
import { definePlugin, serialize, type KernelServices, type OpContext, type PluginDef } from '../../kernel/plugin.js';
import { openapiAccess } from './access.js';
import { buildDocument, OpenApiDocument } from './document.js';

const API_VERSION = '1.0.0';

/** Documents are built once per set of plugins (a tenant's plugin change picks another). */
const documents = new Map<string, { text: string; doc: ReturnType<typeof buildDocument> }>();

function documentFor(plugins: PluginDef[], services: KernelServices) {
  const key = `${services.baseUrl ?? ''}|${plugins.map((p) => p.name).join(',')}`;
  let entry = documents.get(key);
  if (!entry) {
    const doc = buildDocument(plugins, { baseUrl: services.baseUrl, version: API_VERSION });
    entry = { doc, text: serialize(doc) };
    documents.set(key, entry);
  }
  return entry;
}

export const getOpenApi = defineOperation({
  name: 'get_openapi',
  summary: "The OpenAPI 3.1 document of this tenant's API",
  description:
    "Every route of every plugin enabled for the caller's tenant: parameters, request bodies, answers and the error envelope, generated from the same declarations that validate requests and define the MCP tools.",
  input: object({}),
  output: OpenApiDocument,
  run: async (ctx: OpContext) => documentFor(ctx.services.host.enabledFor(ctx.tenant), ctx.services).doc,
});

const require = createRequire(import.meta.url);
let scalarBundle: Buffer | null = null;
// Starts the reference on the server's own document: served as a file, not an inline script,
// so the page keeps a Content-Security-Policy without 'unsafe-inline' scripts.
const startScript = `window.Scalar.createApiReference('#reference', {
  url: document.getElementById('reference').dataset.url,
  withDefaultFonts: false,
  // nothing leaves the server: no telemetry, no hosted AI agent, no hosted developer tools
  telemetry: false,
  agent: { disabled: true },
  showDeveloperTools: 'never',
});
`;

const PAGE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  // the reference component sets element styles at run time
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

const referencePage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Work graph API reference</title></head>
<body><main id="reference" data-url="/openapi.json"><noscript>The reference needs JavaScript; the document itself is at <a href="/openapi.json">/openapi.json</a>.</noscript></main>
<script src="/docs/scalar.js"></script>
<script src="/docs/start.js"></script>
</body></html>
`;

export const openapiPlugin = definePlugin({
  name: 'openapi',
  description: 'The API description and its reference (always on).',
  access: openapiAccess,
  version: '1.0.0',
  alwaysOn: true,
  routes: [{ method: 'GET', path: '/v1/openapi.json', operation: getOpenApi }],
  middlewarePaths: ['/openapi.json', '/docs'],
  middleware: (services) => async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    switch (ctx.path) {
      case '/openapi.json':
        ctx.type = 'application/json';
        ctx.set('cache-control', 'no-cache');
        ctx.body = documentFor(services.host.plugins, services).text;
        return;
      case '/docs':
      case '/docs/':
        ctx.type = 'text/html; charset=utf-8';
        ctx.set('content-security-policy', PAGE_CSP);
        ctx.set('x-content-type-options', 'nosniff');
        ctx.body = referencePage;
        return;
      case '/docs/scalar.js':
        scalarBundle ??= readFileSync(require.resolve('@scalar/api-reference/browser/standalone.js'));
        ctx.type = 'text/javascript; charset=utf-8';
        ctx.set('cache-control', 'public, max-age=86400');
        ctx.body = scalarBundle;
        return;
      case '/docs/start.js':
        ctx.type = 'text/javascript; charset=utf-8';
        ctx.body = startScript;
        return;
      default:
        return next();
    }
  },
});
