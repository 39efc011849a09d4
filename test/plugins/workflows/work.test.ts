/**
 * docs/spec.md "Workflow runs" rule 2: GET /v1/work lists claimable steps of running runs, excludes
 * approval steps, and filters by `capability=a,b` (a step's capability, when it has one, must
 * be in the list).
 */
import { expect } from 'chai';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { claimed, complete, defineWorkflow, started, startWorkflowServer, TTL, work, workKeys } from './helpers.js';

describe('workflows: GET /v1/work', function () {
  let t: TestServer;
  let bob: { id: string; token: string };
  let r1: string;
  let r2: string;

  before(async () => {
    t = await startWorkflowServer();
    bob = await addPerson(t, 'Bob');
    await defineWorkflow(
      t,
      'wf-ci',
      [
        { id: 'lint', capability: 'node' },
        { id: 'unit', capability: 'python' },
        { id: 'docs' },
        { id: 'gate', approval: true },
        { id: 'ship', needs: ['lint', 'unit', 'docs', 'gate'], capability: 'deploy' },
      ],
      bob.token,
    );
    r1 = await started(t, 'wf-ci');
    t.clock.advance(1000);
    r2 = await started(t, 'wf-ci');
  });
  after(async () => {
    await t.close();
  });

  it('lists ready steps, oldest run first in step order; approval and pending steps never appear', async () => {
    const res = await work(t, '', bob.token);
    expect(Object.keys(res.body)).to.include.members(['work', 'count', 'generated_at']);
    expect(workKeys(res)).to.deep.equal([`${r1}/lint`, `${r1}/unit`, `${r1}/docs`, `${r2}/lint`, `${r2}/unit`, `${r2}/docs`]);
    expect(res.body.count).to.equal(6);
    expect(res.body.generated_at).to.equal(new Date(Date.parse(res.body.generated_at)).toISOString());
    expect(res.body.work[0]).to.deep.equal({
      run_id: r1,
      step: 'lint',
      title: 'lint',
      run_title: 'Workflow wf-ci #1',
      workflow: 'wf-ci',
      workflow_version: (await t.api('GET', '/v1/nodes/wf-ci')).body.revision,
      project: null,
      capability: 'node',
      needs: [],
      generation: 0,
      attempts: 0,
      max_attempts: 1,
      iteration: null,
      lapsed: false,
    });
  });

  it('capability=a,b keeps steps whose capability is listed, and steps that need none', async () => {
    expect(workKeys(await work(t, '?capability=node'))).to.deep.equal([`${r1}/lint`, `${r1}/docs`, `${r2}/lint`, `${r2}/docs`]);
    expect(workKeys(await work(t, '?capability=node,python'))).to.deep.equal([
      `${r1}/lint`,
      `${r1}/unit`,
      `${r1}/docs`,
      `${r2}/lint`,
      `${r2}/unit`,
      `${r2}/docs`,
    ]);
    expect(workKeys(await work(t, '?capability=python&capability=rust'))).to.deep.equal([
      `${r1}/unit`,
      `${r1}/docs`,
      `${r2}/unit`,
      `${r2}/docs`,
    ]);
    expect(workKeys(await work(t, '?capability=rust'))).to.deep.equal([`${r1}/docs`, `${r2}/docs`]);
    const bad = await work(t, '?capability=Not_A_Slug');
    expect(bad.status).to.equal(422);
    expect(bad.body.error.code).to.equal('validation_failed');
  });

  it('claimed steps leave the list until their lease lapses; finished runs drop out', async () => {
    const lease = await claimed(t, r1, 'lint', bob.token);
    expect(workKeys(await work(t))).to.not.include(`${r1}/lint`);
    t.clock.advance(TTL + 1);
    const lapsed = (await work(t)).body.work.find((w: { run_id: string; step: string }) => w.run_id === r1 && w.step === 'lint');
    expect(lapsed).to.include({ lapsed: true, generation: 1 });
    const fresh = await claimed(t, r1, 'lint', bob.token);
    expect(fresh).to.not.equal(lease);
    expect((await complete(t, r1, 'lint', { lease: fresh, status: 'failed' }, bob.token)).body.run_status).to.equal('failed');
    expect(workKeys(await work(t)).some((k) => k.startsWith(`${r1}/`))).to.equal(false);
    expect(workKeys(await work(t))).to.deep.equal([`${r2}/lint`, `${r2}/unit`, `${r2}/docs`]);
  });

  it('limit pages the list (default 100, clamped 1-500) and says when it was truncated', async () => {
    const one = await work(t, '?limit=1');
    expect(one.body.count).to.equal(1);
    expect(one.body.truncated).to.equal(true);
    expect(one.body.total_count).to.equal(3);
    expect((await work(t, '?limit=0')).body.count).to.equal(1);
    expect((await work(t, '?limit=x')).status).to.equal(422);
    expect((await work(t)).body.truncated).to.equal(false);
  });

  it('a run cancelled through the status route offers nothing more', async () => {
    await t.api('POST', `/v1/runs/${r2}/steps/unit/claim`, { token: bob.token, body: {} });
    const leases = t.server.services.tenants.get(t.org)!.state.collection('workflow-leases');
    expect(leases.has(`${r2}/unit`)).to.equal(true);
    const cancel = await t.api('POST', `/v1/nodes/${r2}/status`, { body: { status: 'cancelled' } });
    expect(cancel.status, cancel.text).to.equal(200);
    expect(workKeys(await work(t))).to.deep.equal([]);
    const res = await t.api('POST', `/v1/runs/${r2}/steps/lint/claim`, { token: bob.token, body: {} });
    expect(res.status).to.equal(409);
    expect(res.body.error.details).to.include({ reason: 'run_finished', run_status: 'cancelled' });
    expect(leases.has(`${r2}/unit`), 'lease records of a cancelled run are dropped').to.equal(false);
  });
});
