/**
 * The REST adapter's answers (kernel/http.ts): an operation's input from path, query and body,
 * its result as the HTTP answer, and errors as the JSON envelope or, for a browser, a page.
 */
import type Koa from 'koa';
import { Readable } from 'node:stream';
import { errors, type SvcError } from './errors.js';
import { queryFieldsOf, type JsonSchema, type OperationDef } from './operation.js';
import { RawResponse, serialize, StatusPayload, type KernelServices, type RouteDef, type RouteRequest } from './plugin.js';

export const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function sendError(ctx: Koa.Context, err: SvcError, services?: KernelServices): void {
  ctx.status = err.status;
  ctx.type = 'application/json';
  ctx.body = serialize(err.envelope());
  if (err.status === 401)
    ctx.set('WWW-Authenticate', services && (ctx.path === '/mcp' || ctx.path.startsWith('/v1/')) ? services.authChallenge() : 'Bearer');
}

/** A browser navigation (Accept lists text/html before JSON), not an API client; `format=json|text` asks for data. */
export function prefersHtml(ctx: Koa.Context): boolean {
  const format = ctx.query.format;
  if (format !== undefined && format !== 'html') return false;
  return ctx.accepts('text/html', 'application/json') === 'text/html' && /text\/html/.test(ctx.get('accept'));
}

const ERROR_PAGE_TEXT: Record<number, { title: string; hint: string }> = {
  401: {
    title: 'This link is not valid',
    hint: 'The share link is malformed, has expired, or you are not signed in. Ask the person who shared it for a new link.',
  },
  403: { title: 'Not allowed', hint: 'Your identity may not see this page.' },
  404: { title: 'Not found', hint: 'There is nothing here: the view may have been removed, or the address is wrong.' },
};

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The readable page for a browser, the status kept (docs/spec.md error codes stay visible for support). */
export function sendErrorPage(ctx: Koa.Context, err: SvcError): void {
  const text = ERROR_PAGE_TEXT[err.status] ?? {
    title: err.status >= 500 ? 'Something went wrong' : 'This request could not be served',
    hint: err.message,
  };
  ctx.status = err.status;
  ctx.type = 'text/html; charset=utf-8';
  // the page is never to be framed (clickjacking); X-Frame-Options for browsers without CSP 2
  ctx.set(
    'content-security-policy',
    "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  );
  ctx.set('x-frame-options', 'DENY');
  ctx.set('referrer-policy', 'no-referrer');
  ctx.set('cache-control', 'no-store');
  if (err.status === 401) ctx.set('WWW-Authenticate', 'Bearer');
  ctx.body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(text.title)} (${err.status})</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#1a1a1a}code{background:#f2f2f2;padding:0 .25rem}</style>
</head><body><main>
<h1>${escapeHtml(text.title)}</h1>
<p>${escapeHtml(text.hint)}</p>
<p>Status ${err.status}, code <code>${escapeHtml(err.code)}</code>.</p>
</main></body></html>
`;
}

/**
 * A query value in the type its schema asks for, as OpenAPI's `form` style sends it: integers
 * and numbers from their digits, booleans from true/false (or 1/0), arrays from repeated or
 * comma-separated values. A value that does not convert stays a string, so ajv names it.
 */
function fromQuery(raw: string | string[], schema: JsonSchema | undefined): unknown {
  const types = schema ? [schema.type].flat().filter(Boolean) : [];
  const last = Array.isArray(raw) ? raw[raw.length - 1]! : raw;
  if (types.includes('array'))
    return (Array.isArray(raw) ? raw : [raw])
      .flatMap((v) => v.split(','))
      .map((v) => v.trim())
      .filter(Boolean);
  if ((types.includes('integer') || types.includes('number')) && /^-?\d+(\.\d+)?$/.test(last)) return Number(last);
  if (types.includes('boolean')) {
    if (last === 'true' || last === '1') return true;
    if (last === 'false' || last === '0') return false;
  }
  return last;
}

/** Path parameters, query fields and the JSON body, merged into the operation's input (path wins). */
export function restInput(op: OperationDef, route: RouteDef, req: RouteRequest): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  const props = (op.input.properties as Record<string, JsonSchema> | undefined) ?? {};
  if (BODY_METHODS.has(route.method) && req.body !== undefined && req.body !== null) {
    if (typeof req.body !== 'object' || Array.isArray(req.body)) {
      throw errors.validation('request body must be a JSON object', [
        { instancePath: '', schemaPath: '#/type', keyword: 'type', params: { type: 'object' }, message: 'must be object' },
      ]);
    }
    Object.assign(input, req.body);
  }
  for (const name of queryFieldsOf(op, route)) {
    const raw = req.query[name];
    if (raw !== undefined) input[name] = fromQuery(raw, props[name]);
  }
  for (const [prefix, field] of Object.entries(route.queryPrefixes ?? {})) {
    const gathered: Record<string, string> = {};
    for (const [key, raw] of Object.entries(req.query)) {
      if (!key.startsWith(prefix) || raw === undefined) continue;
      gathered[key.slice(prefix.length)] = Array.isArray(raw) ? raw.join(',') : raw;
    }
    if (Object.keys(gathered).length > 0) input[field] = gathered;
  }
  Object.assign(input, req.params);
  return input;
}

export function send(ctx: Koa.Context, route: RouteDef, result: unknown): void {
  if (result instanceof RawResponse) {
    ctx.status = result.status;
    for (const [k, v] of Object.entries(result.headers)) ctx.set(k, v);
    if (result.writesBody && result.attach) {
      // koa leaves the response alone; the attach writes it once every middleware has set its headers
      ctx.respond = false;
      const { attach } = result;
      const res = ctx.res;
      setImmediate(() => attach(res));
      return;
    }
    if (result.body instanceof Readable || Buffer.isBuffer(result.body) || typeof result.body === 'string') ctx.body = result.body;
    else ctx.body = '';
    result.attach?.(ctx.res);
    return;
  }
  let status = route.status ?? 200;
  let payload = result;
  if (result instanceof StatusPayload) {
    status = result.status;
    payload = result.payload;
  }
  ctx.status = status;
  ctx.type = 'application/json';
  ctx.body = serialize(payload);
}
