/**
 * One core, two adapters: the `run_workflow` tool's text equals the body of
 * POST /v1/workflows/{id}/run byte for byte. Refusals are compared on unchanged state; a
 * success is compared through an idempotency key (the second call, through the other adapter,
 * changes nothing), and two fresh starts agree once their run ids are set aside.
 */
import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { defineWorkflow, nodeCount, startRun, startWorkflowServer, unboundToken } from './helpers.js';

describe('workflows: run_workflow and POST /v1/workflows/{id}/run return the same bytes', function () {
  let t: TestServer;
  let client: Client;

  before(async () => {
    t = await startWorkflowServer();
    const bob = await addPerson(t, 'Bob');
    await defineWorkflow(
      t,
      'wf-live',
      [
        { id: 'a', capability: 'node' },
        { id: 'b', needs: ['a'], approval: true },
      ],
      bob.token,
    );
    await defineWorkflow(t, 'wf-proposed', [{ id: 'a' }]);
    client = await t.mcp();
  });
  after(async () => {
    await t.close();
  });

  async function same(args: Record<string, unknown>, body: unknown, status: number, token?: string, mcp = client) {
    const before = await nodeCount(t);
    const rest = await startRun(t, String(args.id), body, token);
    const tool = await t.tool(mcp, 'run_workflow', args);
    expect(rest.status, rest.text).to.equal(status);
    expect(tool.isError).to.equal(status >= 400);
    expect(tool.text).to.equal(rest.text);
    if (status >= 400) expect(await nodeCount(t)).to.equal(before);
    return rest.body;
  }

  it('refusals: proposed 409, unknown 404, malformed 422, not a workflow 422, bad inputs 422, unbound 403', async () => {
    expect((await same({ id: 'wf-proposed' }, {}, 409)).error.details.reason).to.equal('workflow_not_active');
    await same({ id: 'wf-nope' }, {}, 404);
    await same({ id: 'Not_An_Id' }, {}, 422);
    await same({ id: 'proj-root' }, {}, 422);
    await same({ id: 'wf-live', inputs: [1] }, { inputs: [1] }, 422);
    await same({ id: 'wf-live', idempotency_key: 'bad key' }, { idempotency_key: 'bad key' }, 422);
    // closed input: an unknown field is 422 with ajv's error, the same bytes from both adapters
    const unknown = await same({ id: 'wf-live', input: { a: 1 } }, { input: { a: 1 } }, 422);
    expect(unknown.error.code).to.equal('validation_failed');
    expect(unknown.error.details.errors).to.deep.equal([
      {
        instancePath: '',
        schemaPath: '#/additionalProperties',
        keyword: 'additionalProperties',
        params: { additionalProperty: 'input' },
        message: 'must NOT have additional properties',
      },
    ]);
    const ghost = await unboundToken(t);
    await same({ id: 'wf-live' }, {}, 403, ghost, await t.mcp(ghost));
  });

  it('success: the same idempotency key through the other adapter answers the same bytes and starts nothing', async () => {
    const before = await nodeCount(t);
    const body = await same(
      { id: 'wf-live', inputs: { env: 'prod' }, idempotency_key: 'deploy-42' },
      { inputs: { env: 'prod' }, idempotency_key: 'deploy-42' },
      201,
    );
    expect(body.run_id).to.equal('run-live-1');
    expect(await nodeCount(t), 'one run, not two').to.equal(before + 1);
    const tool = await t.tool(client, 'run_workflow', { id: 'wf-live', inputs: { env: 'prod' }, idempotency_key: 'fresh-1' });
    const rest = await startRun(t, 'wf-live', { inputs: { env: 'prod' }, idempotency_key: 'fresh-1' });
    expect(rest.status).to.equal(201);
    expect(rest.text).to.equal(tool.text);
    expect(tool.json.run_id).to.equal('run-live-2');
  });

  it('two fresh starts, one per adapter, differ only in run id and revision', async () => {
    const rest = await startRun(t, 'wf-live', { inputs: { n: 1 } });
    const tool = await t.tool(client, 'run_workflow', { id: 'wf-live', inputs: { n: 1 } });
    expect(rest.status).to.equal(201);
    expect(tool.isError).to.equal(false);
    expect(rest.body.run_id).to.not.equal(tool.json.run_id);
    const strip = (text: string, runId: string, revision: string) => text.split(runId).join('<run>').split(revision).join('<rev>');
    expect(strip(tool.text, tool.json.run_id, tool.json.revision)).to.equal(strip(rest.text, rest.body.run_id, rest.body.revision));
    const node = await t.api('GET', `/v1/nodes/${tool.json.run_id}`);
    expect(node.body.frontmatter.authored_via).to.equal('mcp');
    expect(node.body.frontmatter.lineage.inputs).to.deep.equal({ n: 1 });
  });

  it('the tool is listed with its input schema', async () => {
    const { tools } = await client.listTools();
    const tool = tools.find((x) => x.name === 'run_workflow');
    expect(tool, 'run_workflow listed').to.not.equal(undefined);
    expect(tool!.inputSchema.required).to.deep.equal(['id']);
  });
});
