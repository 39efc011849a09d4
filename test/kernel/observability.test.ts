/**
 * Issue 10 items 8-9: structured logs (pino) with one JSON access line per request, request
 * ids, LOG_LEVEL, logged authentication failures, never a credential in a log line (checked
 * over the whole mocha run); Prometheus metrics (prom-client) at GET /metrics, scraped and
 * parsed with a Prometheus text parser.
 */
import { expect } from 'chai';
import parsePrometheusTextFormat, { type PromFamily } from 'parse-prometheus-text-format';
import { createLogger } from '../../kernel/config.js';
import { corePlugin } from '../../plugins/core/index.js';
import { identityPlugin } from '../../plugins/identity/index.js';
import { leasesPlugin } from '../../plugins/leases/index.js';
import { lensesPlugin } from '../../plugins/lenses/index.js';
import { addPerson, assertNoCredentialLogged, md, runLog, runSecrets, startTestServer, type TestServer } from '../helpers/harness.js';

// The root hook (test/helpers/root-hooks.ts, .mocharc.json `require`) runs this check after
// every test file; here it runs once more over lines this file certainly produced.
after(function () {
  expect(runLog.length, 'harness servers logged nothing').to.be.greaterThan(0);
  expect(runSecrets.size, 'the harness saw no credentials').to.be.greaterThan(0);
  assertNoCredentialLogged();
});

const lines = (t: TestServer) => t.logs.map((l) => JSON.parse(l) as Record<string, unknown>);

/** Access lines are written when the server side of a response closes: wait (bounded) until `found` holds. */
async function logged(t: TestServer, found: (entries: Array<Record<string, unknown>>) => boolean): Promise<void> {
  for (const deadline = Date.now() + 5000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 10))) if (found(lines(t))) return;
}

describe('observability: structured logs', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ plugins: [corePlugin, identityPlugin, leasesPlugin, lensesPlugin] });
  });
  after(async () => t.close());

  it('every log line is one JSON object with level, time and msg', async () => {
    await t.api('GET', '/v1/me');
    expect(t.logs.length).to.be.greaterThan(2);
    for (const entry of lines(t)) {
      expect(entry).to.include.keys('level', 'time', 'msg');
      expect(Date.parse(String(entry.time))).to.not.be.NaN;
    }
  });

  it('one access line per request: method, route pattern, status, duration, tenant, request id, actor id', async () => {
    await t.api('POST', '/v1/nodes', { body: { nodes: [md({ id: 'task-logged', type: 'task', summary: 'Logged' })] } });
    const res = await t.api('GET', '/v1/nodes/task-logged', { headers: { 'x-request-id': 'req-from-the-proxy-1' } });
    expect(res.headers.get('x-request-id')).to.equal('req-from-the-proxy-1');
    await logged(t, (all) => all.some((l) => l.msg === 'request' && l.request_id === 'req-from-the-proxy-1'));
    const access = lines(t).filter((l) => l.msg === 'request' && l.request_id === 'req-from-the-proxy-1');
    expect(access).to.have.length(1);
    expect(access[0]).to.include({
      level: 'info',
      method: 'GET',
      route: '/v1/nodes/:id',
      status: 200,
      tenant: t.org,
      actor: t.adminPerson,
    });
    expect(access[0]!.duration_ms).to.be.a('number');
    // never the raw path with an id
    expect(JSON.stringify(access[0])).to.not.include('task-logged');
  });

  it('a request id is minted when none (or a malformed one) is sent, and returned', async () => {
    const minted = await t.api('GET', '/v1/me');
    expect(minted.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    const replaced = await t.api('GET', '/v1/me', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(replaced.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    await logged(t, (all) => all.some((l) => l.msg === 'request' && l.request_id === minted.headers.get('x-request-id')));
    expect(lines(t).some((l) => l.msg === 'request' && l.request_id === minted.headers.get('x-request-id'))).to.equal(true);
  });

  it('failed authentications are logged (401 counted) without the token', async () => {
    const person = await addPerson(t, 'Revoked Rita');
    const bogus = person.token.slice(0, -3) + 'zzz';
    for (const authorization of [`Bearer ${bogus}`, 'Basic abc', undefined]) {
      const res = await t.api('GET', '/v1/me', { token: null, headers: authorization ? { authorization } : {} });
      expect(res.status).to.equal(401);
    }
    await logged(t, (all) => all.filter((l) => l.msg === 'authentication failed').length >= 3);
    const failures = lines(t).filter((l) => l.msg === 'authentication failed');
    expect(failures.length).to.be.at.least(3);
    expect(failures.map((f) => f.credential)).to.include.members(['bearer', 'malformed', 'none']);
    expect(failures[0]).to.include({ level: 'warn', route: '/v1/me' });
    expect(t.logs.join('\n')).to.not.include(bogus);
    expect(t.logs.join('\n')).to.not.include(person.token);
  });

  it('tokens minted over REST and MCP, agent tokens and render tickets never reach a log line', async () => {
    const mine = await t.api('POST', '/v1/me/tokens', { body: { label: 'ci' } });
    expect(mine.status, mine.text).to.equal(201);
    await t.api('GET', '/v1/me', { token: mine.body.token });
    const agent = await t.api('POST', '/v1/agents', { body: { label: 'Log Bot' } });
    const agentToken = await t.api('POST', `/v1/agents/${agent.body.id}/token`, { body: { standing: true } });
    await t.api('GET', '/v1/me', { token: agentToken.body.token });
    const client = await t.mcp(mine.body.token);
    await t.tool(client, 'get_node', { id: 'task-logged' });
    await t.api('POST', '/v1/nodes', {
      body: { nodes: [md({ id: 'lens-logged', type: 'lens', summary: 'Lens', query: { type: ['task'] } })] },
    });
    const ticket = await t.api('POST', '/v1/lens/lens-logged/ticket', { body: {} });
    expect(ticket.status, ticket.text).to.equal(200);
    await t.api('GET', ticket.body.url, { token: null });
    await new Promise((r) => setTimeout(r, 20));
    const all = t.logs.join('\n');
    for (const secret of [mine.body.token, agentToken.body.token, ticket.body.ticket, t.adminToken]) expect(all).to.not.include(secret);
  });

  it('LOG_LEVEL: warn drops the info lines (access lines) and keeps warnings', async () => {
    const captured: string[] = [];
    const log = createLogger((l) => captured.push(l), false, 'warn');
    log.info('request', { route: '/x' });
    log.warn('authentication failed', { credential: 'none' });
    log.error('boom', { token: 'svc_pat_abcdefghijklmnopqrstuvwxyz0123' });
    expect(captured.map((l) => JSON.parse(l).msg)).to.deep.equal(['authentication failed', 'boom']);
    expect(captured.join('\n')).to.include('svc_pat_[redacted]').and.not.include('abcdefghijklmnopqrstuvwxyz0123');
    const debug: string[] = [];
    createLogger((l) => debug.push(l), false, 'debug').debug!('detail');
    expect(debug).to.have.length(1);
  });
});

describe('observability: Prometheus metrics', () => {
  let t: TestServer;
  const scrapeToken = 'metrics-scrape-secret-0123456789';
  before(async () => {
    t = await startTestServer({
      plugins: [corePlugin, identityPlugin, leasesPlugin],
      config: { metricsToken: scrapeToken, metricsPort: 0, fsync: true },
    });
  });
  after(async () => t.close());

  const families = (text: string): Map<string, PromFamily> => new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]));

  it('GET /metrics on the main port needs the scrape token; the metrics port serves it without auth', async () => {
    expect((await t.api('GET', '/metrics', { token: null })).status).to.equal(401);
    expect((await t.api('GET', '/metrics')).status).to.equal(401);
    expect((await t.api('GET', '/metrics', { token: scrapeToken })).status).to.equal(200);
    const side = await fetch(t.server.metricsUrl!);
    expect(side.status).to.equal(200);
    expect(side.headers.get('content-type')).to.match(/^text\/plain/);
    expect((await fetch(t.server.metricsUrl!.replace('/metrics', '/v1/me'))).status).to.equal(404);
  });

  it('the scrape parses and carries requests, writes, journal, checkpoints, sandbox, leases, tenants and process metrics', async () => {
    await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          md({ id: 'task-metered', type: 'task', summary: 'Metered' }),
          md({ id: 'task-metered-2', type: 'task', summary: 'Metered 2' }),
        ],
      },
    });
    await t.api('GET', '/v1/nodes/task-metered');
    await t.api('POST', '/v1/nodes/task-metered/claim', { body: {} });
    await t.api('POST', '/v1/nodes/task-metered-2/status', { body: { status: 'done' } });
    const denied = await t.api('POST', '/v1/nodes/task-metered-2/status', { body: { status: 'review' } });
    expect(denied.status).to.equal(409);
    await t.api('GET', '/v1/me', { token: null });
    // a checkpoint runs about a second after the first commit it writes out (later on a loaded machine)
    let text = '';
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
      text = await (await fetch(t.server.metricsUrl!)).text();
      if (new RegExp(`^workgraph_checkpoint_duration_seconds_count\\{tenant="${t.org}"\\} [1-9]`, 'm').test(text)) break;
    }
    const f = families(text);
    const http = f.get('workgraph_http_request_duration_seconds')!;
    expect(http.type).to.equal('HISTOGRAM');
    expect(Object.keys(http.metrics[0]!.buckets!)).to.include('+Inf');
    // the parser folds a histogram's label sets; the per-series counts are read from the _count lines
    const series = (name: string) =>
      text
        .split('\n')
        .filter((l) => l.startsWith(`${name}_count{`))
        .map((l) => {
          const [, labels, value] = /^[^{]+\{(.*)\} (\S+)$/.exec(l)!;
          return { labels: Object.fromEntries([...labels!.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]])), count: Number(value) };
        });
    const routes = series('workgraph_http_request_duration_seconds').map((m) => `${m.labels.method} ${m.labels.route} ${m.labels.status}`);
    expect(routes).to.include.members(['GET /v1/nodes/:id 200', 'POST /v1/nodes 200', 'POST /v1/nodes/:id/status 409', 'GET /v1/me 401']);
    expect(text).to.not.include('task-metered');
    const perTenant = (name: string) => {
      expect(f.get(name), name).to.not.equal(undefined);
      return series(name).find((m) => m.labels.tenant === t.org)!;
    };
    expect(perTenant('workgraph_commit_duration_seconds').count).to.be.greaterThan(0);
    expect(f.get('workgraph_write_queue_depth')!.metrics.find((m) => m.labels!.tenant === t.org)!.value).to.equal('0');
    expect(perTenant('workgraph_journal_fsync_duration_seconds').count).to.be.greaterThan(0);
    expect(perTenant('workgraph_checkpoint_duration_seconds').count).to.be.greaterThan(0);
    const sandbox = new Map(f.get('workgraph_sandbox_calls_total')!.metrics.map((m) => [m.labels!.outcome, Number(m.value)]));
    expect(sandbox.get('allowed')).to.be.greaterThan(0);
    expect(sandbox.get('denied')).to.be.greaterThan(0);
    const leases = f.get('workgraph_leases_live')!.metrics.find((m) => m.labels!.tenant === t.org && m.labels!.state === 'live')!;
    expect(leases.value).to.equal('1');
    expect(f.get('workgraph_tenants_open')!.metrics[0]!.value).to.equal('1');
    expect(Number(f.get('workgraph_auth_failures_total')!.metrics[0]!.value)).to.be.greaterThan(0);
    expect(f.get('workgraph_process_resident_memory_bytes')).to.not.equal(undefined);
    expect(f.get('workgraph_nodejs_eventloop_lag_seconds')).to.not.equal(undefined);
  });

  it('without SVC_METRICS_TOKEN the main port has no /metrics (404)', async () => {
    const plain = await startTestServer({ plugins: [corePlugin] });
    try {
      expect((await plain.api('GET', '/metrics')).status).to.equal(404);
      expect(plain.server.metricsUrl).to.equal(null);
    } finally {
      await plain.close();
    }
  });
});
