/**
 * GitHub's webhooks in, through the real HTTP server (plugins/github/inbound.ts): every
 * delivery is one of GitHub's published examples (`@octokit/webhooks-examples`, repository
 * Codertocat/Hello-World, linked here as it is), signed with `@octokit/webhooks-methods`. A bad
 * or missing signature is refused and queues nothing; a redelivered delivery id is answered
 * `duplicate` and changes nothing; each `issues` action reaches the node (created with its
 * mapped fields, edited, closed, reopened), an action that leaves the issue as synced makes no
 * commit (no loop); a GitHub edit meeting a node edit keeps both texts; comments follow;
 * `installation` suspend/unsuspend/deleted disable and enable the App's links.
 */
import { generateKeyPairSync } from 'node:crypto';
import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { expect } from 'chai';
import { webhookRouter } from '../../../plugins/github/inbound.js';
import { addPerson, runSecrets, startTestServer, type TestServer } from '../../helpers/harness.js';
import { closedExample, deliver, example } from './webhook-examples.js';
import { until } from '../../helpers/until.js';

const REPO = 'Codertocat/Hello-World';
const SECRET = 'hello-world-webhook-secret-0001';
const TOKEN = 'github_pat_inbound_test_0123456789';
const NODE = 'issue-gh-hello-world-1';

describe('github: inbound webhooks', function () {
  this.timeout(60_000);
  let t: TestServer;
  let coder: { id: string; token: string };
  let linkId: string;

  const node = async () => {
    const res = await t.api('GET', `/v1/nodes/${NODE}`);
    return res.status === 200 ? res.body : null;
  };
  const link = async () => (await t.api('GET', `/v1/integrations/github/links/${linkId}`)).body;
  /** every queued delivery of the link processed, none failed */
  const settled = () =>
    until(async () => {
      const l = await link();
      if (l.inbound.failed > 0) throw new Error(`a delivery failed: ${l.inbound.last_error}`);
      return l.inbound.queued === 0 ? l : undefined;
    });
  const send = async (event: string, payload: unknown, delivery?: string) => {
    const res = await deliver(t, { event, payload, secret: SECRET, delivery });
    expect(res.status, res.text).to.equal(202);
    expect(res.body).to.deep.equal({ queued: true, delivery: res.delivery });
    await settled();
    return res;
  };

  before(async () => {
    t = await startTestServer();
    coder = await addPerson(t, 'Coder Tocat');
    runSecrets.add(SECRET);
    runSecrets.add(TOKEN);
    const res = await t.api('POST', '/v1/integrations/github/links', {
      body: { repo: REPO, first_sync: false, token: TOKEN, webhook_secret: SECRET, mappings: { people: { Codertocat: coder.id } } },
    });
    expect(res.status, res.text).to.equal(201);
    linkId = res.body.link.id;
  });
  after(async () => {
    await t.close();
  });

  it('refuses a bad or missing signature (401), an unknown tenant or repository (404), and queues nothing', async () => {
    const payload = example('issues', 'opened');
    const wrong = await deliver(t, { event: 'issues', payload, secret: 'not-the-secret-at-all-000' });
    expect(wrong.status).to.equal(401);
    expect(wrong.body.error.code).to.equal('invalid_signature');
    const none = await deliver(t, { event: 'issues', payload, secret: SECRET, signature: null });
    expect(none.status).to.equal(401);
    const malformed = await deliver(t, { event: 'issues', payload, secret: SECRET, signature: 'sha256=zz' });
    expect(malformed.status).to.equal(401);
    const tenant = await deliver(t, { event: 'issues', payload, secret: SECRET, org: 'no-such-org' });
    expect(tenant.status).to.equal(404);
    expect(tenant.body.error.code).to.equal('not_found');
    // the published `transferred` example names another repository (octo-org/octo-repo)
    const repo = await deliver(t, { event: 'issues', payload: example('issues', 'transferred'), secret: SECRET });
    expect(repo.status).to.equal(404);
    const l = await link();
    expect(l.inbound).to.deep.equal({ queued: 0, failed: 0, last_error: null });
    expect(await node()).to.equal(null);
    // the first ping example names Octocoders/Hello-World, not linked here
    const otherPing = await deliver(t, { event: 'ping', payload: example('ping', null), secret: SECRET });
    expect(otherPing.status).to.equal(404);
  });

  it("a ping is answered 200 without queueing: an organization's or App's hook (no repository) when a link's secret signs it", async () => {
    const appPing = example('ping', null, 3);
    expect(appPing.repository).to.equal(undefined);
    const ok = await deliver(t, { event: 'ping', payload: appPing, secret: SECRET });
    expect(ok.status, ok.text).to.equal(200);
    expect(ok.body).to.deep.equal({ ok: true, link: linkId });
    const bad = await deliver(t, { event: 'ping', payload: appPing, secret: 'some-other-secret-00000' });
    expect(bad.status).to.equal(401);
    expect((await link()).inbound.queued).to.equal(0);
  });

  it('cluster mode routes a delivery to the owner of its ?tenant= from the headers alone (the body is not read)', async () => {
    const request = (method: string, url: string) => Object.assign(new IncomingMessage(new Socket()), { method, url });
    const post = request('POST', `/v1/integrations/github/webhook?tenant=${t.org}`);
    expect(webhookRouter.applies(post)).to.equal('headers');
    expect(await webhookRouter.route(post, null)).to.deep.equal({ org: t.org });
    expect(await webhookRouter.route(request('POST', '/v1/integrations/github/webhook'), null)).to.equal(null);
    expect(webhookRouter.applies(request('GET', `/v1/integrations/github/webhook?tenant=${t.org}`))).to.equal(false);
    expect(webhookRouter.applies(request('POST', '/v1/integrations/github/links'))).to.equal(false);
  });

  it('issues.opened creates the node with the mapped fields, written as the mapped person', async () => {
    // the published `opened` example with an empty body (the edit below fills it)
    const opened = example('issues', 'opened', 1);
    expect(opened.issue.body).to.equal(null);
    const res = await send('issues', opened);
    const n = await node();
    expect(n, 'node created').to.not.equal(null);
    expect(n.type).to.equal('issue');
    expect(n.frontmatter.status).to.equal('open');
    expect(n.frontmatter.title).to.equal(opened.issue.title);
    expect(n.frontmatter.labels).to.deep.equal(['bug']);
    expect(n.frontmatter.github_issue).to.equal(`${REPO}#1`);
    expect(n.frontmatter.author).to.equal(coder.id);
    expect(n.frontmatter.edges).to.deep.include({ type: 'assigned', to: coder.id });
    expect((await link()).synced_issues).to.equal(1);

    // the same delivery again: acknowledged as a duplicate, nothing done
    const dup = await deliver(t, { event: 'issues', payload: opened, secret: SECRET, delivery: res.delivery });
    expect(dup.status).to.equal(200);
    expect(dup.body).to.deep.equal({ duplicate: true, delivery: res.delivery });
    expect((await node()).revision).to.equal(n.revision);
  });

  it('issues.edited changes the node; actions that leave the issue as synced make no commit', async () => {
    const before = await node();
    const edited = example('issues', 'edited');
    await send('issues', edited);
    const after = await node();
    expect(after.body.trim()).to.equal(edited.issue.body.trim());
    expect(after.revision).to.not.equal(before.revision);
    // labeled, unlabeled, assigned, unassigned, locked, pinned: the published payloads leave the issue as synced
    for (const [event, action] of [
      ['issues', 'labeled'],
      ['issues', 'unlabeled'],
      ['issues', 'assigned'],
      ['issues', 'unassigned'],
      ['issues', 'locked'],
      ['issues', 'unlocked'],
      ['issues', 'pinned'],
      ['issues', 'unpinned'],
      ['issues', 'milestoned'],
      ['issues', 'demilestoned'],
    ] as const)
      await send(event, example(event, action));
    const still = await node();
    expect(still.revision, 'no commit from an unchanged issue').to.equal(after.revision);
    expect(still.frontmatter.labels).to.deep.equal(['bug']);
  });

  it('issues.closed moves the node to its closed status; reopened back to open', async () => {
    await send('issues', closedExample());
    expect((await node()).frontmatter.status).to.equal('resolved');
    // the published `reopened` example: open again (its body is empty: the node's follows)
    const reopened = example('issues', 'reopened');
    await send('issues', reopened);
    const n = await node();
    expect(n.frontmatter.status).to.equal('open');
    expect(n.body.trim()).to.equal('');
  });

  it('a GitHub edit meeting a node edit keeps both texts: the node keeps its own, a comment holds both', async () => {
    const n = await node();
    const patched = await t.api('PATCH', `/v1/nodes/${NODE}`, { body: { revision: n.revision, body: 'Our own notes on this.' } });
    expect(patched.status, patched.text).to.equal(200);
    // the published `edited` example carries GitHub's text
    const edited = example('issues', 'edited');
    await send('issues', edited);
    const after = await node();
    expect(after.body.trim()).to.equal('Our own notes on this.');
    const comments = await t.api('GET', `/v1/nodes/${NODE}/comments`);
    expect(comments.status).to.equal(200);
    const kept = comments.body.comments.find((c: { body: string }) => c.body.includes('not applied'));
    expect(kept, 'conflict comment').to.not.equal(undefined);
    expect(kept.body).to.include(edited.issue.body.trim());
    expect(kept.body).to.include('Our own notes on this.');
    expect(kept.author).to.equal(coder.id);
  });

  it('issue_comment created, redelivered, edited and deleted follow on the node', async () => {
    const created = example('issue_comment', 'created');
    await send('issue_comment', created);
    const list = async () =>
      ((await t.api('GET', `/v1/nodes/${NODE}/comments`)).body.comments as Array<{ id: string; body: string; author: string }>).filter(
        (c) => !c.body.includes('not applied'),
      );
    let comments = await list();
    expect(comments).to.have.length(1);
    expect(comments[0]!.body.trim()).to.equal(created.comment.body.trim());
    expect(comments[0]!.author).to.equal(coder.id);
    // the same GitHub comment in another published `created` delivery: not added twice
    await send('issue_comment', example('issue_comment', 'created', 2));
    expect(await list()).to.have.length(1);
    const edited = example('issue_comment', 'edited');
    await send('issue_comment', edited);
    comments = await list();
    expect(comments[0]!.body.trim()).to.equal(edited.comment.body.trim());
    await send('issue_comment', example('issue_comment', 'deleted'));
    expect(await list()).to.have.length(0);

    // a comment made here and posted to GitHub by the outbound side comes back with its marker: paired, not added again
    const ours = await t.api('POST', `/v1/nodes/${NODE}/comments`, { body: { body: 'Written here first.' } });
    expect(ours.status, ours.text).to.equal(201);
    const echo = example('issue_comment', 'created');
    echo.comment.id = 492700401;
    echo.comment.body = `Written here first.\n\n<!-- work-graph:${ours.body.id} -->`;
    await send('issue_comment', echo);
    expect((await list()).map((c) => c.id)).to.deep.equal([ours.body.id]);
  });

  it('issues.deleted keeps the node, closed as not planned, and ends the pairing', async () => {
    await send('issues', example('issues', 'deleted'));
    const n = await node();
    expect(n.frontmatter.status).to.equal('wontfix');
    expect((await link()).synced_issues).to.equal(0);
  });

  it('installation suspend, unsuspend and deleted disable and enable the links of that installation', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    runSecrets.add(pem);
    const appSecret = 'app-webhook-secret-0123456789';
    runSecrets.add(appSecret);
    const suspendable = await t.api('POST', '/v1/integrations/github/links', {
      body: {
        repo: 'octo-org/app-repo',
        first_sync: false,
        app: { app_id: 1, private_key: pem, installation_id: 16598467 },
        webhook_secret: appSecret,
      },
    });
    expect(suspendable.status, suspendable.text).to.equal(201);
    expect(suspendable.text).to.not.include('PRIVATE KEY');
    expect(suspendable.body.link.has_private_key).to.equal(true);
    const removable = await t.api('POST', '/v1/integrations/github/links', {
      body: {
        repo: 'octo-org/other-repo',
        first_sync: false,
        app: { app_id: 1, private_key: pem, installation_id: 2 },
        webhook_secret: appSecret,
      },
    });
    expect(removable.status).to.equal(201);
    const get = async (id: string) => (await t.api('GET', `/v1/integrations/github/links/${id}`)).body;
    const sendApp = async (payload: unknown, linkOf: string) => {
      const res = await deliver(t, { event: 'installation', payload, secret: appSecret });
      expect(res.status, res.text).to.equal(202);
      return until(async () => ((await get(linkOf)).inbound.queued === 0 ? get(linkOf) : undefined));
    };
    let l = await sendApp(example('installation', 'suspend'), suspendable.body.link.id);
    expect(l.enabled).to.equal(false);
    expect(l.state).to.equal('disabled');
    expect(l.disabled_reason).to.match(/suspended/);
    l = await sendApp(example('installation', 'unsuspend'), suspendable.body.link.id);
    expect(l.enabled).to.equal(true);
    expect(l.disabled_reason).to.equal(null);
    l = await sendApp(example('installation', 'deleted'), removable.body.link.id);
    expect(l.enabled).to.equal(false);
    expect(l.disabled_reason).to.match(/uninstalled/);
    // the other installation's link is untouched
    expect((await get(suspendable.body.link.id)).enabled).to.equal(true);
    // created and new_permissions_accepted (their installation id set to the linked one) change nothing
    for (const action of ['created', 'new_permissions_accepted']) {
      const payload = example('installation', action);
      payload.installation.id = 16598467;
      const before = await get(suspendable.body.link.id);
      const after = await sendApp(payload, suspendable.body.link.id);
      expect(after.enabled, action).to.equal(true);
      expect(after.updated, action).to.equal(before.updated);
    }
    // an installation no link names: no secret to verify it with
    const unknown = await deliver(t, { event: 'installation', payload: example('installation', 'created'), secret: appSecret });
    expect(unknown.status).to.equal(404);
  });
});
