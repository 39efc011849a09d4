import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expect } from 'chai';
import { corePlugin } from '../../../plugins/core/index.js';
import { historyPlugin } from '../../../plugins/history/index.js';
import { addPerson, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';
import { ok, relaxHookTimeout } from './helpers.js';

/** One core, two adapters: the tool text equals the REST body byte for byte, on unchanged state. */
describe('history: REST and MCP tool parity (node_history, recent_changes)', () => {
  let t: TestServer;
  let client: Client;
  let member: { id: string; token: string };

  before(async () => {
    t = await startTestServer({ plugins: [corePlugin, historyPlugin] });
    relaxHookTimeout(t);
    member = await addPerson(t, 'Mia Member');
    await putNodes(t, [
      { id: 'proj-par', type: 'proj', summary: 'Parity project' },
      { id: 'task-par', type: 'task', summary: 'Parity subject', project: 'proj-par' },
      { id: 'task-par2', type: 'task', summary: 'Second', project: 'proj-par' },
    ]);
    await t.api('POST', '/v1/nodes/task-par/status', { token: member.token, body: { status: 'blocked' } });
    await t.api('POST', '/v1/nodes/task-par/priority', { body: { priority: 'p2' } });
    client = await t.mcp();
  });
  after(async () => t.close());

  it('lists both tools with read-only annotations', async () => {
    const { tools } = await client.listTools();
    const mine = tools.filter((x) => x.name === 'node_history' || x.name === 'recent_changes');
    expect(mine.map((x) => x.name).sort()).to.deep.equal(['node_history', 'recent_changes']);
    for (const tool of mine) expect(tool.annotations?.readOnlyHint).to.equal(true);
  });

  it('node_history equals GET /v1/nodes/{id}/history', async () => {
    for (const [args, query] of [
      [{ id: 'task-par' }, ''],
      [{ id: 'task-par', limit: 2 }, '?limit=2'],
      [{ id: 'task-par', limit: 999 }, '?limit=999'],
    ] as const) {
      const rest = await t.api('GET', `/v1/nodes/task-par/history${query}`);
      const tool = await t.tool(client, 'node_history', args);
      expect(rest.status).to.equal(200);
      expect(tool.isError).to.equal(false);
      expect(tool.text).to.equal(rest.text);
    }
  });

  it('node_history with sha equals GET /v1/nodes/{id}/history/{sha}', async () => {
    const { history } = await ok(t, '/v1/nodes/task-par/history');
    for (const entry of history) {
      const rest = await t.api('GET', `/v1/nodes/task-par/history/${entry.short}`);
      const tool = await t.tool(client, 'node_history', { id: 'task-par', sha: entry.short });
      expect(tool.text).to.equal(rest.text);
      expect(JSON.parse(tool.text).patch).to.be.a('string').and.not.equal('');
    }
  });

  it('recent_changes equals GET /v1/changes', async () => {
    const head = (await ok(t, '/v1/status')).head;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ limit: 2 }, '?limit=2'],
      [{ project: 'proj-par' }, '?project=proj-par'],
      [{ since: head.slice(0, 8) }, `?since=${head.slice(0, 8)}`],
      [{ since: '2000-01-01', limit: 3 }, '?since=2000-01-01&limit=3'],
    ];
    for (const [args, query] of cases) {
      const rest = await t.api('GET', `/v1/changes${query}`);
      const tool = await t.tool(client, 'recent_changes', args);
      expect(tool.isError).to.equal(false);
      // generated_at is the clock reading of each call; everything else must be the same bytes
      const strip = (s: string) => s.replace(/"generated_at":"[^"]+"/, '"generated_at":""');
      expect(strip(tool.text)).to.equal(strip(rest.text));
    }
  });

  it('recent_changes is byte-identical including generated_at when the clock reads the same', async () => {
    // Freeze the clock: the ManualClock is Date.now() plus an offset, so pin Date.now for the two calls.
    const realNow = Date.now;
    const frozen = realNow();
    Date.now = () => frozen;
    try {
      const rest = await t.api('GET', '/v1/changes?limit=5');
      const tool = await t.tool(client, 'recent_changes', { limit: 5 });
      expect(tool.text).to.equal(rest.text);
    } finally {
      Date.now = realNow;
    }
  });

  it('schema failures are the same envelope bytes on the route and the combined tool (two operations, one message)', async () => {
    const pairs: Array<[string, string, string, Record<string, unknown>]> = [
      ['/v1/nodes/Bad_Id/history', 'get_node_history', 'node_history', { id: 'Bad_Id' }],
      ['/v1/nodes/task-par/history/zzzzzzz', 'get_history_entry', 'node_history', { id: 'task-par', sha: 'zzzzzzz' }],
      ['/v1/nodes/task-par/history?limit=many', 'get_node_history', 'node_history', { id: 'task-par', limit: 'many' }],
    ];
    for (const [path, , name, args] of pairs) {
      const rest = await t.api('GET', path);
      const tool = await t.tool(client, name, args);
      expect(rest.status, path).to.equal(422);
      expect(tool.isError, path).to.equal(true);
      const toolBody = JSON.parse(tool.text);
      expect(toolBody.error.code, path).to.equal('validation_failed');
      expect(toolBody.error.details, path).to.deep.equal(rest.body.error.details);
      expect(tool.text, path).to.equal(rest.text);
    }
  });

  it('an unknown tool argument is 422 validation_failed (the tool schemas are closed)', async () => {
    for (const [name, args] of [
      ['node_history', { id: 'task-par', limt: 2 }],
      ['recent_changes', { since: '2000-01-01', projects: 'x' }],
    ] as const) {
      const tool = await t.tool(client, name, args);
      expect(tool.isError, name).to.equal(true);
      const body = JSON.parse(tool.text);
      expect(body.error.code, name).to.equal('validation_failed');
      expect(body.error.details.errors[0], name).to.deep.include({ keyword: 'additionalProperties' });
    }
  });

  it('errors carry the same envelope bytes', async () => {
    const pairs: Array<[string, string, Record<string, unknown>]> = [
      ['/v1/nodes/task-missing/history', 'node_history', { id: 'task-missing' }],
      ['/v1/nodes/task-par/history/deadbeef', 'node_history', { id: 'task-par', sha: 'deadbeef' }],
      ['/v1/changes?since=deadbeef', 'recent_changes', { since: 'deadbeef' }],
      ['/v1/changes?project=Bad_Slug', 'recent_changes', { project: 'Bad_Slug' }],
    ];
    for (const [path, name, args] of pairs) {
      const rest = await t.api('GET', path);
      const tool = await t.tool(client, name, args);
      expect(rest.status, path).to.be.oneOf([404, 422]);
      expect(tool.isError, path).to.equal(true);
      expect(tool.text, path).to.equal(rest.text);
    }
  });
});
