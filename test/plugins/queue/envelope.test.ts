/**
 * docs/spec.md "GET /v1/queue": every query parameter and envelope key, rules 1, 2, 3, 5 and 6.
 */
import { expect } from 'chai';
import { addPerson, md, putNodes, type TestServer } from '../../helpers/harness.js';
import { DAY, freezeClock, post, unboundToken } from '../leases/helpers.js';
import { startQueueServer, queue } from './helpers.js';

const SPEC_KEYS = [
  'items',
  'count',
  'offset',
  'returned_count',
  'total_count',
  'truncated',
  'next_offset',
  'counts_by_type',
  'counts_by_project',
  'counts_by_suggest',
  'counts_by_readiness',
  'muted',
  'dormant',
  'questions',
  'asked',
  'findings',
  'pending',
  'reviews',
  'policy',
  'generated_at',
];

describe('queue: GET /v1/queue envelope and rules', function () {
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };
  let unfreeze: () => void;

  before(async () => {
    t = await startQueueServer();
    alice = await addPerson(t, 'Alice');
    bob = await addPerson(t, 'Bob');
    unfreeze = freezeClock(t.clock);
    await putNodes(t, [
      { id: 'proj-platform', type: 'proj', summary: 'Platform grouping', aliases: ['plat'] },
      { id: 'proj-other', type: 'proj', summary: 'Other grouping' },
      md({ id: 'repo-web', type: 'repo', summary: 'Web repo', aliases: ['webapp'], edges: [{ type: 'member-of', to: 'proj-platform' }] }),
      md({ id: 'repo-api', type: 'repo', summary: 'API repo', edges: [{ type: 'member-of', to: 'proj-platform' }] }),
      { id: 'repo-solo', type: 'repo', summary: 'Repo without grouping' },
    ]);
    const work = [];
    for (let i = 0; i < 25; i++)
      work.push({
        id: `task-page-${String(i).padStart(2, '0')}`,
        type: 'task',
        summary: `paged ${i}`,
        project: 'pager',
        priority: ['p1', 'p2', 'p3'][i % 3],
      });
    await putNodes(t, work);
    await putNodes(t, [
      { id: 'task-web-1', type: 'task', summary: 'web by bare slug', project: 'web' },
      { id: 'task-web-2', type: 'task', summary: 'web by alias', project: 'webapp' },
      { id: 'task-web-3', type: 'task', summary: 'web by repo id', project: 'repo-web' },
      { id: 'task-api-1', type: 'task', summary: 'api', project: 'api' },
      { id: 'issue-plat-1', type: 'issue', summary: 'platform-wide issue', project: 'proj-platform' },
      { id: 'issue-plat-2', type: 'issue', summary: 'platform by alias', project: 'plat' },
      { id: 'task-solo-1', type: 'task', summary: 'solo', project: 'solo' },
      { id: 'task-other-1', type: 'task', summary: 'other', project: 'other' },
      { id: 'dec-plat-1', type: 'dec', summary: 'a decision', project: 'web' },
      { id: 'spec-plat-1', type: 'spec', summary: 'not queueable', project: 'web' },
    ]);
  });
  after(async () => {
    unfreeze();
    await t.close();
  });

  it('envelope: every docs/spec.md key, in order; policy and generated_at from the injected clock', async () => {
    const res = await queue(t, alice.token, '');
    expect(res.status, res.text).to.equal(200);
    const keys = Object.keys(res.body).filter((k) => SPEC_KEYS.includes(k));
    expect(keys).to.deep.equal(SPEC_KEYS);
    expect(res.body.generated_at).to.equal(new Date(t.clock.now()).toISOString());
    expect(res.body.policy.weights).to.deep.equal({
      priority: { p1: 30, p2: 15, p3: 5, none: 8 },
      blocking: 6,
      heat: 4,
      staleness: 3,
      age: 2,
    });
    expect(res.body.policy.doc).to.equal('docs/queue.md');
    const item = res.body.items[0];
    expect(Object.keys(item)).to.include.members(['id', 'title', 'type', 'status', 'priority', 'score', 'signals', 'suggest', 'why']);
    expect(Object.keys(item.signals)).to.deep.equal(['blocking', 'heat', 'staleness', 'age']);
    // only queue-eligible types: no spec, repo, proj, person
    const all = await queue(t, alice.token, '?limit=100');
    expect(all.body.items.map((i: { type: string }) => i.type).every((ty: string) => ['task', 'issue', 'dec'].includes(ty))).to.equal(true);
    expect(all.body.counts_by_type).to.deep.equal({ dec: 1, issue: 2, task: 31 });
  });

  it('rule 1: limit defaults to 20, clamps to 1-100 (never rejected); aggregates cover the whole filtered set', async () => {
    const def = await queue(t, alice.token, '?project=pager');
    expect(def.body).to.include({ count: 20, returned_count: 20, total_count: 25, offset: 0, truncated: true, next_offset: 20 });
    expect(def.body.counts_by_type).to.deep.equal({ task: 25 });
    expect(def.body.counts_by_project).to.deep.equal({ pager: 25 });
    expect(Object.values(def.body.counts_by_suggest as Record<string, number>).reduce((a, b) => a + b, 0)).to.equal(25);
    expect(Object.keys(def.body.counts_by_suggest)).to.deep.equal(['do', 'blocked', 'triage', 'close', 'approve']);
    const big = await queue(t, alice.token, '?limit=1000');
    expect(big.status).to.equal(200);
    expect(big.body.returned_count).to.equal(34);
    expect(big.body.filters.limit).to.equal(100);
    const small = await queue(t, alice.token, '?limit=0&project=pager');
    expect(small.body.returned_count).to.equal(1);
    const negative = await queue(t, alice.token, '?limit=-4&offset=-3&project=pager');
    expect(negative.body).to.include({ returned_count: 1, offset: 0 });
    for (const q of ['?limit=abc', '?offset=1.5', '?limit=ten']) expect((await queue(t, alice.token, q)).status, q).to.equal(422);
    const page2 = await queue(t, alice.token, '?project=pager&limit=10&offset=10');
    expect(page2.body.total_count).to.equal(25);
    expect(page2.body.counts_by_type).to.deep.equal({ task: 25 });
  });

  it('rule 2: walking offset=next_offset until null visits the ranking once, in order', async () => {
    const full = await queue(t, alice.token, '?project=pager&limit=100');
    const expected = full.body.items.map((i: { id: string }) => i.id);
    const seen: string[] = [];
    let offset: number | null = 0;
    let pages = 0;
    while (offset !== null) {
      const res = await queue(t, alice.token, `?project=pager&limit=7&offset=${offset}`);
      expect(res.body.offset).to.equal(offset);
      seen.push(...res.body.items.map((i: { id: string }) => i.id));
      offset = res.body.next_offset;
      pages++;
    }
    expect(pages).to.equal(4);
    expect(seen).to.deep.equal(expected);
    const past = await queue(t, alice.token, '?project=pager&offset=500');
    expect(past.body).to.include({ returned_count: 0, total_count: 25, truncated: false, next_offset: null });
  });

  it('rule 3: retired items (live inbound resolves/answers) are excluded whatever their status; done and superseded too', async () => {
    await putNodes(t, [
      { id: 'task-ret-1', type: 'task', summary: 'will be resolved', project: 'retire' },
      { id: 'task-ret-2', type: 'task', summary: 'will be superseded', project: 'retire' },
      { id: 'task-ret-3', type: 'task', summary: 'will be done', project: 'retire' },
      { id: 'task-ret-4', type: 'task', summary: 'stays', project: 'retire' },
    ]);
    expect((await queue(t, alice.token, '?project=retire')).body.total_count).to.equal(4);
    await putNodes(t, [
      md({ id: 'spec-fix', type: 'spec', summary: 'the fix', edges: [{ type: 'resolves', to: 'task-ret-1' }] }),
      md({
        id: 'task-ret-2b',
        type: 'task',
        summary: 'replacement',
        project: 'elsewhere',
        edges: [{ type: 'supersedes', to: 'task-ret-2' }],
      }),
    ]);
    await post(t, '/v1/nodes/task-ret-3/status', t.adminToken, { status: 'done' });
    const res = await queue(t, alice.token, '?project=retire');
    expect(res.body.items.map((i: { id: string }) => i.id)).to.deep.equal(['task-ret-4']);
    expect((await t.api('GET', '/v1/nodes/task-ret-1')).body.frontmatter.status).to.equal('open');
    // retiring edge removed: back in the queue
    await t.api('DELETE', '/v1/nodes/spec-fix/edges', { body: { type: 'resolves', to: 'task-ret-1' } });
    expect((await queue(t, alice.token, '?project=retire')).body.items.map((i: { id: string }) => i.id)).to.have.members([
      'task-ret-1',
      'task-ret-4',
    ]);
  });

  it('rule 3: muted and dormant items are counted, not silently dropped; both come back', async () => {
    const today = new Date(t.clock.now());
    const wake = new Date(today.getTime() + 3 * DAY).toISOString().slice(0, 10);
    await putNodes(t, [
      { id: 'task-sleep', type: 'task', summary: 'dormant until wake', project: 'hush', wake },
      { id: 'task-mute', type: 'task', summary: 'muted by alice', project: 'hush' },
      { id: 'task-loud', type: 'task', summary: 'visible', project: 'hush' },
    ]);
    const mute = await t.api('POST', '/v1/queue/mutes', { token: alice.token, body: { id: 'task-mute' } });
    expect(mute.status, mute.text).to.equal(200);
    expect(mute.body).to.include({ status: 'muted', id: 'task-mute', until: null });
    const a = await queue(t, alice.token, '?project=hush');
    expect(a.body.items.map((i: { id: string }) => i.id)).to.deep.equal(['task-loud']);
    expect(a.body).to.include({ muted: 1, dormant: 1, total_count: 1 });
    const b = await queue(t, bob.token, '?project=hush');
    expect(b.body).to.include({ muted: 0, dormant: 1, total_count: 2 });
    const list = await t.api('GET', '/v1/queue/mutes', { token: alice.token });
    expect(list.body).to.deep.equal({
      person: alice.id,
      mutes: [{ id: 'task-mute', until: null, muted_at: mute.body.muted_at }],
      count: 1,
    });
    // wake date reached: dormant no more
    t.clock.advance(3 * DAY);
    const later = await queue(t, alice.token, '?project=hush');
    expect(later.body).to.include({ dormant: 0, muted: 1 });
    expect(later.body.items.map((i: { id: string }) => i.id)).to.have.members(['task-loud', 'task-sleep']);
    const unmute = await t.api('DELETE', '/v1/queue/mutes/task-mute', { token: alice.token });
    expect(unmute.body).to.deep.equal({ status: 'unmuted', id: 'task-mute' });
    expect((await t.api('DELETE', '/v1/queue/mutes/task-mute', { token: alice.token })).body.status).to.equal('skipped');
    expect((await queue(t, alice.token, '?project=hush')).body).to.include({ muted: 0, total_count: 3 });
    // a mute with an until date lapses by itself
    const until = new Date(t.clock.now() + 2 * DAY).toISOString().slice(0, 10);
    await t.api('POST', '/v1/queue/mutes', { token: alice.token, body: { id: 'task-loud', until } });
    expect((await queue(t, alice.token, '?project=hush')).body.muted).to.equal(1);
    t.clock.advance(2 * DAY);
    expect((await queue(t, alice.token, '?project=hush')).body.muted).to.equal(0);
    // bad mutes
    const bad: Array<[unknown, number]> = [
      [{ id: 'Nope!' }, 422],
      [{ id: 'task-none' }, 404],
      [{ id: 'task-loud', until: '2001-01-01' }, 422],
      [{ id: 'task-loud', until: 'tomorrow' }, 422],
      [[], 422],
    ];
    for (const [body, status] of bad)
      expect((await t.api('POST', '/v1/queue/mutes', { token: alice.token, body })).status, JSON.stringify(body)).to.equal(status);
    // closed input: an unknown field is 422 with ajv's error verbatim; a malformed path id too
    const unknown = await t.api('POST', '/v1/queue/mutes', { token: alice.token, body: { id: 'task-loud', reason: 'noisy' } });
    expect(unknown.status).to.equal(422);
    expect(unknown.body.error.code).to.equal('validation_failed');
    expect(unknown.body.error.details.errors).to.deep.equal([
      {
        instancePath: '',
        schemaPath: '#/additionalProperties',
        keyword: 'additionalProperties',
        params: { additionalProperty: 'reason' },
        message: 'must NOT have additional properties',
      },
    ]);
    const badUntil = await t.api('POST', '/v1/queue/mutes', { token: alice.token, body: { id: 'task-loud', until: 'tomorrow' } });
    expect(badUntil.body.error.details.errors[0]).to.include({ instancePath: '/until', keyword: 'pattern' });
    const badDelete = await t.api('DELETE', '/v1/queue/mutes/Nope!', { token: alice.token });
    expect(badDelete.status).to.equal(422);
    expect(badDelete.body.error.details.errors[0]).to.include({ instancePath: '/id', keyword: 'pattern' });
    expect((await t.api('GET', '/v1/queue/mutes', { token: alice.token })).body.count).to.equal(0);
    expect((await t.api('GET', '/v1/queue/mutes', { token: await unboundToken(t) })).status).to.equal(403);
  });

  it('rule 5: project scoping through repo aliases and groupings', async () => {
    const ids = async (q: string) => ((await queue(t, alice.token, q)).body.items as Array<{ id: string }>).map((i) => i.id).sort();
    const platform = ['dec-plat-1', 'issue-plat-1', 'issue-plat-2', 'task-api-1', 'task-web-1', 'task-web-2', 'task-web-3'];
    // a bare repo slug (or its alias) unions its grouping's member queues
    expect(await ids('?project=web&limit=100')).to.deep.equal(platform);
    expect(await ids('?project=webapp&limit=100')).to.deep.equal(platform);
    // repo-<slug> pins one repo (by id, slug or alias)
    expect(await ids('?project=repo-web')).to.deep.equal(['dec-plat-1', 'task-web-1', 'task-web-2', 'task-web-3']);
    expect(await ids('?project=repo-api')).to.deep.equal(['task-api-1']);
    // proj-<slug> pins a grouping; a grouping alias resolves too
    expect(await ids('?project=proj-platform')).to.deep.equal(platform);
    expect(await ids('?project=plat')).to.deep.equal(platform);
    // a repo with no grouping is just itself; an unknown slug matches only its literal value
    expect(await ids('?project=solo')).to.deep.equal(['task-solo-1']);
    expect(await ids('?project=nothing-here')).to.deep.equal([]);
    const scoped = await queue(t, alice.token, '?project=web');
    expect(scoped.body.filters.project_scope).to.deep.equal({ repos: ['repo-api', 'repo-web'], groupings: ['proj-platform'] });
    expect(scoped.body.counts_by_project).to.deep.equal({ api: 1, 'proj-platform': 1, plat: 1, 'repo-web': 1, web: 2, webapp: 1 });
    expect((await queue(t, alice.token, '?project=Bad_Slug')).status).to.equal(422);
  });

  it('rule 5: assignee=<person>|me scopes to work carried through assigned/stewards edges', async () => {
    await post(t, '/v1/nodes/task-web-1/claim', bob.token);
    await t.api('POST', `/v1/nodes/task-web-2/edges`, { body: { type: 'assigned', to: alice.id } });
    // stewards edge lives on the person node: written through the tenant (person nodes are admin-only)
    const tenant = t.server.services.tenants.get(t.org)!;
    await tenant.write(
      { personId: t.adminPerson, name: 'Admin', email: 'admin@localhost', agent: null, session: null },
      { op: 'test', via: 'rest' },
      async (draft) => {
        const person = draft.get(alice.id)!;
        person.frontmatter.edges = [{ type: 'stewards', to: 'issue-plat-1' }];
        draft.put({ frontmatter: person.frontmatter, body: person.body });
      },
    );
    const ids = async (q: string, token = alice.token) =>
      ((await queue(t, token, q)).body.items as Array<{ id: string }>).map((i) => i.id).sort();
    expect(await ids('?assignee=me')).to.deep.equal(['issue-plat-1', 'task-web-2']);
    expect(await ids(`?assignee=${alice.id}`, bob.token)).to.deep.equal(['issue-plat-1', 'task-web-2']);
    expect(await ids('?assignee=me', bob.token)).to.deep.equal(['task-web-1']);
    expect(await ids('?assignee=me&project=repo-web')).to.deep.equal(['task-web-2']);
    expect(await ids('?assignee=person-nobody')).to.deep.equal([]);
    const unbound = await queue(t, await unboundToken(t), '?assignee=me');
    expect(unbound.status).to.equal(200);
    expect(unbound.body).to.include({ total_count: 0 });
    expect((await queue(t, alice.token, '?assignee=Not%20An%20Id')).status).to.equal(422);
  });

  it('rule 5: type and exclude_type are comma-separated and repeatable; exclude wins; unknown type is 422', async () => {
    const types = async (q: string) => Object.keys((await queue(t, alice.token, q)).body.counts_by_type).sort();
    expect(await types('?type=issue')).to.deep.equal(['issue']);
    expect(await types('?type=issue,dec')).to.deep.equal(['dec', 'issue']);
    expect(await types('?type=issue&type=dec')).to.deep.equal(['dec', 'issue']);
    expect(await types('?exclude_type=task')).to.deep.equal(['dec', 'issue']);
    expect(await types('?type=issue,task&exclude_type=task')).to.deep.equal(['issue']);
    expect(await types('?type=task&exclude_type=task')).to.deep.equal([]);
    const bad = await queue(t, alice.token, '?type=task,unicorn');
    expect(bad.status).to.equal(422);
    expect(bad.body.error.details.errors[0].values).to.deep.equal(['unicorn']);
    expect((await queue(t, alice.token, '?exclude_type=unicorn')).status).to.equal(422);
  });

  it('rule 6: readiness filter (agent, human, untriaged; comma-separated, repeatable), 422 on unknown; counts_by_readiness always', async () => {
    await post(t, '/v1/nodes/task-other-1/readiness', t.adminToken, { readiness: 'agent' });
    await post(t, '/v1/nodes/task-solo-1/edges', t.adminToken, { type: 'review-requested', to: bob.id });
    const all = await queue(t, alice.token, '?limit=100');
    const byId = new Map((all.body.items as Array<Record<string, unknown>>).map((i) => [i.id, i]));
    expect(byId.get('task-other-1')).to.include({ readiness: 'agent' });
    expect(byId.get('task-other-1')!.readiness_reasons).to.deep.equal([`marked agent-ready by ${t.adminPerson}`]);
    expect(byId.get('task-solo-1')).to.include({ readiness: 'human' });
    expect(byId.get('task-solo-1')!.readiness_reasons).to.deep.equal([`review requested from ${bob.id}`]);
    expect(byId.get('dec-plat-1')).to.include({ readiness: 'human' });
    // untriaged items carry neither key
    expect(byId.get('task-api-1')).to.not.have.any.keys('readiness', 'readiness_reasons');
    const counts = all.body.counts_by_readiness;
    expect(Object.keys(counts)).to.deep.equal(['agent', 'human', 'untriaged']);
    expect(counts.agent + counts.human + counts.untriaged).to.equal(all.body.total_count);
    const agent = await queue(t, alice.token, '?readiness=agent');
    expect(agent.body.items.map((i: { id: string }) => i.id)).to.deep.equal(['task-other-1']);
    expect(agent.body.counts_by_readiness).to.deep.equal({ agent: 1, human: 0, untriaged: 0 });
    const two = await queue(t, alice.token, '?readiness=agent,human&limit=100');
    const twoRepeat = await queue(t, alice.token, '?readiness=agent&readiness=human&limit=100');
    expect(two.body.total_count).to.equal(counts.agent + counts.human);
    expect(twoRepeat.body.items).to.deep.equal(two.body.items);
    const untriaged = await queue(t, alice.token, '?readiness=untriaged&limit=100');
    expect(untriaged.body.total_count).to.equal(counts.untriaged);
    expect(untriaged.body.items.every((i: Record<string, unknown>) => !('readiness' in i))).to.equal(true);
    const none = await queue(t, alice.token, '?readiness=agent&project=nothing-here');
    expect(none.body.counts_by_readiness).to.deep.equal({ agent: 0, human: 0, untriaged: 0 });
    const bad = await queue(t, alice.token, '?readiness=agent,robot');
    expect(bad.status).to.equal(422);
    expect(bad.body.error.code).to.equal('validation_failed');
    expect(bad.body.error.details.errors[0]).to.include({ field: 'readiness' });
  });
});
