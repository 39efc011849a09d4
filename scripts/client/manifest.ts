/**
 * The CLI's view of the operation declarations: one entry per command, built from the same
 * plugin list (scripts/plugins.ts), routes and tools that feed REST, MCP and OpenAPI.
 *
 * Loading every plugin takes seconds (isomorphic-git, the MCP SDK, remark, ajv...), far too
 * slow for a client command, so the manifest is cached as JSON and rebuilt only when a source
 * it depends on changed (a fingerprint of the plugin and kernel declaration files). A new
 * operation therefore shows up in the CLI on the next run with no code and no build step.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync, type Dirent } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';
import { ALIAS_NAMES } from './aliases.js';

export type JsonSchema = Record<string, unknown>;

export interface CommandSpec {
  /** the operation name (route operations) or the tool name (tool-only operations) */
  name: string;
  plugin: string;
  summary: string;
  description: string;
  input: JsonSchema;
  /** 'rest': the route below; 'mcp': a tool with no route, called over /mcp */
  via: 'rest' | 'mcp';
  method?: string;
  path?: string;
  /** path parameters in path order: the positional arguments */
  pathParams: string[];
  /** input fields the route reads from the query string (the rest go into the JSON body) */
  queryFields: string[];
  queryPrefixes?: Record<string, string>;
  /** the operation answers something other than JSON (export streams, HTML pages) */
  produces?: string[];
  /** an MCP tool over the same operation, if any */
  tool?: string;
}

export interface Manifest {
  fingerprint: string;
  commands: CommandSpec[];
}

/** Structural view of the plugin declarations (kernel/plugin.ts), so this file imports nothing heavy. */
interface OperationLike {
  kind: 'operation';
  name: string;
  summary: string;
  description?: string;
  input: JsonSchema;
  produces?: string[];
}
interface PluginLike {
  name: string;
  routes?: Array<{ method: string; path: string; operation: unknown; query?: string[]; queryPrefixes?: Record<string, string> }>;
  tools?: Array<{ name?: string; description?: string; operation: unknown }>;
}

const isOperation = (v: unknown): v is OperationLike =>
  typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'operation';

export function pathParamsOf(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z_$][\w$]*)/g)].map((m) => m[1]!);
}

/** Same rule as kernel/operation.ts queryFieldsOf (kept in step by test/kernel/cli-client.test.ts). */
function queryFields(op: OperationLike, route: NonNullable<PluginLike['routes']>[number]): string[] {
  const params = new Set([...pathParamsOf(route.path), ...Object.values(route.queryPrefixes ?? {})]);
  const props = Object.keys((op.input.properties as Record<string, unknown> | undefined) ?? {});
  if (route.method === 'GET') return props.filter((p) => !params.has(p));
  return (route.query ?? []).filter((p) => props.includes(p));
}

/**
 * Every declared operation as a command: each route's operation (by operation name) and each
 * tool whose operation no route serves (by tool name, called over MCP). Undeclared operations
 * (no schema) have nothing to build flags from and are left out. A tool-only command named like
 * an alias (the `claim` tool) is shadowed by it: the alias runs the same work over REST.
 */
export function buildCommands(plugins: PluginLike[], reserved: string[] = ALIAS_NAMES): CommandSpec[] {
  const commands = new Map<string, CommandSpec>();
  const routed = new Set<unknown>();
  for (const p of plugins) {
    for (const r of p.routes ?? []) {
      const op = r.operation;
      if (!isOperation(op) || commands.has(op.name)) continue;
      routed.add(op);
      commands.set(op.name, {
        name: op.name,
        plugin: p.name,
        summary: op.summary,
        description: op.description ?? op.summary,
        input: op.input,
        via: 'rest',
        method: r.method,
        path: r.path,
        pathParams: pathParamsOf(r.path),
        queryFields: queryFields(op, r),
        ...(r.queryPrefixes ? { queryPrefixes: r.queryPrefixes } : {}),
        ...(op.produces ? { produces: op.produces } : {}),
      });
    }
  }
  for (const p of plugins) {
    for (const t of p.tools ?? []) {
      const op = t.operation;
      if (!isOperation(op)) continue;
      const toolName = t.name ?? op.name;
      if (routed.has(op)) {
        const cmd = commands.get(op.name);
        if (cmd && !cmd.tool) cmd.tool = toolName;
        continue;
      }
      if (commands.has(toolName) || reserved.includes(toolName)) continue;
      commands.set(toolName, {
        name: toolName,
        plugin: p.name,
        summary: op.summary,
        description: t.description ?? op.description ?? op.summary,
        input: op.input,
        via: 'mcp',
        pathParams: [],
        queryFields: [],
        tool: toolName,
      });
    }
  }
  return [...commands.values()].sort((a, b) => a.name.localeCompare(b.name));
}

// ------------------------------------------------------------------ the cache

const HERE = dirname(fileURLToPath(import.meta.url));
/** The package root: two levels up from scripts/client/, one up from the bundle in dist/. */
const ROOT = existsSync(join(HERE, '..', '..', 'scripts', 'plugins.ts')) ? join(HERE, '..', '..') : join(HERE, '..');

/** The files the declarations come from; any change among them rebuilds the manifest. */
function sourceFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (e.name.endsWith('.ts')) files.push(join(dir, e.name));
    }
  };
  walk(join(ROOT, 'plugins'));
  files.push(
    join(ROOT, 'scripts', 'plugins.ts'),
    join(ROOT, 'kernel', 'operation.ts'),
    join(ROOT, 'kernel', 'registry.ts'),
    fileURLToPath(import.meta.url),
    join(ROOT, 'scripts', 'client', 'aliases.ts'),
  );
  return files.sort();
}

export function fingerprint(): string {
  const h = createHash('sha256');
  for (const f of sourceFiles()) {
    try {
      const st = statSync(f);
      h.update(`${f}\0${st.size}\0${st.mtimeMs}\n`);
    } catch {
      h.update(`${f}\0-\n`);
    }
  }
  return h.digest('hex').slice(0, 32);
}

function cacheFiles(): string[] {
  const xdg = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  // one cache per entry (the TypeScript sources, the dist bundle), so neither evicts the other
  const key = createHash('sha256')
    .update(fileURLToPath(import.meta.url))
    .digest('hex')
    .slice(0, 12);
  return [
    join(ROOT, 'node_modules', '.cache', 'workgraph', `cli-manifest-${key}.json`),
    join(xdg, 'workgraph', `cli-manifest-${key}.json`),
  ];
}

/** The manifest: from the cache when its fingerprint matches, else rebuilt from the plugins (slow, once). */
export async function loadManifest(): Promise<Manifest> {
  const fp = fingerprint();
  for (const file of cacheFiles()) {
    try {
      const cached = JSON.parse(readFileSync(file, 'utf8')) as Manifest;
      if (cached.fingerprint === fp && Array.isArray(cached.commands)) return cached;
    } catch {
      /* missing or unreadable: try the next, then rebuild */
    }
  }
  const { allPlugins } = await import('../plugins.js');
  const manifest: Manifest = { fingerprint: fp, commands: buildCommands(allPlugins as PluginLike[]) };
  const text = JSON.stringify(manifest);
  for (const file of cacheFiles()) {
    try {
      mkdirSync(dirname(file), { recursive: true });
      // written whole then renamed: a concurrent CLI run never reads half a file
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, text);
      renameSync(tmp, file);
      break;
    } catch {
      /* not writable (an installed package): the user cache is next */
    }
  }
  return manifest;
}
