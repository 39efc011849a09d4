/**
 * Issue acceptance: 8 clients race to claim the same 50 nodes through the single and batch
 * routes (and the in-progress status route); every node ends with exactly one holder and
 * every loser got 409 (`conflict`) or a per-item `already_claimed`, naming the winner.
 */
import { expect } from 'chai';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { assignees, post, startLeaseServer, tasks } from './helpers.js';

function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

describe('leases: concurrent claims', function () {
  this.timeout(60_000);
  let t: TestServer;
  before(async () => {
    t = await startLeaseServer();
  });
  after(() => t.close());

  it('8 clients racing for 50 nodes: exactly one holder per node, every loser 409/already_claimed naming it', async () => {
    const people = [];
    for (let i = 0; i < 8; i++) people.push(await addPerson(t, `Racer ${i}`));
    const ids = Array.from({ length: 50 }, (_, i) => `task-race-${i}`);
    await tasks(t, ids);

    type Attempt = { client: number; id: string; won: boolean; holder: string | null; code: string | null };
    const attempts: Attempt[] = [];
    // Every request of every client is built first, then all are started in one shuffled burst.
    const requests: Array<() => Promise<void>> = [];
    for (const [c, p] of people.entries()) {
      const order = shuffled(ids, c + 1);
      if (c < 3) {
        // single claims
        for (const id of order) {
          requests.push(async () => {
            const res = await post(t, `/v1/nodes/${id}/claim`, p.token, {});
            if (res.status === 200) attempts.push({ client: c, id, won: true, holder: res.body.lease.by, code: null });
            else {
              expect(res.status, res.text).to.equal(409);
              attempts.push({ client: c, id, won: false, holder: res.body.error.details.holder, code: res.body.error.code });
            }
          });
        }
      } else if (c < 7) {
        // batches: clients 3-5 in chunks of 10, client 6 all 50 at once
        const size = c === 6 ? 50 : 10;
        for (let k = 0; k < 50; k += size) {
          const chunk = order.slice(k, k + size);
          requests.push(async () => {
            const res = await post(t, '/v1/queue/claim', p.token, { ids: chunk });
            expect(res.status, res.text).to.equal(200);
            expect(res.body.count + res.body.failed.length).to.equal(chunk.length);
            for (const l of res.body.leases) attempts.push({ client: c, id: l.node_id, won: true, holder: l.by, code: null });
            for (const f of res.body.failed)
              attempts.push({ client: c, id: f.node_id, won: false, holder: f.holder ?? null, code: f.code });
          });
        }
      } else {
        // status moves to in-progress take the same lease
        for (const id of order.slice(0, 25)) {
          requests.push(async () => {
            const res = await post(t, `/v1/nodes/${id}/status`, p.token, { status: 'in-progress' });
            if (res.status === 200 && res.body.lease) attempts.push({ client: c, id, won: true, holder: res.body.lease.by, code: null });
            else if (res.status === 409 && res.body.error.code === 'conflict') {
              attempts.push({ client: c, id, won: false, holder: res.body.error.details.holder, code: 'conflict' });
            } else if (res.status !== 200) expect.fail(`unexpected ${res.status} ${res.text}`);
          });
        }
      }
    }
    const clients = shuffled(requests, 99).map((run) => run());
    await Promise.all(clients);

    const winners = new Map<string, number>();
    for (const a of attempts.filter((x) => x.won)) {
      expect(winners.has(a.id), `${a.id} won twice`).to.equal(false);
      winners.set(a.id, a.client);
    }
    expect([...winners.keys()].sort()).to.deep.equal([...ids].sort());
    expect(attempts.length).to.equal(3 * 50 + 3 * 50 + 50 + attempts.filter((a) => a.client === 7).length);
    for (const a of attempts.filter((x) => !x.won)) {
      const winner = people[winners.get(a.id)!]!.id;
      expect(a.code, JSON.stringify(a)).to.equal(a.client >= 3 && a.client <= 6 ? 'already_claimed' : 'conflict');
      expect(a.holder, JSON.stringify(a)).to.equal(winner);
    }
    // more than one client actually won something (the race was a race)
    expect(new Set(winners.values()).size).to.be.greaterThan(1);

    // durable state agrees: one assigned edge per node, to the winner; each client's renew-all lists exactly its wins
    for (const id of ids) expect(await assignees(t, id), id).to.deep.equal([people[winners.get(id)!]!.id]);
    const held = new Set<string>();
    for (const [c, p] of people.entries()) {
      const res = await post(t, '/v1/queue/renew', p.token, {});
      const mine = [...winners.entries()]
        .filter(([, w]) => w === c)
        .map(([id]) => id)
        .sort();
      expect([...res.body.renewed].sort(), `client ${c}`).to.deep.equal(mine);
      for (const id of res.body.renewed) held.add(id);
    }
    expect(held.size).to.equal(50);
  });
});
