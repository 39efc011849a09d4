/**
 * docs/spec.md "Workflow runs" rules 3-4 and "States and transitions / Workflow run and step"
 * (docs/design.md §5): claims give a lease with a generation (committed as `claimed` in the run
 * node, expiry in operational state), the holder re-claiming renews, lapsed leases are
 * offered again under a new generation (clock-driven), verdicts move steps and the run,
 * retries are idempotent or 409 `outcome_conflict`, stale leases 409 `lease_expired`.
 */
import { expect } from 'chai';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import {
  agentToken,
  claim,
  claimed,
  complete,
  defineWorkflow,
  getRun,
  MIN,
  runNode,
  started,
  startWorkflowServer,
  TTL,
  unboundToken,
  work,
  workKeys,
} from './helpers.js';
import { onPostgres } from '../../helpers/harness.js';

describe('workflows: claiming steps and reporting verdicts', function () {
  let t: TestServer;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };

  before(async () => {
    t = await startWorkflowServer();
    alice = await addPerson(t, 'Alice');
    bob = await addPerson(t, 'Bob');
    await defineWorkflow(
      t,
      'wf-pipe',
      [
        { id: 'a', max_attempts: 2 },
        { id: 'b', needs: ['a'] },
        { id: 'c', needs: ['a'] },
        { id: 'd', needs: ['b', 'c'] },
      ],
      bob.token,
    );
    await defineWorkflow(t, 'wf-one', [{ id: 'x' }], bob.token);
  });
  after(async () => {
    await t.close();
  });

  it('claim: a lease with generation 1; the run node commits `claimed` and the holder, not the expiry', async () => {
    const run = await started(t, 'wf-pipe');
    const before = await runNode(t, run);
    const now = t.clock.now();
    const res = await claim(t, run, 'a', alice.token);
    expect(res.status, res.text).to.equal(200);
    expect(Object.keys(res.body)).to.deep.equal(['run_id', 'step', 'lease', 'state', 'status', 'revision']);
    expect(res.body).to.include({ run_id: run, step: 'a', status: 'claimed' });
    const lease = res.body.lease;
    expect(lease).to.include({
      lease_id: `${run}:a:1`,
      run_id: run,
      step: 'a',
      generation: 1,
      by: alice.id,
      agent: null,
      session: null,
      iteration: null,
    });
    expect(lease.expires).to.be.within(now + TTL, now + TTL + 5000);
    expect(lease.expires_at).to.equal(new Date(lease.expires).toISOString());
    const node = await runNode(t, run);
    expect(node.revision).to.not.equal(before.revision);
    expect(res.body.revision).to.equal(node.revision);
    const a = node.frontmatter.state.steps.a;
    expect(a).to.include({ state: 'claimed', generation: 1, attempts: 0 });
    expect(a.lease).to.deep.equal({ by: alice.id, agent: null, session: null, generation: 1, claimed_at: lease.claimed_at });
    // bookkeeping commit: authorship unchanged, marked internal in history
    expect(node.frontmatter.author).to.equal(t.adminPerson);
    // the answer and the run read overlay the operational expiry
    expect(res.body.state.steps.a.lease).to.deep.equal({ ...a.lease, expires_at: lease.expires_at, live: true });
    expect((await getRun(t, run)).state.steps.a.state).to.equal('claimed');
  });

  it('claim of a step another holds: 409 naming the holder; the holder claiming again renews without a commit', async () => {
    const run = await started(t, 'wf-one');
    const first = await claim(t, run, 'x', alice.token);
    const other = await claim(t, run, 'x', bob.token);
    expect(other.status).to.equal(409);
    expect(other.body.error.code).to.equal('conflict');
    expect(other.body.error.details).to.include({
      run_id: run,
      step: 'x',
      reason: 'claimed',
      holder: alice.id,
      expires_at: first.body.lease.expires_at,
    });
    t.clock.advance(20 * MIN);
    const again = await claim(t, run, 'x', alice.token, { iteration: 2 });
    expect(again.status, again.text).to.equal(200);
    expect(again.body.status).to.equal('renewed');
    expect(again.body.lease.lease_id).to.equal(first.body.lease.lease_id);
    expect(again.body.lease.iteration).to.equal(2);
    expect(again.body.lease.expires).to.be.greaterThan(first.body.lease.expires);
    expect(again.body.revision).to.equal(first.body.revision);
    expect((await runNode(t, run)).revision).to.equal(first.body.revision);
    // renewed: still live 20 minutes after the first expiry would have hit
    t.clock.advance(20 * MIN);
    expect((await claim(t, run, 'x', bob.token)).status).to.equal(409);
    const done = await complete(t, run, 'x', { lease: again.body.lease, status: 'succeeded' }, alice.token);
    expect(done.status, done.text).to.equal(200);
    expect(done.body.run_status).to.equal('succeeded');
  });

  it('a step that is not claimable is 409: pending, already succeeded, run finished', async () => {
    const run = await started(t, 'wf-pipe');
    const pending = await claim(t, run, 'b', alice.token);
    expect(pending.status).to.equal(409);
    expect(pending.body.error.details).to.include({ reason: 'pending', state: 'pending' });
    expect(pending.body.error.message).to.include('waits for a');
    const lease = await claimed(t, run, 'a', alice.token);
    expect((await complete(t, run, 'a', { lease, status: 'succeeded' }, alice.token)).status).to.equal(200);
    const again = await claim(t, run, 'a', alice.token);
    expect(again.status).to.equal(409);
    expect(again.body.error.details.reason).to.equal('succeeded');
    const one = await started(t, 'wf-one');
    const l = await claimed(t, one, 'x', bob.token);
    await complete(t, one, 'x', { lease: l, status: 'succeeded' }, bob.token);
    const finished = await claim(t, one, 'x', bob.token);
    expect(finished.status).to.equal(409);
    expect(finished.body.error.details).to.include({ reason: 'run_finished', run_status: 'succeeded' });
    expect((await claim(t, run, 'zz', alice.token)).status).to.equal(404);
    expect((await claim(t, 'run-nope-1', 'a', alice.token)).status).to.equal(404);
    expect((await claim(t, run, 'Bad!', alice.token)).status).to.equal(422);
    expect((await claim(t, run, 'b', alice.token, { iteration: -1 })).status).to.equal(422);
    const unknown = await claim(t, run, 'b', alice.token, { iteration: 1, force: true });
    expect(unknown.status).to.equal(422);
    expect(unknown.body.error.details.errors[0]).to.include({ keyword: 'additionalProperties' });
    expect(unknown.body.error.details.errors[0].params).to.deep.equal({ additionalProperty: 'force' });
    expect((await claim(t, run, 'b', await unboundToken(t))).status).to.equal(403);
  });

  it('success releases what needed the step; the run succeeds when every step succeeded', async () => {
    const run = await started(t, 'wf-pipe');
    const la = await claimed(t, run, 'a', alice.token);
    const res = await complete(
      t,
      run,
      'a',
      { lease: la, status: 'succeeded', result: { artifact: 'a.tgz', sizes: [1, 2] }, log: 'built\nok', iteration: 1 },
      alice.token,
    );
    expect(res.status, res.text).to.equal(200);
    expect(Object.keys(res.body)).to.deep.equal([
      'run_id',
      'step',
      'status',
      'generation',
      'step_state',
      'attempts',
      'max_attempts',
      'run_status',
      'replayed',
      'revision',
      'state',
    ]);
    expect(res.body).to.include({
      run_id: run,
      step: 'a',
      status: 'succeeded',
      generation: 1,
      step_state: 'succeeded',
      attempts: 1,
      max_attempts: 2,
      run_status: 'running',
      replayed: false,
    });
    const node = await runNode(t, run);
    expect(res.body.revision).to.equal(node.revision);
    expect(node.frontmatter.author).to.equal(alice.id);
    const steps = node.frontmatter.state.steps;
    expect(steps.a).to.include({ state: 'succeeded', attempts: 1, log: 'built\nok', iteration: 1 });
    expect(steps.a.result).to.deep.equal({ artifact: 'a.tgz', sizes: [1, 2] });
    expect(steps.a.lease).to.equal(undefined);
    expect(steps.a.verdicts).to.have.length(1);
    expect(steps.a.verdicts[0]).to.include({ generation: 1, status: 'succeeded', by: alice.id, iteration: 1 });
    expect(steps.b.state).to.equal('ready');
    expect(steps.c.state).to.equal('ready');
    expect(steps.d.state).to.equal('pending');
    for (const s of ['b', 'c']) {
      const l = await claimed(t, run, s, bob.token);
      expect((await complete(t, run, s, { lease: l, status: 'succeeded' }, bob.token)).body.run_status).to.equal('running');
    }
    expect((await runNode(t, run)).frontmatter.state.steps.d.state).to.equal('ready');
    const ld = await claimed(t, run, 'd', bob.token);
    const last = await complete(t, run, 'd', { lease: ld, status: 'succeeded' }, bob.token);
    expect(last.body.run_status).to.equal('succeeded');
    const done = await getRun(t, run);
    expect(done.status).to.equal('succeeded');
    expect(done.timestamps.finished).to.be.a('string');
  });

  it("complete: status must be succeeded or failed (422); lease missing or not a string 422; a lease that is not the step's current lease 409 lease_expired", async () => {
    const run = await started(t, 'wf-pipe');
    const lease = await claimed(t, run, 'a', alice.token);
    const before = (await runNode(t, run)).revision;
    for (const body of [
      { lease, status: 'done' },
      { lease },
      { lease, status: 'SUCCEEDED' },
      { status: 'succeeded' },
      { lease: { lease_id: 7 }, status: 'succeeded' },
      { lease, status: 'succeeded', log: 42 },
      { lease, status: 'succeeded', log: 'x'.repeat(4001) },
      { lease, status: 'succeeded', result: { big: 'x'.repeat(5000) } },
      { lease, status: 'succeeded', iteration: 1.5 },
      { lease, status: 'succeeded', verdict: 'ok' },
    ]) {
      const res = await complete(t, run, 'a', body, alice.token);
      expect(res.status, JSON.stringify(body).slice(0, 80)).to.equal(422);
      expect(res.body.error.code).to.equal('validation_failed');
    }
    expect((await t.api('POST', `/v1/runs/${run}/steps/a/complete`, { token: alice.token })).status).to.equal(422);
    // docs/spec.md Workflow rule 4: a superseded lease is 409 lease_expired, and so is any lease that is not this step's
    for (const other of ['garbage', `${run}:b:1`, `run-other:a:1`, `${run}:a:2`]) {
      const res = await complete(t, run, 'a', { lease: other, status: 'succeeded' }, alice.token);
      expect(res.status, `${other}: ${res.text}`).to.equal(409);
      expect(res.body.error.code).to.equal('lease_expired');
    }
    expect((await runNode(t, run)).revision).to.equal(before);
    // the lease object of the claim answer is accepted as well as its lease_id
    const claimAnswer = await claim(t, run, 'a', alice.token);
    const ok = await complete(t, run, 'a', { lease: claimAnswer.body.lease, status: 'succeeded' }, alice.token);
    expect(ok.status, ok.text).to.equal(200);
  });

  it('an identical retry is idempotent (replayed, no commit); a disagreeing one is 409 outcome_conflict', async () => {
    const run = await started(t, 'wf-pipe');
    const lease = await claimed(t, run, 'a', alice.token);
    const body = { lease, status: 'succeeded', result: { b: 2, a: [1, { z: true }] }, log: 'first' };
    const first = await complete(t, run, 'a', body, alice.token);
    expect(first.status, first.text).to.equal(200);
    const revision = (await runNode(t, run)).revision;
    // same outcome, result keys in another order, a different log: the same verdict
    const retry = await complete(t, run, 'a', { ...body, result: { a: [1, { z: true }], b: 2 }, log: 'second try' }, alice.token);
    expect(retry.status, retry.text).to.equal(200);
    expect(retry.body.replayed).to.equal(true);
    expect(retry.body).to.include({ status: 'succeeded', generation: 1, step_state: 'succeeded', attempts: 1 });
    expect((await runNode(t, run)).revision).to.equal(revision);
    expect((await runNode(t, run)).frontmatter.state.steps.a.log).to.equal('first');
    for (const [change, differs] of [
      [{ status: 'failed' }, ['status']],
      [{ result: { b: 3, a: [1, { z: true }] } }, ['result']],
      [{ result: undefined }, ['result']],
      [{ status: 'failed', iteration: 4 }, ['status', 'iteration']],
    ] as const) {
      const res = await complete(t, run, 'a', { ...body, ...change }, alice.token);
      expect(res.status, res.text).to.equal(409);
      expect(res.body.error.code).to.equal('outcome_conflict');
      expect(res.body.error.details).to.deep.include({ run_id: run, step: 'a', generation: 1, differs_in: differs });
      expect(res.body.error.details.recorded).to.include({ status: 'succeeded', by: alice.id });
    }
    expect((await runNode(t, run)).revision).to.equal(revision);
  });

  it('clock-driven expiry: a lapsed lease is 409 lease_expired; the step is offered again and a new claim supersedes it', async () => {
    const run = await started(t, 'wf-pipe');
    const old = await claimed(t, run, 'a', alice.token);
    expect(workKeys(await work(t))).to.not.include(`${run}/a`);
    t.clock.advance(TTL + 1000);
    const late = await complete(t, run, 'a', { lease: old, status: 'succeeded' }, alice.token);
    expect(late.status).to.equal(409);
    expect(late.body.error.code).to.equal('lease_expired');
    expect(late.body.error.details).to.include({ reason: 'expired', generation: 1 });
    // offered again: in the work list (lapsed) and read as ready, the former holder kept
    const listed = (await work(t)).body.work.find((w: { run_id: string; step: string }) => w.run_id === run && w.step === 'a');
    expect(listed).to.include({ lapsed: true, generation: 1 });
    const view = (await getRun(t, run)).state.steps.a;
    expect(view.state).to.equal('ready');
    expect(view.lease).to.include({ by: alice.id, live: false });
    // the committed state still says claimed: no commit was needed for the lapse
    expect((await runNode(t, run)).frontmatter.state.steps.a.state).to.equal('claimed');
    const fresh = await claim(t, run, 'a', bob.token);
    expect(fresh.status, fresh.text).to.equal(200);
    expect(fresh.body.lease.generation).to.equal(2);
    const superseded = await complete(t, run, 'a', { lease: old, status: 'succeeded' }, alice.token);
    expect(superseded.status).to.equal(409);
    expect(superseded.body.error.code).to.equal('lease_expired');
    expect(superseded.body.error.details).to.include({ reason: 'superseded', current_generation: 2 });
    // the current lease presented by someone else: 403
    const stolen = await complete(t, run, 'a', { lease: fresh.body.lease.lease_id, status: 'succeeded' }, alice.token);
    expect(stolen.status).to.equal(403);
    const ok = await complete(t, run, 'a', { lease: fresh.body.lease.lease_id, status: 'succeeded' }, bob.token);
    expect(ok.status, ok.text).to.equal(200);
    expect(ok.body.generation).to.equal(2);
    // the expired holder claiming again after a lapse also gets a new generation
    const r2 = await started(t, 'wf-one');
    await claimed(t, r2, 'x', alice.token);
    t.clock.advance(TTL);
    const reclaim = await claim(t, r2, 'x', alice.token);
    expect(reclaim.body).to.include({ status: 'claimed' });
    expect(reclaim.body.lease.generation).to.equal(2);
  });

  it('a failure below max_attempts returns the step to ready; the last one fails the run and skips the rest', async () => {
    const run = await started(t, 'wf-pipe');
    const l1 = await claimed(t, run, 'a', alice.token);
    const f1 = await complete(t, run, 'a', { lease: l1, status: 'failed', log: 'flaky' }, alice.token);
    expect(f1.status, f1.text).to.equal(200);
    expect(f1.body).to.include({ step_state: 'ready', attempts: 1, run_status: 'running' });
    expect(workKeys(await work(t))).to.include(`${run}/a`);
    // the failed generation's retry is still recognised
    expect((await complete(t, run, 'a', { lease: l1, status: 'failed', log: 'again' }, alice.token)).body.replayed).to.equal(true);
    expect((await complete(t, run, 'a', { lease: l1, status: 'succeeded' }, alice.token)).body.error.code).to.equal('outcome_conflict');
    const l2 = await claimed(t, run, 'a', bob.token);
    expect(l2).to.equal(`${run}:a:2`);
    const f2 = await complete(t, run, 'a', { lease: l2, status: 'failed' }, bob.token);
    expect(f2.body).to.include({ step_state: 'failed', attempts: 2, run_status: 'failed' });
    const node = await runNode(t, run);
    expect(node.status).to.equal('failed');
    const steps = node.frontmatter.state.steps;
    expect([steps.a.state, steps.b.state, steps.c.state, steps.d.state]).to.deep.equal(['failed', 'skipped', 'skipped', 'skipped']);
    expect(workKeys(await work(t)).filter((k) => k.startsWith(`${run}/`))).to.deep.equal([]);
  });

  it('fail fast supersedes the leases of steps in flight: their verdicts are 409 lease_expired', async () => {
    await defineWorkflow(t, 'wf-fan', [{ id: 'p' }, { id: 'q' }], bob.token);
    const run = await started(t, 'wf-fan');
    const lp = await claimed(t, run, 'p', alice.token);
    const lq = await claimed(t, run, 'q', bob.token);
    expect((await complete(t, run, 'p', { lease: lp, status: 'failed' }, alice.token)).body.run_status).to.equal('failed');
    const late = await complete(t, run, 'q', { lease: lq, status: 'succeeded' }, bob.token);
    expect(late.status).to.equal(409);
    expect(late.body.error.code).to.equal('lease_expired');
    expect(late.body.error.details).to.include({ reason: 'run_finished', run_status: 'failed' });
    // the recorded verdict of p is still answered after the run finished
    expect((await complete(t, run, 'p', { lease: lp, status: 'failed' }, alice.token)).body.replayed).to.equal(true);
  });

  it('agent-held leases: the agent completes; its owner without the agent cannot (403)', async () => {
    const run = await started(t, 'wf-one');
    const agent = await agentToken(t, alice.id, 'agent-alice-bot', 'sess-1');
    const res = await claim(t, run, 'x', agent);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.lease).to.include({ by: alice.id, agent: 'agent-alice-bot', session: 'sess-1' });
    const owner = await complete(t, run, 'x', { lease: res.body.lease.lease_id, status: 'succeeded' }, alice.token);
    expect(owner.status).to.equal(403);
    const ok = await complete(t, run, 'x', { lease: res.body.lease.lease_id, status: 'succeeded' }, agent);
    expect(ok.status, ok.text).to.equal(200);
    const node = await runNode(t, run);
    expect(node.frontmatter.authored_by_agent).to.equal('agent-alice-bot');
    expect(node.frontmatter.state.steps.x.verdicts[0]).to.include({ by: alice.id, agent: 'agent-alice-bot' });
  });

  it('the lease expiry is durable operational state (state file, never the graph), dropped on the verdict', async () => {
    const run = await started(t, 'wf-one');
    const lease = await claimed(t, run, 'x', alice.token);
    const tenant = t.server.services.tenants.get(t.org)!;
    const stored = tenant.state.collection<{ generation: number; expires_ms: number }>('workflow-leases').get(`${run}/x`);
    expect(stored).to.include({ generation: 1 });
    const { readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    if (!onPostgres) {
      // the embedded store's file (cluster mode: a wg_state row)
      const onDisk = JSON.parse(readFileSync(join(tenant.dir, 'state', 'workflow-leases.json'), 'utf8'));
      expect(onDisk[`${run}/x`]).to.include({ generation: 1, by: alice.id });
    }
    expect((await complete(t, run, 'x', { lease, status: 'succeeded' }, alice.token)).status).to.equal(200);
    expect(tenant.state.collection('workflow-leases').has(`${run}/x`)).to.equal(false);
  });

  it('racing claims on one step: exactly one wins, the others get 409 naming the winner', async () => {
    const run = await started(t, 'wf-one');
    const people = [alice, bob, ...(await Promise.all(['Carol', 'Dan', 'Eve'].map((n) => addPerson(t, n))))];
    const answers = await Promise.all(people.map((p) => claim(t, run, 'x', p.token)));
    const winners = answers.filter((a) => a.status === 200);
    expect(winners).to.have.length(1);
    const holder = winners[0]!.body.lease.by;
    for (const a of answers.filter((x) => x.status !== 200)) {
      expect(a.status).to.equal(409);
      expect(a.body.error.details.holder).to.equal(holder);
    }
    const node = await runNode(t, run);
    expect(node.frontmatter.state.steps.x).to.include({ generation: 1, state: 'claimed' });
    expect(node.frontmatter.state.steps.x.lease.by).to.equal(holder);
  });
});
