/**
 * An agent's whole day over MCP tools only (docs/decisions.md, "tools"): a lead sets up a small
 * project, triages it and gets an agent a token; the agent picks up work, claims it, asks a
 * question the lead answers, finishes, and works a workflow step. No REST call is made once
 * the server is up (the harness's REST helper throws), so every operation in the story must
 * exist as a tool.
 */
import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { addPerson, md, startTestServer, type TestServer } from '../helpers/harness.js';

describe('MCP: an agent day with tools only', function () {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(async () => t.close());

  it('set-up, triage, token, claim, question, answer, done and a workflow step, without REST', async () => {
    const bob = await addPerson(t, 'Bob Builder'); // a colleague (direct write: test set-up, not REST)
    t.api = async () => {
      throw new Error('a REST call in an MCP-only day');
    };
    const lead = await t.mcp();
    const call = async (client: Client, name: string, args: Record<string, unknown> = {}) => {
      const res = await t.tool(client, name, args);
      expect(res.isError, `${name}: ${res.text}`).to.equal(false);
      return res.json;
    };

    // who am I
    const me = await call(lead, 'me');
    expect(me).to.include({ person: t.adminPerson, is_admin: true, org: t.org });

    // project set-up in one put_node, edges in frontmatter
    const put = await call(lead, 'put_node', {
      nodes: [
        md({ id: 'task-login-form', summary: 'Build the login form', edges: [{ type: 'blocks', to: 'task-release' }] }),
        md({ id: 'task-login-api', summary: 'Build the login API' }),
        md({ id: 'task-release', summary: 'Release the login feature' }),
      ],
    });
    expect(put.failed).to.equal(0);
    // batch edges and priorities, then readiness
    const edges = await call(lead, 'add_edges', {
      items: [
        { id: 'task-login-api', type: 'blocks', to: 'task-release' },
        { id: 'task-login-api', type: 'relates-to', to: 'task-login-form' },
      ],
    });
    expect(edges).to.include({ ok: true, status: 'applied', count: 2 });
    const prio = await call(lead, 'set_priorities', {
      items: [
        { id: 'task-login-form', priority: 'p1' },
        { id: 'task-login-api', priority: 'p2' },
        { id: 'task-release', priority: 'p3' },
      ],
    });
    expect(prio).to.include({ ok: true, count: 3 });
    for (const id of ['task-login-form', 'task-login-api'])
      expect((await call(lead, 'set_readiness', { id, readiness: 'agent' })).status).to.equal('updated');

    // the lead gets an agent a token over MCP
    const agentNode = await call(lead, 'create_agent', { label: 'Login Bot' });
    const minted = await call(lead, 'mint_agent_token', { id: agentNode.id, session: 'day-1' });
    expect(minted.token).to.be.a('string');
    expect((await call(lead, 'list_agents')).agents.map((a: { id: string }) => a.id)).to.include(agentNode.id);
    const agent = await t.mcp(minted.token);
    expect(await call(agent, 'me')).to.include({ agent: agentNode.id, session: 'day-1', person: t.adminPerson });

    // pick up work: agent-ready items only
    const queue = await call(agent, 'show_queue', { readiness: 'agent' });
    expect(queue).to.not.have.property('policy');
    const first = queue.items[0];
    expect(first.id).to.equal('task-login-form');
    const claimed = await call(agent, 'claim', { id: first.id });
    expect(claimed.status).to.equal('claimed');
    const node = await call(agent, 'get_node', { id: first.id });
    expect(node).to.not.have.property('markdown');
    expect(node.frontmatter.edges).to.deep.include({ type: 'blocks', to: 'task-release' });

    // a question, routed to the lead, answered in one call
    const asked = await call(agent, 'ask_question', { text: 'Should the login form keep the legacy SSO button?', mentions: [first.id] });
    const leadQueue = await call(lead, 'show_queue', {});
    expect(leadQueue.questions.map((q: { id: string }) => q.id)).to.include(asked.id);
    const answered = await call(lead, 'answer_question', { id: asked.id, summary: 'Keep it until the SSO migration ends.' });
    expect(answered).to.include({ status: 'created', question: asked.id, question_status: 'answered' });
    const question = await call(agent, 'get_node', { id: asked.id });
    expect(question.frontmatter.status).to.equal('answered');
    expect(question.resolution).to.include({ by: answered.id, edge: 'answers' });

    // done, and the lease is gone
    expect((await call(agent, 'set_status', { id: first.id, status: 'done' })).status).to.equal('updated');
    await call(agent, 'release', {});

    // a workflow step: defined by the lead, activated by Bob, run by the lead, worked by the agent
    await call(lead, 'put_node', {
      nodes: [{ id: 'wf-ship', type: 'wf', title: 'Ship', summary: 'Ship the login feature', steps: [{ id: 'build' }] }],
    });
    const bobClient = await t.mcp(bob.token);
    await call(bobClient, 'set_status', { id: 'wf-ship', status: 'active' });
    const run = await call(lead, 'run_workflow', { id: 'wf-ship' });
    const work = await call(agent, 'list_work');
    const step = work.work.find((w: { run_id: string }) => w.run_id === run.run_id);
    expect(step).to.include({ step: 'build' });
    const stepClaim = await call(agent, 'claim_step', { id: run.run_id, sid: 'build' });
    const done = await call(agent, 'complete_step', {
      id: run.run_id,
      sid: 'build',
      lease: stepClaim.lease.lease_id,
      status: 'succeeded',
      log: 'built',
    });
    expect(done).to.include({ status: 'succeeded', replayed: false });
    const finished = await call(agent, 'get_run', { id: run.run_id });
    expect(finished.status).to.equal(done.run_status);
    expect(finished.state.steps.build.state ?? finished.state.steps.build.status).to.equal('succeeded');
  });
});
