/**
 * docs/spec.md Reads rule 10 (GET /v1/program/{id}): the gating tree over `blocks` edges with
 * `progress: {total, done, active, blocked, open, pct, statuses}` on the root; shared
 * blockers render once and repeat as marked leaves counted once; `depth`/`max_nodes`
 * bounds report the skipped branches in `truncated`; a root nothing blocks is a
 * successful empty result; an unknown id is 404.
 */
import { expect } from 'chai';
import type { TestServer } from '../../helpers/harness.js';
import { addEdge, put, setStatus, startAnalyticsServer } from './helpers.js';

interface TreeNode {
  id: string;
  phase: string;
  repeat?: boolean;
  cycle?: boolean;
  shared?: boolean;
  expanded_under?: string;
  edge?: Record<string, string>;
  blockers?: TreeNode[];
  more?: number;
  cut?: string;
}

/** The tree as nested ids: `id` for a full entry, `id*` for a repeat leaf. */
function shape(node: TreeNode): unknown {
  if (node.repeat) return `${node.id}*`;
  const kids = node.blockers ?? [];
  return kids.length === 0 ? node.id : { [node.id]: kids.map(shape) };
}

describe('analytics: GET /v1/program/{id}', function () {
  this.timeout(30_000);
  let t: TestServer;

  before(async () => {
    t = await startAnalyticsServer();
    // R <- A, B;  A <- C, D(done);  B <- C (shared);  C <- E (in progress)
    await put(t, [
      { id: 'task-r', type: 'task', summary: 'Launch' },
      { id: 'task-a', type: 'task', summary: 'A', edges: [{ type: 'blocks', to: 'task-r' }] },
      { id: 'task-b', type: 'task', summary: 'B', edges: [{ type: 'blocks', to: 'task-r' }] },
      {
        id: 'task-c',
        type: 'task',
        summary: 'C',
        edges: [
          { type: 'blocks', to: 'task-a' },
          { type: 'blocks', to: 'task-b' },
        ],
      },
      { id: 'task-d', type: 'task', summary: 'D', edges: [{ type: 'blocks', to: 'task-a' }] },
      { id: 'task-e', type: 'task', summary: 'E', edges: [{ type: 'blocks', to: 'task-c', needed_by: '2030-01-01' }] },
      { id: 'task-lonely', type: 'task', summary: 'nothing blocks me' },
      { id: 'task-q', type: 'task', summary: 'cyclic root' },
      { id: 'task-x', type: 'task', summary: 'x blocks q, q blocks x', edges: [{ type: 'blocks', to: 'task-q' }] },
    ]);
    await setStatus(t, 'task-d', 'done');
    await setStatus(t, 'task-e', 'in-progress');
    await addEdge(t, 'task-q', 'blocks', 'task-x');
  });
  after(async () => {
    await t.close();
  });

  it('renders the blocked-by tree with progress on the root', async () => {
    const res = await t.api('GET', '/v1/program/task-r');
    expect(res.status, res.text).to.equal(200);
    const p = res.body;
    expect(p).to.include({ id: 'task-r', type: 'task', status: 'open', title: 'Launch' });
    // not-done blockers first, then done ones
    expect(shape(p)).to.deep.equal({ 'task-r': [{ 'task-a': [{ 'task-c': ['task-e'] }, 'task-d'] }, { 'task-b': ['task-c*'] }] });
    // A, B, C, D, E once each: D done, E active, A/B/C blocked by open work
    expect(p.progress).to.deep.equal({
      total: 5,
      done: 1,
      active: 1,
      blocked: 3,
      open: 0,
      pct: 20,
      statuses: { done: 1, 'in-progress': 1, open: 3 },
    });
    expect(p.truncated).to.deep.equal([]);
  });

  it('a shared blocker renders once and repeats as a marked leaf, counted once', async () => {
    const p = (await t.api('GET', '/v1/program/task-r')).body;
    const a = p.blockers.find((n: TreeNode) => n.id === 'task-a');
    const b = p.blockers.find((n: TreeNode) => n.id === 'task-b');
    const c = a.blockers.find((n: TreeNode) => n.id === 'task-c');
    expect(c.shared).to.equal(true);
    expect(c.blockers.map((n: TreeNode) => n.id)).to.deep.equal(['task-e']);
    expect(c.blockers[0].edge).to.deep.equal({ needed_by: '2030-01-01' });
    expect(b.blockers).to.have.length(1);
    expect(b.blockers[0]).to.include({ id: 'task-c', repeat: true, expanded_under: 'task-a' });
    expect(b.blockers[0]).not.to.have.property('blockers');
    expect(p.progress.total).to.equal(5);
    expect(p.entries).to.equal(6);
  });

  it('progress follows status changes, and a live resolves edge counts as done', async () => {
    await put(t, [{ id: 'task-fix-c', type: 'task', summary: 'resolves C', edges: [{ type: 'resolves', to: 'task-c' }] }]);
    const p = (await t.api('GET', '/v1/program/task-r')).body;
    expect(p.progress).to.include({ total: 5, done: 2, active: 1, pct: 40 });
    // C is done, so A and B are no longer held up by open work
    expect(p.progress).to.include({ blocked: 0, open: 2 });
    const del = await t.api('DELETE', '/v1/nodes/task-fix-c/edges', { body: { type: 'resolves', to: 'task-c' } });
    expect(del.status, del.text).to.equal(200);
    expect((await t.api('GET', '/v1/program/task-r')).body.progress).to.include({ done: 1, blocked: 3 });
  });

  it('depth bounds the levels and reports each cut branch in truncated', async () => {
    const p = (await t.api('GET', '/v1/program/task-r?depth=1')).body;
    expect(shape(p)).to.deep.equal({ 'task-r': ['task-a', 'task-b'] });
    expect(p.truncated).to.deep.equal([
      { id: 'task-a', reason: 'depth', skipped: 2 },
      { id: 'task-b', reason: 'depth', skipped: 1 },
    ]);
    const a = p.blockers[0];
    expect(a).to.include({ more: 2, cut: 'depth' });
    expect(p.progress.total).to.equal(2);
    expect(p.bounds).to.deep.equal({ depth: 1, max_nodes: 200 });
    // clamped, not rejected
    expect((await t.api('GET', '/v1/program/task-r?depth=0')).body.bounds.depth).to.equal(1);
    expect((await t.api('GET', '/v1/program/task-r?depth=999')).body.bounds.depth).to.equal(50);
  });

  it('max_nodes bounds the entries and reports each cut branch in truncated', async () => {
    const p = (await t.api('GET', '/v1/program/task-r?max_nodes=3')).body;
    expect(p.entries).to.equal(3);
    expect(shape(p)).to.deep.equal({ 'task-r': [{ 'task-a': ['task-c'] }, 'task-b'] });
    expect(p.truncated).to.deep.equal([
      { id: 'task-a', reason: 'max_nodes', skipped: 1 },
      { id: 'task-b', reason: 'max_nodes', skipped: 1 },
      { id: 'task-c', reason: 'max_nodes', skipped: 1 },
    ]);
    expect(p.progress.total).to.equal(3);
    expect((await t.api('GET', '/v1/program/task-r?max_nodes=0')).body.bounds.max_nodes).to.equal(1);
    expect((await t.api('GET', '/v1/program/task-r?max_nodes=99999')).body.bounds.max_nodes).to.equal(2000);
  });

  it('a cycle back to an ancestor is a marked repeat leaf and never loops', async () => {
    const p = (await t.api('GET', '/v1/program/task-q')).body;
    expect(shape(p)).to.deep.equal({ 'task-q': [{ 'task-x': ['task-q*'] }] });
    expect(p.blockers[0].blockers[0]).to.include({ repeat: true, cycle: true });
    expect(p.progress.total).to.equal(1);
  });

  it('blocked-by and depends-on forms count as blockers too', async () => {
    await put(t, [
      { id: 'task-g', type: 'task', summary: 'G' },
      { id: 'task-h', type: 'task', summary: 'H' },
      { id: 'task-hand', type: 'task', summary: 'hand-written inverse edge', edges: [{ type: 'depends-on', to: 'task-g' }] },
    ]);
    await addEdge(t, 'task-hand', 'blocked-by', 'task-h'); // flipped: task-h blocks task-hand
    const p = (await t.api('GET', '/v1/program/task-hand')).body;
    expect(p.blockers.map((n: TreeNode) => n.id)).to.deep.equal(['task-g', 'task-h']);
  });

  it('a root nothing blocks gives a successful empty result', async () => {
    const res = await t.api('GET', '/v1/program/task-lonely');
    expect(res.status).to.equal(200);
    expect(res.body.blockers).to.deep.equal([]);
    expect(res.body.truncated).to.deep.equal([]);
    expect(res.body.progress).to.deep.equal({ total: 0, done: 0, active: 0, blocked: 0, open: 0, pct: 0, statuses: {} });
    const text = await t.api('GET', '/v1/program/task-lonely?format=text');
    expect(text.status).to.equal(200);
    expect(text.text).to.include('Nothing blocks this node');
  });

  it('unknown id 404, malformed id or bounds or format 422', async () => {
    const missing = await t.api('GET', '/v1/program/task-nope');
    expect(missing.status).to.equal(404);
    expect(missing.body.error.code).to.equal('not_found');
    for (const path of [
      '/v1/program/Task_Bad',
      '/v1/program/task-r?depth=deep',
      '/v1/program/task-r?max_nodes=-',
      '/v1/program/task-r?format=html',
    ]) {
      const res = await t.api('GET', path);
      expect(res.status, path).to.equal(422);
      expect(res.body.error.code).to.equal('validation_failed');
    }
  });

  it('format=text draws the same tree with phase marks, shared repeats and cut branches', async () => {
    const res = await t.api('GET', '/v1/program/task-r?format=text');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/plain/);
    const lines = res.text.split('\n');
    expect(lines[0]).to.equal('Program: task-r Launch (task, open)');
    expect(lines[1]).to.equal('Progress: 1/5 done (20%) · 1 active · 3 blocked · 0 open');
    expect(res.text).to.include('├── [!] task-a A (task, open)');
    expect(res.text).to.include('[!] task-c C (task, open) (shared)\n');
    expect(res.text).to.include('[!] task-c C (task, open) (shared: expanded under task-a)');
    expect(res.text).to.include('[>] task-e E (task, in-progress) (needed_by 2030-01-01)');
    expect(res.text).to.include('[x] task-d D (task, done)');
    const cut = await t.api('GET', '/v1/program/task-r?format=text&depth=1');
    expect(cut.text).to.include('… 2 more blocker(s) not shown (depth limit)');
    expect(cut.text).to.include('Truncated: 2 branch(es), 3 blocker link(s) not shown');
  });
});
