/**
 * The tool twins: `analytics` returns the GET /v1/analytics body byte for byte (JSON and
 * text), `render_program` the GET /v1/program/{id}?format=text body (and the JSON body with
 * format json), on unchanged state and one frozen instant; errors are the same envelope.
 */
import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { addEdge, DAY, freezeClock, put, setStatus, startAnalyticsServer } from './helpers.js';

describe('analytics: tool twins analytics and render_program', function () {
  this.timeout(30_000);
  let t: TestServer;
  let client: Client;
  let unfreeze: () => void;

  before(async () => {
    t = await startAnalyticsServer();
    unfreeze = freezeClock(t.clock);
    const alice = await addPerson(t, 'Alice');
    await put(t, [
      { id: 'task-p-root', type: 'task', summary: 'Ship *the* release', project: 'web' },
      { id: 'task-p-1', type: 'task', summary: 'one', project: 'web', edges: [{ type: 'blocks', to: 'task-p-root' }] },
      { id: 'task-p-2', type: 'task', summary: 'two', project: 'api', edges: [{ type: 'blocks', to: 'task-p-root' }] },
      {
        id: 'issue-p-3',
        type: 'issue',
        summary: 'three',
        project: 'web',
        edges: [
          { type: 'blocks', to: 'task-p-1' },
          { type: 'blocks', to: 'task-p-2' },
        ],
      },
      { id: 'dec-p-4', type: 'dec', summary: 'a decision', project: 'web' },
    ]);
    await setStatus(t, 'task-p-2', 'in-progress');
    t.clock.advance(9 * DAY);
    await setStatus(t, 'issue-p-3', 'resolved');
    await addEdge(t, 'task-p-1', 'assigned', alice.id);
    t.clock.advance(DAY);
    client = await t.mcp(alice.token);
  });
  after(async () => {
    unfreeze();
    await t.close();
  });

  it('both tools are listed, read-only', async () => {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect(byName.get('analytics')?.annotations?.readOnlyHint).to.equal(true);
    expect(byName.get('render_program')?.annotations?.readOnlyHint).to.equal(true);
    expect(Object.keys((byName.get('render_program')!.inputSchema as { properties: object }).properties)).to.include.members([
      'id',
      'max_depth',
      'max_nodes',
    ]);
  });

  const analyticsCases: Array<[string, Record<string, unknown>]> = [
    ['', {}],
    ['?project=web&type=task,issue&weeks=4&top=3&aging=2', { project: 'web', type: ['task', 'issue'], weeks: 4, top: 3, aging: 2 }],
    ['?type=task&type=dec', { type: 'task,dec' }],
    ['?weeks=500&top=0&aging=1000', { weeks: 500, top: 0, aging: 1000 }],
    ['?project=nowhere', { project: 'nowhere' }],
    ['?format=text&project=web', { format: 'text', project: 'web' }],
  ];
  for (const [query, args] of analyticsCases) {
    it(`GET /v1/analytics${query} == analytics ${JSON.stringify(args)}`, async () => {
      const rest = await t.api('GET', `/v1/analytics${query}`);
      const tool = await t.tool(client, 'analytics', args);
      expect(rest.status, rest.text).to.equal(200);
      expect(tool.isError, tool.text).to.equal(false);
      expect(tool.text).to.equal(rest.text);
      expect(rest.text.length).to.be.greaterThan(200);
    });
  }

  it('analytics: a 422 is the same envelope on both', async () => {
    for (const [query, args] of [
      ['?type=nope', { type: 'nope' }],
      ['?project=Bad_Slug', { project: 'Bad_Slug' }],
      ['?weeks=many', { weeks: 'many' }],
    ] as Array<[string, Record<string, unknown>]>) {
      const rest = await t.api('GET', `/v1/analytics${query}`);
      const tool = await t.tool(client, 'analytics', args);
      expect(rest.status, query).to.equal(422);
      expect(tool.isError).to.equal(true);
      expect(tool.text).to.equal(rest.text);
    }
  });

  const programCases: Array<[string, Record<string, unknown>]> = [
    ['/v1/program/task-p-root?format=text', { id: 'task-p-root' }],
    ['/v1/program/task-p-root?format=text&depth=1&max_nodes=1', { id: 'task-p-root', max_depth: 1, max_nodes: 1 }],
    ['/v1/program/task-p-root', { id: 'task-p-root', format: 'json' }],
    ['/v1/program/task-p-root?depth=1', { id: 'task-p-root', max_depth: 1, format: 'json' }],
    ['/v1/program/dec-p-4?format=text', { id: 'dec-p-4' }],
  ];
  for (const [path, args] of programCases) {
    it(`GET ${path} == render_program ${JSON.stringify(args)}`, async () => {
      const rest = await t.api('GET', path);
      const tool = await t.tool(client, 'render_program', args);
      expect(rest.status, rest.text).to.equal(200);
      expect(tool.isError, tool.text).to.equal(false);
      expect(tool.text).to.equal(rest.text);
    });
  }

  it('render_program: a 404 is the same envelope on both', async () => {
    const rest = await t.api('GET', '/v1/program/task-none?format=text');
    const tool = await t.tool(client, 'render_program', { id: 'task-none' });
    expect(rest.status).to.equal(404);
    expect(tool.isError).to.equal(true);
    expect(tool.text).to.equal(rest.text);
  });

  it('render_program: a 422 has the same code, ajv errors and message on both (the tool names the depth max_depth)', async () => {
    for (const [path, args] of [
      ['/v1/program/Not_An_Id?format=text', { id: 'Not_An_Id' }],
      ['/v1/program/task-p-root?depth=deep', { id: 'task-p-root', max_depth: 'deep' }],
    ] as Array<[string, Record<string, unknown>]>) {
      const rest = await t.api('GET', path);
      const tool = await t.tool(client, 'render_program', args);
      expect(rest.status, path).to.equal(422);
      expect(tool.isError).to.equal(true);
      const body = JSON.parse(tool.text);
      expect(body.error.code).to.equal('validation_failed');
      const strip = (e: Record<string, unknown>) => ({
        ...e,
        instancePath: String(e.instancePath).replace('/max_depth', '/depth'),
        schemaPath: String(e.schemaPath).replace('/max_depth/', '/depth/'),
      });
      expect(body.error.details.errors.map(strip), path).to.deep.equal(rest.body.error.details.errors.map(strip));
      expect(body.error.message, path).to.equal(rest.body.error.message.replace('/depth', '/max_depth'));
    }
  });

  it('an unknown tool argument is 422 validation_failed on analytics and render_program', async () => {
    for (const [name, args] of [
      ['analytics', { week: 4 }],
      ['render_program', { id: 'task-p-root', depth: 2 }],
    ] as const) {
      const tool = await t.tool(client, name, args);
      expect(tool.isError, name).to.equal(true);
      const body = JSON.parse(tool.text);
      expect(body.error.code, name).to.equal('validation_failed');
      expect(body.error.details.errors[0], name).to.deep.include({
        keyword: 'additionalProperties',
        params: { additionalProperty: Object.keys(args).find((k) => k !== 'id') },
      });
    }
  });
});
