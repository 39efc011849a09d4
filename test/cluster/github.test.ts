/**
 * Issue 26, item 7: GitHub's webhooks in cluster mode. Two real `workgraph serve` processes over
 * one data directory and one real PostgreSQL:
 *
 * - a delivery (GitHub's published `issues.opened` example, signed as GitHub signs) posted to the
 *   member that does not own the tenant is forwarded to the owner (the github plugin's request
 *   router: a webhook carries no bearer token) and applied there;
 * - the owner is killed with SIGKILL; the other member takes the tenant over, and GitHub's
 *   redelivery of the same delivery id is recognised (the inbound queue and its idempotency
 *   records are in PostgreSQL, not in the dead process), while a new delivery is applied.
 */
import { sign } from '@octokit/webhooks-methods';
import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshSchemaUrl, sharedPostgres } from '../helpers/postgres.js';
import { example } from '../plugins/github/webhook-examples.js';
import { until } from '../helpers/until.js';
import { api, members, ownedIn, ownerMember, startMember, stopAll, waitForStatus, type ClusterEnv } from './members.js';

const LEASE_MS = 5000;
const ORG = 'local';
const SECRET = 'cluster-github-webhook-secret';

describe('cluster: GitHub webhooks reach the owner; the inbound queue survives a fail-over', function () {
  this.timeout(300_000);
  let env: ClusterEnv;
  const token = () => env.bootstrapToken;
  const owned = ownedIn(ORG);

  before(async () => {
    const pg = await sharedPostgres();
    env = {
      dataDir: mkdtempSync(join(tmpdir(), 'wg-cluster-github-')),
      databaseUrl: await freshSchemaUrl(pg.url),
      leaseMs: LEASE_MS,
      bootstrapToken: `svc_pat_${randomBytes(16).toString('hex')}`,
    };
    await Promise.all([startMember(env), startMember(env)]);
    await waitForStatus(env, owned);
  });

  after(async () => {
    await stopAll();
    if (env?.dataDir) rmSync(env.dataDir, { recursive: true, force: true });
  });

  /** POSTs a signed delivery as GitHub does (no bearer token) to `base`. */
  async function post(base: string, event: string, id: string, payload: unknown) {
    const body = JSON.stringify(payload);
    const res = await fetch(`${base}/v1/integrations/github/webhook?tenant=${ORG}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': event,
        'x-github-delivery': id,
        'x-hub-signature-256': await sign(SECRET, body),
      },
      body,
    });
    const text = await res.text();
    return { status: res.status, text, body: text ? JSON.parse(text) : null };
  }

  it('a delivery to the member that does not own the tenant is applied by the owner; after the owner is killed the survivor knows its id', async () => {
    const status = await waitForStatus(env, owned);
    const owner = ownerMember(status, ORG)!;
    const other = [...members].find((m) => !m.exited && m !== owner)!;
    expect(other, 'a member that does not own the tenant').to.not.equal(undefined);

    // linked through the member that does not own the tenant (an admin's request, forwarded)
    const linked = await api(other.url, 'POST', '/v1/integrations/github/links', token(), {
      repo: 'Codertocat/Hello-World',
      token: 'github_pat_11CLUSTERTESTTOKEN',
      webhook_secret: SECRET,
      first_sync: false,
    });
    expect(linked.status, linked.text).to.equal(201);

    const opened = example('issues', 'opened');
    const id = randomUUID();
    const first = await post(other.url, 'issues', id, opened);
    expect(first.status, first.text).to.equal(202);
    const nodeId = `issue-gh-hello-world-${opened.issue.number}`;
    await until(
      async () => (await api(other.url, 'GET', `/v1/nodes/${nodeId}`, token())).status === 200,
      'the issue node on the owner',
      30_000,
    );
    const node = await api(other.url, 'GET', `/v1/nodes/${nodeId}`, token());
    expect(node.body.frontmatter.github_issue).to.equal(`Codertocat/Hello-World#${opened.issue.number}`);

    // a signature that does not verify is refused on the way, whichever member takes it
    const forged = await fetch(`${other.url}/v1/integrations/github/webhook?tenant=${ORG}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issues',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': 'sha256=00',
      },
      body: JSON.stringify(opened),
    });
    expect(forged.status).to.equal(401);

    // the owner dies; the other member takes the tenant over with the queue as PostgreSQL has it
    const fenceBefore = status.tenants.find((t) => t.org === ORG)!.fence;
    process.kill(-owner.child.pid!, 'SIGKILL');
    const after = await waitForStatus(env, (s) => owned(s) && s.tenants.find((t) => t.org === ORG)!.fence > fenceBefore);
    expect(ownerMember(after, ORG)).to.equal(other);

    // GitHub redelivers the same id: known, nothing done twice
    const again = await post(other.url, 'issues', id, opened);
    expect(again.status, again.text).to.equal(200);
    expect(again.body).to.include({ duplicate: true });

    // and a new delivery is applied by the new owner
    const edited = example('issues', 'edited');
    edited.issue.title = 'Edited after the fail-over';
    edited.issue.updated_at = '2030-01-01T00:00:00Z';
    const next = await post(other.url, 'issues', randomUUID(), edited);
    expect(next.status, next.text).to.equal(202);
    await until(
      async () => (await api(other.url, 'GET', `/v1/nodes/${nodeId}`, token())).body.frontmatter?.title === 'Edited after the fail-over',
      'the edit applied by the new owner',
      30_000,
    );
  });
});
