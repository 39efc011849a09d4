import { expect } from 'chai';
import { hashPrefix, hashToken } from '../../../kernel/auth.js';
import { md, type TestServer } from '../../helpers/harness.js';
import {
  createAgent,
  createPerson,
  DAY_MS,
  expectError,
  oauthGrant,
  sessionToken,
  standingToken,
  startIdentityServer,
  unboundToken,
} from './helpers.js';

describe('identity: agents (POST /v1/agents, POST /v1/admin/agents, GET /v1/agents)', () => {
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };
  before(async () => {
    t = await startIdentityServer();
    alice = await createPerson(t, 'Alice');
    bob = await createPerson(t, 'Bob');
  });
  after(async () => t.close());

  it('rule 6: self-serve create: owner is the caller (never the payload), id from the label, owned-by edge', async () => {
    const res = await t.api('POST', '/v1/agents', {
      token: alice.token,
      body: { label: 'Build Bot Ünïcode!', owner: bob.id, pubkey: 'ssh-ed25519 AAAAC3Nza alice@host' },
    });
    expect(res.status, res.text).to.equal(201);
    expect(res.body).to.have.all.keys('id', 'owner', 'spiffe', 'pubkey', 'status', 'revision');
    expect(res.body).to.include({
      id: 'agent-build-bot-unicode',
      owner: alice.id,
      status: 'active',
      pubkey: 'ssh-ed25519 AAAAC3Nza alice@host',
    });
    expect(res.body.spiffe).to.equal(`spiffe://${t.org}/agent/agent-build-bot-unicode`);
    const node = await t.api('GET', '/v1/nodes/agent-build-bot-unicode');
    expect(node.body.revision).to.equal(res.body.revision);
    expect(node.body.frontmatter).to.include({ type: 'agent', status: 'active', label: 'Build Bot Ünïcode!', author: alice.id });
    expect(node.body.frontmatter.edges).to.deep.equal([{ type: 'owned-by', to: alice.id }]);
    // an explicit id; no pubkey is null
    const explicit = await t.api('POST', '/v1/agents', { token: alice.token, body: { label: 'Whatever', id: 'agent-custom' } });
    expect(explicit.status).to.equal(201);
    expect(explicit.body).to.include({ id: 'agent-custom', pubkey: null });
    // a label already starting with "agent" does not double the prefix
    expect((await t.api('POST', '/v1/agents', { token: alice.token, body: { label: 'Agent Smith' } })).body.id).to.equal('agent-smith');
  });

  it('rule 6: duplicate id is 409, invalid body 422, caller without a person node 403', async () => {
    expectError(await t.api('POST', '/v1/agents', { token: bob.token, body: { label: 'build bot unicode' } }), 409, 'conflict');
    expectError(await t.api('POST', '/v1/agents', { token: bob.token, body: { label: 'x', id: 'agent-custom' } }), 409, 'conflict');
    for (const body of [
      {},
      { label: '' },
      { label: 'x'.repeat(201) },
      { label: 'two\nlines' },
      { label: '!!!' },
      { label: 'ok', id: 'task-nope' },
      { label: 'ok', id: 'Agent_Bad' },
      { label: 'ok', id: 'agent-' },
      { label: 'ok', pubkey: 42 },
      { label: 'ok', pubkey: 'k'.repeat(5000) },
    ]) {
      expectError(await t.api('POST', '/v1/agents', { token: bob.token, body }), 422, 'validation_failed');
    }
    // the body is the declared input: an unknown field is 422 with ajv's error naming it
    const extra = await t.api('POST', '/v1/agents', { token: bob.token, body: { label: 'Extra Bot', color: 'blue' } });
    expectError(extra, 422, 'validation_failed');
    expect(extra.body.error.details.errors[0]).to.deep.include({
      keyword: 'additionalProperties',
      params: { additionalProperty: 'color' },
    });
    expectError(await t.api('GET', '/v1/nodes/agent-extra-bot'), 404);
    expectError(await t.api('POST', '/v1/agents', { token: await unboundToken(t), body: { label: 'Orphan Bot' } }), 403);
    expectError(await t.api('GET', '/v1/nodes/agent-orphan-bot'), 404);
    // an agent token cannot create agents
    const agent = await createAgent(t, bob.token, 'Bob Bot');
    const ast = await sessionToken(t, bob.token, agent);
    expectError(await t.api('POST', '/v1/agents', { token: ast, body: { label: 'Spawned' } }), 403, 'forbidden');
    expectError(await t.api('GET', '/v1/nodes/agent-spawned'), 404);
  });

  it('rule 6: admin create: owner defaults to the caller, may name another person; non-admins get 403', async () => {
    const mine = await t.api('POST', '/v1/admin/agents', { body: { label: 'Admin Fleet One' } });
    expect(mine.status, mine.text).to.equal(201);
    expect(mine.body).to.include({ id: 'agent-admin-fleet-one', owner: t.adminPerson });
    const forBob = await t.api('POST', '/v1/admin/agents', { body: { label: 'Bob Fleet', owner: bob.id, pubkey: 'pk' } });
    expect(forBob.status).to.equal(201);
    expect(forBob.body).to.include({ owner: bob.id, pubkey: 'pk' });
    expect((await t.api('GET', `/v1/nodes/${forBob.body.id}`)).body.frontmatter.edges).to.deep.equal([{ type: 'owned-by', to: bob.id }]);
    expectError(await t.api('POST', '/v1/admin/agents', { body: { label: 'Ghost Fleet', owner: 'person-ghost' } }), 404);
    expectError(await t.api('POST', '/v1/admin/agents', { body: { label: 'Bad Fleet', owner: 'not a person' } }), 422);
    expectError(await t.api('POST', '/v1/admin/agents', { body: { label: 'Bad Fleet', owner: 'proj-root' } }), 422);
    expectError(await t.api('POST', '/v1/admin/agents', { token: bob.token, body: { label: 'Bob Self' } }), 403, 'forbidden');
  });

  it('listing: own agents by default; all=1 is admin only', async () => {
    const own = await t.api('GET', '/v1/agents', { token: bob.token });
    expect(own.status).to.equal(200);
    expect(own.body.count).to.equal(own.body.agents.length);
    expect(own.body.agents.length).to.equal(2);
    expect(own.body.agents.every((a: any) => a.owner === bob.id)).to.equal(true);
    const entry = own.body.agents.find((a: any) => a.id === 'agent-bob-fleet');
    expect(entry).to.deep.equal({
      id: 'agent-bob-fleet',
      label: 'Bob Fleet',
      owner: bob.id,
      spiffe: `spiffe://${t.org}/agent/agent-bob-fleet`,
      pubkey: 'pk',
      status: 'active',
    });
    expectError(await t.api('GET', '/v1/agents?all=1', { token: bob.token }), 403, 'forbidden');
    const all = await t.api('GET', '/v1/agents?all=1');
    expect(all.status).to.equal(200);
    const owners = new Set(all.body.agents.map((a: any) => a.owner));
    expect([...owners]).to.include.members([alice.id, bob.id, t.adminPerson]);
    expect(all.body.count).to.be.greaterThan(own.body.count);
    // an agent token lists its owner's agents
    const ast = await sessionToken(t, bob.token, 'agent-bob-fleet');
    expect((await t.api('GET', '/v1/agents', { token: ast })).body.count).to.equal(own.body.count);
    expectError(await t.api('GET', '/v1/agents', { token: await unboundToken(t) }), 403);
  });
});

describe('identity: agent tokens (POST /v1/agents/{id}/token, GET/DELETE /v1/agents/{id}/tokens)', () => {
  let t: TestServer;
  let owner: { id: string; token: string };
  let other: { id: string; token: string };
  let agent: string;
  let otherAgent: string;
  before(async () => {
    t = await startIdentityServer();
    owner = await createPerson(t, 'Owner');
    other = await createPerson(t, 'Other');
    agent = await createAgent(t, owner.token, 'Runner');
    otherAgent = await createAgent(t, other.token, 'Other Runner');
  });
  after(async () => t.close());

  it('rule 7: the caller must own the agent (403, admins included); unknown 404; malformed 422', async () => {
    expectError(await t.api('POST', `/v1/agents/${agent}/token`, { token: other.token, body: {} }), 403, 'forbidden');
    expectError(await t.api('POST', `/v1/agents/${agent}/token`, { body: {} }), 403, 'forbidden');
    expectError(await t.api('POST', `/v1/agents/${agent}/token`, { token: other.token, body: { standing: true } }), 403, 'forbidden');
    expectError(await t.api('POST', '/v1/agents/agent-nope/token', { token: owner.token, body: {} }), 404, 'not_found');
    expectError(await t.api('POST', '/v1/agents/proj-root/token', { token: owner.token, body: {} }), 404, 'not_found');
    expectError(await t.api('POST', '/v1/agents/Bad_Id/token', { token: owner.token, body: {} }), 422);
    // an agent token cannot mint more tokens, even for itself
    const ast = await sessionToken(t, owner.token, agent);
    expectError(await t.api('POST', `/v1/agents/${agent}/token`, { token: ast, body: { standing: true } }), 403, 'forbidden');
  });

  it('rule 7: per-session mode (default): {token, expires_at, agent, session}; deferred session is null; 7-day lifetime', async () => {
    const res = await t.api('POST', `/v1/agents/${agent}/token`, { token: owner.token, body: {} });
    expect(res.status, res.text).to.equal(201);
    expect(res.body).to.have.all.keys('token', 'expires_at', 'agent', 'session');
    expect(res.body.token).to.match(/^svc_ast_[0-9A-Za-z]{36}$/);
    expect(res.body).to.include({ agent, session: null });
    expect(Date.parse(res.body.expires_at) - t.clock.now()).to.be.within(7 * DAY_MS - 5000, 7 * DAY_MS + 5000);
    const me = await t.api('GET', '/v1/me', { token: res.body.token });
    expect(me.body).to.include({ person: owner.id, bound: true, agent, session: null });
    const bound = await t.api('POST', `/v1/agents/${agent}/token`, {
      token: owner.token,
      body: { session: 'run-42.a:b_c', audience: 'ci' },
    });
    expect(bound.body.session).to.equal('run-42.a:b_c');
    expect((await t.api('GET', '/v1/me', { token: bound.body.token })).body.session).to.equal('run-42.a:b_c');
  });

  it('rule 7: expires may only shorten the 7-day lifetime; malformed session is 422', async () => {
    const shorter = await t.api('POST', `/v1/agents/${agent}/token`, { token: owner.token, body: { expires: '2d' } });
    expect(shorter.status).to.equal(201);
    expect(Date.parse(shorter.body.expires_at) - t.clock.now()).to.be.within(2 * DAY_MS - 5000, 2 * DAY_MS + 5000);
    const hours = await t.api('POST', `/v1/agents/${agent}/token`, { token: owner.token, body: { expires: '12h' } });
    expect(Date.parse(hours.body.expires_at) - t.clock.now()).to.be.within(12 * 3600_000 - 5000, 12 * 3600_000 + 5000);
    expect((await t.api('POST', `/v1/agents/${agent}/token`, { token: owner.token, body: { expires: '7d' } })).status).to.equal(201);
    for (const expires of ['8d', '169h', new Date(t.clock.now() + 8 * DAY_MS).toISOString(), '2001-01-01', '0d', 'soon']) {
      expectError(await t.api('POST', `/v1/agents/${agent}/token`, { token: owner.token, body: { expires } }), 422, 'validation_failed');
    }
    for (const session of ['has space', '', '-leading-dash', 'x'.repeat(129), 42, 'line\nbreak']) {
      expectError(await t.api('POST', `/v1/agents/${agent}/token`, { token: owner.token, body: { session } }), 422, 'validation_failed');
    }
    expectError(await t.api('POST', `/v1/agents/${agent}/token`, { token: owner.token, body: { standing: 'yes' } }), 422);
    expectError(await t.api('POST', `/v1/agents/${agent}/token`, { token: owner.token, body: { label: 'only for standing' } }), 422);
    // a short token really expires
    const token = hours.body.token;
    t.clock.advance(12 * 3600_000 + 1000);
    expectError(await t.api('GET', '/v1/me', { token }), 401);
  });

  it('rule 7: standing mode: {token, hash_prefix, agent, owner, label, expires, standing: true}, one year', async () => {
    const res = await t.api('POST', `/v1/agents/${agent}/token`, { token: owner.token, body: { standing: true, label: 'ci runner' } });
    expect(res.status, res.text).to.equal(201);
    expect(res.body).to.have.all.keys('token', 'hash_prefix', 'agent', 'owner', 'label', 'expires', 'standing');
    expect(res.body.token).to.match(/^svc_pat_[0-9A-Za-z]{36}$/);
    expect(res.body).to.include({
      agent,
      owner: owner.id,
      label: 'ci runner',
      standing: true,
      hash_prefix: hashPrefix(hashToken(res.body.token)),
    });
    expect(Date.parse(res.body.expires) - t.clock.now()).to.be.within(365 * DAY_MS - 5000, 365 * DAY_MS + 5000);
    expect((await t.api('GET', '/v1/me', { token: res.body.token })).body).to.include({ person: owner.id, agent, session: null });
    const shorter = await t.api('POST', `/v1/agents/${agent}/token`, { token: owner.token, body: { standing: true, expires: '30d' } });
    expect(Date.parse(shorter.body.expires) - t.clock.now()).to.be.within(30 * DAY_MS - 5000, 30 * DAY_MS + 5000);
    for (const body of [
      { standing: true, expires: '366d' },
      { standing: true, expires: '2001-01-01' },
      { standing: true, label: 'x'.repeat(201) },
      { standing: true, session: 'run-1' },
      { standing: true, session: null },
    ]) {
      expectError(await t.api('POST', `/v1/agents/${agent}/token`, { token: owner.token, body }), 422, 'validation_failed');
    }
  });

  it('rule 8: the token listing shows standing tokens only, under the same ownership gate', async () => {
    const standing = await standingToken(t, owner.token, agent, { label: 'listed' });
    const ast = await sessionToken(t, owner.token, agent);
    const theirs = await standingToken(t, other.token, otherAgent);
    const res = await t.api('GET', `/v1/agents/${agent}/tokens`, { token: owner.token });
    expect(res.status).to.equal(200);
    expect(res.body.count).to.equal(res.body.tokens.length);
    const prefixes = res.body.tokens.map((x: any) => x.hash_prefix);
    expect(prefixes).to.include(standing.hash_prefix);
    expect(prefixes).to.not.include(hashPrefix(hashToken(ast)));
    expect(prefixes).to.not.include(theirs.hash_prefix);
    const entry = res.body.tokens.find((x: any) => x.hash_prefix === standing.hash_prefix);
    expect(entry).to.include({ label: 'listed', standing: true, expired: false, agent, owner: owner.id });
    expect(entry).to.include.keys('hash_prefix', 'label', 'standing', 'created', 'expires', 'expired', 'last_used');
    expect(res.body.tokens.every((x: any) => x.standing === true)).to.equal(true);
    expect(res.text).to.not.contain(standing.token);
    expectError(await t.api('GET', `/v1/agents/${agent}/tokens`, { token: other.token }), 403, 'forbidden');
    expectError(await t.api('GET', `/v1/agents/${agent}/tokens`), 403, 'forbidden');
    expectError(await t.api('GET', '/v1/agents/agent-nope/tokens', { token: owner.token }), 404);
  });

  it("rule 8: standing revoke: a prefix that is not one of this agent's standing tokens is 404; revocation cascades", async () => {
    const standing = await standingToken(t, owner.token, agent);
    const grant = await oauthGrant(t, standing.token);
    const ast = await sessionToken(t, owner.token, agent);
    const theirs = await standingToken(t, other.token, otherAgent);
    const ownerPat = hashPrefix(hashToken(owner.token));
    expectError(await t.api('DELETE', `/v1/agents/${agent}/tokens/${theirs.hash_prefix}`, { token: owner.token }), 404, 'not_found');
    expectError(
      await t.api('DELETE', `/v1/agents/${agent}/tokens/${hashPrefix(hashToken(ast))}`, { token: owner.token }),
      404,
      'not_found',
    );
    expectError(await t.api('DELETE', `/v1/agents/${agent}/tokens/${ownerPat}`, { token: owner.token }), 404, 'not_found');
    expectError(await t.api('DELETE', `/v1/agents/${agent}/tokens/${standing.hash_prefix}`, { token: other.token }), 403, 'forbidden');
    expectError(await t.api('DELETE', `/v1/agents/${agent}/tokens/xyz`, { token: owner.token }), 422);
    const res = await t.api('DELETE', `/v1/agents/${agent}/tokens/${standing.hash_prefix}`, { token: owner.token });
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.deep.equal({ revoked: true, hash_prefix: standing.hash_prefix, oauth_grants_revoked: 1 });
    expectError(await t.api('GET', '/v1/me', { token: standing.token }), 401);
    expectError(await t.api('GET', '/v1/me', { token: grant }), 401);
    for (const token of [ast, theirs.token, owner.token]) expect((await t.api('GET', '/v1/me', { token })).status).to.equal(200);
    const listed = (await t.api('GET', `/v1/agents/${agent}/tokens`, { token: owner.token })).body.tokens.map((x: any) => x.hash_prefix);
    expect(listed).to.not.include(standing.hash_prefix);
  });

  it('a retired agent gets no new tokens (409)', async () => {
    const retiring = await createAgent(t, owner.token, 'Retiring');
    const set = await t.api('POST', `/v1/nodes/${retiring}/status`, { token: owner.token, body: { status: 'retired' } });
    expect(set.status, set.text).to.equal(200);
    expectError(await t.api('POST', `/v1/agents/${retiring}/token`, { token: owner.token, body: {} }), 409, 'conflict');
  });
});

describe('identity: session binding (POST /v1/agents/session) and attribution', () => {
  let t: TestServer;
  let owner: { id: string; token: string };
  let reviewer: { id: string; token: string };
  let agent: string;
  before(async () => {
    t = await startIdentityServer();
    owner = await createPerson(t, 'Owner');
    reviewer = await createPerson(t, 'Reviewer');
    agent = await createAgent(t, owner.token, 'Writer');
  });
  after(async () => t.close());

  it('rule 9 / state table: deferred -> bound {ok, agent, session}; same again {unchanged: true}; different 409', async () => {
    const token = await sessionToken(t, owner.token, agent);
    const bind = await t.api('POST', '/v1/agents/session', { token, body: { session: 'sess-1' } });
    expect(bind.status, bind.text).to.equal(200);
    expect(bind.body).to.deep.equal({ ok: true, agent, session: 'sess-1' });
    expect((await t.api('GET', '/v1/me', { token })).body.session).to.equal('sess-1');
    const again = await t.api('POST', '/v1/agents/session', { token, body: { session: 'sess-1' } });
    expect(again.status).to.equal(200);
    expect(again.body).to.deep.equal({ unchanged: true });
    const other = await t.api('POST', '/v1/agents/session', { token, body: { session: 'sess-2' } });
    expectError(other, 409, 'conflict');
    expect((await t.api('GET', '/v1/me', { token })).body.session).to.equal('sess-1');
    // a token minted with its session is already bound
    const minted = await sessionToken(t, owner.token, agent, { session: 'sess-9' });
    expect((await t.api('POST', '/v1/agents/session', { token: minted, body: { session: 'sess-9' } })).body).to.deep.equal({
      unchanged: true,
    });
    expectError(await t.api('POST', '/v1/agents/session', { token: minted, body: { session: 'sess-1' } }), 409, 'conflict');
  });

  it('rule 9: a non-agent token is 403; a standing token is 403; missing or malformed session is 422', async () => {
    expectError(await t.api('POST', '/v1/agents/session', { token: owner.token, body: { session: 's' } }), 403, 'forbidden');
    expectError(await t.api('POST', '/v1/agents/session', { body: { session: 's' } }), 403, 'forbidden');
    const standing = await standingToken(t, owner.token, agent);
    expectError(await t.api('POST', '/v1/agents/session', { token: standing.token, body: { session: 's' } }), 403, 'forbidden');
    const token = await sessionToken(t, owner.token, agent);
    for (const body of [{}, { session: '' }, { session: 'with space' }, { session: 7 }, { session: null }]) {
      expectError(await t.api('POST', '/v1/agents/session', { token, body }), 422, 'validation_failed');
    }
    expectError(await t.api('POST', '/v1/agents/session', { token }), 422);
    // the failed attempts left it deferred
    expect((await t.api('GET', '/v1/me', { token })).body.session).to.equal(null);
  });

  it('rule 7 / Authentication 7: writes under an agent token are stamped author=owner, authored_by_agent, session, dispatch', async () => {
    const token = await sessionToken(t, owner.token, agent);
    const deferred = await t.api('POST', '/v1/nodes', {
      token,
      body: {
        nodes: [
          md({
            id: 'task-by-agent',
            type: 'task',
            summary: 'Written by an agent',
            author: 'person-mallory',
            authored_by_agent: 'agent-evil',
            session: 'forged',
          }),
        ],
      },
    });
    expect(deferred.status, deferred.text).to.equal(200);
    let fm = (await t.api('GET', '/v1/nodes/task-by-agent')).body.frontmatter;
    expect(fm).to.include({ author: owner.id, authored_by_agent: agent, authored_via: 'dispatch' });
    expect(fm).to.not.have.property('session');

    await t.api('POST', '/v1/agents/session', { token, body: { session: 'run-7' } });
    expect((await t.api('POST', '/v1/nodes/task-by-agent/priority', { token, body: { priority: 'p1' } })).status).to.equal(200);
    fm = (await t.api('GET', '/v1/nodes/task-by-agent')).body.frontmatter;
    expect(fm).to.include({ author: owner.id, authored_by_agent: agent, session: 'run-7', authored_via: 'dispatch' });

    // the standing token too
    const standing = await standingToken(t, owner.token, agent);
    await t.api('POST', '/v1/nodes', {
      token: standing.token,
      body: { nodes: [md({ id: 'task-by-standing', type: 'task', summary: 'Standing write' })] },
    });
    fm = (await t.api('GET', '/v1/nodes/task-by-standing')).body.frontmatter;
    expect(fm).to.include({ author: owner.id, authored_by_agent: agent, authored_via: 'dispatch' });

    // and a person token writes without agent stamps
    await t.api('POST', '/v1/nodes', {
      token: owner.token,
      body: { nodes: [md({ id: 'task-by-person', type: 'task', summary: 'Person write' })] },
    });
    fm = (await t.api('GET', '/v1/nodes/task-by-person')).body.frontmatter;
    expect(fm).to.include({ author: owner.id, authored_via: 'rest' });
    expect(fm).to.not.have.property('authored_by_agent');
  });

  it('Authentication 7 over MCP: a put_node tool call under a bound agent token is stamped the same way', async () => {
    const token = await sessionToken(t, owner.token, agent, { session: 'mcp-run' });
    const client = await t.mcp(token);
    const result = await t.tool(client, 'put_node', { nodes: [md({ id: 'task-by-mcp-agent', type: 'task', summary: 'Via MCP' })] });
    expect(result.isError, result.text).to.equal(false);
    const fm = (await t.api('GET', '/v1/nodes/task-by-mcp-agent')).body.frontmatter;
    expect(fm).to.include({ author: owner.id, authored_by_agent: agent, session: 'mcp-run', authored_via: 'dispatch' });
  });

  it("Authentication 8: an agent cannot activate its owner's proposal (same identity); another person can", async () => {
    const wf = md({ id: 'wf-release', type: 'wf', summary: 'Release workflow', steps: [{ id: 'build' }] });
    expect((await t.api('POST', '/v1/nodes', { token: owner.token, body: { nodes: [wf] } })).status).to.equal(200);
    const token = await sessionToken(t, owner.token, agent);
    const denied = await t.api('POST', '/v1/nodes/wf-release/status', { token, body: { status: 'active' } });
    expectError(denied, 409, 'transition_denied');
    expect((await t.api('GET', '/v1/nodes/wf-release')).body.frontmatter.status).to.equal('proposed');
    const ok = await t.api('POST', '/v1/nodes/wf-release/status', { token: reviewer.token, body: { status: 'active' } });
    expect(ok.status, ok.text).to.equal(200);
    expect((await t.api('GET', '/v1/nodes/wf-release')).body.frontmatter.status).to.equal('active');
  });
});
