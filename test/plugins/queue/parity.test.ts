/**
 * show_queue's text equals the GET /v1/queue body byte for byte (same state, same frozen
 * instant), for several parameter sets and for a 422; render_queue renders the same queue.
 */
import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { freezeClock, post } from '../leases/helpers.js';
import { queue, startQueueServer } from './helpers.js';

describe('queue: show_queue and render_queue twins', function () {
  let t: TestServer;
  let alice: { id: string; token: string };
  let client: Client;
  let unfreeze: () => void;

  before(async () => {
    t = await startQueueServer();
    alice = await addPerson(t, 'Alice');
    unfreeze = freezeClock(t.clock);
    const nodes: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 12; i++) {
      const type = i % 4 === 0 ? 'issue' : 'task';
      nodes.push({ id: `${type}-tw-${i}`, type, summary: `twin ${i}`, project: i % 2 ? 'web' : 'api' });
    }
    nodes.push({ id: 'dec-tw-d', type: 'dec', summary: 'a decision *with* markdown', project: 'web' });
    nodes.push({ id: 'question-tw-q', type: 'question', summary: 'a question for alice', routed_to: alice.id });
    const res = await t.api('POST', '/v1/nodes', { body: { nodes } });
    expect(res.status, res.text).to.equal(200);
    await post(t, '/v1/nodes/task-tw-1/priority', t.adminToken, { priority: 'p1' });
    await post(t, '/v1/nodes/task-tw-3/claim', alice.token);
    client = await t.mcp(alice.token);
  });
  after(async () => {
    unfreeze();
    await t.close();
  });

  // the policy: REST sends it unless include_policy=false, the tool only when asked; the same flag, the same bytes
  const cases: Array<[string, Record<string, unknown>]> = [
    ['?include_policy=false', {}],
    ['', { include_policy: true }],
    ['?limit=5&offset=2&include_policy=false', { limit: 5, offset: 2 }],
    [
      '?project=web&type=task,issue&exclude_type=issue',
      { project: 'web', type: ['task', 'issue'], exclude_type: 'issue', include_policy: true },
    ],
    ['?readiness=human,untriaged&assignee=me&include_policy=0', { readiness: 'human,untriaged', assignee: 'me', include_policy: false }],
    ['?limit=500&include_policy=false', { limit: '500' }],
  ];

  for (const [query, args] of cases) {
    it(`GET /v1/queue${query} == show_queue ${JSON.stringify(args)}`, async () => {
      const rest = await queue(t, alice.token, query);
      const tool = await t.tool(client, 'show_queue', args);
      expect(rest.status).to.equal(200);
      expect(tool.isError).to.equal(false);
      expect(tool.text).to.equal(rest.text);
    });
  }

  it('a 422 is the same envelope on both', async () => {
    const rest = await queue(t, alice.token, '?readiness=robot');
    const tool = await t.tool(client, 'show_queue', { readiness: 'robot' });
    expect(rest.status).to.equal(422);
    expect(tool.isError).to.equal(true);
    expect(tool.text).to.equal(rest.text);
  });

  it("an unknown argument or a non-integer limit is a 422 on both (ajv's errors verbatim)", async () => {
    const tool = await t.tool(client, 'show_queue', { limit: 5, sort: 'age' });
    expect(tool.isError).to.equal(true);
    expect(tool.json.error.code).to.equal('validation_failed');
    expect(tool.json.error.details.errors[0]).to.include({ keyword: 'additionalProperties' });
    expect(tool.json.error.details.errors[0].params).to.deep.equal({ additionalProperty: 'sort' });
    const rest = await queue(t, alice.token, '?limit=ten');
    const twin = await t.tool(client, 'show_queue', { limit: 'ten' });
    expect(rest.status).to.equal(422);
    expect(rest.body.error.details.errors[0]).to.include({ instancePath: '/limit', keyword: 'pattern' });
    expect(twin.text).to.equal(rest.text);
  });

  it('render_queue: the same queue as markdown, items in ranked order with why lines and the sections', async () => {
    const json = (await queue(t, alice.token, '?limit=5')).body;
    const out = await t.tool(client, 'render_queue', { limit: 5 });
    expect(out.isError).to.equal(false);
    const text = out.text;
    expect(text).to.match(/^# Decision queue: /);
    expect(text).to.include(`Items 1-5 of ${json.total_count}, generated ${json.generated_at}.`);
    let last = -1;
    for (const item of json.items as Array<{ id: string; why: string }>) {
      const at = text.indexOf(`\`${item.id}\``);
      expect(at, item.id).to.be.greaterThan(last);
      last = at;
    }
    expect(text).to.include('a decision \\*with\\* markdown');
    expect(text).to.include('## Questions for you (1)');
    expect(text).to.include('`question-tw-q`');
    expect(text).to.include(`More: offset=5.`);
    expect(text).to.include('Ranking policy: docs/queue.md');
  });
});
