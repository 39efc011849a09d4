/**
 * Pull requests move work (plugins/github/handlers/pull-request.ts, pull-request-review.ts):
 * GitHub's published `pull_request` and `pull_request_review` examples, with the PR body naming
 * this tenant's nodes, signed and posted to the real webhook route. Opening moves the named
 * nodes to review; a merged `Fixes` closes its node through set_status (a `resolves` edge from
 * the repository's node first); reviews become the review edges of the mapped person; an
 * unknown id is ignored without error.
 */
import { expect } from 'chai';
import { addPerson, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';
import { at, deliver, example, linkRepo, node } from './code-helpers.js';

const MERGE_SHA = '9049f1265b7d61be4a8904a9a27120d2064dab3b';

/** GitHub's example pull request `action`, numbered `number`, its body naming our nodes. */
function pullRequest(action: string, number: number, body: string, over: Record<string, unknown> = {}) {
  const payload = example('pull_request', action);
  const pr = at(payload, 'pull_request');
  payload.number = number;
  pr.number = number;
  pr.html_url = `https://github.com/Codertocat/Hello-World/pull/${number}`;
  pr.body = body;
  Object.assign(pr, over);
  return payload;
}

function merged(number: number, body: string, base = 'master') {
  const payload = pullRequest('closed', number, body, { merged: true, merge_commit_sha: MERGE_SHA, state: 'closed' });
  at(at(payload, 'pull_request'), 'base').ref = base;
  return payload;
}

function review(state: string, body: string) {
  const payload = example(
    'pull_request_review',
    'submitted',
    (e) => at(e, 'pull_request').html_url === 'https://github.com/Codertocat/Hello-World/pull/2',
  );
  at(payload, 'review').state = state;
  at(payload, 'pull_request').body = body;
  return payload;
}

describe('github: pull requests move work', function () {
  let t: TestServer;
  let reviewer: string;
  let requested: string;

  before(async () => {
    t = await startTestServer();
    // the examples' author, reviewer and sender are all Codertocat
    reviewer = (await addPerson(t, 'Coder Tocat')).id;
    // the published review_requested example asks octocat
    requested = (await addPerson(t, 'Octo Cat')).id;
    await putNodes(t, [
      { id: 'task-login-form', summary: 'Rework the login form' },
      { id: 'task-docs-page', summary: 'Document the login' },
      { id: 'issue-crash-start', summary: 'Crash on start' },
      { id: 'task-abandoned', summary: 'An idea that was dropped' },
      { id: 'task-side-branch', summary: 'Work merged into a side branch' },
    ]);
    await linkRepo(t, { codertocat: reviewer, octocat: requested });
  });
  after(() => t.close());

  const BODY = 'Reworks the form.\n\nFixes task-login-form, issue-crash-start\nRefs task-docs-page and task-does-not-exist';
  const URL2 = 'https://github.com/Codertocat/Hello-World/pull/2';

  it('opened: the named nodes get the pull request linked and move to review (a type without review keeps its status); unknown ids are ignored', async () => {
    const { res } = await deliver(t, 'pull_request', pullRequest('opened', 2, BODY));
    expect(res.status).to.equal(202);
    const login = await node(t, 'task-login-form');
    expect(login.frontmatter.status).to.equal('review');
    expect(login.frontmatter.pull_requests).to.deep.equal([URL2]);
    expect(login.frontmatter.author).to.equal(reviewer);
    expect((await node(t, 'task-docs-page')).frontmatter.status).to.equal('review');
    const crash = await node(t, 'issue-crash-start');
    expect(crash.frontmatter.status).to.equal('open');
    expect(crash.frontmatter.pull_requests).to.deep.equal([URL2]);
    expect((await t.api('GET', '/v1/nodes/task-does-not-exist')).status).to.equal(404);
  });

  it("reviews: approved and changes requested are the mapped reviewer's review edge; a later comment review does not replace the verdict", async () => {
    await deliver(t, 'pull_request_review', review('approved', BODY));
    let edges = (await node(t, 'task-login-form')).frontmatter.edges ?? [];
    expect(edges).to.deep.include({ type: 'approved-by', to: reviewer });
    await deliver(t, 'pull_request_review', review('changes_requested', BODY));
    edges = (await node(t, 'task-login-form')).frontmatter.edges ?? [];
    expect(edges).to.deep.include({ type: 'changes-requested-by', to: reviewer });
    expect(edges.filter((e) => e.to === reviewer)).to.have.length(1);
    await deliver(t, 'pull_request_review', review('commented', BODY));
    edges = (await node(t, 'task-docs-page')).frontmatter.edges ?? [];
    expect(edges.filter((e) => e.to === reviewer)).to.deep.equal([{ type: 'changes-requested-by', to: reviewer }]);
  });

  it("review requested: a review-requested edge to the person the requested reviewer's login maps to", async () => {
    await deliver(t, 'pull_request', pullRequest('review_requested', 2, BODY, { state: 'open' }));
    const edges = (await node(t, 'task-login-form')).frontmatter.edges ?? [];
    expect(edges).to.deep.include({ type: 'review-requested', to: requested });
    expect(edges).to.deep.include({ type: 'changes-requested-by', to: reviewer });
  });

  it('a review by a login that maps to nobody writes no edge', async () => {
    const payload = review('approved', BODY);
    at(at(payload, 'review'), 'user').login = 'someone-unknown';
    const before = (await node(t, 'task-login-form')).revision;
    await deliver(t, 'pull_request_review', payload);
    expect((await node(t, 'task-login-form')).revision).to.equal(before);
  });

  it('merged: a Fixes reference is resolved by the repository node and finished through set_status; a Refs one is linked and back from review', async () => {
    await deliver(t, 'pull_request', merged(2, BODY));
    const login = await node(t, 'task-login-form');
    expect(login.frontmatter.status).to.equal('done');
    expect(login.frontmatter.commits).to.deep.equal([`hello-world@${MERGE_SHA}`]);
    const repo = await node(t, 'repo-hello-world');
    expect(repo.frontmatter.edges).to.deep.include({ type: 'resolves', to: 'task-login-form', pr: '2', sha: MERGE_SHA });
    expect(repo.frontmatter.edges).to.deep.include({ type: 'resolves', to: 'issue-crash-start', pr: '2', sha: MERGE_SHA });
    // the mappings' completed status of an issue
    expect((await node(t, 'issue-crash-start')).frontmatter.status).to.equal('resolved');
    const docs = await node(t, 'task-docs-page');
    expect(docs.frontmatter.status).to.equal('open');
    expect(docs.frontmatter.commits).to.deep.equal([`hello-world@${MERGE_SHA}`]);
    // the same answer over MCP: the resolution names the repository node
    const client = await t.mcp();
    const read = await t.tool(client, 'get_node', { id: 'task-login-form' });
    expect(read.isError).to.equal(false);
    expect(read.json.frontmatter.status).to.equal('done');
    expect(JSON.stringify(read.json.resolution)).to.contain('repo-hello-world');
  });

  it('the same merge delivered again (a new delivery id) changes nothing', async () => {
    const before = await Promise.all(
      ['task-login-form', 'repo-hello-world', 'task-docs-page'].map(async (id) => (await node(t, id)).revision),
    );
    await deliver(t, 'pull_request', merged(2, BODY));
    const after = await Promise.all(
      ['task-login-form', 'repo-hello-world', 'task-docs-page'].map(async (id) => (await node(t, id)).revision),
    );
    expect(after).to.deep.equal(before);
  });

  it('closed without merge: the nodes it moved to review go back to where they were, not done', async () => {
    await deliver(t, 'pull_request', pullRequest('opened', 3, 'Closes task-abandoned'));
    expect((await node(t, 'task-abandoned')).frontmatter.status).to.equal('review');
    await deliver(t, 'pull_request', pullRequest('closed', 3, 'Closes task-abandoned', { merged: false, state: 'closed' }));
    expect((await node(t, 'task-abandoned')).frontmatter.status).to.equal('open');
    const repo = await node(t, 'repo-hello-world');
    expect(repo.frontmatter.edges).to.not.deep.include({ type: 'resolves', to: 'task-abandoned', pr: '3' });
  });

  it('merged into a branch that is not the default one: a closing reference only references, as on GitHub', async () => {
    await deliver(t, 'pull_request', pullRequest('opened', 4, 'Fixes task-side-branch'));
    await deliver(t, 'pull_request', merged(4, 'Fixes task-side-branch', 'develop'));
    const side = await node(t, 'task-side-branch');
    expect(side.frontmatter.status).to.equal('open');
    expect(side.frontmatter.pull_requests).to.deep.equal(['https://github.com/Codertocat/Hello-World/pull/4']);
  });

  it('a draft pull request links without moving to review; ready_for_review moves it', async () => {
    await putNodes(t, [{ id: 'task-drafted', summary: 'Drafted work' }]);
    await deliver(t, 'pull_request', pullRequest('opened', 5, 'Fixes task-drafted', { draft: true }));
    const drafted = await node(t, 'task-drafted');
    expect(drafted.frontmatter.status).to.equal('open');
    expect(drafted.frontmatter.pull_requests).to.have.length(1);
    await deliver(t, 'pull_request', pullRequest('ready_for_review', 5, 'Fixes task-drafted', { draft: false, state: 'open' }));
    expect((await node(t, 'task-drafted')).frontmatter.status).to.equal('review');
  });

  it('a bad signature is refused and changes nothing', async () => {
    await putNodes(t, [{ id: 'task-unsigned', summary: 'Not to be moved' }]);
    const { res } = await deliver(t, 'pull_request', pullRequest('opened', 6, 'Fixes task-unsigned'), { secret: 'not-the-secret' });
    expect(res.status).to.equal(401);
    expect(res.body.error.code).to.equal('invalid_signature');
    expect((await node(t, 'task-unsigned')).frontmatter.status).to.equal('open');
  });
});
