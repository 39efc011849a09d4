/**
 * The operator CLI and composition root: `workgraph <serve|mcp|tenant|token> ...`.
 * Every operator command reads SVC_DATA_DIR. Every other command is a client command
 * (scripts/client/: the operations against a server, login, edit, completion), dispatched
 * before the kernel, the plugins and the sandbox are loaded so that it starts fast.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import type { TokenRecord } from '../kernel/auth.js';
import type { TenantConfig } from '../kernel/tenant.js';
import type { TenantManager as TenantManagerType } from '../kernel/tenants.js';

const HELP: Record<string, string> = {
  main: `usage: workgraph <command> [options]

commands:
  serve                 start the HTTP/MCP server (HOST, PORT, SVC_DATA_DIR, SVC_TLS_CERT/KEY, ...)
  mcp                   speak MCP over stdio: locally on SVC_DATA_DIR, or as a proxy to
                        SVC_SERVER with SVC_TOKEN (SVC_ORG selects the tenant)
  tenant add|list|plugins|settings   manage tenants
  cluster status        cluster mode (SVC_DATABASE_URL): members and who owns which tenant
  token mint|generate   mint a PAT for a person, or print a fresh token for SVC_BOOTSTRAP_TOKEN
  import <source> <path>  import beads, Backlog.md or GitHub issues (docs/import.md)
  backup|restore <file>   a tenant with its history, tokens and leases, to a file and back
  audit identity        every change to an identity fact in the history, flagging those no
                        identity operation made ("was I hit?")

run 'workgraph <command> --help' for a command's options.`,
  serve: `usage: workgraph serve
Starts the server on HOST (default 127.0.0.1) and PORT (default 8080; 0 picks a free port),
serving data under SVC_DATA_DIR (default ./data). Prints 'listening on http://HOST:PORT'.`,
  mcp: `usage: workgraph mcp
MCP over stdio. Local mode acts on SVC_DATA_DIR with the identity of SVC_TOKEN (default: the
first-start admin token in SVC_DATA_DIR/admin-token), in tenant SVC_ORG (default: the token's).
Proxy mode (SVC_SERVER and SVC_TOKEN set) forwards every call to SVC_SERVER/mcp.
--toolsets a,b (or SVC_TOOLSETS) lists only those toolsets' tools (plugin names: core, leases,
queue, questions, workflows, identity, ...; default all).`,
  tenant: `usage:
  workgraph tenant add <org> --admin-email E [--admin-name N] [--plugins a,b]
      creates the tenant and prints {org, person, token} once (the admin's PAT)
  workgraph tenant list
      prints [{org, plugins}]
  workgraph tenant plugins <org> [--enable NAME] [--disable NAME]
      prints {org, plugins}; a running server applies the change within 2 s
  workgraph tenant settings <org> [--set KEY=VALUE]... [--unset KEY]...
      prints {org, settings} (every setting the plugins declare, with its value); --unset
      returns a key to its default; a running server applies the change within 2 s.
      leases=advisory|strict: strict refuses (409 lease_held) a write to a node someone
      else holds, unless the writer holds it or is an admin passing force`,
  token: `usage:
  workgraph token mint --org O --person P [--expires 30d|YYYY-MM-DD] [--label L]
      mints a personal access token for an existing person node; prints {org, person, token, hash_prefix, expires}
  workgraph token generate
      prints a fresh, well-formed svc_pat_ token (for SVC_BOOTSTRAP_TOKEN)`,
  audit: `usage:
  workgraph audit identity [--org ORG] [--flagged]
      prints one JSON line per tenant (every tenant, or ORG): {org, entries, count, flagged,
      commits_scanned}. Each entry is a commit that changed an identity fact (people, admin
      rights = stewards edges to proj-root, agent ownership = owned-by edges, identity fields)
      with its author, credential kind, operation and route; flagged: true when no identity
      operation made it. --flagged lists only those. tokens_at_risk: tokens minted for an agent
      after a flagged change of its owner. Reads the repositories read-only (a commit
      a running server made within the last second may show on the next run). Exit status 3
      when anything is flagged.`,
};

// ------------------------------------------------------------------ client commands first

/** The commands below (they need the kernel); every other command is tried as a client command. */
const OPERATOR_COMMANDS = new Set(['serve', 'mcp', 'tenant', 'token', 'cluster', 'import', 'backup', 'restore', 'audit']);
{
  const [command, ...args] = process.argv.slice(2);
  let handled: number | null = null;
  try {
    if (!command || command === '--help' || command === 'help') {
      const [{ clientUsage }, { loadManifest }] = await Promise.all([import('./client/main.js'), import('./client/manifest.js')]);
      process.stdout.write(HELP.main + '\n\n' + clientUsage(await loadManifest().catch(() => null)) + '\n');
      handled = 0;
    } else if (!OPERATOR_COMMANDS.has(command)) {
      const { runClient } = await import('./client/main.js');
      handled = await runClient(command, args);
    }
  } catch (err) {
    process.stderr.write(`workgraph: ${err instanceof Error ? err.message : String(err)}\n`);
    handled = 1;
  }
  if (handled !== null) {
    // stdout drained before exit (an MCP client or a keep-alive socket would hold the loop open)
    await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
    process.exit(handled);
  }
}

// The operator commands' modules, loaded only when one runs.
const { FileTokenStore, generateToken, hashPrefix, newTokenRecord } = await import('../kernel/auth.js');
const { gitEnv } = await import('../kernel/git/cli.js');
const { nodePath } = await import('../kernel/git/objects.js');
const { configFromEnv, createLogger, systemClock } = await import('../kernel/config.js');
const { Tenant } = await import('../kernel/tenant.js');
const { ORG_PATTERN, TenantManager } = await import('../kernel/tenants.js');
const { startKernel, startServer } = await import('../kernel/server.js');
const { startIdleGc } = await import('../kernel/idle-gc.js');
const { createSandbox } = await import('../sandbox/index.js');
const { seedPack } = await import('../seed-pack/index.js');
const { allPlugins } = await import('./plugins.js');
const { parseExpiry } = await import('../kernel/expiry.js');

function out(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + '\n');
}

function fail(message: string): never {
  process.stderr.write(`workgraph: ${message}\n`);
  process.exit(2);
}

async function withManager<T>(fn: (m: TenantManagerType) => Promise<T>): Promise<T> {
  const config = configFromEnv();
  const sandbox = createSandbox();
  const manager = new TenantManager({
    dataDir: config.dataDir,
    sandbox,
    pack: seedPack,
    plugins: allPlugins,
    clock: systemClock,
    log: createLogger(undefined, true),
    fsync: config.fsync,
  });
  try {
    return await fn(manager);
  } finally {
    await sandbox.close();
  }
}

/** Every plugin name listed in some tenant's tenant.json under `tenantsDir`. */
function pluginNamesOnDisk(tenantsDir: string): string[] {
  const names = new Set<string>();
  let orgs: string[];
  try {
    orgs = readdirSync(tenantsDir);
  } catch {
    return [];
  }
  for (const org of orgs) {
    const dir = join(tenantsDir, org);
    if (!ORG_PATTERN.test(org) || !Tenant.exists(dir)) continue;
    try {
      for (const name of Tenant.readConfig(dir).plugins) names.add(name);
    } catch {
      /* an unreadable tenant.json contributes nothing */
    }
  }
  return [...names];
}

async function tenantCommand(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      'admin-email': { type: 'string' },
      'admin-name': { type: 'string' },
      plugins: { type: 'string' },
      enable: { type: 'string', multiple: true },
      disable: { type: 'string', multiple: true },
      set: { type: 'string', multiple: true },
      unset: { type: 'string', multiple: true },
      help: { type: 'boolean' },
    },
  });
  if (values.help || !sub) return void process.stdout.write(HELP.tenant + '\n');
  const config = configFromEnv();
  const known = allPlugins.map((p) => p.name);
  if (sub === 'add') {
    const org = positionals[0];
    if (!org || !ORG_PATTERN.test(org)) fail('tenant add needs an org slug (kebab-case)');
    const email = values['admin-email'];
    if (!email) fail('tenant add needs --admin-email');
    const plugins = values.plugins
      ? values.plugins
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : known;
    if (config.databaseUrl) {
      const { clusterTenantAdd } = await import('./cluster-cli.js');
      return out(await clusterTenantAdd({ org, adminEmail: email, adminName: values['admin-name'] ?? email.split('@')[0]!, plugins }));
    }
    const created = await withManager((m) =>
      m.create({ org, adminEmail: email, adminName: values['admin-name'] ?? email.split('@')[0]!, plugins }),
    );
    return out({ org, person: created.person, token: created.token });
  }
  if (sub === 'list' && config.databaseUrl) {
    const { clusterTenantList } = await import('./cluster-cli.js');
    return out(await clusterTenantList());
  }
  if (sub === 'list') {
    // Read-only: no kernel, no sandbox, nothing created under SVC_DATA_DIR.
    const tenantsDir = join(config.dataDir, 'tenants');
    let names: string[] = [];
    try {
      names = readdirSync(tenantsDir).filter((n) => ORG_PATTERN.test(n) && Tenant.exists(join(tenantsDir, n)));
    } catch {
      /* no tenants yet */
    }
    return out(names.sort().map((org) => ({ org, plugins: Tenant.readConfig(join(tenantsDir, org)).plugins })));
  }
  if (sub === 'plugins') {
    const org = positionals[0];
    if (!org) fail('tenant plugins needs an org');
    if (!ORG_PATTERN.test(org)) fail(`'${org}' is not an org slug (kebab-case)`);
    // A server composed with more plugins than this CLI's list (a test kernel, a newer build)
    // records their names in the tenant.json files it writes; those names are known too.
    const accepted = [...new Set([...known, ...pluginNamesOnDisk(join(config.dataDir, 'tenants'))])];
    const changed = Boolean(values.enable?.length || values.disable?.length);
    const edit = (tenantConfig: TenantConfig): TenantConfig => {
      const plugins = new Set(tenantConfig.plugins);
      for (const name of values.enable ?? []) {
        if (!accepted.includes(name)) fail(`unknown plugin '${name}'; known: ${accepted.join(', ')}`);
        plugins.add(name);
      }
      for (const name of values.disable ?? []) {
        if (name === 'core') fail("'core' is always on");
        if (!accepted.includes(name)) fail(`unknown plugin '${name}'; known: ${accepted.join(', ')}`);
        plugins.delete(name);
      }
      plugins.add('core');
      return { ...tenantConfig, plugins: accepted.filter((n) => plugins.has(n)) };
    };
    if (config.databaseUrl) {
      const { clusterTenantPlugins } = await import('./cluster-cli.js');
      const next = await clusterTenantPlugins(org, (c) => (changed ? edit(c) : null));
      return out({ org, plugins: next.plugins });
    }
    const dir = join(config.dataDir, 'tenants', org);
    if (!Tenant.exists(dir)) fail(`no tenant '${org}' under ${config.dataDir}`);
    const tenantConfig = edit(Tenant.readConfig(dir));
    if (changed) await Tenant.writeConfig(dir, tenantConfig);
    return out({ org, plugins: tenantConfig.plugins });
  }
  if (sub === 'settings') {
    const org = positionals[0];
    if (!org) fail('tenant settings needs an org');
    if (!ORG_PATTERN.test(org)) fail(`'${org}' is not an org slug (kebab-case)`);
    // every setting a plugin declares (PluginDef.settings): the only keys and values accepted
    const declared = new Map(allPlugins.flatMap((p) => Object.entries(p.settings ?? {})));
    const describe = () => [...declared.entries()].map(([k, d]) => `${k}=${d.values.join('|')}`).join(', ');
    const changed = Boolean(values.set?.length || values.unset?.length);
    const edit = (tenantConfig: TenantConfig): TenantConfig => {
      const settings = { ...(tenantConfig.settings ?? {}) };
      for (const pair of values.set ?? []) {
        const at = pair.indexOf('=');
        const key = at > 0 ? pair.slice(0, at) : '';
        const value = pair.slice(at + 1);
        const def = declared.get(key);
        if (!def) fail(`unknown setting '${key || pair}'; known: ${describe()}`);
        if (!def.values.includes(value)) fail(`setting ${key} takes ${def.values.join(' or ')}, not '${value}'`);
        settings[key] = value;
      }
      for (const key of values.unset ?? []) {
        if (!declared.has(key)) fail(`unknown setting '${key}'; known: ${describe()}`);
        delete settings[key];
      }
      return { ...tenantConfig, settings };
    };
    const effective = (c: TenantConfig) => Object.fromEntries([...declared.entries()].map(([k, d]) => [k, c.settings?.[k] ?? d.default]));
    if (config.databaseUrl) {
      const { clusterTenantPlugins } = await import('./cluster-cli.js');
      const next = await clusterTenantPlugins(org, (c) => (changed ? edit(c) : null));
      return out({ org, settings: effective(next) });
    }
    const dir = join(config.dataDir, 'tenants', org);
    if (!Tenant.exists(dir)) fail(`no tenant '${org}' under ${config.dataDir}`);
    const tenantConfig = edit(Tenant.readConfig(dir));
    if (changed) await Tenant.writeConfig(dir, tenantConfig);
    return out({ org, settings: effective(tenantConfig) });
  }
  fail(`unknown tenant command '${sub}'\n${HELP.tenant}`);
}

async function tokenCommand(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const { values } = parseArgs({
    args: rest,
    options: {
      org: { type: 'string' },
      person: { type: 'string' },
      expires: { type: 'string' },
      label: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help || !sub) return void process.stdout.write(HELP.token + '\n');
  if (sub === 'generate') return out({ token: generateToken('pat') });
  if (sub !== 'mint') fail(`unknown token command '${sub}'\n${HELP.token}`);
  const config = configFromEnv();
  const org = values.org ?? config.orgSlug;
  const person = values.person;
  if (!person) fail('token mint needs --person');
  if (values.label && values.label.length > 200) fail('--label is at most 200 characters');
  if (!ORG_PATTERN.test(org)) fail(`'${org}' is not an org slug (kebab-case)`);
  let expires: string;
  try {
    expires = parseExpiry(values.expires, { nowMs: Date.now(), defaultDays: 365, maxDays: 365 });
  } catch (err) {
    fail((err as Error).message);
  }
  if (config.databaseUrl) {
    const { clusterTokenMint } = await import('./cluster-cli.js');
    return clusterTokenMint({ org, person, expires, label: values.label ?? null });
  }
  const dir = join(config.dataDir, 'tenants', org);
  if (!Tenant.exists(dir)) fail(`no tenant '${org}'`);
  // The person is looked up read-only with git, never by opening the tenant: opening replays
  // the commit journal, which a running server is still appending to.
  const found = spawnSync('git', ['--git-dir', join(dir, 'graph.git'), 'cat-file', '-e', `refs/heads/main:${nodePath('person', person)}`], {
    env: gitEnv(),
  });
  if (found.status !== 0)
    fail(`no person node '${person}' in ${org} (a person created within the last second may not be written out yet: retry)`);
  const token = generateToken('pat');
  const rec = newTokenRecord(token, {
    kind: 'pat',
    person,
    created: new Date().toISOString(),
    expires,
    label: values.label ?? null,
    minted_by: 'cli',
  });
  await new FileTokenStore(join(dir, 'auth')).mutate((records) => void records.set(rec.hash, rec));
  out({ org, person, token, hash_prefix: hashPrefix(rec.hash), expires });
}

async function auditCommand(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const { values } = parseArgs({
    args: rest,
    options: { org: { type: 'string' }, flagged: { type: 'boolean' }, help: { type: 'boolean' } },
  });
  if (values.help || !sub) return void process.stdout.write(HELP.audit + '\n');
  if (sub !== 'identity') fail(`unknown audit command '${sub}'\n${HELP.audit}`);
  const config = configFromEnv();
  const tenantsDir = join(config.dataDir, 'tenants');
  let orgs: string[];
  if (values.org !== undefined) {
    if (!ORG_PATTERN.test(values.org)) fail(`'${values.org}' is not an org slug (kebab-case)`);
    if (!Tenant.exists(join(tenantsDir, values.org))) fail(`no tenant '${values.org}' under ${config.dataDir}`);
    orgs = [values.org];
  } else {
    try {
      orgs = readdirSync(tenantsDir)
        .filter((n) => ORG_PATTERN.test(n) && Tenant.exists(join(tenantsDir, n)))
        .sort();
    } catch {
      orgs = [];
    }
  }
  const { auditIdentityHistory, auditRegistry, tokensAtRisk } = await import('../plugins/identity/audit.js');
  const readTokenFile = (file: string): TokenRecord[] => {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as TokenRecord[];
    } catch {
      return [];
    }
  };
  const nativeTypes = allPlugins.flatMap((p) => p.schema?.nodeTypes ?? []);
  const nativeEdges = allPlugins.flatMap((p) => p.schema?.edgeTypes ?? []);
  let flagged = 0;
  for (const org of orgs) {
    // read-only: the repository is read with git, the tenant is never opened (a running server owns its journal)
    const gitdir = join(tenantsDir, org, 'graph.git');
    const registry = await auditRegistry(gitdir, seedPack, nativeTypes, nativeEdges);
    const audit = await auditIdentityHistory(gitdir, registry, { onlyFlagged: values.flagged === true });
    flagged += audit.flagged;
    // the token records, read only: the file store, or PostgreSQL in cluster mode
    const records = config.databaseUrl
      ? await (await import('./cluster-cli.js')).clusterTokenRecords(org)
      : readTokenFile(join(tenantsDir, org, 'auth', 'tokens.json'));
    out({ org, ...audit, tokens_at_risk: tokensAtRisk(audit.entries, records) });
  }
  if (flagged > 0) process.exitCode = 3;
}

async function serve(): Promise<void> {
  const config = configFromEnv();
  // The handlers are in place before anything starts: a signal that arrives while the server
  // starts, or right after the `listening on` line, is a graceful stop, never node's default kill.
  let server: Awaited<ReturnType<typeof startServer>> | null = null;
  let requested: string | null = null;
  let closing = false;
  // Graceful: stop accepting, finish in-flight requests (bounded), write everything out, exit 0.
  const shutdown = (signal: string) => {
    if (!server) return void (requested ??= signal);
    if (closing) return;
    closing = true;
    server.services.log.info('stopping', { signal });
    server.shutdown().then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`workgraph: stop failed: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  // the idle collection also runs after each warm-up that grew the heap (kernel/warm.ts)
  let afterWarmUp: (() => void) | undefined;
  server = await startServer({ config, plugins: allPlugins, afterWarmUp: () => afterWarmUp?.() });
  if (config.idleGc) {
    const log = server.services.log;
    const monitor = startIdleGc({
      lastRequestAt: () => server!.lastRequestAt(),
      busy: () => server!.warming(),
      onCollect: ({ beforeBytes, afterBytes, ms, compacted }) =>
        log.debug?.('collected garbage while idle', {
          before_mb: Math.round(beforeBytes / 1e6),
          after_mb: Math.round(afterBytes / 1e6),
          ms: Math.round(ms),
          compacted,
        }),
    });
    afterWarmUp = () => monitor.afterWork();
  }
  process.stdout.write(`listening on ${server.url}\n`);
  if (requested) shutdown(requested);
}

/** `--toolsets a,b` / `--toolsets=a,b`, else SVC_TOOLSETS: the tools `workgraph mcp` lists (default all). */
function toolsetsArg(args: string[]): string | undefined {
  const i = args.findIndex((a) => a === '--toolsets' || a.startsWith('--toolsets='));
  if (i >= 0) return args[i]!.includes('=') ? args[i]!.slice('--toolsets='.length) : args[i + 1];
  return process.env.SVC_TOOLSETS ?? process.env.WORKGRAPH_TOOLSETS;
}

async function mcp(args: string[] = []): Promise<void> {
  const toolsets = toolsetsArg(args);
  const config = configFromEnv();
  const server = process.env.SVC_SERVER ?? process.env.WORKGRAPH_SERVER;
  const token = process.env.SVC_TOKEN ?? process.env.WORKGRAPH_TOKEN;
  const org = process.env.SVC_ORG ?? process.env.WORKGRAPH_ORG;
  if (server) {
    if (!token) fail('proxy mode needs SVC_TOKEN');
    const { serveStdioProxy } = await import('./mcp-stdio.js');
    return serveStdioProxy(server, token, org, toolsets);
  }
  const kernel = await startKernel({ config, plugins: allPlugins, log: createLogger(undefined, true) });
  let localToken = token;
  if (!localToken) {
    try {
      localToken = readFileSync(join(config.dataDir, 'admin-token'), 'utf8').trim();
    } catch {
      fail('local mode needs SVC_TOKEN (or the first-start admin-token file in SVC_DATA_DIR)');
    }
  }
  const { serveStdioLocal } = await import('./mcp-stdio.js');
  return serveStdioLocal(kernel, localToken, org, toolsets);
}

async function main(): Promise<void> {
  const [command, ...args] = process.argv.slice(2);
  if (args.includes('--help') && HELP[command]) return void process.stdout.write(HELP[command] + '\n');
  switch (command) {
    case 'serve':
      return serve();
    case 'mcp':
      return mcp(args);
    case 'tenant':
      return tenantCommand(args);
    case 'token':
      return tokenCommand(args);
    case 'cluster': {
      const { clusterCommand } = await import('./cluster-cli.js');
      return clusterCommand(args);
    }
    case 'import': {
      const { importCommand } = await import('./import/cli.js');
      return importCommand(args);
    }
    case 'audit':
      return auditCommand(args);
    case 'backup':
    case 'restore': {
      const { backupCommand, restoreCommand } = await import('./import/backup.js');
      return command === 'backup' ? backupCommand(args) : restoreCommand(args);
    }
    default:
      fail(`unknown command '${command}'\n${HELP.main}`);
  }
}

main().catch((err) => {
  process.stderr.write(`workgraph: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
