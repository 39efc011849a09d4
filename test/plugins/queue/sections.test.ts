/**
 * docs/spec.md GET /v1/queue rule 4: `questions`, `findings`, `pending` are routed-to-me plus
 * unrouted; `asked` is the questions the caller filed; `reviews` is nodes with an open
 * `review-requested` edge to the caller's person node (no unrouted fallback). docs/spec.md
 * GET /v1/me rule 1: an unbound caller's routed questions are empty.
 */
import { expect } from 'chai';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { freezeClock, post, unboundToken } from '../leases/helpers.js';
import { queue, startQueueServer } from './helpers.js';

const sectionIds = (res: { body: Record<string, Array<{ id: string }>> }, key: string) => res.body[key]!.map((e) => e.id);

describe('queue: routed sections', function () {
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };
  let unfreeze: () => void;

  before(async () => {
    t = await startQueueServer();
    alice = await addPerson(t, 'Alice');
    bob = await addPerson(t, 'Bob');
    unfreeze = freezeClock(t.clock);
    const put = async (nodes: Array<Record<string, unknown>>, token = t.adminToken) => {
      const res = await t.api('POST', '/v1/nodes', { token, body: { nodes } });
      expect(res.status, res.text).to.equal(200);
    };
    await put([
      { id: 'task-owned', type: 'task', summary: 'alice carries this', project: 'web' },
      { id: 'task-bobs', type: 'task', summary: 'bob carries this', project: 'web' },
      { id: 'task-nobody', type: 'task', summary: 'nobody carries this', project: 'api' },
    ]);
    await t.api('POST', '/v1/nodes/task-owned/edges', { body: { type: 'assigned', to: alice.id } });
    await t.api('POST', '/v1/nodes/task-bobs/edges', { body: { type: 'assigned', to: bob.id } });
    await put([
      { id: 'question-to-alice', type: 'question', summary: 'routed to alice', routed_to: alice.id, project: 'web' },
      { id: 'question-to-bob', type: 'question', summary: 'routed to bob', routed_to: bob.id, project: 'web' },
      { id: 'question-unrouted', type: 'question', summary: 'nobody yet', project: 'api' },
      { id: 'question-mentions', type: 'question', summary: 'mentions alice', routed_to: bob.id, mentions: [alice.id], project: 'web' },
      { id: 'question-answered', type: 'question', summary: 'already answered', project: 'web' },
      {
        id: 'finding-owned',
        type: 'finding',
        summary: 'about alice work',
        edges: [{ type: 'concerns', to: 'task-owned' }],
        project: 'web',
      },
      { id: 'finding-bobs', type: 'finding', summary: 'about bob work', edges: [{ type: 'concerns', to: 'task-bobs' }], project: 'web' },
      {
        id: 'finding-loose',
        type: 'finding',
        summary: 'about unowned work',
        edges: [{ type: 'concerns', to: 'task-nobody' }],
        project: 'api',
      },
      { id: 'finding-routed', type: 'finding', summary: 'routed to bob', routed_to: [bob.id], project: 'api' },
      { id: 'capture-mine', type: 'capture', summary: 'unfit text', routed_to: alice.id, project: 'web' },
      { id: 'capture-open', type: 'capture', summary: 'unfit text, unrouted', project: 'web' },
      { id: 'capture-bobs', type: 'capture', summary: 'unfit text for bob', routed_to: bob.id, project: 'web' },
      { id: 'capture-done', type: 'capture', summary: 'triaged already', project: 'web' },
    ]);
    await post(t, '/v1/nodes/capture-done/status', t.adminToken, { status: 'triaged' });
    await put([{ id: 'spec-answer', type: 'spec', summary: 'the answer', edges: [{ type: 'answers', to: 'question-answered' }] }]);
    // questions filed by alice and bob (author stamped from the token; `asker` wins when present)
    await put([{ id: 'question-alice-asks', type: 'question', summary: 'alice asks', project: 'web' }], alice.token);
    await put([{ id: 'question-asker-field', type: 'question', summary: 'filed for alice', asker: alice.id, project: 'api' }], bob.token);
    await put([{ id: 'question-bob-asks', type: 'question', summary: 'bob asks', routed_to: bob.id }], bob.token);
    await put([
      { id: 'task-review-me', type: 'task', summary: 'please review', project: 'web' },
      { id: 'task-review-done', type: 'task', summary: 'reviewed already' },
    ]);
    await t.api('POST', '/v1/nodes/task-review-me/edges', { body: { type: 'review-requested', to: alice.id } });
    await t.api('POST', '/v1/nodes/task-review-done/edges', { body: { type: 'review-requested', to: alice.id } });
    await post(t, '/v1/nodes/task-review-done/status', t.adminToken, { status: 'done' });
    await t.api('POST', '/v1/nodes/task-bobs/edges', { body: { type: 'review-requested', to: bob.id } });
  });
  after(async () => {
    unfreeze();
    await t.close();
  });

  it('questions: routed to me (routed_to or mentions) plus unrouted; not routed to others; not answered', async () => {
    const res = await queue(t, alice.token, '');
    expect(sectionIds(res, 'questions').sort()).to.deep.equal([
      'question-alice-asks',
      'question-asker-field',
      'question-mentions',
      'question-to-alice',
      'question-unrouted',
    ]);
    const entry = res.body.questions.find((q: { id: string }) => q.id === 'question-to-alice');
    expect(entry).to.deep.include({ type: 'question', status: 'open', project: 'web', routed_to: [alice.id], title: 'routed to alice' });
    const forBob = await queue(t, bob.token, '');
    expect(sectionIds(forBob, 'questions').sort()).to.deep.equal([
      'question-alice-asks',
      'question-asker-field',
      'question-bob-asks',
      'question-mentions',
      'question-to-bob',
      'question-unrouted',
    ]);
  });

  it('asked: the questions the caller filed, with their answers', async () => {
    const res = await queue(t, alice.token, '');
    expect(sectionIds(res, 'asked').sort()).to.deep.equal(['question-alice-asks', 'question-asker-field']);
    expect(sectionIds(await queue(t, bob.token, ''), 'asked')).to.deep.equal(['question-bob-asks']);
    // the admin filed the answered one: it shows with who answered it
    const admin = await queue(t, t.adminToken, '');
    const answered = admin.body.asked.find((q: { id: string }) => q.id === 'question-answered');
    expect(answered).to.include({ status: 'open' });
    expect(answered.answered_by).to.deep.equal(['spec-answer']);
  });

  it('findings: routed to me (routed_to, or about work I carry) plus unrouted', async () => {
    expect(sectionIds(await queue(t, alice.token, ''), 'findings').sort()).to.deep.equal(['finding-loose', 'finding-owned']);
    expect(sectionIds(await queue(t, bob.token, ''), 'findings').sort()).to.deep.equal(['finding-bobs', 'finding-loose', 'finding-routed']);
  });

  it('pending: capture-pending nodes routed to me plus unrouted', async () => {
    expect(sectionIds(await queue(t, alice.token, ''), 'pending').sort()).to.deep.equal(['capture-mine', 'capture-open']);
    expect(sectionIds(await queue(t, bob.token, ''), 'pending').sort()).to.deep.equal(['capture-bobs', 'capture-open']);
  });

  it('reviews: open review-requested edges to my person node only, no unrouted fallback', async () => {
    expect(sectionIds(await queue(t, alice.token, ''), 'reviews')).to.deep.equal(['task-review-me']);
    expect(sectionIds(await queue(t, bob.token, ''), 'reviews')).to.deep.equal(['task-bobs']);
    expect(sectionIds(await queue(t, t.adminToken, ''), 'reviews')).to.deep.equal([]);
    // the edge flipping to approved-by takes it off the list
    const flip = await t.api('POST', '/v1/nodes/task-review-me/edges', { body: { type: 'approved-by', to: alice.id } });
    expect(flip.body.warnings.join(' ')).to.include('flipped review-requested -> approved-by');
    expect(sectionIds(await queue(t, alice.token, ''), 'reviews')).to.deep.equal([]);
  });

  it('sections follow the project scope; answering a question retires it from the section', async () => {
    const web = await queue(t, alice.token, '?project=web');
    expect(sectionIds(web, 'questions').sort()).to.deep.equal(['question-alice-asks', 'question-mentions', 'question-to-alice']);
    expect(sectionIds(web, 'findings')).to.deep.equal(['finding-owned']);
    await t.api('POST', '/v1/nodes', {
      body: { nodes: [{ id: 'spec-reply', type: 'spec', summary: 'reply', edges: [{ type: 'answers', to: 'question-to-alice' }] }] },
    });
    expect(sectionIds(await queue(t, alice.token, ''), 'questions')).to.not.include('question-to-alice');
  });

  it('an unbound caller gets empty routed sections (and an empty personal queue)', async () => {
    const res = await queue(t, await unboundToken(t), '');
    expect(res.status).to.equal(200);
    for (const key of ['questions', 'asked', 'findings', 'pending', 'reviews']) expect(res.body[key], key).to.deep.equal([]);
    expect(res.body.total_count).to.be.greaterThan(0);
  });
});
