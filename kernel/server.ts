/**
 * Boot: validate plugins, open (or on first start create) tenants, serve HTTP or HTTPS,
 * and keep watching the data directory for tenants and plugin changes the CLI makes.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createSandbox, type Sandbox } from '../sandbox/index.js';
import { seedPack } from '../seed-pack/index.js';
import { createLogger, isLoopback, systemClock, type Clock, type Logger, type ServerConfig } from './config.js';
import { createApp } from './http.js';
import type { KernelServices, PluginDef } from './plugin.js';
import { PluginHost } from './plugin-host.js';
import { ORG_PATTERN, TenantManager } from './tenants.js';

export interface ServerOptions {
  config: ServerConfig;
  plugins: PluginDef[];
  clock?: Clock;
  log?: Logger;
  sandbox?: Sandbox;
}

export interface RunningServer {
  url: string;
  port: number;
  services: KernelServices;
  /** set on first start: the bootstrap admin PAT (tests read it; the CLI writes admin-token) */
  bootstrap: { org: string; person: string; token: string } | null;
  close(): Promise<void>;
}

export interface Kernel {
  services: KernelServices;
  sandbox: Sandbox;
  bootstrap: RunningServer['bootstrap'];
  close(): Promise<void>;
}

function hasTenants(dataDir: string): boolean {
  try {
    return readdirSync(join(dataDir, 'tenants')).some((n) => ORG_PATTERN.test(n));
  } catch {
    return false;
  }
}

/** The kernel without a listener: tenants, plugins, sandbox. Used by the server, stdio MCP and the CLI. */
export async function startKernel(opts: ServerOptions): Promise<Kernel> {
  const { config } = opts;
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger();
  const host = new PluginHost(opts.plugins);
  const sandbox = opts.sandbox ?? createSandbox();
  const tenants = new TenantManager({ dataDir: config.dataDir, sandbox, pack: seedPack, plugins: host.plugins, clock, log, fsync: config.fsync });
  const services: KernelServices = { clock, log, config, tenants, host, ticketAuthenticators: [] };
  for (const p of host.plugins) await p.init?.(services);
  tenants.onTenantChange = async (tenant, added) => {
    for (const p of host.plugins) if (added.includes(p.name) && host.usable(tenant, p)) await p.tenantOpen?.(tenant, services);
  };

  let bootstrap: Kernel['bootstrap'] = null;
  if (!hasTenants(config.dataDir)) {
    const created = await tenants.create({
      org: config.orgSlug,
      adminName: config.adminName,
      adminEmail: config.adminEmail,
      plugins: host.plugins.map((p) => p.name),
      adminToken: config.bootstrapToken,
    });
    bootstrap = { org: config.orgSlug, person: created.person, token: created.token };
    if (!config.bootstrapToken) writeFileSync(join(config.dataDir, 'admin-token'), created.token + '\n', { mode: 0o600 });
    log.info('first start: created tenant', { org: config.orgSlug, admin: created.person, token_file: config.bootstrapToken ? null : join(config.dataDir, 'admin-token') });
  }
  await tenants.scan();
  return {
    services,
    sandbox,
    bootstrap,
    async close() {
      for (const p of [...host.plugins].reverse()) await p.close?.();
      await tenants.closeAll();
      if (!opts.sandbox) await sandbox.close();
    },
  };
}

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const { config } = opts;
  const tls = config.tlsCert && config.tlsKey;
  if (!tls && !isLoopback(config.host) && !config.allowHttp) {
    throw new Error(
      `refusing to serve plain HTTP on ${config.host}: set SVC_TLS_CERT and SVC_TLS_KEY, bind a loopback HOST, or set SVC_ALLOW_HTTP=1 when a TLS proxy is in front`,
    );
  }
  const kernel = await startKernel(opts);
  const { services } = kernel;
  const app = createApp(services);
  const handler = app.callback();
  const server: HttpServer = tls
    ? createHttpsServer({ cert: readFileSync(config.tlsCert!), key: readFileSync(config.tlsKey!) }, handler)
    : createHttpServer(handler);
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const scheme = tls ? 'https' : 'http';
  const shownHost = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `${scheme}://${shownHost}:${port}`;
  services.log.info(`listening on ${url}`);

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

  return {
    url,
    port,
    services,
    bootstrap: kernel.bootstrap,
    async close() {
      clearInterval(timer);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await kernel.close();
    },
  };
}
