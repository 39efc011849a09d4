/**
 * The `comment.*` events (kernel/events/derive.ts, docs/events.md "Comments"), read from the
 * tenant's log after real writes: added with its mentions, mentioned once per newly named
 * person (never the author), edited naming only the new mentions, deleted with its author; the
 * discussed node first in `nodes`, in its project.
 */
import { expect } from 'chai';
import { addPerson, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';

describe('comments: events', function () {
  this.timeout(60_000);
  let t: TestServer;
  const log = () => t.server.services.tenants.get(t.org)!.events;

  before(async () => {
    t = await startTestServer();
    await putNodes(t, [{ id: 'task-cm-ev', type: 'task', summary: 'Evented', project: 'proj-root' }]);
  });
  after(async () => t?.close());

  it('added, mentioned, edited (only new mentions), deleted', async () => {
    const ada = await addPerson(t, 'Ada Lovelace');
    const bob = await addPerson(t, 'Bob Builder');
    const zoe = await addPerson(t, 'Zoe Zed');
    const start = log().lastId;
    const added = await t.api('POST', '/v1/nodes/task-cm-ev/comments', { token: ada.token, body: { body: '@bob and @ada: see this' } });
    expect(added.status, added.text).to.equal(201);
    const id = added.body.id as string;
    const first = await log().read(start, { types: ['comment.*'] });
    expect(first.map((e) => [e.type, e.nodes])).to.deep.equal([
      ['comment.added', ['task-cm-ev', id]],
      ['comment.mentioned', ['task-cm-ev', bob.id, id]],
    ]);
    expect(first[0]!.payload).to.deep.include({
      comment: id,
      node: 'task-cm-ev',
      mentions: [bob.id, ada.id],
      link: '/v1/nodes/task-cm-ev',
    });
    expect(first[0]!.project).to.equal('proj-root');
    expect(first[0]!.actor).to.deep.include({ person: ada.id, name: 'Ada Lovelace' });
    expect(first[1]!.payload).to.include({ person: bob.id, excerpt: '@bob and @ada: see this' });

    const mid = log().lastId;
    const edited = await t.api('PATCH', `/v1/comments/${id}`, { token: ada.token, body: { body: '@bob and @zoe: see this' } });
    expect(edited.status, edited.text).to.equal(200);
    const second = await log().read(mid, { types: ['comment.*'] });
    expect(second.map((e) => [e.type, e.type === 'comment.mentioned' ? e.payload.person : null])).to.deep.equal([
      ['comment.edited', null],
      ['comment.mentioned', zoe.id],
    ]);

    const late = log().lastId;
    expect((await t.api('DELETE', `/v1/comments/${id}`)).status).to.equal(200);
    const third = await log().read(late, { types: ['comment.*'] });
    expect(third.map((e) => e.type)).to.deep.equal(['comment.deleted']);
    expect(third[0]!.payload).to.include({ comment: id, node: 'task-cm-ev', author: ada.id });
    expect(third[0]!.actor?.person).to.equal(t.adminPerson);
  });
});
