/**
 * The operator CLI against running servers: `tenant add|list|plugins`, `token mint`, every
 * command's --help and bad arguments. A running server picks up what the CLI changes within
 * 2 s without a restart (docs/design.md §2).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanEnv, runCli, SHIM, type CliResult } from '../helpers/processes.js';
import { callers } from '../../kernel/access.js';
import { defineOperation, object } from '../../kernel/operation.js';
import { definePlugin, resolveTool, type PluginDef } from '../../kernel/plugin.js';
import { corePlugin } from '../../plugins/core/index.js';
import { allPlugins } from '../../scripts/plugins.js';
import { startTestServer, type TestServer } from '../helpers/harness.js';

/** The CLI's one JSON line on stdout. */
function jsonOut<T = any>(res: CliResult): T {
  expect(res.code, `exit ${res.code}: ${res.stderr}`).to.equal(0);
  const lines = res.stdout.split('\n').filter(Boolean);
  expect(lines, res.stdout).to.have.length(1);
  return JSON.parse(lines[0]!) as T;
}

function expectFailure(res: CliResult, pattern: RegExp): void {
  expect(res.code, `stdout: ${res.stdout}`).to.not.equal(0);
  expect(res.code).to.not.equal(null);
  expect(res.stderr).to.match(pattern);
  expect(res.stdout).to.equal('');
}

const live = new Set<ChildProcess>();
const dirs: string[] = [];
function tmp(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

async function stopGroup(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  const exited =
    child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => child.once('exit', () => r()));
  try {
    process.kill(signal === 'SIGKILL' ? -child.pid! : child.pid!, signal);
  } catch {
    /* gone */
  }
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
  }, 10_000);
  await exited;
  clearTimeout(timer);
  live.delete(child);
}

function startServe(env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [SHIM, 'serve'], {
    env: cleanEnv({ PORT: '0', ...env }),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in 60 s: ${out} ${err}`)), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^listening on (https?:\/\/\S+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1]!, child });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited ${code}: ${err}`));
    });
  });
}

async function get(url: string, path: string, token?: string): Promise<{ status: number; body: any; text: string }> {
  const res = await fetch(url + path, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, body, text };
}

/** Polls `check` until it holds; returns the milliseconds it took, or throws after `limitMs`. */
async function within(limitMs: number, check: () => Promise<boolean>): Promise<number> {
  const start = Date.now();
  for (;;) {
    if (await check()) return Date.now() - start;
    if (Date.now() - start > limitMs) throw new Error(`condition not met within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

after(async () => {
  for (const child of [...live]) await stopGroup(child, 'SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('workgraph CLI', function () {
  this.timeout(180_000);

  describe('--help and bad arguments', () => {
    it('every command answers --help with its usage and exit 0 (serve --help does not start a server)', async () => {
      const env = { SVC_DATA_DIR: tmp('wg-cli-help-'), PORT: '0' };
      const cases: Array<[string[], RegExp]> = [
        [['--help'], /usage: workgraph <command>/],
        [['serve', '--help'], /usage: workgraph serve/],
        [['mcp', '--help'], /usage: workgraph mcp/],
        [['tenant', '--help'], /workgraph tenant add <org> --admin-email E/],
        [['token', '--help'], /workgraph token mint --org O --person P/],
      ];
      const results = await Promise.all(cases.map(([args]) => runCli(args, env)));
      results.forEach((res, i) => {
        expect(res.code, `${cases[i]![0].join(' ')}: ${res.stderr}`).to.equal(0);
        expect(res.stdout).to.match(cases[i]![1]);
        expect(res.stdout).to.not.match(/^listening on http/m);
      });
    });

    it('unknown commands, subcommands and options exit non-zero with a message', async () => {
      const env = { SVC_DATA_DIR: tmp('wg-cli-bad-') };
      const [cmd, tenantSub, option] = await Promise.all([
        runCli(['frobnicate'], env),
        runCli(['tenant', 'frob'], env),
        runCli(['tenant', 'list', '--bogus'], env),
      ]);
      expectFailure(cmd, /unknown command 'frobnicate'/);
      expectFailure(tenantSub, /unknown tenant command 'frob'/);
      expectFailure(option, /bogus/);
    });
  });

  describe('against a running server started by `workgraph serve`', () => {
    let dataDir: string;
    let url: string;
    let child: ChildProcess;
    let localToken: string;
    let acme: { org: string; person: string; token: string };

    before(async () => {
      dataDir = tmp('wg-cli-');
      ({ url, child } = await startServe({ SVC_DATA_DIR: dataDir }));
      const { readFileSync } = await import('node:fs');
      localToken = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    });
    after(async () => {
      if (child) await stopGroup(child, 'SIGTERM');
    });

    it('tenant add prints {org, person, token} once, and the running server serves that token within 2 s', async () => {
      const res = await runCli(['tenant', 'add', 'acme', '--admin-email', 'boss@acme.test', '--admin-name', 'The Boss'], {
        SVC_DATA_DIR: dataDir,
      });
      acme = jsonOut(res);
      expect(Object.keys(acme).sort()).to.deep.equal(['org', 'person', 'token']);
      expect(acme.org).to.equal('acme');
      expect(acme.person).to.match(/^person-/);
      expect(acme.token).to.match(/^svc_pat_/);
      expect(res.stdout.split(acme.token).length - 1).to.equal(1);
      expect(res.stderr).to.not.include(acme.token);
      const took = await within(2000, async () => (await get(url, '/v1/me', acme.token)).status === 200);
      expect(took).to.be.below(2000);
      const me = (await get(url, '/v1/me', acme.token)).body;
      expect(me).to.include({ org: 'acme', person: acme.person, name: 'The Boss', email: 'boss@acme.test', is_admin: true });
      const person = (await get(url, `/v1/nodes/${acme.person}`, acme.token)).body;
      expect(person.frontmatter.edges).to.deep.include({ type: 'stewards', to: 'proj-root' });
      const root = await get(url, '/v1/nodes/proj-root', acme.token);
      expect(root.status).to.equal(200);
      expect(root.body.frontmatter.summary).to.match(/acme/);
      // the tenants are separate: local's token does not reach acme's person node
      expect((await get(url, `/v1/nodes/${acme.person}`, localToken)).status).to.equal(404);
      expect((await get(url, '/v1/me', localToken)).body.org).to.equal('local');
    });

    it('tenant add refuses an existing org, a bad slug, a missing --admin-email and an unknown plugin', async () => {
      const env = { SVC_DATA_DIR: dataDir };
      const [again, badSlug, noEmail, badPlugin, noOrg] = await Promise.all([
        runCli(['tenant', 'add', 'acme', '--admin-email', 'x@acme.test'], env),
        runCli(['tenant', 'add', 'Bad_Org', '--admin-email', 'x@y.test'], env),
        runCli(['tenant', 'add', 'gamma'], env),
        runCli(['tenant', 'add', 'delta', '--admin-email', 'x@y.test', '--plugins', 'core,no-such-plugin'], env),
        runCli(['tenant', 'add', '--admin-email', 'x@y.test'], env),
      ]);
      expectFailure(again, /already exists/);
      expectFailure(badSlug, /org slug/);
      expectFailure(noEmail, /--admin-email/);
      expectFailure(badPlugin, /no-such-plugin/);
      expectFailure(noOrg, /org slug/);
      const list = jsonOut<Array<{ org: string }>>(await runCli(['tenant', 'list'], env));
      expect(list.map((t) => t.org)).to.deep.equal(['acme', 'local']);
    });

    it('tenant add --plugins limits the plugin set; tenant list prints [{org, plugins}] sorted by org', async () => {
      const env = { SVC_DATA_DIR: dataDir };
      const beta = jsonOut(await runCli(['tenant', 'add', 'beta', '--admin-email', 'b@beta.test', '--plugins', 'core'], env));
      expect(beta.org).to.equal('beta');
      const list = jsonOut<Array<{ org: string; plugins: string[] }>>(await runCli(['tenant', 'list'], env));
      const all = allPlugins.map((p) => p.name);
      expect(list.map((t) => t.org)).to.deep.equal(['acme', 'beta', 'local']);
      expect(list[0]!.plugins).to.have.members(all); // a new tenant gets every plugin by default
      expect(list[1]!.plugins).to.deep.equal(['core']);
      expect(list[2]!.plugins).to.have.members(all);
      await within(2000, async () => (await get(url, '/v1/me', beta.token)).status === 200);
    });

    it('token mint prints a token that the running server accepts within 2 s', async () => {
      const res = await runCli(['token', 'mint', '--org', 'acme', '--person', acme.person, '--label', 'laptop'], { SVC_DATA_DIR: dataDir });
      const minted = jsonOut(res);
      expect(minted).to.include({ org: 'acme', person: acme.person });
      expect(minted.token).to.match(/^svc_pat_/);
      expect(minted.hash_prefix).to.match(/^[0-9a-f]{12}$/);
      expect(Date.parse(minted.expires)).to.be.greaterThan(Date.now() + 300 * 24 * 3600 * 1000);
      expect(res.stderr).to.not.include(minted.token);
      await within(2000, async () => (await get(url, '/v1/me', minted.token)).status === 200);
      expect((await get(url, '/v1/me', minted.token)).body).to.include({ org: 'acme', person: acme.person, bound: true });
    });

    it('token mint refuses a missing --person, an unknown person, a bad org slug and a past expiry', async () => {
      const env = { SVC_DATA_DIR: dataDir };
      const [noPerson, unknownPerson, badOrg, past] = await Promise.all([
        runCli(['token', 'mint', '--org', 'acme'], env),
        runCli(['token', 'mint', '--org', 'acme', '--person', 'person-0000000000000000'], env),
        runCli(['token', 'mint', '--org', '../acme', '--person', acme.person], env),
        runCli(['token', 'mint', '--org', 'acme', '--person', acme.person, '--expires', '2001-01-01'], env),
      ]);
      expectFailure(noPerson, /--person/);
      expectFailure(unknownPerson, /no person node/);
      expectFailure(badOrg, /org slug/);
      expectFailure(past, /past/);
    });

    it('tenant plugins without a change prints {org, plugins}; bad requests exit non-zero', async () => {
      const env = { SVC_DATA_DIR: dataDir };
      const [show, unknownOrg, traversal, disableCore, unknownPlugin] = await Promise.all([
        runCli(['tenant', 'plugins', 'beta'], env),
        runCli(['tenant', 'plugins', 'nope'], env),
        runCli(['tenant', 'plugins', '..', '--disable', 'x'], env),
        runCli(['tenant', 'plugins', 'acme', '--disable', 'core'], env),
        runCli(['tenant', 'plugins', 'acme', '--enable', 'no-such-plugin'], env),
      ]);
      expect(jsonOut(show)).to.deep.equal({ org: 'beta', plugins: ['core'] });
      expectFailure(unknownOrg, /no tenant 'nope'/);
      expectFailure(traversal, /org slug/);
      expectFailure(disableCore, /always on/);
      expectFailure(unknownPlugin, /unknown plugin 'no-such-plugin'/);
    });

    // Runs against the real composition root once it holds a plugin besides core.
    const optional = allPlugins.find((p) => p.name !== 'core' && (p.tools?.length ?? 0) > 0);
    if (optional) {
      it(`tenant plugins --disable ${optional.name} / --enable on the real server applies within 2 s`, async () => {
        const env = { SVC_DATA_DIR: dataDir };
        const toolNames = async (token: string) => {
          const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
          const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
          const client = new Client({ name: 'cli-test', version: '0' });
          await client.connect(
            new StreamableHTTPClientTransport(new URL(url + '/mcp'), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
          );
          try {
            return (await client.listTools()).tools.map((t) => t.name);
          } finally {
            await client.close();
          }
        };
        const probe = resolveTool(optional.tools![0]!).name;
        expect(await toolNames(acme.token)).to.include(probe);
        const off = jsonOut(await runCli(['tenant', 'plugins', 'acme', '--disable', optional.name], env));
        expect(off.plugins).to.not.include(optional.name);
        await within(2000, async () => !(await toolNames(acme.token)).includes(probe));
        expect(await toolNames(localToken)).to.include(probe);
        const on = jsonOut(await runCli(['tenant', 'plugins', 'acme', '--enable', optional.name], env));
        expect(on.plugins).to.include(optional.name);
        await within(2000, async () => (await toolNames(acme.token)).includes(probe));
      });
    }
  });

  describe('tenant plugins against a server composed with a test plugin', () => {
    const probePing = defineOperation({
      name: 'probe_ping',
      summary: 'answers pong (test plugin)',
      input: object({}),
      run: async (ctx) => ({ probe: true, org: ctx.tenant.org }),
    });
    const probeRoute = defineOperation({
      name: 'get_probe',
      summary: 'answers the probe (test plugin)',
      input: object({}),
      run: async (ctx) => ({ probe: true, org: ctx.tenant.org }),
    });
    const probePlugin: PluginDef = definePlugin({
      name: 'probe',
      dependsOn: ['core'],
      routes: [{ method: 'GET', path: '/v1/probe', operation: probeRoute }],
      tools: [{ description: 'answers pong (test plugin)', operation: probePing }],
      access: {
        probe_ping: { callers: callers.anyPerson, scope: 'test plugin' },
        get_probe: { callers: callers.anyPerson, scope: 'test plugin' },
      },
    });
    let t: TestServer;
    let other: { token: string };

    before(async () => {
      t = await startTestServer({ plugins: [corePlugin, probePlugin], config: { tenantPollMs: 200 } });
      const created = await t.server.services.tenants.create({
        org: 'other',
        adminName: 'Other',
        adminEmail: 'o@other.test',
        plugins: ['core', 'probe'],
      });
      other = { token: created.token };
      await within(2000, async () => (await t.api('GET', '/v1/me', { token: other.token })).status === 200);
    });
    after(async () => {
      if (t) await t.close();
    });

    const toolsOf = async (client: Client) => (await client.listTools()).tools.map((x) => x.name);

    it('--disable answers {org, plugins}; within 2 s the routes are 404 and the tools gone for that tenant only; --enable brings them back', async () => {
      const env = { SVC_DATA_DIR: t.dataDir };
      // before: enabled for both tenants
      expect((await t.api('GET', '/v1/probe')).body).to.deep.equal({ probe: true, org: 'local' });
      expect((await t.api('GET', '/v1/probe', { token: other.token })).body).to.deep.equal({ probe: true, org: 'other' });
      expect(await toolsOf(await t.mcp())).to.include('probe_ping');

      const off = jsonOut(await runCli(['tenant', 'plugins', 'local', '--disable', 'probe'], env));
      expect(off).to.deep.equal({ org: 'local', plugins: ['core'] });
      const took = await within(2000, async () => (await t.api('GET', '/v1/probe')).status === 404);
      expect(took).to.be.below(2000);
      const gone = await t.api('GET', '/v1/probe');
      expect(gone.body.error.code).to.equal('not_found');
      expect(Object.keys(gone.body)).to.deep.equal(['error']);
      const localClient = await t.mcp();
      const localTools = await toolsOf(localClient);
      expect(localTools).to.not.include('probe_ping');
      expect(localTools).to.include('get_node');
      const call = await t.tool(localClient, 'probe_ping');
      expect(call.isError).to.equal(true);
      expect(call.json.error.code).to.equal('not_found');
      // the other tenant, on the same server process, is unaffected
      expect((await t.api('GET', '/v1/probe', { token: other.token })).status).to.equal(200);
      const otherClient = await t.mcp(other.token);
      expect(await toolsOf(otherClient)).to.include('probe_ping');
      expect((await t.tool(otherClient, 'probe_ping')).json).to.deep.equal({ probe: true, org: 'other' });
      expect(jsonOut(await runCli(['tenant', 'list'], env))).to.deep.equal([
        { org: 'local', plugins: ['core'] },
        { org: 'other', plugins: ['core', 'probe'] },
      ]);

      const on = jsonOut(await runCli(['tenant', 'plugins', 'local', '--enable', 'probe'], env));
      expect(on).to.deep.equal({ org: 'local', plugins: ['core', 'probe'] });
      await within(2000, async () => (await t.api('GET', '/v1/probe')).status === 200);
      expect(await toolsOf(await t.mcp())).to.include('probe_ping');
    });
  });
});
