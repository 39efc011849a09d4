/**
 * The node page's discussion over plain HTTP (plugins/app/pages/comments.ts): comments listed
 * with author names and times, markdown sanitized, a mention a link to the person; posting
 * needs the session's CSRF token; a blank comment comes back inline (422) with nothing
 * written; the delete button is the author's (or an admin's), and another person's delete is
 * refused; the edit form is the author's alone, saves with the revision it was drawn with, and
 * a stale or blank edit comes back inline with the text kept and nothing written.
 */
import { expect } from 'chai';
import { addPerson, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';
import { FormClient } from '../app/form-client.js';

describe('comments in the web app (node page)', function () {
  this.timeout(60_000);
  let t: TestServer;
  let ada: { id: string; token: string };
  let bob: { id: string; token: string };

  before(async () => {
    t = await startTestServer();
    ada = await addPerson(t, 'Ada Lovelace');
    bob = await addPerson(t, 'Bob Builder');
    await putNodes(t, [{ id: 'task-cm-page', type: 'task', title: 'Discuss the page', summary: 'Talk about it' }]);
  });
  after(async () => t?.close());

  it('posts a comment with a mention: listed with the author’s name, sanitized, the mention a link to the person', async () => {
    const s = new FormClient(t.url);
    await s.signedIn(ada.token);
    const page = await s.request('GET', '/app/nodes/task-cm-page');
    expect(page.text).to.include('No comments yet.');
    const noCsrf = await s.request('POST', '/app/nodes/task-cm-page/comments', { body: 'Sneaky' });
    expect(noCsrf.status).to.equal(403);
    const body = 'Can you **check** this, @bob-builder? <script>alert(1)</script> [click](javascript:alert(1)) and @nobody';
    const posted = await s.request('POST', '/app/nodes/task-cm-page/comments', { csrf: s.csrfOf(page.text), body });
    expect(posted.status, posted.text.slice(0, 500)).to.equal(303);
    expect(posted.location).to.match(/^\/app\/nodes\/task-cm-page#comment-[0-9a-f]{16}$/);
    const after = await s.request('GET', '/app/nodes/task-cm-page');
    expect(after.text).to.include('Comment posted; mentioned Bob Builder');
    expect(after.text).to.include('Comments (1)');
    const section = after.text.slice(after.text.indexOf('id="comments-h"'));
    expect(section).to.include(`<a href="/app/nodes/${bob.id}" title="Bob Builder">@bob-builder</a>`);
    expect(section).to.include(`<a href="/app/nodes/${ada.id}">Ada Lovelace</a>`);
    expect(section).to.include('<strong>check</strong>');
    expect(section).to.include('@nobody');
    expect(section).to.match(/<time datetime="\d{4}-\d\d-\d\dT/);
    // the rendered text: no script, no script link (the author's edit fold holds the raw text, escaped)
    const rendered = section.slice(section.indexOf('<div class="markdown">'), section.indexOf('</div>'));
    expect(rendered).to.include('<strong>check</strong>');
    expect(rendered).to.not.include('<script>alert');
    expect(rendered).to.not.include('javascript:');
    expect(section).to.not.include('<script>alert');
    expect(section).to.include('&lt;script&gt;alert(1)&lt;/script&gt; [click](javascript:alert(1)) and @nobody</textarea>');
    expect(section).to.include('>Delete</button>');
    // the comment's own page is its place on the discussed node's page
    const id = /#(comment-[0-9a-f]{16})$/.exec(posted.location!)![1]!;
    const own = await s.request('GET', `/app/nodes/${id}`);
    expect(own.status).to.equal(303);
    expect(own.location).to.equal(`/app/nodes/task-cm-page#${id}`);
  });

  it('a blank comment is 422 inline with nothing written; another person sees no delete button and cannot delete', async () => {
    const s = new FormClient(t.url);
    await s.signedIn(bob.token);
    const page = await s.request('GET', '/app/nodes/task-cm-page');
    expect(page.text).to.not.include('>Delete</button>');
    const head = t.server.services.tenants.get(t.org)!.head;
    const blank = await s.request('POST', '/app/nodes/task-cm-page/comments', { csrf: s.csrfOf(page.text), body: '   ' });
    expect(blank.status).to.equal(422);
    expect(blank.text).to.include('a comment needs some text').and.include('validation_failed');
    expect(t.server.services.tenants.get(t.org)!.head).to.equal(head);
    const id = /id="(comment-[0-9a-f]{16})"/.exec(page.text)![1]!;
    const del = await s.request('POST', `/app/comments/${id}/delete`, { csrf: s.csrfOf(page.text) });
    expect(del.status).to.equal(303);
    const back = await s.request('GET', del.location!);
    expect(back.text).to.include('Could not delete the comment').and.include(id);
    // the admin may
    const admin = new FormClient(t.url);
    await admin.signedIn(t.adminToken);
    const adminPage = await admin.request('GET', '/app/nodes/task-cm-page');
    expect(adminPage.text).to.include('>Delete</button>');
    const gone = await admin.request('POST', `/app/comments/${id}/delete`, { csrf: admin.csrfOf(adminPage.text) });
    expect(gone.status).to.equal(303);
    expect((await admin.request('GET', '/app/nodes/task-cm-page')).text)
      .to.include('Comment deleted')
      .and.include('No comments yet.');
  });

  it('the author edits a comment from its fold; a stale revision is 409 inline with the text kept, a blank one 422, nothing written', async () => {
    const s = new FormClient(t.url);
    await s.signedIn(ada.token);
    const page = await s.request('GET', '/app/nodes/task-cm-page');
    const posted = await s.request('POST', '/app/nodes/task-cm-page/comments', {
      csrf: s.csrfOf(page.text),
      body: 'First thoughts on the page',
    });
    const id = /#(comment-[0-9a-f]{16})$/.exec(posted.location!)![1]!;
    const mine = await s.request('GET', '/app/nodes/task-cm-page');
    const item = mine.text.slice(mine.text.indexOf(`id="${id}"`));
    expect(item).to.include('<summary>Edit</summary>').and.include(`action="/app/comments/${id}/edit"`);
    const revision = /name="revision" value="([^"]+)"/.exec(item)![1]!;
    expect(item).to.include('>First thoughts on the page</textarea>');

    // not Bob's to edit, nor the admin's (who may delete it)
    for (const token of [bob.token, t.adminToken]) {
      const other = new FormClient(t.url);
      await other.signedIn(token);
      const theirs = await other.request('GET', '/app/nodes/task-cm-page');
      expect(theirs.text.slice(theirs.text.indexOf(`id="${id}"`))).to.not.include(`/app/comments/${id}/edit`);
      const refused = await other.request('POST', `/app/comments/${id}/edit`, {
        csrf: other.csrfOf(theirs.text),
        body: 'Rewritten',
        revision: '',
      });
      expect(refused.status).to.equal(403);
      expect(refused.text).to.include('forbidden');
    }

    const saved = await s.request('POST', `/app/comments/${id}/edit`, {
      csrf: s.csrfOf(mine.text),
      body: 'Second thoughts, @bob-builder: **ship it**',
      revision,
    });
    expect(saved.status, saved.text.slice(0, 500)).to.equal(303);
    expect(saved.location).to.equal(`/app/nodes/task-cm-page#${id}`);
    const after = await s.request('GET', '/app/nodes/task-cm-page');
    const edited = after.text.slice(after.text.indexOf(`id="${id}"`));
    expect(after.text).to.include('Comment saved');
    expect(edited)
      .to.include('<strong>ship it</strong>')
      .and.include(`<a href="/app/nodes/${bob.id}" title="Bob Builder">@bob-builder</a>`);
    expect(edited).to.match(/edited <time datetime="\d{4}-/);
    expect(edited).to.not.include('First thoughts');

    // the same revision again: someone else's change (this edit) came first
    const head = t.server.services.tenants.get(t.org)!.head;
    const stale = await s.request('POST', `/app/comments/${id}/edit`, {
      csrf: s.csrfOf(after.text),
      body: 'Third thoughts from an old tab',
      revision,
    });
    expect(stale.status).to.equal(409);
    expect(stale.text).to.include('Not done: ').and.include('(409 conflict)');
    const fold = stale.text.slice(stale.text.indexOf(`id="${id}"`));
    expect(fold).to.include('<details class="comment-edit" open>').and.include('>Third thoughts from an old tab</textarea>');
    const newer = /name="revision" value="([^"]+)"/.exec(fold)![1]!;
    expect(newer).to.not.equal(revision);
    const blank = await s.request('POST', `/app/comments/${id}/edit`, { csrf: s.csrfOf(after.text), body: '  ', revision: newer });
    expect(blank.status).to.equal(422);
    expect(blank.text).to.include('a comment needs some text');
    expect(t.server.services.tenants.get(t.org)!.head).to.equal(head);

    // saving the kept text with the newer revision is the person's decision, and goes through
    const again = await s.request('POST', `/app/comments/${id}/edit`, {
      csrf: s.csrfOf(after.text),
      body: 'Third thoughts from an old tab',
      revision: newer,
    });
    expect(again.status).to.equal(303);
    expect((await s.request('GET', '/app/nodes/task-cm-page')).text).to.include('Third thoughts from an old tab</p>');
  });
});
