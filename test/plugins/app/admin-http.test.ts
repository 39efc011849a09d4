/**
 * The operator console (issue 25 item 4) over plain HTTP with a real session: the admin gate
 * (403 pages and forms for members, no Admin link), plugin switches that take effect at once
 * (an app page 404s, MCP tools leave the list), people and tokens (a minted secret shown once),
 * agents, webhooks with their delivery log, and the identity audit.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { addPerson, startTestServer, type TestServer } from '../../helpers/harness.js';
import { seedGraph } from './seed.js';
import { FormClient } from './form-client.js';

const h1 = (html: string) => /<h1>([^<]*)<\/h1>/.exec(html)?.[1];
const unescape = (s: string) =>
  s
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
const flash = (html: string) => {
  const m = /<p class="flash (ok|error)"[^>]*>([^<]*)/.exec(html);
  return m ? [m[1]!, unescape(m[2]!)] : undefined;
};

describe('app: the operator console over HTTP (/app/admin)', function () {
  this.timeout(90_000);
  let t: TestServer;
  let bob: { id: string; token: string };
  let receiver: Server;
  let received = 0;
  let admin: FormClient;

  before(async () => {
    t = await startTestServer({ config: { webhookAllowPrivate: true, webhookTimeoutMs: 2000 } });
    await seedGraph(t);
    bob = await addPerson(t, 'Bob Builder');
    receiver = createServer((req, res) => {
      received++;
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    admin = new FormClient(t.url);
    await admin.signedIn(t.adminToken);
  });
  after(async () => {
    receiver?.close();
    await t?.close();
  });

  const PAGES = [
    '/app/admin/plugins',
    '/app/admin/people',
    '/app/admin/tokens',
    '/app/admin/agents',
    '/app/admin/webhooks',
    '/app/admin/audit',
  ];

  it('is for admins: a member gets the 403 page on every page and form, and no Admin link', async () => {
    const member = new FormClient(t.url);
    await member.signedIn(bob.token);
    const queue = await member.request('GET', '/app/queue');
    expect(queue.text).to.not.include('href="/app/admin"');
    for (const path of ['/app/admin', ...PAGES]) {
      const res = await member.request('GET', path);
      expect(res.status, path).to.equal(403);
      expect(res.text).to.include('the operator console is for admins');
    }
    const posted = await member.request('POST', '/app/admin/plugins/queue', { csrf: member.csrf, enabled: 'false' });
    expect(posted.status).to.equal(403);
    const grant = await member.request('POST', `/app/admin/people/${bob.id}/grant-admin`, { csrf: member.csrf });
    expect(grant.status).to.equal(403);
    expect((await t.api('GET', '/v1/me', { token: bob.token })).body.is_admin).to.equal(false);
    expect((await t.api('GET', '/v1/queue')).status).to.equal(200);
  });

  it('an admin sees the Admin link and every console page', async () => {
    expect((await admin.request('GET', '/app/queue')).text).to.include('href="/app/admin"');
    const root = await admin.request('GET', '/app/admin');
    expect(root.location).to.equal('/app/admin/plugins');
    const headings: Record<string, string> = {};
    for (const path of PAGES) {
      const res = await admin.request('GET', path);
      expect(res.status, `${path}: ${res.text.slice(0, 300)}`).to.equal(200);
      headings[path] = h1(res.text)!;
    }
    expect(Object.values(headings)).to.deep.equal(['Plugins', 'People', 'Tokens', 'Agents', 'Webhooks', 'Identity audit']);
  });

  it('plugins: disabling one is live (its page 404s, its tools leave MCP), a needed one is refused naming who needs it, the app needs its box', async () => {
    const page = await admin.request('GET', '/app/admin/plugins');
    expect(page.text).to.match(/id="plugin-leases"[\s\S]*?Heartbeat-renewed claims[\s\S]*?needed by queue/);

    const refused = await admin.postAndFollow('/app/admin/plugins/leases', { enabled: 'false' });
    expect(flash(refused.text)).to.deep.equal(['error', "'leases' is needed by queue: disable that first"]);

    const client = await t.mcp();
    expect((await client.listTools()).tools.map((x) => x.name)).to.include('show_queue');
    const off = await admin.postAndFollow('/app/admin/plugins/queue', { enabled: 'false' });
    expect(flash(off.text)).to.deep.equal(['ok', 'queue is off for this tenant']);
    expect((await admin.request('GET', '/app/queue')).status).to.equal(404);
    expect((await client.listTools()).tools.map((x) => x.name)).to.not.include('show_queue');

    const leasesOff = await admin.postAndFollow('/app/admin/plugins/leases', { enabled: 'false' });
    expect(flash(leasesOff.text)![0]).to.equal('ok');
    expect(leasesOff.text).to.match(/id="plugin-queue"[\s\S]*?also enables leases/);
    const on = await admin.postAndFollow('/app/admin/plugins/queue', { enabled: 'true' });
    expect(flash(on.text)).to.deep.equal(['ok', 'queue is on for this tenant (with leases, which it needs)']);
    expect((await admin.request('GET', '/app/queue')).status).to.equal(200);
    expect((await client.listTools()).tools.map((x) => x.name)).to.include('show_queue');

    const app = await admin.postAndFollow('/app/admin/plugins/app', { enabled: 'false' });
    expect(flash(app.text)![0]).to.equal('error');
    expect(flash(app.text)![1]).to.match(/confirm/);
    expect((await admin.request('GET', '/app/admin/plugins')).status).to.equal(200);
  });

  it('people: create one with a token shown once, grant and revoke admin, offboard', async () => {
    const created = await admin.postAndFollow('/app/admin/people', {
      name: 'Cleo Coder',
      email: 'cleo@example.test',
      roles: 'backend',
      token: 'on',
    });
    expect(created.status, created.text.slice(0, 500)).to.equal(200);
    expect(flash(created.text)).to.deep.equal(['ok', 'Added Cleo Coder (cleo@example.test).']);
    const secret = /id="secret-value" class="secret" readonly value="(svc_pat_[^"]+)"/.exec(created.text)![1]!;
    const me = await t.api('GET', '/v1/me', { token: secret });
    expect(me.body).to.include({ name: 'Cleo Coder', is_admin: false });
    const cleo = me.body.person as string;
    // never again: not on the list, not on the tokens page
    expect((await admin.request('GET', '/app/admin/people')).text).to.not.include(secret);
    expect((await admin.request('GET', '/app/admin/tokens')).text).to.not.include(secret);

    const dup = await admin.postAndFollow('/app/admin/people', { name: 'Cleo Again', email: 'cleo@example.test' });
    expect(dup.status).to.equal(409);
    expect(dup.text).to.include('value="Cleo Again"');

    const granted = await admin.postAndFollow(`/app/admin/people/${cleo}/grant-admin`);
    expect(flash(granted.text)).to.deep.equal(['ok', 'Cleo Coder is now an admin']);
    expect((await t.api('GET', '/v1/me', { token: secret })).body.is_admin).to.equal(true);
    const revoked = await admin.postAndFollow(`/app/admin/people/${cleo}/revoke-admin`);
    expect(flash(revoked.text)).to.deep.equal(['ok', 'Cleo Coder is no longer an admin']);
    const offboarded = await admin.postAndFollow(`/app/admin/people/${cleo}/offboard`);
    expect(flash(offboarded.text)![1]).to.match(/^Cleo Coder is offboarded: 1 token\(s\)/);
    expect((await t.api('GET', '/v1/me', { token: secret })).status).to.equal(401);
    const last = await admin.postAndFollow(`/app/admin/people/${t.adminPerson}/revoke-admin`);
    expect(flash(last.text)![0]).to.equal('error');
  });

  it('people: a one-time sign-in link, valid a day, 3 days or a week, shown once and working; one for a person added with a link', async () => {
    const before = t.clock.now();
    const page = await admin.request('GET', '/app/admin/people');
    expect(page.text).to.include(`action="/app/admin/people/${bob.id}/invite"`).and.include('<option value="168">a week</option>');
    const made = await admin.postAndFollow(`/app/admin/people/${bob.id}/invite`, { hours: '168' });
    expect(made.status, made.text.slice(0, 500)).to.equal(200);
    expect(made.text).to.include('Sign-in link for Bob Builder');
    const link = unescape(/id="link-value" class="secret" readonly value="([^"]+)"/.exec(made.text)![1]!);
    expect(link).to.match(new RegExp(`/app/invite/${t.org}#[A-Za-z0-9_-]{43}$`));
    const stored = t.server.services.tenants.get(t.org)!.state.collection<{ expires_ms: number }>('signin-links').get(bob.id)!;
    expect(stored.expires_ms - before).to.be.within(168 * 3600 * 1000, 168 * 3600 * 1000 + (t.clock.now() - before));
    // never again on a page
    expect((await admin.request('GET', '/app/admin/people')).text).to.not.include(new URL(link).hash);
    // it signs Bob in: the invite page's form with the secret from the fragment
    const browser = new FormClient(t.url);
    const invitePage = await browser.request('GET', new URL(link).pathname);
    const signedIn = await browser.request('POST', new URL(link).pathname, {
      csrf: browser.csrfOf(invitePage.text),
      secret: new URL(link).hash.slice(1),
    });
    expect(signedIn.status, signedIn.text.slice(0, 300)).to.equal(303);
    expect((await browser.request('GET', '/app/queue')).text).to.include('Bob Builder');
    // a lifetime the operation refuses comes back as the console's error, nothing stored
    for (const hours of ['1000', 'soon']) {
      const refused = await admin.postAndFollow(`/app/admin/people/${bob.id}/invite`, { hours });
      expect(refused.status, hours).to.equal(422);
      expect(flash(refused.text)![0]).to.equal('error');
    }
    expect(t.server.services.tenants.get(t.org)!.state.collection('signin-links').has(bob.id)).to.equal(false);

    const added = await admin.postAndFollow('/app/admin/people', {
      name: 'Dana Designer',
      email: 'dana@example.test',
      link: 'on',
      token: 'on',
    });
    expect(added.status, added.text.slice(0, 500)).to.equal(200);
    expect(added.text).to.include('Sign-in link for Dana Designer').and.include('Sign-in token for Dana Designer');
    expect(added.text).to.match(/id="link-value" class="secret" readonly value="[^"]+\/app\/invite\//);
    expect(added.text).to.match(/id="secret-value" class="secret" readonly value="svc_pat_/);
  });

  it('tokens: a minted one is shown once; revoking one ends it', async () => {
    const minted = await admin.postAndFollow('/app/admin/tokens', { person: bob.id });
    const secret = /readonly value="(svc_pat_[^"]+)"/.exec(minted.text)![1]!;
    expect((await t.api('GET', '/v1/me', { token: secret })).status).to.equal(200);
    const prefix = /Token ([0-9a-f]{8,}), valid until/.exec(minted.text)![1]!;
    const list = await admin.request('GET', '/app/admin/tokens');
    expect(list.text).to.not.include(secret);
    expect(list.text).to.include(`id="token-${prefix}"`);
    const done = await admin.postAndFollow(`/app/admin/tokens/${prefix}/revoke`);
    expect(flash(done.text)).to.deep.equal(['ok', `Token ${prefix} is revoked`]);
    expect(done.text).to.not.include(`id="token-${prefix}"`);
    expect((await t.api('GET', '/v1/me', { token: secret })).status).to.equal(401);
  });

  it('agents: every agent with owner, capabilities, last seen and its standing tokens, revocable', async () => {
    const agent = (await t.api('POST', '/v1/agents', { token: bob.token, body: { label: 'Build bot' } })).body.id as string;
    const standing = await t.api('POST', `/v1/agents/${agent}/token`, { token: bob.token, body: { standing: true, label: 'ci' } });
    const published = await t.api('POST', `/v1/agents/${agent}/capabilities`, {
      token: bob.token,
      body: { harnesses: ['claude-code'], skills: ['pdf.read'] },
    });
    expect(published.status, published.text).to.equal(200);
    const page = await admin.request('GET', '/app/admin/agents');
    const row = new RegExp(`<tr id="${agent}">[\\s\\S]*?</tr>`).exec(page.text)![0];
    expect(row).to.include('Build bot').and.include('Bob Builder').and.include(standing.body.hash_prefix);
    expect(row)
      .to.include('claude-code')
      .and.include('pdf.read')
      .and.match(/<time datetime="[^"]+">/);
    const revoked = await admin.postAndFollow(`/app/admin/tokens/${standing.body.hash_prefix}/revoke`, { back: 'agents' });
    expect(h1(revoked.text)).to.equal('Agents');
    expect(flash(revoked.text)![0]).to.equal('ok');
    expect((await t.api('GET', '/v1/me', { token: standing.body.token })).status).to.equal(401);
  });

  it('webhooks: create (secret once), ping into the delivery log, disable and enable, delete', async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const bad = await admin.postAndFollow('/app/admin/webhooks', { url: 'not a url', description: 'kept' });
    expect(bad.status).to.equal(422);
    expect(bad.text).to.include('value="kept"');
    const created = await admin.postAndFollow('/app/admin/webhooks', { url, types: 'node.*', description: 'CI' });
    expect(created.status, created.text.slice(0, 400)).to.equal(200);
    const secret = /readonly value="(whsec_[^"]+)"/.exec(created.text)![1]!;
    const id = ((await t.api('GET', '/v1/webhooks')).body.webhooks as Array<{ id: string }>)[0]!.id;
    expect((await admin.request('GET', '/app/admin/webhooks')).text).to.not.include(secret);

    const before = received;
    const ping = await admin.postAndFollow(`/app/admin/webhooks/${id}/ping`);
    expect(flash(ping.text)![1]).to.match(/^Ping delivered: HTTP 204/);
    expect(received).to.be.greaterThan(before);
    const log = await admin.request('GET', `/app/admin/webhooks/${id}`);
    expect(log.text).to.include('webhook.ping').and.include('Delivery log');

    const off = await admin.postAndFollow(`/app/admin/webhooks/${id}/enabled`, { enabled: 'false' });
    expect(flash(off.text)![1]).to.match(/is disabled$/);
    expect((await t.api('GET', `/v1/webhooks/${id}`)).body.enabled).to.equal(false);
    const on = await admin.postAndFollow(`/app/admin/webhooks/${id}/enabled`, { enabled: 'true' });
    expect(flash(on.text)![1]).to.match(/is enabled$/);
    const gone = await admin.postAndFollow(`/app/admin/webhooks/${id}/delete`);
    expect(flash(gone.text)).to.deep.equal(['ok', 'Webhook deleted with its delivery log']);
    expect((await t.api('GET', `/v1/webhooks/${id}`)).status).to.equal(404);
    expect((await admin.request('GET', `/app/admin/webhooks/${id}`)).status).to.equal(404);
  });

  it('the identity audit lists the grants made from the console, with a flagged-only view', async () => {
    const all = await admin.request('GET', '/app/admin/audit');
    expect(all.text).to.include('grant_admin').and.include('revoke_admin');
    const flagged = await admin.request('GET', '/app/admin/audit?flagged=1');
    expect(flagged.status).to.equal(200);
    expect(flagged.text).to.not.include('<code>grant_admin</code>');
  });
});
