/**
 * One core, two adapters: the `capture` and `propose_correction` tools answer the same bytes
 * as POST /v1/capture and POST /v1/corrections. A write changes state, so each write is made
 * once through REST on server A and once through the tool on server B, two servers in the
 * same state at the same pinned instant; errors and idempotent replays are compared on one.
 */
import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { TestServer } from '../../helpers/harness.js';
import { capture, pinClock, startCaptureServer } from './helpers.js';

describe('capture: REST and tool parity (capture, propose_correction)', function () {
  let a: TestServer;
  let b: TestServer;
  let clientA: Client;
  let clientB: Client;

  before(async () => {
    [a, b] = await Promise.all([startCaptureServer(), startCaptureServer()]);
    const at = Date.parse('2030-06-01T12:00:00.000Z');
    for (const t of [a, b]) {
      pinClock(t.clock, at);
      const res = await t.api('POST', '/v1/nodes', {
        body: {
          nodes: [
            { id: 'task-release', type: 'task', summary: 'Ship release 2.0', project: 'web' },
            { id: 'issue-incident-7', type: 'issue', summary: 'Incident 7', project: 'web' },
          ],
        },
      });
      expect(res.status, res.text).to.equal(200);
    }
    expect(a.adminPerson).to.equal(b.adminPerson);
    [clientA, clientB] = await Promise.all([a.mcp(), b.mcp()]);
  });
  after(async () => {
    await Promise.all([a.close(), b.close()]);
  });

  it('lists the four capture tools', async () => {
    const { tools } = await clientA.listTools();
    expect(tools.map((x) => x.name)).to.include.members(['capture', 'propose_correction', 'query_graph', 'explore_graph']);
  });

  it('capture (created, with every context field): the tool text equals the REST body byte for byte', async () => {
    const text = 'task: Add retry to the webhook sender\nRetries with backoff.\nissue: Webhook sender drops events';
    const rest = await capture(a, {
      text,
      context: { project: 'web', during: 'issue-incident-7', blocks: 'task-release', needed_by: '2030-07-01' },
    });
    const tool = await b.tool(clientB, 'capture', {
      text,
      project: 'web',
      during: 'issue-incident-7',
      blocks: 'task-release',
      needed_by: '2030-07-01',
    });
    expect(rest.status, rest.text).to.equal(200);
    expect(rest.body.status).to.equal('created');
    expect(tool.isError).to.equal(false);
    expect(tool.text).to.equal(rest.text);
  });

  it('capture (pending): same bytes', async () => {
    const rest = await capture(a, { text: 'just a thought about caching', context: { project: 'web' } });
    const tool = await b.tool(clientB, 'capture', { text: 'just a thought about caching', project: 'web' });
    expect(rest.body.status).to.equal('pending');
    expect(tool.text).to.equal(rest.text);
  });

  it('capture errors (404 missing blocks target, 422 bad needed_by, 422 blocks without project): same envelopes', async () => {
    const cases: Array<[Record<string, unknown>, Record<string, unknown>, number]> = [
      [
        { text: 'task: x', context: { project: 'web', blocks: 'task-ghost' } },
        { text: 'task: x', project: 'web', blocks: 'task-ghost' },
        404,
      ],
      [
        { text: 'task: x', context: { project: 'web', blocks: 'task-release', needed_by: 'soon' } },
        { text: 'task: x', project: 'web', blocks: 'task-release', needed_by: 'soon' },
        422,
      ],
      [{ text: 'task: x', context: { blocks: 'task-release' } }, { text: 'task: x', blocks: 'task-release' }, 422],
    ];
    for (const [body, args, status] of cases) {
      const rest = await capture(a, body);
      const tool = await a.tool(clientA, 'capture', args);
      expect(rest.status).to.equal(status);
      expect(tool.isError).to.equal(true);
      expect(tool.text).to.equal(rest.text);
    }
  });

  it('an idempotency key is shared by both adapters: the tool replays the REST answer', async () => {
    const rest = await capture(a, { text: 'task: Keyed across adapters', idempotency_key: 'twin-1' });
    const tool = await a.tool(clientA, 'capture', { text: 'task: Keyed across adapters', idempotency_key: 'twin-1' });
    expect(tool.text).to.equal(rest.text);
    const header = await capture(a, { text: 'task: Keyed across adapters' }, { headers: { 'Idempotency-Key': 'twin-1' } });
    expect(header.text).to.equal(rest.text);
  });

  it('propose_correction: same bytes but the revision (the node records authored_via rest vs mcp)', async () => {
    const body = {
      target: 'task-release',
      pin: ['issue-incident-7'],
      guidance: 'Incident 7 explains the release delay.',
      title: 'Release context',
    };
    const rest = await a.api('POST', '/v1/corrections', { body });
    const tool = await b.tool(clientB, 'propose_correction', body);
    expect(rest.status, rest.text).to.equal(201);
    expect(tool.isError).to.equal(false);
    const norm = (s: string) => s.replace(/"revision":"[0-9a-f]{40}"/, '"revision":"R"');
    expect(norm(tool.text)).to.equal(norm(rest.text));
    expect(tool.json.id).to.equal('correction-release-context');
    for (const bad of [{ target: 'task-ghost', guidance: 'x' }, { target: 'global' }, { target: 'project:Bad Slug', guidance: 'x' }]) {
      const r = await a.api('POST', '/v1/corrections', { body: bad });
      const tl = await a.tool(clientA, 'propose_correction', bad);
      expect(tl.isError).to.equal(true);
      expect(tl.text, JSON.stringify(bad)).to.equal(r.text);
    }
  });

  it('an unknown field is 422 validation_failed on every capture operation, over REST and as a tool argument', async () => {
    const additional = (body: any, name: string) => {
      expect(body.error.code, name).to.equal('validation_failed');
      expect(body.error.details.errors, name).to.deep.include.members([
        {
          instancePath: body.error.details.errors[0].instancePath,
          schemaPath: body.error.details.errors[0].schemaPath,
          keyword: 'additionalProperties',
          params: { additionalProperty: 'colour' },
          message: 'must NOT have additional properties',
        },
      ]);
    };
    for (const [path, body] of [
      ['/v1/capture', { text: 'task: Unknown field', colour: 'red' }],
      ['/v1/capture', { text: 'task: Unknown context key', context: { project: 'web', colour: 'red' } }],
      ['/v1/distill/report', { facts: 1, colour: 'red' }],
      ['/v1/corrections', { target: 'global', guidance: 'x', colour: 'red' }],
      ['/v1/digest', { query: 'release', colour: 'red' }],
    ] as Array<[string, Record<string, unknown>]>) {
      const res = await a.api('POST', path, { body });
      expect(res.status, path).to.equal(422);
      additional(res.body, path);
    }
    for (const [name, args] of [
      ['capture', { text: 'task: Unknown argument', colour: 'red' }],
      ['propose_correction', { target: 'global', guidance: 'x', colour: 'red' }],
      ['query_graph', { query: 'release', colour: 'red' }],
      ['explore_graph', { colour: 'red' }],
    ] as Array<[string, Record<string, unknown>]>) {
      const tool = await a.tool(clientA, name, args);
      expect(tool.isError, name).to.equal(true);
      additional(JSON.parse(tool.text), name);
    }
  });
});
