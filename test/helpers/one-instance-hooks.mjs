// The load hook of test/helpers/one-instance.mjs: the project modules the server imports lazily,
// and whose graphs share modules (kernel/errors.ts, kernel/plugin.ts, plugin state) with the rest.
// Loaded by the CommonJS loader, each one's own imports are `require`s too, so the whole graph is
// the instance the static imports already gave. Lazily imported leaves that share nothing load
// as they always did: plugins/github/octokit.ts (Octokit's packages are ESM-only, so `require`
// cannot load them) and plugins/oauth/protocol.ts (used only through its own graph). A lazy import added without its entry here shows in tests as a second
// SvcError or RawResponse class (an error page or a JSON body where a 4xx or a stream was due).
const root = new URL('../../', import.meta.url).href;
const LAZY_ENTRIES = new Set(['plugins/app/mount.ts', 'kernel/cluster/runtime.ts', 'kernel/cluster/pg-state.ts']);

export async function load(url, context, next) {
  if (url.startsWith(root) && LAZY_ENTRIES.has(url.slice(root.length))) return { format: 'commonjs', source: null, shortCircuit: true };
  return next(url, context);
}
