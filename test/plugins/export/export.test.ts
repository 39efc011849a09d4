import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { hashToken } from '../../../kernel/auth.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { exportPlugin } from '../../../plugins/export/index.js';
import { addPerson, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';
import { directWrite, relaxHookTimeout } from '../history/helpers.js';

interface Download {
  status: number;
  headers: Headers;
  buf: Buffer;
}

async function download(t: TestServer, path: string, token: string | null = t.adminToken): Promise<Download> {
  const res = await fetch(t.url + path, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, headers: res.headers, buf: Buffer.from(await res.arrayBuffer()) };
}

function sh(cmd: string, args: string[], cwd?: string): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
}

const LONG_ID = `task-${'long-'.repeat(28)}id`; // 147 characters: too long for a plain ustar name field

describe('export: GET /v1/export (docs/spec.md Reads rule 11)', () => {
  let t: TestServer;
  let member: { id: string; token: string };
  let work: string;
  let gitdir: string;

  const headPaths = (rev = 'main') =>
    sh('git', ['--git-dir', gitdir, 'ls-tree', '-r', '--name-only', rev, '--', 'nodes/']).trim().split('\n').sort();
  const blobAt = (rev: string, path: string) => execFileSync('git', ['--git-dir', gitdir, 'show', `${rev}:${path}`]);

  before(async () => {
    t = await startTestServer({ plugins: [corePlugin, exportPlugin] });
    relaxHookTimeout(t);
    member = await addPerson(t, 'Mia Member');
    gitdir = join(t.dataDir, 'tenants', t.org, 'graph.git');
    work = mkdtempSync(join(tmpdir(), 'wg-export-test-'));
    const nodes: Array<Record<string, unknown>> = [
      { id: 'proj-exp', type: 'proj', summary: 'Export project' },
      { id: 'task-unicode', type: 'task', summary: 'Ünïcödé ✓ 日本語' },
      { id: LONG_ID, type: 'task', summary: 'A node whose path needs a pax record' },
    ];
    for (let i = 0; i < 40; i++) nodes.push({ id: `issue-exp-${i}`, type: 'issue', summary: `Export issue ${i}`, project: 'proj-exp' });
    await putNodes(t, nodes);
  });
  after(async () => {
    rmSync(work, { recursive: true, force: true });
    await t.close();
  });

  it('default: an uncompressed ustar tarball of every node file, with the x-svc headers', async () => {
    const status = (await t.api('GET', '/v1/status')).body;
    const res = await download(t, '/v1/export');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('application/x-tar');
    expect(res.headers.get('x-svc-head')).to.equal(status.head);
    expect(res.headers.get('x-svc-node-count')).to.equal(String(status.node_count));
    expect(res.headers.get('x-svc-skipped')).to.equal(null, 'nothing was omitted');
    expect(res.headers.get('x-svc-auth-files')).to.equal(null);
    expect(res.headers.get('content-length')).to.equal(null, 'streamed, not sized up front');
    expect(res.buf.toString('latin1', 257, 263)).to.equal('ustar\0', 'POSIX ustar magic');

    const file = join(work, 'plain.tar');
    writeFileSync(file, res.buf);
    const listed = sh('tar', ['-tf', file]).trim().split('\n').sort();
    expect(listed).to.deep.equal(headPaths());
    expect(listed).to.have.length(status.node_count);
    expect(listed.some((p) => p.endsWith(`/${LONG_ID}.md`))).to.equal(true);

    const out = join(work, 'plain');
    mkdirSync(out);
    sh('tar', ['-xf', file, '-C', out]);
    for (const path of listed) {
      expect(readFileSync(join(out, path)).equals(blobAt('main', path)), path).to.equal(true);
    }
    const unicode = listed.find((p) => p.endsWith('/task-unicode.md'))!;
    expect(readFileSync(join(out, unicode), 'utf8')).to.equal((await t.api('GET', '/v1/nodes/task-unicode')).body.markdown);
  });

  it('gzip=1: the same tarball through gzip', async () => {
    const plain = await download(t, '/v1/export');
    const gz = await download(t, '/v1/export?gzip=1');
    expect(gz.status).to.equal(200);
    expect(gz.headers.get('content-type')).to.equal('application/gzip');
    expect(gz.headers.get('x-svc-head')).to.equal(plain.headers.get('x-svc-head'));
    expect(gz.headers.get('x-svc-node-count')).to.equal(plain.headers.get('x-svc-node-count'));
    expect(gz.buf[0]).to.equal(0x1f);
    expect(gz.buf[1]).to.equal(0x8b);
    expect(gunzipSync(gz.buf).equals(plain.buf)).to.equal(true);
    const file = join(work, 'graph.tar.gz');
    writeFileSync(file, gz.buf);
    expect(sh('tar', ['-tzf', file]).trim().split('\n').sort()).to.deep.equal(headPaths());
  });

  it('history=1: a real git bundle of the whole repository; a clone reproduces x-svc-head and every node file', async () => {
    const res = await download(t, '/v1/export?history=1');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('application/x-git-bundle');
    const head = res.headers.get('x-svc-head');
    expect(head).to.equal((await t.api('GET', '/v1/status')).body.head);
    for (const h of ['x-svc-node-count', 'x-svc-skipped', 'x-svc-auth-files']) expect(res.headers.get(h), h).to.equal(null);

    const bundle = join(work, 'graph.bundle');
    writeFileSync(bundle, res.buf);
    const scratch = join(work, 'scratch');
    sh('git', ['init', '-q', scratch]);
    const verify = spawnSync('git', ['bundle', 'verify', bundle], { cwd: scratch, encoding: 'utf8' });
    expect(verify.status, verify.stderr).to.equal(0);
    const clone = join(work, 'clone');
    sh('git', ['clone', '-q', bundle, clone]);
    expect(sh('git', ['rev-parse', 'HEAD'], clone).trim()).to.equal(head);
    expect(sh('git', ['rev-list', '--count', 'HEAD'], clone).trim()).to.equal(
      sh('git', ['--git-dir', gitdir, 'rev-list', '--count', 'main']).trim(),
    );
    const files = sh('git', ['ls-files', 'nodes/'], clone).trim().split('\n').sort();
    expect(files).to.deep.equal(headPaths());
    for (const path of files) expect(readFileSync(join(clone, path)).equals(blobAt('main', path)), path).to.equal(true);
  });

  it('auth=1 is admin-only (403 otherwise) and adds the credential files, which hold only token hashes', async () => {
    const denied = await t.api('GET', '/v1/export?auth=1', { token: member.token });
    expect(denied.status).to.equal(403);
    expect(denied.body.error.code).to.equal('forbidden');

    const res = await download(t, '/v1/export?auth=1');
    expect(res.status).to.equal(200);
    const file = join(work, 'auth.tar');
    writeFileSync(file, res.buf);
    const listed = sh('tar', ['-tf', file]).trim().split('\n');
    const authEntries = listed.filter((p) => p.startsWith('auth/'));
    expect(authEntries).to.include('auth/tokens.json');
    expect(res.headers.get('x-svc-auth-files')).to.equal(String(authEntries.length));
    expect(res.headers.get('x-svc-node-count')).to.equal(String(listed.length - authEntries.length));
    const tokens = sh('tar', ['-xOf', file, 'auth/tokens.json']);
    expect(tokens).to.include(hashToken(t.adminToken));
    expect(tokens).to.include(hashToken(member.token));
    expect(tokens).to.not.include(t.adminToken);
    expect(tokens).to.not.include(member.token);
    expect(tokens).to.not.match(/svc_pat_/);
    // the default export never carries them
    const plain = sh('tar', ['-tf', join(work, 'plain.tar')]);
    expect(plain).to.not.include('auth/');
  });

  it('bad flags and combinations are 422; no token is 401', async () => {
    for (const q of ['gzip=2', 'history=yes', 'history=1&gzip=1', 'history=1&auth=1']) {
      const res = await t.api('GET', `/v1/export?${q}`);
      expect(res.status, q).to.equal(422);
      expect(res.body.error.code).to.equal('validation_failed');
    }
    // a flag that is not 1/0/true/false fails the declared boolean: ajv's error, naming the flag
    const bad = await t.api('GET', '/v1/export?gzip=2');
    expect(bad.body.error.details.errors[0]).to.deep.include({ instancePath: '/gzip', keyword: 'type', params: { type: 'boolean' } });
    expect((await t.api('GET', '/v1/export?history=1&auth=1', { token: member.token })).status).to.equal(403);
    expect((await t.api('GET', '/v1/export', { token: null })).status).to.equal(401);
    expect((await t.api('GET', '/v1/export?gzip=0&history=false')).status).to.equal(200);
  });

  it('the archive is exactly the graph at x-svc-head, even when a write lands while it streams', async () => {
    const res = await fetch(`${t.url}/v1/export`, { headers: { authorization: `Bearer ${t.adminToken}` } });
    const head = res.headers.get('x-svc-head')!;
    await putNodes(t, [{ id: 'task-during-export', type: 'task', summary: 'Written while exporting' }]);
    const after = (await t.api('GET', '/v1/status')).body.head;
    expect(after).to.not.equal(head);
    const file = join(work, 'during.tar');
    writeFileSync(file, Buffer.from(await res.arrayBuffer()));
    expect(sh('tar', ['-tf', file]).trim().split('\n').sort()).to.deep.equal(headPaths(head));
    const bundleRes = await fetch(`${t.url}/v1/export?history=1`, { headers: { authorization: `Bearer ${t.adminToken}` } });
    await putNodes(t, [{ id: 'task-during-bundle', type: 'task', summary: 'Written while bundling' }]);
    const bundle = join(work, 'during.bundle');
    writeFileSync(bundle, Buffer.from(await bundleRes.arrayBuffer()));
    const heads = sh('git', ['bundle', 'list-heads', bundle], join(work, 'scratch'));
    expect(heads).to.include(`${bundleRes.headers.get('x-svc-head')} refs/heads/main`);
  });

  it('a client that goes away mid-stream leaves the server serving', async () => {
    const body = 'x'.repeat(6000) + '\n';
    await directWrite(t, { op: 'bulk_import', via: 'rest' }, (d) => {
      for (let i = 0; i < 300; i++) d.put({ frontmatter: { id: `task-bulk-${i}`, type: 'task', summary: `Bulk ${i}` }, body });
    });
    for (const query of ['', '?gzip=1', '?history=1']) {
      const controller = new AbortController();
      const res = await fetch(`${t.url}/v1/export${query}`, {
        headers: { authorization: `Bearer ${t.adminToken}` },
        signal: controller.signal,
      });
      const reader = res.body!.getReader();
      await reader.read();
      controller.abort();
      await reader.read().catch(() => undefined);
    }
    const again = await download(t, '/v1/export');
    expect(again.status).to.equal(200);
    const file = join(work, 'again.tar');
    writeFileSync(file, again.buf);
    expect(sh('tar', ['-tf', file]).trim().split('\n')).to.have.length(Number(again.headers.get('x-svc-node-count')));
  });
});
