/**
 * The webhooks operations as MCP tools (plugins/webhooks/index.ts), through the real MCP
 * transport and the real HTTP server: create_webhook answers the signing secret once, as
 * POST /v1/webhooks does, and a ping and an event reach a real receiver that verifies them with
 * the `standardwebhooks` package; every tool answers the same bytes as its REST route for the
 * same state (errors included, as tool errors); a non-admin person and an agent get 403 from
 * every tool and change nothing.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expect } from 'chai';
import { addPerson, md, runSecrets, startTestServer, type TestServer } from '../../helpers/harness.js';
import { Receiver } from './receiver.js';
import { until } from '../../helpers/until.js';

const TOOLS = [
  'create_webhook',
  'list_webhooks',
  'get_webhook',
  'update_webhook',
  'delete_webhook',
  'ping_webhook',
  'list_webhook_deliveries',
  'redeliver_webhook',
];

describe('webhooks: the MCP tools', function () {
  this.timeout(60_000);
  let t: TestServer;
  let admin: Client;
  const receivers: Receiver[] = [];
  const receiver = async () => {
    const r = await new Receiver().start();
    receivers.push(r);
    return r;
  };
  /** an attempt's time, latency and ping message id differ between two pings; the rest must not */
  const stable = (text: string) =>
    text
      .replace(/"at":"[^"]+"/g, '"at":"T"')
      .replace(/"latency_ms":\d+/g, '"latency_ms":0')
      .replace(/"message_id":"ping_[^"]+"/g, '"message_id":"ping"');

  before(async () => {
    t = await startTestServer({ config: { webhookAllowPrivate: true, webhookTimeoutMs: 2000 } });
    admin = await t.mcp();
  });
  after(async () => {
    for (const r of receivers) await r.stop();
    await t.close();
  });

  it('tools/list has the eight webhook tools, in the webhooks toolset', async () => {
    const names = (await admin.listTools()).tools.map((x) => x.name);
    expect(names).to.include.members(TOOLS);
    const res = await fetch(`${t.url}/mcp?toolsets=webhooks`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.adminToken}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(res.status).to.equal(200);
    const listed = ((await res.json()) as { result: { tools: Array<{ name: string }> } }).result.tools.map((x) => x.name);
    expect(listed.sort()).to.deep.equal([...TOOLS].sort());
  });

  it('create_webhook answers the secret once; a ping and an event reach a receiver that verifies them', async () => {
    const r = await receiver();
    const created = await t.tool(admin, 'create_webhook', { url: r.url, types: ['node.created'], description: 'over MCP' });
    expect(created.isError, created.text).to.equal(false);
    const secret = created.json.secret as string;
    runSecrets.add(secret);
    expect(secret).to.match(/^whsec_[A-Za-z0-9+/=]{40,}$/);
    const hook = created.json.webhook;
    expect(hook).to.include({ url: r.url, description: 'over MCP', format: 'json', enabled: true, state: 'active' });
    r.secret = secret;

    // the secret is never answered again, over either adapter
    for (const text of [
      (await t.tool(admin, 'list_webhooks')).text,
      (await t.tool(admin, 'get_webhook', { id: hook.id })).text,
      (await t.api('GET', `/v1/webhooks/${hook.id}`)).text,
    ])
      expect(text).to.not.include(secret);

    const ping = await t.tool(admin, 'ping_webhook', { id: hook.id });
    expect(ping.isError, ping.text).to.equal(false);
    expect(ping.json.delivery).to.include({ kind: 'ping', ok: true, status: 200, type: 'webhook.ping', event: 0 });
    const pinged = r.received.find((x) => x.json?.type === 'webhook.ping');
    expect(pinged, 'the receiver got the ping').to.not.equal(undefined);
    expect(pinged!.verified, pinged!.verifyError ?? '').to.equal(true);
    expect(pinged!.headers['webhook-id']).to.equal(ping.json.delivery.message_id);

    // an event after the creation is delivered, signed with the same secret
    const put = await t.tool(admin, 'put_node', { nodes: [md({ id: 'task-mcp-hook', type: 'task', summary: 'Delivered over MCP' })] });
    expect(put.isError, put.text).to.equal(false);
    const delivered = await until(
      () => r.received.find((x) => x.json?.data?.nodes?.includes('task-mcp-hook')),
      'the node.created delivery',
    );
    expect(delivered.verified, delivered.verifyError ?? '').to.equal(true);
    expect(delivered.json.type).to.equal('node.created');

    // the delivery log over MCP shows both attempts, newest first, as REST does
    const log = await until(async () => {
      const d = await t.tool(admin, 'list_webhook_deliveries', { id: hook.id });
      return d.json.deliveries.length >= 2 ? d : null;
    }, 'two logged attempts');
    expect(log.json.deliveries.map((d: { kind: string }) => d.kind)).to.deep.equal(['delivery', 'ping']);
    // redeliver the event over MCP: the same webhook-id again, verified
    const event = log.json.deliveries[0].event as number;
    const again = await t.tool(admin, 'redeliver_webhook', { id: hook.id, event });
    expect(again.isError, again.text).to.equal(false);
    expect(again.json.delivery).to.include({ kind: 'redelivery', ok: true, event });
    const resent = r.received.filter((x) => x.json?.data?.id === event);
    expect(resent).to.have.length.at.least(2);
    expect(resent.at(-1)!.headers['webhook-id']).to.equal(delivered.headers['webhook-id']);
    expect(resent.at(-1)!.verified).to.equal(true);
    // the same redelivery over REST answers the same bytes but for the attempt's time and latency
    const restAgain = await t.api('POST', `/v1/webhooks/${hook.id}/redeliver`, { body: { event } });
    expect(restAgain.status, restAgain.text).to.equal(200);
    expect(stable(again.text)).to.equal(stable(restAgain.text));
  });

  it('every tool answers the same bytes as its REST route for the same state, errors as tool errors', async () => {
    const r = await receiver();
    // disabled subscriptions: no delivery moves their cursors between the two reads
    const viaTool = await t.tool(admin, 'create_webhook', { url: r.url, types: ['lease.*'], enabled: false });
    const viaRest = await t.api('POST', '/v1/webhooks', { body: { url: r.url, types: ['lease.*'], enabled: false } });
    expect(viaRest.status, viaRest.text).to.equal(201);
    runSecrets.add(viaTool.json.secret);
    runSecrets.add(viaRest.body.secret);
    const a = viaTool.json.webhook.id as string;
    const b = viaRest.body.webhook.id as string;
    // two writes differ in the subscription's id, secret, write time and the cursor it started at (each creation is an event)
    const same = (s: string, id: string, secret?: string) => {
      let out = s
        .split(id)
        .join('ID')
        .replace(/"(created|updated)":"[^"]+"/g, '"$1":"T"')
        .replace(/"last_event":\d+/g, '"last_event":0');
      if (secret) out = out.split(secret).join('SECRET');
      return out;
    };
    expect(same(viaTool.text, a, viaTool.json.secret)).to.equal(same(viaRest.text, b, viaRest.body.secret));

    expect((await t.tool(admin, 'list_webhooks')).text).to.equal((await t.api('GET', '/v1/webhooks')).text);
    expect((await t.tool(admin, 'get_webhook', { id: a })).text).to.equal((await t.api('GET', `/v1/webhooks/${a}`)).text);
    const deliveries = await t.tool(admin, 'list_webhook_deliveries', { id: a, limit: 5 });
    expect(deliveries.text).to.equal((await t.api('GET', `/v1/webhooks/${a}/deliveries?limit=5`)).text);

    const upTool = await t.tool(admin, 'update_webhook', { id: a, description: 'same', types: ['lease.claimed'] });
    const upRest = await t.api('PATCH', `/v1/webhooks/${b}`, { body: { description: 'same', types: ['lease.claimed'] } });
    expect(upRest.status, upRest.text).to.equal(200);
    expect(same(upTool.text, a)).to.equal(same(upRest.text, b));
    // a rotation answers the new secret once, over MCP as over REST
    const rotTool = await t.tool(admin, 'update_webhook', { id: a, rotate_secret: true });
    const rotRest = await t.api('PATCH', `/v1/webhooks/${b}`, { body: { rotate_secret: true } });
    runSecrets.add(rotTool.json.secret);
    runSecrets.add(rotRest.body.secret);
    expect(rotTool.json.secret)
      .to.match(/^whsec_/)
      .and.not.equal(viaTool.json.secret);
    expect(same(rotTool.text, a, rotTool.json.secret)).to.equal(same(rotRest.text, b, rotRest.body.secret));
    expect((await t.tool(admin, 'get_webhook', { id: a })).text).to.not.include(rotTool.json.secret);

    const pingTool = await t.tool(admin, 'ping_webhook', { id: a });
    const pingRest = await t.api('POST', `/v1/webhooks/${b}/ping`);
    expect(pingRest.status, pingRest.text).to.equal(200);
    expect(stable(pingTool.text)).to.equal(stable(pingRest.text));

    // errors: the same envelope bytes, as a tool error
    const node = await t.api('POST', '/v1/nodes', { body: { nodes: [md({ id: 'task-mcp-parity', type: 'task', summary: 'Parity' })] } });
    expect(node.status, node.text).to.equal(200);
    const lastEvent = t.server.services.tenants.get(t.org)!.events.lastId;
    const errorCases: Array<[string, Record<string, unknown>, string, string, unknown?]> = [
      ['get_webhook', { id: 'wh_nope' }, 'GET', '/v1/webhooks/wh_nope'],
      ['delete_webhook', { id: 'wh_nope' }, 'DELETE', '/v1/webhooks/wh_nope'],
      ['ping_webhook', { id: 'wh_nope' }, 'POST', '/v1/webhooks/wh_nope/ping'],
      ['create_webhook', { url: 'ftp://example.com/hook' }, 'POST', '/v1/webhooks', { url: 'ftp://example.com/hook' }],
      ['create_webhook', { url: r.url, colour: 'red' }, 'POST', '/v1/webhooks', { url: r.url, colour: 'red' }],
      ['update_webhook', { id: a, format: 'xml' }, 'PATCH', `/v1/webhooks/${a}`, { format: 'xml' }],
      // not matching the filter (lease.claimed): 409; an event never written: 404
      ['redeliver_webhook', { id: a, event: lastEvent }, 'POST', `/v1/webhooks/${a}/redeliver`, { event: lastEvent }],
      ['redeliver_webhook', { id: a, event: lastEvent + 1000 }, 'POST', `/v1/webhooks/${a}/redeliver`, { event: lastEvent + 1000 }],
    ];
    const codes: string[] = [];
    for (const [tool, args, method, path, body] of errorCases) {
      const tl = await t.tool(admin, tool, args);
      const rest = await t.api(method, path, body === undefined ? {} : { body });
      expect(tl.isError, `${tool} ${tl.text}`).to.equal(true);
      expect(rest.status, rest.text).to.be.at.least(400);
      expect(tl.text, tool).to.equal(rest.text);
      codes.push(tl.json.error.code);
    }
    expect(codes).to.deep.equal([
      'not_found',
      'not_found',
      'not_found',
      'url_refused',
      'validation_failed',
      'validation_failed',
      'conflict',
      'not_found',
    ]);

    // a failed write changed nothing
    expect((await t.tool(admin, 'get_webhook', { id: a })).json).to.include({ format: 'json', description: 'same' });
    const count = (await t.tool(admin, 'list_webhooks')).json.webhooks.length;

    const delTool = await t.tool(admin, 'delete_webhook', { id: a });
    const delRest = await t.api('DELETE', `/v1/webhooks/${b}`);
    expect(delRest.status, delRest.text).to.equal(200);
    expect(same(delTool.text, a)).to.equal(same(delRest.text, b));
    expect(delTool.json).to.deep.equal({ id: a, deleted: true });
    expect((await t.tool(admin, 'list_webhooks')).json.webhooks).to.have.length(count - 2);
    const goneTool = await t.tool(admin, 'get_webhook', { id: a });
    expect(goneTool.isError).to.equal(true);
    expect(goneTool.text).to.equal((await t.api('GET', `/v1/webhooks/${a}`)).text);
  });

  it('a non-admin person and an agent get 403 from every webhook tool, and nothing changes', async () => {
    const r = await receiver();
    const made = await t.api('POST', '/v1/webhooks', { body: { url: r.url, enabled: false } });
    expect(made.status, made.text).to.equal(201);
    runSecrets.add(made.body.secret);
    const id = made.body.webhook.id as string;
    // a disabled subscription: nothing but a write changes its view
    const before = (await t.api('GET', `/v1/webhooks/${id}`)).text;
    const count = (await t.api('GET', '/v1/webhooks')).body.webhooks.length;

    const member = await addPerson(t, 'Webhook Member');
    const agent = await t.tool(admin, 'create_agent', { label: 'Webhook Agent' });
    expect(agent.isError, agent.text).to.equal(false);
    const minted = await t.tool(admin, 'mint_agent_token', { id: agent.json.id, standing: true, label: 'hooks' });
    expect(minted.isError, minted.text).to.equal(false);
    const args: Record<string, Record<string, unknown>> = {
      create_webhook: { url: r.url },
      list_webhooks: {},
      get_webhook: { id },
      update_webhook: { id, enabled: true, rotate_secret: true },
      delete_webhook: { id },
      ping_webhook: { id },
      list_webhook_deliveries: { id },
      redeliver_webhook: { id, event: 1 },
    };
    for (const token of [member.token, minted.json.token as string]) {
      const client = await t.mcp(token);
      for (const tool of TOOLS) {
        const res = await t.tool(client, tool, args[tool]);
        expect(res.isError, `${tool}: ${res.text}`).to.equal(true);
        expect(res.json.error.code, `${tool}: ${res.text}`).to.equal('forbidden');
      }
      await client.close();
    }
    expect((await t.api('GET', `/v1/webhooks/${id}`)).text).to.equal(before);
    expect((await t.api('GET', '/v1/webhooks')).body.webhooks).to.have.length(count);
    expect(r.received).to.deep.equal([]);
  });
});
