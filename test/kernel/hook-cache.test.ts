import { expect } from 'chai';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { corePlugin } from '../../plugins/core/index.js';
import { addPerson, md, putNodes, startTestServer, type TestServer } from '../helpers/harness.js';

/**
 * Hook verdicts are cached on what the hook reads (kernel/hooks.ts, SchemaPack.hook_inputs): the
 * seed pack's status table is asked once per (from, to) and not once per node, which took a
 * sandbox round trip out of every create; a graph schema's hook still sees, and is keyed on,
 * its whole input; the self-approval question stays one per (author, actor).
 */
describe('kernel: hook verdict cache keyed on what the hook reads (through the server)', function () {
  this.timeout(60_000);
  let t: TestServer;
  let reviewer: { id: string; token: string };
  const scrapeToken = 'metrics-scrape-secret-hook-cache-0123';

  before(async () => {
    t = await startTestServer({ plugins: [corePlugin], config: { metricsToken: scrapeToken, metricsPort: 0 } });
    reviewer = await addPerson(t, 'Reviewer');
  });
  after(async () => t.close());

  /**
   * Calls that reached the sandbox so far and answered (allowed or denied). A seed hook's call
   * that times out on a starved machine is asked once more and not cached: counted as a timeout,
   * it is not a second question.
   */
  async function sandboxCalls(): Promise<number> {
    const text = await (await fetch(t.server.metricsUrl!)).text();
    const family = parsePrometheusTextFormat(text).find((f) => f.name === 'workgraph_sandbox_calls_total');
    return (family?.metrics ?? [])
      .filter((m) => ['allowed', 'denied'].includes(m.labels?.outcome ?? ''))
      .reduce((sum, m) => sum + Number(m.value), 0);
  }

  it('creating many tasks asks the seed transition table once; a denied move is denied for every node alike', async () => {
    const before = await sandboxCalls();
    for (let i = 0; i < 6; i++) {
      const [r] = await putNodes(t, [md({ id: `task-cached-${i}`, type: 'task', summary: `cached ${i}` }, `body ${i}`)]);
      expect(r.status, JSON.stringify(r)).to.equal('created');
    }
    expect((await sandboxCalls()) - before).to.be.at.most(1);

    for (const id of ['task-cached-0', 'task-cached-1']) {
      expect((await t.api('POST', `/v1/nodes/${id}/status`, { body: { status: 'done' } })).status).to.equal(200);
      const denied = await t.api('POST', `/v1/nodes/${id}/status`, { body: { status: 'review' } });
      expect(denied.status, denied.text).to.equal(409);
      expect(denied.body.error.code).to.equal('transition_denied');
      expect(denied.body.error.message).to.match(/cannot move from 'done' to 'review'/);
    }
    expect((await t.api('GET', '/v1/nodes/task-cached-1')).body.frontmatter.status).to.equal('done');
  });

  it("a graph schema's hook is asked about every node: its verdict may depend on anything in it", async () => {
    const put = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          md({
            id: 'schema-summary-gate',
            type: 'schema',
            summary: 'no forbidden issues',
            applies_to: 'issue',
            hooks: {
              transition:
                "(input) => String(input.node.summary).includes('forbidden') ? { allow: false, reason: 'summary says forbidden' } : { allow: true }",
            },
          }),
        ],
      },
    });
    expect(put.status, put.text).to.equal(200);
    const act = await t.api('POST', '/v1/nodes/schema-summary-gate/status', { token: reviewer.token, body: { status: 'active' } });
    expect(act.status, act.text).to.equal(200);

    const before = await sandboxCalls();
    const fine = await t.api('POST', '/v1/nodes', { body: { nodes: [md({ id: 'issue-fine', type: 'issue', summary: 'a fine issue' })] } });
    expect(fine.status, fine.text).to.equal(200);
    const gated = await t.api('POST', '/v1/nodes', {
      body: { nodes: [md({ id: 'issue-gated', type: 'issue', summary: 'a forbidden issue' })] },
    });
    expect(gated.status, gated.text).to.equal(207);
    expect(gated.body.results[0].error).to.include({ code: 'transition_denied', message: 'summary says forbidden' });
    expect((await t.api('GET', '/v1/nodes/issue-gated')).status).to.equal(404);
    // the graph hook twice (a different node each time); the seed table at most once more
    expect((await sandboxCalls()) - before).to.be.at.least(2);
  });

  it("the seed table's self-approval answer is not shared between authors: another's approval allowed first, one's own is still denied", async () => {
    const author = await addPerson(t, 'Author');
    const wf = (id: string) => md({ id, type: 'wf', summary: `workflow ${id}`, steps: [{ id: 'build' }] });
    for (const [id, token] of [
      ['wf-by-reviewer', reviewer.token],
      ['wf-by-author', author.token],
    ] as const) {
      const res = await t.api('POST', '/v1/nodes', { token, body: { nodes: [wf(id)] } });
      expect(res.status, res.text).to.equal(200);
    }
    const other = await t.api('POST', '/v1/nodes/wf-by-reviewer/status', { token: author.token, body: { status: 'active' } });
    expect(other.status, other.text).to.equal(200);
    const own = await t.api('POST', '/v1/nodes/wf-by-author/status', { token: author.token, body: { status: 'active' } });
    expect(own.status, own.text).to.equal(409);
    expect(own.body.error.code).to.equal('transition_denied');
    const approved = await t.api('POST', '/v1/nodes/wf-by-author/status', { token: reviewer.token, body: { status: 'active' } });
    expect(approved.status, approved.text).to.equal(200);
  });
});
