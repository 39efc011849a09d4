/**
 * POST /v1/capture with the built-in ingester (docs/spec.md Writes rule 9, docs/design.md §6): typed lines
 * become nodes stamped `authored_via: capture`, text that fits no schema is preserved as a
 * capture-pending node, context edges, the 404/422 checks, idempotency, and the journal.
 */
import { expect } from 'chai';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { agentToken, unboundToken } from '../leases/helpers.js';
import { capture, DAY, journal, node, nodeCount, startCaptureServer } from './helpers.js';

/**
 * The field a 422 names: `field` on the rules the operation checks (a calendar date, keys that
 * need each other), ajv's `instancePath` (plus the missing or unknown property) on schema failures.
 */
function fieldOf(e: {
  field?: string;
  instancePath?: string;
  params?: { missingProperty?: string; additionalProperty?: string };
}): string | undefined {
  if (e.field !== undefined) return e.field;
  const parts = (e.instancePath ?? '').split('/').filter(Boolean);
  const extra = e.params?.missingProperty ?? e.params?.additionalProperty;
  if (extra !== undefined) parts.push(extra);
  return parts.join('.');
}

describe('capture: POST /v1/capture (built-in ingester)', function () {
  let t: TestServer;
  let bob: { id: string; token: string };

  before(async () => {
    t = await startCaptureServer();
    bob = await addPerson(t, 'Bob');
    const res = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          { id: 'task-release', type: 'task', summary: 'Ship release 2.0', project: 'web' },
          { id: 'issue-incident-7', type: 'issue', summary: 'Incident 7 on checkout', project: 'web' },
        ],
      },
    });
    expect(res.status, res.text).to.equal(200);
  });
  after(() => t.close());

  it('each `<type>: <summary>` line starts a node; the lines below it are its body; status created', async () => {
    const text = [
      'Notes from the standup',
      'task: Fix the login redirect',
      'The redirect loops after SSO.',
      '  - seen on staging',
      '',
      'issue: Crash on save',
      '- decision: Use Postgres for the queue',
      'Question: Who owns billing?',
      'spec: Capture API v2',
      'Some closing remark.',
    ].join('\n');
    const res = await capture(t, { text });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.status).to.equal('created');
    expect(res.body.ids).to.deep.equal([
      'task-fix-the-login-redirect',
      'issue-crash-on-save',
      'dec-use-postgres-for-the-queue',
      'question-who-owns-billing',
      'spec-capture-api-v2',
    ]);
    expect(res.body.nodes.map((n: { type: string }) => n.type)).to.deep.equal(['task', 'issue', 'dec', 'question', 'spec']);
    expect(res.body.nodes[0]).to.include({
      id: 'task-fix-the-login-redirect',
      status: 'open',
      title: 'Fix the login redirect',
      project: null,
    });
    expect(res.body.nodes[0].revision).to.match(/^[0-9a-f]{40}$/);
    expect(res.body.nodes[2].status).to.equal('proposed');
    expect(res.body.summary).to.equal(`created 5 nodes: ${res.body.ids.slice(0, 5).join(', ')}`);
    expect(res.body.warnings.join('\n')).to.include('before the first typed line');

    const task = await node(t, 'task-fix-the-login-redirect');
    expect(task.frontmatter.authored_via).to.equal('capture');
    expect(task.frontmatter.author).to.equal(t.adminPerson);
    expect(task.frontmatter.summary).to.equal('Fix the login redirect');
    expect(task.body).to.equal('Notes from the standup\n\nThe redirect loops after SSO.\n  - seen on staging');
    expect((await node(t, 'spec-capture-api-v2')).body).to.equal('Some closing remark.');
    expect((await node(t, 'issue-crash-on-save')).body).to.equal('');
    for (const id of res.body.ids) expect((await node(t, id)).frontmatter.authored_via, id).to.equal('capture');
  });

  it('ids: a slug of at most 60 characters and a numeric suffix on collision', async () => {
    const long = 'Refactor the payment reconciliation pipeline so that retries are idempotent across regions';
    const res = await capture(t, { text: `task: Fix the login redirect\ntask: ${long}\ntask: ${long}` });
    expect(res.status, res.text).to.equal(200);
    const [again, first, second] = res.body.ids as string[];
    expect(again).to.equal('task-fix-the-login-redirect-2');
    expect(first!.slice('task-'.length).length).to.be.at.most(60);
    expect(first).to.equal('task-refactor-the-payment-reconciliation-pipeline-so-that-retries');
    expect(second).to.equal(`${first}-2`);
  });

  it('text that fits no schema is preserved whole as a pending capture- node routed to its author', async () => {
    const text = 'Remember to look at the flaky CI job\nnote: it fails on Tuesdays';
    const before = await nodeCount(t);
    const res = await capture(t, { text, context: { project: 'web' } }, { token: bob.token });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.status).to.equal('pending');
    expect(res.body.ids).to.deep.equal(['capture-remember-to-look-at-the-flaky-ci-job']);
    expect(res.body.nodes[0]).to.include({ type: 'capture', status: 'pending', project: 'web' });
    expect(res.body.summary).to.match(/^preserved as capture-remember-to-look-at-the-flaky-ci-job \(pending triage\): /);
    expect(await nodeCount(t)).to.equal(before + 1);
    const n = await node(t, 'capture-remember-to-look-at-the-flaky-ci-job');
    expect(n.body).to.equal(text);
    expect(n.frontmatter).to.include({
      type: 'capture',
      status: 'pending',
      routed_to: bob.id,
      author: bob.id,
      authored_via: 'capture',
      project: 'web',
    });
    expect(n.frontmatter.capture_reason).to.match(/fits a capturable schema/);
  });

  it('context: project sets project, during adds relates-to kind=found-during, blocks adds a dated blocks edge from each new node', async () => {
    const res = await capture(t, {
      text: 'task: Add retry to the webhook sender\nissue: Webhook sender drops events',
      context: { project: 'api', during: 'issue-incident-7', blocks: 'task-release', needed_by: '2031-03-01' },
    });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.status).to.equal('created');
    for (const id of res.body.ids as string[]) {
      const n = await node(t, id);
      expect(n.frontmatter.project).to.equal('api');
      expect(n.frontmatter.edges).to.deep.include({ type: 'relates-to', to: 'issue-incident-7', kind: 'found-during' });
      expect(n.frontmatter.edges).to.deep.include({ type: 'blocks', to: 'task-release', needed_by: '2031-03-01' });
    }
    const pending = await capture(t, { text: 'no types here, just a thought', context: { project: 'api', blocks: 'task-release' } });
    expect(pending.body.status).to.equal('pending');
    const p = await node(t, pending.body.ids[0]);
    expect(p.frontmatter.edges).to.deep.equal([{ type: 'blocks', to: 'task-release' }]);
  });

  it('a missing during node is a warning, not an error; a past needed_by warns', async () => {
    const res = await capture(t, {
      text: 'task: Look into the cache stampede',
      context: { project: 'web', during: 'task-nowhere', blocks: 'task-release', needed_by: '2001-01-01' },
    });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.warnings).to.include('context.during task-nowhere does not exist; no relates-to edge was added');
    expect(res.body.warnings).to.include('needed_by 2001-01-01 is already past');
    expect((await node(t, res.body.ids[0])).frontmatter.edges).to.deep.equal([
      { type: 'blocks', to: 'task-release', needed_by: '2001-01-01' },
    ]);
  });

  it('a missing blocks target is 404 and a bad needed_by 422, and nothing is written or journaled', async () => {
    const before = await nodeCount(t);
    const entries = journal(t).length;
    const missing = await capture(t, { text: 'task: Something', context: { project: 'web', blocks: 'task-ghost' } });
    expect(missing.status).to.equal(404);
    expect(missing.body.error.code).to.equal('not_found');
    for (const needed_by of ['2031-02-30', 'tomorrow', '2031-3-1', 20310301]) {
      const bad = await capture(t, { text: 'task: Something', context: { project: 'web', blocks: 'task-release', needed_by } });
      expect(bad.status, String(needed_by)).to.equal(422);
      expect(bad.body.error.code).to.equal('validation_failed');
      expect(fieldOf(bad.body.error.details.errors[0])).to.equal('context.needed_by');
    }
    expect(await nodeCount(t)).to.equal(before);
    expect(journal(t).length).to.equal(entries);
  });

  it('malformed input is 422 with the field named', async () => {
    const cases: Array<[unknown, string]> = [
      [{}, 'text'],
      [{ text: '   ' }, 'text'],
      [{ text: 'x'.repeat(8 * 1024 + 1) }, 'text'],
      [{ text: 'task: a', context: 'web' }, 'context'],
      [{ text: 'task: a', context: { project: 'Not A Slug' } }, 'context.project'],
      [{ text: 'task: a', context: { during: 'Bad Id' } }, 'context.during'],
      [{ text: 'task: a', context: { blocks: 'task-release' } }, 'context.project'],
      [{ text: 'task: a', context: { project: 'web', needed_by: '2031-01-01' } }, 'context.blocks'],
      [{ text: 'task: a', context: { projet: 'web' } }, 'context.projet'],
      [{ text: 'task: a', source: 'Distill Sweep' }, 'source'],
      [{ text: 'task: a', idempotency_key: '' }, 'idempotency_key'],
    ];
    for (const [body, field] of cases) {
      const res = await capture(t, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).to.equal(422);
      expect(fieldOf(res.body.error.details.errors[0]), JSON.stringify(body).slice(0, 80)).to.equal(field);
    }
    const mismatch = await capture(t, { text: 'task: a', idempotency_key: 'k1' }, { headers: { 'Idempotency-Key': 'k2' } });
    expect(mismatch.status).to.equal(422);
  });

  it("drafts a schema validate hook rejects are not committed: the text is preserved as pending with the hook's errors", async () => {
    const schema = [
      '---',
      'id: schema-no-secret-tasks',
      'type: schema',
      'summary: Tasks may not mention secrets',
      'applies_to: task',
      'hooks:',
      '  validate: |',
      "    (input) => /secret/i.test(String(input.node.summary)) ? { ok: false, errors: ['summary mentions a secret'] } : { ok: true, errors: [] }",
      '---',
      'Keep secrets out of the graph.',
    ].join('\n');
    expect((await t.api('POST', '/v1/nodes', { body: { nodes: [schema] } })).status).to.equal(200);
    const activated = await t.api('POST', '/v1/nodes/schema-no-secret-tasks/status', { token: bob.token, body: { status: 'active' } });
    expect(activated.status, activated.text).to.equal(200);
    const before = await nodeCount(t);
    const res = await capture(t, { text: 'task: Rotate the secret token\ntask: Harmless chore' });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.status).to.equal('pending');
    expect(res.body.warnings).to.include('draft 1 node: summary mentions a secret');
    expect(await nodeCount(t)).to.equal(before + 1);
    expect((await t.api('GET', '/v1/nodes/task-harmless-chore')).status).to.equal(404);
    await t.api('POST', '/v1/nodes/schema-no-secret-tasks/status', { token: bob.token, body: { status: 'retired' } });
  });

  it('writes need a person: an unbound token is 403', async () => {
    const res = await capture(t, { text: 'task: a' }, { token: await unboundToken(t) });
    expect(res.status).to.equal(403);
  });

  it('under an agent token the nodes carry authored_via capture and authored_by_agent', async () => {
    const token = await agentToken(t, bob.id, 'agent-bobs-helper', 'run-42');
    const res = await capture(t, { text: 'task: Agent found a typo in the docs', source: 'distill' }, { token });
    expect(res.status, res.text).to.equal(200);
    const n = await node(t, res.body.ids[0]);
    expect(n.frontmatter).to.include({
      authored_via: 'capture',
      author: bob.id,
      authored_by_agent: 'agent-bobs-helper',
      session: 'run-42',
    });
    const entry = journal(t).at(-1)!;
    expect(entry).to.include({
      kind: 'capture',
      author: bob.id,
      agent: 'agent-bobs-helper',
      session: 'run-42',
      source: 'distill',
      status: 'created',
      ingester: 'builtin',
    });
  });

  it('the journal records each capture: at, author, source, status, ids, project', async () => {
    const res = await capture(
      t,
      { text: 'issue: Journal me', context: { project: 'web', blocks: 'task-release', needed_by: '2031-05-05' } },
      { token: bob.token },
    );
    const entry = journal(t).at(-1)!;
    expect(entry).to.deep.include({
      kind: 'capture',
      author: bob.id,
      via: 'rest',
      source: null,
      status: 'created',
      ids: res.body.ids,
      project: 'web',
      types: { issue: 1 },
      ingester: 'builtin',
      attempts: 1,
      blocks: 'task-release',
      needed_by: '2031-05-05',
    });
    expect(Date.parse(entry.at)).to.be.closeTo(t.clock.now(), 5000);
    expect(entry.id).to.match(/^cj-[0-9a-z]{9}-[0-9a-f]{8}$/);
    const pending = journal(t).filter((e) => e.status === 'pending');
    expect(pending.length).to.be.greaterThan(0);
    expect(pending[0]!.ids[0]).to.match(/^capture-/);
  });

  describe('idempotency', () => {
    it('a repeated idempotency_key returns the original answer byte for byte without capturing again', async () => {
      const body = { text: 'task: Idempotent thing', idempotency_key: 'sweep-1' };
      const first = await capture(t, body);
      expect(first.status).to.equal(200);
      const count = await nodeCount(t);
      const entries = journal(t).length;
      const again = await capture(t, body);
      expect(again.text).to.equal(first.text);
      // a different text under the same key still returns the original result
      const other = await capture(t, { text: 'task: Something else', idempotency_key: 'sweep-1' });
      expect(other.text).to.equal(first.text);
      expect(await nodeCount(t)).to.equal(count);
      expect(journal(t).length).to.equal(entries);
    });

    it('the Idempotency-Key header works the same, and the same key in body and header agrees', async () => {
      const first = await capture(t, { text: 'task: Header keyed' }, { headers: { 'Idempotency-Key': 'hdr-1' } });
      const count = await nodeCount(t);
      const again = await capture(t, { text: 'task: Header keyed' }, { headers: { 'Idempotency-Key': 'hdr-1' } });
      const both = await capture(t, { text: 'task: Header keyed', idempotency_key: 'hdr-1' }, { headers: { 'Idempotency-Key': 'hdr-1' } });
      expect(again.text).to.equal(first.text);
      expect(both.text).to.equal(first.text);
      expect(await nodeCount(t)).to.equal(count);
    });

    it('keys are per person; concurrent repeats capture once; a key lasts 24 hours', async () => {
      const mine = await capture(t, { text: 'task: Keyed per person', idempotency_key: 'shared' });
      const bobs = await capture(t, { text: 'task: Keyed per person', idempotency_key: 'shared' }, { token: bob.token });
      expect(bobs.body.ids).to.not.deep.equal(mine.body.ids);

      const count = await nodeCount(t);
      const racing = await Promise.all([1, 2, 3, 4].map(() => capture(t, { text: 'task: Raced capture', idempotency_key: 'race' })));
      expect(new Set(racing.map((r) => r.text)).size).to.equal(1);
      expect(await nodeCount(t)).to.equal(count + 1);

      t.clock.advance(DAY + 1000);
      const later = await capture(t, { text: 'task: Raced capture', idempotency_key: 'race' });
      expect(later.body.ids).to.deep.equal(['task-raced-capture-2']);
    });

    it('a failed capture is not remembered: retrying the key after fixing the request captures', async () => {
      const failed = await capture(t, {
        text: 'task: Retry me',
        context: { project: 'web', blocks: 'task-later' },
        idempotency_key: 'retry-1',
      });
      expect(failed.status).to.equal(404);
      await t.api('POST', '/v1/nodes', { body: { nodes: [{ id: 'task-later', type: 'task', summary: 'later' }] } });
      const ok = await capture(t, {
        text: 'task: Retry me',
        context: { project: 'web', blocks: 'task-later' },
        idempotency_key: 'retry-1',
      });
      expect(ok.status).to.equal(200);
      expect(ok.body.status).to.equal('created');
    });
  });
});
