/**
 * Flags, positional arguments and --help of an operation command, all read from the
 * operation's input schema: path parameters are positional (in path order), every other
 * input field is `--field` (snake_case or kebab-case), typed by its schema.
 */
import { readFileSync } from 'node:fs';
import { usage } from './connection.js';
import type { CommandSpec, JsonSchema } from './manifest.js';

/** Flags every client command takes. */
export const GLOBAL_FLAGS: Array<[string, string]> = [
  ['--json', "print the API's answer exactly as sent (for programs)"],
  ['--profile NAME', 'use this profile (workgraph profile list); SVC_SERVER/SVC_TOKEN override'],
  ['--input JSON|@FILE', 'the whole input as a JSON object; flags override its fields'],
  ['--no-color', 'no colour (also NO_COLOR=1, and whenever stdout is not a terminal)'],
  ['-h, --help', 'this help'],
];

export interface GlobalOptions {
  json: boolean;
  profile?: string;
  color: boolean;
  help: boolean;
}

export function properties(cmd: CommandSpec): Record<string, JsonSchema> {
  return (cmd.input.properties as Record<string, JsonSchema> | undefined) ?? {};
}

export function requiredOf(cmd: CommandSpec): string[] {
  return (cmd.input.required as string[] | undefined) ?? [];
}

export function typesOf(schema: JsonSchema): string[] {
  if (Array.isArray(schema.type)) return schema.type as string[];
  if (typeof schema.type === 'string') return [schema.type];
  if (Array.isArray(schema.enum)) return [...new Set((schema.enum as unknown[]).map((v) => (v === null ? 'null' : typeof v)))];
  if (Array.isArray(schema.anyOf)) return [...new Set((schema.anyOf as JsonSchema[]).flatMap(typesOf))];
  return [];
}

const flagOf = (field: string) => `--${field.replace(/_/g, '-')}`;

/** How a field reads on the help page: `--limit <integer|string>`, `--suggest <do|blocked>`, `--titles`. */
export function flagUsage(field: string, schema: JsonSchema): string {
  const types = typesOf(schema);
  if (types.length === 1 && types[0] === 'boolean') return flagOf(field);
  const values = Array.isArray(schema.enum)
    ? (schema.enum as unknown[]).map(String).join('|')
    : types.filter((t) => t !== 'null').join('|') || 'value';
  const items =
    types.includes('array') && schema.items
      ? ` (repeatable${typesOf(schema.items as JsonSchema).length ? ': ' + typesOf(schema.items as JsonSchema).join('|') : ''})`
      : '';
  return `${flagOf(field)} <${values}>${items}`;
}

function wrap(text: string, indent: number, width = 100): string {
  const words = text.split(/\s+/).filter(Boolean);
  const lines: string[] = [];
  let line = '';
  for (const w of words) {
    if (line && line.length + 1 + w.length > width - indent) {
      lines.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  if (line) lines.push(line);
  return lines.join('\n' + ' '.repeat(indent));
}

/** The help page of an operation command, from its declaration. */
export function helpOf(cmd: CommandSpec, alias?: { name: string; note: string }): string {
  const props = properties(cmd);
  const required = new Set(requiredOf(cmd));
  const positional = cmd.pathParams.map((p) => `<${p}>`).join(' ');
  const lines: string[] = [];
  lines.push(`usage: workgraph ${alias?.name ?? cmd.name}${positional ? ' ' + positional : ''} [options]`);
  if (alias) lines.push(`(${alias.note})`);
  lines.push('', wrap(cmd.description || cmd.summary, 0), '');
  if (cmd.via === 'rest') lines.push(`calls: ${cmd.method} ${cmd.path}${cmd.tool ? `  (MCP tool: ${cmd.tool})` : ''}`);
  else lines.push(`calls: the MCP tool ${cmd.tool} (no REST route) over ${'/mcp'}`);
  if (cmd.pathParams.length) {
    lines.push('', 'arguments:');
    for (const p of cmd.pathParams) lines.push(`  <${p}>  ${wrap(describe(props[p] ?? {}, true), 4)}`);
  }
  const flags = Object.keys(props).filter((k) => !cmd.pathParams.includes(k));
  if (flags.length) {
    lines.push('', 'options:');
    for (const f of flags) {
      const head = `  ${flagUsage(f, props[f]!)}`;
      lines.push(head, `      ${wrap(describe(props[f]!, required.has(f)), 6)}`);
    }
  }
  lines.push('', 'global options:');
  for (const [flag, text] of GLOBAL_FLAGS) lines.push(`  ${flag.padEnd(20)} ${text}`);
  lines.push('', 'A value @FILE reads the file (@- reads stdin). Exit codes: docs/cli.md.');
  return lines.join('\n') + '\n';
}

function describe(schema: JsonSchema, required: boolean): string {
  const parts: string[] = [];
  if (required) parts.push('(required)');
  if (typeof schema.description === 'string') parts.push(schema.description);
  if (Array.isArray(schema.enum)) parts.push(`one of: ${(schema.enum as unknown[]).map(String).join(', ')}`);
  const types = typesOf(schema).filter((t) => t !== 'null');
  if (types.length) parts.push(`[${types.join('|')}]`);
  return parts.join(' ');
}

/** `@FILE` reads a file, `@-` stdin, `@@x` is the literal `@x`. */
function expandValue(raw: string): string {
  if (raw.startsWith('@@')) return raw.slice(1);
  if (raw === '@-') return readFileSync(0, 'utf8');
  if (raw.startsWith('@') && raw.length > 1) {
    try {
      return readFileSync(raw.slice(1), 'utf8');
    } catch (err) {
      throw usage(`cannot read ${raw.slice(1)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  return raw;
}

/** A flag's text as the JSON value its schema asks for. */
function convert(field: string, schema: JsonSchema, value: string): unknown {
  const types = typesOf(schema);
  if (Array.isArray(schema.enum) && !(schema.enum as unknown[]).map(String).includes(value)) {
    throw usage(`--${field} must be one of: ${(schema.enum as unknown[]).map(String).join(', ')} (got '${value}')`);
  }
  if (types.includes('string') || types.length === 0) {
    // a JSON object or list for a field that also takes objects (put_node's entries)
    if ((types.includes('object') || types.length === 0) && /^\s*[{[]/.test(value)) {
      try {
        return JSON.parse(value);
      } catch {
        return value;
      }
    }
    return value;
  }
  if (types.includes('integer') || types.includes('number')) {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || (types.includes('integer') && !types.includes('number') && !Number.isInteger(n)))
      throw usage(`--${field} takes a number (got '${value}')`);
    return n;
  }
  if (types.includes('boolean')) {
    if (value === 'true' || value === 'false') return value === 'true';
    throw usage(`--${field} is true or false (got '${value}')`);
  }
  if (types.includes('object') || types.includes('array')) {
    try {
      return JSON.parse(value);
    } catch {
      throw usage(`--${field} takes JSON (got '${value.slice(0, 60)}')`);
    }
  }
  return value;
}

export interface ParsedCommand {
  input: Record<string, unknown>;
  global: GlobalOptions;
}

/** Splits off the global flags every client command takes; the rest is the command's own. */
export function parseGlobal(args: string[]): { global: GlobalOptions & { input?: string }; rest: string[] } {
  const global: GlobalOptions & { input?: string } = { json: false, color: true, help: false };
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const [name, inline] =
      a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = () => {
      if (inline !== undefined) return inline;
      const v = args[++i];
      if (v === undefined) throw usage(`${name} needs a value`);
      return v;
    };
    if (name === '--json') global.json = true;
    else if (name === '--no-color') global.color = false;
    else if (name === '--help' || name === '-h') global.help = true;
    else if (name === '--profile') global.profile = value();
    else if (name === '--input') global.input = value();
    else rest.push(a);
  }
  return { global, rest };
}

/** The operation's input from positional arguments and flags, checked against the declaration. */
export function parseInput(
  cmd: CommandSpec,
  args: string[],
  inputJson?: string,
  defaults?: (input: Record<string, unknown>) => void,
): Record<string, unknown> {
  const props = properties(cmd);
  let input: Record<string, unknown> = {};
  if (inputJson !== undefined) {
    const text = expandValue(inputJson);
    try {
      input = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw usage('--input takes a JSON object (or @FILE holding one)');
    }
    if (typeof input !== 'object' || input === null || Array.isArray(input)) throw usage('--input takes a JSON object');
  }
  const positionals: string[] = [];
  const byFlag = new Map<string, string>();
  for (const field of Object.keys(props)) {
    byFlag.set(`--${field}`, field);
    byFlag.set(flagOf(field), field);
  }
  const repeated = new Set<string>();
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (!a.startsWith('--')) {
      positionals.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(0, eq) : a;
    const direct = byFlag.get(name);
    const negated = !direct && name.startsWith('--no-') ? byFlag.get(`--${name.slice(5)}`) : undefined;
    const field = direct ?? negated;
    if (!field) throw usage(`unknown option ${name} for ${cmd.name} (workgraph ${cmd.name} --help)`);
    const schema = props[field]!;
    const types = typesOf(schema);
    if (types.length === 1 && types[0] === 'boolean' && eq < 0) {
      input[field] = !negated;
      continue;
    }
    if (negated && eq < 0) throw usage(`${name} is not a boolean option`);
    const raw = eq > 0 ? a.slice(eq + 1) : args[++i];
    if (raw === undefined) throw usage(`${name} needs a value`);
    if (types.includes('array')) {
      const items = (schema.items as JsonSchema | undefined) ?? {};
      const list = repeated.has(field) && Array.isArray(input[field]) ? (input[field] as unknown[]) : [];
      repeated.add(field);
      const expanded = expandValue(raw);
      // a JSON list given at once, or one item per flag
      if (!types.includes('string') && /^\s*\[/.test(expanded) && typesOf(items).length > 0 && !typesOf(items).includes('array')) {
        try {
          const parsed = JSON.parse(expanded) as unknown;
          if (Array.isArray(parsed)) {
            input[field] = [...list, ...parsed];
            continue;
          }
        } catch {
          /* one item */
        }
      }
      input[field] = [...list, convert(field, items, expanded)];
    } else input[field] = convert(field, schema, expandValue(raw));
  }
  if (positionals.length > cmd.pathParams.length)
    throw usage(
      `${cmd.name} takes ${cmd.pathParams.length ? cmd.pathParams.map((p) => `<${p}>`).join(' ') : 'no positional arguments'}; unexpected '${positionals[cmd.pathParams.length]}'`,
    );
  cmd.pathParams.forEach((p, i) => {
    if (positionals[i] !== undefined) input[p] = positionals[i];
  });
  defaults?.(input);
  const missing = requiredOf(cmd).filter((f) => input[f] === undefined);
  if (missing.length)
    throw usage(
      `${cmd.name}: missing ${missing.map((f) => (cmd.pathParams.includes(f) ? `<${f}>` : flagOf(f))).join(', ')} (workgraph ${cmd.name} --help)`,
    );
  return input;
}
