/**
 * POST /v1/schema/dry-run and the dry_run_schema tool (issue 25 item 5): a schema's hooks run
 * in the sandbox against chosen nodes under the tenant's limits, with verdicts, CPU time and
 * heap, and nothing is written: not the schema, not the nodes, no commit.
 */
import { expect } from 'chai';
import { corePlugin } from '../../../plugins/core/index.js';
import { md, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';

const reviewGate = `(input) => input.to !== 'done' || input.from === 'review'
  ? { allow: true }
  : { allow: false, reason: 'move to review first' }`;
const needsOwner = `(input) => input.node.owner ? { ok: true, errors: [] } : { ok: false, errors: ['tasks need an owner field'] }`;
const loops = `(input) => { for (;;) {} }`;

const schemaMd = (id: string, hooks: Record<string, string>, appliesTo: string | string[] = 'task') =>
  md({ id, type: 'schema', status: 'proposed', summary: `schema ${id}`, applies_to: appliesTo, hooks }, 'Why.\n');

describe('schema dry run: POST /v1/schema/dry-run and dry_run_schema', function () {
  this.timeout(60_000);
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ plugins: [corePlugin] });
    await putNodes(t, [
      { id: 'task-dry-open', type: 'task', summary: 'An open task' },
      { id: 'task-dry-owned', type: 'task', summary: 'A task with an owner', owner: 'ada', status: 'review' },
      { id: 'issue-dry-other', type: 'issue', summary: 'An issue the schema does not apply to' },
    ]);
    await putNodes(t, [schemaMd('schema-dry-gate', { transition: reviewGate, validate: needsOwner })]);
  });
  after(async () => t.close());

  const head = async () => (await t.api('GET', '/v1/status')).body.head as string;
  const nodeRev = async (id: string) => (await t.api('GET', `/v1/nodes/${id}`)).body.revision as string;

  it('runs a proposed schema node: transition verdicts per legal move, validate verdicts, CPU and heap measured', async () => {
    const before = { status: await head(), open: await nodeRev('task-dry-open'), schema: await nodeRev('schema-dry-gate') };
    const res = await t.api('POST', '/v1/schema/dry-run', {
      body: { schema_id: 'schema-dry-gate', node_ids: ['task-dry-open', 'task-dry-owned', 'issue-dry-other'] },
    });
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.include({ schema_id: 'schema-dry-gate', written: false });
    expect(res.body.applies_to).to.deep.equal(['task']);
    expect(res.body.hooks).to.have.members(['transition', 'validate']);
    expect(res.body.limits).to.deep.equal({ timeout_ms: 50, memory_mb: 16 });
    const [open, owned, other] = res.body.results;
    // open -> every move the live schema allows from open; only done is refused
    const moves = open.runs.filter((r: { hook: string }) => r.hook === 'transition');
    expect(moves.map((r: { to: string }) => r.to)).to.include.members(['in-progress', 'done']);
    const done = moves.find((r: { to: string }) => r.to === 'done');
    expect(done).to.include({ verdict: 'deny', reason: 'move to review first', failure: null });
    expect(moves.find((r: { to: string }) => r.to === 'in-progress')).to.include({ verdict: 'allow' });
    expect(open.runs.find((r: { hook: string }) => r.hook === 'validate')).to.include({
      verdict: 'invalid',
      reason: 'tasks need an owner field',
    });
    // review -> done is allowed, and the owner field passes validation
    expect(owned.runs.find((r: { to: string | null }) => r.to === 'done')).to.include({ verdict: 'allow' });
    expect(owned.runs.find((r: { hook: string }) => r.hook === 'validate')).to.include({ verdict: 'valid' });
    for (const r of [...open.runs, ...owned.runs]) {
      expect(r.cpu_ms).to.be.a('number').and.at.least(0);
      expect(r.heap_used_bytes).to.be.a('number').and.above(0);
      expect(r.wall_ms).to.be.a('number');
    }
    expect(other).to.deep.include({ node_id: 'issue-dry-other', type: 'issue', applies: false, runs: [] });
    // nothing written
    expect(await head()).to.deep.equal(before.status);
    expect(await nodeRev('task-dry-open')).to.equal(before.open);
    expect(await nodeRev('schema-dry-gate')).to.equal(before.schema);
  });

  it('a hook that loops hits the CPU limit and is reported as a timeout; nothing is written and the server goes on', async () => {
    const before = await head();
    const res = await t.api('POST', '/v1/schema/dry-run', {
      body: { markdown: schemaMd('schema-dry-loop', { transition: loops }), node_ids: ['task-dry-open'], to: 'done' },
    });
    expect(res.status, res.text).to.equal(200);
    const [run] = res.body.results[0].runs;
    expect(run).to.include({ hook: 'transition', to: 'done', verdict: 'failed', failure: 'timeout' });
    expect(run.reason).to.match(/time limit/);
    expect(run.cpu_ms).to.be.at.least(50);
    expect(await head()).to.deep.equal(before);
    expect((await t.api('GET', '/v1/nodes/schema-dry-loop')).status).to.equal(404);
    // the sandbox still answers the next call
    const next = await t.api('POST', '/v1/schema/dry-run', {
      body: { schema_id: 'schema-dry-gate', node_ids: ['task-dry-owned'], to: 'done' },
    });
    expect(next.body.results[0].runs[0]).to.include({ verdict: 'allow' });
  });

  it('a hook that does not compile or throws is reported with its kind', async () => {
    const res = await t.api('POST', '/v1/schema/dry-run', {
      body: {
        markdown: schemaMd('schema-dry-bad', { transition: '(input) => {', validate: "(input) => { throw new Error('boom') }" }),
        node_ids: ['task-dry-open'],
        to: 'done',
      },
    });
    expect(res.status, res.text).to.equal(200);
    const runs = res.body.results[0].runs;
    expect(runs.find((r: { hook: string }) => r.hook === 'transition')).to.include({ verdict: 'failed', failure: 'compile' });
    expect(runs.find((r: { hook: string }) => r.hook === 'validate').reason).to.match(/^threw: .*boom/);
  });

  it('bad input gets the error envelope and runs nothing', async () => {
    const cases: Array<[unknown, number, string]> = [
      [{ node_ids: ['task-dry-open'] }, 422, 'validation_failed'],
      [{ schema_id: 'schema-dry-gate', markdown: schemaMd('schema-x', {}), node_ids: ['task-dry-open'] }, 422, 'validation_failed'],
      [{ schema_id: 'schema-dry-gate', node_ids: [] }, 422, 'validation_failed'],
      [{ schema_id: 'schema-dry-gate', node_ids: Array.from({ length: 11 }, (_, i) => `task-${i}`) }, 422, 'validation_failed'],
      [{ schema_id: 'schema-nowhere', node_ids: ['task-dry-open'] }, 404, 'not_found'],
      [{ schema_id: 'schema-dry-gate', node_ids: ['task-nowhere'] }, 404, 'not_found'],
      [{ schema_id: 'task-dry-open', node_ids: ['task-dry-open'] }, 422, 'validation_failed'],
      [{ markdown: 'not markdown with frontmatter', node_ids: ['task-dry-open'] }, 422, 'validation_failed'],
      [{ markdown: md({ id: 'schema-noapply', type: 'schema', summary: 'x' }), node_ids: ['task-dry-open'] }, 422, 'validation_failed'],
    ];
    for (const [body, status, code] of cases) {
      const res = await t.api('POST', '/v1/schema/dry-run', { body });
      expect(res.status, JSON.stringify(body)).to.equal(status);
      expect(res.body.error.code, JSON.stringify(body)).to.equal(code);
    }
  });

  it('the MCP tool answers the same verdicts', async () => {
    const client = await t.mcp();
    try {
      const r = await t.tool(client, 'dry_run_schema', { schema_id: 'schema-dry-gate', node_ids: ['task-dry-open'], to: 'done' });
      expect(r.isError, r.text).to.equal(false);
      expect(r.json.written).to.equal(false);
      expect(r.json.results[0].runs.find((x: { hook: string }) => x.hook === 'transition')).to.include({
        verdict: 'deny',
        reason: 'move to review first',
      });
      const bad = await t.tool(client, 'dry_run_schema', { schema_id: 'schema-nowhere', node_ids: ['task-dry-open'] });
      expect(bad.isError).to.equal(true);
      expect(bad.json.error.code).to.equal('not_found');
    } finally {
      await client.close();
    }
  });
});
