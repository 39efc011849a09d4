/**
 * Capture through an external ingester (SVC_INGEST_URL), against a real HTTP fake on
 * loopback: drafts validated once, bounced once with the errors, then committed or preserved
 * as a capture- node; an unreachable ingester is 503 `ingestion_unavailable` and changes
 * nothing; context checks run before any ingestion; idempotent repeats do not re-ingest.
 */
import { expect } from 'chai';
import type { TestServer } from '../../helpers/harness.js';
import { startFakeIngester, type FakeIngester, type IngestRequestBody } from '../../helpers/fake-ingester.js';
import { capture, journal, node, nodeCount, startCaptureServer } from './helpers.js';

describe('capture: external ingester (SVC_INGEST_URL)', function () {
  let t: TestServer;
  let fake: FakeIngester;

  before(async () => {
    fake = await startFakeIngester();
    t = await startCaptureServer({ ingestUrl: fake.url });
    const res = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          { id: 'task-release', type: 'task', summary: 'Ship release 2.0', project: 'web' },
          { id: 'spec-auth', type: 'spec', summary: 'Auth spec' },
        ],
      },
    });
    expect(res.status, res.text).to.equal(200);
  });
  beforeEach(() => {
    fake.requests.length = 0;
    fake.answer = () => ({ body: { drafts: [] } });
  });
  after(async () => {
    await t.close();
    await fake.stop();
  });

  it('sends the text, context, source and the live registry; commits valid drafts stamped authored_via capture', async () => {
    fake.answer = () => ({
      body: {
        drafts: [
          {
            type: 'task',
            summary: 'Rotate the signing keys',
            body: 'Quarterly rotation.',
            edges: [{ type: 'relates-to', to: 'spec-auth' }],
            fields: { estimate: '2d' },
          },
          { type: 'decision', summary: 'Keys live in the HSM', title: 'HSM for keys' },
        ],
        warnings: ['guessed the type of line 2'],
      },
    });
    const res = await capture(t, {
      text: 'we should rotate keys; keys go to the HSM',
      context: { project: 'web', blocks: 'task-release', needed_by: '2031-01-15' },
      source: 'distill',
    });
    expect(res.status, res.text).to.equal(200);
    expect(fake.requests).to.have.length(1);
    const sent = fake.requests[0]!;
    expect(sent).to.include({ version: 1, org: t.org, text: 'we should rotate keys; keys go to the HSM', source: 'distill', attempt: 1 });
    expect(sent.context).to.deep.equal({ project: 'web', blocks: 'task-release', needed_by: '2031-01-15' });
    expect(sent.registry.node_types.filter((n) => n.capturable).map((n) => n.type)).to.include.members([
      'task',
      'issue',
      'dec',
      'spec',
      'question',
    ]);
    expect(sent.registry.edge_types.map((e) => e.type)).to.include('blocks');

    expect(res.body.status).to.equal('created');
    expect(res.body.ids).to.deep.equal(['task-rotate-the-signing-keys', 'dec-keys-live-in-the-hsm']);
    expect(res.body.warnings).to.include('ingester: guessed the type of line 2');
    const task = await node(t, 'task-rotate-the-signing-keys');
    expect(task.body).to.equal('Quarterly rotation.');
    expect(task.frontmatter).to.include({ authored_via: 'capture', project: 'web', estimate: '2d', status: 'open' });
    expect(task.frontmatter.edges).to.deep.equal([
      { type: 'relates-to', to: 'spec-auth' },
      { type: 'blocks', to: 'task-release', needed_by: '2031-01-15' },
    ]);
    expect((await node(t, 'dec-keys-live-in-the-hsm')).frontmatter).to.include({ title: 'HSM for keys', status: 'proposed' });
    expect(journal(t).at(-1)).to.deep.include({ status: 'created', ingester: 'external', attempts: 1, source: 'distill' });
  });

  it('invalid drafts are bounced once with the errors; corrected drafts are committed', async () => {
    fake.answer = (req: IngestRequestBody) =>
      req.attempt === 1
        ? {
            body: {
              drafts: [
                { type: 'chore', summary: 'Clean up' },
                { type: 'task', summary: '' },
                { type: 'task', summary: 'Edge to nowhere', edges: [{ type: 'blocks', to: 'task-ghost' }] },
              ],
            },
          }
        : { body: { drafts: [{ type: 'task', summary: 'Clean up the build cache' }] } };
    const res = await capture(t, { text: 'clean up stuff' });
    expect(res.status, res.text).to.equal(200);
    expect(fake.requests.map((r) => r.attempt)).to.deep.equal([1, 2]);
    const bounce = fake.requests[1]!;
    expect(bounce.text).to.equal('clean up stuff');
    expect(bounce.previous).to.deep.equal([
      { type: 'chore', summary: 'Clean up' },
      { type: 'task', summary: '' },
      { type: 'task', summary: 'Edge to nowhere', edges: [{ type: 'blocks', to: 'task-ghost' }] },
    ]);
    expect(bounce.errors!.map((e) => `${e.draft}:${e.field}`)).to.deep.equal(['0:type', '1:summary', '2:edges[0].to']);
    expect(res.body.status).to.equal('created');
    expect(res.body.ids).to.deep.equal(['task-clean-up-the-build-cache']);
    expect(res.body.warnings[0]).to.match(/failed validation \(3 error\(s\)\); bounced back once/);
    expect(journal(t).at(-1)).to.deep.include({ status: 'created', attempts: 2 });
  });

  it('drafts that fail validation twice leave the text preserved as a capture- node (pending)', async () => {
    fake.answer = () => ({
      body: {
        drafts: [
          { type: 'task', summary: 'x'.repeat(501) },
          { type: 'task', summary: 'Reserved', fields: { author: 'person-mallory' } },
        ],
      },
    });
    const before = await nodeCount(t);
    const res = await capture(t, { text: 'a very long rambling note', context: { project: 'web' } });
    expect(res.status, res.text).to.equal(200);
    expect(fake.requests).to.have.length(2);
    expect(res.body.status).to.equal('pending');
    expect(res.body.ids).to.deep.equal(['capture-a-very-long-rambling-note']);
    expect(res.body.warnings.join('\n')).to.include('draft 1 summary: at most 500 characters');
    expect(res.body.warnings.join('\n')).to.include('draft 2 fields.author');
    expect(await nodeCount(t)).to.equal(before + 1);
    const n = await node(t, 'capture-a-very-long-rambling-note');
    expect(n.body).to.equal('a very long rambling note');
    expect(n.frontmatter.capture_reason).to.equal('the drafts failed validation twice');
    expect(journal(t).at(-1)).to.deep.include({ status: 'pending', attempts: 2, reason: 'the drafts failed validation twice' });
  });

  it('inverse edge forms and terminal statuses are validation errors (a capture only writes new, open nodes)', async () => {
    fake.answer = () => ({
      body: {
        drafts: [
          { type: 'task', summary: 'Depends', edges: [{ type: 'depends-on', to: 'task-release' }] },
          { type: 'task', summary: 'Done already', status: 'done' },
        ],
      },
    });
    const res = await capture(t, { text: 'inverse and terminal' });
    expect(res.body.status).to.equal('pending');
    expect(fake.requests[1]!.errors!.map((e) => e.field)).to.deep.equal(['edges[0].type', 'status']);
  });

  it('an empty draft list means the text fits no schema: pending, no bounce', async () => {
    const res = await capture(t, { text: 'just musing' });
    expect(res.body.status).to.equal('pending');
    expect(fake.requests).to.have.length(1);
  });

  it('a missing blocks target (404) and a bad needed_by (422) are answered before any ingestion', async () => {
    const missing = await capture(t, { text: 'task: x', context: { project: 'web', blocks: 'task-ghost' } });
    expect(missing.status).to.equal(404);
    const bad = await capture(t, { text: 'task: x', context: { project: 'web', blocks: 'task-release', needed_by: 'next week' } });
    expect(bad.status).to.equal(422);
    expect(fake.requests).to.have.length(0);
  });

  it('an ingester answering HTTP 500 or garbage is 503 ingestion_unavailable and nothing changes', async () => {
    const before = await nodeCount(t);
    const head = (await t.api('GET', '/v1/status')).body.head;
    fake.answer = () => ({ status: 500, body: { error: 'model overloaded' } });
    const res = await capture(t, { text: 'task: Will not land' });
    expect(res.status).to.equal(503);
    expect(res.body.error.code).to.equal('ingestion_unavailable');
    expect(res.body.error.message).to.include('HTTP 500');
    fake.answer = () => ({ raw: '<html>oops</html>' });
    const garbage = await capture(t, { text: 'task: Will not land' });
    expect(garbage.status).to.equal(503);
    expect(await nodeCount(t)).to.equal(before);
    expect((await t.api('GET', '/v1/status')).body.head).to.equal(head);
    expect(journal(t).at(-1)).to.deep.include({ status: 'unavailable', ids: [], ingester: 'external' });
  });

  it('an ingester that fails on the bounce is 503 too, and nothing is written', async () => {
    const before = await nodeCount(t);
    fake.answer = (req: IngestRequestBody) =>
      req.attempt === 1 ? { body: { drafts: [{ type: 'chore', summary: 'x' }] } } : { status: 502, body: {} };
    const res = await capture(t, { text: 'bounce into a wall' });
    expect(res.status).to.equal(503);
    expect(res.body.error.code).to.equal('ingestion_unavailable');
    expect(fake.requests).to.have.length(2);
    expect(await nodeCount(t)).to.equal(before);
    expect(journal(t).at(-1)).to.deep.include({ status: 'unavailable', attempts: 2 });
  });

  it('a repeated idempotency key returns the original answer without calling the ingester again', async () => {
    fake.answer = () => ({ body: { drafts: [{ type: 'issue', summary: 'Flaky login test' }] } });
    const first = await capture(t, { text: 'the login test flakes', idempotency_key: 'ext-1' });
    const again = await capture(t, { text: 'the login test flakes', idempotency_key: 'ext-1' });
    expect(again.text).to.equal(first.text);
    expect(fake.requests).to.have.length(1);
  });

  it('an unreachable ingester is 503 on REST and the same envelope on the capture tool', async () => {
    const before = await nodeCount(t);
    await fake.stop();
    const res = await capture(t, { text: 'task: Nobody listens' });
    expect(res.status).to.equal(503);
    expect(res.body.error.code).to.equal('ingestion_unavailable');
    expect(res.body.error.message).to.include('unreachable');
    const client = await t.mcp();
    const tool = await t.tool(client, 'capture', { text: 'task: Nobody listens' });
    expect(tool.isError).to.equal(true);
    expect(tool.json.error.code).to.equal('ingestion_unavailable');
    expect(tool.text).to.equal(res.text);
    expect(await nodeCount(t)).to.equal(before);
  });
});
