import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestServer } from '../../helpers/harness.js';
import { createAgent, createPerson, expectError, sessionToken, standingToken, startIdentityServer } from './helpers.js';
import { onPostgres } from '../../helpers/harness.js';

describe('identity: capabilities (POST/GET /v1/agents/{id}/capabilities, POST /v1/agents/{id}/heartbeat)', () => {
  let t: TestServer;
  let owner: { id: string; token: string };
  let other: { id: string; token: string };
  let agent: string;
  let sibling: string;
  before(async () => {
    t = await startIdentityServer();
    owner = await createPerson(t, 'Owner');
    other = await createPerson(t, 'Other');
    agent = await createAgent(t, owner.token, 'Host One');
    sibling = await createAgent(t, owner.token, 'Host Two');
  });
  after(async () => t.close());

  const head = async () => (await t.api('GET', '/v1/status')).body.head as string;

  it('rule 10: the owner publishes a capability map; lists are normalized; the graph is not touched', async () => {
    const headBefore = await head();
    const res = await t.api('POST', `/v1/agents/${agent}/capabilities`, {
      token: owner.token,
      body: { harnesses: ['claude-code', 'codex', 'claude-code'], reachable_mcp: ['github'], skills: ['rust', 'go'] },
    });
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.have.all.keys('agent', 'capabilities', 'published_at', 'last_seen', 'published_by', 'changed');
    expect(res.body).to.include({ agent, published_by: owner.id, changed: true });
    expect(res.body.capabilities).to.deep.equal({
      harnesses: ['claude-code', 'codex'],
      reachable_mcp: ['github'],
      skills: ['go', 'rust'],
      plugins: [],
      deny: [],
    });
    expect(res.body.published_at).to.equal(res.body.last_seen);
    // operational state, never committed
    expect(await head()).to.equal(headBefore);
    const file = join(t.dataDir, 'tenants', t.org, 'state', 'capabilities.json');
    if (!onPostgres) {
      // the embedded store's file (cluster mode: a wg_state row)
      expect(existsSync(file)).to.equal(true);
      expect(JSON.parse(readFileSync(file, 'utf8'))[agent].capabilities.skills).to.deep.equal(['go', 'rust']);
    }
  });

  it('rule 10: republishing the same map is changed: false and keeps published_at; a new map moves it', async () => {
    const first = (await t.api('GET', `/v1/agents/${agent}/capabilities`, { token: owner.token })).body;
    t.clock.advance(60_000);
    const same = await t.api('POST', `/v1/agents/${agent}/capabilities`, {
      token: owner.token,
      body: { skills: ['go', 'rust'], harnesses: ['codex', 'claude-code'], reachable_mcp: ['github'] },
    });
    expect(same.body.changed).to.equal(false);
    expect(same.body.published_at).to.equal(first.published_at);
    expect(Date.parse(same.body.last_seen) - Date.parse(first.last_seen)).to.be.at.least(60_000);
    t.clock.advance(60_000);
    const changed = await t.api('POST', `/v1/agents/${agent}/capabilities`, { token: owner.token, body: { harnesses: ['codex'] } });
    expect(changed.body.changed).to.equal(true);
    expect(changed.body.published_at).to.equal(changed.body.last_seen);
    expect(changed.body.published_at).to.not.equal(first.published_at);
  });

  it('rule 10: the raw {probed, declared, deny} form is merged, and either form may come in a {capabilities} envelope', async () => {
    const raw = await t.api('POST', `/v1/agents/${agent}/capabilities`, {
      token: owner.token,
      body: {
        probed: { harnesses: ['codex'], reachable_mcp: ['github'] },
        declared: { harnesses: ['claude-code'], skills: ['rust'] },
        deny: ['linear'],
      },
    });
    expect(raw.status, raw.text).to.equal(200);
    expect(raw.body.capabilities).to.deep.equal({
      harnesses: ['claude-code', 'codex'],
      reachable_mcp: ['github'],
      skills: ['rust'],
      plugins: [],
      deny: ['linear'],
    });
    const enveloped = await t.api('POST', `/v1/agents/${agent}/capabilities`, {
      token: owner.token,
      body: { capabilities: { plugins: ['pdf'], deny: ['rm-rf'] } },
    });
    expect(enveloped.body.capabilities).to.deep.equal({ harnesses: [], reachable_mcp: [], skills: [], plugins: ['pdf'], deny: ['rm-rf'] });
    const envelopedRaw = await t.api('POST', `/v1/agents/${agent}/capabilities`, {
      token: owner.token,
      body: { capabilities: { probed: { skills: ['go'] }, declared: { skills: ['go', 'zig'] } } },
    });
    expect(envelopedRaw.body.capabilities.skills).to.deep.equal(['go', 'zig']);
  });

  it('rule 10: a malformed map is 422 and changes nothing', async () => {
    const before = (await t.api('GET', `/v1/agents/${agent}/capabilities`, { token: owner.token })).body;
    const bad: unknown[] = [
      { harnesses: 'codex' },
      { skills: [1, 2] },
      { skills: ['has space'] },
      { frobnicate: ['x'] },
      { probed: ['codex'] },
      { probed: { harnesses: ['codex'] }, extra: true },
      { probed: { wings: ['x'] } },
      { capabilities: ['x'] },
      { capabilities: {}, also: 1 },
      [1, 2],
      { skills: Array.from({ length: 501 }, (_, i) => `s${i}`) },
    ];
    for (const body of bad)
      expectError(await t.api('POST', `/v1/agents/${agent}/capabilities`, { token: owner.token, body }), 422, 'validation_failed');
    expectError(await t.api('POST', `/v1/agents/${agent}/capabilities`, { token: owner.token }), 422);
    expect((await t.api('GET', `/v1/agents/${agent}/capabilities`, { token: owner.token })).body).to.deep.equal(before);
  });

  it('rule 10: publish is for the owner or the agent itself; others 403, unknown 404, malformed id 422', async () => {
    const own = await sessionToken(t, owner.token, agent, { session: 'probe-1' });
    const self = await t.api('POST', `/v1/agents/${agent}/capabilities`, { token: own, body: { harnesses: ['codex'], skills: ['rust'] } });
    expect(self.status, self.text).to.equal(200);
    expect(self.body).to.include({ published_by: agent, session: 'probe-1' });
    const standing = await standingToken(t, owner.token, agent);
    const viaStanding = await t.api('POST', `/v1/agents/${agent}/capabilities`, {
      token: standing.token,
      body: { harnesses: ['codex'], skills: ['rust'] },
    });
    expect(viaStanding.status).to.equal(200);
    expect(viaStanding.body).to.not.have.property('session');
    const stored = (await t.api('GET', `/v1/agents/${agent}/capabilities`, { token: owner.token })).body;
    // another agent of the same owner, another member and an admin are all refused
    const siblingToken = await sessionToken(t, owner.token, sibling);
    for (const token of [siblingToken, other.token, t.adminToken]) {
      expectError(await t.api('POST', `/v1/agents/${agent}/capabilities`, { token, body: { skills: ['hijacked'] } }), 403, 'forbidden');
    }
    expectError(await t.api('POST', '/v1/agents/agent-unknown/capabilities', { token: owner.token, body: {} }), 404, 'not_found');
    expectError(await t.api('POST', '/v1/agents/Bad_Agent/capabilities', { token: owner.token, body: {} }), 422);
    // the refused publishes left the record as it was
    expect((await t.api('GET', `/v1/agents/${agent}/capabilities`, { token: owner.token })).body).to.deep.equal(stored);
    expect(stored.capabilities.skills).to.deep.equal(['rust']);
  });

  it('rule 10: read is for the owner, the agent or an admin; 404 when nothing has been published', async () => {
    const agentToken = await sessionToken(t, owner.token, agent);
    for (const token of [owner.token, agentToken, t.adminToken]) {
      const res = await t.api('GET', `/v1/agents/${agent}/capabilities`, { token });
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.include.keys('agent', 'capabilities', 'published_at', 'last_seen', 'published_by');
      expect(res.body).to.not.have.property('changed');
      expect(res.body.agent).to.equal(agent);
    }
    const siblingToken = await sessionToken(t, owner.token, sibling);
    expectError(await t.api('GET', `/v1/agents/${agent}/capabilities`, { token: siblingToken }), 403, 'forbidden');
    expectError(await t.api('GET', `/v1/agents/${agent}/capabilities`, { token: other.token }), 403, 'forbidden');
    expectError(await t.api('GET', `/v1/agents/${sibling}/capabilities`, { token: owner.token }), 404, 'not_found');
    expectError(await t.api('GET', '/v1/agents/agent-unknown/capabilities', { token: owner.token }), 404, 'not_found');
    expectError(await t.api('GET', '/v1/agents/Bad_Agent/capabilities', { token: owner.token }), 422);
  });

  it('rule 10: heartbeat refreshes last_seen only, under the owner-or-self gate', async () => {
    const headBefore = await head();
    const before = (await t.api('GET', `/v1/agents/${agent}/capabilities`, { token: owner.token })).body;
    t.clock.advance(5 * 60_000);
    const beat = await t.api('POST', `/v1/agents/${agent}/heartbeat`, { token: owner.token });
    expect(beat.status, beat.text).to.equal(200);
    expect(beat.body).to.deep.equal({ ...before, last_seen: beat.body.last_seen });
    expect(Date.parse(beat.body.last_seen) - Date.parse(before.last_seen)).to.be.at.least(5 * 60_000);
    const agentToken = await sessionToken(t, owner.token, agent);
    t.clock.advance(1000);
    const selfBeat = await t.api('POST', `/v1/agents/${agent}/heartbeat`, { token: agentToken });
    expect(selfBeat.status).to.equal(200);
    expect(Date.parse(selfBeat.body.last_seen)).to.be.greaterThan(Date.parse(beat.body.last_seen));
    expect(selfBeat.body.published_at).to.equal(before.published_at);
    expect(await head()).to.equal(headBefore);

    expectError(await t.api('POST', `/v1/agents/${agent}/heartbeat`, { token: other.token }), 403, 'forbidden');
    expectError(await t.api('POST', `/v1/agents/${agent}/heartbeat`), 403, 'forbidden');
    expectError(await t.api('POST', `/v1/agents/${sibling}/heartbeat`, { token: owner.token }), 404, 'not_found');
    expectError(await t.api('POST', '/v1/agents/agent-unknown/heartbeat', { token: owner.token }), 404, 'not_found');
    expectError(await t.api('POST', '/v1/agents/Bad_Agent/heartbeat', { token: owner.token }), 422);
  });
});
