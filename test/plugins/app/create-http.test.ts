/**
 * Issue 25 items 1-5 and 7 without a browser (the no-script paths): the create form (type
 * chooser from the registry, a form from the type's fields, messages a person can act on
 * next to their fields with what was typed kept, pickers that take a title or an id, nothing
 * written on a refusal), the pickers' JSON lookup, the node page's title/summary/fields edit
 * with the revision echo, assign and unassign by name, names instead of ids, history in
 * words, a terminal status releasing the lease, the favicon and the sign-in help.
 */
import { expect } from 'chai';
import { addPerson, startTestServer, type TestServer } from '../../helpers/harness.js';
import { humanMessage } from '../../../plugins/app/pages/create.js';
import { seedGraph } from './seed.js';
import { FormClient } from './form-client.js';

/** The text of an element's error message tied to a field (the `err-<name>` paragraph). */
const fieldError = (html: string, name: string): string | undefined => new RegExp(`id="err-${name}">([^<]*)<`).exec(html)?.[1];

describe('app: create and edit without script (HTTP)', function () {
  this.timeout(60_000);
  let t: TestServer;
  let bob: { id: string; token: string };
  let b: FormClient;

  before(async () => {
    t = await startTestServer();
    await seedGraph(t);
    bob = await addPerson(t, 'Bob Builder');
    b = new FormClient(t.url);
    await b.signedIn(t.adminToken);
  });
  after(async () => {
    await t?.close();
  });

  it('the header links "New"; /app/new chooses a type from the registry (no identity or feature-written types)', async () => {
    const res = await b.request('GET', '/app/new');
    expect(res.status).to.equal(200);
    expect(res.text).to.include('href="/app/new"');
    for (const type of ['task', 'issue', 'dec', 'spec']) expect(res.text).to.include(`href="/app/new?type=${type}"`);
    for (const type of ['person', 'agent', 'comment', 'run', 'capture']) expect(res.text).to.not.include(`href="/app/new?type=${type}"`);
    expect((await b.request('GET', '/app/new?type=person')).status).to.equal(404);
    expect((await b.request('GET', '/app/new?type=nonsense')).status).to.equal(404);
  });

  it('the form is built from the type: required ones marked, statuses and field choices as selects', async () => {
    const task = await b.request('GET', '/app/new?type=task');
    expect(task.status).to.equal(200);
    expect(task.text).to.match(/<label for="title">Title <span class="req">\(required\)<\/span>/);
    expect(task.text).to.match(/<label for="summary">Summary <span class="req">\(required\)/);
    expect(task.text).to.match(
      /<select id="status" name="status"><option value="open" selected>open<\/option><option value="in-progress">/,
    );
    expect(task.text).to.include('list="project-list" data-lookup="project"').and.include('data-lookup="node"');
    // without script the project list is there already (titles, the id as the label)
    expect(task.text).to.include('<option value="Web relaunch" label="proj-web"></option>');
    expect(task.text).to.include('<option value="' + bob.id + '">Bob Builder</option>');
    // the link types a person uses, blocks first; never the features' own
    const linkTypes = [...task.text.matchAll(/<select id="edge_type" name="edge_type">(.*?)<\/select>/gs)][0]![1]!;
    expect(linkTypes.indexOf('value="blocks" selected')).to.be.greaterThan(-1);
    for (const hidden of ['assigned', 'discusses', 'owned-by', 'review-requested', 'mentions'])
      expect(linkTypes).to.not.include(`value="${hidden}"`);
    // a type with its own fields: schema's applies_to is a required choice of types, hooks JSON
    const schema = await b.request('GET', '/app/new?type=schema');
    expect(schema.text).to.match(/<legend>Applies to <span class="req">\(required\)<\/span><\/legend>/);
    expect(schema.text).to.include('name="f_applies_to" value="task"');
    expect(schema.text).to.include('<textarea id="f_hooks" name="f_hooks"');
  });

  it('a missing required field and a bad id come back next to their fields in words, with what was typed kept; nothing is written', async () => {
    const res = await b.post('/app/new', {
      type: 'task',
      title: 'Ship the pricing page',
      summary: '',
      id: 'Task Pricing!',
      body: 'Draft **body**',
      project: 'Web relaunch',
    });
    expect(res.status).to.equal(422);
    expect(fieldError(res.text, 'summary')).to.equal('Summary is required: one or two sentences saying what this is');
    expect(fieldError(res.text, 'id')).to.equal(
      'This id cannot be used: use lowercase letters, digits and dashes, starting with a letter or digit',
    );
    expect(res.text).to.not.match(/\^\[a-z0-9\]/);
    // the server's ajv and id messages read the same way (no regex shown)
    expect(humanMessage('project', 'invalid task frontmatter at /project: must match pattern "^[a-z0-9][a-z0-9-]*$"')).to.equal(
      'use lowercase letters, digits and dashes, starting with a letter or digit',
    );
    expect(humanMessage('id', 'id must match ^[a-z0-9][a-z0-9-]*$')).to.equal(
      'use lowercase letters, digits and dashes, starting with a letter or digit',
    );
    expect(humanMessage('summary', 'summary must NOT have more than 500 characters')).to.equal(
      'Summary is too long: at most 500 characters',
    );
    expect(res.text).to.include('value="Ship the pricing page"').and.include('Draft **body**').and.include('value="Web relaunch"');
    expect(res.text).to.include('aria-invalid="true" aria-describedby="err-summary hint-summary"');
    expect((await t.api('GET', '/v1/nodes/task-pricing')).status).to.equal(404);
  });

  it('the schema’s own refusals are translated too: a type-list field left empty, bad JSON', async () => {
    const res = await b.post('/app/new', { type: 'schema', title: 'Extra rules', summary: 'More rules for tasks', f_hooks: '{not json' });
    expect(res.status).to.equal(422);
    expect(fieldError(res.text, 'f_applies_to')).to.equal('Applies to is required: choose at least one type');
    expect(fieldError(res.text, 'f_hooks')).to.equal('Hooks is not valid JSON: write it like {&quot;key&quot;: &quot;value&quot;}');
    // a refusal of the server's own checks (the schema type's validate hook) lands next to its field too
    const hook = await b.request('POST', '/app/new', [
      ['csrf', b.csrf],
      ['type', 'schema'],
      ['title', 'Extra rules'],
      ['summary', 'More rules for tasks'],
      ['f_applies_to', 'task'],
      ['f_hooks', '{"bogus": "x"}'],
    ]);
    expect(hook.status).to.equal(422);
    expect(fieldError(hook.text, 'f_hooks')).to.equal('hooks.bogus: unknown hook point; known: transition, validate');
    expect(hook.text).to.include('value="task" checked');
    expect((await t.api('GET', '/v1/nodes/schema-extra-rules')).status).to.equal(404);
  });

  it('a project or link target that names nothing, or names several, says so', async () => {
    await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          { id: 'task-twin-a', title: 'Twin', summary: 'one twin' },
          { id: 'task-twin-b', title: 'Twin', summary: 'other twin' },
        ],
      },
    });
    const res = await b.post('/app/new', {
      type: 'task',
      title: 'Linked',
      summary: 'Linked to nothing',
      edge_type: 'blocks',
      edge_to: 'Twin',
      project: 'No Such Project',
    });
    expect(res.status).to.equal(422);
    expect(fieldError(res.text, 'edge_to')).to.match(
      /^Several nodes are called “Twin”: type the id of the one you mean \(task-twin-a, task-twin-b\)$/,
    );
    expect(fieldError(res.text, 'project')).to.match(/^No project is called “No Such Project”/);
  });

  it('a complete form creates the node by titles and names: project, link, assignee and priority', async () => {
    const res = await b.post('/app/new', {
      type: 'task',
      title: 'Ship the pricing page',
      summary: 'Publish the new pricing page',
      project: 'Web relaunch',
      edge_type: 'blocks',
      edge_to: 'Launch the new site',
      assignee: bob.id,
      priority: 'p1',
      body: 'Steps',
    });
    expect(res.status).to.equal(303);
    expect(res.location).to.equal('/app/nodes/task-ship-the-pricing-page');
    const node = (await t.api('GET', '/v1/nodes/task-ship-the-pricing-page')).body;
    expect(node.frontmatter).to.include({ title: 'Ship the pricing page', project: 'proj-web', priority: 'p1', status: 'open' });
    expect(node.frontmatter.edges).to.deep.include.members([
      { type: 'blocks', to: 'task-launch' },
      { type: 'assigned', to: bob.id },
    ]);
    const page = await b.request('GET', res.location!);
    expect(page.text).to.include('Created task “Ship the pricing page”');
    // the same title again: the id made from it exists, said next to the id
    const again = await b.post('/app/new', { type: 'task', title: 'Ship the pricing page', summary: 'Again' });
    expect(again.status).to.equal(422);
    expect(fieldError(again.text, 'id')).to.equal('task-ship-the-pricing-page already exists: choose another id or change the title');
  });

  it('GET /app/lookup suggests by title for nodes, projects and people (JSON), and refuses an unknown kind', async () => {
    const nodes = JSON.parse((await b.request('GET', '/app/lookup?kind=node&q=launch')).text);
    expect(nodes.results[0]).to.deep.equal({ id: 'task-launch', title: 'Launch the new site', type: 'task' });
    const projects = JSON.parse((await b.request('GET', '/app/lookup?kind=project&q=web')).text);
    expect(projects.results.map((r: { id: string }) => r.id)).to.include('proj-web');
    const people = JSON.parse((await b.request('GET', '/app/lookup?kind=person&q=bob')).text);
    expect(people.results).to.deep.equal([{ id: bob.id, title: 'Bob Builder', type: 'person' }]);
    expect((await b.request('GET', '/app/lookup?kind=secrets&q=x')).status).to.equal(422);
    // signed out: no suggestions
    expect((await new FormClient(t.url).request('GET', '/app/lookup?kind=node&q=launch')).status).to.equal(303);
  });
  it('edits title, summary and fields with the revision echo; a stale form is a 409 showing their values beside the typed ones', async () => {
    const page = await b.request('GET', '/app/nodes/task-docs');
    expect(page.text).to.include('Edit title, summary and fields');
    const revision = /action="\/app\/nodes\/task-docs\/fields"[^]*?name="revision" value="([^"]+)"/.exec(page.text)![1]!;
    const saved = await b.post('/app/nodes/task-docs/fields', {
      revision,
      title: 'Write the operator handbook',
      summary: 'Document deployment and backups',
      project: 'Web relaunch',
    });
    expect(saved.status).to.equal(303);
    expect((await b.request('GET', '/app/nodes/task-docs')).text).to.include('Saved: Title');
    const node = (await t.api('GET', '/v1/nodes/task-docs')).body;
    expect(node.frontmatter).to.include({ title: 'Write the operator handbook', project: 'proj-web' });
    // the same (now stale) revision: someone else saved meanwhile
    await t.api('PATCH', '/v1/nodes/task-docs', {
      token: bob.token,
      body: { revision: node.revision, set: { title: 'Operator guide by Bob' } },
    });
    const stale = await b.post('/app/nodes/task-docs/fields', {
      revision: node.revision,
      title: 'Admin title',
      summary: 'Document deployment and backups',
      project: 'proj-web',
    });
    expect(stale.status).to.equal(409);
    expect(stale.text).to.include('Someone else changed this node').and.include('<strong>Bob Builder</strong> saved');
    expect(stale.text).to.match(/<th scope="row">Title<\/th><td>Operator guide by Bob<\/td><td>Admin title<\/td>/);
    expect(stale.text).to.include('id="mine-title" name="title" value="Admin title"');
    expect((await t.api('GET', '/v1/nodes/task-docs')).body.frontmatter.title).to.equal('Operator guide by Bob');
    // an empty title is refused in words, nothing written
    const fresh = (await t.api('GET', '/v1/nodes/task-docs')).body.revision;
    const empty = await b.post('/app/nodes/task-docs/fields', { revision: fresh, title: ' ', summary: 'x', project: '' });
    expect(empty.status).to.equal(422);
    expect(empty.text).to.include('the title is required');
    expect((await t.api('GET', '/v1/nodes/task-docs')).body.revision).to.equal(fresh);
  });

  it('assigns and unassigns by name; "Link to another node" offers person edge types only and takes a title', async () => {
    const page = await b.request('GET', '/app/nodes/task-signup');
    const picker = /<select id="assign-sel" name="person">(.*?)<\/select>/s.exec(page.text)![1]!;
    expect(picker).to.include(`<option value="${bob.id}">Bob Builder</option>`);
    expect(picker).to.not.match(/>person-/);
    const edgeTypes = /<select id="edge-type" name="type">(.*?)<\/select>/s.exec(page.text)![1]!;
    expect([...edgeTypes.matchAll(/value="([^"]+)"/g)].map((m) => m[1])).to.deep.equal([
      'blocks',
      'relates-to',
      'part-of',
      'resolves',
      'supersedes',
      'concerns',
      'answers',
    ]);
    expect((await b.post('/app/nodes/task-signup/assign', { person: bob.id })).status).to.equal(303);
    let after = await b.request('GET', '/app/nodes/task-signup');
    expect(after.text).to.include('Assigned Bob Builder');
    expect(after.text).to.match(/<ul class="plain assignees"><li><a href="\/app\/nodes\/person-[a-z0-9]+" class="person">Bob Builder<\/a>/);
    expect((await t.api('GET', '/v1/nodes/task-signup')).body.frontmatter.edges).to.deep.include({ type: 'assigned', to: bob.id });
    // the history says it in words
    expect(after.text).to.match(
      /class="person">Admin<\/a> assigned <a href="\/app\/nodes\/person-[a-z0-9]+" class="person">Bob Builder<\/a>/,
    );
    expect((await b.post('/app/nodes/task-signup/unassign', { person: bob.id })).status).to.equal(303);
    after = await b.request('GET', '/app/nodes/task-signup');
    expect(after.text).to.include('Unassigned Bob Builder');
    expect((await t.api('GET', '/v1/nodes/task-signup')).body.frontmatter.edges ?? []).to.not.deep.include({
      type: 'assigned',
      to: bob.id,
    });
    const notPerson = await b.post('/app/nodes/task-signup/assign', { person: 'task-launch' });
    expect(notPerson.status).to.equal(422);
    expect(notPerson.text).to.include('choose a person from the list');
    // a link by title
    expect((await b.post('/app/nodes/task-signup/edges', { type: 'relates-to', to: 'crash on empty search' })).status).to.equal(303);
    expect((await t.api('GET', '/v1/nodes/task-signup')).body.frontmatter.edges).to.deep.include({ type: 'relates-to', to: 'issue-crash' });
    const internal = await b.post('/app/nodes/task-signup/edges', { type: 'owned-by', to: 'issue-crash' });
    expect(internal.status).to.equal(422);
  });

  it('names instead of ids: fields, lease and queue; stamps behind Details; history entries in words', async () => {
    await t.api('POST', '/v1/nodes/task-launch/priority', { body: { priority: 'p2' } });
    const page = await b.request('GET', '/app/nodes/task-launch');
    const shown = page.text.slice(page.text.indexOf('id="fields-h"'), page.text.indexOf('<details class="stamps">'));
    expect(shown).to.not.match(/<dt>(author|priority_by|priority_via|authored_via)<\/dt>/);
    const details = page.text.slice(page.text.indexOf('<details class="stamps">'));
    expect(details).to.match(/<dt>author<\/dt><dd><a href="\/app\/nodes\/person-[a-z0-9]+" class="person">Admin<\/a><\/dd>/);
    expect(details).to.include('<dt>revision</dt>');
    expect(shown).to.include('<dt>project</dt><dd><a href="/app/nodes/proj-web">Web relaunch</a></dd>');
    const history = page.text.slice(
      page.text.indexOf('<ol class="history">'),
      page.text.indexOf('</ol>', page.text.indexOf('<ol class="history">')),
    );
    expect(history).to.include('set priority to p2').and.include('created task “Launch the new site”');
    expect(history).to.not.match(/put_node:|set_priority:/);
    // a body edit reads as one
    const read = (await t.api('GET', '/v1/nodes/task-launch')).body;
    await t.api('PATCH', '/v1/nodes/task-launch', { token: bob.token, body: { revision: read.revision, body: 'Announce on the blog.' } });
    expect((await b.request('GET', '/app/nodes/task-launch')).text).to.match(/class="person">Bob Builder<\/a> edited the body/);
    // one change's page says it in words too
    const sha = (await t.api('GET', '/v1/nodes/task-launch/history?limit=1')).body.history[0].sha;
    const entry = await b.request('GET', `/app/nodes/task-launch/history/${sha}`);
    expect(entry.text).to.match(/<h1>Bob Builder edited the body<\/h1>/);
    // the queue's assignee filter offers names
    expect((await b.request('GET', '/app/queue')).text).to.include(`<option value="${bob.id}">Bob Builder</option>`);
    // the queue's "why" names the person, not the id
    await t.api('POST', '/v1/nodes', {
      token: bob.token,
      body: { nodes: [{ id: 'dec-names', title: 'Name things', summary: 'A proposed decision' }] },
    });
    const queue = await b.request('GET', '/app/queue?type=dec');
    expect(queue.text).to.match(/Proposed by <a href="\/app\/nodes\/person-[a-z0-9]+" class="person">Bob Builder<\/a>/);
  });

  it('a terminal status from the app releases the caller’s lease; the page no longer says “You hold it”', async () => {
    expect((await b.post('/app/nodes/issue-crash/claim', {})).status).to.equal(303);
    expect((await b.request('GET', '/app/nodes/issue-crash')).text).to.include('You hold it');
    expect((await b.post('/app/nodes/issue-crash/status', { status: 'resolved' })).status).to.equal(303);
    const page = await b.request('GET', '/app/nodes/issue-crash');
    expect(page.text).to.not.include('You hold it');
    expect(page.text).to.include('your lease on issue-crash was released');
    expect(page.text).to.include('Nobody holds it.');
    // the assigned edge stays: the record of who carried it (docs/decisions.md)
    expect((await t.api('GET', '/v1/nodes/issue-crash')).body.frontmatter.edges).to.deep.include({ type: 'assigned', to: t.adminPerson });
  });

  it('analytics: open work by status shows the open statuses; the median counts started items only', async () => {
    const page = await b.request('GET', '/app/analytics');
    const data = JSON.parse(/<script type="application\/json" id="chart-data">(.*?)<\/script>/.exec(page.text)![1]!);
    expect(data.wip.labels).to.include('open').and.include('proposed');
    expect(data.wip.labels).to.not.include('done');
    expect(data.wip.values.every((n: number) => n > 0)).to.equal(true);
    expect(page.text).to.match(/median cycle time \(days\) of \d+ item\(s\) started and finished/);
  });

  it('favicon, graph legend, and sign-in help that does not ask for a token to get a token', async () => {
    const page = await b.request('GET', '/app/queue');
    expect(page.text).to.include('<link rel="icon" type="image/svg+xml" href="/app/static/favicon.svg">');
    const icon = await b.request('GET', '/app/static/favicon.svg');
    expect(icon.status).to.equal(200);
    expect(icon.headers.get('content-type')).to.equal('image/svg+xml');
    expect(icon.text).to.include('<svg');
    const graph = await b.request('GET', '/app/nodes/task-launch/graph');
    expect(graph.text).to.include('<ul class="legend" aria-label="Colour legend">').and.include('swatch done');
    const signin = await new FormClient(t.url).request('GET', '/app/signin');
    expect(signin.text).to.not.include('/v1/me/tokens');
    expect(signin.text).to.include('Ask an administrator for a sign-in link');
  });
});
