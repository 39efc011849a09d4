/**
 * Server configuration from the environment (docs/design.md §2), the injected clock and the logger.
 */
import { resolve } from 'node:path';
import { pino } from 'pino';

export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests can move forward without sleeping. */
export class ManualClock implements Clock {
  private offsetMs = 0;
  now(): number {
    return Date.now() + this.offsetMs;
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  debug?(message: string, fields?: Record<string, unknown>): void;
  /**
   * The access line of one request (kernel/http-common.ts), the same JSON `info('request', ...)`
   * writes with these fields in this order, built without pino's generic serializer (one a
   * request). Absent: the recorder calls `info`.
   */
  request?(fields: AccessFields): void;
}

/** The fields of an access line, in the order the line has them. */
export interface AccessFields {
  method: string;
  route: string;
  status: number;
  duration_ms: number;
  tenant: string | null;
  actor: string | null;
  request_id: string;
}

/** Tokens must never reach a log line: anything token-shaped is masked before writing. */
const TOKEN_LIKE = /svc_(pat|ast|oat|ort)_[0-9A-Za-z_-]+/g;
export function redact(text: string): string {
  // most lines carry nothing token-shaped: a substring test is far cheaper than a global replace
  return text.includes('svc_') ? text.replace(TOKEN_LIKE, 'svc_$1_[redacted]') : text;
}

/**
 * pino's `isoTime`, formatted once per millisecond: an access line per request made
 * `toISOString()` a measurable part of a read (docs/performance.md "Reads, fourth session"),
 * and many lines share a millisecond under load.
 */
let isoMs = -1;
let isoField = '';
export function isoTimeField(): string {
  const now = Date.now();
  if (now !== isoMs) {
    isoMs = now;
    isoField = `,"time":"${new Date(now).toISOString()}"`;
  }
  return isoField;
}

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/**
 * Structured logs: one JSON object a line (pino), `{level, time, msg, ...fields}`, written
 * through `write` (default stderr). `LOG_LEVEL` sets the level (default info; `quiet` makes
 * it warn). Every line passes through `redact()` last, so a token-shaped string in any field
 * is masked whatever logged it.
 */
/**
 * stderr, written in batches: info lines (the access line of every request among them) wait up to
 * STDERR_BATCH_MS or STDERR_BATCH_BYTES and go out in one write; a line of any other level goes
 * out at once, with everything before it. stderr is synchronous on a pipe or a file, a system call
 * per write, and on a pipe each write also wakes the reader: one write per event-loop turn was
 * still about 15 µs of system time a node read (docs/performance.md). Lines still pending when
 * the process exits are written then; a kill -9 can lose at most the last STDERR_BATCH_MS of info
 * lines (pino's own asynchronous destination makes the same trade).
 */
const STDERR_BATCH_MS = 25;
const STDERR_BATCH_BYTES = 64 * 1024;
const pendingStderr: string[] = [];
let pendingBytes = 0;
let stderrTimer: NodeJS.Timeout | null = null;
function flushStderr(): void {
  if (stderrTimer) clearTimeout(stderrTimer);
  stderrTimer = null;
  if (pendingStderr.length === 0) return;
  const text = pendingStderr.join('');
  pendingStderr.length = 0;
  pendingBytes = 0;
  process.stderr.write(text);
}
function writeStderr(line: string): void {
  pendingStderr.push(line + '\n');
  pendingBytes += line.length + 1;
  if (!line.startsWith('{"level":"info"') || pendingBytes >= STDERR_BATCH_BYTES) return flushStderr();
  if (stderrTimer) return;
  stderrTimer = setTimeout(flushStderr, STDERR_BATCH_MS);
  stderrTimer.unref();
}
process.once('exit', flushStderr);

export function createLogger(
  write: (line: string) => void = writeStderr,
  quiet = false,
  level: string = process.env.LOG_LEVEL || (quiet ? 'warn' : 'info'),
): Logger {
  const chosen = (LOG_LEVELS as readonly string[]).includes(level) ? level : 'info';
  const destination = { write: (line: string) => write(redact(line.endsWith('\n') ? line.slice(0, -1) : line)) };
  const logger = pino(
    {
      level: chosen,
      base: undefined,
      timestamp: isoTimeField,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
  const emit = (lvl: 'debug' | 'info' | 'warn' | 'error') => (message: string, fields?: Record<string, unknown>) =>
    fields && Object.keys(fields).length > 0 ? logger[lvl](fields, message) : logger[lvl](message);
  // the route, tenant and actor of an access line repeat from request to request: their JSON is
  // kept (a bounded table, emptied when full; the same string object is found by its cached hash)
  const quoted = new Map<string, string>();
  const str = (v: string | null) => {
    if (v === null) return 'null';
    let q = quoted.get(v);
    if (q === undefined) {
      if (quoted.size >= 4096) quoted.clear();
      quoted.set(v, (q = JSON.stringify(v)));
    }
    return q;
  };
  // pino's line for info(fields, 'request'): level, time, the fields in order, msg
  const request = (f: AccessFields) => {
    if (!logger.isLevelEnabled('info')) return;
    write(
      redact(
        `{"level":"info"${isoTimeField()},"method":${str(f.method)},"route":${str(f.route)},"status":${f.status},"duration_ms":${f.duration_ms},"tenant":${str(f.tenant)},"actor":${str(f.actor)},"request_id":${JSON.stringify(f.request_id)},"msg":"request"}`,
      ),
    );
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error'), request };
}

export interface ServerConfig {
  host: string;
  port: number;
  dataDir: string;
  tlsCert: string | null;
  tlsKey: string | null;
  allowHttp: boolean;
  orgSlug: string;
  adminName: string;
  adminEmail: string;
  bootstrapToken: string | null;
  captureMetrics: boolean;
  appUrl: string | null;
  idpUrl: string | null;
  /**
   * The app's OpenID Connect sign-in (SVC_OIDC_ISSUER, SVC_OIDC_CLIENT_ID, SVC_OIDC_CLIENT_SECRET):
   * all three or none; null = off
   */
  oidc: { issuer: string; clientId: string; clientSecret: string } | null;
  ingestUrl: string | null;
  /** how often the server looks for tenants and plugin changes made by the CLI */
  tenantPollMs: number;
  /** fsync object, ref and state writes (on unless a benchmark or test says otherwise) */
  fsync: boolean;
  /** a separate listener for `GET /metrics` without auth (METRICS_PORT), on METRICS_HOST */
  metricsPort: number | null;
  metricsHost: string;
  /** `GET /metrics` on the main port, for this bearer token only (SVC_METRICS_TOKEN) */
  metricsToken: string | null;
  /** how long a graceful stop waits for in-flight requests (SVC_SHUTDOWN_GRACE_MS, default 10 s) */
  shutdownGraceMs: number;
  /**
   * how long an idle kept-alive client connection stays open (SVC_KEEP_ALIVE_MS, default 5 s):
   * behind a load balancer it must exceed the balancer's own idle timeout
   */
  keepAliveMs: number;
  /** the public base URL behind a proxy (SVC_PUBLIC_URL): OAuth issuer and resource; default the listening URL */
  publicUrl: string | null;
  /** connector JWTs: issuer, audience, and a JWKS URL or an inline JWKS (SVC_JWT_*) */
  jwtIssuer: string | null;
  jwtAudience: string | null;
  jwtJwksUrl: string | null;
  jwtJwks: string | null;
  /** cluster mode: the PostgreSQL operational store and ownership (SVC_DATABASE_URL); null = embedded, one process */
  databaseUrl: string | null;
  /** cluster mode: ownership lease length in ms (SVC_CLUSTER_LEASE_MS, default 6000) */
  clusterLeaseMs: number;
  /** cluster mode: the URL other members forward to (SVC_CLUSTER_URL; default the listening URL) */
  clusterUrl: string | null;
  /** the off-site copy: push each tenant to this git remote after each checkpoint (SVC_BACKUP_REMOTE) */
  backupRemote: string | null;
  /**
   * DNS-rebinding protection (kernel/host-guard.ts): further `Host` names a request may carry
   * besides SVC_PUBLIC_URL's and, when bound to loopback, the loopback names (SVC_ALLOWED_HOSTS,
   * comma list; `name` allows any port, `name:port` that port only)
   */
  allowedHosts: string[];
  /** further `Origin`s a browser request may come from (SVC_ALLOWED_ORIGINS, comma list of `scheme://host[:port]`) */
  allowedOrigins: string[];
  /** sign-in attempts allowed per client address and minute on the app's token form (SVC_SIGNIN_RATE, default 30) */
  signinRatePerMinute: number;
  /**
   * OAuth: requests a minute from one client address to each of /oauth/authorize,
   * /oauth/consent, /oauth/token, /oauth/revoke (SVC_OAUTH_RATE, default 120); /oauth/register gets a quarter of it
   */
  oauthRatePerMinute: number;
  /**
   * OAuth client ID metadata documents from loopback or private addresses, over http too
   * (SVC_OAUTH_ALLOW_PRIVATE_METADATA=1): for tests and closed networks only; off by default
   */
  oauthAllowPrivateMetadata: boolean;
  /** an MCP session without an open notification stream ends after this long without a request (SVC_MCP_SESSION_IDLE_MS, default 30 min) */
  mcpSessionIdleMs: number;
  /** MCP sessions one token may hold at once (SVC_MCP_SESSIONS_PER_TOKEN, default 32) */
  mcpSessionsPerToken: number;
  /** MCP sessions one tenant may hold at once on a process (SVC_MCP_SESSIONS_PER_TENANT, default 500) */
  mcpSessionsPerTenant: number;
  /** GET /v1/events and `wait_for_events` (plugins/events; docs/operator.md "Event streams") */
  events: EventStreamConfig;
  /** the event log keeps at least this many newest events per tenant (SVC_EVENTS_MAX, default 100000) */
  eventsMax: number;
  /** `workgraph serve` collects garbage once it goes quiet after allocating a lot (kernel/idle-gc.ts; SVC_IDLE_GC=0 turns it off) */
  idleGc: boolean;
  /** and drops events older than this many days (SVC_EVENTS_RETENTION_DAYS, default 30) */
  eventsRetentionDays: number;
  /**
   * Webhook targets on loopback, private, link-local and other non-public addresses
   * (SVC_WEBHOOK_ALLOW_PRIVATE=1): for tests and closed networks only; off by default
   */
  webhookAllowPrivate: boolean;
  /** how long one webhook delivery may take, connect to last byte (SVC_WEBHOOK_TIMEOUT_MS, default 10 s) */
  webhookTimeoutMs: number;
  /**
   * GitHub's REST API base URL for the github plugin's outbound calls (SVC_GITHUB_API_URL,
   * default https://api.github.com): a GitHub Enterprise Server's `https://HOST/api/v3`, or a
   * test's mock
   */
  githubApiUrl: string;
}

export interface EventStreamConfig {
  /** a comment line on every open stream this often (SVC_EVENTS_HEARTBEAT_MS, default 15 s) */
  heartbeatMs: number;
  /** open streams and waits per token (SVC_EVENTS_STREAMS_PER_TOKEN, default 20) */
  streamsPerToken: number;
  /** open streams and waits per tenant (SVC_EVENTS_STREAMS_PER_TENANT, default 1000) */
  streamsPerTenant: number;
  /** events queued for a client that does not read before it is cut (SVC_EVENTS_CLIENT_BUFFER, default 1000) */
  bufferEvents: number;
  /** bytes queued for such a client before it is cut (SVC_EVENTS_CLIENT_BUFFER_BYTES, default 1 MiB) */
  bufferBytes: number;
  /** how long a cut client has to take its final `overflow` event before the connection is closed */
  cutGraceMs: number;
}

/** The three OIDC settings together, or none: half a configuration is a start-up error, not a sign-in failing later. */
function oidcOf(e: NodeJS.ProcessEnv): ServerConfig['oidc'] {
  const issuer = env(e, 'OIDC_ISSUER');
  const clientId = env(e, 'OIDC_CLIENT_ID');
  const clientSecret = env(e, 'OIDC_CLIENT_SECRET');
  if (issuer === undefined && clientId === undefined && clientSecret === undefined) return null;
  if (issuer === undefined || clientId === undefined || clientSecret === undefined)
    throw new Error('SVC_OIDC_ISSUER, SVC_OIDC_CLIENT_ID and SVC_OIDC_CLIENT_SECRET are set together or not at all');
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new Error(`SVC_OIDC_ISSUER must be a URL, got '${issuer}'`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackName(url.hostname)))
    throw new Error('SVC_OIDC_ISSUER must be https (http only on a loopback address)');
  return { issuer, clientId, clientSecret };
}

/** localhost, 127.0.0.0/8 or [::1]: a provider on the same machine may speak plain http. */
export function isLoopbackName(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** Reads SVC_* names, falling back to the legacy WORKGRAPH_* spellings. */
function env(e: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = e[`SVC_${name}`] ?? e[`WORKGRAPH_${name}`];
  return v === '' ? undefined : v;
}

export function configFromEnv(e: NodeJS.ProcessEnv = process.env): ServerConfig {
  const port = e.PORT === undefined || e.PORT === '' ? 8080 : Number(e.PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be an integer 0-65535, got '${e.PORT}'`);
  return {
    host: e.HOST || '127.0.0.1',
    port,
    dataDir: resolve(env(e, 'DATA_DIR') ?? './data'),
    tlsCert: env(e, 'TLS_CERT') ?? null,
    tlsKey: env(e, 'TLS_KEY') ?? null,
    allowHttp: env(e, 'ALLOW_HTTP') === '1',
    orgSlug: env(e, 'ORG_SLUG') ?? 'local',
    adminName: env(e, 'ADMIN_NAME') ?? 'Admin',
    adminEmail: env(e, 'ADMIN_EMAIL') ?? 'admin@localhost',
    bootstrapToken: env(e, 'BOOTSTRAP_TOKEN') ?? null,
    captureMetrics: env(e, 'CAPTURE_METRICS') === '1',
    appUrl: env(e, 'APP_URL') ?? null,
    idpUrl: env(e, 'IDP_URL') ?? null,
    oidc: oidcOf(e),
    ingestUrl: env(e, 'INGEST_URL') ?? null,
    tenantPollMs: 500,
    fsync: env(e, 'FSYNC') !== '0',
    metricsPort: optionalPort(e.METRICS_PORT, 'METRICS_PORT'),
    metricsHost: e.METRICS_HOST || '127.0.0.1',
    metricsToken: env(e, 'METRICS_TOKEN') ?? null,
    shutdownGraceMs: Number(env(e, 'SHUTDOWN_GRACE_MS') ?? 10_000) || 10_000,
    keepAliveMs: Number(env(e, 'KEEP_ALIVE_MS') ?? 5000) || 5000,
    publicUrl: env(e, 'PUBLIC_URL') ?? null,
    jwtIssuer: env(e, 'JWT_ISSUER') ?? null,
    jwtAudience: env(e, 'JWT_AUDIENCE') ?? null,
    jwtJwksUrl: env(e, 'JWT_JWKS_URL') ?? null,
    jwtJwks: env(e, 'JWT_JWKS') ?? null,
    databaseUrl: env(e, 'DATABASE_URL') ?? null,
    clusterLeaseMs: positiveInt(env(e, 'CLUSTER_LEASE_MS'), 'SVC_CLUSTER_LEASE_MS', 6000),
    clusterUrl: env(e, 'CLUSTER_URL') ?? null,
    backupRemote: env(e, 'BACKUP_REMOTE') ?? null,
    allowedHosts: hostList(env(e, 'ALLOWED_HOSTS')),
    allowedOrigins: originList(env(e, 'ALLOWED_ORIGINS')),
    signinRatePerMinute: countOf(env(e, 'SIGNIN_RATE'), 'SVC_SIGNIN_RATE', 30),
    oauthRatePerMinute: countOf(env(e, 'OAUTH_RATE'), 'SVC_OAUTH_RATE', 120),
    oauthAllowPrivateMetadata: env(e, 'OAUTH_ALLOW_PRIVATE_METADATA') === '1',
    mcpSessionIdleMs: positiveInt(env(e, 'MCP_SESSION_IDLE_MS'), 'SVC_MCP_SESSION_IDLE_MS', 30 * 60_000),
    mcpSessionsPerToken: countOf(env(e, 'MCP_SESSIONS_PER_TOKEN'), 'SVC_MCP_SESSIONS_PER_TOKEN', 32),
    mcpSessionsPerTenant: countOf(env(e, 'MCP_SESSIONS_PER_TENANT'), 'SVC_MCP_SESSIONS_PER_TENANT', 500),
    eventsMax: countOf(env(e, 'EVENTS_MAX'), 'SVC_EVENTS_MAX', 100_000),
    idleGc: env(e, 'IDLE_GC') !== '0',
    eventsRetentionDays: countOf(env(e, 'EVENTS_RETENTION_DAYS'), 'SVC_EVENTS_RETENTION_DAYS', 30),
    webhookAllowPrivate: env(e, 'WEBHOOK_ALLOW_PRIVATE') === '1',
    webhookTimeoutMs: countOf(env(e, 'WEBHOOK_TIMEOUT_MS'), 'SVC_WEBHOOK_TIMEOUT_MS', 10_000),
    githubApiUrl: (env(e, 'GITHUB_API_URL') ?? 'https://api.github.com').replace(/\/+$/, ''),
    events: {
      heartbeatMs: countOf(env(e, 'EVENTS_HEARTBEAT_MS'), 'SVC_EVENTS_HEARTBEAT_MS', 15_000),
      streamsPerToken: countOf(env(e, 'EVENTS_STREAMS_PER_TOKEN'), 'SVC_EVENTS_STREAMS_PER_TOKEN', 20),
      streamsPerTenant: countOf(env(e, 'EVENTS_STREAMS_PER_TENANT'), 'SVC_EVENTS_STREAMS_PER_TENANT', 1000),
      bufferEvents: countOf(env(e, 'EVENTS_CLIENT_BUFFER'), 'SVC_EVENTS_CLIENT_BUFFER', 1000),
      bufferBytes: countOf(env(e, 'EVENTS_CLIENT_BUFFER_BYTES'), 'SVC_EVENTS_CLIENT_BUFFER_BYTES', 1024 * 1024),
      cutGraceMs: 5000,
    },
  };
}

const commaList = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

/** `name` or `name:port` (IPv6 in brackets), lower-cased; anything else stops the start with its reason. */
function hostList(value: string | undefined): string[] {
  return commaList(value).map((raw) => {
    let url: URL | null;
    try {
      url = new URL(`http://${raw}`);
    } catch {
      url = null;
    }
    if (!url || url.host === '' || url.username || url.password || `${url.host}` !== raw.toLowerCase().replace(/:80$/, '')) {
      throw new Error(`SVC_ALLOWED_HOSTS: '${raw}' is not a host name or host:port`);
    }
    return raw.toLowerCase();
  });
}

/** `scheme://host[:port]` (an origin: no path, query or credentials), normalized as browsers send it. */
function originList(value: string | undefined): string[] {
  return commaList(value).map((raw) => {
    let url: URL | null;
    try {
      url = new URL(raw);
    } catch {
      url = null;
    }
    if (
      !url ||
      (url.protocol !== 'http:' && url.protocol !== 'https:') ||
      url.origin === 'null' ||
      raw.replace(/\/+$/, '').toLowerCase() !== url.origin.toLowerCase()
    ) {
      throw new Error(`SVC_ALLOWED_ORIGINS: '${raw}' is not an origin (scheme://host[:port], nothing after)`);
    }
    return url.origin;
  });
}

function countOf(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got '${value}'`);
  return n;
}

function positiveInt(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 300) throw new Error(`${name} must be an integer of at least 300 (ms), got '${value}'`);
  return n;
}

function optionalPort(value: string | undefined, name: string): number | null {
  if (value === undefined || value === '') return null;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`${name} must be an integer 0-65535, got '${value}'`);
  return port;
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
