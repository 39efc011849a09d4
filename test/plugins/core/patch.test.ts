/**
 * Updates that cannot drop data silently: patch_node (PATCH /v1/nodes/{id}, tool patch_node) changes only what it names, with the revision echo;
 * a full replace (put_node if_exists update) names every field, edge and body it removed; and
 * one completion rule for put_node and set_status (docs/spec.md "Create of a node already in a
 * terminal status").
 */
import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { corePlugin } from '../../../plugins/core/index.js';
import { md, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';

const STAMPS = new Set(['author', 'authored_via', 'authored_by_agent', 'session', 'updated']);

/** The keys whose values differ between two frontmatters (stamps aside). */
function changedKeys(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys].filter((k) => !STAMPS.has(k) && JSON.stringify(before[k]) !== JSON.stringify(after[k])).sort();
}

describe('core: patch_node and replace warnings', () => {
  let t: TestServer;
  let client: Client;
  before(async () => {
    t = await startTestServer({ plugins: [corePlugin] });
    client = await t.mcp();
    await putNodes(t, [
      { id: 'task-card-api', type: 'task', summary: 'Card API' },
      { id: 'task-release', type: 'task', summary: 'Release' },
    ]);
  });
  after(async () => t.close());

  const read = async (id: string) => (await t.api('GET', `/v1/nodes/${id}`)).body;

  async function checkoutTask(id: string) {
    await putNodes(t, [
      md(
        {
          id,
          type: 'task',
          summary: 'Checkout flow',
          project: 'checkout',
          title: 'Checkout',
          edges: [
            { type: 'blocks', to: 'task-card-api', needed_by: '2026-01-31' },
            { type: 'relates-to', to: 'task-release' },
          ],
        },
        'Steps:\n- one\n',
      ),
    ]);
    return read(id);
  }

  it('a replace that drops an edge, a field and the body names each removal in warnings (REST)', async () => {
    const before = await checkoutTask('task-replace-rest');
    const res = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          {
            node: md({ id: 'task-replace-rest', summary: 'Checkout flow, v2', edges: [{ type: 'relates-to', to: 'task-release' }] }),
            if_exists: 'update',
            revision: before.revision,
          },
        ],
      },
    });
    expect(res.status, res.text).to.equal(200);
    const warnings: string[] = res.body.results[0].warnings;
    expect(warnings).to.include('removed edge blocks -> task-card-api');
    expect(warnings).to.include('removed field project (was checkout)');
    expect(warnings).to.include('removed field title (was Checkout)');
    expect(warnings, warnings.join('\n')).to.include('removed body (was 13 bytes)');
    expect(warnings.some((w) => w.includes('patch_node'))).to.equal(true);
    // stamps are not removals: author and revision are re-stamped, never listed
    expect(warnings.some((w) => /author|revision|updated|created/.test(w.split(';')[0]!))).to.equal(false);
    const after = await read('task-replace-rest');
    expect(after.frontmatter).to.not.have.property('project');
    expect(after.frontmatter.author).to.equal(t.adminPerson);
  });

  it('the same replace over MCP put_node carries the same warnings', async () => {
    const before = await checkoutTask('task-replace-mcp');
    const tool = await t.tool(client, 'put_node', {
      nodes: [
        {
          node: md(
            { id: 'task-replace-mcp', summary: 'Checkout flow, v2', project: 'checkout', edges: [{ type: 'blocks', to: 'task-card-api' }] },
            'Steps:\n- one\n',
          ),
          if_exists: 'update',
          revision: before.revision,
        },
      ],
    });
    expect(tool.isError, tool.text).to.equal(false);
    const warnings: string[] = tool.json.results[0].warnings;
    expect(warnings).to.include('removed edge relates-to -> task-release');
    expect(warnings).to.include('removed attribute needed_by (was 2026-01-31) of edge blocks -> task-card-api');
    expect(warnings).to.include('removed field title (was Checkout)');
    expect(warnings.some((w) => w.startsWith('removed field project'))).to.equal(false);
  });

  it('a replace that repeats everything gets no removal warnings', async () => {
    const before = await checkoutTask('task-replace-same');
    const res = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          { node: md({ ...before.frontmatter, summary: 'Edited summary' }, before.body), if_exists: 'update', revision: before.revision },
        ],
      },
    });
    expect(res.body.results[0].status).to.equal('updated');
    expect(res.body.results[0].warnings).to.deep.equal([]);
  });

  it('PATCH changes only what it names (frontmatter diffed before/after) and answers the write success shape', async () => {
    const before = await checkoutTask('task-patch-rest');
    const res = await t.api('PATCH', '/v1/nodes/task-patch-rest', {
      body: {
        revision: before.revision,
        set: { summary: 'Checkout flow, patched', estimate: '3d' },
        add_edges: [{ type: 'part-of', to: 'task-release' }],
        append_body: '- two\n',
      },
    });
    expect(res.status, res.text).to.equal(200);
    expect(Object.keys(res.body).sort()).to.deep.equal(['id', 'revision', 'status', 'warnings']);
    expect(res.body).to.include({ status: 'updated', id: 'task-patch-rest' });
    expect(res.body.warnings).to.deep.equal(["unknown field 'estimate' kept as-is: no rule of the task type reads it"]);
    const after = await read('task-patch-rest');
    expect(res.body.revision).to.equal(after.revision);
    expect(changedKeys(before.frontmatter, after.frontmatter)).to.deep.equal(['edges', 'estimate', 'summary']);
    expect(after.frontmatter.edges).to.deep.equal([...before.frontmatter.edges, { type: 'part-of', to: 'task-release' }]);
    expect(after.frontmatter.project).to.equal('checkout');
    expect(after.body).to.equal('Steps:\n- one\n- two\n');
  });

  it('patch_node over MCP: null removes a field, unset removes one, remove_edges removes an edge, body replaces', async () => {
    const before = await checkoutTask('task-patch-mcp');
    const tool = await t.tool(client, 'patch_node', {
      id: 'task-patch-mcp',
      revision: before.revision,
      set: { title: null },
      unset: ['project'],
      remove_edges: [{ type: 'relates-to', to: 'task-release' }],
      body: 'Rewritten.\n',
    });
    expect(tool.isError, tool.text).to.equal(false);
    expect(tool.json).to.include({ status: 'updated', id: 'task-patch-mcp' });
    const after = await read('task-patch-mcp');
    expect(changedKeys(before.frontmatter, after.frontmatter)).to.deep.equal(['edges', 'project', 'title']);
    expect(after.frontmatter.edges).to.deep.equal([{ type: 'blocks', to: 'task-card-api', needed_by: '2026-01-31' }]);
    expect(after.body).to.equal('Rewritten.\n');
  });

  it('a status in set goes through the transition gate', async () => {
    const before = await checkoutTask('task-patch-status');
    const ok = await t.api('PATCH', '/v1/nodes/task-patch-status', { body: { revision: before.revision, set: { status: 'review' } } });
    expect(ok.status, ok.text).to.equal(200);
    expect((await read('task-patch-status')).frontmatter.status).to.equal('review');
    const bad = await t.api('PATCH', '/v1/nodes/task-patch-status', { body: { revision: ok.body.revision, set: { status: 'shipped' } } });
    expect(bad.status).to.equal(409);
    expect(bad.body.error.code).to.equal('transition_denied');
    expect(bad.body.error.message).to.match(/not a status of task; allowed: open, in-progress/);
    expect((await read('task-patch-status')).revision).to.equal(ok.body.revision);
  });

  it('a revision mismatch is 409 conflict carrying the current revision; nothing changes (REST and MCP)', async () => {
    const before = await checkoutTask('task-patch-stale');
    const first = await t.api('PATCH', '/v1/nodes/task-patch-stale', {
      body: { revision: before.revision, set: { summary: 'First edit' } },
    });
    expect(first.status).to.equal(200);
    const stale = await t.api('PATCH', '/v1/nodes/task-patch-stale', {
      body: { revision: before.revision, set: { summary: 'Lost edit' } },
    });
    expect(stale.status).to.equal(409);
    expect(stale.body.error.code).to.equal('conflict');
    expect(stale.body.error.details).to.include({ current_revision: first.body.revision, supplied_revision: before.revision });
    const tool = await t.tool(client, 'patch_node', { id: 'task-patch-stale', revision: before.revision, set: { summary: 'Lost edit' } });
    expect(tool.isError).to.equal(true);
    expect(tool.text).to.equal(stale.text);
    expect((await read('task-patch-stale')).frontmatter.summary).to.equal('First edit');
  });

  it('bad patches are 422 (or 404) with the error envelope and change nothing', async () => {
    const before = await checkoutTask('task-patch-bad');
    const cases: Array<[Record<string, unknown>, number, RegExp]> = [
      [{ revision: before.revision }, 422, /changes nothing/],
      [{ revision: before.revision, set: { author: 'mallory' } }, 422, /'author' cannot be patched/],
      [{ revision: before.revision, set: { priority: 'p1' } }, 422, /set_priority/],
      [{ revision: before.revision, set: { edges: [] } }, 422, /add_edges/],
      [{ revision: before.revision, set: { summary: null } }, 422, /summary is required/],
      [{ revision: before.revision, body: 'a', append_body: 'b' }, 422, /not both/],
      [{ revision: before.revision, set: { summary: 'x'.repeat(501) } }, 422, /invalid task frontmatter/],
      [{ revision: before.revision, body: 'x'.repeat(8193) }, 422, /body exceeds 8192 bytes/],
      [{ revision: before.revision, add_edges: [{ type: 'blocked-by', to: 'task-release' }] }, 422, /inverse form/],
      [{ revision: before.revision, add_edges: [{ type: 'blocks', to: 'task-nowhere' }] }, 404, /task-nowhere not found/],
      [{ revision: before.revision, bogus: 1 }, 422, /invalid input/],
      [{ set: { summary: 'no revision' } }, 422, /revision/],
    ];
    for (const [body, status, message] of cases) {
      const res = await t.api('PATCH', '/v1/nodes/task-patch-bad', { body });
      expect(res.status, `${JSON.stringify(body).slice(0, 80)}: ${res.text}`).to.equal(status);
      expect(res.body.error.message + JSON.stringify(res.body.error.details)).to.match(message);
    }
    expect((await t.api('PATCH', '/v1/nodes/task-nope', { body: { revision: 'x', set: { summary: 'y' } } })).status).to.equal(404);
    const after = await read('task-patch-bad');
    expect(after.revision).to.equal(before.revision);
  });

  it('more than 40 edges on a node is 422 through a patch', async () => {
    const ids = Array.from({ length: 41 }, (_, i) => `task-e${i}`);
    await putNodes(
      t,
      ids.map((id) => ({ id, type: 'task', summary: id })),
    );
    const before = (await putNodes(t, [{ id: 'task-hub', type: 'task', summary: 'Hub' }]))[0];
    const res = await t.api('PATCH', '/v1/nodes/task-hub', {
      body: { revision: before.revision, add_edges: ids.slice(0, 40).map((to) => ({ type: 'relates-to', to })) },
    });
    expect(res.status, res.text).to.equal(200);
    const over = await t.api('PATCH', '/v1/nodes/task-hub', {
      body: { revision: res.body.revision, add_edges: [{ type: 'relates-to', to: ids[40] }] },
    });
    expect(over.status).to.equal(422);
    expect(over.body.error.code).to.equal('validation_failed');
  });

  describe('one completion rule for put_node and set_status', () => {
    it('a decision put already accepted succeeds exactly as proposed + set_status accepted does', async () => {
      const put = await t.api('POST', '/v1/nodes', {
        body: { nodes: [md({ id: 'dec-put-accepted', summary: 'Use Postgres', status: 'accepted' })] },
      });
      expect(put.status, put.text).to.equal(200);
      expect(put.body.results[0].status).to.equal('created');
      await putNodes(t, [{ id: 'dec-set-accepted', summary: 'Use Redis' }]);
      const set = await t.api('POST', '/v1/nodes/dec-set-accepted/status', { body: { status: 'accepted' } });
      expect(set.status, set.text).to.equal(200);
      expect((await read('dec-put-accepted')).frontmatter.status).to.equal((await read('dec-set-accepted')).frontmatter.status);
    });

    it('a status the transition gate refuses is refused the same way on create and on a status change', async () => {
      const put = await t.api('POST', '/v1/nodes', { body: { nodes: [md({ id: 'dec-put-bogus', summary: 'x', status: 'approved' })] } });
      expect(put.status).to.equal(207);
      expect(put.body.results[0].error.code).to.equal('transition_denied');
      await putNodes(t, [{ id: 'dec-set-bogus', summary: 'y' }]);
      const set = await t.api('POST', '/v1/nodes/dec-set-bogus/status', { body: { status: 'approved' } });
      expect(set.status).to.equal(409);
      expect(set.body.error.code).to.equal('transition_denied');
      expect(set.body.error.message).to.equal(put.body.results[0].error.message);
    });

    it('a batch that carries the resolver after the node it resolves still fails that create (order resolver first)', async () => {
      const res = await t.api('POST', '/v1/nodes', {
        body: {
          nodes: [
            md({ id: 'issue-late', summary: 'Late', status: 'resolved' }),
            md({ id: 'task-late-fix', summary: 'Fix', edges: [{ type: 'resolves', to: 'issue-late' }] }),
          ],
        },
      });
      expect(res.status).to.equal(207);
      expect(res.body.results[0].error).to.include({ code: 'transition_denied' });
      expect(res.body.results[0].error.details.gate).to.equal('completion-resolver');
      expect(res.body.results[1].status).to.equal('created');
    });
  });
});
