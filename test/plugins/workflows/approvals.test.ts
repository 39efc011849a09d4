/**
 * docs/spec.md "Workflow runs" rule 2 and docs/design.md §5: approval steps never appear in GET /v1/work;
 * they appear in the human decision queue (GET /v1/queue) with `suggest: approve` and are
 * completed by a person (agent tokens get 403).
 */
import { expect } from 'chai';
import { leasesPlugin } from '../../../plugins/leases/index.js';
import { queuePlugin } from '../../../plugins/queue/index.js';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { agentToken, claim, claimed, complete, defineWorkflow, runNode, started, startWorkflowServer, work, workKeys } from './helpers.js';

interface Item {
  id: string;
  type: string;
  status: string;
  suggest: string;
  why: string;
  readiness?: string;
  readiness_reasons?: string[];
}

describe('workflows: approval steps in the decision queue', function () {
  let t: TestServer;
  let bob: { id: string; token: string };
  let run: string;

  const queueItems = async (token?: string, query = ''): Promise<Item[]> => {
    const res = await t.api('GET', `/v1/queue${query}`, { token });
    expect(res.status, res.text).to.equal(200);
    return res.body.items as Item[];
  };

  before(async () => {
    t = await startWorkflowServer([leasesPlugin, queuePlugin]);
    bob = await addPerson(t, 'Bob');
    await defineWorkflow(
      t,
      'wf-release',
      [
        { id: 'build' },
        { id: 'approve-release', title: 'Approve the release', needs: ['build'], approval: true },
        { id: 'publish', needs: ['approve-release'] },
      ],
      bob.token,
    );
    run = await started(t, 'wf-release');
  });
  after(async () => {
    await t.close();
  });

  it('a pending approval step is not in the queue yet', async () => {
    expect((await queueItems()).map((i) => i.id)).to.not.include(run);
  });

  it('once ready, the run is an approve item of the queue and not in GET /v1/work', async () => {
    const lease = await claimed(t, run, 'build', bob.token);
    expect((await complete(t, run, 'build', { lease, status: 'succeeded' }, bob.token)).status).to.equal(200);
    expect(workKeys(await work(t))).to.deep.equal([]);
    const item = (await queueItems(bob.token)).find((i) => i.id === run);
    expect(item, 'run in the queue').to.not.equal(undefined);
    expect(item).to.include({ type: 'run', status: 'running', suggest: 'approve', readiness: 'human' });
    expect(item!.why).to.include("Approval step 'approve-release' (Approve the release) of wf-release waits for a person");
    expect(item!.why).to.include(`/v1/runs/${run}/steps/approve-release/claim`);
    expect(item!.readiness_reasons).to.deep.equal([
      "approval step 'approve-release' (Approve the release) of wf-release waits for a person",
    ]);
    const filtered = await t.api('GET', '/v1/queue?type=run&readiness=human');
    expect(filtered.body.items.map((i: Item) => i.id)).to.deep.equal([run]);
    expect(filtered.body.counts_by_suggest.approve).to.equal(1);
  });

  it('an agent cannot claim or decide an approval step (403); a person can', async () => {
    const agent = await agentToken(t, bob.id, 'agent-bob-bot');
    const byAgent = await claim(t, run, 'approve-release', agent);
    expect(byAgent.status).to.equal(403);
    expect(byAgent.body.error.code).to.equal('forbidden');
    const lease = await claimed(t, run, 'approve-release', bob.token);
    const agentVerdict = await complete(t, run, 'approve-release', { lease, status: 'succeeded' }, agent);
    expect(agentVerdict.status).to.equal(403);
    // claimed by a person, it still waits for that person's verdict
    expect((await queueItems()).map((i) => i.id)).to.include(run);
    const ok = await complete(t, run, 'approve-release', { lease, status: 'succeeded', result: { approved_by: bob.id } }, bob.token);
    expect(ok.status, ok.text).to.equal(200);
    expect((await runNode(t, run)).frontmatter.state.steps['approve-release'].state).to.equal('succeeded');
    expect((await queueItems()).map((i) => i.id)).to.not.include(run);
    expect(workKeys(await work(t))).to.deep.equal([`${run}/publish`]);
  });

  it('a rejection (failed) fails the run and clears the queue item', async () => {
    const other = await started(t, 'wf-release');
    const lease = await claimed(t, other, 'build', bob.token);
    await complete(t, other, 'build', { lease, status: 'succeeded' }, bob.token);
    expect((await queueItems()).map((i) => i.id)).to.include(other);
    const decision = await claimed(t, other, 'approve-release', t.adminToken);
    const rejected = await complete(t, other, 'approve-release', { lease: decision, status: 'failed', log: 'not this week' }, t.adminToken);
    expect(rejected.body).to.include({ step_state: 'failed', run_status: 'failed' });
    expect((await queueItems()).map((i) => i.id)).to.not.include(other);
  });
});
