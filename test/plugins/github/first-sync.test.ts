/**
 * The first sync of a linked repository (plugins/github/first-sync.ts): the issues come in
 * through the importer and each node is paired with its issue. The listing is made with the
 * link's token against the mock generated from GitHub's published OpenAPI description (which
 * refuses a request the description does not allow); the issues imported are GitHub's own
 * published issue objects (the `issue` of `@octokit/webhooks-examples`, numbers and states
 * adapted), since the description's one listed example is a pull request.
 */
import { expect } from 'chai';
import { FIRST_SYNC_EVENT, firstSync, firstSyncDeliveryOf, syncIssuePages } from '../../../plugins/github/first-sync.js';
import { inboundContext, mapperOf } from '../../../plugins/github/inbound.js';
import { storesOf, type StoredLink } from '../../../plugins/github/store.js';
import { GithubMock } from '../../helpers/github-mock.js';
import { addPerson, startTestServer, type TestServer } from '../../helpers/harness.js';
import { at, deliver, example, linkRepo, node } from './code-helpers.js';
import { until } from '../../helpers/until.js';

describe('github: the first sync of a linked repository', function () {
  let mock: GithubMock;
  let t: TestServer;
  let person: string;
  let link: StoredLink;

  before(async function () {
    this.timeout(120_000);
    mock = await GithubMock.start();
    t = await startTestServer({ config: { githubApiUrl: mock.url } });
    person = (await addPerson(t, 'Coder Tocat')).id;
    const id = await linkRepo(t, { codertocat: person });
    link = storesOf(t.server.services.tenants.get(t.org)!).links.get(id)!;
  });
  after(async () => {
    await t?.close();
    await mock?.stop();
  });

  /** The admin who linked the repository, as the first sync runs (the importer is an admin's operation). */
  const adminCtx = () =>
    inboundContext(t.server.services.tenants.get(t.org)!, t.server.services, link, 'first-sync', 'first_sync').as(null);

  it("lists the repository's issues with the link's token in a request GitHub's description allows; a pull request in the list is not imported", async () => {
    const report = await firstSync(adminCtx(), link, mapperOf(t.server.services.tenants.get(t.org)!, link));
    const calls = mock.calls('GET', /^\/repos\/Codertocat\/Hello-World\/issues$/);
    expect(calls).to.have.length(1);
    expect(calls[0]!.status).to.equal(200);
    const query = new URL(calls[0]!.url, 'http://x').searchParams;
    expect(Object.fromEntries(query)).to.deep.equal({ state: 'all', per_page: '100', sort: 'created', direction: 'asc', page: '1' });
    expect(calls[0]!.headers.authorization).to.equal('token github_pat_11TESTTOKENFORCODEMOVES');
    // the description's example issue carries `pull_request`: GitHub's mark of a pull request
    expect(report).to.include({ issues: 0, pull_requests: 1, created: 0, records: 0 });
  });

  it('imports the issues as nodes, dated as GitHub dates them, each paired with its sync record; a re-run duplicates and overwrites nothing', async () => {
    const open = at(example('issues', 'opened'), 'issue');
    const closed = at(example('issues', 'deleted'), 'issue');
    closed.number = 3;
    closed.id = 3003;
    const pull = at(example('issues', 'milestoned'), 'issue');
    const long = at(example('issues', 'opened'), 'issue');
    long.number = 4;
    long.id = 4004;
    long.title = 'Write the long guide';
    long.labels = [{ ...(long.labels as Array<Record<string, unknown>>)[0], name: 'enhancement' }];
    long.body = 'A paragraph of the guide.\n'.repeat(400);
    const pages = async function* () {
      yield [open, closed, pull, long];
    };
    const tenant = t.server.services.tenants.get(t.org)!;
    const map = mapperOf(tenant, link);
    const first = await syncIssuePages(adminCtx(), link, map, pages());
    expect(first).to.deep.include({ issues: 3, pull_requests: 1, created: 3, updated: 0, skipped: 0, records: 3, refused: [] });

    const bug = await node(t, 'issue-gh-hello-world-1');
    expect(bug.frontmatter).to.include({ status: 'open', github_issue: 'Codertocat/Hello-World#1', summary: open.title });
    expect(bug.frontmatter.labels).to.deep.equal(['bug']);
    expect(bug.frontmatter.created).to.equal('2019-05-15T15:20:18.000Z');
    expect(bug.frontmatter.edges).to.deep.include({ type: 'assigned', to: person });
    expect((await node(t, 'issue-gh-hello-world-3')).frontmatter.status).to.equal('resolved');
    const guide = await node(t, 'task-gh-hello-world-4');
    expect(guide.frontmatter.status).to.equal('open');

    const stores = storesOf(tenant);
    const record = stores.sync.get('issue-gh-hello-world-1')!;
    expect(record).to.deep.include({ link: link.id, repo: 'Codertocat/Hello-World', issue_number: 1, issue_id: open.id });
    expect(record.synced).to.deep.include({ state: 'open', labels: ['bug'], assignees: ['codertocat'], title: open.title });
    expect(record.node_revision).to.equal(bug.revision);
    expect(stores.sync.get('task-gh-hello-world-4')!.body_truncated).to.equal(true);

    // the node moves on here; a re-run leaves it and makes no second node
    await t.api('POST', '/v1/nodes/issue-gh-hello-world-1/status', { body: { status: 'blocked' } });
    const revisions = await Promise.all(
      ['issue-gh-hello-world-1', 'issue-gh-hello-world-3', 'task-gh-hello-world-4'].map(async (id) => (await node(t, id)).revision),
    );
    const again = await syncIssuePages(adminCtx(), link, map, pages());
    expect(again).to.deep.include({ issues: 3, created: 0, updated: 0, skipped: 3, records: 0 });
    const after = await Promise.all(
      ['issue-gh-hello-world-1', 'issue-gh-hello-world-3', 'task-gh-hello-world-4'].map(async (id) => (await node(t, id)).revision),
    );
    expect(after).to.deep.equal(revisions);
    const paired = [...stores.sync.values()].filter((r) => r.link === link.id);
    expect(paired).to.have.length(3);
  });

  it('an issue event after the first sync changes the imported node, never a second one', async () => {
    const payload = example('issues', 'edited');
    at(payload, 'issue').title = 'Spelling error in the README, and a broken link';
    at(payload, 'issue').updated_at = '2030-01-01T00:00:00Z';
    await deliver(t, 'issues', payload);
    const bug = await node(t, 'issue-gh-hello-world-1');
    expect(bug.frontmatter.title).to.equal('Spelling error in the README, and a broken link');
    const tenant = t.server.services.tenants.get(t.org)!;
    const same = [...tenant.index.nodes.values()].filter((r) => r.frontmatter.github_issue === 'Codertocat/Hello-World#1');
    expect(same.map((r) => r.id)).to.deep.equal(['issue-gh-hello-world-1']);
  });

  it('linking queues it (unless `first_sync: false`): it runs once, on the inbound queue, with the GitHub call made', async () => {
    const tenant = t.server.services.tenants.get(t.org)!;
    const stores = storesOf(tenant);
    // the link made in before() said first_sync: false: nothing was queued for it
    expect(stores.inbound.get(firstSyncDeliveryOf(link))).to.equal(undefined);
    const res = await t.api('POST', '/v1/integrations/github/links', {
      body: { repo: 'Codertocat/Other-Repo', token: 'github_pat_11TESTTOKENFORCODEMOVES' },
    });
    expect(res.status, res.text).to.equal(201);
    const id = firstSyncDeliveryOf({ id: res.body.link.id as string });
    const state = await until(() => {
      const d = stores.inbound.get(id);
      return d && (d.state !== 'queued' || d.attempts > 0) ? d.state : undefined;
    });
    expect(state, stores.inbound.get(id)?.last_error ?? '').to.equal('done');
    expect(stores.inbound.get(id)?.event).to.equal(FIRST_SYNC_EVENT);
    expect(mock.calls('GET', /^\/repos\/Codertocat\/Other-Repo\/issues$/)).to.have.length(1);
  });
});
