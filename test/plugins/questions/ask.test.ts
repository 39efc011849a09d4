/**
 * docs/spec.md Writes rule 12: "Questions: routed to the steward of the closest node in the relevance
 * neighborhood (mentions first), unrouted if none; ... Project is derived from the
 * neighborhood, then the asker's home project, unless an explicit slug is given; a malformed
 * slug is 400." Response: 201 `{status, id, project, routed_to, via, asker, revision, warnings}`.
 */
import { expect } from 'chai';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { unboundToken } from '../leases/helpers.js';
import { ask, asked, put, startQuestionsServer, steward } from './helpers.js';

describe('questions: POST /v1/questions', function () {
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };
  let carol: { id: string; token: string };
  let dave: { id: string; token: string };
  let erin: { id: string; token: string };

  before(async () => {
    t = await startQuestionsServer();
    alice = await addPerson(t, 'Alice');
    bob = await addPerson(t, 'Bob');
    carol = await addPerson(t, 'Carol');
    dave = await addPerson(t, 'Dave');
    erin = await addPerson(t, 'Erin');
  });
  after(async () => t.close());

  it('answers 201 with exactly the docs/spec.md keys and files a question node routed to the steward of a mentioned node', async () => {
    await put(t, [{ id: 'task-r1', type: 'task', summary: 'release one', project: 'web' }]);
    await steward(t, bob.id, 'task-r1');
    const res = await ask(t, alice.token, { text: 'How do we deploy r1?\nSecond line.', mentions: ['task-r1'] });
    expect(res.status, res.text).to.equal(201);
    expect(Object.keys(res.body)).to.deep.equal(['status', 'id', 'project', 'routed_to', 'via', 'asker', 'revision', 'warnings']);
    expect(res.body).to.include({
      status: 'created',
      id: 'question-how-do-we-deploy-r1-second-line',
      project: 'web',
      routed_to: bob.id,
      via: 'task-r1',
      asker: alice.id,
    });
    expect(res.body.warnings).to.deep.equal([]);
    expect(res.body.revision).to.match(/^[0-9a-f]{40}$/);

    const node = await t.api('GET', `/v1/nodes/${res.body.id}`);
    expect(node.status).to.equal(200);
    expect(node.body.revision).to.equal(res.body.revision);
    const fm = node.body.frontmatter;
    expect(fm).to.include({
      type: 'question',
      status: 'open',
      text: 'How do we deploy r1?\nSecond line.',
      summary: 'How do we deploy r1? Second line.',
      project: 'web',
      asker: alice.id,
      routed_to: bob.id,
      routed_via: 'task-r1',
      author: alice.id,
      authored_via: 'rest',
    });
    expect(fm.mentions).to.deep.equal(['task-r1']);
    expect(fm.edges).to.deep.equal([{ type: 'mentions', to: 'task-r1' }]);
  });

  it('mentions first, in the order given', async () => {
    await put(t, [
      { id: 'task-m1', type: 'task', summary: 'm1' },
      { id: 'task-m2', type: 'task', summary: 'm2' },
    ]);
    await steward(t, carol.id, 'task-m1');
    await steward(t, bob.id, 'task-m2');
    const first = await asked(t, alice.token, { text: 'm2 or m1?', mentions: ['task-m2', 'task-m1'] });
    expect(first).to.include({ routed_to: bob.id, via: 'task-m2' });
    const second = await asked(t, alice.token, { text: 'm1 or m2?', mentions: ['task-m1', 'task-m2', 'task-m1'] });
    expect(second).to.include({ routed_to: carol.id, via: 'task-m1' });
    expect((await t.api('GET', `/v1/nodes/${second.id}`)).body.frontmatter.mentions).to.deep.equal(['task-m1', 'task-m2']);
  });

  it('closest node: one edge away beats two (either direction); on one level the heavier edge wins; three edges away is outside', async () => {
    // same level: blocks (weight 1.0) beats relates-to (0.2)
    await put(t, [
      { id: 'task-w-strong', type: 'task', summary: 'strong' },
      { id: 'task-w-weak', type: 'task', summary: 'weak' },
      {
        id: 'task-w0',
        type: 'task',
        summary: 'w0',
        edges: [
          { type: 'relates-to', to: 'task-w-weak' },
          { type: 'blocks', to: 'task-w-strong' },
        ],
      },
    ]);
    await steward(t, carol.id, 'task-w-weak');
    await steward(t, bob.id, 'task-w-strong');
    expect(await asked(t, alice.token, { text: 'weights?', mentions: ['task-w0'] })).to.include({
      routed_to: bob.id,
      via: 'task-w-strong',
    });

    // depth 1 through an inbound edge beats depth 2 along heavier edges
    await put(t, [
      { id: 'task-d2', type: 'task', summary: 'd2' },
      { id: 'task-d1', type: 'task', summary: 'd1', edges: [{ type: 'blocks', to: 'task-d2' }] },
      { id: 'task-d0', type: 'task', summary: 'd0', edges: [{ type: 'blocks', to: 'task-d1' }] },
      { id: 'task-d1-in', type: 'task', summary: 'points at d0', edges: [{ type: 'relates-to', to: 'task-d0' }] },
    ]);
    await steward(t, dave.id, 'task-d2');
    await steward(t, erin.id, 'task-d1-in');
    expect(await asked(t, alice.token, { text: 'depth one?', mentions: ['task-d0'] })).to.include({
      routed_to: erin.id,
      via: 'task-d1-in',
    });
    // from d1, d2 is one hop and d1-in is two: dave
    expect(await asked(t, alice.token, { text: 'depth two?', mentions: ['task-d1'] })).to.include({ routed_to: dave.id, via: 'task-d2' });

    // three edges away is outside the neighborhood
    await put(t, [
      { id: 'task-f3', type: 'task', summary: 'f3' },
      { id: 'task-f2', type: 'task', summary: 'f2', edges: [{ type: 'blocks', to: 'task-f3' }] },
      { id: 'task-f1', type: 'task', summary: 'f1', edges: [{ type: 'blocks', to: 'task-f2' }] },
      { id: 'task-f0', type: 'task', summary: 'f0', edges: [{ type: 'blocks', to: 'task-f1' }] },
    ]);
    await steward(t, dave.id, 'task-f3');
    const far = await asked(t, alice.token, { text: 'too far?', mentions: ['task-f0'] });
    expect(far).to.include({ routed_to: null, via: null, project: null });
    expect(far.warnings.join(' ')).to.match(/unrouted/);
    const fm = (await t.api('GET', `/v1/nodes/${far.id}`)).body.frontmatter;
    expect(fm).to.not.have.property('routed_to');
    expect(fm).to.not.have.property('project');
  });

  it('the walk does not pass through people or proj-root', async () => {
    await put(t, [
      { id: 'task-p-other', type: 'task', summary: 'dave stewards this' },
      { id: 'task-p0', type: 'task', summary: 'p0', edges: [{ type: 'part-of', to: 'proj-root' }] },
    ]);
    await steward(t, dave.id, 'task-p-other');
    await t.api('POST', '/v1/nodes/task-p0/edges', { body: { type: 'assigned', to: dave.id } });
    // dave is assigned (a person: not walked) and the admin stewards proj-root (not walked)
    expect(await asked(t, alice.token, { text: 'who owns p0?', mentions: ['task-p0'] })).to.include({ routed_to: null, via: null });
    // proj-root still counts when mentioned outright
    expect(await asked(t, alice.token, { text: 'admins?', mentions: ['proj-root'] })).to.include({
      routed_to: t.adminPerson,
      via: 'proj-root',
    });
  });

  it('a mentioned person is asked directly; the asker is never routed to', async () => {
    expect(await asked(t, alice.token, { text: 'carol, a word?', mentions: [carol.id, 'task-r1'] })).to.include({
      routed_to: carol.id,
      via: carol.id,
    });
    await put(t, [
      { id: 'task-s1', type: 'task', summary: 's1' },
      { id: 'task-s2', type: 'task', summary: 's2' },
    ]);
    await steward(t, alice.id, 'task-s1');
    await steward(t, alice.id, 'task-s2');
    await steward(t, bob.id, 'task-s2');
    expect(await asked(t, alice.token, { text: 'my own s1?', mentions: ['task-s1'] })).to.include({ routed_to: null });
    expect(await asked(t, alice.token, { text: 'shared s2?', mentions: ['task-s2'] })).to.include({ routed_to: bob.id, via: 'task-s2' });
    expect(await asked(t, alice.token, { text: 'ask myself?', mentions: [alice.id] })).to.include({ routed_to: null });
  });

  it('an explicit project slug wins and routes through the repo to its grouping; an unknown one is kept with a warning', async () => {
    await put(t, [
      { id: 'proj-shop', type: 'proj', summary: 'the shop' },
      { id: 'repo-shop-api', type: 'repo', summary: 'shop api', edges: [{ type: 'member-of', to: 'proj-shop' }] },
    ]);
    await steward(t, carol.id, 'proj-shop');
    const bare = await asked(t, alice.token, { text: 'api question', project: 'shop-api' });
    expect(bare).to.include({ project: 'shop-api', routed_to: carol.id, via: 'proj-shop' });
    // the neighborhood still comes before the project step; the explicit project is kept
    const both = await asked(t, alice.token, { text: 'r1 in the shop?', mentions: ['task-r1'], project: 'repo-shop-api' });
    expect(both).to.include({ project: 'repo-shop-api', routed_to: bob.id, via: 'task-r1' });
    const unknown = await asked(t, alice.token, { text: 'somewhere else', project: 'nowhere' });
    expect(unknown).to.include({ project: 'nowhere', routed_to: null });
    expect(unknown.warnings.join(' ')).to.match(/'nowhere' matches no repo or project grouping/);
  });

  it("without mentions or a slug the project is the asker's home project (a grouping they steward)", async () => {
    await put(t, [{ id: 'proj-home', type: 'proj', summary: 'home grouping' }]);
    await steward(t, erin.id, 'proj-home');
    await steward(t, dave.id, 'proj-home');
    const res = await asked(t, erin.token, { text: 'home question' });
    expect(res).to.include({ project: 'proj-home', routed_to: dave.id, via: 'proj-home', asker: erin.id });
    // a mentioned node's project comes before the home project
    expect(await asked(t, erin.token, { text: 'about r1', mentions: ['task-r1'] })).to.include({ project: 'web', routed_to: bob.id });
    // no neighborhood and no home: no project, unrouted
    expect(await asked(t, alice.token, { text: 'nothing to go on' })).to.include({ project: null, routed_to: null, via: null });
  });

  it('ids come from the title (or text) with a numeric suffix on collision; title becomes the summary', async () => {
    const a = await asked(t, alice.token, { text: 'long text here', title: 'Same Title!' });
    const b = await asked(t, alice.token, { text: 'other text', title: 'Same Title!' });
    expect(a.id).to.equal('question-same-title');
    expect(b.id).to.equal('question-same-title-2');
    const fm = (await t.api('GET', `/v1/nodes/${b.id}`)).body.frontmatter;
    expect(fm).to.include({ title: 'Same Title!', summary: 'Same Title!', text: 'other text' });
  });

  describe('bad input changes nothing', () => {
    let before: { head: string; node_count: number };
    beforeEach(async () => {
      before = (await t.api('GET', '/v1/status')).body;
    });
    afterEach(async () => {
      const now = (await t.api('GET', '/v1/status')).body;
      expect(now.head).to.equal(before.head);
      expect(now.node_count).to.equal(before.node_count);
    });

    it('a malformed project slug is 400', async () => {
      for (const project of ['Bad Slug', '-x', 'a_b', 12, '']) {
        const res = await ask(t, alice.token, { text: 'q', project });
        expect(res.status, `${JSON.stringify(project)}: ${res.text}`).to.equal(400);
        expect(res.body.error.code).to.equal('bad_request');
        expect(res.body.error.details.field).to.equal('project');
      }
    });

    it('missing, empty or oversized text, a multi-line title, malformed or too many mentions are 422', async () => {
      const cases: unknown[] = [
        undefined,
        [],
        {},
        { text: '' },
        { text: 42 },
        { text: 'x'.repeat(8 * 1024 + 1) },
        { text: 'q', title: 'two\nlines' },
        { text: 'q', mentions: ['Bad_Id'] },
        { text: 'q', mentions: { id: 'task-r1' } },
        { text: 'q', mentions: Array.from({ length: 21 }, (_, i) => `task-x${i}`) },
      ];
      for (const body of cases) {
        const res = await ask(t, alice.token, body);
        expect(res.status, `${JSON.stringify(body)?.slice(0, 80)}: ${res.text.slice(0, 200)}`).to.equal(422);
        expect(res.body.error.code).to.equal('validation_failed');
      }
    });

    it('an unknown mentioned node is 404', async () => {
      const res = await ask(t, alice.token, { text: 'q', mentions: ['task-r1', 'task-nope'] });
      expect(res.status).to.equal(404);
      expect(res.body.error.code).to.equal('not_found');
      expect(res.body.error.details.mentions).to.deep.equal(['task-nope']);
    });

    it('a token without a person node is 403 no_person', async () => {
      const res = await ask(t, await unboundToken(t), { text: 'who am I?' });
      expect(res.status).to.equal(403);
      expect(res.body.error.code).to.equal('no_person');
    });

    it('no token is 401', async () => {
      const res = await ask(t, null as unknown as string, { text: 'q' });
      expect(res.status).to.equal(401);
    });
  });
});
