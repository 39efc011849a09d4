/**
 * GET /v1/lens/{id}/render (docs/spec.md "Lenses" rule 1, docs/design.md §8): the json view tree, the
 * query keys, `$name` params as `param.<name>` query keys, columns, group_by, sort, the text
 * and html renderings (escaped, read-only, no forms), and the error codes.
 */
import { expect } from 'chai';
import type { TestServer } from '../../helpers/harness.js';
import { ids, put, seed, startLensServer, XSS_TITLE, type Fixture } from './helpers.js';

describe('lenses: render', function () {
  let t: TestServer;
  let f: Fixture;

  before(async () => {
    t = await startLensServer();
    f = await seed(t);
  });
  after(async () => t.close());

  const json = (path: string, token?: string) => t.api('GET', path + (path.includes('?') ? '&' : '?') + 'format=json', { token });

  describe('format=json: the view tree', () => {
    it('has the docs/design.md shape {lens_id, title, generated_at, params, groups: [{key, count, items}], count}', async () => {
      const res = await json('/v1/lens/lens-board/render');
      expect(res.status, res.text).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^application\/json/);
      const tree = res.body;
      expect(Object.keys(tree).slice(0, 6)).to.deep.equal(['lens_id', 'title', 'generated_at', 'params', 'groups', 'count']);
      expect(tree).to.not.have.property('sharer');
      expect(tree.lens_id).to.equal('lens-board');
      expect(tree.title).to.equal('Work board');
      expect(Date.parse(tree.generated_at)).to.be.closeTo(t.clock.now(), 5000);
      expect(tree.params).to.deep.equal({ project: 'proj-root' });
      for (const g of tree.groups) {
        expect(Object.keys(g)).to.deep.equal(['key', 'count', 'items']);
        expect(g.count).to.equal(g.items.length);
      }
      expect(tree.count).to.equal(8);
      expect(tree.total).to.equal(8);
      expect(tree.truncated).to.equal(false);
    });

    it('group_by status groups in workflow order; sort [-priority, id] orders each group (missing priority last)', async () => {
      const tree = (await json('/v1/lens/lens-board/render')).body;
      expect(tree.groups.map((g: { key: string }) => g.key)).to.deep.equal(['open', 'in-progress', 'blocked', 'done']);
      expect(tree.groups[0].items.map((i: { id: string }) => i.id)).to.deep.equal([
        'task-a',
        'issue-d',
        'task-f',
        'task-release',
        'task-xss',
      ]);
      expect(ids(tree)).to.not.include('dec-g'); // query.type
    });

    it('items are {id, title, ...columns}: assignee lists assigned people, missing values are null', async () => {
      const tree = (await json('/v1/lens/lens-board/render')).body;
      const items = tree.groups.flatMap((g: { items: unknown[] }) => g.items);
      expect(items.find((i: { id: string }) => i.id === 'task-a')).to.deep.equal({
        id: 'task-a',
        title: 'Alpha task',
        status: 'open',
        priority: 'p1',
        assignee: [f.alice.id],
        project: 'web',
      });
      expect(items.find((i: { id: string }) => i.id === 'task-f')).to.deep.equal({
        id: 'task-f',
        title: 'Foxtrot blocks the release',
        status: 'open',
        priority: null,
        assignee: [],
        project: null,
      });
    });

    it('param.<name>=<value> overrides a default; the tree echoes the params used', async () => {
      const tree = (await json('/v1/lens/lens-board/render?param.project=web')).body;
      expect(tree.params).to.deep.equal({ project: 'web' });
      expect(ids(tree)).to.deep.equal(['task-a', 'issue-d', 'task-xss', 'task-b']);
      const api = (await json('/v1/lens/lens-board/render?param.project=api')).body;
      expect(ids(api)).to.deep.equal(['issue-e', 'task-c']);
    });

    it('a project scope follows repo aliases up to the grouping, like the queue', async () => {
      await put(t, [
        { id: 'proj-shop', type: 'proj', summary: 'Shop grouping' },
        { id: 'repo-shop-ui', type: 'repo', summary: 'Shop UI', aliases: ['storefront'], edges: [{ type: 'member-of', to: 'proj-shop' }] },
        { id: 'task-shop-1', type: 'task', summary: 'Shop work', project: 'repo-shop-ui' },
        { id: 'task-shop-2', type: 'task', summary: 'Shop grouping work', project: 'proj-shop' },
      ]);
      expect(ids((await json('/v1/lens/lens-board/render?param.project=storefront')).body)).to.deep.equal(['task-shop-1', 'task-shop-2']);
      expect(ids((await json('/v1/lens/lens-board/render?param.project=repo-shop-ui')).body)).to.deep.equal(['task-shop-1']);
    });

    it('an unset param with no default turns its filter off; a list param takes commas', async () => {
      const all = (await json('/v1/lens/lens-status/render')).body;
      expect(all.params).to.deep.equal({ status: '' });
      expect(ids(all)).to.include.members(['task-a', 'task-b', 'task-c', 'task-f']);
      const some = (await json('/v1/lens/lens-status/render?param.status=in-progress,done')).body;
      expect(ids(some)).to.deep.equal(['task-b', 'task-c']);
      expect(some.groups).to.have.length(1);
      expect(some.groups[0].key).to.equal(null); // no group_by: one group
    });

    it('assignee: me is the caller; done: false drops finished work', async () => {
      const mine = (await json('/v1/lens/lens-mine/render', f.alice.token)).body;
      expect(ids(mine)).to.deep.equal(['task-a']); // task-c is assigned too, but done
      const bobs = (await json('/v1/lens/lens-mine/render', f.bob.token)).body;
      expect(ids(bobs)).to.deep.equal(['task-b']);
    });

    it('edge: {type, to} selects nodes with that edge; an inverse form selects the other side', async () => {
      expect(ids((await json('/v1/lens/lens-release-blockers/render')).body)).to.deep.equal(['task-f']);
      expect(ids((await json('/v1/lens/lens-blocked-by-f/render')).body)).to.deep.equal(['task-release']);
    });

    it('a lens with no title takes the first line of its summary', async () => {
      expect((await json('/v1/lens/lens-release-blockers/render')).body.title).to.equal('What blocks the release');
    });

    it('the lens limit cuts the sorted list and says so', async () => {
      await put(t, [{ id: 'lens-top2', type: 'lens', summary: 'Top two', query: { type: 'task' }, sort: ['id'], limit: 2 }]);
      const tree = (await json('/v1/lens/lens-top2/render')).body;
      expect(ids(tree)).to.deep.equal(['task-a', 'task-b']);
      expect(tree).to.include({ count: 2, truncated: true });
      expect(tree.total).to.be.greaterThan(2);
    });

    it('reads follow the graph at once (the index, not a stale copy)', async () => {
      await put(t, [{ id: 'task-new', type: 'task', summary: 'Brand new', project: 'web' }]);
      expect(ids((await json('/v1/lens/lens-board/render?param.project=web')).body)).to.include('task-new');
    });
  });

  describe('text and html', () => {
    it('format=text renders the same tree as plain text', async () => {
      const res = await t.api('GET', '/v1/lens/lens-board/render?format=text&param.project=web');
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^text\/plain/);
      expect(res.text).to.match(/^Work board\n/);
      expect(res.text).to.include('## open (');
      expect(res.text).to.include('- task-a | Alpha task | status: open | priority: p1 | assignee: Alice | project: web');
      expect(res.text).to.include('## in-progress (1)');
    });

    it('html is the default format: a full page, escaped, read-only (no forms, no scripts), with a strict CSP', async () => {
      const res = await t.api('GET', '/v1/lens/lens-board/render?param.project=web');
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^text\/html/);
      expect(res.headers.get('content-security-policy')).to.include("default-src 'none'").and.include("form-action 'none'");
      expect(res.headers.get('cache-control')).to.include('no-store');
      const html = res.text;
      expect(html).to.match(/^<!doctype html>/);
      expect(html).to.include('<td class="title">Alpha task</td>');
      expect(html).to.include('<td class="assignee">Alice</td>');
      // the hostile title is shown, escaped
      expect(html).to.include('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; friends');
      expect(html).to.not.include(XSS_TITLE);
      expect(html.toLowerCase()).to.not.match(/<script|<form|<input|<button|<textarea|<select|onerror=|javascript:/);
    });

    it('a hostile lens title is escaped in <title> and <h1>', async () => {
      const res = await t.api('GET', '/v1/lens/lens-xss/render');
      expect(res.status).to.equal(200);
      expect(res.text).to.include('<title>&lt;img src=x onerror=alert(1)&gt; lens</title>');
      expect(res.text).to.include('<h1>&lt;img src=x onerror=alert(1)&gt; lens</h1>');
      expect(res.text).to.not.match(/<img/i);
      expect(res.text).to.include('&lt;script&gt;'); // task-xss is in this lens too
    });

    it('rendering is read-only: HEAD does not move and the route takes no POST', async () => {
      const before = (await t.api('GET', '/v1/status')).body.head;
      for (const format of ['html', 'text', 'json'])
        expect((await t.api('GET', `/v1/lens/lens-board/render?format=${format}`)).status).to.equal(200);
      expect((await t.api('GET', '/v1/status')).body.head).to.equal(before);
      const write = await t.api('POST', '/v1/lens/lens-board/render', { body: { action: 'set_status' } });
      expect(write.status).to.be.oneOf([404, 405]);
    });
  });

  describe('errors', () => {
    it('unknown lens 404; a node that is not a lens 404; malformed id 422', async () => {
      const missing = await t.api('GET', '/v1/lens/lens-nope/render');
      expect(missing.status).to.equal(404);
      expect(missing.body.error.code).to.equal('not_found');
      expect((await t.api('GET', '/v1/lens/task-a/render')).status).to.equal(404);
      const bad = await t.api('GET', '/v1/lens/Bad_Id/render');
      expect(bad.status).to.equal(422);
      expect(bad.body.error.code).to.equal('validation_failed');
    });

    it('an unknown format is 422', async () => {
      const res = await t.api('GET', '/v1/lens/lens-board/render?format=pdf');
      expect(res.status).to.equal(422);
      expect(res.body.error.code).to.equal('validation_failed');
      expect(res.body.error.details.errors[0]).to.deep.include({
        instancePath: '/format',
        keyword: 'enum',
        params: { allowedValues: ['html', 'text', 'json'] },
      });
    });

    it('query keys that are neither declared nor param.<name> are ignored, as on every GET route', async () => {
      const res = await t.api('GET', '/v1/lens/lens-board/render?colour=red');
      expect(res.status, res.text).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^text\/html/);
    });

    it('an unknown param or a malformed param value is 422 naming param.<name>', async () => {
      const unknown = await t.api('GET', '/v1/lens/lens-board/render?param.colour=red');
      expect(unknown.status).to.equal(422);
      expect(unknown.body.error.code).to.equal('validation_failed');
      expect(unknown.body.error.details.errors[0].field).to.equal('param.colour');
      const malformed = await t.api('GET', '/v1/lens/lens-board/render?param.project=Not_A_Slug');
      expect(malformed.status).to.equal(422);
      expect(malformed.body.error.details.errors[0].field).to.equal('param.project');
      const badStatus = await t.api('GET', '/v1/lens/lens-status/render?param.status=open,NOPE!');
      expect(badStatus.status).to.equal(422);
      const long = await t.api('GET', `/v1/lens/lens-board/render?param.project=${'a'.repeat(201)}`);
      expect(long.status).to.equal(422);
    });

    it('a broken lens definition is 422 invalid_node listing every problem', async () => {
      const res = await t.api('GET', '/v1/lens/lens-broken/render');
      expect(res.status).to.equal(422);
      expect(res.body.error.code).to.equal('invalid_node');
      const fields = res.body.error.details.errors.map((e: { field: string }) => e.field);
      expect(fields).to.include.members(['query.colour', 'group_by']);
      // the unknown type literal is reported once the structure is fixed
      await put(t, [{ id: 'lens-bad-type', type: 'lens', summary: 'bad type', query: { type: 'widget' } }]);
      const typed = await t.api('GET', '/v1/lens/lens-bad-type/render');
      expect(typed.status).to.equal(422);
      expect(typed.body.error.code).to.equal('invalid_node');
      expect(typed.body.error.details.errors[0]).to.deep.include({ field: 'query.type' });
    });

    it('every route needs a credential: no token is 401', async () => {
      const res = await t.api('GET', '/v1/lens/lens-board/render', { token: null });
      expect(res.status).to.equal(401);
      expect(res.body.error.code).to.equal('unauthorized');
      expect((await t.api('GET', '/v1/lens', { token: null })).status).to.equal(401);
    });
  });
});
