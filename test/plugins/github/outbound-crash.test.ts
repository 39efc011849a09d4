/**
 * Outbound calls survive `kill -9` (issue 26 acceptance): a real `workgraph serve` child process
 * on a persistent data directory, GitHub (the OpenAPI-validating mock, test/helpers/github-mock.ts)
 * down while nodes are created in the linked project, so their issue creations are queued (the
 * event log is the queue, plugins/github/outbound.ts). The server is killed with SIGKILL, GitHub
 * comes back, the server restarts on the same directory: every node's issue is created, each
 * exactly once (one POST carrying each node's marker), and the nodes say which issue they are.
 */
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSecrets } from '../../helpers/harness.js';
import { GithubMock } from '../../helpers/github-mock.js';
import { groupAlive, killGroup, startServeProcess } from '../../helpers/processes.js';
import { until } from '../../helpers/until.js';

const TOKEN = 'github_pat_outbound_crash_0123456789';
const SECRET = 'outbound-crash-webhook-secret-001';
const children = new Set<ChildProcess>();
let dataDir = '';
let mock: GithubMock | null = null;

after(async () => {
  for (const child of children) if (groupAlive(child.pid!)) await killGroup(child, 'SIGKILL');
  await mock?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('github outbound: kill -9 with calls queued', function () {
  this.timeout(180_000);

  it('after the restart each queued issue creation reaches GitHub exactly once', async () => {
    mock = await GithubMock.start();
    dataDir = mkdtempSync(join(tmpdir(), 'wg-gh-crash-'));
    const serve = () => startServeProcess({ SVC_DATA_DIR: dataDir, SVC_GITHUB_API_URL: mock!.url }, children);
    let server = await serve();
    const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    runSecrets.add(token);
    runSecrets.add(TOKEN);
    runSecrets.add(SECRET);
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(server.url + path, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, text: await res.text() };
    };
    const put = async (id: string, extra = '') => {
      const res = await call('POST', '/v1/nodes', {
        nodes: [`---\nid: ${id}\ntype: task\nsummary: ${id}\nproject: proj-crash\n${extra}---\nBody of ${id}.\n`],
      });
      expect(res.status, res.text).to.equal(200);
    };
    expect((await call('POST', '/v1/nodes', { nodes: ['---\nid: proj-crash\ntype: proj\nsummary: crash\n---\n'] })).status).to.equal(200);
    const link = await call('POST', '/v1/integrations/github/links', {
      repo: 'Codertocat/Hello-World',
      first_sync: false,
      token: TOKEN,
      webhook_secret: SECRET,
      project: 'proj-crash',
    });
    expect(link.status, link.text).to.equal(201);

    await mock.down();
    const ids = ['task-crash-a', 'task-crash-b', 'task-crash-c', 'task-crash-d'];
    for (const id of ids) await put(id);
    // the first creation was tried and failed: the calls are queued
    await until(() => server.output().includes('GitHub call failed, retrying') || undefined, 'a failed GitHub call', 60_000);
    expect(mock.calls('POST', /\/issues$/)).to.have.length(0);
    await killGroup(server.child, 'SIGKILL');

    await mock.up();
    server = await serve();
    const markerOf = (id: string) => `<!-- work-graph:${id} -->`;
    const posts = () => mock!.calls('POST', /\/repos\/Codertocat\/Hello-World\/issues$/);
    const bodies = () => posts().map((r) => String((r.body as { body?: string } | null)?.body ?? ''));
    await until(() => ids.every((id) => bodies().some((b) => b.includes(markerOf(id)))) || undefined, 'every node sent', 90_000);
    // a barrier: the engine works in event order, so once a later node's issue exists every earlier one is done
    await put('task-crash-z');
    await until(() => bodies().some((b) => b.includes(markerOf('task-crash-z'))) || undefined, 'the last node sent', 60_000);
    for (const id of ids)
      expect(
        bodies().filter((b) => b.includes(markerOf(id))),
        id,
      ).to.have.length(1);
    for (const r of posts()) expect(r.status, JSON.stringify(r.response)).to.equal(201);
    // after the restart, the first node's earlier attempt (maybe sent) was searched for by its marker first
    expect(mock.calls('GET', /\/repos\/Codertocat\/Hello-World\/issues$/).length).to.be.greaterThan(0);
    for (const id of ids) {
      const n = await until(async () => {
        const res = await call('GET', `/v1/nodes/${id}`);
        const body = JSON.parse(res.text) as { frontmatter: { github_issue?: string } };
        return body.frontmatter.github_issue ? body : undefined;
      });
      expect(n.frontmatter.github_issue).to.match(/^Codertocat\/Hello-World#\d+$/);
    }
    await killGroup(server.child, 'SIGTERM');
  });
});
