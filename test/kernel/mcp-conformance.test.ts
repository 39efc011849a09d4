/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, its `conformance
 * server` CLI) against a real server: the scenarios that apply to this server
 * (initialize, ping, tools/list, resources/list, DNS-rebinding protection) each pass.
 *
 * The suite's client sends no credentials (it has no header or token option), while /mcp
 * requires a bearer token. So the test puts a credential-adding gateway in front of the real
 * server, as an operator's authenticating proxy would be: a loopback HTTP proxy that adds
 * `Authorization: Bearer <token>` and forwards everything else unchanged, Host and Origin
 * included, so the server's own Host/Origin validation is what the DNS-rebinding scenario
 * meets. Nothing in the server knows about the test.
 *
 * The CLI is a bundle that needs Node 22's `fs.globSync` to load (for a command not used here);
 * test/helpers/conformance-node20.mjs lets it load on the project's Node 20.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers/processes.js';
import { startTestServer, type TestServer } from '../helpers/harness.js';

const CLI = join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const NODE20_HOOK = join(ROOT, 'test', 'helpers', 'conformance-node20.mjs');

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  errorMessage?: string;
}

/** Every checks.json under `dir` (the CLI writes one per scenario run, in a timestamped folder). */
function checksUnder(dir: string): Check[] {
  const out: Check[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...checksUnder(path));
    else if (name === 'checks.json') out.push(...(JSON.parse(readFileSync(path, 'utf8')) as Check[]));
  }
  return out;
}

function runScenario(url: string, scenario: string, outDir: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', NODE20_HOOK, CLI, 'server', '--url', url, '--scenario', scenario, '-o', outDir],
      // the CLI's own Node: not mocha's tsx loader flags
      { env: { ...process.env, NODE_OPTIONS: '' }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, output: `${stdout}\n${stderr}` }),
    );
  });
}

/** A loopback gateway that adds the bearer token and forwards the request as it came (Host and Origin kept). */
function tokenGateway(target: string, token: string): Promise<{ server: Server; port: number }> {
  const to = new URL(target);
  const server = createServer((req, res) => {
    const upstream = request(
      {
        host: to.hostname,
        port: to.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization: `Bearer ${token}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port })));
}

describe('kernel: the official MCP conformance suite', function () {
  this.timeout(120_000);
  let t: TestServer;
  let gateway: { server: Server; port: number };
  let outRoot: string;
  before(async () => {
    t = await startTestServer();
    gateway = await tokenGateway(t.url, t.adminToken);
    outRoot = mkdtempSync(join(tmpdir(), 'wg-conformance-'));
  });
  after(async () => {
    gateway?.server.closeAllConnections();
    await new Promise((r) => gateway?.server.close(r));
    await t?.close();
    if (outRoot) rmSync(outRoot, { recursive: true, force: true });
  });

  const scenarios: Record<string, string[]> = {
    'server-initialize': ['server-initialize'],
    ping: ['ping'],
    'tools-list': ['tools-list'],
    'resources-list': ['resources-list'],
    'dns-rebinding-protection': ['localhost-host-rebinding-rejected', 'localhost-host-valid-accepted'],
  };

  for (const [scenario, expectedChecks] of Object.entries(scenarios)) {
    it(`passes ${scenario}`, async () => {
      const dir = join(outRoot, scenario);
      // `localhost` as the suite's DNS-rebinding scenario requires a localhost URL
      const { code, output } = await runScenario(`http://localhost:${gateway.port}/mcp`, scenario, dir);
      const checks = checksUnder(dir);
      const failed = checks.filter((c) => c.status === 'FAILURE');
      expect(failed, `${output}\n${JSON.stringify(failed, null, 2)}`).to.deep.equal([]);
      for (const id of expectedChecks) expect(checks.find((c) => c.id === id)?.status, `${id}\n${output}`).to.equal('SUCCESS');
      expect(code, output).to.equal(0);
    });
  }
});
