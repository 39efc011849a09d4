import { expect } from 'chai';
import { corePlugin } from '../../plugins/core/index.js';
import { addPerson, md, putNodes, startTestServer, type TestServer } from '../helpers/harness.js';

const reviewGate = `(input) => input.to !== 'done' || input.from === 'review'
  ? { allow: true }
  : { allow: false, reason: 'move to review first' }`;
const needsOwner = `(input) => input.node.owner ? { ok: true, errors: [] } : { ok: false, errors: ['issues need an owner field'] }`;

describe('graph-resident schema nodes: proposal, self-approval ban, activation, hooks, retire', () => {
  let t: TestServer;
  let reviewer: { id: string; token: string };
  before(async () => {
    t = await startTestServer({ plugins: [corePlugin] });
    reviewer = await addPerson(t, 'Reviewer');
  });
  after(async () => t.close());

  const schemaNode = (id: string, fm: Record<string, unknown>) =>
    md({ id, type: 'schema', status: 'active', summary: `schema ${id}`, ...fm }, 'Why this rule exists.\n');

  it('a schema node created through the server is forced to proposed and has no effect yet', async () => {
    const res = await t.api('POST', '/v1/nodes', {
      body: { nodes: [schemaNode('schema-task-review-gate', { applies_to: 'task', hooks: { transition: reviewGate } })] },
    });
    expect(res.status).to.equal(200);
    const node = await t.api('GET', '/v1/nodes/schema-task-review-gate');
    expect(node.body.frontmatter.status).to.equal('proposed');
    expect(node.body.frontmatter.hooks.transition).to.equal(reviewGate);
    await putNodes(t, [{ id: 'task-gate-1', type: 'task', summary: 'x' }]);
    expect((await t.api('POST', '/v1/nodes/task-gate-1/status', { body: { status: 'done' } })).status).to.equal(200);
  });

  it('the last author cannot activate their own proposal (self-approval ban)', async () => {
    const res = await t.api('POST', '/v1/nodes/schema-task-review-gate/status', { body: { status: 'active' } });
    expect(res.status).to.equal(409);
    expect(res.body.error.code).to.equal('transition_denied');
    expect(res.body.error.message).to.contain('self-approval');
    expect((await t.api('GET', '/v1/nodes/schema-task-review-gate')).body.frontmatter.status).to.equal('proposed');
  });

  it('another identity activates it; the registry merges it and its hook governs writes at once', async () => {
    const res = await t.api('POST', '/v1/nodes/schema-task-review-gate/status', { token: reviewer.token, body: { status: 'active' } });
    expect(res.status).to.equal(200);
    const schema = await t.api('GET', '/v1/schema?code=1');
    const task = schema.body.node_types.find((x: { type: string }) => x.type === 'task');
    expect(task.source).to.equal('graph');
    expect(task.schema_id).to.equal('schema-task-review-gate');
    expect(task.hooks).to.include('schema-task-review-gate:transition');
    expect(task.code['schema-task-review-gate:transition']).to.equal(reviewGate);

    await putNodes(t, [{ id: 'task-gate-2', type: 'task', summary: 'y' }]);
    const denied = await t.api('POST', '/v1/nodes/task-gate-2/status', { body: { status: 'done' } });
    expect(denied.status).to.equal(409);
    expect(denied.body.error).to.include({ code: 'transition_denied', message: 'move to review first' });
    expect(denied.body.error.details.hook).to.equal('schema-task-review-gate');
    expect((await t.api('POST', '/v1/nodes/task-gate-2/status', { body: { status: 'review' } })).status).to.equal(200);
    expect((await t.api('POST', '/v1/nodes/task-gate-2/status', { body: { status: 'done' } })).status).to.equal(200);
  });

  it('a validate hook rejects a node with 422 and the hook errors; nothing is committed', async () => {
    await t.api('POST', '/v1/nodes', {
      body: { nodes: [schemaNode('schema-issue-owner', { applies_to: ['issue'], hooks: { validate: needsOwner } })] },
    });
    expect(
      (await t.api('POST', '/v1/nodes/schema-issue-owner/status', { token: reviewer.token, body: { status: 'active' } })).status,
    ).to.equal(200);
    const head = (await t.api('GET', '/v1/status')).body.head;
    const res = await t.api('POST', '/v1/nodes', { body: { nodes: [md({ id: 'issue-no-owner', type: 'issue', summary: 'x' })] } });
    expect(res.status).to.equal(207);
    expect(res.body.results[0].error.code).to.equal('validation_failed');
    expect(res.body.results[0].error.details.errors).to.deep.equal([{ hook: 'schema-issue-owner', message: 'issues need an owner field' }]);
    expect((await t.api('GET', '/v1/status')).body.head).to.equal(head);
    const ok = await t.api('POST', '/v1/nodes', { body: { nodes: [md({ id: 'issue-owned', type: 'issue', summary: 'x', owner: 'me' })] } });
    expect(ok.status).to.equal(200);
  });

  it('retiring a schema node removes its effect', async () => {
    expect((await t.api('POST', '/v1/nodes/schema-issue-owner/status', { body: { status: 'retired' } })).status).to.equal(200);
    const ok = await t.api('POST', '/v1/nodes', { body: { nodes: [md({ id: 'issue-free', type: 'issue', summary: 'x' })] } });
    expect(ok.status).to.equal(200);
    const schema = await t.api('GET', '/v1/schema');
    const issue = schema.body.node_types.find((x: { type: string }) => x.type === 'issue');
    expect(issue.source).to.equal('seed');
  });

  it('status overrides, added edge types, stale overrides and alias collisions are reported', async () => {
    await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          schemaNode('schema-spec-states', {
            applies_to: ['spec', 'gizmo'],
            statuses: ['draft', 'active', 'retired', 'archived'],
            edge_types: [
              { type: 'implements', inverse_label: 'implemented-by', weight: 0.9 },
              { type: 'mirrors', inverse_label: 'blocked-by' },
            ],
          }),
        ],
      },
    });
    expect(
      (await t.api('POST', '/v1/nodes/schema-spec-states/status', { token: reviewer.token, body: { status: 'active' } })).status,
    ).to.equal(200);
    const schema = (await t.api('GET', '/v1/schema')).body;
    const spec = schema.node_types.find((x: { type: string }) => x.type === 'spec');
    expect(spec.statuses).to.deep.equal(['draft', 'active', 'retired', 'archived']);
    expect(spec.source).to.equal('graph');
    const implementsEdge = schema.edge_types.find((e: { type: string }) => e.type === 'implements');
    expect(implementsEdge).to.include({ source: 'graph', weight: 0.9, inverse_label: 'implemented-by' });
    expect(schema.stale_overrides).to.deep.include({ schema_id: 'schema-spec-states', reason: "applies to unknown type 'gizmo'" });
    expect(schema.stale_overrides.some((s: { reason: string }) => s.reason.includes('drops spec statuses review'))).to.equal(true);
    expect(schema.alias_collisions).to.deep.include({ alias: 'blocked-by', claimed_by: ['blocks', 'mirrors'] });
    // the new status and edge type are usable right away
    await putNodes(t, [{ id: 'spec-s', type: 'spec', summary: 's' }]);
    expect((await t.api('POST', '/v1/nodes/spec-s/status', { body: { status: 'archived' } })).status).to.equal(200);
    expect((await t.api('POST', '/v1/nodes/spec-s/edges', { body: { type: 'implemented-by', to: 'task-gate-1' } })).body.id).to.equal(
      'task-gate-1',
    );
  });

  it('the self-approval ban also holds for workflows (wf- nodes)', async () => {
    await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          md({
            id: 'wf-release',
            type: 'wf',
            status: 'active',
            summary: 'Release',
            steps: [{ id: 'build' }, { id: 'ship', needs: ['build'] }],
          }),
        ],
      },
    });
    expect((await t.api('GET', '/v1/nodes/wf-release')).body.frontmatter.status).to.equal('proposed');
    expect((await t.api('POST', '/v1/nodes/wf-release/status', { body: { status: 'active' } })).status).to.equal(409);
    expect((await t.api('POST', '/v1/nodes/wf-release/status', { token: reviewer.token, body: { status: 'active' } })).status).to.equal(
      200,
    );
    const bad = await t.api('POST', '/v1/nodes', {
      body: { nodes: [md({ id: 'wf-bad', type: 'wf', summary: 'Bad', steps: [{ id: 'a', needs: ['nope'] }] })] },
    });
    expect(bad.body.results[0].error.code).to.equal('validation_failed');
    expect(JSON.stringify(bad.body.results[0].error.details.errors)).to.contain("unknown step 'nope'");
  });
});

describe('graph-resident schema nodes: shape checks at write time', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ plugins: [corePlugin] });
  });
  after(async () => t.close());

  it('rejects a schema node without applies_to, with an unknown hook point, or with an oversized hook source', async () => {
    const res = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          md({ id: 'schema-no-target', type: 'schema', summary: 'x', hooks: { transition: '(i) => ({allow: true})' } }),
          md({ id: 'schema-bad-point', type: 'schema', summary: 'x', applies_to: 'task', hooks: { on_read: '(i) => 1' } }),
          md({
            id: 'schema-huge',
            type: 'schema',
            summary: 'x',
            applies_to: 'task',
            hooks: { validate: `(i) => ({ ok: true, errors: [] }) /* ${'x'.repeat(17000)} */` },
          }),
          md({
            id: 'schema-fine',
            type: 'schema',
            summary: 'x',
            applies_to: ['task', 'issue'],
            hooks: { validate: '(i) => ({ ok: true, errors: [] })' },
          }),
        ],
      },
    });
    expect(res.status).to.equal(207);
    const messages = res.body.results.map((r: { error?: { details: { errors: Array<{ message: string }> } } }) =>
      r.error?.details.errors.map((e) => e.message).join('; '),
    );
    expect(messages[0]).to.contain('applies_to is required');
    expect(messages[1]).to.contain('unknown hook point');
    expect(messages[2]).to.contain('at most 16384');
    expect(res.body.results[3].status).to.equal('created');
  });
});

describe('self-approval types: an approved node that changes needs approval again', () => {
  let t: TestServer;
  let reviewer: { id: string; token: string };
  before(async () => {
    t = await startTestServer({ plugins: [corePlugin] });
    reviewer = await addPerson(t, 'Reviewer');
  });
  after(async () => t.close());

  it('editing an active schema node demotes it to proposed and its hook stops applying until re-activated', async () => {
    await putNodes(t, [{ id: 'task-z', type: 'task', summary: 'z' }]);
    await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          md({
            id: 'schema-gate',
            type: 'schema',
            summary: 'gate',
            applies_to: 'task',
            hooks: { transition: "(i) => ({ allow: i.to !== 'cancelled', reason: 'no cancelling' })" },
          }),
        ],
      },
    });
    expect((await t.api('POST', '/v1/nodes/schema-gate/status', { token: reviewer.token, body: { status: 'active' } })).status).to.equal(
      200,
    );
    expect((await t.api('POST', '/v1/nodes/task-z/status', { body: { status: 'cancelled' } })).status).to.equal(409);

    // the reviewer (who activated it) rewrites the hook: it must not take effect unreviewed
    const read = await t.api('GET', '/v1/nodes/schema-gate');
    const rewritten = read.body.markdown.replace("i.to !== 'cancelled'", "i.to !== 'blocked'");
    const put = await t.api('POST', '/v1/nodes', {
      token: reviewer.token,
      body: { nodes: [{ node: rewritten, if_exists: 'update', revision: read.body.revision }] },
    });
    expect(put.status).to.equal(200);
    expect(put.body.results[0].warnings.join(' ')).to.contain('proposed again');
    expect((await t.api('GET', '/v1/nodes/schema-gate')).body.frontmatter.status).to.equal('proposed');
    // neither the old nor the new hook applies now
    expect((await t.api('POST', '/v1/nodes/task-z/status', { body: { status: 'blocked' } })).status).to.equal(200);
    // the last author (reviewer) cannot re-activate it; the admin can
    expect((await t.api('POST', '/v1/nodes/schema-gate/status', { token: reviewer.token, body: { status: 'active' } })).status).to.equal(
      409,
    );
    expect((await t.api('POST', '/v1/nodes/schema-gate/status', { body: { status: 'active' } })).status).to.equal(200);
    expect((await t.api('POST', '/v1/nodes/task-z/status', { body: { status: 'open' } })).status).to.equal(200);
    expect((await t.api('POST', '/v1/nodes/task-z/status', { body: { status: 'blocked' } })).status).to.equal(409);
  });

  it('a change that only moves status or touches nothing keeps it active', async () => {
    const read = await t.api('GET', '/v1/nodes/schema-gate');
    const same = await t.api('POST', '/v1/nodes', {
      body: { nodes: [{ node: read.body.markdown, if_exists: 'update', revision: read.body.revision }] },
    });
    expect(same.body.results[0].status).to.equal('skipped');
    expect((await t.api('GET', '/v1/nodes/schema-gate')).body.frontmatter.status).to.equal('active');
  });
});
