// `node --import ./test/helpers/one-instance.mjs` (.mocharc.json, after tsx): under mocha, test
// files load as CommonJS (tsx), and a dynamic `import()` of a project module would otherwise give a
// second, ESM instance of it and of every project module it imports: a second SvcError or
// RawResponse class that the kernel's `instanceof` does not know, a second copy of module state.
// The bundle has one instance of each module (esbuild), so the server's lazy imports
// (docs/decisions.md "Which modules may be imported lazily") would behave differently in tests
// than in production. Here the project modules the server imports lazily are loaded by the
// CommonJS loader instead (a `commonjs` format without source: Node then uses `require` and its
// cache; the list is in one-instance-hooks.mjs), which gives the instance the static imports gave.
import { register } from 'node:module';

register('./one-instance-hooks.mjs', import.meta.url);
