/**
 * Issue 27 item 5: the ranked candidate index (rank.ts) and the per-combination counts, kept
 * per commit, answer GET /v1/queue byte for byte as the full pass over every candidate and as
 * bookkeeping rebuilt from scratch, after a mix of creates, updates, status changes, edge
 * changes, deletes, leases, mutes and clock moves (more candidates than one chunk holds, with
 * spread-out timestamps so the chunks' score bounds differ).
 */
import { expect } from 'chai';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { bookOf } from '../../../plugins/queue/book.js';
import { passSettings } from '../../../plugins/queue/pass.js';
import { rankOf } from '../../../plugins/queue/rank.js';
import { directWrite } from '../history/helpers.js';
import { DAY, freezeClock, post, tenantOf } from '../leases/helpers.js';
import { queue, startQueueServer } from './helpers.js';

const QUERIES = [
  '',
  '?limit=1',
  '?limit=7&offset=3',
  '?limit=100',
  '?limit=100&offset=150',
  '?offset=1000',
  '?type=task',
  '?exclude_type=task',
  '?readiness=human',
  '?readiness=agent,untriaged&limit=13',
  '?type=task,issue&exclude_type=issue&offset=1',
];

describe('queue: the ranked index answers as the full pass and as a rebuild', function () {
  this.timeout(180_000);
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };
  let unfreeze: () => void;
  const HOUR = DAY / 24;

  before(async () => {
    t = await startQueueServer();
    alice = await addPerson(t, 'Alice');
    bob = await addPerson(t, 'Bob');
    unfreeze = freezeClock(t.clock);
  });
  after(async () => {
    passSettings.index = true;
    unfreeze();
    await t.close();
  });

  const id = (i: number) => (i % 5 === 0 ? `issue-rk-${i}` : `task-rk-${i}`);

  async function ok(res: Promise<{ status: number; text: string }>): Promise<void> {
    const r = await res;
    expect(r.status, r.text).to.be.oneOf([200, 201]);
  }

  /** Every query, for three callers: the index equals the full pass; then a rebuilt book equals both. */
  async function same(label: string): Promise<void> {
    const book = bookOf(tenantOf(t));
    const indexed = new Map<string, string>();
    for (const token of [alice.token, bob.token, t.adminToken]) {
      for (const q of QUERIES) {
        passSettings.index = true;
        const a = await queue(t, token, q);
        passSettings.index = false;
        const b = await queue(t, token, q);
        passSettings.index = true;
        expect(a.status, a.text).to.equal(200);
        expect(a.text, `${label}: GET /v1/queue${q}`).to.equal(b.text);
        indexed.set(`${token} ${q}`, a.text);
      }
    }
    book.rebuild();
    for (const q of QUERIES) {
      const c = await queue(t, alice.token, q);
      expect(c.text, `${label}, rebuilt: GET /v1/queue${q}`).to.equal(indexed.get(`${alice.token} ${q}`));
    }
  }

  it('creates over several days, then updates, statuses, edges, leases and mutes, then deletes and time', async () => {
    // 400 candidates in 8 batches a day or so apart, three projects, a few decisions and wake dates
    for (let batch = 0; batch < 8; batch++) {
      const nodes: Array<Record<string, unknown>> = [];
      for (let i = batch * 50; i < (batch + 1) * 50; i++) {
        const node: Record<string, unknown> = { id: id(i), type: id(i).split('-')[0], summary: `ranked ${i}` };
        if (i % 3) node.project = i % 3 === 1 ? 'api' : 'web';
        if (i % 41 === 0) node.wake = new Date(t.clock.now() + (i % 2 ? 5 : -5) * DAY).toISOString().slice(0, 10);
        nodes.push(node);
      }
      if (batch % 3 === 0) nodes.push({ id: `dec-rk-${batch}`, type: 'dec', summary: `decide ${batch}`, status: 'proposed' });
      await ok(t.api('POST', '/v1/nodes', { body: { nodes } }));
      t.clock.advance(DAY + batch * 3 * HOUR);
    }
    await same('after the creates');
    expect((await queue(t, alice.token, '')).body.dormant).to.be.greaterThan(0);

    // priorities, readiness, statuses, blocks edges, leases, mutes
    for (let i = 0; i < 400; i += 13) await ok(post(t, `/v1/nodes/${id(i)}/priority`, t.adminToken, { priority: `p${1 + (i % 3)}` }));
    for (let i = 3; i < 400; i += 29) await ok(post(t, `/v1/nodes/${id(i)}/readiness`, t.adminToken, { readiness: 'agent' }));
    for (let i = 7; i < 400; i += 31) {
      await ok(post(t, `/v1/nodes/${id(i)}/edges`, t.adminToken, { type: 'blocks', to: id((i * 7) % 400) }));
      await ok(post(t, `/v1/nodes/${id((i * 7) % 400)}/edges`, t.adminToken, { type: 'blocks', to: id((i * 11) % 400) }));
    }
    for (let i = 11; i < 400; i += 37) {
      const status = id(i).startsWith('issue') ? 'resolved' : i % 2 ? 'done' : 'review';
      await ok(post(t, `/v1/nodes/${id(i)}/status`, t.adminToken, { status }));
    }
    await ok(post(t, `/v1/nodes/${id(2)}/edges`, t.adminToken, { type: 'review-requested', to: alice.id }));
    await ok(post(t, `/v1/nodes/${id(1)}/claim`, alice.token));
    await ok(post(t, `/v1/nodes/${id(4)}/claim`, bob.token));
    await ok(post(t, `/v1/nodes/${id(6)}/claim`, bob.token));
    await ok(post(t, `/v1/nodes/${id(6)}/reserve`, bob.token));
    await ok(post(t, `/v1/nodes/${id(8)}/claim`, alice.token));
    await ok(post(t, `/v1/nodes/${id(8)}/reserve`, alice.token));
    for (const i of [9, 19, 399]) await ok(t.api('POST', '/v1/queue/mutes', { token: alice.token, body: { id: id(i) } }));
    t.clock.advance(2 * HOUR);
    await same('after updates, statuses, edges, leases and mutes');
    const mid = (await queue(t, alice.token, '')).body;
    expect([mid.muted, mid.reserved, mid.counts_by_suggest.blocked, mid.counts_by_readiness.human]).to.not.include(0);
    expect(mid.items[0].id).to.equal(id(8)); // alice's own reservation first

    // edges removed, a reopen, resolves edges, deletes (blockers among them), then the clock
    for (let i = 7; i < 200; i += 31) {
      await ok(t.api('DELETE', `/v1/nodes/${id(i)}/edges`, { body: { type: 'blocks', to: id((i * 7) % 400) } }));
    }
    await ok(post(t, `/v1/nodes/${id(11)}/status`, t.adminToken, { status: 'open' }));
    await ok(post(t, `/v1/nodes/${id(12)}/edges`, t.adminToken, { type: 'resolves', to: id(15) }));
    const doomed = [id(7 * 7), id(21), id(22), id(23), id(123), id(250)];
    await directWrite(t, { op: 'delete_node', via: 'rest' }, (d) => {
      for (const x of doomed) d.delete(x);
    });
    await same('after edge removals, a reopen, a resolver and deletes');
    t.clock.advance(30 * DAY);
    await same('30 days later (close suggestions, saturated clock terms)');
    expect((await queue(t, alice.token, '')).body.counts_by_suggest.close).to.be.greaterThan(0);

    // seven in eight of the newer half go at once: their chunks shrink and join their successors
    const rank = rankOf(bookOf(tenantOf(t)));
    await queue(t, alice.token, ''); // the index built again after the rebuild above
    const merges = rank.stats.merges;
    const run = Array.from({ length: 200 }, (_, k) => id(200 + k)).filter((x, k) => k % 8 !== 0 && !doomed.includes(x));
    await directWrite(t, { op: 'delete_node', via: 'rest' }, (d) => {
      for (const x of run) d.delete(x);
    });
    await queue(t, alice.token, '');
    expect(rank.stats.merges).to.be.greaterThan(merges);
    await same('after deleting most of the newer half');

    // new work after the long pause, next to the old
    await ok(
      t.api('POST', '/v1/nodes', { body: { nodes: [0, 1, 2].map((k) => ({ id: `task-rk-new-${k}`, type: 'task', summary: 'new' })) } }),
    );
    t.clock.advance(HOUR);
    await same('after new work');
    expect(rankOf(bookOf(tenantOf(t))).chunks.length).to.be.greaterThan(1);
  });
});
