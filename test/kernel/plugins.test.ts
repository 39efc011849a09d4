/**
 * Plugin manifests are checked at boot (unknown dependency, dependency cycle, duplicate route,
 * duplicate tool name fail the start with a message naming the plugin), and a plugin disabled
 * for a tenant answers 404 on its routes and is absent from that tenant's MCP tool list.
 */
import { mayEverCall } from '../../kernel/access.js';
import { expect } from 'chai';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configFromEnv, createLogger } from '../../kernel/config.js';
import { callers } from '../../kernel/access.js';
import { defineOperation, object, pathParamsOf, s } from '../../kernel/operation.js';
import { definePlugin as defineKernelPlugin, type OpContext, type PluginDef, type RouteDef, type ToolDef } from '../../kernel/plugin.js';
import { startServer } from '../../kernel/server.js';
import { corePlugin } from '../../plugins/core/index.js';
import { queuePlugin } from '../../plugins/queue/index.js';
import { workflowsPlugin } from '../../plugins/workflows/index.js';
import { allPlugins } from '../../scripts/plugins.js';
import { startTestServer, type TestServer } from '../helpers/harness.js';

const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A declared operation for a test plugin: no input, answers what `answer` computes. */
function probeOperation(name: string, answerOf: (ctx: OpContext) => Record<string, unknown>, params: string[] = []) {
  const input = object(Object.fromEntries(params.map((p) => [p, s.string()])), params);
  return defineOperation({ name, summary: name, input, run: async (ctx) => answerOf(ctx) });
}

function route(path: string, method: RouteDef['method'] = 'GET'): RouteDef {
  const name = `${method}_${path}`
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/_+$/, '');
  return { method, path, operation: probeOperation(name, () => ({ path }), pathParamsOf(path)) };
}

function tool(name: string): ToolDef {
  return { description: name, operation: probeOperation(name, (ctx) => ({ tool: name, org: ctx.tenant.org })) };
}

/** A test plugin: every operation open to any signed-in person (the boot check wants an access entry each). */
function definePlugin(def: PluginDef): PluginDef {
  const ops = [...(def.routes ?? []), ...(def.tools ?? [])].map((r) => r.operation.name);
  return defineKernelPlugin({
    ...def,
    access: Object.fromEntries(ops.map((op) => [op, { callers: callers.anyPerson, scope: 'test plugin' }])),
  });
}

/** startServer must reject with a message naming the plugin, and must not have touched the data dir. */
async function expectBootFailure(plugins: PluginDef[], pattern: RegExp): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'wg-plugins-'));
  dirs.push(dataDir);
  const config = { ...configFromEnv({}), host: '127.0.0.1', port: 0, dataDir, fsync: false };
  let message = '';
  try {
    const server = await startServer({ config, plugins, log: createLogger(() => undefined) });
    await server.close();
  } catch (err) {
    message = (err as Error).message;
  }
  expect(message, 'startServer should have rejected').to.not.equal('');
  expect(message).to.match(pattern);
  expect(existsSync(join(dataDir, 'tenants')) ? readdirSync(join(dataDir, 'tenants')) : []).to.deep.equal([]);
  expect(existsSync(join(dataDir, 'admin-token'))).to.equal(false);
  return message;
}

describe('plugin manifests are checked at boot', () => {
  it('an unknown dependency fails the start, naming the plugin and the dependency', async () => {
    await expectBootFailure(
      [corePlugin, definePlugin({ name: 'alpha', dependsOn: ['core', 'ghost'] })],
      /plugin 'alpha'.*unknown plugin 'ghost'/,
    );
  });

  it('a dependency cycle fails the start, naming the plugins on the cycle', async () => {
    const message = await expectBootFailure(
      [
        corePlugin,
        definePlugin({ name: 'alpha', dependsOn: ['beta'] }),
        definePlugin({ name: 'beta', dependsOn: ['gamma'] }),
        definePlugin({ name: 'gamma', dependsOn: ['alpha'] }),
      ],
      /plugin '(alpha|beta|gamma)'.*cycle/,
    );
    for (const name of ['alpha', 'beta', 'gamma']) expect(message).to.include(name);
    await expectBootFailure([corePlugin, definePlugin({ name: 'selfish', dependsOn: ['selfish'] })], /plugin 'selfish'.*cycle/);
  });

  it('a duplicate route fails the start, naming both plugins', async () => {
    await expectBootFailure(
      [corePlugin, definePlugin({ name: 'copycat', routes: [route('/v1/status')] })],
      /plugin 'copycat'.*duplicate route GET \/v1\/status.*'core'/,
    );
    // the same route with other parameter names is the same route
    await expectBootFailure(
      [corePlugin, definePlugin({ name: 'renamer', routes: [route('/v1/nodes/:nodeId')] })],
      /plugin 'renamer'.*duplicate route GET \/v1\/nodes\/:nodeId.*'core'/,
    );
    // and two routes inside one plugin collide too
    await expectBootFailure(
      [corePlugin, definePlugin({ name: 'twice', routes: [route('/v1/twice'), route('/v1/twice')] })],
      /plugin 'twice'.*duplicate route/,
    );
    // a different method on the same path is not a duplicate
    const dataDir = mkdtempSync(join(tmpdir(), 'wg-plugins-'));
    dirs.push(dataDir);
    const ok = await startServer({
      config: { ...configFromEnv({}), host: '127.0.0.1', port: 0, dataDir, fsync: false },
      plugins: [corePlugin, definePlugin({ name: 'deleter', routes: [route('/v1/status', 'DELETE')] })],
      log: createLogger(() => undefined),
    });
    await ok.close();
  });

  it('a duplicate tool name fails the start, naming both plugins', async () => {
    await expectBootFailure(
      [corePlugin, definePlugin({ name: 'mimic', tools: [tool('get_node')] })],
      /plugin 'mimic'.*duplicate tool get_node.*'core'/,
    );
  });

  it('a plugin registered twice or with an invalid name fails the start', async () => {
    await expectBootFailure([corePlugin, definePlugin({ name: 'solo' }), definePlugin({ name: 'solo' })], /plugin 'solo'.*twice/);
    await expectBootFailure([corePlugin, definePlugin({ name: 'Bad Name' })], /invalid plugin name 'Bad Name'/);
  });

  it('a real plugin composed without a plugin it needs fails the start (queue without leases)', async () => {
    await expectBootFailure([corePlugin, queuePlugin], /plugin 'queue'.*unknown plugin 'leases'/);
  });

  it('an optional dependency may be left out of the composition, but not listed twice nor close a cycle', async () => {
    // workflows adds its approvals to the queue's list when the queue is there; it boots without it
    const dataDir = mkdtempSync(join(tmpdir(), 'wg-plugins-'));
    dirs.push(dataDir);
    const config = { ...configFromEnv({}), host: '127.0.0.1', port: 0, dataDir, fsync: false };
    const server = await startServer({
      config,
      plugins: [corePlugin, workflowsPlugin, definePlugin({ name: 'watcher', dependsOn: ['core'], optionalDependsOn: ['absent'] })],
      log: createLogger(() => undefined),
    });
    expect(server.services.host.plugins.map((p) => p.name)).to.deep.equal(['core', 'workflows', 'watcher']);
    await server.close();
    await expectBootFailure(
      [corePlugin, definePlugin({ name: 'torn', dependsOn: ['core'], optionalDependsOn: ['core'] })],
      /plugin 'torn'.*'core' is listed both in dependsOn and in optionalDependsOn/,
    );
    await expectBootFailure(
      [corePlugin, definePlugin({ name: 'alpha', dependsOn: ['beta'] }), definePlugin({ name: 'beta', optionalDependsOn: ['alpha'] })],
      /plugin '(alpha|beta)'.*cycle/,
    );
  });

  it('an optional dependency that is present starts first', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wg-plugins-'));
    dirs.push(dataDir);
    const config = { ...configFromEnv({}), host: '127.0.0.1', port: 0, dataDir, fsync: false };
    const late = definePlugin({ name: 'late', dependsOn: ['core'], optionalDependsOn: ['early'] });
    const early = definePlugin({ name: 'early', dependsOn: ['core'] });
    const server = await startServer({ config, plugins: [corePlugin, late, early], log: createLogger(() => undefined) });
    expect(server.services.host.plugins.map((p) => p.name)).to.deep.equal(['core', 'early', 'late']);
    await server.close();
  });
});

describe('the default composition with some plugins disabled for a tenant', () => {
  let t: TestServer;
  const org = 'lean';
  const disabled = ['leases', 'lenses', 'capture'];
  let token = '';

  before(async () => {
    t = await startTestServer();
    const plugins = allPlugins.map((p) => p.name).filter((n) => !disabled.includes(n));
    token = (await t.server.services.tenants.create({ org, adminName: 'Lean', adminEmail: 'l@lean.test', plugins })).token;
    await t.server.services.tenants.scan();
  });
  after(async () => {
    if (t) await t.close();
  });

  it('loses a plugin only where something it needs is off: optional dependencies disable nothing', () => {
    const { host, tenants } = t.server.services;
    const tenant = tenants.get(org);
    if (!tenant) throw new Error(`tenant ${org} did not open`);
    const usable = host
      .enabledFor(tenant)
      .map((p) => p.name)
      .sort();
    // queue needs leases; everything else stays: the app, gardener, identity, analytics and
    // workflows only use what is disabled here where it is enabled
    const expected = allPlugins
      .map((p) => p.name)
      .filter((n) => !disabled.includes(n) && n !== 'queue')
      .sort();
    expect(usable).to.deep.equal(expected);
  });

  it("the tenant's MCP tool list follows: no queue or leases tool, the workflows and identity tools present (their optional lenses and queue are off)", async () => {
    const { host } = t.server.services;
    const toolsOf = (name: string) => {
      const plugin = host.plugins.find((p) => p.name === name);
      if (!plugin) throw new Error(`plugin ${name} is not in the default composition`);
      const names = host.toolsOf(plugin).map((x) => x.name);
      expect(names, `${name} declares tools`).to.have.length.above(0);
      // tools/list shows the admin's PAT what it may call (bind_session is a per-session agent token's own)
      return host
        .toolsOf(plugin)
        .filter((x) => !x.access || mayEverCall(x.access, 'pat', true, true))
        .map((x) => x.name);
    };
    const listed = (await (await t.mcp(token)).listTools()).tools.map((x) => x.name);
    for (const name of [...toolsOf('queue'), ...toolsOf('leases')]) expect(listed, name).to.not.include(name);
    expect(listed).to.include.members([...toolsOf('workflows'), ...toolsOf('identity')]);
  });
});

describe('a plugin disabled for a tenant', () => {
  const probe = definePlugin({
    name: 'probe',
    dependsOn: ['core'],
    routes: [route('/v1/probe'), route('/v1/probe/:id', 'POST')],
    tools: [tool('probe_ping')],
  });
  // depends on probe: unusable wherever probe is off, even when itself enabled
  const child = definePlugin({
    name: 'probe-child',
    dependsOn: ['probe'],
    routes: [route('/v1/probe-child')],
    tools: [tool('probe_child_ping')],
  });
  let t: TestServer;
  let bare: { token: string };
  let unknownRoute404 = '';

  before(async () => {
    t = await startTestServer({ plugins: [corePlugin, probe, child] });
    const created = await t.server.services.tenants.create({
      org: 'bare',
      adminName: 'Bare',
      adminEmail: 'b@bare.test',
      plugins: ['core', 'probe-child'],
    });
    bare = { token: created.token };
    await t.server.services.tenants.scan();
    unknownRoute404 = (await t.api('GET', '/v1/no-such-route', { token: bare.token })).text;
  });
  after(async () => {
    if (t) await t.close();
  });

  it('serves its routes and tools where it is enabled', async () => {
    expect((await t.api('GET', '/v1/probe')).body).to.deep.equal({ path: '/v1/probe' });
    expect((await t.api('POST', '/v1/probe/x', { body: {} })).status).to.equal(200);
    expect((await t.api('GET', '/v1/probe-child')).status).to.equal(200);
    const tools = (await (await t.mcp()).listTools()).tools.map((x) => x.name);
    expect(tools).to.include.members(['probe_ping', 'probe_child_ping', 'get_node']);
  });

  it('answers 404 on its routes with the same envelope as an unknown route', async () => {
    for (const [method, path] of [
      ['GET', '/v1/probe'],
      ['POST', '/v1/probe/x'],
      ['GET', '/v1/probe-child'],
    ] as const) {
      const res = await t.api(method, path, { token: bare.token, body: method === 'POST' ? {} : undefined });
      expect(res.status, `${method} ${path}`).to.equal(404);
      expect(res.body.error.code).to.equal('not_found');
      expect(res.text).to.equal(unknownRoute404.replace('/v1/no-such-route', path).replace('GET', method));
    }
    // core stays on
    expect((await t.api('GET', '/v1/me', { token: bare.token })).body.org).to.equal('bare');
  });

  it("is absent from that tenant's MCP tool list, and calling its tool is an error", async () => {
    const client = await t.mcp(bare.token);
    const tools = (await client.listTools()).tools.map((x) => x.name);
    expect(tools).to.include('get_node');
    expect(tools).to.not.include('probe_ping');
    expect(tools).to.not.include('probe_child_ping');
    const res = await t.tool(client, 'probe_ping');
    expect(res.isError).to.equal(true);
    expect(res.json.error.code).to.equal('not_found');
    expect((await t.tool(client, 'probe_child_ping')).isError).to.equal(true);
  });
});
