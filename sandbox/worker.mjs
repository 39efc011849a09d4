// The sandbox child process: the only code in the project that loads isolated-vm.
//
// Started by sandbox/index.ts with child_process.fork and `--no-node-snapshot`. It is a
// plain .mjs (not .ts through tsx) because a restart after a crash is on the critical
// path: plain Node boots this in ~140 ms, tsx roughly doubles it.
//
// Protocol (JSON over the IPC channel, answered strictly in arrival order: calls run one
// at a time from a queue; the parent's watchdog relies on that order):
//   parent -> child  {i, t: tenant, o: owner, h: hook, s: source, in: input JSON text,
//                     to: CPU time limit ms, wb: wall-time backstop ms, mb: memory MB,
//                     u?: 1 to measure the call (a schema dry run)}
//   child -> parent  {i, k: 'ok', v: result JSON text, n?: live isolate count, c?, hu?, hl?}
//                    {i, k: 'timeout'|'memory'|'threw'|'compile'|'malformed'|'crashed', m: message, n?, c?, hu?, hl?}
//                    c: CPU ms the call used (compile included), hu/hl: the isolate's heap in
//                    use after the call and its limit, bytes (only when the call asked with u)
//   child -> parent  {ready: true} once, after isolated-vm loaded.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const ivm = require('isolated-vm');
const acorn = require('acorn');

const config = JSON.parse(process.argv[2] || '{}');
const MAX_ISOLATES = config.maxIsolates ?? 64;
const MAX_CONTEXTS = config.maxContextsPerIsolate ?? 32;
const MAX_HOOKS_PER_CONTEXT = config.maxHooksPerContext ?? 64;
const MAX_RESULT_BYTES = config.maxResultBytes ?? 64 * 1024;
const TEST_MODE = config.testMode === true;
const MESSAGE_CHARS = 500;

/**
 * Installed in every fresh context before any hook source is evaluated there. It captures
 * the pristine intrinsics it needs, so a hook that later rewrites JSON, Array.prototype or
 * Error in its own context cannot make the wrapper misbehave (beyond spoiling its own
 * results, which only ever come out as a checked JSON string).
 *
 * `invoke(fn, inputJson)` runs the hook on a fresh parse of the input and answers one
 * string: 'v' + JSON text, 'm' + why the result is not plain JSON data, or 't' + what the
 * hook threw. Everything here runs inside the caller's timeout and memory limit.
 */
const CONTEXT_PRELUDE = `(function () {
  'use strict';
  // Each of these is reachable only through its global, and hooks have no use for any:
  // WebAssembly memory lives outside the heap and Memory.grow() ignores the timeout;
  // FinalizationRegistry callbacks and Atomics.waitAsync continuations run later, outside
  // any call and so outside any timeout (a FinalizationRegistry busy loop hung the process).
  for (const name of ['WebAssembly', 'FinalizationRegistry', 'WeakRef', 'SharedArrayBuffer', 'Atomics']) {
    delete globalThis[name];
  }
  // V8 calls Error.prepareStackTrace whenever a stack is formatted, including while
  // isolated-vm copies an error out with no timeout running. Pin it to the default.
  Object.defineProperty(Error, 'prepareStackTrace', { value: undefined, writable: false, enumerable: false, configurable: false });
  const parse = JSON.parse, stringify = JSON.stringify;
  const getProto = Object.getPrototypeOf, ownKeys = Object.keys, isArray = Array.isArray;
  const apply = Reflect.apply, fnToString = Function.prototype.toString, slice = String.prototype.slice;
  const OBJECT_PROTO = Object.prototype, ARRAY_PROTO = Array.prototype;
  const MAX_DEPTH = 64, MAX_BYTES = ${MAX_RESULT_BYTES}, MAX_MESSAGE = ${MESSAGE_CHARS};
  let out = '', budget = 0, malformed = null;

  function bad(why) { malformed = why; throw null; }
  function emit(text) {
    budget -= text.length;
    if (budget < 0) bad('result is larger than ' + MAX_BYTES + ' bytes of JSON');
    out += text;
  }
  function clip(text) { return text.length > MAX_MESSAGE ? apply(slice, text, [0, MAX_MESSAGE]) : text; }
  function describe(e) {
    try {
      if (typeof e === 'string') return clip(e);
      if (e !== null && typeof e === 'object') {
        const message = e.message, name = e.name;
        if (typeof message === 'string') return clip((typeof name === 'string' && name ? name + ': ' : '') + message);
      }
      return 'a non-Error value (' + typeof e + ') was thrown';
    } catch (_) {
      return 'an exception was thrown and could not be described';
    }
  }
  // A strict JSON writer: plain objects, arrays, strings, finite numbers, booleans, null.
  // Functions, symbols, bigints, non-finite numbers, class instances (Date, Map, Promise...)
  // and cycles are refused; undefined is dropped from objects and is null in arrays, as in JSON.
  function write(v, depth, ancestors) {
    switch (typeof v) {
      case 'string': emit(stringify(v)); return;
      case 'boolean': emit(v ? 'true' : 'false'); return;
      case 'number':
        if (v !== v || v === Infinity || v === -Infinity) bad('result holds a non-finite number');
        emit('' + v); return; // JSON writes a finite number as its ToString
      case 'object': break;
      case 'undefined': bad('result holds undefined at the top level'); return;
      default: bad('result holds a ' + typeof v + ', which is not JSON data'); return;
    }
    if (v === null) { emit('null'); return; }
    if (depth >= MAX_DEPTH) bad('result is nested deeper than ' + MAX_DEPTH + ' levels');
    for (let i = 0; i < depth; i++) if (ancestors[i] === v) bad('result is a cyclic structure');
    ancestors[depth] = v;
    const proto = getProto(v);
    if (isArray(v)) {
      if (proto !== ARRAY_PROTO) bad('result holds an array subclass');
      const n = v.length;
      emit('[');
      for (let i = 0; i < n; i++) {
        if (i > 0) emit(',');
        const item = v[i];
        if (item === undefined) emit('null'); else write(item, depth + 1, ancestors);
      }
      emit(']');
      return;
    }
    if (proto !== OBJECT_PROTO && proto !== null) bad('result holds an object that is not a plain object or array');
    const keys = ownKeys(v);
    const n = keys.length;
    let first = true;
    emit('{');
    for (let i = 0; i < n; i++) {
      const key = keys[i];
      const item = v[key];
      if (item === undefined) continue;
      if (!first) emit(',');
      first = false;
      emit(stringify(key));
      emit(':');
      write(item, depth + 1, ancestors);
    }
    emit('}');
  }

  function invoke(fn, inputJson) {
    const input = parse(inputJson);
    let value;
    try {
      value = apply(fn, undefined, [input]);
    } catch (e) {
      return 't' + describe(e);
    }
    out = ''; budget = MAX_BYTES; malformed = null;
    try {
      if ((typeof value === 'object' && value !== null) || typeof value === 'function') {
        if (typeof value.then === 'function') bad('hook returned a Promise or thenable; hooks must be synchronous');
      }
      write(value, 0, []);
    } catch (e) {
      if (malformed !== null) return 'm' + malformed;
      return 't' + describe(e);
    }
    const text = out;
    out = '';
    return 'v' + text;
  }

  function sourceOf(fn) {
    return typeof fn === 'function' ? apply(fnToString, fn, []) : null;
  }

  return [invoke, sourceOf];
})()`;

/** (tenant \0 memoryMb) -> isolate entry; Map order is the LRU order. */
const isolates = new Map();
let reportedIsolates = -1;

class HookFailure extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

function touch(map, key, value) {
  map.delete(key);
  map.set(key, value);
}

function releaseQuietly(ref) {
  try {
    ref.release();
  } catch {
    // already released or its isolate is gone
  }
}

function disposeIsolate(key) {
  const entry = isolates.get(key);
  if (!entry) return;
  isolates.delete(key);
  try {
    if (!entry.isolate.isDisposed) entry.isolate.dispose();
  } catch {
    // disposing twice is harmless
  }
}

function getIsolate(tenant, memoryMb) {
  const key = `${tenant}\0${memoryMb}`;
  let entry = isolates.get(key);
  if (entry && entry.isolate.isDisposed) {
    isolates.delete(key);
    entry = undefined;
  }
  if (entry) {
    touch(isolates, key, entry);
    return entry;
  }
  while (isolates.size >= MAX_ISOLATES) disposeIsolate(isolates.keys().next().value);
  // No onCatastrophicError callback: isolated-vm would call it on this thread while the
  // thread is blocked in applySync, and the process hangs instead of aborting (measured).
  const isolate = new ivm.Isolate({ memoryLimit: memoryMb });
  entry = { key, isolate, contexts: new Map() };
  isolates.set(key, entry);
  return entry;
}

function dropContext(isolateEntry, owner) {
  const ctx = isolateEntry.contexts.get(owner);
  if (!ctx) return;
  isolateEntry.contexts.delete(owner);
  for (const ref of ctx.hooks.values()) releaseQuietly(ref);
  releaseQuietly(ctx.invoke);
  releaseQuietly(ctx.sourceOf);
  releaseQuietly(ctx.context);
}

/** One context per hook owner: what one owner's hook does to its globals, no other owner sees. */
function getContext(isolateEntry, owner, wallMs) {
  let ctx = isolateEntry.contexts.get(owner);
  if (ctx) {
    touch(isolateEntry.contexts, owner, ctx);
    return ctx;
  }
  while (isolateEntry.contexts.size >= MAX_CONTEXTS) dropContext(isolateEntry, isolateEntry.contexts.keys().next().value);
  const context = isolateEntry.isolate.createContextSync();
  // Our own code, a fraction of a millisecond: bounded by the call's wall backstop only.
  const pair = context.evalSync(CONTEXT_PRELUDE, { reference: true, timeout: Math.max(wallMs, 1000), filename: 'sandbox:prelude' });
  const invoke = pair.getSync(0, { reference: true });
  const sourceOf = pair.getSync(1, { reference: true });
  pair.release();
  ctx = { context, invoke, sourceOf, hooks: new Map() };
  isolateEntry.contexts.set(owner, ctx);
  return ctx;
}

/**
 * Is `text` (the function's own source text, as V8 reports it) the whole of `source`,
 * give or take whitespace, comments and wrapping parentheses? This refuses sources such as
 * `evil(), (x) => x` that evaluate to a function but run other code first.
 */
function isWholeSource(source, text) {
  const at = source.indexOf(text);
  if (at < 0 || text.length === 0) return false;
  const opens = countFiller(source.slice(0, at), '(');
  const closes = countFiller(source.slice(at + text.length), ')');
  return opens >= 0 && opens === closes;
}

/** Count `paren` in a stretch made only of whitespace, comments and that paren; -1 otherwise. */
function countFiller(stretch, paren) {
  let count = 0;
  for (let i = 0; i < stretch.length;) {
    const c = stretch[i];
    if (c === paren) {
      count++;
      i++;
      continue;
    }
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === '/' && stretch[i + 1] === '/') {
      const end = stretch.indexOf('\n', i);
      i = end < 0 ? stretch.length : end + 1;
      continue;
    }
    if (c === '/' && stretch[i + 1] === '*') {
      const end = stretch.indexOf('*/', i + 2);
      if (end < 0) return -1;
      i = end + 2;
      continue;
    }
    return -1;
  }
  return count;
}

/** Map an isolated-vm exception to a failure kind. */
function classify(error, isolateEntry, fallbackKind) {
  if (error instanceof HookFailure) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (isolateEntry.isolate.isDisposed || message.startsWith('Isolate was disposed')) {
    disposeIsolate(isolateEntry.key);
    return new HookFailure('memory', 'hook exceeded its memory limit; its isolate was discarded');
  }
  if (message === 'Script execution timed out.') return new HookFailure('timeout', 'hook exceeded its time limit');
  return new HookFailure(fallbackKind, clip(message));
}

function clip(text) {
  return text.length > MESSAGE_CHARS ? text.slice(0, MESSAGE_CHARS) : text;
}

/*
 * CPU-time limits. A call may use `to` ms of CPU (compiling on first use, running, and its
 * microtasks), and `wb` ms of wall time at most (the backstop for a call starved of CPU
 * without end). isolated-vm's own `timeout` counts wall time, and so does its
 * `isolate.cpuTime` as installed here (measured: a busy loop starved to a third of a CPU
 * read ~110 ms of `cpuTime` for ~35 ms of process CPU). CPU is read from the process
 * (`process.cpuUsage`, getrusage: ~3 µs; the child runs one call at a time, so what it uses
 * meanwhile is that call's: its thread, the GC threads it keeps busy, a little IPC).
 *
 * - Fast path: run synchronously on this thread with a wall timeout of the CPU left. Nearly
 *   every hook ends far inside it (a call costs ~20 µs here, ~170 µs asynchronously). If
 *   the timeout fires, the process CPU used meanwhile tells whether the hook held the CPU
 *   (at least STARVED_SHARE of the wait: its limit is spent, the answer is `timeout`) or was
 *   starved by other work on the machine.
 * - Slow path, only after a starved attempt: run the step again from the start,
 *   asynchronously on isolated-vm's thread with the wall backstop as its timeout, while
 *   this thread reads the CPU used each time the budget could at the earliest have run out,
 *   and disposes the isolate when it has. The starved attempt's CPU is not charged (its
 *   work was thrown away), so a busy loop starved on its first attempt uses less than
 *   (1 + STARVED_SHARE) x its limit in all.
 */
const STARVED_SHARE = 0.9;

function cpuMsSince(start) {
  const spent = process.cpuUsage(start);
  return (spent.user + spent.system) / 1000;
}

/**
 * Run one step of a call (evaluate the source, read its text, invoke the hook) within the
 * call's budget {cpuLimitMs, cpuMs, wallEnd, slow}. `step(async, timeoutMs)` starts the step
 * with isolated-vm's sync or async API. Resolves to the step's result, or throws a
 * HookFailure('timeout') when the budget ran out, or the raw isolated-vm error otherwise.
 * `last`: no step follows, so the CPU of a step that finished need not be read.
 */
async function limited(isolateEntry, budget, step, last = false) {
  if (!budget.slow) {
    const wallLeft = budget.wallEnd - performance.now();
    const timeout = Math.max(1, Math.ceil(Math.min(budget.cpuLimitMs - budget.cpuMs, wallLeft)));
    const start = process.cpuUsage();
    let result;
    try {
      result = step(false, timeout);
    } catch (error) {
      if (!isTimeoutError(error)) throw error;
      if (timeout >= wallLeft) throw backstopFailure(budget);
      if (cpuMsSince(start) >= timeout * STARVED_SHARE) throw cpuFailure(budget);
      budget.slow = true; // starved: run the step again, measuring CPU as it goes
      return limited(isolateEntry, budget, step, last);
    }
    if (!last) budget.cpuMs += cpuMsSince(start);
    return result;
  }
  const cpuLeft = budget.cpuLimitMs - budget.cpuMs;
  const wallLeft = budget.wallEnd - performance.now();
  if (wallLeft < 1) throw backstopFailure(budget);
  const start = process.cpuUsage();
  let cut = false;
  let timer;
  const check = () => {
    const used = cpuMsSince(start);
    if (used >= cpuLeft) {
      cut = true;
      // The only way to stop a script from outside before its timeout: the tenant's
      // isolate goes (rebuilt on next use, ~2 ms), as after a memory overrun.
      disposeIsolate(isolateEntry.key);
      return;
    }
    // A hook is one thread (plus the GC threads it keeps busy): check again when half of
    // what is left could have been spent.
    timer = setTimeout(check, Math.max(1, (cpuLeft - used) / 2));
  };
  timer = setTimeout(check, Math.max(1, cpuLeft / 2));
  try {
    const result = await step(true, Math.max(1, Math.ceil(wallLeft)));
    budget.cpuMs += cpuMsSince(start);
    return result;
  } catch (error) {
    if (cut) throw cpuFailure(budget);
    if (isTimeoutError(error)) throw backstopFailure(budget);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

function isTimeoutError(error) {
  return error instanceof Error && error.message === 'Script execution timed out.';
}

function cpuFailure(budget) {
  return new HookFailure('timeout', `hook exceeded its time limit (${budget.cpuLimitMs} ms of CPU)`);
}

function backstopFailure(budget) {
  return new HookFailure('timeout', `hook exceeded its time limit (no answer within ${budget.wallMs} ms of wall time)`);
}

/**
 * Does the source use `import` (a dynamic `import()` or `import.meta`)? isolated-vm has no
 * module loader, so `import()` answers a rejected promise, and it reports a rejection nobody
 * handled as the call's error only while the promise is still alive: it holds it weakly, so a
 * garbage collection during the call turned the same hostile hook's denial into its own
 * `{allow: true}` now and then. Refused before compiling, the verdict no longer depends on the
 * collector. Tokens, not text: `'import('` in a string or a comment is fine. A source that does
 * not tokenize is left for V8 to report.
 */
function usesImport(source) {
  try {
    for (const token of acorn.tokenizer(source, { ecmaVersion: 'latest' })) {
      if (token.type === acorn.tokTypes._import) return true;
    }
  } catch {
    return false;
  }
  return false;
}

/** Evaluate a hook source once in the owner's context; the compiled function is cached by source. */
async function compile(isolateEntry, owner, ctx, msg, budget) {
  const cached = ctx.hooks.get(msg.s);
  if (cached) return cached;
  if (usesImport(msg.s)) throw new HookFailure('compile', 'hook source must not use import: hooks have no modules');
  let script;
  try {
    // Compiled apart from any owner context, so a syntax error is reported by pristine
    // intrinsics rather than by whatever an earlier hook left in this owner's context.
    script = isolateEntry.isolate.compileScriptSync(`(\n${msg.s}\n)`, { filename: `hook:${owner}/${msg.h}`, lineOffset: -1 });
  } catch (error) {
    const failure = classify(error, isolateEntry, 'compile');
    if (failure.kind === 'compile') failure.message = `hook source does not compile: ${failure.message}`;
    throw failure;
  }
  let fn;
  try {
    fn = await limited(isolateEntry, budget, (async, timeout) =>
      async ? script.run(ctx.context, { reference: true, timeout }) : script.runSync(ctx.context, { reference: true, timeout }),
    );
  } catch (error) {
    dropContext(isolateEntry, owner);
    const failure = classify(error, isolateEntry, 'compile');
    if (failure.kind === 'compile') failure.message = `hook source threw while being evaluated: ${failure.message}`;
    throw failure;
  } finally {
    releaseQuietly(script);
  }
  let text;
  try {
    text = await limited(isolateEntry, budget, (async, timeout) =>
      async
        ? ctx.sourceOf.apply(undefined, [fn.derefInto()], { timeout })
        : ctx.sourceOf.applySync(undefined, [fn.derefInto()], { timeout }),
    );
  } catch (error) {
    releaseQuietly(fn);
    dropContext(isolateEntry, owner);
    throw classify(error, isolateEntry, 'compile');
  }
  // A class also passes for a function, but its static blocks run when it is evaluated.
  if (typeof text !== 'string' || /^class\b/.test(text) || !isWholeSource(msg.s, text)) {
    // Evaluating the source may have run code in this context; throw the context away.
    releaseQuietly(fn);
    dropContext(isolateEntry, owner);
    throw new HookFailure('compile', 'hook source must be a single function expression, e.g. (input) => ({ allow: true })');
  }
  if (ctx.hooks.size >= MAX_HOOKS_PER_CONTEXT) {
    const [oldest, ref] = ctx.hooks.entries().next().value;
    ctx.hooks.delete(oldest);
    releaseQuietly(ref);
  }
  ctx.hooks.set(msg.s, fn);
  return fn;
}

/** Test only: hold this process in host code, where no isolate limit reaches it. */
function block(msg) {
  const { ms, sleep } = JSON.parse(msg.in);
  if (sleep === true) {
    // blocked without using CPU, like a process starved of it or stuck in a system call
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  } else {
    const until = performance.now() + ms;
    while (performance.now() < until);
  }
  return { k: 'ok', v: 'null' };
}

async function runHook(msg, measured) {
  if (TEST_MODE && msg.o === '__test:block') return block(msg);
  const budget = {
    cpuLimitMs: msg.to,
    cpuMs: 0,
    wallMs: msg.wb,
    wallEnd: performance.now() + msg.wb,
    slow: false,
  };
  measured.budget = budget;
  const isolateEntry = getIsolate(msg.t, msg.mb);
  measured.isolateEntry = isolateEntry;
  let ctx;
  try {
    ctx = getContext(isolateEntry, msg.o, msg.wb);
  } catch (error) {
    throw classify(error, isolateEntry, 'crashed');
  }
  const fn = await compile(isolateEntry, msg.o, ctx, msg, budget);
  let answer;
  try {
    answer = await limited(
      isolateEntry,
      budget,
      (async, timeout) =>
        async
          ? ctx.invoke.apply(undefined, [fn.derefInto(), msg.in], { timeout })
          : ctx.invoke.applySync(undefined, [fn.derefInto(), msg.in], { timeout }),
      true,
    );
  } catch (error) {
    throw classify(error, isolateEntry, 'threw');
  }
  if (typeof answer !== 'string' || answer.length === 0) return { k: 'malformed', m: 'hook result could not be read' };
  const tag = answer[0];
  const body = answer.slice(1);
  if (tag === 'v') return { k: 'ok', v: body };
  if (tag === 'm') return { k: 'malformed', m: clip(body) };
  return { k: 'threw', m: clip(body) };
}

/**
 * What a measured call (a schema dry run) used: its CPU time (a call cut at its limit counts
 * the whole limit) and the isolate's heap after it. The heap is the tenant's isolate, shared
 * by its hooks: the figure a call is held to by the memory limit.
 */
function usageOf(measured, reply) {
  // the process's CPU over the call (calls run one at a time here, so it is this call's), rather
  // than the budget's count, which skips the last step on the fast path
  const used = cpuMsSince(measured.cpuStart);
  const budget = measured.budget;
  reply.c = Math.round((reply.k === 'timeout' && budget ? Math.max(used, budget.cpuLimitMs) : used) * 100) / 100;
  const isolate = measured.isolateEntry?.isolate;
  if (isolate && !isolate.isDisposed) {
    try {
      const heap = isolate.getHeapStatisticsSync();
      reply.hu = heap.used_heap_size;
      reply.hl = heap.heap_size_limit;
    } catch {
      // disposed in between: no heap figure for this call
    }
  }
}

async function serve(msg) {
  let reply;
  const measured = { cpuStart: process.cpuUsage() };
  try {
    reply = await runHook(msg, measured);
  } catch (error) {
    reply =
      error instanceof HookFailure
        ? { k: error.kind, m: error.message }
        : { k: 'crashed', m: `sandbox internal error: ${clip(error instanceof Error ? error.message : String(error))}` };
  }
  if (msg.u === 1) usageOf(measured, reply);
  reply.i = msg.i;
  if (isolates.size !== reportedIsolates) {
    reportedIsolates = isolates.size;
    reply.n = reportedIsolates;
  }
  process.send(reply);
}

// One call at a time, in arrival order: a call on the slow path yields to the event loop,
// and calls that arrive meanwhile wait here rather than interleave.
const queue = [];
let queueHead = 0;
let draining = false;

async function drain() {
  draining = true;
  while (queueHead < queue.length) {
    const msg = queue[queueHead];
    queue[queueHead++] = undefined;
    try {
      await serve(msg);
    } catch {
      // process.send on a closed channel: 'disconnect' ends this process
    }
  }
  queue.length = 0;
  queueHead = 0;
  draining = false;
}

process.on('message', (msg) => {
  queue.push(msg);
  if (!draining) void drain();
});

// The parent went away (closed us, or died): nothing left to serve.
process.on('disconnect', () => process.exit(0));

process.send({ ready: true });
