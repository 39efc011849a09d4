import { expect } from 'chai';
import { allPlugins } from '../../scripts/plugins.js';
import { md, startTestServer, type TestServer } from '../helpers/harness.js';
import { createAgent, createPerson, sessionToken, standingToken } from '../plugins/identity/helpers.js';

/**
 * The self-approval ban (schema- and wf- nodes) is the kernel's: whoever proposed the current
 * content cannot activate it, neither through the status route nor around it (a full put, a
 * batch update, an import), nor through one of their agents or sessions.
 */
describe('kernel: self-approval ban on every write path', () => {
  let t: TestServer;
  let author: { id: string; token: string; email: string };
  let reviewer: { id: string; token: string; email: string };
  let third: { id: string; token: string; email: string };
  let agentSession: string;
  let agentStanding: string;

  before(async () => {
    t = await startTestServer({ plugins: allPlugins });
    author = await createPerson(t, 'Author');
    reviewer = await createPerson(t, 'Reviewer');
    third = await createPerson(t, 'Third');
    const agent = await createAgent(t, author.token, 'Author Bot');
    agentSession = await sessionToken(t, author.token, agent, { session: 'run-1' });
    agentStanding = (await standingToken(t, author.token, agent)).token;
  });
  after(async () => t.close());

  const wf = (id: string, extra: Record<string, unknown> = {}) =>
    md({ id, type: 'wf', summary: `workflow ${id}`, steps: [{ id: 'build' }], ...extra });
  async function propose(id: string, token: string): Promise<void> {
    const res = await t.api('POST', '/v1/nodes', { token, body: { nodes: [wf(id)] } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.results[0].status).to.equal('created');
  }
  async function node(id: string) {
    return (await t.api('GET', `/v1/nodes/${id}`)).body;
  }
  function expectDenied(res: { status: number; body: any; text: string }): void {
    expect(res.status, res.text).to.equal(409);
    expect(res.body.error.code).to.equal('transition_denied');
  }
  async function fullPut(id: string, token: string, edit: Record<string, unknown>) {
    const current = await node(id);
    return t.api('POST', '/v1/nodes', {
      token,
      body: { nodes: [{ node: md({ ...current.frontmatter, ...edit }, current.body), if_exists: 'update', revision: current.revision }] },
    });
  }

  it('the proposer is recorded by the server (a client value is ignored)', async () => {
    const res = await t.api('POST', '/v1/nodes', {
      token: author.token,
      body: { nodes: [wf('wf-recorded', { proposed_by: [reviewer.id] })] },
    });
    expect(res.status, res.text).to.equal(200);
    expect((await node('wf-recorded')).frontmatter.proposed_by).to.deep.equal([author.id]);
  });

  it("the proposer's status route, per-session agent token and standing agent token are all refused", async () => {
    await propose('wf-agents', author.token);
    expectDenied(await t.api('POST', '/v1/nodes/wf-agents/status', { token: author.token, body: { status: 'active' } }));
    expectDenied(await t.api('POST', '/v1/nodes/wf-agents/status', { token: agentSession, body: { status: 'active' } }));
    expectDenied(await t.api('POST', '/v1/nodes/wf-agents/status', { token: agentStanding, body: { status: 'active' } }));
    const client = await t.mcp(agentSession);
    const viaTool = await t.tool(client, 'set_status', { id: 'wf-agents', status: 'active' });
    expect(viaTool.isError).to.equal(true);
    expect(viaTool.json.error.code).to.equal('transition_denied');
    expect((await node('wf-agents')).frontmatter.status).to.equal('proposed');
    const ok = await t.api('POST', '/v1/nodes/wf-agents/status', { token: reviewer.token, body: { status: 'active' } });
    expect(ok.status, ok.text).to.equal(200);
  });

  it("an agent's proposal counts as its owner's: the owner cannot activate it", async () => {
    const res = await t.api('POST', '/v1/nodes', { token: agentSession, body: { nodes: [wf('wf-by-agent')] } });
    expect(res.status, res.text).to.equal(200);
    expect((await node('wf-by-agent')).frontmatter.proposed_by).to.deep.equal([author.id]);
    expectDenied(await t.api('POST', '/v1/nodes/wf-by-agent/status', { token: author.token, body: { status: 'active' } }));
  });

  it('around the status route: a full put with status active, and a batch update, are refused per entry', async () => {
    await propose('wf-put', author.token);
    const put = await fullPut('wf-put', author.token, { status: 'active' });
    expect(put.status, put.text).to.equal(207);
    expect(put.body.results[0].error.code).to.equal('transition_denied');
    expect(put.body.results[0].error.details.gate).to.equal('self-approval');
    const viaAgent = await fullPut('wf-put', agentStanding, { status: 'active' });
    expect(viaAgent.body.results[0].error.code).to.equal('transition_denied');
    const client = await t.mcp(author.token);
    const current = await node('wf-put');
    const tool = await t.tool(client, 'put_node', {
      nodes: [{ node: md({ ...current.frontmatter, status: 'active' }), if_exists: 'update', revision: current.revision }],
    });
    expect(tool.isError).to.equal(true);
    expect(tool.json.results[0].error.code).to.equal('transition_denied');
    expect((await node('wf-put')).frontmatter.status).to.equal('proposed');
  });

  it("another person's touch does not launder a proposal: the proposer stays banned; the toucher becomes a proposer too", async () => {
    await propose('wf-launder', author.token);
    // the third person edits the proposal: they are its last author now
    const touched = await fullPut('wf-launder', third.token, { title: 'Touched up' });
    expect(touched.status, touched.text).to.equal(200);
    expect((await node('wf-launder')).frontmatter.proposed_by).to.deep.equal([author.id, third.id]);
    expectDenied(await t.api('POST', '/v1/nodes/wf-launder/status', { token: author.token, body: { status: 'active' } }));
    expectDenied(await t.api('POST', '/v1/nodes/wf-launder/status', { token: third.token, body: { status: 'active' } }));
    // an edge written onto the proposal by the author is a change of its content too
    const edge = await t.api('POST', '/v1/nodes/wf-launder/edges', { token: author.token, body: { type: 'relates-to', to: 'proj-root' } });
    expect(edge.status, edge.text).to.equal(200);
    expectDenied(await t.api('POST', '/v1/nodes/wf-launder/status', { token: author.token, body: { status: 'active' } }));
    const ok = await t.api('POST', '/v1/nodes/wf-launder/status', { token: reviewer.token, body: { status: 'active' } });
    expect(ok.status, ok.text).to.equal(200);
  });

  it('a reviewer cannot change and activate in one write (the change would approve itself)', async () => {
    await propose('wf-sneak', author.token);
    const res = await fullPut('wf-sneak', reviewer.token, {
      status: 'active',
      steps: [{ id: 'build' }, { id: 'deploy', needs: ['build'] }],
    });
    expect(res.status, res.text).to.equal(207);
    expect(res.body.results[0].error.code).to.equal('transition_denied');
    expect((await node('wf-sneak')).frontmatter.status).to.equal('proposed');
  });

  it('schema- nodes: the same ban', async () => {
    const res = await t.api('POST', '/v1/nodes', {
      token: author.token,
      body: { nodes: [md({ id: 'schema-gate', type: 'schema', summary: 'a gate', applies_to: 'task' })] },
    });
    expect(res.status, res.text).to.equal(200);
    expectDenied(await t.api('POST', '/v1/nodes/schema-gate/status', { token: agentStanding, body: { status: 'active' } }));
    expect((await fullPut('schema-gate', author.token, { status: 'active' })).body.results[0].error.code).to.equal('transition_denied');
    const ok = await t.api('POST', '/v1/nodes/schema-gate/status', { token: reviewer.token, body: { status: 'active' } });
    expect(ok.status, ok.text).to.equal(200);
  });

  it('an import cannot activate what the importing admin proposed', async () => {
    const item = { source_id: 'W-1', type: 'wf', title: 'Imported flow', status: 'active', fields: { steps: [{ id: 'build' }] } };
    const first = await t.api('POST', '/v1/import', { body: { source: 'tracker', items: [item] } });
    expect(first.status, first.text).to.equal(200);
    const id = first.body.results[0].id as string;
    // created proposed (forced) by the admin
    expect((await node(id)).frontmatter.status).to.equal('proposed');
    expect((await node(id)).frontmatter.proposed_by).to.deep.equal([t.adminPerson]);
    // a second import of the same active item is an activation by the proposer: refused
    const second = await t.api('POST', '/v1/import', { body: { source: 'tracker', items: [{ ...item, title: 'Imported flow' }] } });
    expect(second.status, second.text).to.equal(200);
    expect(second.body.results[0].status).to.equal('refused');
    expect(second.body.results[0].code).to.equal('transition_denied');
    expect((await node(id)).frontmatter.status).to.equal('proposed');
  });

  it('an active node changed by its editor is proposed again, and that editor cannot re-activate it', async () => {
    await propose('wf-edit', author.token);
    expect((await t.api('POST', '/v1/nodes/wf-edit/status', { token: reviewer.token, body: { status: 'active' } })).status).to.equal(200);
    const edit = await fullPut('wf-edit', third.token, { title: 'Edited while active' });
    expect(edit.status, edit.text).to.equal(200);
    const after = (await node('wf-edit')).frontmatter;
    expect(after.status).to.equal('proposed');
    expect(after.proposed_by).to.deep.equal([third.id]);
    expectDenied(await t.api('POST', '/v1/nodes/wf-edit/status', { token: third.token, body: { status: 'active' } }));
    expect((await t.api('POST', '/v1/nodes/wf-edit/status', { token: author.token, body: { status: 'active' } })).status).to.equal(200);
  });
});
