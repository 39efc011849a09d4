/**
 * POST /v1/digest (docs/spec.md Writes rule 1), the query_graph and explore_graph tools, the
 * full-text index kept in step with commits, and corrections firing on digests.
 */
import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { searchOf } from '../../../plugins/capture/search.js';
import { startCaptureServer, tenantOf } from './helpers.js';

describe('capture: digest, query_graph and explore_graph', function () {
  let t: TestServer;
  let client: Client;

  const digest = (body: unknown) => t.api('POST', '/v1/digest', { body });

  before(async () => {
    t = await startCaptureServer();
    const res = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          { id: 'proj-payments', type: 'proj', summary: 'Payments program', title: 'Payments', aliases: ['pay'] },
          {
            id: 'repo-ledger',
            type: 'repo',
            summary: 'The ledger service',
            aliases: ['ledger-svc'],
            edges: [{ type: 'member-of', to: 'proj-payments' }],
          },
          { id: 'task-release', type: 'task', summary: 'Ship release 2.0', project: 'web' },
          {
            id: 'task-fix-login',
            type: 'task',
            summary: 'Fix the login redirect loop',
            project: 'web',
            body: 'SSO redirect loops after the session expires.',
            edges: [{ type: 'blocks', to: 'task-release' }],
          },
          { id: 'issue-login-timeout', type: 'issue', summary: 'Login times out on slow networks', project: 'web' },
          { id: 'spec-ledger', type: 'spec', summary: 'Ledger reconciliation spec', project: 'ledger' },
          {
            id: 'task-ledger-export',
            type: 'task',
            summary: 'Export ledger entries to CSV',
            project: 'ledger-svc',
            edges: [{ type: 'relates-to', to: 'spec-ledger' }],
          },
          { id: 'dec-use-postgres', type: 'dec', summary: 'Use Postgres for the ledger', project: 'payments' },
          { id: 'task-ledger-done', type: 'task', summary: 'Close the books for March', project: 'pay' },
          { id: 'task-ledger-blocked', type: 'task', summary: 'Blocked on auditors', project: 'payments', status: 'blocked' },
          { id: 'task-ledger-active', type: 'task', summary: 'Nightly reconciliation job', project: 'repo-ledger' },
          {
            id: 'task-ledger-waits',
            type: 'task',
            summary: 'Import bank statements',
            project: 'payments',
            edges: [{ type: 'blocked-by', to: 'task-ledger-export' }],
          },
          { id: 'issue-unscoped', type: 'issue', summary: 'Something with no project' },
        ].map((n) => (n.edges?.[0]?.type === 'blocked-by' ? { ...n, edges: [] } : n)),
      },
    });
    expect(res.status, res.text).to.equal(200);
    await t.api('POST', '/v1/nodes/task-ledger-export/edges', { body: { type: 'blocks', to: 'task-ledger-waits' } });
    expect((await t.api('POST', '/v1/nodes/task-ledger-done/status', { body: { status: 'done' } })).status).to.equal(200);
    expect((await t.api('POST', '/v1/nodes/task-ledger-active/status', { body: { status: 'in-progress' } })).status).to.equal(200);
    client = await t.mcp();
  });
  after(() => t.close());

  describe('POST /v1/digest', () => {
    it('a query answers {found: true, text} naming the matches best first, with their links', async () => {
      const res = await digest({ query: 'login redirect' });
      expect(res.status, res.text).to.equal(200);
      expect(Object.keys(res.body)).to.deep.equal(['found', 'text']);
      expect(res.body.found).to.equal(true);
      const text: string = res.body.text;
      expect(text).to.match(/^# Digest: "login redirect"\n2 matches, top similarity 1\n/);
      expect(text).to.include('## task-fix-login [task, open] Fix the login redirect loop\nsim 1 · project web');
      expect(text).to.include('- blocks -> task-release [task, open] Ship release 2.0');
      expect(text).to.include('## issue-login-timeout [issue, open] Login times out on slow networks\nsim 0.5');
      expect(text.indexOf('task-fix-login [')).to.be.lessThan(text.indexOf('issue-login-timeout ['));
      expect(text).to.not.include('SSO redirect loops');
    });

    it('found: false is a successful empty result; min_sim raises the bar', async () => {
      const none = await digest({ query: 'kubernetes autoscaler' });
      expect(none.status).to.equal(200);
      expect(none.body).to.deep.equal({ found: false, text: 'No node matches "kubernetes autoscaler" at min_sim 0.3.\n' });
      const strict = await digest({ query: 'login redirect', min_sim: 0.9 });
      expect(strict.body.text).to.include('task-fix-login [');
      expect(strict.body.text).to.not.include('issue-login-timeout [');
      const below = await digest({ query: 'login kubernetes autoscaler', min_sim: 0.5 });
      expect(below.body.found).to.equal(false);
      expect(below.body.text).to.include('the closest had similarity 0.333');
    });

    it('project scopes the matches: a grouping covers its member repos and their aliases', async () => {
      const scoped = await digest({ query: 'ledger', project: 'payments' });
      expect(scoped.body.found).to.equal(true);
      for (const id of ['spec-ledger', 'task-ledger-export', 'dec-use-postgres']) expect(scoped.body.text, id).to.include(`## ${id} [`);
      const alias = await digest({ query: 'ledger', project: 'pay' });
      expect(alias.body.text).to.equal(scoped.body.text.replace('(project payments)', '(project pay)'));
      const elsewhere = await digest({ query: 'ledger', project: 'web' });
      expect(elsewhere.body.found).to.equal(false);
    });

    it('root wins over query and digests the node with its neighbors', async () => {
      const res = await digest({ root: 'task-fix-login', query: 'kubernetes' });
      expect(res.status).to.equal(200);
      expect(res.body.found).to.equal(true);
      expect(res.body.text).to.match(
        /^# Digest of task-fix-login\n\n## task-fix-login \[task, open\] Fix the login redirect loop\nroot · project web\n/,
      );
      expect(res.body.text).to.include('- blocks -> task-release [task, open] Ship release 2.0');
      const inbound = await digest({ root: 'task-release' });
      expect(inbound.body.text).to.include('- blocked-by <- task-fix-login [task, open] Fix the login redirect loop');
    });

    it('an unknown root, a malformed project, a bad min_sim and a missing query are 422', async () => {
      for (const body of [
        { root: 'task-ghost' },
        { root: 'Bad Id' },
        { query: 'login', project: 'Not A Slug' },
        { query: 'login', min_sim: 2 },
        { query: 'login', min_sim: '0.5' },
        {},
        { query: '  ' },
      ]) {
        const res = await digest(body);
        expect(res.status, JSON.stringify(body)).to.equal(422);
        expect(res.body.error.code).to.equal('validation_failed');
      }
    });

    it('the index follows commits (new and edited nodes) without being rebuilt per request', async () => {
      const search = searchOf(tenantOf(t)) as unknown as { engine: object };
      const engine = search.engine;
      expect(engine, 'built by the earlier digests').to.be.an('object');
      expect((await digest({ query: 'kafka' })).body.found).to.equal(false);
      await t.api('POST', '/v1/nodes', {
        body: { nodes: [{ id: 'issue-consumer-lag', type: 'issue', summary: 'Kafka consumer lag spikes' }] },
      });
      expect((await digest({ query: 'kafka' })).body.text).to.include('## issue-consumer-lag [');
      const current = await t.api('GET', '/v1/nodes/issue-consumer-lag');
      const edit = await t.api('POST', '/v1/nodes', {
        body: {
          nodes: [
            {
              node: { id: 'issue-consumer-lag', type: 'issue', summary: 'RabbitMQ consumer lag spikes' },
              if_exists: 'update',
              revision: current.body.revision,
            },
          ],
        },
      });
      expect(edit.status, edit.text).to.equal(200);
      expect((await digest({ query: 'kafka' })).body.found).to.equal(false);
      expect((await digest({ query: 'rabbitmq' })).body.text).to.include('## issue-consumer-lag [');
      expect(search.engine).to.equal(engine);
    });
  });

  describe('query_graph', () => {
    it('answers the digest {found, text} plus node_ids and top_sim', async () => {
      for (const [body, args] of [
        [{ query: 'login redirect' }, { query: 'login redirect' }],
        [
          { query: 'ledger', project: 'payments', min_sim: 0.5 },
          { query: 'ledger', project: 'payments', min_sim: 0.5 },
        ],
        [{ root: 'task-fix-login' }, { root_id: 'task-fix-login' }],
        [{ query: 'kubernetes' }, { query: 'kubernetes' }],
      ] as Array<[Record<string, unknown>, Record<string, unknown>]>) {
        const rest = await digest(body);
        const tool = await t.tool(client, 'query_graph', args);
        expect(tool.isError, tool.text).to.equal(false);
        expect(JSON.stringify({ found: tool.json.found, text: tool.json.text }), JSON.stringify(args)).to.equal(rest.text);
      }
      const hit = await t.tool(client, 'query_graph', { query: 'login redirect' });
      expect(hit.json.node_ids).to.deep.equal(['task-fix-login', 'issue-login-timeout']);
      expect(hit.json.top_sim).to.equal(1);
      const miss = await t.tool(client, 'query_graph', { query: 'login kubernetes autoscaler', min_sim: 0.5 });
      expect(miss.json).to.deep.include({ found: false, node_ids: [], top_sim: 0.333 });
      const root = await t.tool(client, 'query_graph', { root_id: 'task-fix-login' });
      expect(root.json.node_ids).to.deep.equal(['task-fix-login', 'task-release']);
    });

    it('mode full adds the bodies; a bad mode or unknown root_id is a 422 tool error', async () => {
      const full = await t.tool(client, 'query_graph', { query: 'login redirect', mode: 'full' });
      expect(full.json.text).to.include('SSO redirect loops after the session expires.');
      const unknown = await t.tool(client, 'query_graph', { root_id: 'task-ghost' });
      expect(unknown.isError).to.equal(true);
      expect(unknown.json.error.code).to.equal('validation_failed');
      const mode = await t.tool(client, 'query_graph', { query: 'x', mode: 'summary' });
      expect(mode.isError).to.equal(true);
    });
  });

  describe('explore_graph', () => {
    it('no arguments: the programs overview, proj- groupings with progress over their work nodes', async () => {
      const res = await t.tool(client, 'explore_graph', { include_text: true });
      expect(res.isError, res.text).to.equal(false);
      expect(res.json.mode).to.equal('programs');
      expect(res.json.count).to.equal(1);
      const [payments] = res.json.programs;
      expect(payments).to.deep.include({ id: 'proj-payments', title: 'Payments', status: 'active', repos: ['repo-ledger'] });
      expect(payments.progress).to.deep.equal({
        total: 6,
        done: 1,
        active: 1,
        blocked: 2,
        open: 2,
        pct: 17,
        statuses: { blocked: 1, done: 1, 'in-progress': 1, open: 2, proposed: 1 },
      });
      expect(res.json.unscoped.total).to.be.at.least(4);
      expect(res.json.text).to.include('proj-payments [active] Payments: 1/6 done (17%), 1 active, 2 blocked, 2 open');
      // lean by default: the text copy only when asked
      const lean = await t.tool(client, 'explore_graph', {});
      expect(lean.json).to.not.have.property('text');
      expect(lean.json.programs).to.deep.equal(res.json.programs);
    });

    it('program progress uses the same phases as analytics: an in-progress node with an open blocker counts as active', async () => {
      const add = await t.api('POST', '/v1/nodes/task-ledger-export/edges', { body: { type: 'blocks', to: 'task-ledger-active' } });
      expect(add.status, add.text).to.equal(200);
      try {
        const res = await t.tool(client, 'explore_graph', {});
        const [payments] = res.json.programs;
        expect(payments.progress).to.include({ total: 6, done: 1, active: 1, blocked: 2, open: 2 });
      } finally {
        const del = await t.api('DELETE', '/v1/nodes/task-ledger-export/edges', { body: { type: 'blocks', to: 'task-ledger-active' } });
        expect(del.status, del.text).to.equal(200);
      }
    });

    it('root_id walks edges both ways to depth 1 or 2', async () => {
      const one = await t.tool(client, 'explore_graph', { root_id: 'spec-ledger' });
      expect(one.json.mode).to.equal('neighborhood');
      expect(one.json.nodes.map((n: { id: string; distance: number }) => `${n.id}@${n.distance}`)).to.deep.equal([
        'spec-ledger@0',
        'task-ledger-export@1',
      ]);
      expect(one.json.edges).to.deep.equal([{ from: 'task-ledger-export', type: 'relates-to', to: 'spec-ledger' }]);
      const two = await t.tool(client, 'explore_graph', { root_id: 'spec-ledger', depth: 2 });
      expect(two.json.nodes.map((n: { id: string }) => n.id)).to.deep.equal(['spec-ledger', 'task-ledger-export', 'task-ledger-waits']);
      expect(two.json.nodes[2]).to.include({ distance: 2, done: false });
      const missing = await t.tool(client, 'explore_graph', { root_id: 'task-ghost' });
      expect(missing.isError).to.equal(true);
      expect(missing.json.error.code).to.equal('not_found');
      const deep = await t.tool(client, 'explore_graph', { root_id: 'spec-ledger', depth: 3 });
      expect(deep.isError).to.equal(true);
      expect(deep.json.error.code).to.equal('validation_failed');
    });

    it('query: full-text matches with similarity', async () => {
      const res = await t.tool(client, 'explore_graph', { query: 'ledger' });
      expect(res.json.mode).to.equal('search');
      expect(res.json.results.map((r: { id: string }) => r.id)).to.include.members([
        'spec-ledger',
        'task-ledger-export',
        'dec-use-postgres',
      ]);
      expect(res.json.results[0].sim).to.equal(1);
    });
  });

  describe('corrections fire on digests', () => {
    it('global guidance, node-target exclusions, project-target pins (alias-resolved)', async () => {
      const bob = await addPerson(t, 'Bob');
      const mk = async (body: unknown) => {
        const res = await t.api('POST', '/v1/corrections', { body, token: bob.token });
        expect(res.status, res.text).to.equal(201);
        return res.body.id as string;
      };
      const globalId = await mk({ target: 'global', guidance: 'Prefer specs over chat logs.' });
      const excludeId = await mk({ target: 'task-fix-login', exclude: ['issue-login-timeout'] });
      const pinId = await mk({ target: 'project:pay', pin: ['task-release'], guidance: 'Payments ships with the release train.' });

      const login = (await digest({ query: 'login' })).body.text as string;
      expect(login).to.include('## task-fix-login [');
      expect(login, 'excluded because task-fix-login matched').to.not.include('## issue-login-timeout [');
      expect(login).to.include(`## Guidance\n- ${globalId} (global): Prefer specs over chat logs.`);
      expect(login).to.not.include(pinId);
      void excludeId;

      const timeout = (await digest({ query: 'timeout slow networks' })).body.text as string;
      expect(timeout, 'the correction only fires when its target is a seed').to.include('## issue-login-timeout [');

      const ledger = (await digest({ query: 'ledger', project: 'payments' })).body.text as string;
      expect(ledger).to.include(`## task-release [task, open] Ship release 2.0\npinned by ${pinId}`);
      expect(ledger).to.include(`- ${pinId} (project:pay): Payments ships with the release train.`);
      expect((await digest({ query: 'ledger' })).body.text).to.not.include(pinId);

      const rootDigest = (await digest({ root: 'task-fix-login' })).body.text as string;
      expect(rootDigest).to.include(globalId);
    });
  });
});
