/**
 * Issue 25 item 2, comments (plugins/comments): a comment on any node is a `comment-` node with
 * a markdown body, committed by its author; `@name` mentions resolve against people (id, email
 * name, full name, unique first name) and reach the mentioned person's inbox and `assignee=me`
 * events, never the author's own; list oldest first with paging; edit your own, delete your own
 * (admins: any); bad input is the envelope and changes nothing; comments stay out of the queue.
 */
import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { addPerson, putNodes, runSecrets, startTestServer, type ApiResponse, type TestServer } from '../../helpers/harness.js';
import { until } from '../../helpers/until.js';

interface Comment {
  id: string;
  node: string;
  body: string;
  author: string;
  author_name: string;
  edited: boolean;
  revision: string;
  created: string;
  mentions: Array<{ person: string; name: string; handles: string[] }>;
  unresolved?: string[];
}

/** Reads until `check` holds for what was read (the failure names the last reading). */
async function untilRead<T>(what: string, read: () => Promise<T>, check: (v: T) => boolean): Promise<T> {
  let last: T | undefined;
  const held = await until(
    async () => {
      last = await read();
      return check(last) ? { value: last } : undefined;
    },
    () => `${what}; last read: ${JSON.stringify(last).slice(0, 600)}`,
    10_000,
    { every: 25 },
  );
  return held.value;
}

describe('comments: discussion on any node, with @mentions', function () {
  this.timeout(60_000);
  let t: TestServer;
  let ada: { id: string; token: string };
  let bob: { id: string; token: string };
  let zoe: { id: string; token: string };
  let client: Client;

  const comment = (id: string, body: string, token: string): Promise<ApiResponse> =>
    t.api('POST', `/v1/nodes/${id}/comments`, { token, body: { body } });
  const list = (id: string, query = '', token?: string): Promise<ApiResponse> =>
    t.api('GET', `/v1/nodes/${id}/comments${query}`, { token: token ?? t.adminToken });
  const head = () => t.server.services.tenants.get(t.org)!.head;

  before(async () => {
    t = await startTestServer();
    ada = await addPerson(t, 'Ada Lovelace');
    bob = await addPerson(t, 'Bob Builder');
    zoe = await addPerson(t, 'Zoë O’Brien');
    await addPerson(t, 'Sam One');
    await addPerson(t, 'Sam Two');
    await putNodes(t, [
      { id: 'task-cm-a', type: 'task', title: 'Ship the comments', summary: 'Ship them', project: 'proj-root' },
      { id: 'spec-cm-b', type: 'spec', summary: 'A spec to discuss' },
    ]);
    client = await t.mcp(bob.token);
  });
  after(async () => t?.close());

  it('adds a comment: 201, markdown kept, the author by name, mentions resolved by handle, email name, full name, unique first name', async () => {
    const body =
      'Looks good @ada.lovelace and @Bob. Also @zoeobrien, @sam (two Sams), @nobody, `@ada` in code and mail ada@example.test are not mentions.';
    const res = await comment('task-cm-a', body, ada.token);
    expect(res.status, res.text).to.equal(201);
    const c = res.body as Comment;
    expect(c.id).to.match(/^comment-[0-9a-f]{16}$/);
    expect(c).to.include({ node: 'task-cm-a', body, author: ada.id, author_name: 'Ada Lovelace', edited: false });
    expect(c.mentions.map((m) => [m.person, m.name, m.handles])).to.deep.equal([
      [ada.id, 'Ada Lovelace', ['ada.lovelace']],
      [bob.id, 'Bob Builder', ['Bob']],
      [zoe.id, 'Zoë O’Brien', ['zoeobrien']],
    ]);
    expect(c.unresolved).to.deep.equal(['sam', 'nobody']);
    // a node like any other: readable, committed by its author, in the discussed node's project
    const node = await t.api('GET', `/v1/nodes/${c.id}`);
    expect(node.body.frontmatter).to.include({ type: 'comment', status: 'posted', author: ada.id, project: 'proj-root' });
    const history = await t.api('GET', `/v1/nodes/${c.id}/history`);
    expect(history.status, history.text).to.equal(200);
    expect(history.body.history[0]).to.include({ actor: ada.id, actor_name: 'Ada Lovelace' });
  });

  it('mentions reach the inbox of each mentioned person, about the discussed node, never the author; assignee=me events select them', async () => {
    const since = (await t.api('GET', '/v1/events', { token: bob.token })).body.last_id as number;
    const res = await comment('spec-cm-b', 'Over to you @bob-builder, and a note to myself @Ada', ada.token);
    expect(res.status, res.text).to.equal(201);
    const id = res.body.id as string;
    const inbox = await untilRead(
      'bob sees the mention',
      () => t.api('GET', '/v1/inbox?kind=mention', { token: bob.token }),
      (r) => r.body.items.some((i: { comment?: string }) => i.comment === id),
    );
    const item = inbox.body.items.find((i: { comment?: string }) => i.comment === id);
    expect(item).to.include({
      kind: 'mention',
      node: 'spec-cm-b',
      title: 'A spec to discuss',
      read: false,
      event_type: 'comment.mentioned',
    });
    expect(item.actor.name).to.equal('Ada Lovelace');
    // one item per comment: the first comment's mention of Bob is its own item
    expect(inbox.body.items.filter((i: { kind: string }) => i.kind === 'mention').length).to.be.at.least(2);
    // the author mentioned herself: no item, no event for her
    const hers = await t.api('GET', '/v1/inbox?kind=mention', { token: ada.token });
    expect(hers.body.items.filter((i: { comment?: string }) => i.comment === id)).to.deep.equal([]);
    const events = await t.api('GET', `/v1/events?since=${since}&assignee=me&types=comment.*`, { token: bob.token });
    expect(events.status, events.text).to.equal(200);
    const mentioned = events.body.events.filter((e: { type: string }) => e.type === 'comment.mentioned');
    expect(mentioned.map((e: { nodes: string[]; payload: { person: string } }) => [e.nodes, e.payload.person])).to.deep.equal([
      [['spec-cm-b', bob.id, id], bob.id],
    ]);
    const adas = await t.api('GET', `/v1/events?since=${since}&assignee=me&types=comment.mentioned`, { token: ada.token });
    expect(adas.body.events).to.deep.equal([]);
    // the discussed node's own filter hears the comment
    const onNode = await t.api('GET', `/v1/events?since=${since}&node=spec-cm-b&types=comment.added`, { token: bob.token });
    expect(onNode.body.events.map((e: { payload: { comment: string } }) => e.payload.comment)).to.deep.equal([id]);
  });

  it('lists a node’s comments oldest first, a page at a time; a bad cursor is 422', async () => {
    await putNodes(t, [{ id: 'task-cm-page', type: 'task', summary: 'Paged' }]);
    const ids: string[] = [];
    for (let i = 1; i <= 5; i++) {
      t.clock.advance(1000);
      const res = await comment('task-cm-page', `Comment number ${i}`, i % 2 ? ada.token : bob.token);
      expect(res.status, res.text).to.equal(201);
      ids.push(res.body.id);
    }
    const first = await list('task-cm-page', '?limit=2');
    expect(first.status, first.text).to.equal(200);
    expect(first.body).to.include({ node: 'task-cm-page', count: 2, total: 5 });
    expect(first.body.comments.map((c: Comment) => c.id)).to.deep.equal(ids.slice(0, 2));
    expect(first.body.comments[1].author_name).to.equal('Bob Builder');
    const second = await list('task-cm-page', `?limit=2&after=${first.body.next}`);
    expect(second.body.comments.map((c: Comment) => c.id)).to.deep.equal(ids.slice(2, 4));
    const third = await list('task-cm-page', `?limit=2&after=${second.body.next}`);
    expect(third.body.comments.map((c: Comment) => c.id)).to.deep.equal(ids.slice(4));
    expect(third.body.next).to.equal(null);
    const bad = await list('task-cm-page', '?after=bm9wZQ');
    expect(bad.status, bad.text).to.equal(422);
    expect(bad.body.error.code).to.equal('validation_failed');
    const tooMany = await list('task-cm-page', '?limit=201');
    expect(tooMany.status).to.equal(422);
  });

  it('a missing node, a foreign tenant’s node, a blank or over-long body, a comment on a comment: the envelope, and nothing written', async () => {
    const b = await t.server.services.tenants.create({
      org: 'cm-b',
      adminEmail: 'boss@cm-b.test',
      adminName: 'B Boss',
      plugins: ['comments'],
    });
    await t.server.services.tenants.scan();
    runSecrets.add(b.token);
    const bNode = await t.api('POST', '/v1/nodes', {
      token: b.token,
      body: { nodes: [{ node: { id: 'task-cm-b-only', type: 'task', summary: 'B only' } }] },
    });
    expect(bNode.status, bNode.text).to.equal(200);
    const before = head();
    const missing = await comment('task-cm-nope', 'Hello', ada.token);
    expect(missing.status, missing.text).to.equal(404);
    expect(missing.body.error.code).to.equal('not_found');
    expect((await comment('task-cm-b-only', 'Hello', ada.token)).status).to.equal(404);
    expect((await list('task-cm-b-only')).status).to.equal(404);
    const blank = await comment('task-cm-a', '   \n ', ada.token);
    expect(blank.status, blank.text).to.equal(422);
    expect(blank.body.error.code).to.equal('validation_failed');
    const long = await comment('task-cm-a', 'é'.repeat(4097), ada.token);
    expect(long.status, long.text).to.equal(422);
    expect(long.body.error.message).to.include('8192 bytes');
    const first = (await list('task-cm-a')).body.comments[0] as Comment;
    const nested = await comment(first.id, 'A reply', bob.token);
    expect(nested.status, nested.text).to.equal(422);
    const extra = await t.api('POST', '/v1/nodes/task-cm-a/comments', { token: ada.token, body: { body: 'x', author: bob.id } });
    expect(extra.status).to.equal(422);
    expect(head()).to.equal(before);
    expect((await list('task-cm-a')).body.total).to.equal(1);
  });

  it('edit: your own only (revision echo, new mentions told); delete: your own, or any as an admin; core writes to a comment are 403', async () => {
    const made = (await comment('task-cm-a', 'First draft', bob.token)).body as Comment;
    const before = head();
    const notYours = await t.api('PATCH', `/v1/comments/${made.id}`, { token: ada.token, body: { body: 'Hijacked' } });
    expect(notYours.status, notYours.text).to.equal(403);
    expect(notYours.body.error.code).to.equal('forbidden');
    const adminEdit = await t.api('PATCH', `/v1/comments/${made.id}`, { body: { body: 'Admin rewrite' } });
    expect(adminEdit.status).to.equal(403);
    const stale = await t.api('PATCH', `/v1/comments/${made.id}`, {
      token: bob.token,
      body: { body: 'Second draft', revision: '0000000000000000000000000000000000000000' },
    });
    expect(stale.status, stale.text).to.equal(409);
    const patch = await t.api('PATCH', `/v1/nodes/${made.id}`, { token: bob.token, body: { revision: made.revision, body: 'Sneaky' } });
    expect(patch.status, patch.text).to.equal(403);
    expect(head()).to.equal(before);

    t.clock.advance(1000);
    const edited = await t.api('PATCH', `/v1/comments/${made.id}`, {
      token: bob.token,
      body: { body: 'Second draft, cc @zoë.o.brien', revision: made.revision },
    });
    expect(edited.status, edited.text).to.equal(200);
    expect(edited.body).to.include({ id: made.id, body: 'Second draft, cc @zoë.o.brien', edited: true, author: bob.id });
    expect(edited.body.mentions.map((m: { person: string }) => m.person)).to.deep.equal([zoe.id]);
    await untilRead(
      'zoe hears of the edit’s new mention',
      () => t.api('GET', '/v1/inbox?kind=mention', { token: zoe.token }),
      (r) => r.body.items.some((i: { comment?: string }) => i.comment === made.id),
    );

    const del = await t.api('DELETE', `/v1/comments/${made.id}`, { token: ada.token });
    expect(del.status, del.text).to.equal(403);
    const own = await t.api('DELETE', `/v1/comments/${made.id}`, { token: bob.token });
    expect(own.status, own.text).to.equal(200);
    expect(own.body).to.deep.equal({ status: 'deleted', id: made.id, node: 'task-cm-a' });
    expect((await t.api('GET', `/v1/nodes/${made.id}`)).status).to.equal(404);
    expect((await t.api('DELETE', `/v1/comments/${made.id}`, { token: bob.token })).status).to.equal(404);

    const adas = (await comment('task-cm-a', 'Mine to lose', ada.token)).body as Comment;
    const byAdmin = await t.api('DELETE', `/v1/comments/${adas.id}`);
    expect(byAdmin.status, byAdmin.text).to.equal(200);
    expect((await list('task-cm-a')).body.comments.map((c: Comment) => c.id)).to.not.include(adas.id);
  });

  it('search and the discussed node’s digest find the discussion', async () => {
    const res = await comment('task-cm-a', 'The zanzibar rollout needs a feature flag', ada.token);
    expect(res.status, res.text).to.equal(201);
    const found = await t.api('POST', '/v1/digest', { body: { query: 'zanzibar rollout' } });
    expect(found.status, found.text).to.equal(200);
    expect(found.body.text).to.include(res.body.id);
    const digest = await t.api('POST', '/v1/digest', { body: { root: 'task-cm-a' } });
    expect(digest.status, digest.text).to.equal(200);
    expect(digest.body.text).to.include(`discussed-in <- ${res.body.id}`);
  });

  it('comments never enter the queue', async () => {
    const queue = await t.api('GET', '/v1/queue?limit=200', { token: bob.token });
    expect(queue.status, queue.text).to.equal(200);
    expect(queue.text).to.not.match(/"comment-[0-9a-f]{16}"/);
  });

  it('MCP: add_comment and list_comments answer as REST does; a bad argument is the same 422', async () => {
    const tool = await t.tool(client, 'add_comment', { id: 'task-cm-a', body: 'From the agent side, @ada' });
    expect(tool.isError, tool.text).to.equal(false);
    expect(tool.json).to.include({ node: 'task-cm-a', author: bob.id });
    expect(tool.json.mentions[0].person).to.equal(ada.id);
    const rest = await list('task-cm-a', '', bob.token);
    const listed = await t.tool(client, 'list_comments', { id: 'task-cm-a' });
    expect(listed.json).to.deep.equal(rest.body);
    const bad = await t.tool(client, 'add_comment', { id: 'task-cm-a', body: '' });
    const badRest = await comment('task-cm-a', '', bob.token);
    expect(bad.isError).to.equal(true);
    expect(bad.json).to.deep.equal(badRest.body);
    const edit = await t.tool(client, 'edit_comment', { id: tool.json.id, body: 'Edited from the agent side' });
    expect(edit.json).to.include({ edited: true });
    const gone = await t.tool(client, 'delete_comment', { id: tool.json.id });
    expect(gone.json).to.include({ status: 'deleted' });
  });
});
