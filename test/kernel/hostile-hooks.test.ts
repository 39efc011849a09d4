import { expect } from 'chai';
import { readFileSync, readdirSync } from 'node:fs';
import { IdentityAuthority } from '../../kernel/identity-guard.js';
import { corePlugin } from '../../plugins/core/index.js';
import { addPerson, md, putNodes, startTestServer, type TestServer } from '../helpers/harness.js';
import { childCpuMs } from '../sandbox/helpers.js';

/**
 * Hostile graph hooks through the real server: each is contained, denies the move with a
 * reason naming the hook, costs the hook sandbox at most the hook's CPU limit (twice, when a
 * first attempt was starved of CPU: sandbox/README.md "Limits") plus 100 ms of CPU, and the
 * server keeps answering /healthz and node reads during and after, over 30 repetitions. CPU,
 * not wall time: the limit is CPU time, and on a loaded machine the wall time of 50 ms of CPU
 * is the scheduler's to decide.
 */
const HOSTILE: Array<{ name: string; source: string; reason: RegExp }> = [
  { name: 'busy-loop', source: '(input) => { while (true) {} }', reason: /timeout/ },
  {
    name: 'never-resolves',
    source: 'async (input) => { await new Promise(() => {}); return { allow: true }; }',
    reason: /malformed|timeout/,
  },
  {
    name: 'then-loop',
    source: '(input) => { Promise.resolve().then(function spin() { while (true) {} }); return { allow: true }; }',
    reason: /timeout|crashed|malformed/,
  },
  {
    name: 'allocation',
    source: '(input) => { const xs = []; while (true) xs.push(new Array(100000).fill(1)); }',
    reason: /memory|threw|crashed|timeout/,
  },
  {
    name: 'map-growth',
    source: '(input) => { const m = new Map(); let i = 0; while (true) m.set(i, { i: i++, pad: "x".repeat(64) }); }',
    reason: /memory|crashed|timeout|quarantine/,
  },
  { name: 'recursion', source: '(input) => { const f = (n) => f(n + 1) + 1; return f(0); }', reason: /threw/ },
  {
    name: 'constructor-escape',
    source:
      "(input) => { const p = this.constructor.constructor('return process')(); return { allow: false, reason: 'escaped ' + typeof p.env }; }",
    reason: /threw|escaped undefined/,
  },
  {
    name: 'require',
    source: "(input) => { const fs = require('fs'); return { allow: false, reason: 'got fs ' + typeof fs.readFileSync }; }",
    reason: /threw/,
  },
  { name: 'dynamic-import', source: "(input) => { import('fs'); return { allow: true }; }", reason: /threw|compile|malformed/ },
  {
    name: 'prepare-stack-trace',
    source:
      "(input) => { Error.prepareStackTrace = (e, s) => s.map((f) => String(f.getThis && f.getThis())); return { allow: false, reason: String(new Error('x').stack) }; }",
    reason: /^Error: x\n\s+at hook:schema-hostile-prepare-stack-trace/,
  },
];

/** CPU (ms) used so far by this process's live children: the hook sandbox (the server runs in this process). */
function sandboxCpuMs(): number {
  let ms = 0;
  if (process.platform !== 'linux') return ms;
  for (const tid of readdirSync('/proc/self/task')) {
    let children: string;
    try {
      children = readFileSync(`/proc/self/task/${tid}/children`, 'utf8');
    } catch {
      continue; // the thread exited
    }
    for (const pid of children.split(' ').filter(Boolean)) ms += childCpuMs(Number(pid)) ?? 0;
  }
  return ms;
}

describe('hostile graph hooks are contained (through the server)', function () {
  this.timeout(120_000);
  let t: TestServer;
  let reviewer: { id: string; token: string };
  let n = 0;

  before(async () => {
    t = await startTestServer({ plugins: [corePlugin], ownSandbox: true });
    reviewer = await addPerson(t, 'Reviewer');
  });
  after(async () => t.close());

  async function activate(id: string, hooks: Record<string, string>, appliesTo = 'task', token?: string, reviewerToken = reviewer.token) {
    const put = await t.api('POST', '/v1/nodes', {
      token,
      body: { nodes: [md({ id, type: 'schema', summary: id, applies_to: appliesTo, hooks })] },
    });
    expect(put.status, put.text).to.equal(200);
    const act = await t.api('POST', `/v1/nodes/${id}/status`, { token: reviewerToken, body: { status: 'active' } });
    expect(act.status, act.text).to.equal(200);
  }

  async function retire(id: string) {
    expect((await t.api('POST', `/v1/nodes/${id}/status`, { body: { status: 'retired' } })).status).to.equal(200);
  }

  for (const hostile of HOSTILE) {
    it(`${hostile.name}: denied with a reason naming the hook, costing the sandbox its CPU limit + 100 ms at most, 30 times; the server keeps serving`, async () => {
      const schemaId = `schema-hostile-${hostile.name}`;
      const taskId = `task-victim-${hostile.name}`;
      const controlId = `issue-control-${hostile.name}`;
      // the victim exists first: transition hooks also govern creates
      await putNodes(t, [{ id: taskId, type: 'task', summary: 'victim' }]);
      await activate(schemaId, { transition: hostile.source });
      try {
        const slowest: number[] = [];
        const sandboxCpu: number[] = [];
        // the same server's write path without a hook (the schema applies to tasks), timed right
        // after each hostile call: what the machine's load alone costs a write at that moment
        const control: number[] = [];
        for (let i = 0; i < 30; i++) {
          const started = performance.now();
          const cpuStarted = sandboxCpuMs();
          const [res, health, read] = await Promise.all([
            t.api('POST', `/v1/nodes/${taskId}/status`, { body: { status: i % 2 ? 'blocked' : 'review' } }),
            t.api('GET', '/healthz', { token: null }),
            t.api('GET', '/v1/nodes/proj-root'),
          ]);
          slowest.push(performance.now() - started);
          sandboxCpu.push(sandboxCpuMs() - cpuStarted);
          expect(res.status, res.text).to.equal(409);
          expect(res.body.error.code).to.equal('transition_denied');
          expect(res.body.error.details.hook).to.equal(schemaId);
          expect(res.body.error.message).to.match(hostile.reason);
          // nothing of the host leaks through a reason: no host paths, modules or objects
          expect(res.body.error.message).to.not.match(/\/work\/|node:internal|node_modules|\[object (process|global)/);
          expect(health.status).to.equal(200);
          expect(read.status).to.equal(200);
          const controlStarted = performance.now();
          const [created] = await putNodes(t, [{ id: `${controlId}-${i}`, type: 'issue', summary: `control ${i}` }]);
          control.push(performance.now() - controlStarted);
          expect(created.status, JSON.stringify(created)).to.equal('created');
        }
        const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
        // the hook limit is 50 ms of CPU, 100 ms when a first attempt was starved; 100 ms on top for
        // the sandbox's own work (IPC, an isolate rebuilt after a memory overrun, a restart)
        const wall = `wall: median ${median(slowest).toFixed(0)} ms, a write without a hook ${median(control).toFixed(0)} ms`;
        expect(median(sandboxCpu), `median ms of sandbox CPU (${wall})`).to.be.below(2 * 50 + 100);
        // the slowest also absorbs scheduler noise on a loaded 2-core machine (the sandbox's own
        // tests hold each call to the limit + 100 ms without HTTP in between)
        expect(Math.max(...slowest), 'slowest ms').to.be.below(2000 + Math.max(...control));
        expect((await t.api('GET', `/v1/nodes/${taskId}`)).body.frontmatter.status).to.equal('open');
      } finally {
        await retire(schemaId);
      }
      // after retiring, writes work again
      expect((await t.api('POST', `/v1/nodes/${taskId}/status`, { body: { status: 'review' } })).status).to.equal(200);
      n++;
    });
  }

  it('ran every hostile case', () => expect(n).to.equal(HOSTILE.length));

  it("a hook cannot read another tenant's data", async () => {
    const services = t.server.services;
    const other = await services.tenants.create({ org: 'other', adminEmail: 'b@other.test', adminName: 'B', plugins: ['core'] });
    await services.tenants.scan();
    const otherReviewer = services.tenants.get('other')!;
    // tenant B's hook plants a global; tenant A's hook looks for it
    const { generateToken, newTokenRecord } = await import('../../kernel/auth.js');
    const reviewerB = generateToken('pat');
    const tenantB = otherReviewer;
    // a person is an identity fact: written as the identity plugin would
    await tenantB.write(
      { personId: other.person, name: 'B', email: 'b@other.test', agent: null, session: null },
      { op: 'test', via: 'rest', identity: IdentityAuthority.issue('test') },
      async (draft) => {
        draft.put({
          frontmatter: { id: 'person-b2', type: 'person', status: 'active', summary: 'B2', name: 'B2', email: 'b2@other.test' },
          body: '',
        });
      },
    );
    await tenantB.tokens.mutate((records) => {
      const rec = newTokenRecord(reviewerB, { kind: 'pat', person: 'person-b2', created: new Date().toISOString() });
      records.set(rec.hash, rec);
    });
    await t.api('POST', '/v1/nodes', { token: other.token, body: { nodes: [md({ id: 'task-b', type: 'task', summary: 'b' })] } });
    await activate(
      'schema-plant',
      { transition: "(input) => { globalThis.secret = 'tenant-b-secret'; return { allow: true }; }" },
      'task',
      other.token,
      reviewerB,
    );
    expect((await t.api('POST', '/v1/nodes/task-b/status', { token: other.token, body: { status: 'review' } })).status).to.equal(200);

    await putNodes(t, [{ id: 'task-peek', type: 'task', summary: 'peek' }]);
    await activate('schema-peek', { transition: "(input) => ({ allow: false, reason: 'saw ' + String(globalThis.secret) })" });
    const res = await t.api('POST', '/v1/nodes/task-peek/status', { body: { status: 'review' } });
    expect(res.status).to.equal(409);
    expect(res.body.error.message).to.equal('saw undefined');
    await retire('schema-peek');
  });
});
