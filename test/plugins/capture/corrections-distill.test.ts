/**
 * POST /v1/corrections (docs/spec.md Writes rule 11) and POST /v1/distill/report (rule 10).
 */
import { expect } from 'chai';
import type { TestServer } from '../../helpers/harness.js';
import { unboundToken } from '../leases/helpers.js';
import { journal, node, startCaptureServer } from './helpers.js';

describe('capture: corrections and distill reports', function () {
  let t: TestServer;

  before(async () => {
    t = await startCaptureServer();
    const res = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          { id: 'proj-payments', type: 'proj', summary: 'Payments program', aliases: ['pay'] },
          { id: 'spec-ledger', type: 'spec', summary: 'Ledger spec', project: 'payments' },
          { id: 'task-old-ledger', type: 'task', summary: 'Old ledger task', project: 'payments' },
        ],
      },
    });
    expect(res.status, res.text).to.equal(200);
  });
  after(() => t.close());

  const correct = (body: unknown, token?: string) => t.api('POST', '/v1/corrections', { body, token });

  describe('POST /v1/corrections', () => {
    it('201 {status, id, revision, warnings} with a server-generated id; a client id is ignored', async () => {
      const res = await correct({
        target: 'spec-ledger',
        pin: ['task-old-ledger'],
        guidance: 'The ledger spec supersedes the wiki page.',
        title: 'Ledger context',
        id: 'correction-mine',
      });
      expect(res.status, res.text).to.equal(201);
      expect(Object.keys(res.body)).to.deep.equal(['status', 'id', 'revision', 'warnings']);
      expect(res.body).to.include({ status: 'created', id: 'correction-ledger-context' });
      expect(res.body.revision).to.match(/^[0-9a-f]{40}$/);
      expect(res.body.warnings).to.deep.equal([]);
      const n = await node(t, 'correction-ledger-context');
      expect(n.revision).to.equal(res.body.revision);
      expect(n.frontmatter).to.include({
        type: 'correction',
        status: 'active',
        target: 'spec-ledger',
        guidance: 'The ledger spec supersedes the wiki page.',
        title: 'Ledger context',
        summary: 'Ledger context',
        author: t.adminPerson,
        authored_via: 'rest',
      });
      expect(n.frontmatter.pin).to.deep.equal(['task-old-ledger']);
      expect((await t.api('GET', '/v1/nodes/correction-mine')).status).to.equal(404);
      const again = await correct({ target: 'spec-ledger', guidance: 'more', title: 'Ledger context' });
      expect(again.body.id).to.equal('correction-ledger-context-2');
    });

    it('targets: project:<slug> and global; an unknown project slug is accepted with a warning', async () => {
      const project = await correct({ target: 'project:pay', exclude: ['task-old-ledger'] });
      expect(project.status, project.text).to.equal(201);
      expect(project.body.id).to.equal('correction-project-pay');
      expect(project.body.warnings).to.deep.equal([]);
      expect((await node(t, project.body.id)).frontmatter).to.deep.include({
        target: 'project:pay',
        exclude: ['task-old-ledger'],
        summary: 'exclude task-old-ledger',
      });
      const global = await correct({ target: 'global', guidance: 'Prefer specs over chat logs.' });
      expect(global.status).to.equal(201);
      expect(global.body.id).to.equal('correction-prefer-specs-over-chat-logs');
      const unknown = await correct({ target: 'project:nowhere', guidance: 'x' });
      expect(unknown.status).to.equal(201);
      expect(unknown.body.warnings[0]).to.match(/project nowhere matches no project node/);
    });

    it('a node-id target must exist (404); malformed targets and ids are 422; pins must exist', async () => {
      const missing = await correct({ target: 'spec-ghost', guidance: 'x' });
      expect(missing.status).to.equal(404);
      expect(missing.body.error.code).to.equal('not_found');
      const pinMissing = await correct({ target: 'global', pin: ['task-ghost'] });
      expect(pinMissing.status).to.equal(404);
      for (const body of [
        {},
        { target: 'Spec Ledger', guidance: 'x' },
        { target: 'project:Not Slug', guidance: 'x' },
        { target: 'global' },
        { target: 'global', pin: 'task-old-ledger' },
        { target: 'global', pin: ['task-old-ledger'], exclude: ['task-old-ledger'] },
        { target: 'global', guidance: 'x', title: 'two\nlines' },
        { target: 'global', guidance: 42 },
      ]) {
        const res = await correct(body);
        expect(res.status, JSON.stringify(body)).to.equal(422);
        expect(res.body.error.code).to.equal('validation_failed');
      }
      expect((await correct({ target: 'global', guidance: 'x' }, await unboundToken(t))).status).to.equal(403);
    });
  });

  describe('POST /v1/distill/report', () => {
    it('answers {status: "reported"}, writes only the journal, zero-fact sweeps included', async () => {
      const head = (await t.api('GET', '/v1/status')).body.head;
      const res = await t.api('POST', '/v1/distill/report', {
        body: { facts: 7, captured: 3, spooled: 2, rejected: 2, project: 'payments', session: 'sess-9' },
      });
      expect(res.status, res.text).to.equal(200);
      expect(res.text).to.equal('{"status":"reported"}');
      const zero = await t.api('POST', '/v1/distill/report', { body: { facts: 0 } });
      expect(zero.text).to.equal('{"status":"reported"}');
      expect((await t.api('GET', '/v1/status')).body.head).to.equal(head);
      const reports = journal(t).filter((e) => e.kind === 'distill_report');
      expect(reports).to.have.length(2);
      expect(reports[0]).to.deep.include({
        author: t.adminPerson,
        source: 'distill',
        status: 'reported',
        ids: [],
        project: 'payments',
        session: 'sess-9',
        facts: 7,
        captured: 3,
        spooled: 2,
        rejected: 2,
      });
      expect(reports[1]).to.deep.include({ facts: 0, captured: 0, spooled: 0, rejected: 0, project: null });
    });

    it('bad counts, slugs and sessions are 422; an unbound token is 403', async () => {
      for (const body of [
        {},
        { facts: -1 },
        { facts: 1.5 },
        { facts: '3' },
        { facts: 1, captured: -2 },
        { facts: 1, project: 'Bad Slug' },
        { facts: 1, session: 'has space' },
      ]) {
        const res = await t.api('POST', '/v1/distill/report', { body });
        expect(res.status, JSON.stringify(body)).to.equal(422);
      }
      expect((await t.api('POST', '/v1/distill/report', { body: { facts: 1 }, token: await unboundToken(t) })).status).to.equal(403);
    });
  });
});
