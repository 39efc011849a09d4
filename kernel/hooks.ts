/**
 * The HookRunner: the one way the kernel asks schema hooks (seed and graph-resident)
 * for a verdict. Hooks run only in the sandbox; a hook that throws, times out, runs
 * out of memory or answers malformed data denies the operation with a reason naming
 * the hook and its owner. Verdicts are cached per (hook source, input) so repeated
 * identical questions do not cross into the sandbox again.
 */
import { createHash } from 'node:crypto';
import type { HookOutcome, Sandbox, SandboxLimits } from '../sandbox/types.js';
import { errors } from './errors.js';
import type { HookRef, Registry } from './registry.js';

export interface TransitionInput {
  node: Record<string, unknown>;
  from: string | null;
  to: string;
  actor: string;
}

const CACHE_LIMIT = 5000;

export class HookRunner {
  private readonly cache = new Map<string, unknown>();

  constructor(
    private readonly sandbox: Sandbox,
    private readonly tenant: string,
    private readonly limits: () => Partial<SandboxLimits>,
    /** what a pack hook's answer depends on (SchemaPack.hook_inputs); the whole input otherwise */
    private readonly inputsOf: ReadonlyMap<string, (input: unknown) => unknown> = new Map(),
  ) {}

  private async call(ref: HookRef, input: unknown): Promise<{ ok: true; value: unknown } | { ok: false; message: string }> {
    const reads = this.inputsOf.get(ref.source);
    const key = createHash('sha1')
      .update(ref.owner)
      .update('\0')
      .update(ref.source)
      .update('\0')
      .update(JSON.stringify(reads ? reads(input) : input) ?? '')
      .digest('hex');
    if (this.cache.has(key)) return { ok: true, value: this.cache.get(key) };
    const call = { tenant: this.tenant, owner: ref.owner, hook: ref.hook, source: ref.source, input, limits: this.limits() };
    let outcome = await this.sandbox.run(call);
    // Seed-pack hooks are our own code: one that times out or loses its child process met
    // a stalled machine, not a verdict, so it is asked once more. Graph hooks are not
    // retried: a hostile hook must not cost twice its limit.
    if (!outcome.ok && ref.owner.startsWith('seed:') && (outcome.kind === 'timeout' || outcome.kind === 'crashed')) {
      outcome = await this.sandbox.run(call);
    }
    if (!outcome.ok) return { ok: false, message: `${outcome.kind}: ${outcome.message}` };
    if (this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, outcome.value);
    return outcome;
  }

  /**
   * One measured call for a schema dry run: the tenant's sandbox under the tenant's own limits,
   * never cached and never retried (the author sees what this very call used), answered as the
   * sandbox's outcome with its CPU time and heap. Writes nothing: a hook gets copied data only.
   */
  measure(ref: HookRef, input: unknown): Promise<HookOutcome> {
    return this.sandbox.run({
      tenant: this.tenant,
      owner: ref.owner,
      hook: ref.hook,
      source: ref.source,
      input,
      limits: this.limits(),
      measure: true,
    });
  }

  /** The limits every hook call of this tenant runs under. */
  get callLimits(): Partial<SandboxLimits> {
    return this.limits();
  }

  /** Every transition hook for the type must allow; the first denial wins. */
  async checkTransition(registry: Registry, type: string, input: TransitionInput): Promise<void> {
    for (const ref of registry.hooksFor(type, 'transition')) {
      const result = await this.call(ref, input);
      const where = `transition hook of ${ref.owner}`;
      if (!result.ok) {
        throw errors.transitionDenied(`${where} failed (${result.message}); the move is denied`, {
          hook: ref.owner,
          from: input.from,
          to: input.to,
        });
      }
      const verdict = result.value as { allow?: unknown; reason?: unknown } | null;
      if (!verdict || typeof verdict !== 'object' || typeof verdict.allow !== 'boolean') {
        throw errors.transitionDenied(`${where} answered malformed data (expected {allow, reason?}); the move is denied`, {
          hook: ref.owner,
        });
      }
      if (!verdict.allow) {
        const reason = typeof verdict.reason === 'string' && verdict.reason ? verdict.reason : `denied by ${where}`;
        throw errors.transitionDenied(reason, { hook: ref.owner, from: input.from, to: input.to });
      }
    }
  }

  /** Runs every validate hook; collects their errors and throws one 422 with all of them. */
  async validate(registry: Registry, type: string, node: Record<string, unknown>): Promise<void> {
    const collected: unknown[] = [];
    for (const ref of registry.hooksFor(type, 'validate')) {
      const result = await this.call(ref, { node });
      const where = `validate hook of ${ref.owner}`;
      if (!result.ok) {
        collected.push({ hook: ref.owner, message: `${where} failed (${result.message}); the node is rejected` });
        continue;
      }
      const verdict = result.value as { ok?: unknown; errors?: unknown } | null;
      if (!verdict || typeof verdict !== 'object' || typeof verdict.ok !== 'boolean') {
        collected.push({ hook: ref.owner, message: `${where} answered malformed data (expected {ok, errors}); the node is rejected` });
        continue;
      }
      if (!verdict.ok) {
        const list = Array.isArray(verdict.errors) && verdict.errors.length > 0 ? verdict.errors : [`rejected by ${where}`];
        for (const e of list) collected.push({ hook: ref.owner, message: typeof e === 'string' ? e : JSON.stringify(e) });
      }
    }
    if (collected.length > 0) throw errors.validation(`node rejected by schema validation`, collected);
  }
}
