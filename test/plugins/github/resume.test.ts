/**
 * The inbound queue is durable (plugins/github/inbound.ts): deliveries answered 202 while the
 * worker may not run (this process not surely the tenant's owner: `services.serves` false, as
 * in cluster mode) stay queued in the state store; the server stops with them queued; the same
 * data directory served again processes each of them once, in order, and still knows their
 * delivery ids (a redelivery is a duplicate). GitHub's published examples, signed.
 */
import { rmSync } from 'node:fs';
import { sign } from '@octokit/webhooks-methods';
import { expect } from 'chai';
import { createLogger, ManualClock } from '../../../kernel/config.js';
import { startServer, type RunningServer } from '../../../kernel/server.js';
import { allPlugins } from '../../../scripts/plugins.js';
import { addPerson, runSecrets, startTestServer, type TestServer, testServerConfig } from '../../helpers/harness.js';
import { deliver, example } from './webhook-examples.js';
import { until } from '../../helpers/until.js';

const SECRET = 'resume-webhook-secret-0000001';
const TOKEN = 'github_pat_resume_test_0123456789';
const NODE = 'issue-gh-hello-world-1';

/** The same data directory served again (not a first start, so not through startTestServer). */
async function restart(dataDir: string): Promise<RunningServer> {
  const config = await testServerConfig(dataDir);
  return startServer({ config, plugins: allPlugins, clock: new ManualClock(), log: createLogger(() => undefined) });
}

describe('github: the inbound queue survives a restart', function () {
  this.timeout(60_000);
  let t: TestServer;
  let second: RunningServer | null = null;

  before(async () => {
    t = await startTestServer({ keepData: true });
    runSecrets.add(SECRET);
    runSecrets.add(TOKEN);
  });
  after(async () => {
    await second?.close().catch(() => undefined);
    rmSync(t.dataDir, { recursive: true, force: true });
  });

  it('deliveries queued before a stop are applied once after the restart, and their ids stay known', async () => {
    const coder = await addPerson(t, 'Coder Tocat');
    const linked = await t.api('POST', '/v1/integrations/github/links', {
      body: {
        repo: 'Codertocat/Hello-World',
        first_sync: false,
        token: TOKEN,
        webhook_secret: SECRET,
        mappings: { people: { codertocat: coder.id } },
      },
    });
    expect(linked.status, linked.text).to.equal(201);
    const linkId: string = linked.body.link.id;
    // this process may not act for the tenant (as a member past its lease would): deliveries wait
    t.server.services.serves = () => false;
    const opened = await deliver(t, { event: 'issues', payload: example('issues', 'opened'), secret: SECRET });
    const comment = await deliver(t, { event: 'issue_comment', payload: example('issue_comment', 'created'), secret: SECRET });
    expect(opened.status).to.equal(202);
    expect(comment.status).to.equal(202);
    const held = await t.api('GET', `/v1/integrations/github/links/${linkId}`);
    expect(held.body.inbound.queued).to.equal(2);
    expect((await t.api('GET', `/v1/nodes/${NODE}`)).status).to.equal(404);
    await t.server.close();

    second = await restart(t.dataDir);
    const api = async (method: string, path: string) => {
      const res = await fetch(`${second!.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${t.adminToken}`, connection: 'close' },
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const link = await until(async () => {
      const l = await api('GET', `/v1/integrations/github/links/${linkId}`);
      return l.body.inbound.queued === 0 ? l.body : undefined;
    });
    expect(link.inbound.failed).to.equal(0);
    const node = await api('GET', `/v1/nodes/${NODE}`);
    expect(node.status).to.equal(200);
    expect(node.body.frontmatter.author).to.equal(coder.id);
    const comments = await api('GET', `/v1/nodes/${NODE}/comments`);
    expect(comments.body.comments).to.have.length(1);

    const body = JSON.stringify(example('issues', 'opened'));
    const again = await fetch(`${second.url}/v1/integrations/github/webhook?tenant=${t.org}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issues',
        'x-github-delivery': opened.delivery,
        'x-hub-signature-256': await sign(SECRET, body),
      },
      body,
    });
    expect(again.status).to.equal(200);
    expect(await again.json()).to.deep.equal({ duplicate: true, delivery: opened.delivery });
  });
});
