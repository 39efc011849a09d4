/**
 * The outbound side (plugins/github/outbound.ts, outbound-push.ts) through the real server,
 * against the mock generated from GitHub's published OpenAPI description
 * (test/helpers/github-mock.ts: prism refuses any request the description does not allow; a
 * recording proxy shows what was sent).
 *
 * Prism keeps no state: every read of an issue answers the description's example issue
 * (`components.examples.issue`: #1347 "Found a bug"). So the round trip starts from that very
 * issue: the published `issues.opened` webhook example (`@octokit/webhooks-examples`, signed)
 * carrying, as its `issue`, the issue GitHub's description gives for #1347 (without its optional
 * `pull_request` link: the example would otherwise be a pull request). Issue -> node (the
 * inbound webhook) -> edit -> issue (PATCH, validated by prism). The other paths use the
 * published example issue #1 as the node's last synced state, which the mock's #1 (the example
 * issue again) differs from: GitHub "moved" on title and body, which is what a conflict and an
 * already-applied change look like.
 */
import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { addPerson, putNodes, runSecrets, startTestServer, type TestServer } from '../../helpers/harness.js';
import { describedExample, GithubMock, type RecordedRequest } from '../../helpers/github-mock.js';
import { outboundStatus, outboundStoresOf, RETRY_CAP_MS } from '../../../plugins/github/outbound.js';
import { storesOf } from '../../../plugins/github/store.js';
import { deliver, example } from './webhook-examples.js';
import { until } from '../../helpers/until.js';

const REPO = 'Codertocat/Hello-World';
const SECRET = 'outbound-webhook-secret-00000001';
const TOKEN = 'github_pat_outbound_test_0123456789';
const METRICS = 'github-outbound-metrics-secret-01';
const ROUND = 'issue-gh-hello-world-1347';
const OTHER = 'issue-gh-hello-world-1';

describe('github: outbound to the OpenAPI-validating mock', function () {
  this.timeout(90_000);
  let mock: GithubMock;
  let t: TestServer;
  let linkId: string;
  const mine = 'Our reading: the README says commmit.';
  const described = describedExample('issue') as { title: string; body: string; number: number };

  const tenant = () => {
    const found = t.server.services.tenants.get(t.org);
    if (!found) throw new Error('tenant not open');
    return found;
  };
  const node = async (id: string) => (await t.api('GET', `/v1/nodes/${id}`)).body;
  const settled = () =>
    until(async () => {
      const l = (await t.api('GET', `/v1/integrations/github/links/${linkId}`)).body;
      if (l.inbound.failed > 0) throw new Error(`a delivery failed: ${l.inbound.last_error}`);
      return l.inbound.queued === 0 ? l : undefined;
    });
  const send = async (payload: unknown) => {
    const res = await deliver(t, { event: 'issues', payload, secret: SECRET });
    expect(res.status, res.text).to.equal(202);
    await settled();
  };
  /** the outbound cursor reached the newest event (everything before it is done) */
  const caughtUp = () =>
    until(
      () => {
        const c = outboundStoresOf(tenant()).cursor.get('cursor');
        return c !== undefined && c.cursor >= tenant().events.lastId && c.attempts === 0 ? c : undefined;
      },
      'the outbound cursor to catch up',
      30_000,
    );
  const patchNode = async (id: string, change: Record<string, unknown>) => {
    const n = await node(id);
    const res = await t.api('PATCH', `/v1/nodes/${id}`, { body: { revision: n.revision, ...change } });
    expect(res.status, res.text).to.be.oneOf([200, 207]);
  };
  const sent = (method: string, path: RegExp, from = 0): RecordedRequest[] =>
    mock.calls(method, path).filter((r) => mock.requests.indexOf(r) >= from);

  before(async function () {
    this.timeout(120_000);
    mock = await GithubMock.start();
    t = await startTestServer({ config: { githubApiUrl: mock.url, metricsToken: METRICS } });
    const octo = await addPerson(t, 'Octo Cat');
    runSecrets.add(SECRET);
    runSecrets.add(TOKEN);
    runSecrets.add(METRICS);
    await putNodes(t, [{ id: 'proj-web', type: 'proj', summary: 'web' }]);
    const res = await t.api('POST', '/v1/integrations/github/links', {
      body: {
        repo: REPO,
        first_sync: false,
        token: TOKEN,
        webhook_secret: SECRET,
        project: 'proj-web',
        mappings: { people: { octocat: octo.id } },
      },
    });
    expect(res.status, res.text).to.equal(201);
    linkId = res.body.link.id;
  });
  after(async () => {
    await t?.close();
    await mock?.stop();
  });

  it('round trip: the issue comes in as a node, an edit of the node goes back as one PATCH of what changed', async () => {
    const payload = example('issues', 'opened');
    payload.issue = describedExample('issue');
    // the example issue carries the optional `pull_request` link (it would be a pull request); an issue has none
    delete payload.issue.pull_request;
    await send(payload);
    const n = await node(ROUND);
    expect(n.frontmatter.title).to.equal(described.title);
    await caughtUp();
    // the node's creation by the inbound side sends nothing back (no loop)
    expect(sent('PATCH', /./)).to.have.length(0);
    expect(sent('POST', /./)).to.have.length(0);

    const from = mock.requests.length;
    await patchNode(ROUND, { set: { title: 'Found a bug in the parser' } });
    const [patch] = await until(() => {
      const p = sent('PATCH', /\/issues\/1347$/, from);
      return p.length > 0 ? p : undefined;
    });
    expect(patch!.status, JSON.stringify(patch!.response)).to.equal(200);
    expect(patch!.url).to.equal('/repos/Codertocat/Hello-World/issues/1347');
    expect(patch!.body).to.deep.equal({ title: 'Found a bug in the parser' });
    expect(patch!.headers.authorization).to.equal(`token ${TOKEN}`);
    // re-read before the write
    const reads = sent('GET', /\/issues\/1347$/, from);
    expect(reads.length).to.be.greaterThan(0);
    expect(mock.requests.indexOf(reads[0]!)).to.be.lessThan(mock.requests.indexOf(patch!));

    // closing the node closes the issue; labels follow
    const before = mock.requests.length;
    await patchNode(ROUND, { set: { status: 'resolved', labels: ['bug', 'parser'] } });
    const closed = await until(() => {
      const p = sent('PATCH', /\/issues\/1347$/, before);
      return p.length > 0 ? p : undefined;
    });
    // only what changed: the title went out before, `synced` took it when GitHub answered
    expect(closed[0]!.status).to.equal(200);
    expect(closed[0]!.body).to.deep.equal({ state: 'closed', state_reason: 'completed', labels: ['bug', 'parser'] });
    await caughtUp();
    const record = storesOf(tenant()).sync.get(ROUND)!;
    expect(record.synced.state).to.equal('closed');
    expect(record.synced.labels).to.deep.equal(['bug', 'parser']);
  });

  it('a change GitHub already shows is recorded, not sent again (the re-read after a crash)', async () => {
    // node #1 from the published example: synced title "Spelling error in the README file"
    await send(example('issues', 'opened'));
    await caughtUp();
    const from = mock.requests.length;
    // the node takes the title GitHub's issue #1 has now (the mock's example issue)
    await patchNode(OTHER, { set: { title: described.title } });
    await until(() => sent('GET', /\/issues\/1$/, from).length > 0 || undefined);
    await caughtUp();
    expect(sent('PATCH', /./, from)).to.have.length(0);
    expect(sent('POST', /./, from)).to.have.length(0);
    expect(storesOf(tenant()).sync.get(OTHER)!.synced.title).to.equal(described.title);
  });

  it('a conflict: GitHub moved too, so its text stays and the node\u2019s goes to the issue as a comment with both, once', async () => {
    const from = mock.requests.length;
    await patchNode(OTHER, { body: mine });
    const [comment] = await until(() => {
      const c = sent('POST', /\/issues\/1\/comments$/, from);
      return c.length > 0 ? c : undefined;
    });
    expect(comment!.status, JSON.stringify(comment!.response)).to.equal(201);
    const text = (comment!.body as { body: string }).body;
    expect(text).to.include(mine);
    expect(text).to.include(described.body);
    expect(text).to.match(/<!-- work-graph:conflict:[^ ]+ -->$/);
    await caughtUp();
    expect(sent('PATCH', /./, from)).to.have.length(0);
    // `synced` keeps the old body: the inbound side settles it when GitHub's change arrives
    expect(storesOf(tenant()).sync.get(OTHER)!.synced.body).to.not.equal(mine);
    // another change of the node: the same conflict is not posted twice
    await patchNode(OTHER, { set: { labels: ['documentation'] } });
    await until(() => sent('PATCH', /\/issues\/1$/, from).length > 0 || undefined);
    await caughtUp();
    expect(sent('POST', /\/issues\/1\/comments$/, from)).to.have.length(1);
    expect(sent('PATCH', /\/issues\/1$/, from)[0]!.body).to.deep.equal({ labels: ['documentation'] });
  });

  it('the conflict settles when GitHub\u2019s change arrives: the node keeps its text, a node comment holds both, its text goes out', async () => {
    const from = mock.requests.length;
    // GitHub's change (the body the mock's issue #1 has) arrives: the published issues.edited example with that body
    const edited = example('issues', 'edited');
    edited.issue.body = described.body;
    await send(edited);
    const n = await node(OTHER);
    expect(n.body.trim()).to.equal(mine);
    const comments = (await t.api('GET', `/v1/nodes/${OTHER}/comments`)).body.comments as Array<{ body: string }>;
    const note = comments.find((c) => c.body.includes('not applied'));
    expect(note, JSON.stringify(comments)).to.not.equal(undefined);
    expect(note!.body).to.include(described.body).and.include(mine);
    // `synced` took GitHub's body, which the issue still has: the node's goes out as the newer one
    const patch = await until(() => sent('PATCH', /\/issues\/1$/, from).find((r) => (r.body as { body?: string }).body === mine));
    expect(patch.status).to.equal(200);
    await caughtUp();
    // the node comment holding both texts is this side's note: not posted back to GitHub
    expect(sent('POST', /\/issues\/1\/comments$/, from).map((r) => (r.body as { body: string }).body)).to.deep.equal([]);
    expect(storesOf(tenant()).sync.get(OTHER)!.synced.body).to.equal(mine);
  });

  it('a node new in the linked project becomes an issue carrying its marker, and says which issue', async () => {
    const from = mock.requests.length;
    await putNodes(t, [
      { id: 'task-outbound-new', type: 'task', summary: 'Ship it', title: 'Ship the parser', project: 'proj-web', body: 'Details.' },
    ]);
    const [created] = await until(() => {
      const c = sent('POST', /\/repos\/Codertocat\/Hello-World\/issues$/, from);
      return c.length > 0 ? c : undefined;
    });
    expect(created!.status, JSON.stringify(created!.response)).to.equal(201);
    expect(created!.body).to.deep.equal({ title: 'Ship the parser', body: 'Details.\n\n<!-- work-graph:task-outbound-new -->' });
    const n = await until(async () => {
      const got = await node('task-outbound-new');
      return got.frontmatter.github_issue ? got : undefined;
    });
    // the mock's answer: the description's example issue
    expect(n.frontmatter.github_issue).to.equal(`${REPO}#${described.number}`);
    expect(storesOf(tenant()).sync.get('task-outbound-new')!.issue_number).to.equal(described.number);
    // a node outside the project is not sent
    const outside = mock.requests.length;
    await putNodes(t, [{ id: 'task-outbound-elsewhere', type: 'task', summary: 'Not linked' }]);
    await caughtUp();
    expect(sent('POST', /\/issues$/, outside)).to.have.length(0);
  });

  it('an App link calls as its installation: a JWT exchanged for an installation token first', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    await putNodes(t, [{ id: 'proj-app', type: 'proj', summary: 'app' }]);
    const res = await t.api('POST', '/v1/integrations/github/links', {
      body: {
        repo: 'octo-org/app-repo',
        first_sync: false,
        app: { app_id: 4242, installation_id: 99, private_key: pem },
        webhook_secret: SECRET,
        project: 'proj-app',
      },
    });
    expect(res.status, res.text).to.equal(201);
    const from = mock.requests.length;
    await putNodes(t, [{ id: 'task-app-new', type: 'task', summary: 'Via the App', project: 'proj-app' }]);
    const [created] = await until(() => {
      const c = sent('POST', /\/repos\/octo-org\/app-repo\/issues$/, from);
      return c.length > 0 ? c : undefined;
    });
    expect(created!.status).to.equal(201);
    const [exchange] = sent('POST', /\/app\/installations\/99\/access_tokens$/, from);
    expect(exchange, 'the installation token exchange').to.not.equal(undefined);
    expect(String(exchange!.headers.authorization)).to.match(/^bearer [\w-]+\.[\w-]+\.[\w-]+$/i);
    expect(mock.requests.indexOf(exchange!)).to.be.lessThan(mock.requests.indexOf(created!));
    expect(created!.headers.authorization).to.equal(`token ${(exchange!.response as { token: string }).token}`);
    await caughtUp();
  });

  it('a comment on a synced node goes to the issue with its author and marker', async () => {
    const from = mock.requests.length;
    const res = await t.api('POST', `/v1/nodes/${ROUND}/comments`, { body: { body: 'Fixed on main.' } });
    expect(res.status, res.text).to.equal(201);
    const [comment] = await until(() => {
      const c = sent('POST', /\/issues\/1347\/comments$/, from);
      return c.length > 0 ? c : undefined;
    });
    expect(comment!.status).to.equal(201);
    expect((comment!.body as { body: string }).body).to.match(
      new RegExp(`^Fixed on main\\.\\n\\n\u2014 .+ on work-graph\\n\\n<!-- work-graph:${res.body.id} -->$`),
    );
    await caughtUp();
    // paired: GitHub's comment id (the mock's answer) -> the comment node
    const paired = storesOf(tenant()).sync.get(ROUND)!.comments!;
    expect(Object.values(paired)).to.include(res.body.id);
  });

  it('GitHub down: the change waits, retried; GitHub back: it arrives, once', async () => {
    await mock.down();
    const failing = t.logs.length;
    // the body: GitHub's (the mock's) is still the one last synced, so the change is sent, not a conflict
    await patchNode(ROUND, { body: 'Steps to reproduce: parse an empty file.' });
    await until(
      () => t.logs.slice(failing).some((l) => l.includes('GitHub call failed, retrying')) || undefined,
      'a failed GitHub call',
      30_000,
    );
    const cursor = outboundStoresOf(tenant()).cursor.get('cursor')!;
    expect(cursor.attempts).to.be.greaterThan(0);
    expect(cursor.cursor).to.be.lessThan(tenant().events.lastId);
    const status = outboundStatus(tenant());
    expect(status.behind).to.be.greaterThan(0);
    expect(status.last_error).to.be.a('string');
    expect(status.failing_since).to.be.a('string');
    // the operator's view: failed attempts in the tenant's gauge
    const scraped = await t.api('GET', '/metrics', { token: METRICS });
    expect(scraped.status).to.equal(200);
    expect(scraped.text).to.match(new RegExp(`workgraph_github_outbound\\{tenant="${t.org}",state="attempts"\\} [1-9]`));
    const from = mock.requests.length;
    await mock.up();
    // the retry's wait is on the server's clock: move it past the longest backoff
    t.clock.advance(RETRY_CAP_MS);
    const [patch] = await until(
      () => {
        const p = sent('PATCH', /\/issues\/1347$/, from);
        return p.length > 0 ? p : undefined;
      },
      'the retried PATCH',
      30_000,
    );
    expect(patch!.status).to.equal(200);
    expect(patch!.body).to.deep.equal({ body: 'Steps to reproduce: parse an empty file.' });
    await caughtUp();
    expect(sent('PATCH', /\/issues\/1347$/, from)).to.have.length(1);
    expect(outboundStatus(tenant())).to.include({ behind: 0, attempts: 0, failing_since: null });
    expect(t.logs.join('\n')).to.not.include(TOKEN);
  });
});
