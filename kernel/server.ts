/**
 * Boot: validate plugins, open (or on first start create) tenants, serve HTTP or HTTPS,
 * and keep watching the data directory for tenants and plugin changes the CLI makes.
 */
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { setMaxListeners } from 'node:events';
import { withDirectReads } from './direct-reads.js';
import { Warmer } from './warm.js';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createSandbox } from '../sandbox/index.js';
import type { Sandbox } from '../sandbox/types.js';
import { seedPack } from '../seed-pack/index.js';
import { createLogger, isLoopback, systemClock, type Clock, type Logger, type ServerConfig } from './config.js';
import { hostRules } from './host-guard.js';
import { closeMcpSessions, createApp, createMetricsApp } from './http.js';
import { IDENTITY_PLUGIN, type KernelServices, type PluginDef } from './plugin.js';
import { IdentityAuthority } from './identity-guard.js';
import { PluginHost } from './plugin-host.js';
import { KernelMetrics } from './metrics.js';
import { ORG_PATTERN, TenantManager } from './tenants.js';
import type { ClusterRuntime } from './cluster/runtime.js';

export interface ServerOptions {
  config: ServerConfig;
  plugins: PluginDef[];
  clock?: Clock;
  log?: Logger;
  sandbox?: Sandbox;
  /** told when each warm-up (kernel/warm.ts) has settled: `workgraph serve` collects garbage there */
  afterWarmUp?: (name: string) => void;
}

export interface RunningServer {
  url: string;
  port: number;
  services: KernelServices;
  /** set on first start: the bootstrap admin PAT (tests read it; the CLI writes admin-token) */
  bootstrap: { org: string; person: string; token: string } | null;
  /** the separate metrics listener's URL (METRICS_PORT), or null */
  metricsUrl: string | null;
  /** when a request last started or finished (performance.now() time; 0: none yet) */
  lastRequestAt(): number;
  /** the kernel's warm-ups are queued or running (kernel/warm.ts) */
  warming(): boolean;
  /** immediate stop: connections are cut, everything acknowledged is written out */
  close(): Promise<void>;
  /**
   * Graceful stop (SIGTERM/SIGINT): stop accepting, let in-flight requests finish (at most
   * `graceMs`, default SVC_SHUTDOWN_GRACE_MS or 10 s), write everything out, close.
   */
  shutdown(graceMs?: number): Promise<void>;
}

export interface Kernel {
  services: KernelServices;
  sandbox: Sandbox;
  bootstrap: RunningServer['bootstrap'];
  /** cluster mode (SVC_DATABASE_URL): the database, this member and the request router */
  cluster: ClusterRuntime | null;
  /** aborts `services.stopSignal`: long-lived answers (event streams, waits) end now */
  beginStop(): void;
  /** a warm-up is queued or running (kernel/warm.ts) */
  warming(): boolean;
  close(): Promise<void>;
}

function hasTenants(dataDir: string): boolean {
  try {
    return readdirSync(join(dataDir, 'tenants')).some((n) => ORG_PATTERN.test(n));
  } catch {
    return false;
  }
}

/** A graceful stop closes the listener once no request ran for this long (ms). */
const QUIET_MS = 250;

/** Data directories this process holds the serving lock of, with how many kernels use each. */
const heldLocks = new Map<string, number>();

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  // a recycled pid that now belongs to something other than node is not a workgraph process
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('node');
  } catch {
    return true;
  }
}

/**
 * One serving process per data directory. Two processes committing to the same tenant
 * repositories would each advance `main` from their own in-memory HEAD and silently drop the
 * other's acknowledged commits, so `serve` and local-mode `mcp` take `SVC_DATA_DIR/server.lock`
 * (the operator CLI's tenant and token commands do not commit to live tenants and need no lock).
 * A lock whose process is gone (kill -9) is taken over. Returns the release function.
 */
export function acquireDataDirLock(dataDir: string): () => void {
  const file = join(dataDir, 'server.lock');
  const held = heldLocks.get(file);
  if (held !== undefined) {
    // the same process (tests start several kernels on one directory): share the lock
    heldLocks.set(file, held + 1);
    return releaserFor(file);
  }
  mkdirSync(dataDir, { recursive: true });
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      try {
        writeSync(fd, JSON.stringify({ pid: process.pid, started: new Date().toISOString() }) + '\n');
      } finally {
        closeSync(fd);
      }
      // one exit listener for every lock this process holds (unlinkIfOurs walks them all)
      if (heldLocks.size === 0) process.once('exit', unlinkIfOurs);
      heldLocks.set(file, 1);
      return releaserFor(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw err;
    }
    let pid = 0;
    try {
      pid = Number((JSON.parse(readFileSync(file, 'utf8')) as { pid?: unknown }).pid) || 0;
    } catch {
      /* unreadable or half-written: treat as stale */
    }
    if (pid > 0 && pid !== process.pid && processAlive(pid)) {
      throw new Error(
        `another workgraph process (pid ${pid}) is serving ${dataDir}; stop it first, or run \`workgraph mcp\` in proxy mode (SVC_SERVER, SVC_TOKEN). If no such process exists, delete ${file}`,
      );
    }
    rmSync(file, { force: true });
  }
}

function unlinkIfOurs(): void {
  for (const file of heldLocks.keys()) {
    try {
      if ((JSON.parse(readFileSync(file, 'utf8')) as { pid?: unknown }).pid === process.pid) unlinkSync(file);
    } catch {
      /* already gone */
    }
  }
}

function releaserFor(file: string): () => void {
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const count = (heldLocks.get(file) ?? 1) - 1;
    if (count > 0) return void heldLocks.set(file, count);
    heldLocks.delete(file);
    try {
      if ((JSON.parse(readFileSync(file, 'utf8')) as { pid?: unknown }).pid === process.pid) unlinkSync(file);
    } catch {
      /* already gone */
    }
    if (heldLocks.size === 0) process.removeListener('exit', unlinkIfOurs);
  };
}

/** The kernel without a listener: tenants, plugins, sandbox. Used by the server, stdio MCP and the CLI. */
export async function startKernel(opts: ServerOptions): Promise<Kernel> {
  const { config } = opts;
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger();
  const host = new PluginHost(opts.plugins);
  // cluster mode: many processes share the data directory; ownership leases keep them apart
  const releaseLock = config.databaseUrl ? () => undefined : acquireDataDirLock(config.dataDir);
  try {
    return await openKernel(opts, clock, log, host, releaseLock);
  } catch (err) {
    releaseLock();
    throw err;
  }
}

async function openKernel(opts: ServerOptions, clock: Clock, log: Logger, host: PluginHost, releaseLock: () => void): Promise<Kernel> {
  const { config } = opts;
  let tenants: TenantManager | null = null;
  const metrics = new KernelMetrics(() => tenants?.list().length ?? 0);
  // cluster mode's code (and the PostgreSQL driver it loads) is imported only when it is on
  const [clusterRuntime, pgState] = config.databaseUrl
    ? await Promise.all([import('./cluster/runtime.js'), import('./cluster/pg-state.js')])
    : [null, null];
  const runtime =
    clusterRuntime && config.databaseUrl
      ? await clusterRuntime.openClusterRuntime({
          databaseUrl: config.databaseUrl,
          leaseMs: config.clusterLeaseMs,
          log,
          tenants: () => tenants!,
        })
      : null;
  const ownSandbox = opts.sandbox ? null : createSandbox();
  const sandbox = metrics.observeSandbox(opts.sandbox ?? ownSandbox!);
  tenants = new TenantManager({
    dataDir: config.dataDir,
    sandbox,
    pack: seedPack,
    plugins: host.plugins,
    clock,
    log,
    fsync: config.fsync,
    metrics,
    backupRemote: config.backupRemote,
    eventRetention: { maxEvents: config.eventsMax, maxAgeDays: config.eventsRetentionDays },
    creation: runtime?.creation,
    operational: runtime && pgState ? pgState.pgOperational(runtime.db, (org) => runtime.cluster.fenceOf(org)) : undefined,
  });
  runtime?.cluster.attach(tenants);
  const stopping = new AbortController();
  const warmer = new Warmer(log, opts.afterWarmUp);
  // every open event stream and wait listens to it: hundreds of listeners are expected, not a leak
  setMaxListeners(0, stopping.signal);
  const services: KernelServices = {
    clock,
    log,
    config,
    tenants,
    host,
    ticketAuthenticators: [],
    metrics,
    bearerAuthenticators: [],
    authChallenge: () => 'Bearer',
    registeredRoutes: [],
    requestRouters: [],
    globalStore: runtime && pgState ? pgState.pgGlobalStores(runtime.db) : undefined,
    serves: runtime ? (org) => runtime.cluster.fenceOf(org) !== null : undefined,
    stopSignal: stopping.signal,
    warm: (name, run) => warmer.add(name, run),
  };
  // the capability to change identity facts goes to the identity plugin and nowhere else
  host.plugins.find((p) => p.name === IDENTITY_PLUGIN)?.receiveIdentityAuthority?.(IdentityAuthority.issue(IDENTITY_PLUGIN));
  for (const p of host.plugins) await p.init?.(services);
  tenants!.onTenantChange = async (tenant, added) => {
    for (const p of host.plugins) if (added.includes(p.name) && host.usable(tenant, p)) await p.tenantOpen?.(tenant, services);
  };

  let bootstrap: Kernel['bootstrap'] = null;
  const firstStart = async () => {
    const created = await tenants!.create({
      org: config.orgSlug,
      adminName: config.adminName,
      adminEmail: config.adminEmail,
      plugins: host.plugins.map((p) => p.name),
      adminToken: config.bootstrapToken,
    });
    bootstrap = { org: config.orgSlug, person: created.person, token: created.token };
    if (!config.bootstrapToken) writeFileSync(join(config.dataDir, 'admin-token'), created.token + '\n', { mode: 0o600 });
    log.info('first start: created tenant', {
      org: config.orgSlug,
      admin: created.person,
      token_file: config.bootstrapToken ? null : join(config.dataDir, 'admin-token'),
    });
  };
  if (runtime) {
    // the cluster's first start: exactly one of the processes starting together creates the tenant
    await runtime.exclusively(async () => {
      if (!(await runtime.hasTenants())) await firstStart();
    });
  } else {
    if (!hasTenants(config.dataDir)) await firstStart();
    await tenants.scan();
  }
  warmer.start();
  return {
    services,
    sandbox,
    bootstrap,
    cluster: runtime,
    beginStop: () => stopping.abort(),
    warming: () => warmer.busy,
    async close() {
      stopping.abort();
      warmer.stop();
      try {
        for (const p of [...host.plugins].reverse()) await p.close?.();
        await runtime?.close();
        await tenants!.closeAll();
        if (ownSandbox) await ownSandbox.close();
      } finally {
        releaseLock();
      }
    },
  };
}

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const { config } = opts;
  if (Boolean(config.tlsCert) !== Boolean(config.tlsKey)) {
    throw new Error('SVC_TLS_CERT and SVC_TLS_KEY must be set together (one of them is missing)');
  }
  const tls = config.tlsCert && config.tlsKey;
  if (!tls && !isLoopback(config.host) && !config.allowHttp) {
    throw new Error(
      `refusing to serve plain HTTP on ${config.host}: set SVC_TLS_CERT and SVC_TLS_KEY, bind a loopback HOST, or set SVC_ALLOW_HTTP=1 when a TLS proxy is in front`,
    );
  }
  // Read the key pair before anything is created, so a wrong path fails the start cleanly.
  let credentials: { cert: Buffer; key: Buffer } | null = null;
  if (tls) {
    try {
      credentials = { cert: readFileSync(config.tlsCert!), key: readFileSync(config.tlsKey!) };
    } catch (err) {
      throw new Error(`cannot read the TLS key pair (SVC_TLS_CERT, SVC_TLS_KEY): ${(err as Error).message}`, { cause: err });
    }
  }
  const kernel = await startKernel(opts);
  const { services } = kernel;
  const app = createApp(services);
  let selfUrl = '';
  // the direct read lane in front of koa (kernel/direct-reads.ts); in a cluster, behind the forwarding
  const local = withDirectReads(services, app.callback());
  const handler = kernel.cluster
    ? kernel.cluster.handler(
        local,
        () => selfUrl,
        () => services.requestRouters,
      )
    : local;
  let server: HttpServer;
  try {
    server = credentials ? createHttpsServer(credentials, handler) : createHttpServer(handler);
    server.keepAliveTimeout = config.keepAliveMs;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => resolve());
    });
  } catch (err) {
    // a key pair that does not parse, or a port in use: release the kernel before failing
    await kernel.close().catch(() => undefined);
    throw err;
  }
  // In-flight requests, so a graceful stop can wait for them (and only them).
  let inFlight = 0;
  let lastRequestAt = 0;
  server.on('request', (_req, res) => {
    inFlight++;
    lastRequestAt = performance.now();
    res.once('close', () => {
      inFlight--;
      lastRequestAt = performance.now();
    });
  });
  let metricsServer: HttpServer | null = null;
  if (config.metricsPort !== null) {
    // a listener of its own, for the scraper only: no auth, bound to METRICS_HOST (default loopback)
    const metricsApp = createMetricsApp(services);
    metricsServer = createHttpServer(metricsApp.callback());
    try {
      await new Promise<void>((resolve, reject) => {
        metricsServer!.once('error', reject);
        metricsServer!.listen(config.metricsPort!, config.metricsHost, () => resolve());
      });
    } catch (err) {
      server.close();
      await kernel.close().catch(() => undefined);
      throw err;
    }
  }
  const metricsUrl = metricsServer
    ? `http://${config.metricsHost.includes(':') ? `[${config.metricsHost}]` : config.metricsHost}:${(metricsServer.address() as AddressInfo).port}/metrics`
    : null;
  if (metricsUrl) services.log.info(`metrics on ${metricsUrl}`);
  const port = (server.address() as AddressInfo).port;
  const scheme = tls ? 'https' : 'http';
  const shownHost = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `${scheme}://${shownHost}:${port}`;
  services.baseUrl = (config.publicUrl ?? url).replace(/\/+$/, '');
  selfUrl = url;
  if (kernel.cluster) {
    try {
      await kernel.cluster.join(config.clusterUrl ?? url);
    } catch (err) {
      server.close();
      metricsServer?.close();
      await kernel.close().catch(() => undefined);
      throw err;
    }
  }
  // The bare `listening on URL` line is the CLI's, on stdout. The log line says it too, with the
  // URL followed by a space, so a reader matching `listening on (\S+)` in either finds the URL.
  services.log.info(`listening on ${url} (pid ${process.pid})`, { url });
  if (hostRules(config, port).anyPortNames === null) {
    services.log.warn(
      'DNS-rebinding protection: the Host header is not checked (bound to a non-loopback address without SVC_PUBLIC_URL or SVC_ALLOWED_HOSTS); set one of them',
    );
  }

  let scanning = false;
  const timer = setInterval(() => {
    if (scanning) return;
    scanning = true;
    services.tenants
      .scan()
      .catch((err) => services.log.error('tenant scan failed', { error: String(err) }))
      .finally(() => (scanning = false));
  }, config.tenantPollMs);
  timer.unref();

  let closed: Promise<void> | null = null;
  return {
    url,
    port,
    metricsUrl,
    services,
    bootstrap: kernel.bootstrap,
    lastRequestAt: () => lastRequestAt,
    warming: () => kernel.warming(),
    close() {
      closed ??= (async () => {
        clearInterval(timer);
        closeMcpSessions(app);
        kernel.beginStop();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        metricsServer?.close();
        metricsServer?.closeAllConnections();
        await kernel.close();
      })();
      return closed;
    },
    shutdown(graceMs = config.shutdownGraceMs) {
      closed ??= (async () => {
        clearInterval(timer);
        closeMcpSessions(app);
        services.closing = true;
        // event streams and waits end now (clients resume by their cursor), so they do not hold the stop
        kernel.beginStop();
        // Requests in flight finish (their responses say `connection: close`); a request that
        // arrives meanwhile gets a whole 503 `shutting_down`. The listener closes once nothing
        // has run for QUIET_MS: node's close() drops connections that are accepted but have not
        // sent their request yet, so closing while clients still arrive would reset them.
        const deadline = performance.now() + graceMs;
        while (performance.now() < deadline && (inFlight > 0 || performance.now() - lastRequestAt < QUIET_MS))
          await new Promise((r) => setTimeout(r, 20));
        if (inFlight > 0)
          services.log.warn('graceful stop: requests still running after the grace period were cut', {
            in_flight: inFlight,
            grace_ms: graceMs,
          });
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await stopped;
        metricsServer?.close();
        metricsServer?.closeAllConnections();
        // every acknowledged write is written out (checkpoint) before the process may exit
        await kernel.close();
        services.log.info('stopped');
      })();
      return closed;
    },
  };
}
