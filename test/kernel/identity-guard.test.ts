import { expect } from 'chai';
import { runGit } from '../../kernel/git/cli.js';
import { guardIdentityFacts, IdentityAuthority, identityFactChanges } from '../../kernel/identity-guard.js';
import { Registry, type EdgeTypeDef } from '../../kernel/registry.js';
import { seedPack } from '../../seed-pack/index.js';
import { allPlugins } from '../../scripts/plugins.js';
import { SvcError } from '../../kernel/errors.js';
import { md, startTestServer, type TestServer } from '../helpers/harness.js';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/processes.js';
import { createAgent, createPerson, expectError, standingToken } from '../plugins/identity/helpers.js';

/**
 * The identity-fact guard (kernel/identity-guard.ts) in the write path: the five requests of
 * the report (and their MCP twins, batch puts, inverse forms, graph schemas) are 403 and
 * change nothing; the identity operations still write what they own.
 */
describe('kernel: identity facts are written only by identity operations', () => {
  let t: TestServer;
  let member: { id: string; token: string; email: string };
  let other: { id: string; token: string; email: string };
  let memberAgent: string;
  let agentToken: string;

  before(async () => {
    t = await startTestServer({ plugins: allPlugins });
    member = await createPerson(t, 'Mallory');
    other = await createPerson(t, 'Olive');
    memberAgent = await createAgent(t, member.token, 'Mallory Bot');
    agentToken = (await standingToken(t, member.token, memberAgent)).token;
  });
  after(async () => t.close());

  const tenant = () => t.server.services.tenants.get(t.org)!;
  /** head and number of commits: a refused write leaves both as they were */
  async function historyState(): Promise<{ head: string; commits: number }> {
    const head = (await t.api('GET', '/v1/status')).body.head as string;
    const count = Number((await runGit(tenant().store.gitdir, ['rev-list', '--count', 'refs/heads/main'])).toString().trim());
    return { head, commits: count };
  }
  async function isAdmin(token: string): Promise<boolean> {
    return (await t.api('GET', '/v1/me', { token })).body.is_admin as boolean;
  }

  it('the registry declares the identity facts (GET /v1/schema)', async () => {
    const schema = (await t.api('GET', '/v1/schema')).body;
    const edge = (name: string) => schema.edge_types.find((e: { type: string }) => e.type === name);
    expect(edge('stewards').identity).to.deep.equal({ targets: ['proj-root'] });
    expect(edge('owned-by').identity).to.equal(true);
    expect(edge('relates-to').identity).to.equal(false);
    const person = schema.node_types.find((n: { type: string }) => n.type === 'person');
    expect(person.identity).to.equal(true);
    expect(person.identity_fields).to.include.members(['name', 'email']);
    const agent = schema.node_types.find((n: { type: string }) => n.type === 'agent');
    expect(agent.identity_fields).to.deep.equal(['pubkey']);
  });

  describe('the five requests of the report, over REST: 403 forbidden, nothing written', () => {
    it('1. a member adds stewards -> proj-root to their own person node', async () => {
      const before = await historyState();
      expectError(
        await t.api('POST', `/v1/nodes/${member.id}/edges`, { token: member.token, body: { type: 'stewards', to: 'proj-root' } }),
        403,
        'forbidden',
      );
      expect(await historyState()).to.deep.equal(before);
      expect(await isAdmin(member.token)).to.equal(false);
    });

    it('2. the inverse form: stewarded-by on proj-root pointing at themselves', async () => {
      const before = await historyState();
      const res = await t.api('POST', '/v1/nodes/proj-root/edges', { token: member.token, body: { type: 'stewarded-by', to: member.id } });
      expectError(res, 403, 'forbidden');
      expect(res.body.error.details.identity_facts).to.deep.equal([`adds ${member.id} -stewards-> proj-root`]);
      expect(await historyState()).to.deep.equal(before);
      expect(await isAdmin(member.token)).to.equal(false);
    });

    it("3. a standing agent token writes its owner's stewards edge", async () => {
      const before = await historyState();
      expectError(
        await t.api('POST', `/v1/nodes/${member.id}/edges`, { token: agentToken, body: { type: 'stewards', to: 'proj-root' } }),
        403,
        'forbidden',
      );
      expect(await historyState()).to.deep.equal(before);
      expect(await isAdmin(member.token)).to.equal(false);
    });

    it("4. a member deletes an admin's stewards edge", async () => {
      const before = await historyState();
      expectError(
        await t.api('DELETE', `/v1/nodes/${t.adminPerson}/edges`, { token: member.token, body: { type: 'stewards', to: 'proj-root' } }),
        403,
        'forbidden',
      );
      expect(await historyState()).to.deep.equal(before);
      expect(await isAdmin(t.adminToken)).to.equal(true);
    });

    it("5. another member moves someone's agent to themselves (owned-by) and mints a token for it", async () => {
      const before = await historyState();
      expectError(
        await t.api('DELETE', `/v1/nodes/${memberAgent}/edges`, { token: other.token, body: { type: 'owned-by', to: member.id } }),
        403,
        'forbidden',
      );
      expectError(
        await t.api('POST', `/v1/nodes/${memberAgent}/edges`, { token: other.token, body: { type: 'owned-by', to: other.id } }),
        403,
        'forbidden',
      );
      // the inverse form from the person's side
      expectError(
        await t.api('POST', `/v1/nodes/${other.id}/edges`, { token: other.token, body: { type: 'owns', to: memberAgent } }),
        403,
        'forbidden',
      );
      expectError(
        await t.api('POST', `/v1/agents/${memberAgent}/token`, { token: other.token, body: { standing: true } }),
        403,
        'forbidden',
      );
      expect(await historyState()).to.deep.equal(before);
      expect((await t.api('GET', `/v1/nodes/${memberAgent}`)).body.frontmatter.edges).to.deep.equal([{ type: 'owned-by', to: member.id }]);
    });

    it('an admin is refused too: admin rights go through grant_admin, never the edge routes', async () => {
      const before = await historyState();
      expectError(await t.api('POST', `/v1/nodes/${other.id}/edges`, { body: { type: 'stewards', to: 'proj-root' } }), 403, 'forbidden');
      expect(await historyState()).to.deep.equal(before);
    });
  });

  describe('the same over MCP (add_edge, remove_edge, put_node)', () => {
    it('add_edge and remove_edge answer the 403 envelope and change nothing', async () => {
      const before = await historyState();
      const client = await t.mcp(member.token);
      const calls: Array<[string, Record<string, unknown>]> = [
        ['add_edge', { id: member.id, type: 'stewards', to: 'proj-root' }],
        ['add_edge', { id: 'proj-root', type: 'stewarded-by', to: member.id }],
        ['remove_edge', { id: t.adminPerson, type: 'stewards', to: 'proj-root' }],
        ['remove_edge', { id: memberAgent, type: 'owned-by', to: member.id }],
      ];
      for (const [name, args] of calls) {
        const res = await t.tool(client, name, args);
        expect(res.isError, `${name} ${JSON.stringify(args)}: ${res.text}`).to.equal(true);
        expect(res.json.error.code).to.equal('forbidden');
      }
      const agentClient = await t.mcp(agentToken);
      const viaAgent = await t.tool(agentClient, 'add_edge', { id: member.id, type: 'stewards', to: 'proj-root' });
      expect(viaAgent.isError).to.equal(true);
      expect(viaAgent.json.error.code).to.equal('forbidden');
      const otherClient = await t.mcp(other.token);
      const hijack = await t.tool(otherClient, 'add_edge', { id: memberAgent, type: 'owned-by', to: other.id });
      expect(hijack.json.error.code).to.equal('forbidden');
      expect(await historyState()).to.deep.equal(before);
      expect(await isAdmin(member.token)).to.equal(false);
    });

    it('put_node: a full put of an agent or root whose edges carry an identity edge fails with 403', async () => {
      const before = await historyState();
      const client = await t.mcp(other.token);
      const agentNode = (await t.api('GET', `/v1/nodes/${memberAgent}`)).body;
      const root = (await t.api('GET', '/v1/nodes/proj-root')).body;
      const res = await t.tool(client, 'put_node', {
        nodes: [
          {
            node: md({ ...agentNode.frontmatter, edges: [{ type: 'owned-by', to: other.id }] }),
            if_exists: 'update',
            revision: agentNode.revision,
          },
          {
            node: md({ ...root.frontmatter, edges: [{ type: 'stewarded-by', to: other.id }] }),
            if_exists: 'update',
            revision: root.revision,
          },
          md({
            id: 'agent-sneaky',
            type: 'agent',
            summary: 'an agent owned by the admin',
            edges: [{ type: 'owned-by', to: t.adminPerson }],
          }),
          md({ id: 'task-sneaky', summary: 'a task that stewards the root', edges: [{ type: 'stewards', to: 'proj-root' }] }),
        ],
      });
      expect(res.isError, res.text).to.equal(true);
      expect(res.json.failed).to.equal(4);
      for (const r of res.json.results) {
        expect(r.http_status).to.equal(403);
        expect(r.error.code).to.equal('forbidden');
      }
      expect(await historyState()).to.deep.equal(before);
    });
  });

  describe('every other path', () => {
    it('batch POST /v1/nodes: identity edges and fields are refused per entry; the rest of the batch applies', async () => {
      const before = await historyState();
      const agentNode = (await t.api('GET', `/v1/nodes/${memberAgent}`)).body;
      const res = await t.api('POST', '/v1/nodes', {
        token: other.token,
        body: {
          nodes: [
            { node: md({ ...agentNode.frontmatter, edges: [] }), if_exists: 'update', revision: agentNode.revision },
            { node: md({ ...agentNode.frontmatter, pubkey: 'ssh-ed25519 AAAAforged' }), if_exists: 'update', revision: agentNode.revision },
            md({ id: 'task-fine', summary: 'an ordinary task' }),
          ],
        },
      });
      expect(res.status, res.text).to.equal(207);
      expect(res.body.results.map((r: { status: string }) => r.status)).to.deep.equal(['failed', 'failed', 'created']);
      expect(res.body.results[0].error.code).to.equal('forbidden');
      expect(res.body.results[1].error.details.identity_facts).to.deep.equal([`changes pubkey of ${memberAgent}`]);
      const after = await historyState();
      expect(after.commits).to.equal(before.commits + 1);
      expect((await t.api('GET', `/v1/nodes/${memberAgent}`)).body.revision).to.equal(agentNode.revision);
    });

    it('a write path that is not a route (a plugin, hook or workflow writing through the tenant) is refused without the authority', async () => {
      const actor = { personId: t.adminPerson, name: 'Admin', email: 'admin@localhost', agent: null, session: null };
      const before = await historyState();
      let caught: unknown;
      try {
        await tenant().write(actor, { op: 'some_plugin_action', via: 'rest' }, async (draft) => {
          const node = draft.get(member.id)!;
          node.frontmatter.edges = [{ type: 'stewards', to: 'proj-root' }];
          draft.put(node);
        });
      } catch (err) {
        caught = err;
      }
      expect(caught).to.be.instanceOf(SvcError);
      expect((caught as SvcError).status).to.equal(403);
      // a forged authority (a plain object, a JSON value) is no authority
      for (const forged of [{ holder: 'identity' }, 'identity', true]) {
        let refused = false;
        try {
          await tenant().write(actor, { op: 'forged', via: 'rest', identity: forged as unknown as IdentityAuthority }, async (draft) => {
            draft.delete(member.id);
          });
        } catch (err) {
          refused = err instanceof SvcError && err.status === 403;
        }
        expect(refused, JSON.stringify(forged)).to.equal(true);
      }
      expect(await historyState()).to.deep.equal(before);
    });

    it('ordinary writes on identity nodes still work: a stewards edge to a project, an agent retired by its owner', async () => {
      await t.api('POST', '/v1/nodes', { body: { nodes: [md({ id: 'proj-web', type: 'proj', summary: 'web' })] } });
      const res = await t.api('POST', `/v1/nodes/${member.id}/edges`, { token: member.token, body: { type: 'stewards', to: 'proj-web' } });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.status).to.equal('updated');
      const retire = await t.api('POST', `/v1/nodes/${memberAgent}/status`, { token: member.token, body: { status: 'retired' } });
      expect(retire.status, retire.text).to.equal(200);
      expect(await isAdmin(member.token)).to.equal(false);
    });

    it('identity operations still write what they own, with the Svc-Identity and Svc-Credential trailers', async () => {
      const person = await t.api('POST', '/v1/admin/people', { body: { name: 'Newcomer', email: 'newcomer@example.test' } });
      expect(person.status, person.text).to.equal(201);
      const agent = await t.api('POST', '/v1/admin/agents', {
        body: { label: 'Fleet', owner: person.body.id, pubkey: 'ssh-ed25519 AAAAreal' },
      });
      expect(agent.status, agent.text).to.equal(201);
      const message = (await runGit(tenant().store.gitdir, ['log', '-1', '--format=%B', 'refs/heads/main'])).toString();
      expect(message).to.match(/^create_agent: agent-fleet/);
      expect(message).to.contain('Svc-Identity: identity');
      expect(message).to.contain('Svc-Credential: pat');
    });
  });

  describe('graph-resident schemas cannot alias around an identity edge type', () => {
    let reviewer: { id: string; token: string; email: string };
    before(async () => {
      reviewer = await createPerson(t, 'Reviewer');
      const granted = await t.api('POST', `/v1/admin/people/${reviewer.id}/admin`);
      expect(granted.status, granted.text).to.equal(200);
    });

    async function activateSchema(id: string, edgeTypes: unknown[]): Promise<void> {
      const put = await t.api('POST', '/v1/nodes', {
        body: { nodes: [md({ id, type: 'schema', summary: `schema ${id}`, applies_to: 'task', edge_types: edgeTypes })] },
      });
      expect(put.status, put.text).to.equal(200);
      const active = await t.api('POST', `/v1/nodes/${id}/status`, { token: reviewer.token, body: { status: 'active' } });
      expect(active.status, active.text).to.equal(200);
    }

    it('a schema that redefines stewards or claims owns is refused (stale_overrides); the inverse forms stay guarded', async () => {
      await activateSchema('schema-alias-around', [
        { type: 'stewards', inverse_label: 'boss-of', aliases: ['manages'], identity: false },
        { type: 'possesses', aliases: ['owns'] },
        { type: 'stewarded-by', description: 'a look-alike canonical type' },
      ]);
      const schema = (await t.api('GET', '/v1/schema')).body;
      const reasons = schema.stale_overrides
        .filter((o: { schema_id: string }) => o.schema_id === 'schema-alias-around')
        .map((o: { reason: string }) => o.reason);
      expect(reasons).to.have.length(3);
      expect(schema.edge_types.find((e: { type: string }) => e.type === 'stewards')).to.include({ inverse_label: 'stewarded-by' });
      expect(schema.edge_types.find((e: { type: string }) => e.type === 'possesses')).to.equal(undefined);
      const before = await historyState();
      expectError(
        await t.api('POST', '/v1/nodes/proj-root/edges', { token: member.token, body: { type: 'stewarded-by', to: member.id } }),
        403,
        'forbidden',
      );
      expectError(
        await t.api('POST', `/v1/nodes/${other.id}/edges`, { token: other.token, body: { type: 'owns', to: memberAgent } }),
        403,
        'forbidden',
      );
      expectError(
        await t.api('POST', `/v1/nodes/${member.id}/edges`, { token: member.token, body: { type: 'boss-of', to: 'proj-root' } }),
        422,
      );
      expect(await historyState()).to.deep.equal(before);
    });

    it('a new identity edge type declared by a graph schema is guarded by that declaration alone', async () => {
      await activateSchema('schema-vouching', [{ type: 'vouches-for', inverse_label: 'vouched-by', identity: true }]);
      const schema = (await t.api('GET', '/v1/schema')).body;
      expect(schema.edge_types.find((e: { type: string }) => e.type === 'vouches-for').identity).to.equal(true);
      const before = await historyState();
      expectError(
        await t.api('POST', `/v1/nodes/${member.id}/edges`, { token: member.token, body: { type: 'vouches-for', to: other.id } }),
        403,
        'forbidden',
      );
      expectError(
        await t.api('POST', `/v1/nodes/${other.id}/edges`, { token: member.token, body: { type: 'vouched-by', to: member.id } }),
        403,
        'forbidden',
      );
      expect(await historyState()).to.deep.equal(before);
    });
  });
});

describe('kernel: identity facts by declaration (a test registry)', () => {
  const trusts: EdgeTypeDef = {
    type: 'trusts',
    description: 'a test identity edge',
    weight: 0.1,
    weight_default: 0.1,
    inverse_label: 'trusted-by',
    aliases: ['relies-on'],
    inverse_aliases: [],
    capturable: false,
    review_family: false,
    identity: true,
    hooks: {},
    source: 'native',
  };
  const registry = new Registry(seedPack, [], [trusts]);
  const task = (edges: Array<Record<string, string>>) => ({
    frontmatter: { id: 'task-a', type: 'task', status: 'open', summary: 'a', edges },
    body: '',
  });

  it('a new identity edge type is guarded in either direction and through its aliases', () => {
    expect(identityFactChanges(registry, 'task-a', task([]), task([{ type: 'trusts', to: 'task-b' }]))).to.deep.equal([
      'adds task-a -trusts-> task-b',
    ]);
    expect(identityFactChanges(registry, 'task-a', task([]), task([{ type: 'relies-on', to: 'task-b' }]))).to.deep.equal([
      'adds task-a -trusts-> task-b',
    ]);
    expect(identityFactChanges(registry, 'task-b', task([]), task([{ type: 'trusted-by', to: 'task-a' }]))).to.deep.equal([
      'adds task-a -trusts-> task-b',
    ]);
    expect(identityFactChanges(registry, 'task-a', task([{ type: 'trusts', to: 'task-b' }]), null)).to.deep.equal([
      'removes task-a -trusts-> task-b',
    ]);
    expect(identityFactChanges(registry, 'task-a', task([]), task([{ type: 'relates-to', to: 'task-b' }]))).to.deep.equal([]);
    expect(() => guardIdentityFacts(registry, 'task-a', task([]), task([{ type: 'trusts', to: 'task-b' }]), undefined)).to.throw(SvcError);
    expect(
      guardIdentityFacts(registry, 'task-a', task([]), task([{ type: 'trusts', to: 'task-b' }]), IdentityAuthority.issue('test')),
    ).to.have.length(1);
  });

  it('stewards is an identity fact only towards proj-root', () => {
    const person = (edges: Array<Record<string, string>>) => ({
      frontmatter: { id: 'person-p', type: 'person', status: 'active', summary: 'p', name: 'P', email: 'p@x', edges },
      body: '',
    });
    expect(identityFactChanges(registry, 'person-p', person([]), person([{ type: 'stewards', to: 'proj-web' }]))).to.deep.equal([]);
    expect(identityFactChanges(registry, 'person-p', person([]), person([{ type: 'stewards', to: 'proj-root' }]))).to.deep.equal([
      'adds person-p -stewards-> proj-root',
    ]);
    const renamed = person([]);
    renamed.frontmatter.email = 'attacker@x';
    expect(identityFactChanges(registry, 'person-p', person([]), renamed)).to.deep.equal(['changes email of person-p']);
    expect(identityFactChanges(registry, 'person-p', null, person([]))).to.deep.equal(['creates the person node person-p']);
    expect(identityFactChanges(registry, 'person-p', person([]), null)).to.deep.equal(['deletes the person node person-p']);
    const retitled = person([]);
    retitled.frontmatter.summary = 'a new summary';
    expect(identityFactChanges(registry, 'person-p', person([]), retitled)).to.deep.equal([]);
  });
});

describe('kernel: only the kernel issues identity authorities', () => {
  it('no plugin source mints one (the kernel hands one to the identity plugin at boot)', () => {
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (name.endsWith('.ts') && readFileSync(path, 'utf8').includes('IdentityAuthority.issue'))
          offenders.push(path.slice(ROOT.length));
      }
    };
    walk(join(ROOT, 'plugins'));
    expect(offenders).to.deep.equal([]);
    // the kernel's own issuers: the boot hand-over and the tenant bootstrap
    expect(readFileSync(join(ROOT, 'kernel', 'server.ts'), 'utf8')).to.contain('IdentityAuthority.issue(IDENTITY_PLUGIN)');
    expect(readFileSync(join(ROOT, 'kernel', 'tenants.ts'), 'utf8')).to.contain("IdentityAuthority.issue('bootstrap')");
  });
});
