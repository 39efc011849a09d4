/**
 * Issue 14: `workgraph import` of real beads and Backlog.md exports (and a GitHub issue list)
 * through the CLI, remotely against a real server and locally on a data directory: counts,
 * statuses, priorities, edges, source dates in history and analytics, an idempotent second
 * import, refusals reported; `workgraph backup` / `restore` round trip.
 */
import { expect } from 'chai';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, configFromEnv } from '../../../kernel/config.js';
import { startServer } from '../../../kernel/server.js';
import { importedNodeId } from '../../../plugins/import/operations.js';
import { readBacklog, readBeads } from '../../../scripts/import/readers.js';
import { allPlugins } from '../../../scripts/plugins.js';
import { addPerson, startTestServer, type TestServer } from '../../helpers/harness.js';
import { ROOT, runCli } from '../../helpers/processes.js';
import type { ImportReport } from '../../../scripts/import/cli.js';

/** The node id an imported item gets (the plugin's own derivation). */
const nid = (type: string, source: string, id: string) => importedNodeId({ prefix: `${type}-` }, source, id);
const beadsType = (o: Record<string, any>) => (o.issue_type === 'bug' ? 'issue' : 'task');

const FIXTURES = join(ROOT, 'test', 'fixtures', 'import');
const BEADS = join(FIXTURES, 'beads', 'issues.jsonl');
const BACKLOG = join(FIXTURES, 'backlog-md', 'backlog');
const GITHUB = join(FIXTURES, 'github-issues.json');

async function importJson(args: string[], env: Record<string, string>): Promise<ImportReport> {
  const res = await runCli(['import', ...args, '--json'], env);
  expect(res.code, res.stderr).to.equal(0);
  return JSON.parse(res.stdout) as ImportReport;
}

const beadsLines = () =>
  readFileSync(BEADS, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, any>);

describe('import: beads, Backlog.md and GitHub through the CLI', function () {
  // each test runs the CLI as its own process (tsx compiling it first): minutes on a loaded 2-core machine
  this.timeout(240_000);
  let t: TestServer;
  let remote: Record<string, string>;
  const work = mkdtempSync(join(tmpdir(), 'wg-import-'));

  before(async () => {
    t = await startTestServer({ plugins: allPlugins });
    remote = { SVC_SERVER: t.url, SVC_TOKEN: t.adminToken };
  });
  after(async () => {
    await t.close();
    rmSync(work, { recursive: true, force: true });
  });

  const node = async (id: string) => {
    const res = await t.api('GET', `/v1/nodes/${id}`);
    expect(res.status, `${id}: ${res.text}`).to.equal(200);
    return res.body;
  };

  it('beads (704 issues, remote): counts, statuses, priorities, people, edges', async () => {
    const report = await importJson(['beads', BEADS], remote);
    const source = beadsLines();
    expect(report).to.include({ items: source.length, created: source.length, updated: 0, unchanged: 0, refused: 0 });
    expect(report.people_created).to.be.greaterThan(5);
    // statuses: closed arrive closed (done/resolved, or cancelled/wontfix by their reason), open stay open
    const closed = source.filter((o) => o.status === 'closed');
    const status = await t.api('GET', '/v1/analytics?weeks=52');
    expect(status.status, status.text).to.equal(200);
    const byStatus = status.body.totals.by_status as Record<string, number>;
    const terminal = (byStatus.done ?? 0) + (byStatus.resolved ?? 0) + (byStatus.cancelled ?? 0) + (byStatus.wontfix ?? 0);
    expect(terminal).to.equal(closed.length);
    expect(byStatus['in-progress']).to.equal(source.filter((o) => o.status === 'in_progress' || o.status === 'hooked').length);
    // one closed task, with its close reason, priority and dates
    const sample = source.find((o) => o.id === 'bd-dgp')!;
    const dgp = await node('task-beads-bd-dgp');
    expect(dgp.frontmatter).to.include({
      status: 'done',
      close_reason: sample.close_reason,
      priority: 'p1',
      priority_via: 'import',
      import_source: 'beads',
      import_id: 'bd-dgp',
      summary: sample.title,
    });
    expect(dgp.frontmatter.created).to.equal(new Date(sample.created_at).toISOString());
    // a bug is an issue; priority 0-4 maps to p1-p3 and the original is kept
    const bug = source.find((o) => o.issue_type === 'bug' && o.status === 'closed')!;
    const bugNode = await node(nid('issue', 'beads', bug.id));
    expect(bugNode.frontmatter.status).to.be.oneOf(['resolved', 'wontfix']);
    expect(bugNode.frontmatter.source_priority).to.equal(`P${bug.priority}`);
    expect(bugNode.frontmatter.priority).to.equal(
      ({ 0: 'p1', 1: 'p1', 2: 'p2', 3: 'p3', 4: 'p3' } as Record<number, string>)[bug.priority],
    );
    // assignee names become person nodes, linked by `assigned`
    const assigned = source.find((o) => o.assignee === 'beads/witness')!;
    const assignedNode = await node(nid(beadsType(assigned), 'beads', assigned.id));
    const person = assignedNode.frontmatter.edges.find((e: { type: string }) => e.type === 'assigned');
    expect((await node(person.to)).frontmatter.name).to.equal('beads/witness');
    // parent-child becomes part-of on the child; blocks lands on the blocker
    const ids = new Set(source.map((o) => o.id));
    const child = source.find((o) => (o.dependencies ?? []).some((d: any) => d.type === 'parent-child' && ids.has(d.depends_on_id)))!;
    const parent = child.dependencies.find((d: any) => d.type === 'parent-child' && ids.has(d.depends_on_id)).depends_on_id as string;
    const childNode = await node(nid(beadsType(child), 'beads', child.id));
    expect(childNode.frontmatter.edges).to.deep.include({
      type: 'part-of',
      to: nid(beadsType(source.find((o) => o.id === parent)!), 'beads', parent),
    });
    const waiting = source.find((o) => (o.dependencies ?? []).some((d: any) => d.type === 'blocks' && ids.has(d.depends_on_id)))!;
    const blocker = waiting.dependencies.find((d: any) => d.type === 'blocks' && ids.has(d.depends_on_id)).depends_on_id as string;
    const blockerNode = await node(nid(beadsType(source.find((o) => o.id === blocker)!), 'beads', blocker));
    expect(blockerNode.frontmatter.edges).to.deep.include({ type: 'blocks', to: nid(beadsType(waiting), 'beads', waiting.id) });
    // dependencies on items outside the export are reported, not invented
    expect(report.warnings.some((w) => /^dropped blocks edge .* is not in the export$/.test(w))).to.equal(true);
  });

  it('history carries the source dates, so analytics count completions when they happened', async () => {
    const sample = beadsLines().find((o) => o.id === 'bd-dgp')!;
    const history = await t.api('GET', '/v1/nodes/task-beads-bd-dgp/history');
    expect(history.body.history.map((h: { date: string }) => h.date)).to.deep.equal([
      new Date(sample.closed_at).toISOString(),
      new Date(sample.created_at).toISOString(),
    ]);
    const analytics = await t.api('GET', '/v1/analytics?weeks=52');
    const from = Date.parse(analytics.body.window.from);
    const expected = beadsLines().filter((o) => o.status === 'closed' && Date.parse(o.closed_at) >= from).length;
    expect(analytics.body.throughput.completed).to.equal(expected);
    expect(analytics.body.cycleTimeDays.count).to.equal(expected);
    const week = analytics.body.weekly.find(
      (w: { start: string }) =>
        Date.parse(w.start) <= Date.parse(sample.closed_at) && Date.parse(sample.closed_at) < Date.parse(w.start) + 7 * 86_400_000,
    );
    expect(week.completed).to.be.greaterThan(0);
  });

  it('a second import of the same export changes nothing; a newer export updates only what changed', async () => {
    const head = (await t.api('GET', '/v1/status')).body.head;
    const again = await importJson(['beads', BEADS], remote);
    expect(again).to.include({ created: 0, updated: 0, unchanged: again.items, refused: 0, people_created: 0 });
    expect((await t.api('GET', '/v1/status')).body.head).to.equal(head);
    // a newer export: one open issue closed
    const lines = beadsLines();
    const open = lines.find((o) => o.status === 'open' && o.issue_type === 'task')!;
    Object.assign(open, {
      status: 'closed',
      closed_at: '2026-03-20T10:00:00Z',
      updated_at: '2026-03-20T10:00:00Z',
      close_reason: 'Done in the newer export',
    });
    const newer = join(work, 'newer.jsonl');
    writeFileSync(newer, lines.map((o) => JSON.stringify(o)).join('\n') + '\n');
    const update = await importJson(['beads', newer], remote);
    expect(update).to.include({ created: 0, updated: 1, unchanged: lines.length - 1 });
    const closedNode = await node(nid('task', 'beads', open.id));
    expect(closedNode.frontmatter).to.include({ status: 'done', close_reason: 'Done in the newer export' });
    const history = await t.api('GET', `/v1/nodes/${nid('task', 'beads', open.id)}/history`);
    expect(history.body.history[0].date).to.equal('2026-03-20T10:00:00.000Z');
  });

  it('beads tombstones and deleted items are skipped and counted, never imported', async () => {
    const file = join(work, 'tombstones.jsonl');
    const base = { issue_type: 'task', priority: 2, created_at: '2026-01-05T09:00:00Z', updated_at: '2026-01-05T09:00:00Z' };
    const lines = [
      { ...base, id: 'ts-live', title: 'Still here', status: 'open' },
      { ...base, id: 'ts-tomb', title: 'Tombstoned', status: 'tombstone' },
      { ...base, id: 'ts-del', title: 'Deleted', status: 'closed', deleted_at: '2026-01-06T09:00:00Z' },
    ];
    writeFileSync(file, lines.map((o) => JSON.stringify(o)).join('\n') + '\n');
    const report = await importJson(['beads', file], remote);
    expect(report).to.include({ items: 1, created: 1, deleted_skipped: 2, refused: 0 });
    expect((await node(nid('task', 'beads', 'ts-live'))).frontmatter.status).to.equal('open');
    for (const id of ['ts-tomb', 'ts-del']) expect((await t.api('GET', `/v1/nodes/${nid('task', 'beads', id)}`)).status).to.equal(404);
  });

  it('Backlog.md (remote): tasks, completed, archive, drafts, decisions, docs and milestones; priorities; oversized bodies refused with reasons', async () => {
    const read = readBacklog(BACKLOG);
    const report = await importJson(['backlog', BACKLOG], remote);
    expect(report.items).to.equal(read.items.length);
    expect(report.deleted_skipped).to.equal(read.deleted);
    const tooBig = read.items.filter((i) => Buffer.byteLength(i.body ?? '') > 8192);
    expect(report.refused).to.equal(tooBig.length);
    expect(report.refusals.map((r) => r.source_id).sort()).to.deep.equal(tooBig.map((i) => i.source_id).sort());
    for (const r of report.refusals) expect(r.reason).to.match(/^body of \d+ bytes exceeds 8192$/);
    expect(report.created).to.equal(read.items.length - tooBig.length);
    const done = read.items.find((i) => i.status === 'done' && i.priority === 'p1' && Buffer.byteLength(i.body ?? '') <= 8192)!;
    const doneNode = await node(nid('task', 'backlog', done.source_id));
    expect(doneNode.frontmatter).to.include({ status: 'done', priority: 'p1' });
    const dec = read.items.find((i) => i.type === 'dec')!;
    expect((await node(nid('dec', 'backlog', dec.source_id))).frontmatter.status).to.equal(dec.status);
    const withAc = read.items.find((i) => /- \[[ x]\] /.test(i.body ?? '') && Buffer.byteLength(i.body ?? '') <= 8192)!;
    expect((await node(nid('task', 'backlog', withAc.source_id))).body).to.equal(withAc.body);
    const sub = read.items.find((i) => i.edges?.some((e) => e.type === 'part-of' && e.to_type === 'task'))!;
    const subNode = await node(nid('task', 'backlog', sub.source_id));
    expect(subNode.frontmatter.edges.some((e: { type: string }) => e.type === 'part-of')).to.equal(true);
    const again = await importJson(['backlog', BACKLOG], remote);
    expect(again).to.include({ created: 0, updated: 0, refused: tooBig.length, unchanged: read.items.length - tooBig.length });
  });

  it('GitHub issue lists: closed reasons, sub-issues and blocked-by links; the summary table on a plain run', async () => {
    const res = await runCli(['import', 'github', GITHUB], remote);
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stdout).to.match(/^import github from /);
    expect(res.stdout).to.match(/ created\s+4$/m);
    expect(res.stdout).to.match(/ refused\s+0$/m);
    expect((await node('issue-github-2')).frontmatter).to.include({ status: 'resolved', milestone: 'v1.0' });
    expect((await node('task-github-4')).frontmatter.status).to.equal('cancelled');
    expect((await node('issue-github-2')).frontmatter.edges).to.deep.include({ type: 'part-of', to: 'task-github-1' });
    expect((await node('issue-github-2')).frontmatter.edges).to.deep.include({ type: 'blocks', to: 'task-github-3' });
  });

  it('the import route is admin-only, validates with the schema (422 with the validator errors), and a bad item does not stop the batch', async () => {
    const member = await addPerson(t, 'Import Member');
    const item = { source_id: 'x1', type: 'task', title: 'x', status: 'open' };
    expect((await t.api('POST', '/v1/import', { token: member.token, body: { source: 'beads', items: [item] } })).status).to.equal(403);
    const bad = await t.api('POST', '/v1/import', { body: { source: 'Beads!', items: [{ ...item, status: 5 }] } });
    expect(bad.status).to.equal(422);
    expect(bad.body.error.code).to.equal('validation_failed');
    expect(bad.body.error.details.errors.map((e: { instancePath: string }) => e.instancePath)).to.include.members([
      '/source',
      '/items/0/status',
    ]);
    // the request body is the operation's closed input: an unknown top-level field is 422 before anything runs
    const extra = await t.api('POST', '/v1/import', { body: { source: 'beads', items: [item], dry_run: true } });
    expect(extra.status, extra.text).to.equal(422);
    expect(extra.body.error.details.errors[0]).to.deep.include({
      keyword: 'additionalProperties',
      params: { additionalProperty: 'dry_run' },
    });
    // source fields cannot replace what the import decides (id, type, summary, edges)
    const sneaky = await t.api('POST', '/v1/import', {
      body: {
        source: 'manual',
        items: [
          {
            ...item,
            source_id: 'x9',
            fields: { id: 'task-hijack', type: 'dec', summary: 'other', edges: [{ type: 'blocks', to: 'proj-root' }], milestone: 'm1' },
          },
        ],
      },
    });
    expect(sneaky.body.results[0]).to.include({ status: 'created', id: 'task-manual-x9' });
    const made = (await t.api('GET', '/v1/nodes/task-manual-x9')).body.frontmatter;
    expect(made).to.include({ id: 'task-manual-x9', type: 'task', summary: 'x', milestone: 'm1' });
    expect(made).to.not.have.property('edges');
    expect((await t.api('GET', '/v1/nodes/task-hijack')).status).to.equal(404);
    const mixed = await t.api('POST', '/v1/import', {
      body: { source: 'manual', items: [{ ...item, status: 'nope' }, item, { ...item, source_id: 'x2', type: 'widget' }] },
    });
    expect(mixed.status, mixed.text).to.equal(200);
    expect(mixed.body.results.map((r: { status: string }) => r.status)).to.deep.equal(['refused', 'created', 'refused']);
    expect(mixed.body.results[0].reason).to.match(/not a task status/);
  });
});

describe('import locally, and backup / restore', function () {
  this.timeout(120_000);
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const tmp = (prefix: string) => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(d);
    return d;
  };

  it('local mode imports onto SVC_DATA_DIR with the admin-token file; the server then serves it', async () => {
    const dataDir = tmp('wg-import-local-');
    const report = await importJson(['beads', BEADS], { SVC_DATA_DIR: dataDir });
    expect(report).to.include({ items: readBeads(BEADS).items.length, refused: 0 });
    const server = await startServer({
      config: { ...configFromEnv({}), host: '127.0.0.1', port: 0, dataDir, fsync: false },
      plugins: allPlugins,
      log: createLogger(() => undefined),
    });
    try {
      const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
      const res = await fetch(`${server.url}/v1/nodes/task-beads-bd-dgp`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).to.equal(200);
    } finally {
      await server.close();
    }
  });

  it('backup of a running tenant, restore onto an empty data dir: same head, nodes, tokens and leases', async () => {
    const t = await startTestServer({ plugins: allPlugins });
    const file = join(tmp('wg-backup-'), 'local.tar');
    let head: string;
    let alice: { id: string; token: string };
    const adminToken = t.adminToken;
    try {
      alice = await addPerson(t, 'Alice Backup');
      await importJson(['github', GITHUB], { SVC_SERVER: t.url, SVC_TOKEN: t.adminToken });
      const claim = await t.api('POST', '/v1/nodes/task-github-3/claim', { token: alice.token, body: {} });
      expect(claim.status, claim.text).to.equal(200);
      head = (await t.api('GET', '/v1/status')).body.head;
      const res = await runCli(['backup', file], { SVC_SERVER: t.url, SVC_TOKEN: t.adminToken });
      expect(res.code, res.stderr).to.equal(0);
      expect(JSON.parse(res.stdout)).to.include({ org: t.org, head });
    } finally {
      await t.close();
    }
    const restored = tmp('wg-restore-');
    const res = await runCli(['restore', file], { SVC_DATA_DIR: restored });
    expect(res.code, res.stderr).to.equal(0);
    expect(JSON.parse(res.stdout)).to.include({ org: 'local', head });
    // a second restore onto the same directory is refused
    expect((await runCli(['restore', file], { SVC_DATA_DIR: restored })).code).to.not.equal(0);
    copyFileSync(file, join(restored, 'kept.tar'));
    const server = await startServer({
      config: { ...configFromEnv({}), host: '127.0.0.1', port: 0, dataDir: restored, fsync: false },
      plugins: allPlugins,
      log: createLogger(() => undefined),
    });
    try {
      const get = (path: string, token: string) => fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
      const status = (await (await get('/v1/status', alice!.token)).json()) as { head: string; node_count: number };
      expect(status.head).to.equal(head!);
      expect((await get('/v1/nodes/issue-github-2', alice!.token)).status).to.equal(200);
      // the restored tenant's event log starts with one graph.restored at the restored head (docs/events.md)
      const events = await server.services.tenants.get('local')!.events.read(0, undefined, 1000);
      expect(events.map((e) => [e.type, e.commit, e.actor?.via])).to.deep.equal([['graph.restored', head!, 'restore']]);
      expect(events[0]!.payload).to.include({ total: status.node_count, backup_head: head! });
      // the lease survived: another person's claim is refused naming alice
      const other = await fetch(`${server.url}/v1/nodes/task-github-3/claim`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken!}`, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(other.status).to.equal(409);
      expect(((await other.json()) as { error: { details: { holder: string } } }).error.details.holder).to.equal(alice!.id);
    } finally {
      await server.close();
    }
  });
});
