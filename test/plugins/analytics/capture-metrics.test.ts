/**
 * docs/spec.md Reads rule 9 (GET /v1/metrics/capture): 404 unless the deployment exports metrics
 * (SVC_CAPTURE_METRICS=1), 403 for non-admins, counts and rates only, identities as
 * per-tenant pseudonyms `author-<hash12>`, closure entries `{edge, latency_days}` without
 * node ids, 422 for a malformed `since`; computed from the capture plugin's journal (real
 * captures and distill reports), empty when the capture plugin is not enabled.
 */
import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Tenant } from '../../../kernel/tenant.js';
import { capturePlugin } from '../../../plugins/capture/index.js';
import { addPerson, type TestServer } from '../../helpers/harness.js';
import { DAY, freezeClock, put, setStatus, startAnalyticsServer } from './helpers.js';
import { onPostgres } from '../../helpers/harness.js';

const PSEUDONYM = /^author-[0-9a-f]{12}$/;

async function capture(t: TestServer, token: string, body: Record<string, unknown>): Promise<{ status: string; ids: string[] }> {
  const res = await t.api('POST', '/v1/capture', { token, body });
  expect(res.status, res.text).to.equal(200);
  return res.body;
}

const metrics = (t: TestServer, query = '', token?: string) => t.api('GET', `/v1/metrics/capture${query}`, { token });

describe('analytics: GET /v1/metrics/capture', function () {
  this.timeout(40_000);
  let t: TestServer;
  let unfreeze: () => void;
  let alice: { id: string; token: string };
  let adminPseudonym = '';

  before(async () => {
    t = await startAnalyticsServer({ extra: [capturePlugin], config: { captureMetrics: true } });
    unfreeze = freezeClock(t.clock, Math.floor(t.clock.now() / 1000) * 1000);
    alice = await addPerson(t, 'Alice');
    const first = await capture(t, alice.token, { text: 'task: Fix the login page\nissue: Crash on save', context: { project: 'web' } });
    expect(first.status).to.equal('created');
    expect(first.ids).to.have.length(2);
    const pending = await capture(t, t.adminToken, { text: 'a private musing that fits no schema' });
    expect(pending.status).to.equal('pending');
    const backstop = await capture(t, alice.token, { text: 'task: Backstop thing', source: 'distill' });
    expect(backstop.status).to.equal('created');
    const report = await t.api('POST', '/v1/distill/report', {
      token: alice.token,
      body: { facts: 4, captured: 1, spooled: 2, rejected: 1 },
    });
    expect(report.status, report.text).to.equal(200);
    const [taskId, issueId] = first.ids as [string, string];
    t.clock.advance(3 * DAY);
    await setStatus(t, taskId, 'done');
    t.clock.advance(2 * DAY);
    await put(t, [{ id: 'task-closer', type: 'task', summary: 'closes the crash', edges: [{ type: 'resolves', to: issueId }] }]);
  });
  after(async () => {
    unfreeze();
    await t.close();
  });

  it('403 for a non-admin', async () => {
    const res = await metrics(t, '', alice.token);
    expect(res.status).to.equal(403);
    expect(res.body.error.code).to.equal('forbidden');
  });

  it('a malformed since is 422', async () => {
    for (const since of ['2024-13-01', '2024-02-30', 'yesterday', '2024-1-01', '20240101', '2024-01-01T00:00:00Z']) {
      const res = await metrics(t, `?since=${encodeURIComponent(since)}`);
      expect(res.status, since).to.equal(422);
      expect(res.body.error.code).to.equal('validation_failed');
    }
  });

  it('counts and rates of captures and distill reports', async () => {
    const res = await metrics(t);
    expect(res.status, res.text).to.equal(200);
    const m = res.body;
    expect(m.capture_enabled).to.equal(true);
    expect(m.captures).to.deep.equal({
      total: 3,
      created: 2,
      pending: 1,
      unavailable: 0,
      nodes_created: 3,
      bounced: 0,
      with_blocks: 0,
      by_via: { rest: 3 },
      by_source: { direct: 2, distill: 1 },
      by_ingester: { builtin: 3 },
      by_type: { issue: 1, task: 2 },
    });
    expect(m.rates).to.include({
      created_rate: 0.667,
      pending_rate: 0.333,
      unavailable_rate: 0,
      distill_share: 0.333,
      agent_share: 0,
      nodes_per_capture: 1.5,
    });
    expect(m.rates.captures_per_day).to.be.greaterThan(0);
    expect(m.distill).to.deep.equal({ reports: 1, facts: 4, captured: 1, spooled: 2, rejected: 1, capture_rate: 0.25 });
  });

  it('identities are per-tenant pseudonyms author-<hash12>, stable between calls', async () => {
    const m = (await metrics(t)).body;
    expect(m.authors.count).to.equal(2);
    const [top, second] = m.authors.entries;
    expect(top).to.deep.equal({ author: top.author, captures: 2, created: 2, pending: 0, distill_reports: 1 });
    expect(second).to.deep.equal({ author: second.author, captures: 1, created: 0, pending: 1, distill_reports: 0 });
    for (const e of m.authors.entries) expect(e.author).to.match(PSEUDONYM);
    expect(top.author).to.not.equal(second.author);
    expect((await metrics(t)).body.authors).to.deep.equal(m.authors);
    adminPseudonym = second.author;
    if (!onPostgres) expect(existsSync(join(t.dataDir, 'tenants', t.org, 'state', 'analytics-pseudonym-key.json'))).to.equal(true);
  });

  it('closure entries keep only {edge, latency_days}', async () => {
    const c = (await metrics(t)).body.closure;
    expect(c).to.include({ tracked: 4, closed: 2, rate: 0.5 });
    expect(c.by_edge).to.deep.equal({ resolves: 1, status: 1 });
    expect(c.entries).to.deep.equal([
      { edge: 'resolves', latency_days: 5 },
      { edge: 'status', latency_days: 3 },
    ]);
    expect(c.latency_days).to.include({ count: 2, min: 3, max: 5, median: 4 });
  });

  it('no person ids, emails, node ids or captured text anywhere in the answer', async () => {
    const text = (await metrics(t)).text;
    for (const secret of [
      alice.id,
      t.adminPerson,
      'example.test',
      'admin@localhost',
      'task-',
      'issue-',
      'capture-',
      'login',
      'musing',
      'Backstop',
    ]) {
      expect(text, secret).not.to.include(secret);
    }
  });

  it('since bounds the window by journal date', async () => {
    const today = new Date(t.clock.now()).toISOString().slice(0, 10);
    const tomorrow = new Date(t.clock.now() + DAY).toISOString().slice(0, 10);
    const longAgo = new Date(t.clock.now() - 40 * DAY).toISOString().slice(0, 10);
    const none = (await metrics(t, `?since=${tomorrow}`)).body;
    expect(none.since).to.equal(tomorrow);
    expect(none.captures.total).to.equal(0);
    expect(none.distill.reports).to.equal(0);
    expect(none.authors).to.deep.equal({ count: 0, entries: [] });
    expect((await metrics(t, `?since=${longAgo}`)).body.captures.total).to.equal(3);
    // the captures were five days ago: a window starting today leaves them out
    expect((await metrics(t, `?since=${today}`)).body.captures.total).to.equal(0);
  });

  // switches tenant.json (cluster mode keeps settings in wg_tenants: test/cluster)
  (onPostgres ? describe.skip : describe)('deployment and tenant switches', function () {
    it('404 when the deployment does not export metrics, whoever asks', async () => {
      const off = await startAnalyticsServer({ extra: [capturePlugin] });
      try {
        const person = await addPerson(off, 'Bob');
        for (const token of [off.adminToken, person.token]) {
          const res = await metrics(off, '', token);
          expect(res.status).to.equal(404);
          expect(res.body.error.code).to.equal('not_found');
        }
      } finally {
        await off.close();
      }
    });

    it('another tenant pseudonymizes the same person differently; without the capture plugin the metrics are empty', async () => {
      const other = await startAnalyticsServer({ extra: [capturePlugin], config: { captureMetrics: true } });
      try {
        expect(other.adminPerson).to.equal(t.adminPerson);
        await capture(other, other.adminToken, { text: 'task: Something else' });
        const m = (await metrics(other)).body;
        expect(m.authors.count).to.equal(1);
        expect(m.authors.entries[0].author).to.match(PSEUDONYM);
        expect(m.authors.entries[0].author).to.not.equal(adminPseudonym);

        const tenant = other.server.services.tenants.get(other.org)!;
        await Tenant.writeConfig(tenant.dir, { ...tenant.config, plugins: tenant.config.plugins.filter((p) => p !== 'capture') });
        const deadline = Date.now() + 5000;
        while ((await other.api('POST', '/v1/capture', { body: { text: 'task: x' } })).status !== 404) {
          if (Date.now() > deadline) throw new Error('the plugin change was not picked up');
          await new Promise((r) => setTimeout(r, 100));
        }
        const empty = (await metrics(other)).body;
        expect(empty.capture_enabled).to.equal(false);
        expect(empty.captures.total).to.equal(0);
        expect(empty.authors.count).to.equal(0);
        expect(empty.closure).to.include({ tracked: 0, closed: 0, rate: 0 });
      } finally {
        await other.close();
      }
    });
  });
});
