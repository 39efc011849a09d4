/**
 * `npm start` runs the esbuild bundle (`npm run build` -> dist/workgraph.mjs), not the
 * TypeScript sources the rest of the suite imports. This drives the bundled server over
 * HTTP and MCP through every plugin's routes, so a module the bundle breaks (a lazy
 * import, a package that resolves files at run time) fails here.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers/processes.js';

/** `node dist/workgraph.mjs serve` (what `npm start` runs) on a fresh data directory, once it listens. */
async function startBundled(
  nodeArgs: string[] = [],
  env: Record<string, string> = {},
  /** a data directory a previous start made (a restart); a new one when absent */
  reuse?: string,
): Promise<{ child: ChildProcess; url: string; dataDir: string }> {
  const dataDir = reuse ?? mkdtempSync(join(tmpdir(), 'wg-bundle-'));
  let output = '';
  const child = spawn(process.execPath, [...nodeArgs, join(ROOT, 'dist', 'workgraph.mjs'), 'serve'], {
    cwd: ROOT,
    env: { ...process.env, SVC_DATA_DIR: join(dataDir, 'data'), PORT: '0', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const deadline = Date.now() + 60_000;
  while (!/listening on (http:\/\/\S+)/.test(output)) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`bundled server did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, url: /listening on (http:\/\/\S+)/.exec(output)![1]!, dataDir };
}

async function stopBundled(child: ChildProcess | undefined, dataDir: string | undefined): Promise<void> {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}

describe('the bundled server (dist/workgraph.mjs, what `npm start` runs)', function () {
  this.timeout(120_000);
  let dataDir: string;
  let child: ChildProcess;
  let url = '';
  let token = '';

  const api = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: any; text: string }> => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, json, text };
  };

  before(async () => {
    const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, encoding: 'utf8' });
    expect(build.status, build.stderr).to.equal(0);
    ({ child, url, dataDir } = await startBundled());
    token = readFileSync(join(dataDir, 'data', 'admin-token'), 'utf8').trim();
  });

  after(() => stopBundled(child, dataDir));

  it('serves writes and every plugin read over HTTP', async () => {
    expect((await fetch(`${url}/healthz`)).status).to.equal(200);
    const put = await api('POST', '/v1/nodes', {
      nodes: [
        { node: { id: 'proj-b', type: 'proj', summary: 'Bundle project' } },
        { node: { id: 'task-b1', type: 'task', summary: 'Bundle task one', project: 'proj-b' } },
        { node: { id: 'task-b2', type: 'task', summary: 'Bundle task two', project: 'proj-b' } },
      ],
    });
    expect(put.status, put.text).to.equal(200);
    expect((await api('POST', '/v1/nodes/task-b1/edges', { type: 'blocks', to: 'task-b2' })).status).to.equal(200);
    expect((await api('POST', '/v1/nodes/task-b1/priority', { priority: 'p1' })).status).to.equal(200);
    expect((await api('POST', '/v1/nodes/task-b2/status', { status: 'blocked' })).status).to.equal(200);
    for (const path of [
      '/v1/status?titles=1',
      '/v1/me',
      '/v1/schema?code=1',
      '/v1/nodes/task-b1',
      '/v1/nodes/task-b1/history',
      '/v1/changes',
      '/v1/queue',
      '/v1/work',
      '/v1/lens',
      '/v1/analytics',
      '/v1/admin/people',
      '/v1/agents',
    ]) {
      const r = await api('GET', path);
      expect(r.status, `${path}: ${r.text.slice(0, 300)}`).to.equal(200);
    }
    const history = (await api('GET', '/v1/nodes/task-b1/history')).json;
    const detail = await api('GET', `/v1/nodes/task-b1/history/${history.history[0].sha}`);
    expect(detail.status, detail.text).to.equal(200);
    expect(detail.json.patch).to.include('+priority: p1');
    const tar = await fetch(`${url}/v1/export`, { headers: { authorization: `Bearer ${token}` } });
    expect(tar.status).to.equal(200);
    expect((await tar.arrayBuffer()).byteLength).to.be.greaterThan(1024);
    const capture = await api('POST', '/v1/capture', { text: 'Bundle capture: the importer drops rows on DST boundaries.' });
    expect(capture.status, capture.text).to.be.oneOf([200, 201]);
    const gardener = await api('POST', '/v1/gardener', {});
    expect(gardener.status, gardener.text).to.be.below(500);
  });

  it('answers MCP tools and the MCP App resource with the same bytes as REST', async () => {
    const client = new Client({ name: 'bundle-test', version: '0.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    try {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      for (const n of ['get_node', 'put_node', 'schema', 'hello_mcp_app', 'show_queue', 'node_history']) expect(names).to.include(n);
      const viaTool = (await client.callTool({ name: 'get_node', arguments: { id: 'task-b1' } })) as { content: Array<{ text: string }> };
      // the tool's lean default (no markdown) is REST's include_markdown=false
      expect(viaTool.content[0]!.text).to.equal((await api('GET', '/v1/nodes/task-b1?include_markdown=false')).text);
      const { resources } = await client.listResources();
      const app = resources.find((r) => r.uri.startsWith('ui://'));
      expect(app, 'an MCP App ui:// resource').to.not.equal(undefined);
      const read = await client.readResource({ uri: app!.uri });
      expect(read.contents[0]!.mimeType).to.equal('text/html;profile=mcp-app');
    } finally {
      await client.close();
    }
  });
});

describe('what a start of the bundle loads (docs/performance.md "Empty server")', function () {
  this.timeout(120_000);
  let dataDir: string;
  let child: ChildProcess;
  const log = join(tmpdir(), `wg-bundle-loaded-${process.pid}.txt`);

  after(async () => {
    await stopBundled(child, dataDir);
    rmSync(log, { force: true });
  });

  it('leaves OAuth, GitHub, cluster, git-library, date-phrase, export, app-page, rate-limit and OpenID Connect code unloaded until used, and never loads isolated-vm in the server process', async () => {
    // the bundle the previous suite built (npm run build) and its module map
    const meta = JSON.parse(readFileSync(join(ROOT, 'dist', 'workgraph.meta.json'), 'utf8')) as {
      outputs: Record<string, { inputs: Record<string, unknown>; imports: Array<{ path: string; external?: boolean }> }>;
    };
    const chunksWith = (pkg: string) =>
      Object.entries(meta.outputs)
        .filter(([file, o]) => file.endsWith('.mjs') && Object.keys(o.inputs).some((input) => input.startsWith(`node_modules/${pkg}/`)))
        .map(([file]) => file.split('/').pop()!);
    const chunksOf = (source: string) =>
      Object.entries(meta.outputs)
        .filter(([file, o]) => file.endsWith('.mjs') && Object.keys(o.inputs).includes(source))
        .map(([file]) => file.split('/').pop()!);
    const lazy = {
      express: chunksWith('express'),
      octokit: chunksWith('@octokit/rest'),
      pg: chunksWith('pg'),
      // cluster mode's own code, imported only when SVC_DATABASE_URL is set
      'kernel/cluster': chunksOf('kernel/cluster/forward.ts'),
      // the app's pages and host, with the first app request
      'app pages': chunksOf('plugins/app/mount.ts'),
      // the tar writer, with the first export
      'tar-stream': chunksWith('tar-stream'),
      // the app's sign-in rate limiter (and OAuth's), with the first sign-in attempt
      'rate-limiter-flexible': chunksWith('rate-limiter-flexible'),
      // the app's OpenID Connect client, with the first provider sign-in
      'openid-client': chunksWith('openid-client'),
      // a store that exists opens without the git library (the first start creates it with it)
      'isomorphic-git': chunksWith('isomorphic-git'),
      // the first relative `since` loads it
      'chrono-node': chunksWith('chrono-node'),
    };
    for (const [pkg, files] of Object.entries(lazy)) expect(files, `the chunk that holds ${pkg}`).to.have.length(1);
    // mime-db is required from node_modules at run time (one JSON.parse), never bundled as code
    expect(chunksWith('mime-db'), 'chunks that bundle mime-db').to.deep.equal([]);
    for (const [file, o] of Object.entries(meta.outputs))
      expect(
        o.imports.filter((i) => i.path === 'isolated-vm'),
        `${file} imports isolated-vm`,
      ).to.deep.equal([]);

    // exactly `npm start` (node dist/workgraph.mjs serve), plus a module hook that records each
    // file loaded; the first start creates the data directory, the one measured is a restart
    const hook = ['--import', join(ROOT, 'test', 'helpers', 'load-log.mjs')];
    ({ child, dataDir } = await startBundled(hook, { WG_LOAD_LOG: log }));
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(log, { force: true });
    let base: string;
    ({ child, url: base, dataDir } = await startBundled(hook, { WG_LOAD_LOG: log }, dataDir));
    const token = readFileSync(join(dataDir, 'data', 'admin-token'), 'utf8').trim();
    const read = await fetch(`${base}/v1/nodes/proj-root`, { headers: { authorization: `Bearer ${token}` } });
    expect(read.status).to.equal(200);
    const loaded = () =>
      new Set(
        readFileSync(log, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((u) => u.split('/').pop()!),
      );
    const atStart = loaded();
    expect(atStart.has('workgraph.mjs')).to.equal(true);
    for (const [pkg, files] of Object.entries(lazy)) expect(atStart.has(files[0]!), `${pkg} loaded at start`).to.equal(false);

    // the first OAuth request loads the protocol module, and is answered
    const discovery = await fetch(`${base}/.well-known/oauth-authorization-server`);
    expect(discovery.status).to.equal(200);
    expect(((await discovery.json()) as { issuer: string }).issuer).to.equal(base);
    expect(loaded().has(lazy.express[0]!), 'express loaded by the first OAuth request').to.equal(true);

    // the first app request loads the pages, and is answered
    const signin = await fetch(`${base}/app/signin`);
    expect(signin.status).to.equal(200);
    expect(await signin.text()).to.include('<form');
    expect(loaded().has(lazy['app pages'][0]!), 'the app pages loaded by the first app request').to.equal(true);

    // the first export loads the tar writer, and streams a tarball
    const tarball = await fetch(`${base}/v1/export`, { headers: { authorization: `Bearer ${token}` } });
    expect(tarball.status).to.equal(200);
    expect(
      Buffer.from(await tarball.arrayBuffer())
        .subarray(257, 262)
        .toString('latin1'),
    ).to.equal('ustar');
    expect(loaded().has(lazy['tar-stream'][0]!), 'tar-stream loaded by the first export').to.equal(true);

    // the first relative phrase loads chrono-node, and is answered
    const changes = await fetch(`${base}/v1/changes?since=${encodeURIComponent('3 days ago')}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(changes.status).to.equal(200);
    expect(loaded().has(lazy['chrono-node'][0]!), 'chrono-node loaded by the first relative since').to.equal(true);
  });
});
