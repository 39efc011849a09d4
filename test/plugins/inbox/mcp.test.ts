/**
 * The inbox operations as MCP tools (plugins/inbox/index.ts), through the real MCP transport
 * and the real HTTP server: show_inbox shows a person the question routed to them, the same
 * bytes as GET /v1/inbox for the same state and filters; mark_inbox_read marks it as POST
 * /v1/inbox/read does; bad input is the same envelope as a tool error and changes nothing; an
 * inbox is the caller's own.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expect } from 'chai';
import { addPerson, putNodes, startTestServer, type TestServer } from '../../helpers/harness.js';
import { until } from '../../helpers/until.js';

interface Item {
  id: string;
  kind: string;
  node: string;
  read: boolean;
}

describe('inbox: the MCP tools', function () {
  this.timeout(60_000);
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };
  let bobMcp: Client;
  let aliceMcp: Client;

  before(async () => {
    t = await startTestServer();
    alice = await addPerson(t, 'Alice Asker');
    bob = await addPerson(t, 'Bob Steward');
    await putNodes(t, [{ id: 'task-inbox-mcp', title: 'Ship the tools', summary: 'Ship them', project: 'proj-root' }]);
    const st = await t.api('POST', `/v1/nodes/${bob.id}/edges`, { body: { type: 'stewards', to: 'task-inbox-mcp' } });
    expect(st.status, st.text).to.equal(200);
    bobMcp = await t.mcp(bob.token);
    aliceMcp = await t.mcp(alice.token);
  });
  after(async () => t.close());

  it('show_inbox over MCP lists the question routed to the caller, the same bytes as GET /v1/inbox', async () => {
    const q = await t.tool(aliceMcp, 'ask_question', { text: 'When do the inbox tools ship?', mentions: ['task-inbox-mcp'] });
    expect(q.isError, q.text).to.equal(false);
    expect(q.json.routed_to).to.equal(bob.id);
    // the inbox derives graph events from commits, which may trail the answer by a moment
    let last = '';
    const shown = await until(
      async () => {
        const s = await t.tool(bobMcp, 'show_inbox', {});
        last = s.text;
        return (s.json.items as Item[]).some((i) => i.node === q.json.id) ? s : undefined;
      },
      () => `the question in the inbox; it held ${last}`,
    );
    expect(shown.isError).to.equal(false);
    const item = (shown.json.items as Item[]).find((i) => i.node === q.json.id)!;
    expect(item).to.include({ kind: 'question_routed', read: false });
    expect(shown.json.person).to.equal(bob.id);
    expect(shown.json.unread_count).to.be.at.least(1);
    expect(shown.text).to.equal((await t.api('GET', '/v1/inbox', { token: bob.token })).text);
    const filtered = await t.tool(bobMcp, 'show_inbox', { kind: 'question_routed', unread: true, limit: 5 });
    expect(filtered.json.items.map((i: Item) => i.node)).to.deep.equal([q.json.id]);
    expect(filtered.text).to.equal((await t.api('GET', '/v1/inbox?kind=question_routed&unread=true&limit=5', { token: bob.token })).text);
    // Alice's inbox is her own: not Bob's item
    const hers = await t.tool(aliceMcp, 'show_inbox', {});
    expect(hers.json.person).to.equal(alice.id);
    expect((hers.json.items as Item[]).filter((i) => i.node === q.json.id)).to.deep.equal([]);

    // mark it read over MCP; an unknown id is skipped
    const marked = await t.tool(bobMcp, 'mark_inbox_read', { ids: [item.id, 'ev-999999'] });
    expect(marked.isError, marked.text).to.equal(false);
    expect(marked.json).to.include({ marked: 1 });
    expect(marked.json.skipped).to.deep.equal(['ev-999999']);
    const after = await t.api('GET', '/v1/inbox', { token: bob.token });
    expect((after.body.items as Item[]).find((i) => i.id === item.id)!.read).to.equal(true);
    // the same request again over both adapters: nothing more to mark, the same bytes
    const rest = await t.api('POST', '/v1/inbox/read', { token: bob.token, body: { ids: [item.id, 'ev-999999'] } });
    expect(rest.status, rest.text).to.equal(200);
    const again = await t.tool(bobMcp, 'mark_inbox_read', { ids: [item.id, 'ev-999999'] });
    expect(again.json.marked).to.equal(0);
    expect(again.text).to.equal(rest.text);
  });

  it('bad input: the same envelope as REST, a tool error, nothing marked', async () => {
    // an unread item that a wrongly accepted `all: true` would mark
    const q = await t.tool(aliceMcp, 'ask_question', { text: 'Who reviews the inbox tools?', mentions: ['task-inbox-mcp'] });
    expect(q.isError, q.text).to.equal(false);
    let last: unknown;
    const before = await until(
      async () => {
        const body = (await t.api('GET', '/v1/inbox?unread=true', { token: bob.token })).body;
        last = body;
        return (body.items as Item[]).some((i) => i.node === q.json.id) ? body : undefined;
      },
      () => `the question in the inbox; it held ${JSON.stringify(last)}`,
    );
    expect(before.unread_count).to.be.at.least(1);
    const cases: Array<[string, Record<string, unknown>, string, string, unknown?]> = [
      ['mark_inbox_read', {}, 'POST', '/v1/inbox/read', {}],
      ['mark_inbox_read', { ids: ['ev-1'], all: true }, 'POST', '/v1/inbox/read', { ids: ['ev-1'], all: true }],
      ['mark_inbox_read', { ids: ['ev-1'], through: 3 }, 'POST', '/v1/inbox/read', { ids: ['ev-1'], through: 3 }],
      ['show_inbox', { kind: 'everything' }, 'GET', '/v1/inbox?kind=everything'],
    ];
    for (const [tool, args, method, path, body] of cases) {
      const tl = await t.tool(bobMcp, tool, args);
      const r = await t.api(method, path, { token: bob.token, ...(body === undefined ? {} : { body }) });
      expect(r.status, r.text).to.equal(422);
      expect(tl.isError, tl.text).to.equal(true);
      expect(tl.json.error.code).to.equal('validation_failed');
      expect(tl.text, `${tool} ${JSON.stringify(args)}`).to.equal(r.text);
    }
    expect((await t.api('GET', '/v1/inbox?unread=true', { token: bob.token })).body).to.deep.equal(before);
  });
});
