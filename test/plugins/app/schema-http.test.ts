/**
 * The schema authors' pages over plain HTTP (issue 25 item 5): the registry and type pages,
 * the editor's propose with the revision echo (a stale one is a 409 page with the text kept),
 * the proposal page's diff against the last active version, its dry run, the self-approval
 * ban's message for the author, approval by another person, and bad input as 4xx pages. The
 * browser flow (CodeMirror, axe) is test/plugins/app/schema.test.ts.
 */
import { expect } from 'chai';
import { addPerson, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';
import { FormClient } from './form-client.js';

const gate =
  "(input) => input.to !== 'done' || input.from === 'review' ? { allow: true } : { allow: false, reason: 'move to review first' }";

describe('app: schema pages over HTTP', function () {
  this.timeout(60_000);
  let t: TestServer;
  let ada: FormClient;
  let bob: FormClient;
  before(async () => {
    t = await startTestServer();
    await putNodes(t, [
      { id: 'task-sh-open', type: 'task', title: 'An open task', summary: 'Open' },
      { id: 'task-sh-review', type: 'task', title: 'A task in review', summary: 'Review', status: 'review' },
    ]);
    ada = new FormClient(t.url);
    await ada.signedIn(t.adminToken, '/app/schema');
    bob = new FormClient(t.url);
    await bob.signedIn((await addPerson(t, 'Bob Reviewer')).token, '/app/schema');
  });
  after(async () => t?.close());

  it('the registry page lists node types and edge types with inverses and aliases; the type page shows fields, moves and hook code', async () => {
    const reg = await ada.request('GET', '/app/schema');
    expect(reg.status).to.equal(200);
    expect(reg.text).to.include('<h1>Schema</h1>').and.include('href="/app/schema/task"');
    expect(reg.text).to.match(/<code>blocks<\/code>[\s\S]*?<code>blocked-by<\/code>[\s\S]*?<code>depends-on<\/code>/);
    const task = await ada.request('GET', '/app/schema/task');
    expect(task.status).to.equal(200);
    expect(task.text).to.include('<h1>Type: task</h1>').and.include('Statuses and legal moves').and.include('<code>in-progress</code>');
    expect(task.text).to.include('built-in (seed)').and.include('const table = ');
    const schemaType = await ada.request('GET', '/app/schema/schema');
    expect(schemaType.text).to.include('<code>applies_to</code>').and.include('required');
  });

  it('the editor proposes; the proposal shows a diff, dry-runs, refuses the author and is approved by another person', async () => {
    const form = {
      id: 'schema-sh-gate',
      summary: 'Tasks go through review',
      applies_to: 'task',
      transition: gate,
      validate: '',
      body: 'Why.\n',
      revision: '',
    };
    const saved = await ada.post('/app/schema/editor', form);
    expect(saved.status, saved.text).to.equal(303);
    expect(saved.location).to.equal('/app/schema/proposals/schema-sh-gate');
    const node = await t.api('GET', '/v1/nodes/schema-sh-gate');
    expect(node.body.frontmatter).to.include({ status: 'proposed', applies_to: 'task' });
    expect(node.body.frontmatter.hooks.transition).to.equal(gate);

    const page = await ada.request('GET', '/app/schema/proposals/schema-sh-gate');
    expect(page.text).to.include('Never active before').and.include('<span class="add">+applies_to: task</span>');
    expect(page.text).to.include('You are the last author');

    const dry = await ada.post('/app/schema/proposals/schema-sh-gate/dry-run', {
      node: ['task-sh-open', 'task-sh-review'],
      to: 'done',
    });
    expect(dry.status).to.equal(200);
    expect(dry.text).to.include('Dry run result').and.include('<span class="verdict deny">deny</span>').and.include('move to review first');
    expect(dry.text)
      .to.include('<span class="verdict allow">allow</span>')
      .and.match(/\d+(\.\d+)? ms/);

    const revision = /name="revision" value="([0-9a-f]+)"/.exec(page.text)![1]!;
    const refused = await ada.post('/app/schema/proposals/schema-sh-gate/approve', { revision });
    expect(refused.status).to.equal(409);
    expect(refused.text).to.include('self-approval ban');
    expect((await t.api('GET', '/v1/nodes/schema-sh-gate')).body.frontmatter.status).to.equal('proposed');

    const approved = await bob.post('/app/schema/proposals/schema-sh-gate/approve', { revision });
    expect(approved.status).to.equal(303);
    expect((await t.api('GET', '/v1/nodes/schema-sh-gate')).body.frontmatter.status).to.equal('active');
    expect((await t.api('POST', '/v1/nodes/task-sh-open/status', { body: { status: 'done' } })).status).to.equal(409);
  });

  it('a change to an active schema is proposed again and diffed against the active version; a stale revision is a 409 with the text kept', async () => {
    const edit = await ada.request('GET', '/app/schema/editor?id=schema-sh-gate');
    expect(edit.status).to.equal(200);
    expect(edit.text).to.include('data-code-editor').and.include('/app/static/hook-editor.js');
    const revision = /name="revision" value="([0-9a-f]+)"/.exec(edit.text)![1]!;
    const changed = gate.replace('move to review first', 'review comes before done');
    const form = {
      id: 'schema-sh-gate',
      summary: 'Tasks go through review',
      applies_to: 'task',
      transition: changed,
      validate: '',
      body: 'Why.\n',
      revision,
    };
    const resaved = await ada.post('/app/schema/editor', form);
    expect(resaved.status, /role="alert">([^<]*)/.exec(resaved.text)?.[1]).to.equal(303);
    expect((await t.api('GET', '/v1/nodes/schema-sh-gate')).body.frontmatter.status).to.equal('proposed');
    const page = await bob.request('GET', '/app/schema/proposals/schema-sh-gate');
    expect(page.text).to.include('Against the last active version');
    expect(page.text)
      .to.match(/<span class="del">-.*move to review first/)
      .and.match(/<span class="add">\+.*review comes before done/);

    const stale = await ada.post('/app/schema/editor', { ...form, transition: `${changed} ` + '// again' });
    expect(stale.status).to.equal(409);
    expect(stale.text).to.include('your text is kept').and.include('// again');
  });

  it('a workflow proposal shows its diff and approve/reject, without a dry run (workflows have no hooks)', async () => {
    await putNodes(t, [
      { id: 'wf-sh-flow', type: 'wf', title: 'Release flow', summary: 'Build then ship', steps: [{ id: 'build', title: 'Build' }] },
    ]);
    const page = await bob.request('GET', '/app/schema/proposals/wf-sh-flow');
    expect(page.status).to.equal(200);
    expect(page.text).to.include('<h1>Release flow</h1>').and.include('workflow <code>wf-sh-flow</code>').and.include('Approve');
    expect(page.text).to.include('<span class="add">+steps:</span>').and.not.include('Dry run');
    const reg = await bob.request('GET', '/app/schema');
    expect(reg.text).to.include('href="/app/schema/proposals/wf-sh-flow"');
  });

  it('bad input is a 4xx page, never a 500, and writes nothing', async () => {
    const head = (await t.api('GET', '/v1/status')).body.head;
    expect((await ada.request('GET', '/app/schema/nosuchtype')).status).to.equal(404);
    expect((await ada.request('GET', '/app/schema/proposals/task-sh-open')).status).to.equal(404);
    expect((await ada.request('GET', '/app/schema/editor?id=task-sh-open')).status).to.equal(404);
    const badId = await ada.post('/app/schema/editor', {
      id: 'Not An Id',
      summary: 'x',
      applies_to: 'task',
      transition: gate,
      revision: '',
    });
    expect(badId.status).to.equal(422);
    expect(badId.text).to.include('the id must start with schema-').and.include('move to review first');
    const noHook = await ada.post('/app/schema/editor', {
      id: 'schema-sh-empty',
      summary: 'x',
      applies_to: 'task',
      revision: '',
    });
    expect(noHook.status).to.equal(422);
    const noNodes = await ada.post('/app/schema/editor/dry-run', {
      id: 'schema-sh-x',
      summary: 'x',
      applies_to: 'task',
      transition: gate,
      revision: '',
      nodes: '',
    });
    expect(noNodes.status).to.equal(422);
    const missing = await ada.post('/app/schema/proposals/schema-sh-gate/dry-run', { node: ['task-nowhere'] });
    expect(missing.status).to.equal(404);
    expect((await ada.post('/app/schema/proposals/schema-sh-gate/approve', { csrf: 'wrong' })).status).to.equal(403);
    expect((await t.api('GET', '/v1/status')).body.head).to.equal(head);
  });

  it('the editor bundle is served as a script from the app', async () => {
    const res = await ada.request('GET', '/app/static/hook-editor.js');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/javascript/);
    expect(res.text.length).to.be.above(100_000);
  });
});
