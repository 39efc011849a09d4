/**
 * A mock of GitHub's REST API generated from GitHub's own published OpenAPI description
 * (`@octokit/openapi`, node_modules/@octokit/openapi/generated/api.github.com.json), served by
 * Stoplight Prism (`@stoplight/prism-cli`) in mock mode with `--errors`: a request the
 * description does not allow (a missing required field, a value outside an enum, a path
 * parameter of the wrong type) is refused with the description's own 4xx answer, so code that
 * passes against it speaks GitHub's API as GitHub describes it. Nothing here writes a response
 * shape by hand: prism answers the description's examples.
 *
 * Why a subset: prism needs about 30 s to load the whole 13 MB description on this machine and
 * about 6 s for the paths a test needs. `deriveDescription` copies those paths and every
 * component they reference (transitively) out of the published file at test start. It changes
 * one thing, programmatically: OpenAPI 3.0's `nullable: true` on a schema without `type` (e.g.
 * the issue title, `oneOf: [string, integer]`, nullable) becomes `anyOf: [schema, {type: null}]`,
 * which is what `nullable` means; prism hands such a schema to ajv unconverted, ajv refuses to
 * compile it, and prism then silently skips validating that request body.
 *
 * Prism keeps no state and answers the same example whatever was sent, so the tests observe
 * what was sent through a recording proxy in front of it (`requests`). The proxy forwards and
 * logs; the one header it changes is Accept: Octokit asks for `application/vnd.github.v3+json`,
 * which GitHub answers as JSON but the description lists only as `application/json`, and prism
 * refuses media types its description does not name (406).
 *
 * `down()` / `up()` take the proxy's port away and back (connections refused, as when GitHub is
 * unreachable) without restarting prism.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createNetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DESCRIPTION = join(ROOT, 'node_modules/@octokit/openapi/generated/api.github.com.json');
const PRISM = join(ROOT, 'node_modules/@stoplight/prism-cli/dist/index.js');

/** The paths the github plugin's outbound side calls, plus /rate_limit (the readiness probe). */
export const DEFAULT_PATHS = [
  '/rate_limit',
  '/repos/{owner}/{repo}',
  '/repos/{owner}/{repo}/issues',
  '/repos/{owner}/{repo}/issues/{issue_number}',
  '/repos/{owner}/{repo}/issues/{issue_number}/comments',
  '/repos/{owner}/{repo}/issues/comments/{comment_id}',
  '/app/installations/{installation_id}/access_tokens',
  '/repos/{owner}/{repo}/installation',
];

export interface RecordedRequest {
  method: string;
  /** path and query, as sent */
  url: string;
  headers: IncomingHttpHeaders;
  /** the parsed JSON body, or the raw text when it is not JSON, or null when empty */
  body: unknown;
  /** prism's status: 4xx when the description refused the request */
  status: number;
  /** prism's parsed answer */
  response: unknown;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/**
 * Two programmatic repairs (see the header): `nullable` without `type` becomes
 * `anyOf [schema, null]`, and an example written `{summary, value: {$ref: example}}` becomes the
 * reference itself.
 */
function repair(v: Json): Json {
  if (Array.isArray(v)) return v.map(repair);
  if (v === null || typeof v !== 'object') return v;
  const value = v.value;
  if (
    value &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    typeof value.$ref === 'string' &&
    value.$ref.startsWith('#/components/examples/')
  )
    return { $ref: value.$ref };
  const o: { [k: string]: Json } = {};
  for (const [k, x] of Object.entries(v)) o[k] = repair(x);
  if (o.nullable === true && o.type === undefined && o.$ref === undefined) {
    const rest = { ...o };
    delete rest.nullable;
    return { anyOf: [rest, { type: 'null' }] };
  }
  return o;
}

/** An example of GitHub's description (`components.examples.<name>.value`), e.g. `issue`: what prism answers for it. */
export function describedExample(name: string): Record<string, unknown> {
  const full = JSON.parse(readFileSync(DESCRIPTION, 'utf8')) as {
    components: { examples: Record<string, { value: Record<string, unknown> }> };
  };
  const found = full.components.examples[name];
  if (!found) throw new Error(`GitHub's description has no example ${name}`);
  return structuredClone(found.value);
}

let cached: { key: string; text: string } | null = null;

/** The published description cut down to `paths` and the components they reference. */
export function deriveDescription(paths: string[] = DEFAULT_PATHS): string {
  const key = paths.join('\n');
  if (cached?.key === key) return cached.text;
  const full = JSON.parse(readFileSync(DESCRIPTION, 'utf8')) as {
    openapi: string;
    info: Json;
    servers: Json;
    paths: Record<string, Json>;
    components: Record<string, Record<string, Json>>;
  };
  const picked: Record<string, Json> = {};
  for (const p of paths) {
    const item = full.paths[p];
    if (!item) throw new Error(`GitHub's description has no path ${p}`);
    picked[p] = item;
  }
  const components: Record<string, Record<string, Json>> = {};
  const seen = new Set<string>();
  const walk = (v: Json): void => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (v === null || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string' && x.startsWith('#/components/')) {
        if (seen.has(x)) continue;
        seen.add(x);
        const [, , kind, name] = x.split('/');
        const target = kind && name ? full.components[kind]?.[name] : undefined;
        if (target === undefined || !kind || !name) throw new Error(`unresolved reference ${x}`);
        (components[kind] ??= {})[name] = target;
        walk(target);
      } else walk(x);
    }
  };
  walk(picked);
  const derived = repair({
    openapi: full.openapi,
    info: full.info,
    servers: full.servers,
    paths: picked,
    components: components as Json,
  });
  cached = { key, text: JSON.stringify(derived) };
  return cached.text;
}

async function freePort(): Promise<number> {
  const srv = createNetServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const address = srv.address();
  await new Promise<void>((r) => srv.close(() => r()));
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

function readBody(req: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function parse(buf: Buffer): unknown {
  if (buf.length === 0) return null;
  const text = buf.toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export class GithubMock {
  /** every request that reached the proxy, in order */
  readonly requests: RecordedRequest[] = [];
  /** the base URL to give Octokit (the recording proxy) */
  url = '';
  /** ms from spawning prism to its first answer */
  startMs = 0;
  private prism: ChildProcess | null = null;
  private prismPort = 0;
  private proxyPort = 0;
  private proxy: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private dir = '';
  private prismOutput = '';

  /** Starts prism on the derived description and the recording proxy in front of it. */
  static async start(paths: string[] = DEFAULT_PATHS): Promise<GithubMock> {
    const mock = new GithubMock();
    try {
      await mock.startPrism(paths);
      await mock.up();
    } catch (err) {
      await mock.stop();
      throw err;
    }
    return mock;
  }

  private async startPrism(paths: string[]): Promise<void> {
    this.dir = mkdtempSync(join(tmpdir(), 'wg-github-mock-'));
    const file = join(this.dir, 'api.github.com.subset.json');
    writeFileSync(file, deriveDescription(paths));
    this.prismPort = await freePort();
    const started = Date.now();
    const child = spawn(
      process.execPath,
      [PRISM, 'mock', '--errors', '-h', '127.0.0.1', '-p', String(this.prismPort), '-v', 'warn', file],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    this.prism = child;
    child.stdout?.on('data', (d: Buffer) => (this.prismOutput = (this.prismOutput + d.toString()).slice(-20_000)));
    child.stderr?.on('data', (d: Buffer) => (this.prismOutput = (this.prismOutput + d.toString()).slice(-20_000)));
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`prism exited ${child.exitCode}: ${this.prismOutput}`);
      try {
        const res = await fetch(`http://127.0.0.1:${this.prismPort}/rate_limit`, { headers: { accept: 'application/json' } });
        await res.arrayBuffer();
        if (res.status === 200) break;
      } catch {
        /* not listening yet */
      }
      if (Date.now() > deadline) throw new Error(`prism did not answer in 60 s: ${this.prismOutput}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    this.startMs = Date.now() - started;
  }

  /** Makes GitHub reachable (again), on the same port. */
  async up(): Promise<void> {
    if (this.proxy) return;
    const server = createServer((req, res) => {
      void (async () => {
        const body = await readBody(req);
        const headers = { ...req.headers, host: `127.0.0.1:${this.prismPort}` };
        // see the header: the one header the proxy changes
        if (typeof headers.accept === 'string' && /application\/vnd\.github(\.v3)?(\+json)?/.test(headers.accept))
          headers.accept = 'application/json';
        const upstream = httpRequest({ host: '127.0.0.1', port: this.prismPort, method: req.method, path: req.url, headers }, (answer) => {
          void readBody(answer).then((out) => {
            this.requests.push({
              method: req.method ?? 'GET',
              url: req.url ?? '/',
              headers: req.headers,
              body: parse(body),
              status: answer.statusCode ?? 0,
              response: parse(out),
            });
            const outHeaders = { ...answer.headers };
            delete outHeaders['transfer-encoding'];
            outHeaders['content-length'] = String(out.length);
            res.writeHead(answer.statusCode ?? 502, outHeaders);
            res.end(out);
          });
        });
        upstream.on('error', (err) => {
          res.writeHead(502, { 'content-type': 'text/plain' });
          res.end(String(err));
        });
        upstream.end(body);
      })();
    });
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.proxyPort, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('proxy has no port');
    this.proxyPort = address.port;
    this.url = `http://127.0.0.1:${this.proxyPort}`;
    this.proxy = server;
  }

  /** Makes GitHub unreachable: the port refuses connections, open ones are cut. */
  async down(): Promise<void> {
    const server = this.proxy;
    if (!server) return;
    this.proxy = null;
    const closed = new Promise<void>((r) => server.close(() => r()));
    for (const s of this.sockets) s.destroy();
    await closed;
  }

  /** The requests with this method whose path (without query) matches. */
  calls(method: string, path: RegExp): RecordedRequest[] {
    return this.requests.filter((r) => r.method === method && path.test(r.url.split('?')[0] ?? ''));
  }

  async stop(): Promise<void> {
    await this.down();
    const child = this.prism;
    this.prism = null;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}
