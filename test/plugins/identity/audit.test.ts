import { expect } from 'chai';
import { serializeNode, type Frontmatter } from '../../../kernel/codec.js';
import { generateToken, hashPrefix, hashToken, newTokenRecord } from '../../../kernel/auth.js';
import type { Tenant } from '../../../kernel/tenant.js';
import { runCli } from '../../helpers/processes.js';
import { cliEnv, startTestServer, type TestServer } from '../../helpers/harness.js';
import { allPlugins } from '../../../scripts/plugins.js';
import { createAgent, createPerson, expectError, standingToken } from './helpers.js';

/**
 * "Was I hit?" The acceptance fixture is a data directory that went through the five requests
 * of the report before the guard existed: the commits the old write path made for them are
 * written raw to the tenant's repository (the git store, bypassing the guard), with the
 * message and trailers the old code wrote. The audit (CLI, route, tool) must list each of them
 * flagged, and the legitimate identity operations unflagged.
 */
interface OldActor {
  person: string;
  name: string;
  email: string;
  agent?: string;
  session?: string;
}

/** One commit exactly as the pre-guard WriteDraft.commit wrote it: stamps, `<op>: <id>`, Svc-Op/Via/Person/Agent trailers. */
/** what the raw commits wrote, per node (the tenant's index does not follow them) */
const rawWritten = new Map<string, Frontmatter>();

async function oldCommit(
  tenant: Tenant,
  op: string,
  actor: OldActor,
  id: string,
  edit: (fm: Frontmatter) => void,
  at: number,
): Promise<string> {
  const record = tenant.index.get(id)!;
  const fm: Frontmatter = structuredClone(rawWritten.get(id) ?? record.frontmatter);
  edit(fm);
  for (const k of ['author', 'authored_via', 'authored_by_agent', 'session', 'updated']) delete fm[k];
  fm.author = actor.person;
  fm.authored_via = actor.agent ? 'dispatch' : 'rest';
  if (actor.agent) fm.authored_by_agent = actor.agent;
  fm.updated = new Date(at).toISOString();
  rawWritten.set(id, fm);
  const trailers = [`Svc-Op: ${op}`, 'Svc-Via: rest', `Svc-Person: ${actor.person}`];
  if (actor.agent) trailers.push(`Svc-Agent: ${actor.agent}`);
  const author = { name: actor.name, email: actor.email, timestamp: Math.floor(at / 1000), timezoneOffset: 0 };
  const out = await tenant.store.commit({
    changes: [{ path: record.path, content: serializeNode(fm, record.body) }],
    author,
    committer: author,
    message: `${op}: ${id}\n\n${trailers.join('\n')}\n`,
    expectedParent: tenant.store.head(),
  });
  return out.commit;
}

const addEdge = (type: string, to: string) => (fm: Frontmatter) => {
  fm.edges = [...(Array.isArray(fm.edges) ? (fm.edges as object[]) : []), { type, to }];
};
const removeEdge = (type: string, to: string) => (fm: Frontmatter) => {
  const kept = (Array.isArray(fm.edges) ? (fm.edges as Array<{ type: string; to: string }>) : []).filter(
    (e) => !(e.type === type && e.to === to),
  );
  if (kept.length > 0) fm.edges = kept;
  else delete fm.edges;
};

describe('identity: audit of identity facts (workgraph audit identity, GET /v1/admin/audit/identity, tool audit_identity)', () => {
  let t: TestServer;
  let mallory: { id: string; token: string; email: string };
  let olive: { id: string; token: string; email: string };
  let carol: { id: string; token: string; email: string };
  let second: { id: string; token: string; email: string };
  let carolAgent: string;
  const hits: Record<string, string> = {};
  let hijackToken: string;

  before(async () => {
    t = await startTestServer({ plugins: allPlugins });
    mallory = await createPerson(t, 'Mallory');
    olive = await createPerson(t, 'Olive');
    carol = await createPerson(t, 'Carol');
    second = await createPerson(t, 'Second Admin');
    expect((await t.api('POST', `/v1/admin/people/${second.id}/admin`)).status).to.equal(200);
    carolAgent = await createAgent(t, carol.token, 'Carol Bot');
    await standingToken(t, carol.token, carolAgent);

    const tenant = t.server.services.tenants.get(t.org)!;
    await tenant.drain();
    const who = (p: { id: string; email: string }, name: string): OldActor => ({ person: p.id, name, email: p.email });
    let at = t.clock.now() + 60_000;
    // 1. a member's personal token: POST /v1/nodes/<self>/edges {stewards, proj-root}
    hits.self = await oldCommit(tenant, 'add_edge', who(mallory, 'Mallory'), mallory.id, addEdge('stewards', 'proj-root'), (at += 1000));
    // 2. a member: POST /v1/nodes/proj-root/edges {stewarded-by, self}: the old code flipped it onto the person
    hits.inverse = await oldCommit(tenant, 'add_edge', who(olive, 'Olive'), olive.id, addEdge('stewards', 'proj-root'), (at += 1000));
    // 3. a standing agent token: its owner's stewards edge
    hits.agent = await oldCommit(
      tenant,
      'add_edge',
      { ...who(carol, 'Carol'), agent: carolAgent },
      carol.id,
      addEdge('stewards', 'proj-root'),
      (at += 1000),
    );
    // 4. a member: DELETE /v1/nodes/<an admin>/edges {stewards, proj-root}
    hits.demote = await oldCommit(
      tenant,
      'remove_edge',
      who(mallory, 'Mallory'),
      second.id,
      removeEdge('stewards', 'proj-root'),
      (at += 1000),
    );
    // 5. another member: DELETE then POST owned-by on someone's agent
    hits.disown = await oldCommit(tenant, 'remove_edge', who(olive, 'Olive'), carolAgent, removeEdge('owned-by', carol.id), (at += 1000));
    hits.own = await oldCommit(tenant, 'add_edge', who(olive, 'Olive'), carolAgent, addEdge('owned-by', olive.id), (at += 1000));
    // 6. the new "owner" mints a standing token for the agent (a token store record, not a commit)
    hijackToken = generateToken('pat');
    await tenant.tokens.mutate((records) => {
      const rec = newTokenRecord(hijackToken, {
        kind: 'agent-standing',
        person: olive.id,
        agent: carolAgent,
        created: new Date((at += 1000)).toISOString(),
        minted_by: olive.id,
      });
      records.set(rec.hash, rec);
    });
  });
  after(async () => t.close());

  function checkTokens(tokens: any[]): void {
    expect(tokens).to.have.length(1);
    expect(tokens[0]).to.include({
      hash_prefix: hashPrefix(hashToken(hijackToken)),
      agent: carolAgent,
      person: olive.id,
      minted_by: olive.id,
      after_commit: hits.own,
      revoked_at: null,
    });
  }

  function checkFlagged(entries: any[]): void {
    const bySha = new Map(entries.map((e) => [e.commit, e]));
    const expectHit = (key: string, change: string, credential: string) => {
      const entry = bySha.get(hits[key]!);
      expect(entry, `${key} is listed`).to.not.equal(undefined);
      expect(entry.flagged, key).to.equal(true);
      expect(entry.identity_operation).to.equal(false);
      expect(entry.changes).to.deep.equal([change]);
      expect(entry.credential, key).to.equal(credential);
      expect(entry.credential_recorded).to.equal(false);
      expect(entry.reason).to.be.a('string');
    };
    expectHit('self', `adds ${mallory.id} -stewards-> proj-root`, 'person');
    expectHit('inverse', `adds ${olive.id} -stewards-> proj-root`, 'person');
    expectHit('agent', `adds ${carol.id} -stewards-> proj-root`, 'agent');
    expectHit('demote', `removes ${second.id} -stewards-> proj-root`, 'person');
    expectHit('disown', `removes ${carolAgent} -owned-by-> ${carol.id}`, 'person');
    expectHit('own', `adds ${carolAgent} -owned-by-> ${olive.id}`, 'person');
    const agentHit = bySha.get(hits.agent!);
    expect(agentHit).to.include({ op: 'add_edge', via: 'rest', agent: carolAgent, authored_via: 'dispatch' });
    expect(agentHit.author).to.deep.equal({ name: 'Carol', email: carol.email, person: carol.id });
    expect(bySha.get(hits.demote!).author.person).to.equal(mallory.id);
    // the legitimate identity operations are listed, not flagged
    const legit = entries.filter((e) => !e.flagged);
    expect(legit.map((e) => e.op)).to.include.members(['bootstrap', 'create_person', 'create_agent', 'grant_admin']);
    const grant = legit.find((e) => e.op === 'grant_admin');
    expect(grant).to.include({ credential: 'pat', credential_recorded: true });
    expect(grant.changes).to.deep.equal([`adds ${second.id} -stewards-> proj-root`]);
    expect(entries.filter((e) => e.flagged)).to.have.length(6);
  }

  it('the CLI lists each of the five requests flagged, reading SVC_DATA_DIR (exit status 3)', async function () {
    // two CLI processes, each compiling the TypeScript CLI on a shared machine
    this.timeout(120_000);
    const res = await runCli(['audit', 'identity', '--org', t.org], await cliEnv(t.dataDir));
    expect(res.code, res.stderr).to.equal(3);
    const lines = res.stdout.split('\n').filter(Boolean);
    expect(lines).to.have.length(1);
    const audit = JSON.parse(lines[0]!);
    expect(audit.org).to.equal(t.org);
    checkFlagged(audit.entries);
    checkTokens(audit.tokens_at_risk);
    const onlyFlagged = JSON.parse((await runCli(['audit', 'identity', '--flagged'], await cliEnv(t.dataDir))).stdout.split('\n')[0]!);
    expect(onlyFlagged.entries.map((e: { commit: string }) => e.commit).sort()).to.deep.equal(Object.values(hits).sort());
  });

  it('the admin route and its MCP twin answer the same; members are 403', async () => {
    const res = await t.api('GET', '/v1/admin/audit/identity');
    expect(res.status, res.text).to.equal(200);
    checkFlagged(res.body.entries);
    checkTokens(res.body.tokens_at_risk);
    const flagged = await t.api('GET', '/v1/admin/audit/identity?flagged=true');
    expect(flagged.body.count).to.equal(6);
    expect(flagged.body.flagged).to.equal(6);
    const client = await t.mcp();
    const tool = await t.tool(client, 'audit_identity', {});
    expect(tool.isError, tool.text).to.equal(false);
    checkFlagged(tool.json.entries);
    expectError(await t.api('GET', '/v1/admin/audit/identity', { token: olive.token }), 403, 'forbidden');
  });

  it('CLI: bad arguments fail with a message', async function () {
    this.timeout(120_000);
    const res = await runCli(['audit', 'identity', '--org', 'Not_A_Slug'], await cliEnv(t.dataDir));
    expect(res.code).to.equal(2);
    expect(res.stderr).to.match(/org slug/);
    const unknown = await runCli(['audit', 'tokens'], await cliEnv(t.dataDir));
    expect(unknown.code).to.equal(2);
    expect(unknown.stderr).to.match(/unknown audit command/);
  });
});
