/**
 * The one way tests wait: for a condition, never for a fixed time (CI runs on a loaded 2-core
 * machine, where a sleep that is long enough here is too short there).
 *
 * `check` is called until it returns a truthy value, which `until` returns; a falsy one
 * (false, undefined, null, 0, '') means not yet. Past `ms` it throws naming `what` (a function is
 * asked only then, so a message can carry the last value seen). `every`: the pause between checks;
 * `between`: run before each pause (to nudge what is awaited, as a delivery turn).
 */
export interface UntilOptions {
  every?: number;
  between?: () => unknown;
}

export async function until<T>(
  check: () => T | Promise<T>,
  what: string | (() => string) = 'a condition',
  ms = 20_000,
  opts: UntilOptions = {},
): Promise<NonNullable<T>> {
  const deadline = performance.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (performance.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${typeof what === 'function' ? what() : what}`);
    await opts.between?.();
    await new Promise((resolve) => setTimeout(resolve, opts.every ?? 20));
  }
}
