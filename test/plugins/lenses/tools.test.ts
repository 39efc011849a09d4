/**
 * The MCP tools (docs/spec.md "What the service does", tool names): `render_lens` is the twin of
 * GET /v1/lens/{id}/render?format=json (and, without a lens id, of the GET /v1/lens catalog),
 * byte for byte; `apply_lens_action` runs a small declarative vocabulary over the core and
 * lease operations on items of a rendered lens.
 */
import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { TestServer } from '../../helpers/harness.js';
import { freezeClock, unboundToken } from '../leases/helpers.js';
import { ids, put, seed, startLensServer, type Fixture } from './helpers.js';

describe('lenses: render_lens and apply_lens_action', function () {
  let t: TestServer;
  let f: Fixture;
  let alice: Client;
  let unfreeze: () => void;

  before(async () => {
    t = await startLensServer();
    f = await seed(t);
    alice = await t.mcp(f.alice.token);
  });
  after(async () => {
    unfreeze?.();
    await t.close();
  });

  describe('render_lens', () => {
    before(() => {
      unfreeze = freezeClock(t.clock);
    });
    after(() => {
      unfreeze();
      unfreeze = () => undefined;
    });

    const cases: Array<[string, Record<string, unknown>]> = [
      ['/v1/lens/lens-board/render?format=json', { lens_id: 'lens-board' }],
      ['/v1/lens/lens-board/render?format=json&param.project=web', { lens_id: 'lens-board', params: { project: 'web' } }],
      ['/v1/lens/lens-status/render?format=json&param.status=open,done', { lens_id: 'lens-status', params: { status: ['open', 'done'] } }],
      ['/v1/lens/lens-mine/render?format=json', { lens_id: 'lens-mine' }],
      // errors: the same envelope bytes
      ['/v1/lens/lens-nope/render?format=json', { lens_id: 'lens-nope' }],
      ['/v1/lens/lens-broken/render?format=json', { lens_id: 'lens-broken' }],
      ['/v1/lens/lens-board/render?format=json&param.colour=red', { lens_id: 'lens-board', params: { colour: 'red' } }],
      ['/v1/lens/lens-board/render?format=json&param.project=Bad_Slug', { lens_id: 'lens-board', params: { project: 'Bad_Slug' } }],
    ];
    for (const [path, args] of cases) {
      it(`GET ${path} == render_lens ${JSON.stringify(args)}`, async () => {
        const rest = await t.api('GET', path, { token: f.alice.token });
        const tool = await t.tool(alice, 'render_lens', args);
        expect(tool.isError).to.equal(rest.status !== 200);
        expect(tool.text).to.equal(rest.text);
        expect(rest.text.length).to.be.greaterThan(20);
      });
    }

    it('without a lens id: the catalog of live lenses, the same bytes as GET /v1/lens', async () => {
      const rest = await t.api('GET', '/v1/lens', { token: f.alice.token });
      const tool = await t.tool(alice, 'render_lens', {});
      expect(rest.status).to.equal(200);
      expect(tool.text).to.equal(rest.text);
      const catalog = tool.json;
      const listed = catalog.lenses.map((l: { id: string }) => l.id);
      expect(listed).to.include.members(['lens-board', 'lens-mine', 'lens-status', 'lens-broken']);
      expect(listed).to.not.include('lens-retired');
      expect(catalog.count).to.equal(listed.length);
      const board = catalog.lenses.find((l: { id: string }) => l.id === 'lens-board');
      expect(board).to.deep.include({
        title: 'Work board',
        params: { project: 'proj-root' },
        param_names: ['project'],
        group_by: 'status',
        valid: true,
      });
      const broken = catalog.lenses.find((l: { id: string }) => l.id === 'lens-broken');
      expect(broken.valid).to.equal(false);
      expect(broken.errors.length).to.be.greaterThan(0);
    });

    it('params without a lens id is 422; render_lens is listed read-only', async () => {
      const res = await t.tool(alice, 'render_lens', { params: { project: 'web' } });
      expect(res.isError).to.equal(true);
      expect(res.json.error.code).to.equal('validation_failed');
      const { tools } = await alice.listTools();
      const render = tools.find((x) => x.name === 'render_lens')!;
      expect(render.annotations?.readOnlyHint).to.equal(true);
      expect(tools.map((x) => x.name)).to.include('apply_lens_action');
    });

    it('an unknown argument is 422 validation_failed on render_lens and apply_lens_action, and an unknown mint field over REST', async () => {
      for (const [name, args] of [
        ['render_lens', { lens_id: 'lens-tasks', format: 'json' }],
        ['apply_lens_action', { lens_id: 'lens-tasks', item_id: 'task-x', action: 'claim', format: 'json' }],
      ] as Array<[string, Record<string, unknown>]>) {
        const res = await t.tool(alice, name, args);
        expect(res.isError, name).to.equal(true);
        expect(res.json.error.code, name).to.equal('validation_failed');
        expect(res.json.error.details.errors[0], name).to.deep.include({
          keyword: 'additionalProperties',
          params: { additionalProperty: 'format' },
        });
      }
      const mint = await t.api('POST', '/v1/lens/lens-tasks/ticket', { body: { expires: '1d', format: 'json' } });
      expect(mint.status).to.equal(422);
      expect(mint.body.error.details.errors[0]).to.deep.include({
        keyword: 'additionalProperties',
        params: { additionalProperty: 'format' },
      });
    });
  });

  describe('apply_lens_action', () => {
    const act = (client: Client, args: Record<string, unknown>) => t.tool(client, 'apply_lens_action', args);
    const node = async (id: string) => (await t.api('GET', `/v1/nodes/${id}`)).body.frontmatter as Record<string, unknown>;

    it('set_status on an item runs the core status operation, attributed to the caller', async () => {
      const res = await act(alice, { lens_id: 'lens-board', item_id: 'issue-d', action: 'set_status', value: 'blocked' });
      expect(res.isError, res.text).to.equal(false);
      expect(res.json).to.deep.include({ lens_id: 'lens-board', item_id: 'issue-d', action: 'set_status', value: 'blocked' });
      expect(res.json.result).to.include({ status: 'updated', id: 'issue-d' });
      const fm = await node('issue-d');
      expect(fm.status).to.equal('blocked');
      expect(fm.author).to.equal(f.alice.id);
      expect(fm.authored_via).to.equal('mcp');
    });

    it('set_priority sets and clears priority', async () => {
      const set = await act(alice, { lens_id: 'lens-board', item_id: 'task-f', action: 'set_priority', value: 'p2' });
      expect(set.isError, set.text).to.equal(false);
      expect((await node('task-f')).priority).to.equal('p2');
      const cleared = await act(alice, { lens_id: 'lens-board', item_id: 'task-f', action: 'set_priority', value: 'none' });
      expect(cleared.isError, cleared.text).to.equal(false);
      expect(await node('task-f')).to.not.have.property('priority');
      const bad = await act(alice, { lens_id: 'lens-board', item_id: 'task-f', action: 'set_priority', value: 'urgent' });
      expect(bad.json.error.code).to.equal('invalid_node');
    });

    it('claim and release go through the lease operations', async () => {
      const claimed = await act(alice, { lens_id: 'lens-board', item_id: 'task-release', action: 'claim' });
      expect(claimed.isError, claimed.text).to.equal(false);
      expect(claimed.json.result.lease).to.include({ node_id: 'task-release', by: f.alice.id });
      const bob = await t.mcp(f.bob.token);
      const stolen = await act(bob, { lens_id: 'lens-board', item_id: 'task-release', action: 'claim' });
      expect(stolen.isError).to.equal(true);
      expect(stolen.json.error.code).to.equal('conflict');
      const released = await act(alice, { lens_id: 'lens-board', item_id: 'task-release', action: 'release' });
      expect(released.isError, released.text).to.equal(false);
      expect(released.json.result.status).to.equal('released');
    });

    it('an id that is not an item of the lens as rendered (same params) is 409; nothing changes', async () => {
      const head = (await t.api('GET', '/v1/status')).body.head;
      const outside = await act(alice, {
        lens_id: 'lens-board',
        item_id: 'task-c',
        action: 'set_status',
        value: 'open',
        params: { project: 'web' },
      });
      expect(outside.isError).to.equal(true);
      expect(outside.json.error.code).to.equal('conflict');
      const dec = await act(alice, { lens_id: 'lens-board', item_id: 'dec-g', action: 'set_priority', value: 'p1' });
      expect(dec.json.error.code).to.equal('conflict');
      expect((await t.api('GET', '/v1/status')).body.head).to.equal(head);
      // the same item inside the lens's scope works
      const inside = await act(alice, {
        lens_id: 'lens-board',
        item_id: 'task-c',
        action: 'set_priority',
        value: 'p3',
        params: { project: 'api' },
      });
      expect(inside.isError, inside.text).to.equal(false);
    });

    it('the vocabulary is closed, values are checked, and a lens may narrow it', async () => {
      const unknown = await act(alice, { lens_id: 'lens-board', item_id: 'task-a', action: 'delete' });
      expect(unknown.json.error.code).to.equal('validation_failed');
      const noValue = await act(alice, { lens_id: 'lens-board', item_id: 'task-a', action: 'set_status' });
      expect(noValue.json.error.code).to.equal('validation_failed');
      const extra = await act(alice, { lens_id: 'lens-board', item_id: 'task-a', action: 'claim', value: 'x' });
      expect(extra.json.error.code).to.equal('validation_failed');
      const narrowed = await act(alice, { lens_id: 'lens-prio-only', item_id: 'task-a', action: 'set_status', value: 'review' });
      expect(narrowed.json.error.code).to.equal('validation_failed');
      expect(narrowed.json.error.details.errors[0].allowed).to.deep.equal(['set_priority']);
      expect((await act(alice, { lens_id: 'lens-prio-only', item_id: 'task-a', action: 'set_priority', value: 'p2' })).isError).to.equal(
        false,
      );
      expect((await node('task-a')).status).to.equal('open');
    });

    it('the operation gates still apply: a denied transition is 409 transition_denied', async () => {
      const res = await act(alice, { lens_id: 'lens-board', item_id: 'task-a', action: 'set_status', value: 'exploded' });
      expect(res.isError).to.equal(true);
      expect(res.json.error.code).to.equal('transition_denied');
      expect((await node('task-a')).status).to.equal('open');
      // and set_status to in-progress takes the same lease as the claim endpoint
      const started = await act(alice, { lens_id: 'lens-board', item_id: 'task-a', action: 'set_status', value: 'in-progress' });
      expect(started.isError, started.text).to.equal(false);
      expect(started.json.result.lease).to.include({ node_id: 'task-a', by: f.alice.id });
    });

    it('unknown lens 404, a caller without a person node cannot write (403 no_person)', async () => {
      expect((await act(alice, { lens_id: 'lens-nope', item_id: 'task-a', action: 'claim' })).json.error.code).to.equal('not_found');
      const ghost = await t.mcp(await unboundToken(t));
      const res = await act(ghost, { lens_id: 'lens-board', item_id: 'task-a', action: 'set_priority', value: 'p3' });
      expect(res.isError).to.equal(true);
      expect(res.json.error.code).to.equal('no_person');
      expect(res.text).to.equal(
        JSON.stringify({ error: { code: 'no_person', message: 'writes need a token bound to a person node', details: {} } }),
      );
    });

    it('claim without the leases plugin is 422 naming the missing plugin', async () => {
      const bare = await startLensServer({ leases: false });
      try {
        await put(bare, [
          { id: 'task-x', type: 'task', summary: 'x' },
          { id: 'lens-tasks', type: 'lens', summary: 'tasks', query: { type: 'task' } },
        ]);
        const client = await bare.mcp();
        const res = await bare.tool(client, 'apply_lens_action', { lens_id: 'lens-tasks', item_id: 'task-x', action: 'claim' });
        expect(res.json.error.code).to.equal('validation_failed');
        expect(res.json.error.message).to.include('leases');
        const tree = await bare.tool(client, 'render_lens', { lens_id: 'lens-tasks' });
        expect(ids(tree.json)).to.deep.equal(['task-x']);
      } finally {
        await bare.close();
      }
    });
  });
});
