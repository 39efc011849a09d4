import { expect } from 'chai';
import { BENIGN, TRANSITION_INPUT, cutBy, sandboxScope } from './helpers.js';

describe('sandbox: hook calls', () => {
  const scope = sandboxScope();
  after(() => scope.closeAll());
  const t = scope.make();
  before(() => t.sandbox.ready());

  describe('results', () => {
    it('runs a transition hook and copies its plain result out', async () => {
      expect(await t.run(BENIGN, TRANSITION_INPUT)).to.deep.equal({ ok: true, value: { allow: true } });
      expect(await t.run(BENIGN, { ...TRANSITION_INPUT, from: 'open' })).to.deep.equal({
        ok: true,
        value: { allow: false, reason: 'move to review first' },
      });
    });

    it('runs a validate hook', async () => {
      const source =
        "(input) => { const errors = []; if (!input.node.title) errors.push('title is required'); return { ok: errors.length === 0, errors }; }";
      expect(await t.run(source, { node: { id: 'task-a' } }, { hook: 'validate' })).to.deep.equal({
        ok: true,
        value: { ok: false, errors: ['title is required'] },
      });
    });

    it('accepts function expressions of every form, with comments and wrapping parentheses', async () => {
      const sources = [
        'function (input) { return input.n + 1 }',
        'function named(input) { return input.n + 1 }',
        '(input) => input.n + 1',
        'input => input.n + 1',
        '({ n }) => n + 1',
        '// adds one\n((input) => input.n + 1) /* trailing */\n',
      ];
      for (const source of sources) expect(await t.run(source, { n: 1 }), source).to.deep.equal({ ok: true, value: 2 });
    });

    it('gives the hook a copy: changes to its input do not reach the caller', async () => {
      const input = { node: { tags: ['a'] } };
      const outcome = await t.run('(input) => { input.node.tags.push("b"); return input.node.tags }', input);
      expect(outcome).to.deep.equal({ ok: true, value: ['a', 'b'] });
      expect(input.node.tags).to.deep.equal(['a']);
    });

    it('follows JSON for undefined: dropped from objects, null in arrays; undefined input arrives as null', async () => {
      expect(await t.run('() => ({ a: 1, b: undefined, c: [undefined, 2] })')).to.deep.equal({ ok: true, value: { a: 1, c: [null, 2] } });
      const outcome = await t.sandbox.run({ tenant: 'acme', owner: 'o', hook: 'h', source: '(input) => input === null', input: undefined });
      expect(outcome).to.deep.equal({ ok: true, value: true });
    });

    it('reports what the hook threw as `threw`', async () => {
      expect(await t.run("() => { throw new TypeError('bad node') }")).to.deep.equal({
        ok: false,
        kind: 'threw',
        message: 'TypeError: bad node',
      });
      expect(await t.run("() => { throw 'plain string' }")).to.deep.equal({ ok: false, kind: 'threw', message: 'plain string' });
      const long = await t.run("() => { throw new Error('x'.repeat(100000)) }");
      expect(long.ok === false && long.kind === 'threw' && long.message.length <= 500).to.equal(true);
    });

    it("caches a compiled hook per source and keeps an owner's context between calls", async () => {
      const counter = '() => (globalThis.calls = (globalThis.calls || 0) + 1)';
      const first = await t.run(counter, {}, { owner: 'schema-counter' });
      const second = await t.run(counter, {}, { owner: 'schema-counter' });
      expect(first).to.deep.equal({ ok: true, value: 1 });
      expect(second).to.deep.equal({ ok: true, value: 2 });
    });
  });

  describe('compile', () => {
    it('refuses a syntax error', async () => {
      const outcome = await t.run('(input) => {');
      expect(outcome.ok).to.equal(false);
      expect(outcome.ok === false && outcome.kind).to.equal('compile');
    });

    it('refuses sources that are not a function expression', async () => {
      for (const source of ['42', "'text'", '({ allow: true })', 'class { static { globalThis.ran = 1 } }', '   ']) {
        const outcome = await t.run(source);
        expect(outcome.ok === false && outcome.kind, source).to.equal('compile');
      }
    });

    it('refuses sources that run other code before yielding a function, and leaves no trace of it', async () => {
      const injections = [
        'globalThis.leaked = 1, () => 1',
        '() => 1\n), (globalThis.leaked = 2, () => 1',
        '(globalThis.leaked = 3) && (() => 1)',
        '/* () => 1 */ (globalThis.leaked = 4, () => 1)',
      ];
      for (const source of injections) {
        const outcome = await t.run(source, {}, { owner: 'schema-injector' });
        expect(outcome.ok === false && outcome.kind, source).to.equal('compile');
      }
      expect(await t.run('() => typeof globalThis.leaked', {}, { owner: 'schema-injector' })).to.deep.equal({
        ok: true,
        value: 'undefined',
      });
    });

    it('refuses a source that uses import, handled or not, whatever the collector does; the word in a string or comment is fine', async () => {
      // isolated-vm reports an unhandled rejection (what import() answers) only while the promise
      // lives: after a collection the hook's own answer came back instead, now and then
      const importing = [
        "(input) => { import('fs'); return { allow: true }; }",
        "(input) => { import('fs').catch(() => undefined); return { allow: true }; }",
        '(input) => { import /* spaced */ (`node:${"fs"}`); return { allow: true }; }',
        '(input) => ({ allow: typeof import.meta === "object" })',
      ];
      for (const source of importing) {
        const outcome = await t.run(source, TRANSITION_INPUT, { owner: 'schema-importer' });
        expect(outcome, source).to.deep.include({ ok: false, kind: 'compile' });
        expect(outcome.ok === false && outcome.message, source).to.match(/must not use import/);
      }
      const words = [
        "() => ({ allow: true, reason: 'import(\\'fs\\') is not here' })",
        '() => /* import("fs") */ ({ allow: true })',
        '() => ({ imported: 1 }).imported',
      ];
      for (const source of words) expect((await t.run(source, TRANSITION_INPUT)).ok, source).to.equal(true);
    });

    it('refuses a source over maxSourceBytes (16 KB by default) before it reaches the child', async () => {
      const big = `() => ${JSON.stringify('x'.repeat(16 * 1024))}`;
      const outcome = await t.run(big);
      expect(outcome).to.deep.include({ ok: false, kind: 'compile' });
      const justUnder = `() => ${JSON.stringify('x'.repeat(16 * 1024 - 20))}`;
      expect((await t.run(justUnder)).ok).to.equal(true);
    });
  });

  describe('malformed results and inputs', () => {
    const cases: Array<[string, string]> = [
      ['a function', '() => () => 1'],
      ['a nested function', '() => ({ allow: true, fn() {} })'],
      ['a symbol', "() => Symbol('x')"],
      ['a bigint', '() => 10n'],
      ['a cyclic object', '() => { const a = {}; a.self = a; return a }'],
      ['a cyclic array', '() => { const a = []; a.push(a); return a }'],
      ['a Date', '() => new Date(0)'],
      ['a Map', '() => new Map([[1, 2]])'],
      ['a class instance', '() => new (class Verdict { constructor() { this.allow = true } })()'],
      ['NaN', '() => ({ score: NaN })'],
      ['undefined', '() => undefined'],
      ['a Promise from an async hook', 'async () => ({ allow: true })'],
      ['a thenable', '() => ({ then(resolve) { resolve(1) } })'],
      ['a result over maxResultBytes (64 KB)', "() => 'x'.repeat(65 * 1024)"],
      ['a structure nested too deep', '() => { let v = 1; for (let i = 0; i < 100; i++) v = [v]; return v }'],
      ['exponential shared structure', '() => { let v = [1]; for (let i = 0; i < 40; i++) v = [v, v]; return v }'],
    ];
    for (const [what, source] of cases) {
      it(`answers malformed for ${what}`, async () => {
        // the point is the shape check, not the time limit: a generous limit so a loaded machine
        // (stress-ng beside the suite) cannot turn the answer into a timeout
        const outcome = await t.run(source, undefined, { limits: { timeoutMs: 1000 } });
        expect(outcome.ok === false && outcome.kind, JSON.stringify(outcome)).to.equal('malformed');
      });
    }

    it('answers malformed for an input that is not JSON data', async () => {
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      expect(await t.run('(x) => 1', cyclic)).to.deep.include({ ok: false, kind: 'malformed' });
      expect(await t.run('(x) => 1', { n: 1n })).to.deep.include({ ok: false, kind: 'malformed' });
    });
  });

  describe('limits and isolates', () => {
    it('uses one isolate per (tenant, memory limit)', async () => {
      const s = scope.make();
      await s.run('() => 1', {}, { tenant: 't1' });
      await s.run('() => 1', {}, { tenant: 't1', owner: 'other-owner' });
      expect(s.sandbox.stats().isolates).to.equal(1);
      await s.run('() => 1', {}, { tenant: 't2' });
      await s.run('() => 1', {}, { tenant: 't1', limits: { memoryMb: 32 } });
      expect(s.sandbox.stats().isolates).to.equal(3);
    });

    it('applies createSandbox defaults and per-call limits', async () => {
      const s = scope.make({ defaults: { timeoutMs: 20 } });
      await s.sandbox.ready();
      // cutBy asserts a timeout whose message names the limit that applied (CPU time, or the
      // wall backstop derived from it)
      const loop = '() => { while (true) {} }';
      cutBy(await s.run(loop), 20);
      cutBy(await s.run(loop, {}, { limits: { timeoutMs: 60 } }), 60);
      expect(await s.run('() => 1', {}, { limits: { timeoutMs: 60 } })).to.deep.equal({ ok: true, value: 1 });
    });

    it('refuses an input over maxInputBytes and a result over maxResultBytes', async () => {
      const s = scope.make({ maxInputBytes: 1000, maxResultBytes: 100 });
      expect(await s.run('(x) => 1', { text: 'x'.repeat(1000) })).to.deep.include({ ok: false, kind: 'malformed' });
      expect(await s.run('(x) => x.text.length', { text: 'x'.repeat(900) })).to.deep.equal({ ok: true, value: 900 });
      expect(await s.run("() => 'y'.repeat(100)")).to.deep.include({ ok: false, kind: 'malformed' });
      expect(await s.run("() => 'y'.repeat(90)")).to.deep.equal({ ok: true, value: 'y'.repeat(90) });
    });

    it('keeps at most maxIsolates isolates, dropping the least recently used', async () => {
      const s = scope.make({ maxIsolates: 2 });
      await s.run("() => { globalThis.mark = 'a'; return 1 }", {}, { tenant: 'a' });
      await s.run('() => 1', {}, { tenant: 'b' });
      await s.run('() => 1', {}, { tenant: 'c' });
      expect(s.sandbox.stats().isolates).to.equal(2);
      // Tenant a's isolate was dropped; its state went with it.
      expect(await s.run('() => typeof globalThis.mark', {}, { tenant: 'a' })).to.deep.equal({ ok: true, value: 'undefined' });
    });

    it('keeps at most maxContextsPerIsolate owner contexts, dropping the least recently used', async () => {
      const s = scope.make({ maxContextsPerIsolate: 2 });
      await s.run("() => { globalThis.mark = 'x'; return 1 }", {}, { owner: 'owner-1' });
      await s.run('() => 1', {}, { owner: 'owner-2' });
      expect(await s.run('() => globalThis.mark', {}, { owner: 'owner-1' })).to.deep.equal({ ok: true, value: 'x' });
      await s.run('() => 1', {}, { owner: 'owner-3' }); // evicts owner-2, the least recently used
      expect(await s.run('() => globalThis.mark', {}, { owner: 'owner-1' })).to.deep.equal({ ok: true, value: 'x' });
      await s.run('() => 1', {}, { owner: 'owner-2' }); // evicts owner-3
      await s.run('() => 1', {}, { owner: 'owner-4' }); // evicts owner-1
      expect(await s.run('() => typeof globalThis.mark', {}, { owner: 'owner-1' })).to.deep.equal({ ok: true, value: 'undefined' });
    });

    it('honours a smaller maxSourceBytes', async () => {
      const s = scope.make({ maxSourceBytes: 64 });
      expect(await s.run(`() => '${'y'.repeat(64)}'`)).to.deep.include({ ok: false, kind: 'compile' });
      expect(await s.run('() => 1')).to.deep.equal({ ok: true, value: 1 });
    });
  });

  describe('measured calls (a schema dry run)', () => {
    it('answers the CPU time and the isolate heap only when asked', async () => {
      expect(await t.run('() => 1')).to.deep.equal({ ok: true, value: 1 });
      const measured = await t.run('() => { let n = 0; for (let i = 0; i < 1e5; i++) n += i; return n > 0 }', {}, { measure: true });
      expect(measured).to.deep.include({ ok: true, value: true });
      expect(measured.usage?.cpuMs).to.be.a('number').and.at.least(0);
      expect(measured.usage?.heapUsedBytes).to.be.a('number').and.above(0);
      expect(measured.usage?.heapLimitBytes)
        .to.be.a('number')
        .and.above(measured.usage?.heapUsedBytes ?? 0);
    });

    it('a loop cut at its limit counts the whole limit; a failure carries its usage too', async () => {
      const loop = await t.run('() => { for (;;) {} }', {}, { measure: true, limits: { timeoutMs: 30 } });
      expect(loop).to.deep.include({ ok: false, kind: 'timeout' });
      expect(loop.usage?.cpuMs).to.be.at.least(30);
      const threw = await t.run("() => { throw new Error('no') }", {}, { measure: true });
      expect(threw).to.deep.include({ ok: false, kind: 'threw' });
      expect(threw.usage?.cpuMs).to.be.a('number');
    });
  });

  describe('start-up', () => {
    it('answers calls made while the child is still booting, once it is up', async () => {
      const s = scope.make();
      const outcomes = await Promise.all([s.run(BENIGN, TRANSITION_INPUT), s.run('() => 2')]);
      expect(outcomes).to.deep.equal([
        { ok: true, value: { allow: true } },
        { ok: true, value: 2 },
      ]);
      const ready = s.events.find((e) => e.type === 'ready');
      expect(ready).to.not.equal(undefined);
    });
  });
});
