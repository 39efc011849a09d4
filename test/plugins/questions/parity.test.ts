/**
 * One core, two adapters: `ask_question`'s text equals the POST /v1/questions body. Errors are
 * compared byte for byte on unchanged state; a successful ask creates a node, so the two
 * answers can differ only in the generated id and the revision (the tool's node is stamped
 * `authored_via: mcp`), which are normalized.
 */
import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { ask, put, startQuestionsServer, steward } from './helpers.js';

describe('questions: ask_question is the twin of POST /v1/questions', function () {
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };
  let client: Client;

  before(async () => {
    t = await startQuestionsServer();
    alice = await addPerson(t, 'Alice');
    bob = await addPerson(t, 'Bob');
    await put(t, [{ id: 'task-tw', type: 'task', summary: 'twin', project: 'web' }]);
    await steward(t, bob.id, 'task-tw');
    client = await t.mcp(alice.token);
  });
  after(async () => t.close());

  it('is listed with its input schema', async () => {
    const { tools } = await client.listTools();
    const tool = tools.find((x) => x.name === 'ask_question');
    expect(tool, 'ask_question listed').to.not.equal(undefined);
    expect(tool!.inputSchema.required).to.deep.equal(['text']);
  });

  it('success: same bytes up to the generated id and revision', async () => {
    const args = { text: 'Twin question?', title: 'Twin', mentions: ['task-tw'], project: 'web' };
    const rest = await ask(t, alice.token, args);
    const tool = await t.tool(client, 'ask_question', args);
    expect(rest.status, rest.text).to.equal(201);
    expect(tool.isError).to.equal(false);
    expect(rest.body.id).to.equal('question-twin');
    expect(tool.json.id).to.equal('question-twin-2');
    const norm = (s: string) => s.replace(/question-twin(-2)?/g, 'ID').replace(/"revision":"[0-9a-f]{40}"/g, '"revision":"R"');
    expect(norm(tool.text)).to.equal(norm(rest.text));
    expect(tool.json).to.include({ routed_to: bob.id, via: 'task-tw', asker: alice.id });
    expect((await t.api('GET', '/v1/nodes/question-twin-2')).body.frontmatter.authored_via).to.equal('mcp');
  });

  it('errors: the same envelope bytes (400 slug, 404 mention, 422 mentions)', async () => {
    const cases: Array<[Record<string, unknown>, number]> = [
      [{ text: 'q', project: 'Not A Slug' }, 400],
      [{ text: 'q', mentions: ['task-missing'] }, 404],
      [{ text: 'q', mentions: ['Bad_Id'] }, 422],
      [{ text: '   ' }, 422],
    ];
    for (const [args, status] of cases) {
      const rest = await ask(t, alice.token, args);
      const tool = await t.tool(client, 'ask_question', args);
      expect(rest.status, rest.text).to.equal(status);
      expect(tool.isError).to.equal(true);
      expect(tool.text).to.equal(rest.text);
    }
  });

  it("an unknown field is 422 validation_failed with ajv's error, the same bytes over REST and MCP; nothing is filed", async () => {
    const before = (await t.api('GET', '/v1/status')).body.node_count;
    const args = { text: 'q', urgency: 'high' };
    const rest = await ask(t, alice.token, args);
    const tool = await t.tool(client, 'ask_question', args);
    expect(rest.status, rest.text).to.equal(422);
    expect(rest.body.error.code).to.equal('validation_failed');
    expect(rest.body.error.details.errors).to.deep.equal([
      {
        instancePath: '',
        schemaPath: '#/additionalProperties',
        keyword: 'additionalProperties',
        params: { additionalProperty: 'urgency' },
        message: 'must NOT have additional properties',
      },
    ]);
    expect(tool.isError).to.equal(true);
    expect(tool.text).to.equal(rest.text);
    expect((await t.api('GET', '/v1/status')).body.node_count).to.equal(before);
  });
});
