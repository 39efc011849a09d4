/**
 * The github link operations over REST and their MCP twins (plugins/github/api.ts), through the
 * real HTTP server and the real MCP transport: a link answers the webhook URL to paste into
 * GitHub and never a credential (a generated webhook secret once); bad input is 422 and changes
 * nothing; a repository is linked once (409); a member is refused (403) over both transports and
 * changes nothing; the same state reads the same bytes over REST and MCP.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expect } from 'chai';
import { addPerson, runSecrets, startTestServer, type TestServer } from '../../helpers/harness.js';

const LINKS = '/v1/integrations/github/links';
const TOKEN = 'github_pat_links_test_0123456789';
const TOOLS = ['link_github_repo', 'list_github_links', 'get_github_link', 'update_github_link', 'unlink_github_repo'];

describe('github: link management', function () {
  this.timeout(60_000);
  let t: TestServer;
  let admin: Client;
  let member: { id: string; token: string };

  before(async () => {
    t = await startTestServer();
    admin = await t.mcp();
    member = await addPerson(t, 'Mem Ber');
    runSecrets.add(TOKEN);
  });
  after(async () => {
    await t.close();
  });

  it('link answers the webhook URL and a generated secret once; reads never carry a credential', async () => {
    const res = await t.api('POST', LINKS, { body: { repo: 'acme/web', token: TOKEN } });
    expect(res.status, res.text).to.equal(201);
    const secret: string = res.body.webhook_secret;
    runSecrets.add(secret);
    expect(secret).to.match(/^[0-9a-f]{64}$/);
    const link = res.body.link;
    expect(link.id).to.match(/^ghl_/);
    expect(link.repo).to.equal('acme/web');
    expect(link.auth).to.equal('token');
    expect(link.has_token).to.equal(true);
    expect(link.has_webhook_secret).to.equal(true);
    expect(link.webhook_url).to.equal(`${t.url}/v1/integrations/github/webhook?tenant=${t.org}`);
    expect(link.mappings.label_types.bug).to.equal('issue');
    expect(link.mappings.label_priorities['priority:high']).to.equal('p1');
    expect(link.bot_person).to.equal(t.adminPerson);
    expect(res.text).to.not.include(TOKEN);
    for (const path of [LINKS, `${LINKS}/${link.id}`]) {
      const read = await t.api('GET', path);
      expect(read.status).to.equal(200);
      expect(read.text).to.not.include(TOKEN);
      expect(read.text).to.not.include(secret);
    }
    // a given secret is never answered back
    const given = 'given-webhook-secret-000000000';
    runSecrets.add(given);
    const other = await t.api('POST', LINKS, { body: { repo: 'acme/api', token: TOKEN, webhook_secret: given } });
    expect(other.status).to.equal(201);
    expect(other.body.webhook_secret).to.equal(undefined);
    expect(other.text).to.not.include(given);
    // nor does the graph hold any of it
    const exported = await t.api('GET', '/v1/export');
    expect(exported.text).to.not.include(TOKEN);
  });

  it('refuses bad input with 422 and a second link of a repository with 409, changing nothing', async () => {
    const count = async () => (await t.api('GET', LINKS)).body.links.length as number;
    const before = await count();
    const cases: Array<[unknown, number]> = [
      [{ repo: 'not a repo', token: TOKEN }, 422],
      [{ repo: 'acme/x' }, 422],
      [{ repo: 'acme/x', token: TOKEN, app: { app_id: 1, installation_id: 2, private_key: 'x'.repeat(120) } }, 422],
      [{ repo: 'acme/x', app: { app_id: 1, installation_id: 2, private_key: 'x'.repeat(120) } }, 422],
      [
        {
          repo: 'acme/x',
          app: {
            app_id: 1,
            installation_id: 2,
            private_key: `-----BEGIN PRIVATE KEY-----\n${'A'.repeat(120)}\n-----END PRIVATE KEY-----\n`,
          },
        },
        422,
      ],
      [{ repo: 'acme/x', token: TOKEN, mappings: { label_types: { bug: 'no-such-type' } } }, 422],
      [{ repo: 'acme/x', token: TOKEN, mappings: { closed_status: { issue: 'no-such-status' } } }, 422],
      [{ repo: 'acme/x', token: TOKEN, mappings: { people: { someone: 'person-nobody' } } }, 422],
      [{ repo: 'acme/x', token: TOKEN, bot_person: 'person-nobody' }, 422],
      [{ repo: 'acme/x', token: TOKEN, webhook_secret: 'short' }, 422],
      [{ repo: 'ACME/WEB', token: TOKEN }, 409],
    ];
    for (const [body, status] of cases) {
      const res = await t.api('POST', LINKS, { body });
      expect(res.status, `${JSON.stringify(body)}: ${res.text}`).to.equal(status);
      expect(res.body.error.code).to.be.a('string');
    }
    expect(await count()).to.equal(before);
  });

  it('update replaces the given map only, rotates the secret once, and re-enables', async () => {
    const created = await t.api('POST', LINKS, { body: { repo: 'acme/mapped', token: TOKEN } });
    runSecrets.add(created.body.webhook_secret);
    const id = created.body.link.id;
    const res = await t.api('PATCH', `${LINKS}/${id}`, {
      body: { mappings: { label_priorities: { 'sev-1': 'p1' }, people: { Mem: member.id } }, enabled: false },
    });
    expect(res.status, res.text).to.equal(200);
    const m = res.body.link.mappings;
    expect(m.label_priorities['sev-1']).to.equal('p1');
    expect(m.label_priorities.p1, 'defaults kept under the given map').to.equal('p1');
    expect(m.people).to.deep.equal({ mem: member.id });
    expect(m.label_types.bug, 'maps not given stay').to.equal('issue');
    expect(res.body.link.enabled).to.equal(false);
    expect(res.body.webhook_secret).to.equal(undefined);
    const rotated = await t.api('PATCH', `${LINKS}/${id}`, { body: { rotate_webhook_secret: true, enabled: true } });
    expect(rotated.status).to.equal(200);
    runSecrets.add(rotated.body.webhook_secret);
    expect(rotated.body.webhook_secret).to.match(/^[0-9a-f]{64}$/);
    expect(rotated.body.webhook_secret).to.not.equal(created.body.webhook_secret);
    expect(rotated.body.link.state).to.equal('active');
    const bad = await t.api('PATCH', `${LINKS}/${id}`, { body: { rotate_webhook_secret: true, webhook_secret: 'x'.repeat(20) } });
    expect(bad.status).to.equal(422);
    const unknown = await t.api('PATCH', `${LINKS}/ghl_000000000000000000`, { body: { enabled: true } });
    expect(unknown.status).to.equal(404);
  });

  it('unlink removes the link (404 after), the nodes stay', async () => {
    const created = await t.api('POST', LINKS, { body: { repo: 'acme/gone', token: TOKEN } });
    runSecrets.add(created.body.webhook_secret);
    const id = created.body.link.id;
    const res = await t.api('DELETE', `${LINKS}/${id}`);
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.deep.equal({ id, deleted: true, unlinked_nodes: 0 });
    expect((await t.api('GET', `${LINKS}/${id}`)).status).to.equal(404);
    expect((await t.api('DELETE', `${LINKS}/${id}`)).status).to.equal(404);
  });

  it('a member is refused (403) over REST and MCP and changes nothing', async () => {
    const before = (await t.api('GET', LINKS)).text;
    const id = (await t.api('GET', LINKS)).body.links[0].id;
    const calls: Array<[string, string, unknown]> = [
      ['POST', LINKS, { repo: 'acme/member', token: TOKEN }],
      ['GET', LINKS, undefined],
      ['GET', `${LINKS}/${id}`, undefined],
      ['PATCH', `${LINKS}/${id}`, { enabled: false }],
      ['DELETE', `${LINKS}/${id}`, undefined],
    ];
    for (const [method, path, body] of calls) {
      const res = await t.api(method, path, { token: member.token, body });
      expect(res.status, `${method} ${path}`).to.equal(403);
      expect(res.body.error.code).to.equal('forbidden');
    }
    const client = await t.mcp(member.token);
    const listed = (await client.listTools()).tools.map((x) => x.name);
    for (const name of TOOLS) expect(listed, 'a member is not shown admin tools').to.not.include(name);
    const args: Record<string, Record<string, unknown>> = {
      link_github_repo: { repo: 'acme/member', token: TOKEN },
      list_github_links: {},
      get_github_link: { id },
      update_github_link: { id, enabled: false },
      unlink_github_repo: { id },
    };
    for (const name of TOOLS) {
      const r = await t.tool(client, name, args[name]);
      expect(r.isError, name).to.equal(true);
      expect(r.json.error.code, name).to.equal('forbidden');
    }
    expect((await t.api('GET', LINKS)).text).to.equal(before);
  });

  it('the MCP tools do what the routes do, with the same answers', async () => {
    const listed = (await admin.listTools()).tools.map((x) => x.name);
    expect(listed).to.include.members(TOOLS);
    const created = await t.tool(admin, 'link_github_repo', { repo: 'acme/mcp', token: TOKEN });
    expect(created.isError, created.text).to.equal(false);
    runSecrets.add(created.json.webhook_secret);
    expect(created.text).to.not.include(TOKEN);
    const id = created.json.link.id;
    const viaTool = await t.tool(admin, 'get_github_link', { id });
    const viaRest = await t.api('GET', `${LINKS}/${id}`);
    expect(viaTool.text).to.equal(viaRest.text);
    expect((await t.tool(admin, 'list_github_links')).text).to.equal((await t.api('GET', LINKS)).text);
    const updated = await t.tool(admin, 'update_github_link', { id, mappings: { default_type: 'task' } });
    expect(updated.json.link.mappings.default_type).to.equal('task');
    const dup = await t.tool(admin, 'link_github_repo', { repo: 'acme/mcp', token: TOKEN });
    expect(dup.isError).to.equal(true);
    expect(dup.json.error.code).to.equal('conflict');
    const removed = await t.tool(admin, 'unlink_github_repo', { id });
    expect(removed.json).to.deep.equal({ id, deleted: true, unlinked_nodes: 0 });
    const gone = await t.tool(admin, 'get_github_link', { id });
    expect(gone.isError).to.equal(true);
    expect(gone.json.error.code).to.equal('not_found');
  });
});
