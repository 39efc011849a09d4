/**
 * Question nodes fit the queue's routing conventions (plugins/queue README: `routed_to`,
 * `asker`, `mentions`): a routed question shows up in the steward's GET /v1/queue
 * `questions` and in the asker's `asked`; an unrouted one shows up for everyone. docs/spec.md rule
 * 12: "answered by writing a node with an `answers` edge to it".
 */
import { expect } from 'chai';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { asked, put, startQuestionsServer, steward } from './helpers.js';

const sectionIds = (body: Record<string, Array<{ id: string }>>, key: string) => body[key]!.map((e) => e.id);

describe('questions: routed into the queue and answered through an answers edge', function () {
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };
  let carol: { id: string; token: string };
  let routed: Record<string, any>;
  let unrouted: Record<string, any>;

  const queueOf = async (token: string) => {
    const res = await t.api('GET', '/v1/queue', { token });
    expect(res.status, res.text).to.equal(200);
    return res.body;
  };

  before(async () => {
    t = await startQuestionsServer();
    alice = await addPerson(t, 'Alice');
    bob = await addPerson(t, 'Bob');
    carol = await addPerson(t, 'Carol');
    await put(t, [{ id: 'task-billing', type: 'task', summary: 'billing rework', project: 'pay' }]);
    await steward(t, bob.id, 'task-billing');
    routed = await asked(t, alice.token, { text: 'Which invoice format do we keep?', mentions: ['task-billing'] });
    unrouted = await asked(t, alice.token, { text: 'Anyone know the wifi password?' });
    expect(routed.routed_to).to.equal(bob.id);
    expect(unrouted.routed_to).to.equal(null);
  });
  after(async () => t.close());

  it("a routed question is in the steward's `questions`, not in a teammate's; the asker sees it under `asked`", async () => {
    const bobs = await queueOf(bob.token);
    expect(sectionIds(bobs, 'questions')).to.include(routed.id);
    const entry = bobs.questions.find((e: { id: string }) => e.id === routed.id);
    expect(entry).to.include({ type: 'question', status: 'open', project: 'pay', author: alice.id });
    expect(entry.routed_to).to.deep.equal([bob.id]);
    expect(sectionIds(await queueOf(carol.token), 'questions')).to.not.include(routed.id);
    const alices = await queueOf(alice.token);
    expect(sectionIds(alices, 'asked')).to.include.members([routed.id, unrouted.id]);
    expect(sectionIds(alices, 'questions')).to.not.include(routed.id);
  });

  it("an unrouted question shows up in everyone's `questions`", async () => {
    for (const who of [bob, carol, alice]) expect(sectionIds(await queueOf(who.token), 'questions')).to.include(unrouted.id);
  });

  it('a project filter scopes the sections by the derived project', async () => {
    const res = await t.api('GET', '/v1/queue?project=pay', { token: bob.token });
    expect(sectionIds(res.body, 'questions')).to.deep.equal([routed.id]);
  });

  it("writing a node with an answers edge answers it: out of the steward's questions, `answered_by` for the asker", async () => {
    await put(t, [
      { id: 'dec-invoice-format', type: 'dec', summary: 'Keep the PDF invoice format', edges: [{ type: 'answers', to: routed.id }] },
    ]);
    expect(sectionIds(await queueOf(bob.token), 'questions')).to.not.include(routed.id);
    const entry = (await queueOf(alice.token)).asked.find((e: { id: string }) => e.id === routed.id);
    expect(entry.answered_by).to.deep.equal(['dec-invoice-format']);
    const node = await t.api('GET', `/v1/nodes/${routed.id}`);
    expect(node.body.resolution).to.include({ by: 'dec-invoice-format', edge: 'answers', lagging: true });
  });
});
