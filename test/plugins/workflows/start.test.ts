/**
 * docs/spec.md "Workflow runs" rule 1 (starting a run records a node with lineage and executes
 * nothing), "States and transitions" (a proposed workflow must be activated by another
 * identity before a run can start), the run record of GET /v1/runs/{id}, and bad input.
 */
import { expect } from 'chai';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { defineWorkflow, getRun, nodeCount, runNode, startRun, startWorkflowServer, unboundToken } from './helpers.js';

describe('workflows: starting a run', function () {
  let t: TestServer;
  let bob: { id: string; token: string };

  before(async () => {
    t = await startWorkflowServer();
    bob = await addPerson(t, 'Bob');
    await defineWorkflow(
      t,
      'wf-deploy',
      [
        { id: 'build', title: 'Build it', capability: 'node' },
        { id: 'test', needs: ['build'], max_attempts: 3 },
        { id: 'sign-off', needs: ['test'], approval: true },
      ],
      bob.token,
      { project: 'proj-root' },
    );
  });
  after(async () => {
    await t.close();
  });

  it('a proposed workflow cannot start a run: 409 conflict (workflow_not_active), nothing written', async () => {
    await defineWorkflow(t, 'wf-draft', [{ id: 'only' }]);
    const before = await nodeCount(t);
    const res = await startRun(t, 'wf-draft', {});
    expect(res.status, res.text).to.equal(409);
    expect(res.body.error.code).to.equal('conflict');
    expect(res.body.error.details).to.deep.equal({
      workflow: 'wf-draft',
      status: 'proposed',
      required_status: 'active',
      reason: 'workflow_not_active',
    });
    expect(res.body.error.message).to.include('other than its last author must activate it');
    expect(await nodeCount(t)).to.equal(before);
  });

  it('its author cannot activate it (self-approval ban); another identity can, and then a run starts', async () => {
    const self = await t.api('POST', '/v1/nodes/wf-draft/status', { body: { status: 'active' } });
    expect(self.status).to.equal(409);
    expect(self.body.error.code).to.equal('transition_denied');
    expect((await startRun(t, 'wf-draft')).status).to.equal(409);
    const other = await t.api('POST', '/v1/nodes/wf-draft/status', { token: bob.token, body: { status: 'active' } });
    expect(other.status, other.text).to.equal(200);
    const res = await startRun(t, 'wf-draft');
    expect(res.status, res.text).to.equal(201);
  });

  it('starting records one run- node with lineage and initial step states, and executes nothing', async () => {
    const before = await nodeCount(t);
    const wf = await t.api('GET', '/v1/nodes/wf-deploy');
    const res = await startRun(t, 'wf-deploy', { inputs: { version: '1.2.3', dry_run: false } });
    expect(res.status, res.text).to.equal(201);
    expect(Object.keys(res.body)).to.deep.equal(['run_id', 'revision', 'workflow', 'workflow_version', 'state']);
    expect(res.body.run_id).to.equal('run-deploy-1');
    expect(res.body.workflow).to.equal('wf-deploy');
    expect(res.body.workflow_version).to.equal(wf.body.revision);
    expect(await nodeCount(t)).to.equal(before + 1);

    const node = await runNode(t, 'run-deploy-1');
    expect(res.body.revision).to.equal(node.revision);
    expect(node.status).to.equal('running');
    expect(node.frontmatter.type).to.equal('run');
    expect(node.frontmatter.project).to.equal('proj-root');
    expect(node.frontmatter.author).to.equal(t.adminPerson);
    expect(node.frontmatter.lineage).to.deep.equal({
      workflow: 'wf-deploy',
      workflow_version: wf.body.revision,
      initiator: t.adminPerson,
      inputs: { version: '1.2.3', dry_run: false },
    });
    expect(node.frontmatter.edges).to.deep.equal([{ type: 'relates-to', to: 'wf-deploy', kind: 'run-of' }]);
    const steps = node.frontmatter.state.steps;
    expect(node.frontmatter.state.order).to.deep.equal(['build', 'test', 'sign-off']);
    expect(steps.build).to.deep.equal({
      title: 'Build it',
      needs: [],
      capability: 'node',
      max_attempts: 1,
      state: 'ready',
      generation: 0,
      attempts: 0,
      verdicts: [],
    });
    expect(steps.test).to.include({ state: 'pending', max_attempts: 3, generation: 0, attempts: 0 });
    expect(steps['sign-off']).to.include({ state: 'pending', approval: true });
    // the answer's state is the committed state (nothing claimed, nothing run)
    expect(res.body.state).to.deep.equal(node.frontmatter.state);
    // the workflow itself is untouched
    expect((await t.api('GET', '/v1/nodes/wf-deploy')).body.revision).to.equal(wf.body.revision);
  });

  it('GET /v1/runs/{id} answers the run record', async () => {
    const node = await runNode(t, 'run-deploy-1');
    const run = await getRun(t, 'run-deploy-1', bob.token);
    expect(Object.keys(run)).to.deep.equal([
      'run_id',
      'status',
      'project',
      'title',
      'initiator',
      'workflow',
      'workflow_version',
      'lineage',
      'state',
      'revision',
      'timestamps',
    ]);
    expect(run).to.include({
      run_id: 'run-deploy-1',
      status: 'running',
      project: 'proj-root',
      title: 'Workflow wf-deploy #1',
      initiator: t.adminPerson,
      workflow: 'wf-deploy',
      revision: node.revision,
    });
    expect(run.workflow_version).to.equal(node.frontmatter.lineage.workflow_version);
    expect(run.lineage).to.deep.equal(node.frontmatter.lineage);
    expect(run.state).to.deep.equal(node.frontmatter.state);
    expect(run.timestamps).to.deep.equal({ created: node.frontmatter.created, updated: node.frontmatter.updated });
  });

  it('run ids count up per workflow; a run pins the workflow revision it started from', async () => {
    const old = (await runNode(t, 'run-deploy-1')).frontmatter.lineage.workflow_version;
    const edit = await t.api('POST', '/v1/nodes', {
      token: bob.token,
      body: {
        nodes: [
          {
            node: {
              id: 'wf-deploy',
              type: 'wf',
              title: 'Workflow wf-deploy',
              summary: 'workflow wf-deploy, one step',
              project: 'proj-root',
              steps: [{ id: 'build' }],
            },
            if_exists: 'update',
            revision: old,
          },
        ],
      },
    });
    expect(edit.status, edit.text).to.equal(200);
    // an edited workflow needs approval again before it runs, from someone other than its editor
    expect(edit.body.results[0].warnings.join(' ')).to.contain('proposed again');
    expect((await startRun(t, 'wf-deploy', {}, bob.token)).status).to.equal(409);
    expect((await t.api('POST', '/v1/nodes/wf-deploy/status', { token: bob.token, body: { status: 'active' } })).status).to.equal(409);
    expect((await t.api('POST', '/v1/nodes/wf-deploy/status', { body: { status: 'active' } })).status).to.equal(200);
    const second = await startRun(t, 'wf-deploy', {}, bob.token);
    expect(second.status, second.text).to.equal(201);
    expect(second.body.run_id).to.equal('run-deploy-2');
    expect(second.body.workflow_version).to.not.equal(old);
    expect(second.body.state.order).to.deep.equal(['build']);
    const first = await getRun(t, 'run-deploy-1');
    expect(first.workflow_version).to.equal(old);
    expect(first.state.order).to.deep.equal(['build', 'test', 'sign-off']);
    expect((await getRun(t, 'run-deploy-2')).initiator).to.equal(bob.id);
  });

  it('an idempotency key returns the first answer; reused for a different request it is 409', async () => {
    const a = await startRun(t, 'wf-draft', { idempotency_key: 'k-1', inputs: { n: 1 } });
    expect(a.status, a.text).to.equal(201);
    const before = await nodeCount(t);
    const again = await startRun(t, 'wf-draft', { idempotency_key: 'k-1', inputs: { n: 1 } });
    expect(again.status).to.equal(201);
    expect(again.text).to.equal(a.text);
    const header = await t.api('POST', '/v1/workflows/wf-draft/run', { body: { inputs: { n: 1 } }, headers: { 'idempotency-key': 'k-1' } });
    expect(header.text).to.equal(a.text);
    expect(await nodeCount(t)).to.equal(before);
    const other = await startRun(t, 'wf-draft', { idempotency_key: 'k-1', inputs: { n: 2 } });
    expect(other.status).to.equal(409);
    expect(other.body.error.details).to.include({ idempotency_key: 'k-1', run_id: a.body.run_id });
    // keys are per person: Bob's k-1 is another key
    const bobs = await startRun(t, 'wf-draft', { idempotency_key: 'k-1', inputs: { n: 2 } }, bob.token);
    expect(bobs.status).to.equal(201);
    expect(bobs.body.run_id).to.not.equal(a.body.run_id);
    // a day later the key is forgotten
    t.clock.advance(24 * 60 * 60 * 1000 + 1);
    const later = await startRun(t, 'wf-draft', { idempotency_key: 'k-1', inputs: { n: 1 } });
    expect(later.status).to.equal(201);
    expect(later.body.run_id).to.not.equal(a.body.run_id);
  });

  it('unknown workflow 404, malformed id 422, a node of another type 422, retired 409, unbound token 403', async () => {
    const unknown = await startRun(t, 'wf-nope');
    expect(unknown.status).to.equal(404);
    expect(unknown.body.error.code).to.equal('not_found');
    expect((await startRun(t, 'Bad_Id')).status).to.equal(422);
    const notWf = await startRun(t, 'proj-root');
    expect(notWf.status).to.equal(422);
    expect(notWf.body.error.message).to.include('not a workflow');
    await defineWorkflow(t, 'wf-old', [{ id: 'a' }], bob.token);
    expect((await t.api('POST', '/v1/nodes/wf-old/status', { body: { status: 'retired' } })).status).to.equal(200);
    const retired = await startRun(t, 'wf-old');
    expect(retired.status).to.equal(409);
    expect(retired.body.error.details.status).to.equal('retired');
    const unbound = await startRun(t, 'wf-deploy', {}, await unboundToken(t));
    expect(unbound.status).to.equal(403);
  });

  it('bad inputs and bad step definitions are 422 and write nothing', async () => {
    const before = await nodeCount(t);
    for (const body of [{ inputs: [1, 2] }, { inputs: 'x' }, { inputs: { blob: 'x'.repeat(9000) } }, { idempotency_key: 'has space' }]) {
      const res = await startRun(t, 'wf-deploy', body);
      expect(res.status, JSON.stringify(body)).to.equal(422);
      expect(res.body.error.code).to.equal('validation_failed');
    }
    expect(
      (await t.api('POST', '/v1/workflows/wf-deploy/run', { rawBody: '[1]', headers: { 'content-type': 'application/json' } })).status,
    ).to.equal(422);
    // needs that form a cycle pass the seed validator but cannot run
    await defineWorkflow(
      t,
      'wf-loop',
      [
        { id: 'a', needs: ['b'] },
        { id: 'b', needs: ['a'] },
      ],
      bob.token,
    );
    await defineWorkflow(t, 'wf-bad-fields', [{ id: 'a', max_attempts: 0, approval: 'yes', capability: 'Not A Slug' }], bob.token);
    const afterDefs = await nodeCount(t);
    expect(afterDefs).to.equal(before + 2);
    const loop = await startRun(t, 'wf-loop');
    expect(loop.status).to.equal(422);
    expect(JSON.stringify(loop.body.error.details.errors)).to.include('cycle');
    const bad = await startRun(t, 'wf-bad-fields');
    expect(bad.status).to.equal(422);
    expect(bad.body.error.details.errors.map((e: { field: string }) => e.field)).to.have.members([
      'steps[0].max_attempts',
      'steps[0].approval',
      'steps[0].capability',
    ]);
    expect(await nodeCount(t)).to.equal(afterDefs);
  });

  it('GET /v1/runs: unknown 404, malformed 422, a node that is not a run 404', async () => {
    expect((await t.api('GET', '/v1/runs/run-nope')).status).to.equal(404);
    expect((await t.api('GET', '/v1/runs/Nope!')).status).to.equal(422);
    const notRun = await t.api('GET', '/v1/runs/wf-deploy');
    expect(notRun.status).to.equal(404);
    expect(notRun.body.error.code).to.equal('not_found');
  });
});
