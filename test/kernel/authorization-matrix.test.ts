/**
 * size: the input table for every operation lives with the matrix that walks it.
 * The authorization matrix: every declared operation x every credential kind, over REST and MCP,
 * held to the access declarations (plugins/<name>/access.ts; docs/authorization.md). An allowed
 * credential never gets 401/403 (its answer may be 2xx, 404, 409, 422 depending on the input);
 * a refused one gets 403 `forbidden`/`no_person` (a ticket off its render route, or no
 * credential: 401). Ownership gates are checked against another person's agent, input-dependent
 * gates (`when`) with their input, and a second tenant's node ids answer 404, never data.
 *
 * The declarations describe the gates in `run`; they enforce nothing. So removing a gate from the
 * code (e.g. the admin check of list_people) turns a 403 row into a 200 and fails this test.
 *
 * One server, two tenants, every credential minted once: the REST and MCP passes share them.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expect } from 'chai';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { allows, underCondition, type CredentialKind, type OperationAccess } from '../../kernel/access.js';
import { generateToken, hashToken, newTokenRecord } from '../../kernel/auth.js';
import { pathParamsOf, queryFieldsOf, type OperationDef } from '../../kernel/operation.js';
import { declaredOperations, type PluginDef, type RouteDef } from '../../kernel/plugin.js';
import { allPlugins } from '../../scripts/plugins.js';
import { addPerson, md, runSecrets, startTestServer, type TestServer } from '../helpers/harness.js';

/** One credential of the matrix: its kind, whether its person is an admin, what it owns. */
interface Cred {
  label: string;
  kind: CredentialKind;
  admin: boolean;
  /** false: the token's person node does not exist (`actor.bound` false) */
  bound?: boolean;
  /** the bearer token (a ticket travels as its cookie instead) */
  token: string | null;
  ticket?: string;
  /** the person it acts for */
  person: string | null;
  /** the agent the caller owns or is: the target of ownership-gated operations */
  ownAgent: string | null;
}

interface Case {
  plugin: PluginDef;
  op: OperationDef;
  access: OperationAccess;
  routes: RouteDef[];
  tools: string[];
}

const B_MARKER = 'tenant-b-secret-marker';

/**
 * Operations whose `id` is not looked up in the graph: a foreign id changes nothing and reveals
 * nothing, and the answer says so rather than 404.
 */
const NOT_A_LOOKUP: Record<string, string> = {
  remove_mute: "removes the id from the caller's own mute list; an id never muted is `skipped`",
};
const JWT_ISSUER = 'https://idp.authz.example';
const JWT_AUDIENCE = 'workgraph-authz';

let counter = 0;
const unique = () => `${Date.now().toString(36)}${(counter++).toString(36)}`;

/**
 * A valid input per operation and caller: the operation's `example` under these overrides
 * (fixture ids, the caller's own agent, unique names for creations). An operation added later
 * works from its `example` alone, or needs a line here.
 */
function inputFor(op: OperationDef, cred: Cred, fx: Fixture): Record<string, unknown> {
  const own = cred.ownAgent ?? fx.memberAgent;
  const task = 'task-authz-a';
  const table: Record<string, () => Record<string, unknown>> = {
    get_node: () => ({ id: task }),
    add_edge: () => ({ id: task, type: 'relates-to', to: 'issue-authz-b' }),
    remove_edge: () => ({ id: task, type: 'relates-to', to: 'issue-authz-b' }),
    set_status: () => ({ id: task, status: 'in-progress' }),
    set_priority: () => ({ id: task, priority: 'p2' }),
    set_readiness: () => ({ id: task, readiness: 'agent' }),
    patch_node: () => ({ id: task, revision: '0000000000000000000000000000000000000000', set: { summary: 'Matrix patched' } }),
    link_commit: () => ({ id: task, repo: 'web-app', sha: '3f2a9c1' }),
    // enabling a plugin the tenant has: a no-op for an admin, so the passes leave the tenant as it is
    set_tenant_plugin: () => ({ name: 'gardener', enabled: true }),
    revoke_own_token: () => ({ prefix: 'ffffffff00' }),
    admin_revoke_token: () => ({ prefix: 'ffffffff00' }),
    admin_mint_token: () => ({ person: fx.member.id, expires: '30d', label: 'matrix' }),
    create_person: () => ({ name: 'Matrix Person', email: `matrix-${unique()}@example.test` }),
    offboard_person: () => ({ id: fx.victim.id }),
    invite_person: () => ({ id: fx.member.id }),
    create_agent: () => ({ label: `Matrix Bot ${unique()}` }),
    admin_create_agent: () => ({ label: `Matrix Fleet ${unique()}`, owner: fx.member.id }),
    mint_agent_token: () => ({ id: own, standing: true, label: 'matrix' }),
    list_agent_tokens: () => ({ id: own }),
    revoke_agent_token: () => ({ id: own, prefix: 'ffffffff00' }),
    publish_capabilities: () => ({ id: own, harnesses: ['claude-code'], skills: ['rust'] }),
    read_capabilities: () => ({ id: own }),
    agent_heartbeat: () => ({ id: own }),
    match_profile_hosts: () => ({ id: 'profile-authz' }),
    claim_node: () => ({ id: 'task-authz-lease' }),
    renew_node: () => ({ id: 'task-authz-lease' }),
    extend: () => ({ id: 'task-authz-lease', ms: 60_000 }),
    reserve: () => ({ id: 'task-authz-lease' }),
    release_node: () => ({ id: 'task-authz-lease' }),
    claim_batch: () => ({ ids: ['task-authz-lease'] }),
    renew_batch: () => ({ ids: ['task-authz-lease'] }),
    release_batch: () => ({ ids: ['task-authz-lease'] }),
    claim: () => ({ id: 'task-authz-lease' }),
    renew: () => ({ id: 'task-authz-lease' }),
    release: () => ({ id: 'task-authz-lease' }),
    add_mute: () => ({ id: task, until: '2099-12-24' }),
    remove_mute: () => ({ id: task }),
    get_node_history: () => ({ id: task }),
    node_history: () => ({ id: task }),
    get_history_entry: () => ({ id: task, sha: fx.sha }),
    lookup_commit: () => ({ sha: fx.sha }),
    // no waiting in the matrix: the JSON form answers at once
    get_events: () => ({ wait: 0, limit: 5 }),
    wait_for_events: () => ({ wait: 0, limit: 5 }),
    get_briefing: () => ({ project: 'proj-root' }),
    ask_question: () => ({ text: 'Is the matrix allowed to ask?' }),
    add_comment: () => ({ id: task, body: 'The matrix comments, @matrix-member' }),
    dry_run_schema: () => ({
      markdown: md({
        id: 'schema-authz-dry',
        type: 'schema',
        summary: 'Matrix dry run',
        applies_to: 'task',
        hooks: { validate: '(input) => ({ ok: true, errors: [] })' },
      }),
      node_ids: [task],
    }),
    list_comments: () => ({ id: task }),
    run_workflow: () => ({ id: 'wf-authz-missing' }),
    claim_step: () => ({ id: 'run-authz-missing', sid: 'build' }),
    complete_step: () => ({ id: 'run-authz-missing', sid: 'build', lease: 'run-authz-missing:build:1', status: 'succeeded' }),
    get_run: () => ({ id: 'run-authz-missing' }),
    render_lens_page: () => ({ id: 'lens-authz', format: 'json' }),
    mint_render_ticket: () => ({ id: 'lens-authz', expires: '1d' }),
    render_lens: () => ({ lens_id: 'lens-authz' }),
    apply_lens_action: () => ({ lens_id: 'lens-authz', item_id: task, action: 'set_priority', value: 'p1' }),
    query_graph: () => ({ query: 'matrix' }),
    explore_graph: () => ({ root_id: task }),
    get_program: () => ({ id: task }),
    render_program: () => ({ id: task }),
    bind_session: () => ({ session: 'run-authz-1' }),
    // a non-public target: an admin gets 422 url_refused after the gate, and nothing is sent anywhere
    create_webhook: () => ({ url: 'https://10.9.9.9/matrix-hook', enabled: false }),
    get_webhook: () => ({ id: 'wh_000000000000000000' }),
    update_webhook: () => ({ id: 'wh_000000000000000000', description: 'matrix' }),
    delete_webhook: () => ({ id: 'wh_000000000000000000' }),
    ping_webhook: () => ({ id: 'wh_000000000000000000' }),
    list_webhook_deliveries: () => ({ id: 'wh_000000000000000000' }),
    redeliver_webhook: () => ({ id: 'wh_000000000000000000', event: 1 }),
    // a disabled link of a repository nobody owns: an admin's first call links it, later ones are 409
    link_github_repo: () => ({ repo: 'matrix-org/matrix-repo', token: 'github_pat_matrix_0000000000', enabled: false }),
    get_github_link: () => ({ id: 'ghl_000000000000000000' }),
    update_github_link: () => ({ id: 'ghl_000000000000000000', enabled: false }),
    unlink_github_repo: () => ({ id: 'ghl_000000000000000000' }),
  };
  const input: Record<string, unknown> = { ...(op.example ?? {}), ...(table[op.name]?.() ?? {}) };
  // an example's session would clash with a bound agent session token (409 before any gate)
  if (op.name !== 'bind_session') delete input.session;
  return input;
}

interface Fixture {
  member: { id: string; token: string };
  other: { id: string; token: string };
  victim: { id: string; token: string };
  adminAgent: string;
  memberAgent: string;
  otherAgent: string;
  sha: string;
  /** node ids that exist only in the second tenant, by the input field they stand for */
  foreign: { node: string; person: string; agent: string; profile: string };
}

// ------------------------------------------------------------------ the requests

interface Answer {
  status: number;
  code: string | null;
  text: string;
}

function toQuery(input: Record<string, unknown>, fields: string[]): string {
  const qs = new URLSearchParams();
  for (const f of fields) {
    const v = input[f];
    if (v === undefined || v === null) continue;
    qs.set(f, Array.isArray(v) ? v.join(',') : typeof v === 'object' ? JSON.stringify(v) : String(v));
  }
  return qs.size > 0 ? `?${qs}` : '';
}

async function rest(t: TestServer, route: RouteDef, op: OperationDef, cred: Cred, input: Record<string, unknown>): Promise<Answer> {
  let path = route.path;
  const params = pathParamsOf(route.path);
  for (const p of params) path = path.replace(`:${p}`, encodeURIComponent(String(input[p])));
  const queryFields = queryFieldsOf(op, route);
  const url = path + toQuery(input, queryFields);
  const headers: Record<string, string> = {};
  if (cred.token) headers.authorization = `Bearer ${cred.token}`;
  if (cred.ticket) headers.cookie = `svc_render_ticket=${cred.ticket}`;
  let body: string | undefined;
  if (route.method !== 'GET') {
    const taken = new Set([...params, ...queryFields]);
    const rest = Object.fromEntries(Object.entries(input).filter(([k]) => !taken.has(k)));
    if (Object.keys(rest).length > 0) {
      body = JSON.stringify(rest);
      headers['content-type'] = 'application/json';
    }
  }
  const res = await fetch(t.url + url, { method: route.method, headers, body, redirect: 'manual' });
  const text = await res.text();
  let code: string | null;
  try {
    code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null;
  } catch {
    code = null;
  }
  return { status: res.status, code, text };
}

/** A tool call: an error result's envelope code stands for the status (403: forbidden / no_person). */
async function mcpCall(t: TestServer, client: Client, tool: string, input: Record<string, unknown>): Promise<Answer> {
  const r = await t.tool(client, tool, input);
  const code: string | null = r.isError ? (r.json?.error?.code ?? 'tool_error') : null;
  const status = !r.isError
    ? 200
    : code === 'forbidden' || code === 'no_person'
      ? 403
      : code === 'unauthorized'
        ? 401
        : code === 'not_found'
          ? 404
          : 400;
  return { status, code, text: r.text };
}

const REFUSAL_CODES = ['forbidden', 'no_person'];

function expectAllowed(a: Answer, where: string): void {
  expect(a.status, `${where}: allowed, got ${a.status} ${a.text.slice(0, 300)}`).to.not.be.oneOf([401, 403]);
  expect(a.status, `${where}: ${a.text.slice(0, 300)}`).to.be.below(500);
  expect(a.text, `${where}: another tenant's data`).to.not.contain(B_MARKER);
}

function expectRefused(a: Answer, cred: Cred, where: string): void {
  if (cred.kind === 'none' || cred.kind === 'ticket') {
    expect(a.status, `${where}: refused, got ${a.status} ${a.text.slice(0, 300)}`).to.equal(401);
    expect(a.code).to.equal('unauthorized');
    return;
  }
  expect(a.status, `${where}: refused, got ${a.status} ${a.text.slice(0, 300)}`).to.equal(403);
  expect(a.code, where).to.be.oneOf(REFUSAL_CODES);
}

// ------------------------------------------------------------------ the test

describe('authorization matrix: every operation x every credential kind, REST and MCP', function () {
  this.timeout(180_000);
  let t: TestServer;
  let fx: Fixture;
  let creds: Cred[] = [];
  const clients = new Map<string, Client>();
  const cases: Case[] = [];
  for (const plugin of allPlugins) {
    for (const op of declaredOperations(plugin)) {
      cases.push({
        plugin,
        op,
        access: plugin.access![op.name]!,
        routes: (plugin.routes ?? []).filter((r) => r.operation === op),
        tools: (plugin.tools ?? []).filter((d) => d.operation === op).map(() => op.name),
      });
    }
  }

  before(async () => {
    const setupStarted = performance.now();
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'authz', alg: 'ES256' };
    t = await startTestServer({
      plugins: allPlugins,
      config: { captureMetrics: true, jwtIssuer: JWT_ISSUER, jwtAudience: JWT_AUDIENCE, jwtJwks: JSON.stringify({ keys: [jwk] }) },
    });
    const api = async (method: string, path: string, token: string, body?: unknown) => {
      const res = await t.api(method, path, { token, body });
      expect(res.status, `${method} ${path}: ${res.text}`).to.be.below(300);
      return res.body;
    };

    // ---- tenant A: people, agents, nodes
    const member = await addPerson(t, 'Matrix Member');
    const other = await addPerson(t, 'Matrix Other');
    const victim = await addPerson(t, 'Matrix Victim');
    const adminAgent = (await api('POST', '/v1/agents', t.adminToken, { label: 'Matrix Admin Bot' })).id as string;
    const memberAgent = (await api('POST', '/v1/agents', member.token, { label: 'Matrix Member Bot' })).id as string;
    const otherAgent = (await api('POST', '/v1/agents', other.token, { label: 'Matrix Other Bot' })).id as string;
    await api('POST', '/v1/nodes', t.adminToken, {
      nodes: [
        md({ id: 'task-authz-a', type: 'task', summary: 'The matrix works on this task', project: 'proj-root' }),
        md({ id: 'issue-authz-b', type: 'issue', summary: 'The matrix links this issue' }),
        md({ id: 'task-authz-lease', type: 'task', summary: 'The matrix claims this task' }),
        md({ id: 'task-release', type: 'task', summary: 'The release' }),
        md({ id: 'profile-authz', type: 'profile', summary: 'A profile the matrix matches', requires: { skills: ['rust'] } }),
        md({
          id: 'lens-authz',
          type: 'lens',
          summary: 'Open tasks for the matrix',
          query: { type: ['task'] },
          columns: ['id', 'title', 'status'],
        }),
      ],
    });
    const history = await api('GET', '/v1/nodes/task-authz-a/history', t.adminToken);
    const sha = String(history.entries?.[0]?.sha ?? history.history?.[0]?.sha ?? '0000000').slice(0, 12);

    // ---- tenant B: a second tenant whose ids must answer 404 from tenant A's credentials
    const b = await t.server.services.tenants.create({
      org: 'authz-b',
      adminEmail: 'boss@b.test',
      adminName: 'B Boss',
      plugins: allPlugins.map((p) => p.name),
    });
    await t.server.services.tenants.scan();
    runSecrets.add(b.token);
    const bPerson = (await api('POST', '/v1/admin/people', b.token, { name: 'B Person', email: 'person@b.test' })).id as string;
    const bAgent = (await api('POST', '/v1/agents', b.token, { label: 'B Only Bot' })).id as string;
    await api('POST', '/v1/nodes', b.token, {
      nodes: [
        md({ id: 'task-b-only', type: 'task', summary: `Only in tenant B: ${B_MARKER}`, project: 'proj-root' }),
        md({ id: 'profile-b-only', type: 'profile', summary: `Only in tenant B: ${B_MARKER}`, requires: { skills: ['rust'] } }),
      ],
    });
    fx = {
      member,
      other,
      victim,
      adminAgent,
      memberAgent,
      otherAgent,
      sha,
      foreign: { node: 'task-b-only', person: bPerson, agent: bAgent, profile: 'profile-b-only' },
    };

    // ---- every credential kind, minted once
    const agentTokens = async (owner: string, agent: string) => ({
      standing: (await api('POST', `/v1/agents/${agent}/token`, owner, { standing: true, label: 'matrix standing' })).token as string,
      session: (await api('POST', `/v1/agents/${agent}/token`, owner, {})).token as string,
    });
    const adminAgentTokens = await agentTokens(t.adminToken, adminAgent);
    const memberAgentTokens = await agentTokens(member.token, memberAgent);

    // An OAuth access token as the provider records it (plugins/oauth/provider.ts): a grant whose
    // parent is the PAT, an access token whose parent is the grant. The consent flow itself is
    // tested in test/plugins/oauth; here only the credential kind matters.
    const tenant = t.server.services.tenants.get(t.org)!;
    const oauthToken = async (pat: string, person: string) => {
      const access = generateToken('oat');
      runSecrets.add(access);
      const now = new Date(t.clock.now()).toISOString();
      const grant = newTokenRecord(generateToken('oat'), {
        kind: 'oauth-grant',
        person,
        created: now,
        label: 'matrix-client',
        parent: hashToken(pat),
        minted_by: 'oauth',
      });
      const record = newTokenRecord(access, {
        kind: 'oauth-access',
        person,
        created: now,
        label: 'matrix-client',
        parent: grant.hash,
        minted_by: 'oauth',
        expires: new Date(t.clock.now() + 3600_000).toISOString(),
      });
      await tenant.tokens.mutate((records) => {
        records.set(grant.hash, grant);
        records.set(record.hash, record);
      });
      return access;
    };
    const jwtFor = async (person: string) => {
      const token = await new SignJWT({ sub: person, org: t.org })
        .setProtectedHeader({ alg: 'ES256', kid: 'authz' })
        .setIssuer(JWT_ISSUER)
        .setAudience(JWT_AUDIENCE)
        .setIssuedAt(Math.floor(t.clock.now() / 1000))
        .setExpirationTime(Math.floor(t.clock.now() / 1000) + 3600)
        .sign(privateKey);
      runSecrets.add(token);
      return token;
    };
    // a PAT whose person node does not exist (a removed person, an operator's mistake): reads
    // work, anything that needs a person is 403 `no_person`
    const unboundPat = async () => {
      const token = generateToken('pat');
      runSecrets.add(token);
      await tenant.tokens.mutate((records) => {
        const r = newTokenRecord(token, {
          kind: 'pat',
          person: 'person-matrix-ghost',
          created: new Date(t.clock.now()).toISOString(),
          label: 'matrix ghost',
        });
        records.set(r.hash, r);
      });
      return token;
    };
    const ticket = (await api('POST', '/v1/lens/lens-authz/ticket', t.adminToken, { expires: '7d' })).ticket as string;
    runSecrets.add(ticket);

    const A = t.adminPerson;
    creds = [
      { label: 'admin PAT', kind: 'pat', admin: true, token: t.adminToken, person: A, ownAgent: adminAgent },
      { label: 'member PAT', kind: 'pat', admin: false, token: member.token, person: member.id, ownAgent: memberAgent },
      {
        label: "standing token of an admin's agent",
        kind: 'agent-standing',
        admin: true,
        token: adminAgentTokens.standing,
        person: A,
        ownAgent: adminAgent,
      },
      {
        label: "session token of an admin's agent",
        kind: 'agent-session',
        admin: true,
        token: adminAgentTokens.session,
        person: A,
        ownAgent: adminAgent,
      },
      {
        label: "standing token of a member's agent",
        kind: 'agent-standing',
        admin: false,
        token: memberAgentTokens.standing,
        person: member.id,
        ownAgent: memberAgent,
      },
      {
        label: "session token of a member's agent",
        kind: 'agent-session',
        admin: false,
        token: memberAgentTokens.session,
        person: member.id,
        ownAgent: memberAgent,
      },
      {
        label: "admin's OAuth access token",
        kind: 'oauth',
        admin: true,
        token: await oauthToken(t.adminToken, A),
        person: A,
        ownAgent: adminAgent,
      },
      {
        label: "member's OAuth access token",
        kind: 'oauth',
        admin: false,
        token: await oauthToken(member.token, member.id),
        person: member.id,
        ownAgent: memberAgent,
      },
      { label: "admin's connector JWT", kind: 'connector-jwt', admin: true, token: await jwtFor(A), person: A, ownAgent: adminAgent },
      {
        label: "member's connector JWT",
        kind: 'connector-jwt',
        admin: false,
        token: await jwtFor(member.id),
        person: member.id,
        ownAgent: memberAgent,
      },
      {
        label: 'PAT without a person node',
        kind: 'pat',
        admin: false,
        bound: false,
        token: await unboundPat(),
        person: 'person-matrix-ghost',
        ownAgent: memberAgent,
      },
      { label: 'render ticket of lens-authz', kind: 'ticket', admin: false, token: null, ticket, person: A, ownAgent: null },
      { label: 'no credential', kind: 'none', admin: false, token: null, person: null, ownAgent: null },
    ];
    // each credential is what it claims to be
    for (const c of creds.filter((c) => c.token)) {
      const me = (await t.api('GET', '/v1/me', { token: c.token })).body;
      // an agent token reports its owner's admin flag (actor.isAdmin)
      expect(me, c.label).to.include({
        org: t.org,
        person: c.bound === false ? null : c.person,
        is_admin: c.admin,
        bound: c.bound !== false,
      });
    }
    await Promise.all(creds.filter((c) => c.token).map(async (c) => clients.set(c.label, await t.mcp(c.token!))));
    if (process.env.AUTHZ_TRACE) console.log(`setup ${Math.round(performance.now() - setupStarted)} ms`);
  });

  after(async () => {
    await t?.close();
  });

  /** Runs one row over every transport the operation has; `check` judges each answer. */
  /** Every row's failure, reported together at the end of a test (one broken gate shows all its rows). */
  let failures: string[] = [];
  /** tool calls answered with the 403 envelope (the MCP side of the refusals) */
  let mcpRefusals = 0;
  beforeEach(() => {
    failures = [];
  });
  /** Fails with every disagreeing row at once. */
  const noFailures = () =>
    expect(failures, `${failures.length} row(s) disagree with the declarations:\n${failures.slice(0, 60).join('\n')}\n`).to.deep.equal([]);
  const judged = (check: (a: Answer, where: string) => void) => (a: Answer, where: string) => {
    try {
      check(a, where);
    } catch (err) {
      failures.push((err as Error).message.split('\n')[0]!);
    }
  };

  async function each(c: Case, cred: Cred, input: Record<string, unknown>, rawCheck: (a: Answer, where: string) => void): Promise<number> {
    const check = judged(rawCheck);
    let n = 0;
    for (const route of c.routes) {
      const where = `${c.plugin.name}.${c.op.name} ${route.method} ${route.path} as ${cred.label} ${JSON.stringify(input).slice(0, 200)}`;
      check(await rest(t, route, c.op, cred, input), where);
      n++;
    }
    const client = clients.get(cred.label);
    for (const tool of client ? c.tools : []) {
      const a = await mcpCall(t, client!, tool, input);
      if (a.status === 403) mcpRefusals++;
      check(a, `${c.plugin.name}.${c.op.name} tool ${tool} as ${cred.label}`);
      n++;
    }
    return n;
  }

  it('REST and MCP answer every operation as its declaration says, for every credential kind', async () => {
    let rows = 0;
    let refused = 0;
    for (const c of cases) {
      // the credentials of one operation side by side: a refused one changes nothing, and what the
      // allowed ones change between them (a claim taken, a person offboarded) is a 404 or 409 at most
      const started = performance.now();
      const counts = await Promise.all(
        creds.map(async (cred) => {
          const ok = allowedFor(c.access, cred);
          if (!ok) refused++;
          return each(c, cred, inputFor(c.op, cred, fx), (a, where) => (ok ? expectAllowed(a, where) : expectRefused(a, cred, where)));
        }),
      );
      rows += counts.reduce((x, y) => x + y, 0);
      if (process.env.AUTHZ_TRACE) console.log(`${c.op.name} ${Math.round(performance.now() - started)} ms`);
    }
    noFailures();
    expect(cases.length).to.be.above(80);
    expect(refused).to.be.above(100);
    expect(rows).to.be.above(cases.length * creds.length);
  });

  it("input-dependent gates (`when`): all=1, force, auth=1, another person's hosts", async () => {
    let checked = 0;
    for (const c of cases) {
      for (const condition of c.access.when ?? []) {
        const access = underCondition(c.access, condition);
        for (const cred of creds) {
          const ok = allowedFor(access, cred);
          const input = { ...inputFor(c.op, cred, fx), ...condition.input };
          checked += await each(c, cred, input, (a, where) =>
            ok ? expectAllowed(a, `${where} [when]`) : expectRefused(a, cred, `${where} [when]`),
          );
        }
      }
    }
    noFailures();
    expect(checked).to.be.above(40);
    // the claim tool with force: an error result carrying the 403 envelope for every non-admin
    expect(mcpRefusals).to.be.at.least(5);
  });

  it("ownership gates: another person's agent is 403 for every credential the gate does not admit", async () => {
    let checked = 0;
    for (const c of cases.filter((x) => x.access.owns)) {
      for (const cred of creds.filter((x) => allowedFor(c.access, x))) {
        const input = { ...inputFor(c.op, cred, fx), id: fx.otherAgent };
        const adminOverride = c.access.owns === 'agent-or-self-or-admin' && cred.admin && !cred.kind.startsWith('agent');
        checked += await each(c, cred, input, (a, where) =>
          adminOverride ? expectAllowed(a, `${where} [foreign agent]`) : expectRefused(a, cred, `${where} [foreign agent]`),
        );
      }
    }
    noFailures();
    expect(checked).to.be.above(20);
  });

  it("another tenant's node ids answer 404 (never data) for every credential of this tenant", async () => {
    let checked = 0;
    for (const c of cases) {
      const required = (c.op.input.required as string[] | undefined) ?? [];
      if (!required.includes('id') || !c.routes.some((r) => r.path.includes(':id'))) continue;
      for (const cred of creds.filter((x) => x.token)) {
        const base = inputFor(c.op, cred, fx);
        const current = String(base.id ?? '');
        const foreign = current.startsWith('person-')
          ? fx.foreign.person
          : current.startsWith('agent-')
            ? fx.foreign.agent
            : current.startsWith('profile-')
              ? fx.foreign.profile
              : fx.foreign.node;
        const input = { ...base, id: foreign };
        checked += await each(c, cred, input, (a, where) => {
          expect(a.text, `${where}: another tenant's data`).to.not.contain(B_MARKER);
          // a token without a person node may be refused before the lookup (no_person): no data either
          if (a.code === 'no_person') return;
          if (NOT_A_LOOKUP[c.op.name])
            expect(
              a.status === 404 || (a.status === 200 && /"status":"skipped"/.test(a.text)),
              `${where} [other tenant]: ${a.text.slice(0, 200)}`,
            ).to.equal(true);
          else if (allowedFor(c.access, cred)) expect(a.status, `${where} [other tenant]: ${a.text.slice(0, 200)}`).to.equal(404);
          else expect(a.status, `${where} [other tenant]: ${a.text.slice(0, 200)}`).to.be.oneOf([403, 404]);
        });
      }
    }
    noFailures();
    expect(checked).to.be.above(100);
  });

  it("tools/list per credential: the tenant's tools that some input lets it call, each declared; a ticket or no credential cannot open /mcp", async () => {
    const tenant = t.server.services.tenants.get(t.org)!;
    const all = t.server.services.host.toolsFor(tenant).map((x) => x.name);
    const declared = new Set(cases.flatMap((c) => c.tools));
    const accessOf = new Map(cases.flatMap((c) => c.tools.map((name) => [name, c.access] as const)));
    // its own gate or one of its conditions (`when`) lets the credential through
    const mayCall = (name: string, cred: Cred): boolean => {
      const access = accessOf.get(name);
      if (!access) return true;
      return allowedFor(access, cred) || (access.when ?? []).some((w) => allowedFor(underCondition(access, w), cred));
    };
    for (const [label, client] of clients) {
      const cred = creds.find((c) => c.label === label)!;
      const expected = all.filter((name) => mayCall(name, cred)).sort();
      const names = (await client.listTools()).tools.map((x) => x.name).sort();
      expect(names, label).to.deep.equal(expected);
      // the admin-only tools are not shown to anyone but an admin's own credentials
      if (!cred.admin) expect(names, label).to.not.include('grant_admin');
      for (const n of names) expect(declared.has(n), `${n} has an access declaration`).to.equal(true);
    }
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'matrix', version: '0' } },
    };
    for (const cred of creds.filter((c) => !c.token)) {
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      if (cred.ticket) headers.cookie = `svc_render_ticket=${cred.ticket}`;
      const res = await fetch(`${t.url}/mcp`, { method: 'POST', headers, body: JSON.stringify(init) });
      expect(res.status, cred.label).to.equal(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).to.equal('unauthorized');
    }
  });

  it('a render ticket renders only its own lens; routes outside the operations answer as the table says', async () => {
    const ticket = creds.find((c) => c.kind === 'ticket')!.ticket!;
    const own = await fetch(`${t.url}/v1/lens/lens-authz/render?format=json`, { headers: { cookie: `svc_render_ticket=${ticket}` } });
    expect(own.status).to.equal(200);
    await putLens('lens-authz-other');
    const other = await fetch(`${t.url}/v1/lens/lens-authz-other/render?format=json`, {
      headers: { cookie: `svc_render_ticket=${ticket}` },
    });
    expect(other.status).to.equal(401);
    expect((await fetch(`${t.url}/healthz`)).status).to.equal(200);
    expect((await fetch(`${t.url}/openapi.json`)).status).to.equal(200);
    expect((await fetch(`${t.url}/v1/openapi.json`)).status).to.equal(401);
    expect((await fetch(`${t.url}/.well-known/oauth-authorization-server`)).status).to.equal(200);
  });

  async function putLens(id: string) {
    const res = await t.api('POST', '/v1/nodes', {
      body: { nodes: [md({ id, type: 'lens', summary: 'Another lens', query: { type: ['task'] } })] },
    });
    expect(res.status, res.text).to.equal(200);
  }

  // ---------------------------------------------------------------- the write guard's rows
  // The five requests of the security report (kernel/identity-guard.ts refuses them in the write path).
  describe('identity edges (regression rows of the write guard)', () => {
    const memberCred = () => creds.find((c) => c.label === 'member PAT')!;
    const expectForbidden = (res: { status: number; body: any; text: string }) => {
      expect(res.status, res.text).to.equal(403);
      expect(res.body.error.code).to.equal('forbidden');
    };

    it('a member cannot steward proj-root from their own person node', async () => {
      const m = memberCred();
      expectForbidden(await t.api('POST', `/v1/nodes/${m.person}/edges`, { token: m.token, body: { type: 'stewards', to: 'proj-root' } }));
      expect((await t.api('GET', '/v1/me', { token: m.token })).body.is_admin).to.equal(false);
    });

    it('a member cannot add the inverse stewarded-by edge on proj-root', async () => {
      const m = memberCred();
      expectForbidden(await t.api('POST', '/v1/nodes/proj-root/edges', { token: m.token, body: { type: 'stewarded-by', to: m.person } }));
      expect((await t.api('GET', '/v1/me', { token: m.token })).body.is_admin).to.equal(false);
    });

    it('a standing agent token cannot make its owner an admin', async () => {
      const agent = creds.find((c) => c.label === "standing token of a member's agent")!;
      expectForbidden(
        await t.api('POST', `/v1/nodes/${agent.person}/edges`, { token: agent.token, body: { type: 'stewards', to: 'proj-root' } }),
      );
    });

    it("a member cannot remove an admin's stewards edge", async () => {
      const m = memberCred();
      expectForbidden(
        await t.api('DELETE', `/v1/nodes/${t.adminPerson}/edges`, { token: m.token, body: { type: 'stewards', to: 'proj-root' } }),
      );
      expect((await t.api('GET', '/v1/me')).body.is_admin).to.equal(true);
    });

    it("another member cannot take over someone's agent by rewriting owned-by, nor then mint its token", async () => {
      const m = memberCred();
      // the other person's agent: the member is not its owner
      expectForbidden(
        await t.api('DELETE', `/v1/nodes/${fx.otherAgent}/edges`, { token: m.token, body: { type: 'owned-by', to: fx.other.id } }),
      );
      expectForbidden(
        await t.api('POST', `/v1/nodes/${fx.otherAgent}/edges`, { token: m.token, body: { type: 'owned-by', to: m.person } }),
      );
      expectForbidden(await t.api('POST', `/v1/agents/${fx.otherAgent}/token`, { token: m.token, body: { standing: true } }));
    });
  });
});

/** The declaration's verdict for one credential (a ticket counts only where declared: the render route). */
function allowedFor(access: OperationAccess, cred: Cred): boolean {
  return allows(access, cred.kind, cred.admin, cred.bound !== false);
}
