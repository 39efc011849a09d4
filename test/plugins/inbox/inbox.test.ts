/**
 * Issue 24 part 5, the API behind the app's inbox (plugins/inbox): GET /v1/inbox makes items
 * from the event log (a question routed to me, a review requested of me, a mention, my claim
 * taken over, my claim about to expire), never for the actor's own change; POST
 * /v1/inbox/read marks items read per person and survives a restart; bad input is the
 * envelope and changes nothing.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { createLogger } from '../../../kernel/config.js';
import { startServer } from '../../../kernel/server.js';
import { allPlugins } from '../../../scripts/plugins.js';
import { addPerson, putNodes, startTestServer, type ApiResponse, type TestServer, testServerConfig } from '../../helpers/harness.js';
import { until } from '../../helpers/until.js';

interface Item {
  id: string;
  kind: string;
  node: string;
  read: boolean;
  event_id: number | null;
  actor: { name: string } | null;
}

/** Reads the inbox until `check` holds (the log derives graph events from commits, which may trail the answer by a moment). */
async function inboxWhere(t: TestServer, token: string, check: (items: Item[]) => boolean, query = ''): Promise<ApiResponse> {
  let last: ApiResponse | undefined;
  return until(
    async () => {
      last = await t.api('GET', `/v1/inbox${query}`, { token });
      expect(last.status, last.text).to.equal(200);
      return check(last.body.items) ? last : undefined;
    },
    () => `the inbox to match; it held: ${JSON.stringify(last?.body.items)}`,
    10_000,
    { every: 25 },
  );
}

describe('inbox: items from events, read state per person', function () {
  this.timeout(60_000);
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };

  before(async () => {
    t = await startTestServer({ keepData: true });
    alice = await addPerson(t, 'Alice Asker');
    bob = await addPerson(t, 'Bob Steward');
    await putNodes(t, [
      { id: 'task-inbox-a', title: 'Deploy the inbox', summary: 'Deploy it', project: 'proj-root' },
      { id: 'task-inbox-b', title: 'Review the inbox', summary: 'Review it' },
      { id: 'task-inbox-c', title: 'Claim me', summary: 'Claim it' },
    ]);
    const st = await t.api('POST', `/v1/nodes/${bob.id}/edges`, { body: { type: 'stewards', to: 'task-inbox-a' } });
    expect(st.status, st.text).to.equal(200);
  });
  let closed = false;
  after(async () => {
    if (!closed) await t?.close();
    if (t) rmSync(t.dataDir, { recursive: true, force: true });
  });

  it('a question routed to Bob is in his inbox (unread, by Alice), not in Alice’s; his answer is in hers', async () => {
    const q = await t.api('POST', '/v1/questions', {
      token: alice.token,
      body: { text: 'When does the inbox ship?', mentions: ['task-inbox-a'] },
    });
    expect(q.status, q.text).to.equal(201);
    expect(q.body.routed_to).to.equal(bob.id);
    const res = await inboxWhere(t, bob.token, (items) => items.some((i) => i.node === q.body.id));
    const item = (res.body.items as Item[]).find((i) => i.node === q.body.id)!;
    expect(item).to.include({ kind: 'question_routed', read: false });
    expect(item.actor?.name).to.equal('Alice Asker');
    expect(item.event_id).to.be.a('number');
    expect(res.body.unread_count).to.be.at.least(1);
    expect(res.body.person).to.equal(bob.id);
    const hers = await t.api('GET', '/v1/inbox', { token: alice.token });
    expect((hers.body.items as Item[]).filter((i) => i.node === q.body.id)).to.deep.equal([]);
    // Bob answers: now Alice hears of it, and Bob (who answered) does not
    const a = await t.api('POST', `/v1/questions/${q.body.id}/answer`, { token: bob.token, body: { summary: 'Friday, after the review' } });
    expect(a.status, a.text).to.equal(201);
    await inboxWhere(t, alice.token, (items) => items.some((i) => i.kind === 'question_answered' && i.node === q.body.id));
    const his = await t.api('GET', '/v1/inbox?kind=question_answered', { token: bob.token });
    expect(his.body.items).to.deep.equal([]);
  });

  it('a review requested of Bob and a mention of him make one item each', async () => {
    let r = await t.api('POST', '/v1/nodes/task-inbox-b/edges', { token: alice.token, body: { type: 'review-requested', to: bob.id } });
    expect(r.status, r.text).to.equal(200);
    r = await t.api('POST', '/v1/nodes/task-inbox-c/edges', { token: alice.token, body: { type: 'mentions', to: bob.id } });
    expect(r.status, r.text).to.equal(200);
    const res = await inboxWhere(t, bob.token, (items) => items.some((i) => i.kind === 'mention'));
    const items = res.body.items as Item[];
    expect(items.filter((i) => i.kind === 'review_requested').map((i) => i.node)).to.deep.equal(['task-inbox-b']);
    expect(items.filter((i) => i.kind === 'mention').map((i) => i.node)).to.deep.equal(['task-inbox-c']);
    // a later change of the same node is not a second item
    r = await t.api('POST', '/v1/nodes/task-inbox-b/priority', { token: alice.token, body: { priority: 'p2' } });
    expect(r.status, r.text).to.equal(200);
    const again = await inboxWhere(t, bob.token, () => true, '?kind=review_requested');
    expect((again.body.items as Item[]).map((i) => i.node)).to.deep.equal(['task-inbox-b']);
  });

  it('a claim about to expire, taken over by an admin, or expired reaches the holder', async () => {
    let r = await t.api('POST', '/v1/nodes/task-inbox-c/claim', { token: bob.token });
    expect(r.status, r.text).to.equal(200);
    // a fifth of the claim TTL before the end: "expires soon"
    const tenant = t.server.services.tenants.get(t.org)!;
    t.clock.advance(Math.ceil(tenant.config.limits.claim_ttl_ms * 0.85));
    await inboxWhere(t, bob.token, (items) => items.some((i) => i.kind === 'claim_expiring' && i.node === 'task-inbox-c'));
    r = await t.api('POST', '/v1/nodes/task-inbox-c/claim', { body: { force: true } });
    expect(r.status, r.text).to.equal(200);
    const res = await inboxWhere(t, bob.token, (items) => items.some((i) => i.kind === 'claim_taken_over'));
    const items = res.body.items as Item[];
    expect(items.find((i) => i.kind === 'claim_taken_over')).to.include({ node: 'task-inbox-c', read: false });
    // no longer his: no longer about to expire
    expect(items.filter((i) => i.kind === 'claim_expiring')).to.deep.equal([]);
    // a claim that lapses: the server's expiry sweep announces it, and the holder hears it
    r = await t.api('POST', '/v1/nodes/task-inbox-a/claim', { token: bob.token });
    expect(r.status, r.text).to.equal(200);
    t.clock.advance(tenant.config.limits.claim_ttl_ms + 1000);
    await inboxWhere(t, bob.token, (list) => list.some((i) => i.kind === 'claim_expired' && i.node === 'task-inbox-a'));
  });

  it('marks items read by id, and all of them up to the event the reader saw', async () => {
    const before = await inboxWhere(t, bob.token, (items) => items.length >= 3);
    const [first, ...rest] = before.body.items as Item[];
    let r = await t.api('POST', '/v1/inbox/read', { token: bob.token, body: { ids: [first!.id, 'ev-999999999'] } });
    expect(r.status, r.text).to.equal(200);
    expect(r.body).to.deep.equal({ marked: 1, skipped: ['ev-999999999'], unread_count: before.body.unread_count - 1 });
    const unread = await t.api('GET', '/v1/inbox?unread=true', { token: bob.token });
    expect((unread.body.items as Item[]).map((i) => i.id)).to.deep.equal(rest.filter((i) => !i.read).map((i) => i.id));
    // marking the same again changes nothing
    r = await t.api('POST', '/v1/inbox/read', { token: bob.token, body: { ids: [first!.id] } });
    expect(r.body).to.include({ marked: 0 });

    // all, up to the event the reader saw: an item of a later event stays unread
    const through = unread.body.through as number;
    const later = await t.api('POST', '/v1/nodes/task-inbox-a/edges', {
      token: alice.token,
      body: { type: 'review-requested', to: bob.id },
    });
    expect(later.status, later.text).to.equal(200);
    await inboxWhere(t, bob.token, (items) => items.some((i) => i.kind === 'review_requested' && i.node === 'task-inbox-a'));
    r = await t.api('POST', '/v1/inbox/read', { token: bob.token, body: { all: true, through } });
    expect(r.status, r.text).to.equal(200);
    const after = await t.api('GET', '/v1/inbox?unread=true', { token: bob.token });
    expect((after.body.items as Item[]).map((i) => `${i.kind}:${i.node}`)).to.deep.equal(['review_requested:task-inbox-a']);
    expect(after.body.unread_count).to.equal(1);
  });

  it('bad input is the envelope and changes nothing', async () => {
    const state = await t.api('GET', '/v1/inbox', { token: bob.token });
    for (const body of [
      {},
      { ids: ['ev-1'], all: true },
      { ids: [] },
      { through: 3 },
      { all: true, through: -1 },
      { ids: 'ev-1' },
      { all: true, extra: 1 },
    ]) {
      const r = await t.api('POST', '/v1/inbox/read', { token: bob.token, body });
      expect(r.status, `${JSON.stringify(body)}: ${r.text}`).to.be.oneOf([400, 422]);
      expect(r.body.error.code).to.be.a('string');
    }
    for (const q of ['?limit=0', '?limit=301', '?kind=nope', '?unread=maybe']) {
      const r = await t.api('GET', `/v1/inbox${q}`, { token: bob.token });
      expect(r.status, `${q}: ${r.text}`).to.be.oneOf([400, 422]);
    }
    const unchanged = await t.api('GET', '/v1/inbox', { token: bob.token });
    expect(unchanged.body.unread_count).to.equal(state.body.unread_count);
    expect((await t.api('GET', '/v1/inbox', { token: null })).status).to.equal(401);
  });
  it('after a restart the same items come back from the log, with what was read', async () => {
    const seen = await t.api('GET', '/v1/inbox', { token: bob.token });
    await t.close();
    closed = true;
    const second = await startServer({
      config: await testServerConfig(t.dataDir),
      plugins: allPlugins,
      clock: t.clock,
      log: createLogger(() => undefined),
    });
    try {
      const res = await fetch(`${second.url}/v1/inbox`, { headers: { authorization: `Bearer ${bob.token}` } });
      const body = (await res.json()) as { items: Item[]; unread_count: number };
      expect(res.status).to.equal(200);
      const strip = (items: Item[]) => items.filter((i) => i.kind !== 'claim_expiring').map((i) => `${i.id}:${i.kind}:${i.node}:${i.read}`);
      expect(strip(body.items)).to.deep.equal(strip(seen.body.items));
      expect(body.unread_count).to.equal(seen.body.unread_count);
    } finally {
      await second.close();
      rmSync(t.dataDir, { recursive: true, force: true });
    }
  });
});
