// ESLint flat config: @eslint/js recommended + typescript-eslint recommended (syntax only; the
// type-checked set would run the TypeScript program a second time after `npm run typecheck`),
// tuned to the habits in docs/decisions.md ("lint: ESLint and Prettier"). Formatting is Prettier's job
// (.prettierrc.json), so no stylistic rules here.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  {
    ignores: [
      '**/node_modules/**',
      'dist/**',
      'data/**',
      '.bench/**',
      'tmp/**',
      // inputs of the importers' tests, copied from other projects byte for byte
      'test/fixtures/**',
      // generated: CodeMirror bundled by `npm run build:editor` (its source is plugins/app/editor/)
      'plugins/app/static/hook-editor.js',
    ],
  },
  // Report an eslint-disable comment that no longer suppresses anything.
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    // Node code: everything outside the two groups of non-Node scripts below.
    ignores: ['plugins/app/static/**', 'seed-pack/hooks/**'],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    languageOptions: { ecmaVersion: 2022, sourceType: 'module' },
    rules: {
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'prefer-const': 'error',
      'no-var': 'error',
      // Unused code is an error; a leading `_` marks a deliberately unused binding (a callback's
      // positional parameter, a destructured field dropped from a copy).
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          args: 'after-used',
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrors: 'none',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      '@typescript-eslint/consistent-type-imports': ['error', { prefer: 'type-imports', fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-import-type-side-effects': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      // 474 assertions today, most after a `has()`/length check TypeScript cannot follow;
      // "no `!` where a check is cheap" stays a review habit (docs/decisions.md).
      '@typescript-eslint/no-non-null-assertion': 'off',
      // The service rejects control characters at its edges on purpose (paths, names, cookie
      // values); this rule flags exactly those deliberate character classes.
      'no-control-regex': 'off',
    },
  },
  {
    // The kernel and the plugins answer through the logger they are given (ctx.log, the
    // kernel's pino logger); a stray console line would bypass the JSON log. The CLI, the
    // scripts and the sandbox child (which reports over IPC) are not in this group.
    files: ['kernel/**', 'plugins/**'],
    ignores: ['plugins/app/static/**'],
    rules: { 'no-console': 'error' },
  },
  {
    files: ['test/**'],
    rules: {
      // Tests read answers as loose JSON (`res.body.tokens.map((x: any) => ...)`) and check
      // their shape with chai and against the operation's output schema; typing every body
      // would restate those schemas. `any` stays an error in the code that ships.
      '@typescript-eslint/no-explicit-any': 'off',
      // chai's property assertions (`.that.is.not.empty`, `.to.not.be.NaN`) are expressions
      '@typescript-eslint/no-unused-expressions': 'off',
    },
  },
  {
    // The web app's own progressive-enhancement scripts: classic browser scripts, one global
    // each from the vendored library the page loads before them.
    files: ['plugins/app/static/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: { ...globals.browser, cytoscape: 'readonly', Chart: 'readonly' },
    },
  },
  {
    // Schema-hook templates: a single arrow function evaluated inside the isolate
    // (sandbox/worker.mjs wraps it in parentheses); the placeholders are replaced with JSON by
    // seed-pack/index.ts and nothing else is in scope there.
    files: ['seed-pack/hooks/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: { __TABLE__: 'readonly', __RULES__: 'readonly' },
    },
    rules: { '@typescript-eslint/no-unused-expressions': 'off' },
  },
);
