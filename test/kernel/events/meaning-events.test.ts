/**
 * Events that say what a commit means (kernel/events/derive.ts): a question routed and
 * answered, a proposal waiting for approval, workflow steps ready and finished; derived from
 * the commit like every graph event, through the real server.
 */
import { expect } from 'chai';
import { corePlugin } from '../../../plugins/core/index.js';
import { leasesPlugin } from '../../../plugins/leases/index.js';
import { queuePlugin } from '../../../plugins/queue/index.js';
import { questionsPlugin } from '../../../plugins/questions/index.js';
import { workflowsPlugin } from '../../../plugins/workflows/index.js';
import { addPerson, startTestServer, type TestServer } from '../../helpers/harness.js';
import { asked, put, steward } from '../../plugins/questions/helpers.js';
import { claimed, complete, defineWorkflow, started } from '../../plugins/workflows/helpers.js';

describe('events: questions, proposals, workflow steps', function () {
  this.timeout(60_000);
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };
  const log = () => t.server.services.tenants.get(t.org)!.events;

  before(async () => {
    t = await startTestServer({ plugins: [corePlugin, leasesPlugin, queuePlugin, questionsPlugin, workflowsPlugin] });
    alice = await addPerson(t, 'Alice');
    bob = await addPerson(t, 'Bob');
  });
  after(async () => t?.close());

  it('a routed question is question.routed naming the steward; its answer is question.answered naming the asker', async () => {
    await put(t, [{ id: 'task-q1', type: 'task', summary: 'release one', project: 'web' }]);
    await steward(t, bob.id, 'task-q1');
    const start = log().lastId;
    const q = await asked(t, alice.token, { text: 'How do we deploy q1?', mentions: ['task-q1'] });
    const routed = await log().read(start, { types: ['question.*'] });
    expect(routed.map((e) => e.type)).to.deep.equal(['question.routed']);
    expect(routed[0]!.nodes).to.deep.equal([q.id, bob.id]);
    expect(routed[0]!.project).to.equal('web');
    expect(routed[0]!.payload).to.include({ question: q.id, routed_to: bob.id, asker: alice.id, routed_via: 'task-q1' });
    expect(routed[0]!.actor).to.deep.include({ person: alice.id, via: 'rest' });

    const mid = log().lastId;
    const res = await t.api('POST', `/v1/questions/${q.id}/answer`, { token: bob.token, body: { summary: 'with the pipeline' } });
    expect(res.status, res.text).to.be.oneOf([200, 201]);
    const answered = await log().read(mid, { types: ['question.*'] });
    expect(answered.map((e) => e.type)).to.deep.equal(['question.answered']);
    expect(answered[0]!.payload).to.include({ question: q.id, answer: res.body.id, asker: alice.id, routed_to: bob.id });
    expect(answered[0]!.nodes).to.deep.equal([q.id, res.body.id]);
    // the question's own status change is there too
    const status = await log().read(mid, { types: ['node.status_changed'], node: q.id });
    expect(status.map((e) => e.payload.to)).to.deep.equal(['answered']);
  });

  it('a proposed workflow is proposal.pending; a run makes its first steps ready and each verdict finishes one', async () => {
    const start = log().lastId;
    await defineWorkflow(t, 'wf-ev', [{ id: 'build' }, { id: 'ship', needs: ['build'] }], alice.token);
    const proposal = await log().read(start, { types: ['proposal.pending'] });
    expect(proposal.map((e) => e.nodes[0])).to.deep.equal(['wf-ev']);
    expect(proposal[0]!.payload).to.deep.include({ type: 'wf', proposed_by: [t.adminPerson] });

    const mid = log().lastId;
    const run = await started(t, 'wf-ev');
    const lease = await claimed(t, run, 'build');
    const done = await complete(t, run, 'build', { lease, status: 'succeeded' });
    expect(done.status, done.text).to.equal(200);
    const steps = await log().read(mid, { types: ['workflow.*'] });
    expect(steps.map((e) => `${e.type} ${e.payload.step}`)).to.deep.equal([
      'workflow.step_ready build',
      'workflow.step_finished build',
      'workflow.step_ready ship',
    ]);
    expect(steps[1]!.payload).to.include({ run, workflow: 'wf-ev', outcome: 'succeeded', from: 'claimed' });
    expect(steps.every((e) => e.nodes[0] === run)).to.equal(true);
  });
});
