/**
 * The inbound worker's failure rules (plugins/github/inbound.ts), through the real server with
 * GitHub's published examples, signed:
 * - a failure that may pass (GitHub's side or ours down for a moment: here the issues handler
 *   throwing once) is retried after a backoff, and holds the deliveries behind it in order;
 * - a delivery that can never apply (the graph refuses it: here the link maps `bug` to the
 *   `person` type, which no integration may create) is marked failed at once, its error shown
 *   on the link, and the queue goes on.
 * With no `people` map on the link, the login maps through a person node's `github` field.
 */
import { expect } from 'chai';
import { IdentityAuthority } from '../../../kernel/identity-guard.js';
import { handlers } from '../../../plugins/github/handlers/index.js';
import { runSecrets, startTestServer, type TestServer } from '../../helpers/harness.js';
import { deliver, example } from './webhook-examples.js';
import { until } from '../../helpers/until.js';

const SECRET = 'worker-webhook-secret-0000001';
const TOKEN = 'github_pat_worker_test_0123456789';
const LINKS = '/v1/integrations/github/links';
const METRICS = 'github-worker-metrics-secret-0001';

describe('github: the inbound worker retries and gives up as it should', function () {
  this.timeout(60_000);
  let t: TestServer;
  let linkId: string;
  const original = handlers.issues!;

  before(async () => {
    t = await startTestServer({ config: { metricsToken: METRICS } });
    runSecrets.add(METRICS);
    runSecrets.add(SECRET);
    runSecrets.add(TOKEN);
    const res = await t.api('POST', LINKS, {
      body: { repo: 'Codertocat/Hello-World', first_sync: false, token: TOKEN, webhook_secret: SECRET },
    });
    expect(res.status, res.text).to.equal(201);
    linkId = res.body.link.id;
  });
  after(async () => {
    handlers.issues = original;
    await t.close();
  });
  const link = async () => (await t.api('GET', `${LINKS}/${linkId}`)).body;

  it('a failure is retried after its backoff and holds the deliveries behind it', async () => {
    // a person whose node names their GitHub login (written as an identity operation would)
    const tenant = t.server.services.tenants.get(t.org)!;
    const actor = { personId: t.adminPerson, name: 'Admin', email: 'admin@localhost', agent: null, session: null };
    await tenant.write(actor, { op: 'test_add_person', via: 'rest', identity: IdentityAuthority.issue('test') }, async (draft) => {
      draft.put({
        frontmatter: {
          id: 'person-coder',
          type: 'person',
          status: 'active',
          title: 'Coder',
          summary: 'Coder',
          name: 'Coder',
          email: 'coder@example.test',
          github: '@Codertocat',
        },
        body: '',
      });
    });
    // down until the test says so: a retry that comes early (the backoff is jittered) fails again
    let down = true;
    handlers.issues = async (ctx, payload) => {
      if (down) throw new Error('GitHub is down for a moment');
      return original(ctx, payload);
    };
    expect((await deliver(t, { event: 'issues', payload: example('issues', 'opened', 1), secret: SECRET })).status).to.equal(202);
    expect((await deliver(t, { event: 'issues', payload: example('issues', 'edited'), secret: SECRET })).status).to.equal(202);
    const waiting = await until(async () => {
      const l = await link();
      return l.inbound.last_error ? l : undefined;
    });
    expect(waiting.inbound.last_error).to.equal('GitHub is down for a moment');
    expect(waiting.inbound.queued, 'both wait: the second behind the first').to.equal(2);
    expect((await t.api('GET', '/v1/nodes/issue-gh-hello-world-1')).status).to.equal(404);
    // back up; the backoff passes (the server's clock moves past the longest delay there is)
    down = false;
    t.clock.advance(6 * 60_000);
    const done = await until(async () => {
      const l = await link();
      return l.inbound.queued === 0 ? l : undefined;
    });
    expect(done.inbound.failed).to.equal(0);
    const node = await t.api('GET', '/v1/nodes/issue-gh-hello-world-1');
    expect(node.status).to.equal(200);
    expect(node.body.frontmatter.author, 'the login mapped through the github field').to.equal('person-coder');
    expect(node.body.frontmatter.edges).to.deep.include({ type: 'assigned', to: 'person-coder' });
    // in order: opened (empty body) first, then edited (GitHub's text)
    expect(node.body.body.trim()).to.equal(example('issues', 'edited').issue.body.trim());
  });

  it('a delivery the graph refuses is marked failed at once and the queue goes on', async () => {
    handlers.issues = original;
    const patched = await t.api('PATCH', `${LINKS}/${linkId}`, { body: { mappings: { label_types: { bug: 'person' } } } });
    expect(patched.status, patched.text).to.equal(200);
    // issue #2 of the published examples is a pull request; the comment example names issue #1, already synced
    const other = example('issues', 'opened', 2);
    other.issue.number = 3;
    other.issue.id = 444500999;
    const refused = await deliver(t, { event: 'issues', payload: other, secret: SECRET });
    expect(refused.status).to.equal(202);
    expect((await deliver(t, { event: 'issue_comment', payload: example('issue_comment', 'created'), secret: SECRET })).status).to.equal(
      202,
    );
    const l = await until(async () => {
      const v = await link();
      return v.inbound.queued === 0 ? v : undefined;
    });
    expect(l.inbound.failed).to.equal(1);
    expect(l.inbound.last_error).to.match(/person/);
    // the operator's view: the failed delivery in the tenant's gauge
    const scraped = await t.api('GET', '/metrics', { token: METRICS });
    expect(scraped.status).to.equal(200);
    expect(scraped.text).to.include(`workgraph_github_inbound{tenant="${t.org}",state="failed"} 1`);
    expect(scraped.text).to.include(`workgraph_github_inbound{tenant="${t.org}",state="queued"} 0`);
    const comments = await t.api('GET', '/v1/nodes/issue-gh-hello-world-1/comments');
    expect(comments.body.comments, 'the comment behind the refused delivery was applied').to.have.length(1);

    // the cause fixed, GitHub's "Redeliver" of the failed delivery queues it again and it applies
    expect((await t.api('PATCH', `${LINKS}/${linkId}`, { body: { mappings: { label_types: {} } } })).status).to.equal(200);
    const again = await deliver(t, { event: 'issues', payload: other, secret: SECRET, delivery: refused.delivery });
    expect(again.status).to.equal(202);
    await until(async () => ((await link()).inbound.queued === 0 ? true : undefined));
    expect((await t.api('GET', '/v1/nodes/issue-gh-hello-world-3')).status).to.equal(200);
    expect((await link()).inbound.failed).to.equal(0);
  });

  it('an issue the outbound side created comes back with its marker: paired with its node, no second node', async () => {
    const created = await t.api('POST', '/v1/nodes', {
      body: { nodes: [{ id: 'task-from-here', type: 'task', summary: 'Made here first' }] },
    });
    expect(created.status, created.text).to.equal(200);
    const before = (await t.api('GET', '/v1/nodes/task-from-here')).body.revision;
    const synced = (await link()).synced_issues as number;
    // the published `opened` example as the outbound side would have created it: its body ends with the marker
    const echo = example('issues', 'opened');
    echo.issue.number = 5;
    echo.issue.id = 444500555;
    echo.issue.body = `${echo.issue.body}\n\n<!-- work-graph:task-from-here -->`;
    expect((await deliver(t, { event: 'issues', payload: echo, secret: SECRET })).status).to.equal(202);
    await until(async () => ((await link()).inbound.queued === 0 ? true : undefined));
    expect((await link()).synced_issues).to.equal(synced + 1);
    expect((await t.api('GET', '/v1/nodes/issue-gh-hello-world-5')).status).to.equal(404);
    expect((await t.api('GET', '/v1/nodes/task-from-here')).body.revision).to.equal(before);
  });

  it('a node deleted here ends its pairing: later deliveries of the issue do not bring it back', async () => {
    const tenant = t.server.services.tenants.get(t.org)!;
    const actor = { personId: t.adminPerson, name: 'Admin', email: 'admin@localhost', agent: null, session: null };
    await tenant.write(actor, { op: 'test_delete', via: 'rest' }, async (draft) => draft.delete('issue-gh-hello-world-3'));
    const synced = (await link()).synced_issues as number;
    const other = example('issues', 'opened', 2);
    other.issue.number = 3;
    other.issue.id = 444500999;
    for (let i = 0; i < 2; i++) {
      expect((await deliver(t, { event: 'issues', payload: other, secret: SECRET })).status).to.equal(202);
      await until(async () => ((await link()).inbound.queued === 0 ? true : undefined));
      expect((await t.api('GET', '/v1/nodes/issue-gh-hello-world-3')).status).to.equal(404);
    }
    expect((await link()).synced_issues).to.equal(synced - 1);
  });
});
