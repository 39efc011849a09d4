/**
 * The direct read lane (kernel/direct-reads.ts): an ordinary node read is answered without the
 * koa app, with the bytes, headers (names, case and order), access line and metrics the koa
 * route gives; every other request, and every failure, is the koa app's.
 */
import { expect } from 'chai';
import { Agent, createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '../../kernel/config.js';
import { withDirectReads } from '../../kernel/direct-reads.js';
import { createApp } from '../../kernel/http.js';
import { KernelMetrics } from '../../kernel/metrics.js';
import { addPerson, putNodes, startTestServer, type TestServer } from '../helpers/harness.js';

interface Raw {
  status: number;
  headers: string[];
  body: string;
}

function get(base: string, path: string, headers: Record<string, string> = {}, agent?: Agent): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(base + path, { method: 'GET', headers, ...(agent ? { agent } : {}) }, (res: IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.rawHeaders, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })),
  );
}

/** The header list with the values that differ per request (the date, a minted request id) blanked. */
function comparable(r: Raw, keepRequestId: boolean): Raw {
  const headers = r.headers.map((v, i) => {
    const name = r.headers[i - 1]?.toLowerCase();
    if (i % 2 === 1 && (name === 'date' || (name === 'x-request-id' && !keepRequestId))) return '*';
    // the 401 challenge names the listener's own address
    if (i % 2 === 1 && name === 'www-authenticate') return v.replace(/127\.0\.0\.1:\d+/, 'HOST');
    return v;
  });
  return { ...r, headers };
}

describe('direct read lane: node reads without the koa app', function () {
  let t: TestServer;
  let koaOnly: { server: Server; url: string };
  let lane: { server: Server; url: string };
  let koaCalls = 0;
  let member: { id: string; token: string };

  before(async () => {
    t = await startTestServer();
    await putNodes(t, [
      { id: 'task-direct', type: 'task', summary: 'Read me directly', status: 'open' },
      { id: 'task-other', type: 'task', summary: 'Blocks the first', edges: [{ type: 'blocks', to: 'task-direct' }] },
    ]);
    member = await addPerson(t, 'Dana Direct');
    const services = t.server.services;
    // a second koa app over the same kernel (its own metrics registry: the names are taken)
    const app = createApp({ ...services, metrics: new KernelMetrics(() => 1) }).callback();
    koaOnly = await listen(app);
    // the lane in front of a koa app that counts what reaches it
    lane = await listen(
      withDirectReads(t.server.services, (req, res) => {
        koaCalls++;
        void app(req, res);
      }),
    );
  });
  after(async () => {
    koaOnly?.server.close();
    lane?.server.close();
    await t?.close();
  });

  const cases: Array<{ name: string; path: string; headers?: () => Record<string, string>; direct: boolean; keepId?: boolean }> = [
    { name: 'a node read', path: '/v1/nodes/task-direct', headers: () => ({ authorization: `Bearer ${t.adminToken}` }), direct: true },
    {
      name: 'a node with inbound edges',
      path: '/v1/nodes/task-other',
      headers: () => ({ authorization: `Bearer ${t.adminToken}` }),
      direct: true,
    },
    {
      name: 'a query field',
      path: '/v1/nodes/task-direct?include_markdown=false',
      headers: () => ({ authorization: `Bearer ${member.token}` }),
      direct: true,
    },
    {
      name: "the client's request id",
      path: '/v1/nodes/task-direct',
      headers: () => ({ authorization: `Bearer ${t.adminToken}`, 'x-request-id': 'trace-42.a:b' }),
      direct: true,
      keepId: true,
    },
    {
      name: 'an unknown node',
      path: '/v1/nodes/task-nothing',
      headers: () => ({ authorization: `Bearer ${t.adminToken}` }),
      direct: false,
    },
    { name: 'an invalid id', path: '/v1/nodes/Not_An_Id', headers: () => ({ authorization: `Bearer ${t.adminToken}` }), direct: false },
    {
      name: 'an invalid query value',
      path: '/v1/nodes/task-direct?include_markdown=maybe',
      headers: () => ({ authorization: `Bearer ${t.adminToken}` }),
      direct: false,
    },
    { name: 'no token', path: '/v1/nodes/task-direct', direct: false },
    {
      name: 'a wrong token',
      path: '/v1/nodes/task-direct',
      headers: () => ({ authorization: 'Bearer svc_pat_wrongwrongwrongwrong' }),
      direct: false,
    },
    {
      name: 'an escaped path',
      path: '/v1/nodes/task%2Ddirect',
      headers: () => ({ authorization: `Bearer ${t.adminToken}` }),
      direct: false,
    },
    {
      name: 'a trailing slash',
      path: '/v1/nodes/task-direct/',
      headers: () => ({ authorization: `Bearer ${t.adminToken}` }),
      direct: false,
    },
    { name: 'a route that is not direct', path: '/v1/me', headers: () => ({ authorization: `Bearer ${t.adminToken}` }), direct: false },
    {
      name: 'a foreign Host',
      path: '/v1/nodes/task-direct',
      headers: () => ({ authorization: `Bearer ${t.adminToken}`, host: 'evil.example' }),
      direct: false,
    },
  ];

  for (const c of cases)
    it(`${c.name}: the same answer as the koa route, ${c.direct ? 'without' : 'from'} the koa app`, async () => {
      const headers = c.headers?.() ?? {};
      const viaKoa = await get(koaOnly.url, c.path, headers);
      const before = koaCalls;
      const viaLane = await get(lane.url, c.path, headers);
      expect(koaCalls - before, 'requests the lane handed to koa').to.equal(c.direct ? 0 : 1);
      expect(comparable(viaLane, c.keepId === true)).to.deep.equal(comparable(viaKoa, c.keepId === true));
      if (c.direct) expect(viaLane.status).to.equal(200);
    });

  it('a token revoked while its connection stays open is refused on that connection at once', async () => {
    const minted = await t.api('POST', '/v1/me/tokens', { token: member.token, body: { label: 'revoked mid-connection' } });
    expect(minted.status, minted.text).to.equal(201);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    try {
      const headers = { authorization: `Bearer ${minted.body.token}` };
      agent.on('free', (socket) => sockets.add(socket));
      const first = await get(lane.url, '/v1/nodes/task-direct', headers, agent);
      expect(first.status).to.equal(200);
      const revoked = await t.api('DELETE', `/v1/me/tokens/${minted.body.hash_prefix}`, { token: member.token });
      expect(revoked.status, revoked.text).to.equal(200);
      const before = koaCalls;
      const second = await get(lane.url, '/v1/nodes/task-direct', headers, agent);
      expect(second.status).to.equal(401);
      expect(koaCalls, "the refusal is the koa route's").to.equal(before + 1);
      expect(sockets.size, 'both requests on one connection').to.equal(1);
    } finally {
      agent.destroy();
    }
  });

  it('koa routes on one kept-alive connection: each request is the actor of the header it sends, a revoked token refused at once', async () => {
    // the bearer header is hashed once per connection (kernel/tenants.ts `hashedHeader`): only the
    // same header string reuses the hash, and liveness is checked on every request
    const minted = await t.api('POST', '/v1/me/tokens', { token: member.token, body: { label: 'switching on one connection' } });
    expect(minted.status, minted.text).to.equal(201);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    agent.on('free', (socket) => sockets.add(socket));
    try {
      const me = async (token: string) => {
        const r = await get(t.url, '/v1/me', { authorization: `Bearer ${token}` }, agent);
        return { status: r.status, person: r.status === 200 ? (JSON.parse(r.body) as { person: string }).person : null };
      };
      const admin = await me(t.adminToken);
      const asMember = await me(minted.body.token);
      expect(admin.status).to.equal(200);
      expect(asMember).to.deep.equal({ status: 200, person: member.id });
      expect(admin.person).to.not.equal(member.id);
      expect(await me(t.adminToken)).to.deep.equal(admin);
      expect((await me('svc_pat_wrongwrongwrongwrong')).status).to.equal(401);
      expect(await me(minted.body.token)).to.deep.equal(asMember);
      const revoked = await t.api('DELETE', `/v1/me/tokens/${minted.body.hash_prefix}`, { token: member.token });
      expect(revoked.status, revoked.text).to.equal(200);
      expect((await me(minted.body.token)).status, 'the same header, revoked meanwhile').to.equal(401);
      expect(await me(t.adminToken)).to.deep.equal(admin);
      expect(sockets.size, 'every request on one connection').to.equal(1);
    } finally {
      agent.destroy();
    }
  });

  it('the server answers node reads through the lane, with the access line and metrics of the koa route', async () => {
    const services = t.server.services;
    const sample = async () => {
      const text = await services.metrics.text();
      const line = text
        .split('\n')
        .find(
          (l) =>
            l.startsWith('workgraph_http_request_duration_seconds_count{') &&
            l.includes('route="/v1/nodes/:id"') &&
            l.includes('status="200"'),
        );
      return line ? Number(line.split(' ').pop()) : 0;
    };
    const counted = await sample();
    const r = await t.api('GET', '/v1/nodes/task-direct', { headers: { 'x-request-id': 'direct-line-1' } });
    expect(r.status).to.equal(200);
    expect(r.headers.get('x-request-id')).to.equal('direct-line-1');
    // the lane writes the access line with the answer: it is there when the answer arrives
    // (its fields are held to the koa route's by test/kernel/observability.test.ts, which reads nodes)
    const line = t.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.request_id === 'direct-line-1');
    expect(line, 'the access line').to.not.equal(undefined);
    expect([line!.msg, line!.route, line!.status, line!.tenant, line!.actor]).to.deep.equal([
      'request',
      '/v1/nodes/:id',
      200,
      t.org,
      t.adminPerson,
    ]);
    expect(line!.duration_ms).to.be.a('number');
    expect(await sample()).to.equal(counted + 1);
  });

  it("the logger's access line is the line pino writes for the same fields", () => {
    const lines: string[] = [];
    const log = createLogger((l) => lines.push(l));
    const fields = {
      method: 'GET',
      route: '/v1/nodes/:id',
      status: 200,
      duration_ms: 1.25,
      tenant: 'acme',
      actor: null,
      request_id: 'id-"quoted"-svc_pat_abcdefghijklmnopqrstu',
    };
    log.info('request', fields);
    log.request!(fields);
    const [pino, own] = lines.map((l) => l.replace(/"time":"[^"]+"/, '"time":"*"'));
    expect(own).to.equal(pino);
    expect(own).to.include('svc_pat_[redacted]');
    const quiet = createLogger((l) => lines.push(l), true);
    quiet.request!(fields);
    expect(lines).to.have.length(2);
  });
});
