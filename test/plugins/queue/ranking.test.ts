/**
 * Issue rule 6: the documented, deterministic score (priority, weighted transitive blocking,
 * heat, staleness, age), `suggest`, `why`, leases shown on items, reservations kept off
 * teammates' lists for the grace window; and rule 7: incremental bookkeeping.
 */
import { expect } from 'chai';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { bookOf } from '../../../plugins/queue/book.js';
import { DAY, freezeClock, GRACE, post } from '../leases/helpers.js';
import { ids, queue, startQueueServer } from './helpers.js';

type Item = {
  id: string;
  score: number;
  suggest: string;
  why: string;
  signals: Record<string, number>;
  lease?: Record<string, unknown>;
  priority: string | null;
};

describe('queue: ranking, suggestions and leases', function () {
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };
  let carol: { id: string; token: string };
  let unfreeze: () => void;
  const item = async (token: string, project: string, id: string): Promise<Item> => {
    const res = await queue(t, token, `?project=${project}&limit=100`);
    const found = (res.body.items as Item[]).find((i) => i.id === id);
    if (!found) throw new Error(`${id} not in queue: ${ids(res).join(', ')}`);
    return found;
  };

  before(async () => {
    t = await startQueueServer();
    alice = await addPerson(t, 'Alice');
    bob = await addPerson(t, 'Bob');
    carol = await addPerson(t, 'Carol');
    unfreeze = freezeClock(t.clock);
  });
  after(async () => {
    unfreeze();
    await t.close();
  });

  it('priority orders otherwise equal items: p1 > p2 > p3 > none; ties break deterministically', async () => {
    await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          { id: 'task-pr-none', type: 'task', summary: 'none', project: 'prio' },
          { id: 'task-pr-3', type: 'task', summary: 'p3', project: 'prio', priority: 'p3' },
          { id: 'task-pr-1', type: 'task', summary: 'p1', project: 'prio', priority: 'p1' },
          { id: 'task-pr-2', type: 'task', summary: 'p2', project: 'prio', priority: 'p2' },
        ],
      },
    });
    // a put keeps stored priority only; set it through the priority route
    for (const [id, p] of [
      ['task-pr-1', 'p1'],
      ['task-pr-2', 'p2'],
      ['task-pr-3', 'p3'],
    ])
      await post(t, `/v1/nodes/${id}/priority`, t.adminToken, { priority: p });
    const res = await queue(t, alice.token, '?project=prio');
    expect(ids(res)).to.deep.equal(['task-pr-1', 'task-pr-2', 'task-pr-none', 'task-pr-3']);
    const scores = (res.body.items as Item[]).map((i) => i.score);
    // priority weight + heat 1 x 4 (just written); no blocking, staleness or age yet
    expect(scores).to.deep.equal([34, 19, 12, 9]);
    expect((res.body.items as Item[])[0]!.signals).to.deep.equal({ blocking: 0, heat: 1, staleness: 0, age: 0 });
    expect(res.text).to.equal((await queue(t, alice.token, '?project=prio')).text);
  });

  it('blocking is transitive and weighted by the registry edge weights; blocked items say what they wait on', async () => {
    await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          { id: 'task-bl-leaf', type: 'task', summary: 'leaf', project: 'block' },
          { id: 'task-bl-mid', type: 'task', summary: 'mid', project: 'block', edges: [{ type: 'blocks', to: 'task-bl-leaf' }] },
          {
            id: 'task-bl-root',
            type: 'task',
            summary: 'root',
            project: 'block',
            edges: [
              { type: 'blocks', to: 'task-bl-mid' },
              { type: 'part-of', to: 'issue-bl-epic' },
            ],
          },
          { id: 'issue-bl-epic', type: 'issue', summary: 'epic', project: 'block' },
        ],
      },
    });
    const root = await item(alice.token, 'block', 'task-bl-root');
    // blocks (1.0) to mid, blocks (1.0 x 1.0) to leaf, part-of (0.7) to the epic
    expect(root.signals.blocking).to.equal(2.7);
    expect(root.score).to.equal(Math.round((8 + 6 * Math.log2(1 + 2.7) + 4) * 100) / 100);
    expect(root.suggest).to.equal('triage');
    expect(root.why).to.include('unblocks 3 open items (task-bl-mid, issue-bl-epic, task-bl-leaf)');
    const mid = await item(alice.token, 'block', 'task-bl-mid');
    expect(mid.signals.blocking).to.equal(1);
    expect(mid.suggest).to.equal('blocked');
    expect(mid.why).to.match(/^Waiting on task-bl-root/);
    const res = await queue(t, alice.token, '?project=block');
    expect(ids(res)[0]).to.equal('task-bl-root');
    expect(res.body.counts_by_suggest).to.include({ blocked: 2, triage: 2 });
  });

  it('the bookkeeping follows commits: finishing a blocker unblocks, and only the touched cone is recomputed', async () => {
    const book = bookOf(t.server.services.tenants.get(t.org)!);
    await queue(t, alice.token, '?limit=100');
    const before = { ...book.stats };
    await queue(t, alice.token, '?limit=100');
    expect(book.stats.staticsComputed).to.equal(before.staticsComputed);
    await post(t, '/v1/nodes/task-bl-root/status', t.adminToken, { status: 'done' });
    const mid = await item(alice.token, 'block', 'task-bl-mid');
    expect(mid.suggest).to.equal('triage');
    const ranked = ids(await queue(t, alice.token, '?project=block'));
    expect(ranked).to.not.include('task-bl-root');
    // recomputed: root's targets and their upstream cone, not every candidate
    expect(book.stats.staticsComputed - before.staticsComputed)
      .to.be.greaterThan(0)
      .and.at.most(3);
    expect(book.stats.rebuilds).to.equal(before.rebuilds);
    expect(book.isCandidate('task-bl-root')).to.equal(false);
  });

  it('heat, staleness and age move with the clock; an untouched, unprioritized, non-blocking item suggests close', async () => {
    await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          { id: 'task-old', type: 'task', summary: 'old', project: 'time' },
          { id: 'task-old-p', type: 'task', summary: 'old but prioritized', project: 'time' },
        ],
      },
    });
    await post(t, '/v1/nodes/task-old-p/priority', t.adminToken, { priority: 'p2' });
    t.clock.advance(7 * DAY);
    let old = await item(alice.token, 'time', 'task-old');
    expect(old.signals).to.deep.equal({ blocking: 0, heat: 0, staleness: 0.5, age: Math.round((7 / 60) * 100) / 100 });
    expect(old.suggest).to.equal('triage');
    t.clock.advance(21 * DAY);
    old = await item(alice.token, 'time', 'task-old');
    expect(old.signals.staleness).to.equal(1);
    expect(old.suggest).to.equal('close');
    expect(old.why).to.match(/^Untouched since 28 days ago/);
    expect((await item(alice.token, 'time', 'task-old-p')).suggest).to.equal('do');
    // a neighbour's edit warms the node up again
    await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [{ id: 'task-poke', type: 'task', summary: 'pokes', project: 'elsewhere', edges: [{ type: 'relates-to', to: 'task-old' }] }],
      },
    });
    old = await item(alice.token, 'time', 'task-old');
    expect(old.signals.heat).to.equal(1);
  });

  it('proposed decisions suggest approve and are human-ready', async () => {
    await t.api('POST', '/v1/nodes', {
      body: { nodes: [{ id: 'dec-pick-db', type: 'dec', summary: 'pick a database', project: 'decide' }] },
    });
    const res = await queue(t, alice.token, '?project=decide');
    const dec = (res.body.items as Array<Record<string, unknown>>)[0]!;
    expect(dec).to.include({ id: 'dec-pick-db', suggest: 'approve', readiness: 'human' });
    expect(dec.why).to.match(/^Proposed by person-[0-9a-f]+ today; approve or reject it/);
    expect(res.body.counts_by_suggest).to.deep.equal({ do: 0, blocked: 0, triage: 0, close: 0, approve: 1 });
  });

  it('every why is one line a person can act on', async () => {
    const res = await queue(t, alice.token, '?limit=100');
    expect(res.body.items.length).to.be.greaterThan(5);
    for (const i of res.body.items as Item[]) {
      expect(i.why, i.id).to.be.a('string').and.not.equal('');
      expect(i.why).to.not.include('\n');
      expect(i.why.length).to.be.lessThan(240);
    }
  });

  it('leased items show their holder and sink for others; a reservation tops its owner queue and leaves teammates lists for the grace window', async () => {
    await t.api('POST', '/v1/nodes', {
      body: { nodes: ['a', 'b', 'c'].map((x) => ({ id: `task-ls-${x}`, type: 'task', summary: `lease ${x}`, project: 'lease' })) },
    });
    await post(t, '/v1/nodes/task-ls-a/priority', t.adminToken, { priority: 'p1' });
    await post(t, '/v1/nodes/task-ls-c/priority', t.adminToken, { priority: 'p3' });
    expect(ids(await queue(t, bob.token, '?project=lease'))).to.deep.equal(['task-ls-a', 'task-ls-b', 'task-ls-c']);
    const claim = await post(t, '/v1/nodes/task-ls-a/claim', alice.token);
    const forBob = await queue(t, bob.token, '?project=lease');
    expect(ids(forBob)).to.deep.equal(['task-ls-b', 'task-ls-c', 'task-ls-a']);
    const leased = (forBob.body.items as Item[])[2]!;
    expect(leased.lease).to.deep.equal({
      by: alice.id,
      agent: null,
      session: null,
      state: 'live',
      expires_at: claim.body.lease.expires_at,
    });
    expect(leased.score).to.equal(30 + 4 - 30);
    expect(leased.why).to.match(new RegExp(`^Claimed by ${alice.id} until `));
    const forAlice = await queue(t, alice.token, '?project=lease');
    expect(ids(forAlice)[0]).to.equal('task-ls-a');
    expect((forAlice.body.items as Item[])[0]!.why).to.match(/^You hold it until /);

    await post(t, '/v1/nodes/task-ls-c/claim', alice.token);
    await post(t, '/v1/nodes/task-ls-c/reserve', alice.token);
    const mine = await queue(t, alice.token, '?project=lease');
    expect(ids(mine)[0]).to.equal('task-ls-c');
    expect((mine.body.items as Item[])[0]!.why).to.match(/^Reserved by you until /);
    for (const token of [bob.token, carol.token]) {
      const other = await queue(t, token, '?project=lease');
      expect(ids(other)).to.not.include('task-ls-c');
      expect(other.body.reserved).to.equal(1);
    }
    t.clock.advance(GRACE);
    const pooled = await queue(t, bob.token, '?project=lease');
    expect(ids(pooled)).to.include('task-ls-c');
    expect(pooled.body.reserved).to.equal(0);
    // back at normal priority: no lease, no penalty
    expect((pooled.body.items as Item[]).find((i) => i.id === 'task-ls-c')).to.not.have.property('lease');
  });

  it('small pages of a large set (bounded-heap selection) agree with the full ranking', async () => {
    const nodes = Array.from({ length: 120 }, (_, i) => ({
      id: `task-many-${String(i).padStart(3, '0')}`,
      type: 'task',
      summary: `many ${i}`,
      project: 'many',
      ...(i % 5 === 0 ? { edges: [{ type: 'blocks', to: `task-many-${String(i + 1).padStart(3, '0')}` }] } : {}),
    }));
    expect((await t.api('POST', '/v1/nodes', { body: { nodes } })).status).to.equal(200);
    for (const i of [7, 42, 99])
      await post(t, `/v1/nodes/task-many-${String(i).padStart(3, '0')}/priority`, t.adminToken, { priority: 'p1' });
    const full = [
      ...ids(await queue(t, alice.token, '?project=many&limit=100')),
      ...ids(await queue(t, alice.token, '?project=many&limit=100&offset=100')),
    ];
    expect(full).to.have.length(120);
    const paged: string[] = [];
    for (let offset = 0; offset < 120; offset += 5)
      paged.push(...ids(await queue(t, alice.token, `?project=many&limit=5&offset=${offset}`)));
    expect(paged).to.deep.equal(full);
    expect(full.slice(0, 3).sort()).to.deep.equal(['task-many-007', 'task-many-042', 'task-many-099']);
  });

  it('a schema commit rebuilds the bookkeeping (the registry may have changed)', async () => {
    const book = bookOf(t.server.services.tenants.get(t.org)!);
    const rebuilds = book.stats.rebuilds;
    const res = await t.api('POST', '/v1/nodes', {
      body: {
        nodes: [
          {
            id: 'schema-extra-edge',
            type: 'schema',
            summary: 'adds an edge type',
            applies_to: 'task',
            edge_types: [{ type: 'waits-for', weight: 0.5 }],
          },
        ],
      },
    });
    expect(res.status, res.text).to.equal(200);
    expect(book.stats.rebuilds).to.equal(rebuilds + 1);
    expect((await queue(t, alice.token, '?limit=5')).status).to.equal(200);
  });
});
