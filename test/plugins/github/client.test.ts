/**
 * The outbound client (plugins/github/client.ts) against the mock generated from GitHub's
 * published OpenAPI description (test/helpers/github-mock.ts): a call the description allows
 * passes, one it does not allow is refused (and not retried), an App installation exchanges its
 * JWT for an installation token first, and a GitHub that is down fails the call after the
 * retries (the outbound engine keeps the change queued) while one that comes back answers.
 */
import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { createLogger } from '../../../kernel/config.js';
import { statusOf } from '../../../plugins/github/client.js';
import { appClient, tokenClient } from '../../../plugins/github/octokit.js';
import { retryable } from '../../../plugins/github/outbound.js';
import { GithubMock } from '../../helpers/github-mock.js';

describe('github client against the OpenAPI-validating mock', function () {
  let mock: GithubMock;
  const lines: string[] = [];
  const log = createLogger((l) => lines.push(l));

  before(async function () {
    this.timeout(90_000);
    mock = await GithubMock.start();
    if (process.env.WG_PRINT_SIZES) console.log(`      prism mock started in ${mock.startMs} ms`);
  });
  after(async () => {
    await mock?.stop();
  });

  it('a call the description allows passes and is recorded as sent', async () => {
    const gh = tokenClient('github_pat_test_0123456789', { baseUrl: mock.url, log });
    const before = mock.requests.length;
    const res = await gh.rest.issues.get({ owner: 'octo', repo: 'demo', issue_number: 7 });
    expect(res.status).to.equal(200);
    // prism answers the description's own example
    expect(res.data.title).to.be.a('string').and.not.equal('');
    expect(res.data.number).to.be.a('number');
    const sent = mock.requests.slice(before);
    expect(sent).to.have.length(1);
    expect(sent[0]!.method).to.equal('GET');
    expect(sent[0]!.url).to.equal('/repos/octo/demo/issues/7');
    expect(sent[0]!.headers.authorization).to.equal('token github_pat_test_0123456789');
    expect(sent[0]!.headers['user-agent']).to.match(/^work-graph-github-sync/);
  });

  it('a request the description does not allow is refused, once (a 4xx is not retried)', async () => {
    const gh = tokenClient('github_pat_test_0123456789', { baseUrl: mock.url, log, retryBaseMs: 10 });
    const before = mock.requests.length;
    let refused: unknown = null;
    try {
      // `state` is an enum of open/closed in the description
      // a route typed as a plain string: Octokit's types would refuse this request before GitHub could
      const route: string = 'PATCH /repos/{owner}/{repo}/issues/{issue_number}';
      await gh.request(route, { owner: 'octo', repo: 'demo', issue_number: 7, state: 'bogus' });
    } catch (err) {
      refused = err;
    }
    expect(statusOf(refused)).to.equal(422);
    let missing: unknown = null;
    try {
      // `title` is required to create an issue
      const route: string = 'POST /repos/{owner}/{repo}/issues';
      await gh.request(route, { owner: 'octo', repo: 'demo', body: 'no title' });
    } catch (err) {
      missing = err;
    }
    expect(statusOf(missing)).to.equal(422);
    // the outbound engine skips such a change (logged) instead of holding the queue on it
    expect(retryable(refused)).to.equal(false);
    expect(mock.requests.slice(before).map((r) => [r.method, r.status])).to.deep.equal([
      ['PATCH', 422],
      ['POST', 422],
    ]);
    // the same calls made right pass
    const ok = await gh.rest.issues.update({ owner: 'octo', repo: 'demo', issue_number: 7, state: 'closed', state_reason: 'completed' });
    expect(ok.status).to.equal(200);
  });

  it('an App installation signs a JWT, takes an installation token, then calls with it', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    const gh = await appClient({ app_id: 12345, private_key: pem, installation_id: 678 }, { baseUrl: mock.url, log });
    const before = mock.requests.length;
    const res = await gh.rest.issues.createComment({ owner: 'octo', repo: 'demo', issue_number: 7, body: 'hello' });
    expect(res.status).to.equal(201);
    const sent = mock.requests.slice(before);
    const exchange = sent.find((r) => r.method === 'POST' && r.url === '/app/installations/678/access_tokens');
    expect(exchange, JSON.stringify(sent.map((r) => r.url))).to.not.equal(undefined);
    expect(String(exchange!.headers.authorization)).to.match(/^bearer [\w-]+\.[\w-]+\.[\w-]+$/i);
    const comment = sent.find((r) => r.method === 'POST' && r.url === '/repos/octo/demo/issues/7/comments');
    expect(comment!.body).to.deep.equal({ body: 'hello' });
    // the token the exchange answered (the description's example), not the JWT
    const issued = (exchange!.response as { token: string }).token;
    expect(comment!.headers.authorization).to.equal(`token ${issued}`);
  });

  it('GitHub down: the call fails after its retries; back up: it passes', async function () {
    this.timeout(60_000);
    const gh = tokenClient('github_pat_test_0123456789', { baseUrl: mock.url, log, retries: 2, retryBaseMs: 20 });
    await mock.down();
    let failed: unknown = null;
    try {
      await gh.rest.issues.get({ owner: 'octo', repo: 'demo', issue_number: 7 });
    } catch (err) {
      failed = err;
    }
    expect(failed).to.be.instanceOf(Error);
    // no answer: the outbound engine keeps the change at the head and retries it
    expect(retryable(failed)).to.equal(true);
    await mock.up();
    const res = await gh.rest.issues.get({ owner: 'octo', repo: 'demo', issue_number: 7 });
    expect(res.status).to.equal(200);
    expect(lines.join('\n')).to.not.include('github_pat_test_0123456789');
  });
});
