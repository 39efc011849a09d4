/**
 * Plugins reach each other only through what they declare (docs/decisions.md, "Plugin edges"):
 * the import and export-from statements of every file under plugins/ are read with the
 * TypeScript compiler's own scanner (`ts.preProcessFile`: static, type-only, `export ... from`,
 * dynamic `import()` and `import('...')` types alike) and resolved, and the tree fails on
 *
 * - an import of a plugin the importer does not list in `dependsOn` or `optionalDependsOn`,
 *   or a listed plugin it never imports (the lists name exactly the imports);
 * - an import of another plugin's file other than its `api.ts` (operations) or `public.ts`;
 * - a cycle among the declared dependencies;
 * - a file of the kernel or the sandbox importing a plugin or the composition root (scripts/).
 *
 * The checker is a pure function over file texts and manifests, so it is also run on small
 * made-up trees to show that each rule reports what it should.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { checkManifests, type PluginDef } from '../../kernel/plugin.js';
import { allPlugins } from '../../scripts/plugins.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The files of a plugin that other plugins may import. */
const PUBLIC_FILES = ['api.ts', 'public.ts'];

/** repository-relative path (forward slashes) -> source text */
type Tree = Map<string, string>;
type Manifest = Pick<PluginDef, 'name' | 'dependsOn' | 'optionalDependsOn'>;

function readTree(...dirs: string[]): Tree {
  const tree: Tree = new Map();
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) tree.set(path, readFileSync(join(ROOT, path), 'utf8'));
    }
  };
  dirs.forEach(walk);
  return tree;
}

/** The repository-relative .ts paths a file imports (relative specifiers only: packages are not ours). */
function importsOf(path: string, text: string): Array<{ specifier: string; target: string }> {
  return ts
    .preProcessFile(text, true, true)
    .importedFiles.map((f) => f.fileName)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => {
      const abs = resolve(ROOT, dirname(path), specifier);
      return { specifier, target: relative(ROOT, abs).split(sep).join('/').replace(/\.js$/, '.ts') };
    });
}

const pluginOf = (path: string): string | null => /^plugins\/([^/]+)\//.exec(path)?.[1] ?? null;

interface ImportReport {
  problems: string[];
  /** plugin -> plugins its files import */
  imports: Map<string, Set<string>>;
}

/** Every breach of the plugin-edge rules in `tree`, each a readable sentence naming the file. */
function checkPluginImports(tree: Tree, manifests: Manifest[]): ImportReport {
  const problems: string[] = [];
  const byName = new Map(manifests.map((m) => [m.name, m]));
  const imports = new Map<string, Set<string>>();
  for (const [path, text] of tree) {
    const from = pluginOf(path);
    for (const { specifier, target } of importsOf(path, text)) {
      const to = pluginOf(target);
      if (from === null) {
        if (to !== null || target.startsWith('scripts/'))
          problems.push(
            `${path} imports '${specifier}': the kernel and the sandbox never import a plugin or the composition root; a plugin reaches the kernel through PluginDef hooks and KernelServices`,
          );
        continue;
      }
      if (target.startsWith('scripts/') || target.startsWith('test/')) {
        problems.push(`${path} imports '${specifier}': a plugin never imports the composition root (scripts/) or tests`);
        continue;
      }
      if (to === null || to === from) continue;
      const seen = imports.get(from) ?? new Set<string>();
      imports.set(from, seen.add(to));
      const declared = byName.get(from);
      const required = declared?.dependsOn ?? [];
      const optional = declared?.optionalDependsOn ?? [];
      if (!required.includes(to) && !optional.includes(to)) {
        problems.push(
          `${path} imports '${specifier}' from plugin '${to}', which plugin '${from}' does not declare: add '${to}' to dependsOn (needed) or optionalDependsOn (works without it) in plugins/${from}/index.ts`,
        );
      }
      const file = target.slice(`plugins/${to}/`.length);
      if (!PUBLIC_FILES.includes(file)) {
        problems.push(
          `${path} imports '${specifier}', an internal file of plugin '${to}': import its ${PUBLIC_FILES.join(' or ')} (export what is needed from plugins/${to}/public.ts)`,
        );
      }
    }
  }
  for (const m of manifests) {
    const used = imports.get(m.name) ?? new Set<string>();
    for (const dep of [...(m.dependsOn ?? []), ...(m.optionalDependsOn ?? [])]) {
      if (!used.has(dep))
        problems.push(
          `plugin '${m.name}' declares '${dep}' but none of its files imports it: the lists name exactly the plugins it imports`,
        );
    }
  }
  const cycle = findCycle(manifests);
  if (cycle) problems.push(`the declared dependencies have a cycle: ${cycle.join(' -> ')}`);
  return { problems, imports };
}

/** A cycle among the declared dependencies (required and optional), as the path that closes it. */
function findCycle(manifests: Manifest[]): string[] | null {
  const byName = new Map(manifests.map((m) => [m.name, m]));
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string, path: string[]): string[] | null => {
    if (state.get(name) === 'done') return null;
    if (state.get(name) === 'visiting') return [...path.slice(path.indexOf(name)), name];
    state.set(name, 'visiting');
    const m = byName.get(name);
    for (const dep of [...(m?.dependsOn ?? []), ...(m?.optionalDependsOn ?? [])]) {
      const found = visit(dep, [...path, name]);
      if (found) return found;
    }
    state.set(name, 'done');
    return null;
  };
  for (const m of manifests) {
    const found = visit(m.name, []);
    if (found) return found;
  }
  return null;
}

describe('plugin imports match declared dependencies', () => {
  const tree = readTree('plugins', 'kernel', 'sandbox');
  const report = checkPluginImports(tree, allPlugins);

  it('every plugin directory is one plugin of the composition, under its own name', () => {
    const dirs = readdirSync(join(ROOT, 'plugins'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    expect(allPlugins.map((p) => p.name).sort()).to.deep.equal(dirs);
  });

  it('the tree keeps every rule (declared edges only, public files only, no cycle, no plugin in the kernel)', () => {
    expect(report.problems, `\n  ${report.problems.join('\n  ')}\n`).to.deep.equal([]);
  });

  it('reads the real edges: the app reaches the plugins it shows, and analytics and capture no longer import each other', () => {
    expect([...(report.imports.get('app') ?? [])].sort()).to.deep.equal([
      'analytics',
      'capture',
      'comments',
      'core',
      'events',
      'github',
      'history',
      'identity',
      'inbox',
      'leases',
      'lenses',
      'queue',
      'webhooks',
    ]);
    expect(report.imports.get('capture')?.has('analytics') ?? false).to.equal(false);
    expect(report.imports.get('analytics')?.has('capture')).to.equal(true);
  });

  it('the kernel accepts the composition as declared (its own boot check)', () => {
    expect(() => checkManifests(allPlugins)).to.not.throw();
  });
});

describe('the plugin import checker', () => {
  const core: Manifest = { name: 'core', dependsOn: [] };
  const check = (files: Record<string, string>, manifests: Manifest[]) =>
    checkPluginImports(new Map(Object.entries(files)), manifests).problems;

  it('passes a declared import of api.ts or public.ts, type-only or not', () => {
    const problems = check(
      {
        'plugins/core/api.ts': 'export const a = 1;',
        'plugins/core/public.ts': 'export const b = 1;',
        'plugins/queue/x.ts': "import { a } from '../core/api.js';\nimport type { B } from '../core/public.js';",
      },
      [core, { name: 'queue', dependsOn: ['core'] }],
    );
    expect(problems).to.deep.equal([]);
  });

  it('reports an undeclared import, a type-only one and an export-from alike', () => {
    for (const statement of [
      "import { a } from '../core/api.js';",
      "import type { A } from '../core/api.js';",
      "export { a } from '../core/api.js';",
      "type A = import('../core/api.js').A;",
    ]) {
      const problems = check({ 'plugins/queue/x.ts': statement }, [core, { name: 'queue', dependsOn: [] }]);
      expect(problems, statement).to.have.length(1);
      expect(problems[0]).to.match(
        /plugins\/queue\/x\.ts imports '\.\.\/core\/api\.js' from plugin 'core', which plugin 'queue' does not declare/,
      );
    }
  });

  it("reports an import of another plugin's internal file, even a declared one", () => {
    const problems = check({ 'plugins/queue/x.ts': "import { isDone } from '../core/node-view.js';" }, [
      core,
      { name: 'queue', dependsOn: ['core'] },
    ]);
    expect(problems).to.deep.equal([
      "plugins/queue/x.ts imports '../core/node-view.js', an internal file of plugin 'core': import its api.ts or public.ts (export what is needed from plugins/core/public.ts)",
    ]);
  });

  it('reports a declared dependency no file imports, required or optional', () => {
    const problems = check({ 'plugins/queue/x.ts': "import { a } from '../core/api.js';" }, [
      core,
      { name: 'queue', dependsOn: ['core'], optionalDependsOn: ['leases'] },
      { name: 'leases' },
    ]);
    expect(problems).to.deep.equal([
      "plugin 'queue' declares 'leases' but none of its files imports it: the lists name exactly the plugins it imports",
    ]);
  });

  it('reports a cycle, optional edges included, with its path', () => {
    const problems = check({ 'plugins/a/x.ts': "import '../b/public.js';", 'plugins/b/x.ts': "import '../a/api.js';" }, [
      { name: 'a', dependsOn: ['b'] },
      { name: 'b', optionalDependsOn: ['a'] },
    ]);
    expect(problems).to.deep.equal(['the declared dependencies have a cycle: a -> b -> a']);
  });

  it('reports the kernel or the sandbox importing a plugin or the composition root, and a plugin importing scripts/', () => {
    const problems = check(
      {
        'kernel/x.ts': "import { corePlugin } from '../plugins/core/index.js';",
        'sandbox/y.ts': "import { allPlugins } from '../scripts/plugins.js';",
        'plugins/core/z.ts': "import { allPlugins } from '../../scripts/plugins.js';",
      },
      [core],
    );
    expect(problems).to.have.length(3);
    expect(problems[0]).to.match(
      /^kernel\/x\.ts imports '\.\.\/plugins\/core\/index\.js': the kernel and the sandbox never import a plugin/,
    );
    expect(problems[1]).to.match(/^sandbox\/y\.ts imports '\.\.\/scripts\/plugins\.js'/);
    expect(problems[2]).to.match(
      /^plugins\/core\/z\.ts imports '\.\.\/\.\.\/scripts\/plugins\.js': a plugin never imports the composition root/,
    );
  });
});
