/**
 * Issue 10 item 5: a write never drops client data without saying so. A supplied priority,
 * readiness, author (and the other stamped fields) or an unknown frontmatter field produces a
 * warning, in REST and MCP alike; a put_node call in which every entry failed is an MCP result
 * with isError: true (REST keeps docs/spec.md's 207).
 */
import { expect } from 'chai';
import { corePlugin } from '../../../plugins/core/index.js';
import { md, startTestServer, type TestServer } from '../../helpers/harness.js';

describe('core: puts warn about every field they discard or ignore', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ plugins: [corePlugin] });
  });
  after(async () => t.close());

  it('priority, readiness, author and an unknown field each get a warning; the stored values are kept', async () => {
    const res = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          md({
            id: 'task-warned',
            type: 'task',
            summary: 'Warned',
            priority: 'p1',
            readiness: 'agent',
            author: 'mallory',
            assignee: 'bob',
          }),
        ],
      },
    });
    expect(res.status, res.text).to.equal(200);
    const warnings: string[] = res.body.results[0].warnings;
    expect(
      warnings.some((w) => /^ignored priority: .*\/v1\/nodes\/task-warned\/priority/.test(w)),
      warnings.join('\n'),
    ).to.equal(true);
    expect(warnings.some((w) => /^ignored readiness: /.test(w))).to.equal(true);
    expect(warnings.some((w) => /^ignored author: the server stamps it/.test(w))).to.equal(true);
    expect(warnings.some((w) => /^unknown field 'assignee' kept as-is/.test(w))).to.equal(true);
    expect(warnings).to.have.length(4);
    const node = (await t.api('GET', '/v1/nodes/task-warned')).body;
    expect(node.frontmatter).to.not.have.property('priority');
    expect(node.frontmatter).to.not.have.property('readiness');
    expect(node.frontmatter.author).to.equal(t.adminPerson);
    expect(node.frontmatter.assignee).to.equal('bob');
  });

  it('a read sent back unchanged gets no warnings about its stamped fields', async () => {
    await t.api('POST', '/v1/nodes/task-warned/priority', { body: { priority: 'p2' } });
    const read = (await t.api('GET', '/v1/nodes/task-warned')).body;
    const { assignee: _a, ...fm } = read.frontmatter;
    const res = await t.api('POST', '/v1/nodes', {
      body: { nodes: [{ node: md({ ...fm, summary: 'Warned, edited' }), if_exists: 'update', revision: read.revision }] },
    });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.results[0]).to.include({ status: 'updated' });
    // no stamp is mentioned; the one field left out is named as removed (a replace never drops data silently)
    expect(res.body.results[0].warnings).to.deep.equal([
      'removed field assignee (was bob)',
      'a replace keeps only what it sends; to change named fields only use patch_node (PATCH /v1/nodes/task-warned)',
    ]);
    expect((await t.api('GET', '/v1/nodes/task-warned')).body.frontmatter.priority).to.equal('p2');
  });

  it('MCP put_node carries the same warnings in the same bytes', async () => {
    const client = await t.mcp();
    const entry = { nodes: [md({ id: 'task-warned-mcp', type: 'task', summary: 'Warned', priority: 'p3' })] };
    const viaTool = await t.tool(client, 'put_node', entry);
    expect(viaTool.isError).to.equal(false);
    expect(viaTool.json.results[0].warnings[0]).to.match(/^ignored priority: /);
    const viaRest = await t.api('POST', '/v1/nodes', {
      body: { nodes: [md({ id: 'task-warned-rest', type: 'task', summary: 'Warned', priority: 'p3' })] },
    });
    expect(viaRest.body.results[0].warnings).to.deep.equal(
      viaTool.json.results[0].warnings.map((w: string) => w.replace('task-warned-mcp', 'task-warned-rest')),
    );
  });

  it('a put_node in which every entry failed is isError over MCP; a partial failure is not; REST answers 207 for both', async () => {
    const client = await t.mcp();
    const allBad = { nodes: [md({ id: 'task-bad-1', type: 'task', summary: '' }), md({ id: 'nope-bad-2', type: 'task', summary: 'x' })] };
    const viaTool = await t.tool(client, 'put_node', allBad);
    expect(viaTool.isError).to.equal(true);
    expect(viaTool.json).to.include({ count: 2, failed: 2 });
    const viaRest = await t.api('POST', '/v1/nodes', { body: allBad });
    expect(viaRest.status).to.equal(207);
    expect(viaRest.text).to.equal(viaTool.text);
    const partial = await t.tool(client, 'put_node', {
      nodes: [md({ id: 'task-good-3', type: 'task', summary: 'fine' }), md({ id: 'task-bad-4', type: 'task', summary: '' })],
    });
    expect(partial.isError).to.equal(false);
    expect(partial.json).to.include({ count: 2, failed: 1 });
  });
});
