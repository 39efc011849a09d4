/**
 * The tenant's plugins as an admin switches them (issue 25, operator console): GET
 * /v1/tenant/plugins and POST /v1/tenant/plugins/{name} with their MCP twins, live (routes 404
 * and tools leave the tenant's list at once), saved in tenant.json as the CLI saves it,
 * announced as the admin's `plugin.*` admin events; dependencies refused or enabled with it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { addPerson, startTestServer, type TestServer } from '../../helpers/harness.js';
import { createAgent, standingToken } from '../identity/helpers.js';

describe('core: the tenant plugins (GET /v1/tenant/plugins, POST /v1/tenant/plugins/{name}, tools list_tenant_plugins/set_tenant_plugin)', function () {
  this.timeout(60_000);
  let t: TestServer;
  let member: { id: string; token: string };
  before(async () => {
    t = await startTestServer();
    member = await addPerson(t, 'Mia Member');
  });
  after(async () => t.close());

  const set = (name: string, body: Record<string, unknown>, token?: string) => t.api('POST', `/v1/tenant/plugins/${name}`, { body, token });
  const toolNames = async (client: Client) => (await client.listTools()).tools.map((x) => x.name);
  /** where the tenant's config is kept: tenant.json, or in cluster mode (test:pg) the wg_tenants row */
  const db = () => t.server.services.config.databaseUrl;
  const stored = async (): Promise<{ plugins: string[] } & Record<string, unknown>> => {
    const url = db();
    if (!url) return JSON.parse(readFileSync(join(t.dataDir, 'tenants', t.org, 'tenant.json'), 'utf8'));
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query('SELECT config FROM wg_tenants WHERE org = $1', [t.org])).rows[0].config;
    } finally {
      await client.end();
    }
  };
  const onDisk = async () => (await stored()).plugins;
  /** an operator's change the server has not followed yet: the CLI's write to tenant.json, or to wg_tenants */
  const operatorWrites = async (config: Record<string, unknown>) => {
    const url = db();
    if (!url) return writeFileSync(join(t.dataDir, 'tenants', t.org, 'tenant.json'), JSON.stringify(config, null, 2) + '\n');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query('UPDATE wg_tenants SET config = $2, updated_at = now() WHERE org = $1', [t.org, JSON.stringify(config)]);
    } finally {
      await client.end();
    }
  };

  it('lists every plugin with its description, state and dependencies, and who needs it', async () => {
    const res = await t.api('GET', '/v1/tenant/plugins');
    expect(res.status, res.text).to.equal(200);
    expect(res.body.org).to.equal(t.org);
    expect(res.body.count).to.equal(res.body.plugins.length);
    const leases = res.body.plugins.find((p: { name: string }) => p.name === 'leases');
    expect(leases).to.include({ enabled: true, usable: true, always_on: false, confirm_to_disable: false });
    expect(leases.description)
      .to.be.a('string')
      .and.match(/claims/i);
    expect(leases.depends_on).to.deep.equal(['core']);
    expect(leases.required_by).to.include('queue');
    const core = res.body.plugins.find((p: { name: string }) => p.name === 'core');
    expect(core.always_on).to.equal(true);
    expect(res.body.plugins.find((p: { name: string }) => p.name === 'app').confirm_to_disable).to.equal(true);
  });

  it('is for admins only: a member and an admin agent get 403, over REST and MCP', async () => {
    for (const [method, path, body] of [
      ['GET', '/v1/tenant/plugins', undefined],
      ['POST', '/v1/tenant/plugins/queue', { enabled: false }],
    ] as const) {
      const res = await t.api(method, path, { token: member.token, body });
      expect(res.status, res.text).to.equal(403);
      expect(res.body.error.code).to.equal('forbidden');
    }
    const agent = await createAgent(t, t.adminToken, 'Ops bot');
    const { token: agentToken } = await standingToken(t, t.adminToken, agent);
    expect((await t.api('GET', '/v1/tenant/plugins', { token: agentToken })).status).to.equal(403);
    const client = await t.mcp(member.token);
    expect(await toolNames(client)).to.not.include('set_tenant_plugin');
    const called = await t.tool(client, 'list_tenant_plugins');
    expect(called.isError).to.equal(true);
    expect(called.json.error.code).to.equal('forbidden');
    expect(await onDisk()).to.include('queue');
  });

  it('disabling a plugin is live: its routes answer 404 and its tools leave the list; re-enabling brings them back', async () => {
    const client = await t.mcp();
    expect(await toolNames(client)).to.include('show_queue');
    expect((await t.api('GET', '/v1/queue')).status).to.equal(200);
    const since = (await t.api('GET', '/v1/events')).body.last_id as number;

    const off = await set('queue', { enabled: false });
    expect(off.status, off.text).to.equal(200);
    expect(off.body).to.include({ plugin: 'queue', enabled: false });
    expect(off.body.changed).to.deep.equal(['queue']);
    expect(off.body.plugins.find((p: { name: string }) => p.name === 'queue').enabled).to.equal(false);
    expect(await onDisk()).to.not.include('queue');
    expect((await t.api('GET', '/v1/queue')).status).to.equal(404);
    expect(await toolNames(client)).to.not.include('show_queue');
    expect(await toolNames(await t.mcp())).to.not.include('show_queue');

    // again: nothing to do, nothing announced
    expect((await set('queue', { enabled: false })).body.changed).to.deep.equal([]);

    const on = await set('queue', { enabled: true });
    expect(on.body.changed).to.deep.equal(['queue']);
    expect((await t.api('GET', '/v1/queue')).status).to.equal(200);
    expect(await toolNames(client)).to.include('show_queue');

    const events = (await t.api('GET', `/v1/events?since=${since}&types=plugin.*`)).body.events as Array<{
      type: string;
      payload: { plugin: string };
      actor: { person: string; via: string };
    }>;
    expect(events.map((e) => [e.type, e.payload.plugin])).to.deep.equal([
      ['plugin.disabled', 'queue'],
      ['plugin.enabled', 'queue'],
    ]);
    expect(events[0]!.actor).to.include({ person: t.adminPerson, via: 'rest' });
    // members do not see admin events
    const seen = (await t.api('GET', `/v1/events?since=${since}&types=plugin.*`, { token: member.token })).body.events;
    expect(seen).to.deep.equal([]);
  });

  it('refuses to disable a plugin an enabled one depends on, naming it; enabling brings its dependencies along', async () => {
    const refused = await set('leases', { enabled: false });
    expect(refused.status, refused.text).to.equal(409);
    expect(refused.body.error.code).to.equal('conflict');
    expect(refused.body.error.message).to.match(/needed by queue/);
    expect(refused.body.error.details.required_by).to.deep.equal(['queue']);
    expect(await onDisk()).to.include('leases');

    expect((await set('queue', { enabled: false })).status).to.equal(200);
    expect((await set('leases', { enabled: false })).body.changed).to.deep.equal(['leases']);
    expect((await t.api('POST', '/v1/nodes/proj-root/claim')).status).to.equal(404);
    const both = await set('queue', { enabled: true });
    expect(both.status, both.text).to.equal(200);
    expect(both.body.changed).to.deep.equal(['leases', 'queue']);
    expect(await onDisk()).to.include.members(['leases', 'queue']);
  });

  it('never switches core or an always-on plugin; the app needs confirm: true; unknown names are 404; bad bodies 422', async () => {
    const core = await set('core', { enabled: false });
    expect(core.status).to.equal(409);
    expect((await set('openapi', { enabled: false })).status).to.equal(409);
    const app = await set('app', { enabled: false });
    expect(app.status, app.text).to.equal(409);
    expect(app.body.error.details.confirm_required).to.equal(true);
    expect(await onDisk()).to.include('app');
    const unknown = await set('queu', { enabled: true });
    expect(unknown.status).to.equal(404);
    expect(unknown.body.error.message).to.match(/queue/);
    const bad = await set('queue', { enabled: 'yes' });
    expect(bad.status).to.equal(422);
    expect((await set('queue', {})).status).to.equal(422);

    const confirmed = await set('app', { enabled: false, confirm: true });
    expect(confirmed.status, confirmed.text).to.equal(200);
    expect(await onDisk()).to.not.include('app');
    expect((await set('app', { enabled: true })).body.changed).to.deep.equal(['app']);
  });

  it('the MCP twins answer what REST answers', async () => {
    const client = await t.mcp();
    const listed = await t.tool(client, 'list_tenant_plugins');
    expect(listed.isError).to.equal(false);
    expect(listed.json).to.deep.equal((await t.api('GET', '/v1/tenant/plugins')).body);
    const off = await t.tool(client, 'set_tenant_plugin', { name: 'gardener', enabled: false });
    expect(off.isError, off.text).to.equal(false);
    expect(off.json.changed).to.deep.equal(['gardener']);
    expect(await toolNames(client)).to.not.include('run_gardener');
    const refused = await t.tool(client, 'set_tenant_plugin', { name: 'identity', enabled: false });
    expect(refused.isError).to.equal(true);
    expect(refused.json.error.details.required_by).to.include.members(['import', 'oauth']);
    expect((await t.tool(client, 'set_tenant_plugin', { name: 'gardener', enabled: true })).json.changed).to.deep.equal(['gardener']);
  });

  it("never writes over an operator's CLI change the poll has not seen yet", async () => {
    const config = await stored();
    await operatorWrites({ ...config, plugins: config.plugins.filter((p: string) => p !== 'lenses') });
    const res = await set('gardener', { enabled: false });
    expect(res.status, res.text).to.equal(200);
    expect(await onDisk()).to.not.include('lenses');
    expect(await onDisk()).to.not.include('gardener');
    expect((await t.api('GET', '/v1/lens')).status).to.equal(404);
    expect((await set('lenses', { enabled: true })).body.changed).to.deep.equal(['lenses']);
    expect((await set('gardener', { enabled: true })).body.changed).to.deep.equal(['gardener']);
  });

  it('a change made by the poll of tenant.json is not announced twice', async () => {
    const since = (await t.api('GET', '/v1/events')).body.last_id as number;
    await set('lenses', { enabled: false });
    await set('lenses', { enabled: true });
    // the poll of tenant.json runs (as its timer would): the server's own writes stay two events
    await t.server.services.tenants.scan();
    const events = (await t.api('GET', `/v1/events?since=${since}&types=plugin.*`)).body.events as unknown[];
    expect(events).to.have.length(2);
  });
});
