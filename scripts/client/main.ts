/**
 * The client side of `workgraph`: every declared operation as a command (scripts/client/
 * manifest.ts), short aliases for the daily loop, login and profiles, `edit`, and shell
 * completion. Imports nothing heavy: a client command starts in well under a second.
 */
import { readFileSync } from 'node:fs';
import { GLOBAL_FLAGS, helpOf, parseGlobal, parseInput, type GlobalOptions } from './args.js';
import {
  checkOrg,
  CliFailure,
  connect,
  envelopeOf,
  EXIT,
  exitForStatus,
  failureOf,
  request,
  statusForCode,
  usage,
  type Connection,
} from './connection.js';
import { ALIAS_NAMES } from './aliases.js';
import { loadManifest, type CommandSpec, type Manifest } from './manifest.js';
import { colorWanted, renderNode, renderPut, renderQueue, renderValue, styleFor } from './render.js';

export interface Alias {
  name: string;
  target: string;
  note: string;
  /** input fields taken from positional arguments after the path parameters */
  positional?: string[];
  /** fills defaults after the arguments are read */
  preset?: (input: Record<string, unknown>) => void;
  /** `new`: the positional arguments are markdown files (or stdin) */
  files?: boolean;
}

/** The daily loop in short words; each is its operation with the same flags. */
export const ALIASES: Alias[] = [
  { name: 'queue', target: 'show_queue', note: 'alias of show_queue' },
  { name: 'show', target: 'get_node', note: 'alias of get_node' },
  { name: 'claim', target: 'claim_node', note: 'alias of claim_node' },
  {
    name: 'done',
    target: 'set_status',
    note: 'alias of set_status with --status done (resolved for issue-* ids) unless --status is given',
    preset: (input) => {
      if (input.status === undefined) input.status = String(input.id ?? '').startsWith('issue-') ? 'resolved' : 'done';
    },
  },
  { name: 'ask', target: 'ask_question', note: 'alias of ask_question; the question text may be the first argument', positional: ['text'] },
  { name: 'new', target: 'put_node', note: 'alias of put_node; arguments are markdown files (- or none: stdin)', files: true },
  { name: 'history', target: 'get_node_history', note: 'alias of get_node_history' },
];

/** Client commands that are not operations. */
if (ALIASES.map((a) => a.name).join() !== ALIAS_NAMES.join()) throw new Error('scripts/client/aliases.ts lists other aliases than main.ts');

export const BUILTINS = ['login', 'logout', 'profile', 'edit', 'completion', 'commands', '__complete'];

export function clientUsage(manifest: Manifest | null): string {
  const lines = [
    'client commands (against a server: SVC_SERVER + SVC_TOKEN, or a profile from `workgraph login`):',
    "  login <server> [--profile NAME] [--no-browser]   sign in through the server's OAuth (browser + PKCE)",
    '  logout [--profile NAME]                          forget a profile and revoke its sign-in',
    '  profile list | profile use NAME                  the signed-in servers and tenants',
    '  queue | show ID | claim ID | done ID | ask TEXT | new FILE | history ID',
    '  edit ID                                          edit a node in $EDITOR; a conflict offers a three-way merge',
    '  completion bash|zsh|fish                         shell completion (operations, flags, node ids)',
    '  commands                                         every operation, with what it calls',
    '  <operation> [args] [--flags]                     any operation; `workgraph <operation> --help`',
  ];
  if (manifest) lines.push('', `operations: ${manifest.commands.map((c) => c.name).join(' ')}`);
  lines.push(
    '',
    'global options:',
    ...GLOBAL_FLAGS.map(([f, t]) => `  ${f.padEnd(20)} ${t}`),
    '',
    'exit codes: 0 ok, 1 other, 2 usage, 3 unauthorized (401), 4 forbidden (403), 5 not found (404), 6 conflict (409), 7 invalid input (400/413/422)',
  );
  return lines.join('\n');
}

function write(text: string | Buffer): void {
  process.stdout.write(text);
}

/** Prints an answer: --json the bytes as sent; otherwise a rendering for people. */
function printAnswer(cmd: CommandSpec, bytes: Buffer, contentType: string, global: GlobalOptions): void {
  if (global.json || !/json/.test(contentType)) {
    write(bytes);
    // a terminal gets its line end; a pipe gets exactly the bytes
    if (process.stdout.isTTY && !bytes.toString().endsWith('\n')) write('\n');
    return;
  }
  const style = styleFor(global.color && colorWanted(true, process.stdout));
  const columns = process.stdout.isTTY ? process.stdout.columns : undefined;
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString());
  } catch {
    return write(bytes);
  }
  if (cmd.name === 'show_queue') return write(renderQueue(value as Record<string, unknown>, style, columns));
  if (cmd.name === 'put_node') return write(renderPut(value as Record<string, unknown>, style));
  if (cmd.name === 'get_node') return write(renderNode(value as Record<string, unknown>, style));
  write(renderValue(value, style, columns));
}

/** Path, query and body of a REST call from the input, the way the server's adapter reads them back. */
export function restCall(cmd: CommandSpec, input: Record<string, unknown>): { path: string; body: unknown } {
  const path = cmd.path!.replace(/:([A-Za-z_$][\w$]*)/g, (_, p: string) => encodeURIComponent(String(input[p])));
  const query = new URLSearchParams();
  const rest: Record<string, unknown> = { ...input };
  for (const p of cmd.pathParams) delete rest[p];
  for (const [prefix, field] of Object.entries(cmd.queryPrefixes ?? {})) {
    const obj = rest[field];
    delete rest[field];
    if (obj && typeof obj === 'object') for (const [k, v] of Object.entries(obj)) query.append(prefix + k, String(v));
  }
  for (const f of cmd.queryFields) {
    const v = rest[f];
    delete rest[f];
    if (v === undefined) continue;
    if (Array.isArray(v)) v.forEach((x) => query.append(f, String(x)));
    else query.append(f, typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v));
  }
  const qs = query.toString();
  const hasBody = cmd.method !== 'GET' && (Object.keys(rest).length > 0 || cmd.method !== 'DELETE');
  return { path: qs ? `${path}?${qs}` : path, body: hasBody ? rest : undefined };
}

/** Calls a tool over MCP (operations that have no REST route); answers the tool's text like a REST body. */
async function callTool(conn: Connection, tool: string, input: Record<string, unknown>): Promise<{ isError: boolean; text: string }> {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const client = new Client({ name: 'workgraph-cli', version: '0.1.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${conn.server}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${conn.token}` } },
  });
  try {
    await client.connect(transport);
  } catch (err) {
    const message = (err as Error).message;
    if (/401|unauthori[sz]ed/i.test(message))
      throw new CliFailure(EXIT.unauthorized, 'unauthorized: missing, invalid, expired or revoked token [HTTP 401]');
    throw new CliFailure(EXIT.other, `cannot open MCP at ${conn.server}/mcp: ${message}`);
  }
  try {
    const result = (await client.callTool({ name: tool, arguments: input })) as {
      isError?: boolean;
      content?: Array<{ type: string; text?: string }>;
    };
    const text = result.content?.find((c) => c.type === 'text')?.text ?? '';
    return { isError: Boolean(result.isError), text };
  } finally {
    // one call per process: end the server's MCP session now rather than leave it to idle expiry
    await transport.terminateSession().catch(() => undefined);
    await client.close().catch(() => undefined);
  }
}

/** Runs one operation with its input; returns the exit code. */
export async function runOperation(cmd: CommandSpec, input: Record<string, unknown>, global: GlobalOptions): Promise<number> {
  const conn = await connect(global.profile);
  await checkOrg(conn);
  if (cmd.via === 'mcp') {
    const { isError, text } = await callTool(conn, cmd.tool!, input);
    if (isError) {
      const env = envelopeOf(text);
      if (global.json) write(text + (process.stdout.isTTY ? '\n' : ''));
      const failure = env ? failureOf(statusForCode(env.code), text) : new CliFailure(EXIT.other, text.slice(0, 500));
      throw new CliFailure(failure.exitCode, failure.message.replace(/ \[HTTP \d+\]$/, ''));
    }
    printAnswer(cmd, Buffer.from(text), 'application/json', global);
    return EXIT.ok;
  }
  const { path, body } = restCall(cmd, input);
  const answer = await request(conn, cmd.method!, path, body);
  if (answer.status >= 400 || (answer.status >= 300 && answer.status < 400)) {
    if (global.json) write(answer.bytes);
    throw failureOf(answer.status, answer.bytes);
  }
  printAnswer(cmd, answer.bytes, answer.contentType, global);
  // a batch with failed entries (207): the first failure decides the exit code
  if (answer.status === 207) {
    const parsed = JSON.parse(answer.bytes.toString()) as {
      results?: Array<{ status?: string; http_status?: number; error?: { code: string; message: string }; id?: string | null }>;
    };
    const failed = parsed.results?.find((r) => r.status === 'failed');
    if (failed) {
      process.stderr.write(
        `workgraph: ${failed.id ?? 'entry'}: ${failed.error?.code}: ${failed.error?.message} [HTTP ${failed.http_status ?? 207}]\n`,
      );
      return failed.http_status ? exitForStatus(failed.http_status) : EXIT.other;
    }
  }
  return EXIT.ok;
}

function readStdin(): string {
  return readFileSync(0, 'utf8');
}

async function profileCommand(args: string[]): Promise<number> {
  const { readProfiles, writeProfiles } = await import('./profiles.js');
  const { global, rest } = parseGlobal(args);
  const [sub, name] = rest;
  const file = readProfiles();
  if (global.help || !sub) {
    write('usage:\n  workgraph profile list [--json]\n  workgraph profile use NAME\n  workgraph profile remove NAME\n');
    return EXIT.ok;
  }
  if (sub === 'list') {
    const rows = Object.entries(file.profiles).map(([n, p]) => ({
      current: n === file.current ? '*' : '',
      name: n,
      server: p.server,
      org: p.org ?? '',
      person: p.person ?? '',
      signed_in: p.refresh_token ? 'yes' : 'no',
    }));
    if (global.json)
      write(
        JSON.stringify({
          current: file.current ?? null,
          profiles: rows.map(({ current: _c, signed_in, ...r }) => ({ ...r, signed_in: signed_in === 'yes' })),
        }) + '\n',
      );
    else if (rows.length === 0) write('No profiles yet: workgraph login <server>\n');
    else {
      const { table } = await import('./render.js');
      write(
        table(
          rows,
          ['current', 'name', 'server', 'org', 'person', 'signed_in'],
          styleFor(global.color && colorWanted(true, process.stdout)),
        ),
      );
    }
    return EXIT.ok;
  }
  if (sub === 'use' || sub === 'remove') {
    if (!name) throw usage(`profile ${sub} needs a NAME`);
    if (!file.profiles[name]) throw new CliFailure(EXIT.notFound, `no profile '${name}' (workgraph profile list)`);
    if (sub === 'use') file.current = name;
    else {
      delete file.profiles[name];
      if (file.current === name) delete file.current;
    }
    writeProfiles(file);
    write(sub === 'use' ? `Now using profile '${name}' (${file.profiles[name]!.server}).\n` : `Removed profile '${name}'.\n`);
    return EXIT.ok;
  }
  throw usage(`unknown profile command '${sub}' (list, use, remove)`);
}

async function loginCommand(args: string[]): Promise<number> {
  const { global, rest } = parseGlobal(args);
  const browser = !rest.includes('--no-browser');
  const positional = rest.filter((a) => a !== '--no-browser');
  if (global.help || positional.length !== 1 || positional[0]!.startsWith('-')) {
    write(
      "usage: workgraph login <server> [--profile NAME] [--no-browser]\n\nSigns in through the server's OAuth: prints the sign-in URL (and opens a browser unless\n--no-browser), where you sign in with a personal access token and approve; the browser\ncomes back to a loopback address of this CLI. The refresh token is kept in\n$XDG_CONFIG_HOME/workgraph/profiles.json (mode 0600). The profile is named after the\ntenant unless --profile is given, and becomes the current one.\n",
    );
    return global.help ? EXIT.ok : EXIT.usage;
  }
  let server = positional[0]!;
  if (!/^https?:\/\//.test(server)) server = `https://${server}`;
  const { login } = await import('./oauth.js');
  const { readProfiles, withProfilesLock, writeProfiles } = await import('./profiles.js');
  const { trimServer } = await import('./connection.js');
  const timeoutMs = 300_000;
  const result = await login(server, { browser, timeoutMs, log: (line) => process.stderr.write(line + '\n') });
  const conn: Connection = { server: trimServer(server), token: result.tokens.access_token, org: undefined, profile: undefined };
  const me = await request(conn, 'GET', '/v1/me');
  if (me.status !== 200) throw failureOf(me.status, me.bytes);
  const who = JSON.parse(me.bytes.toString()) as { org: string; person: string | null; name: string | null };
  const name = global.profile ?? who.org;
  await withProfilesLock(async () => {
    const file = readProfiles();
    file.profiles[name] = {
      server: conn.server,
      org: who.org,
      person: who.person,
      client_id: result.client_id,
      refresh_token: result.tokens.refresh_token,
      access_token: result.tokens.access_token,
      access_expires_at: Date.now() + (result.tokens.expires_in ?? 3600) * 1000,
    };
    file.current = name;
    writeProfiles(file);
  });
  if (global.json) write(JSON.stringify({ profile: name, server: conn.server, org: who.org, person: who.person }) + '\n');
  else write(`Signed in to ${conn.server} as ${who.name ?? who.person ?? 'unknown'} (org ${who.org}); profile '${name}' is now current.\n`);
  return EXIT.ok;
}

async function logoutCommand(args: string[]): Promise<number> {
  const { global } = parseGlobal(args);
  const { readProfiles, selectedProfileName, withProfilesLock, writeProfiles } = await import('./profiles.js');
  const name = selectedProfileName(global.profile);
  if (!name || !readProfiles().profiles[name]) throw usage('no profile to sign out of');
  await withProfilesLock(async () => {
    const file = readProfiles();
    const p = file.profiles[name];
    if (p?.refresh_token && p.client_id) {
      // RFC 7009: revoking the refresh token ends the grant on the server (best effort: offline is fine)
      await fetch(`${p.server}/oauth/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: p.refresh_token, token_type_hint: 'refresh_token', client_id: p.client_id }),
      }).catch(() => undefined);
    }
    delete file.profiles[name];
    if (file.current === name) delete file.current;
    writeProfiles(file);
  });
  write(`Signed out of profile '${name}'.\n`);
  return EXIT.ok;
}

/**
 * Runs a client command; null when `command` is not one (the operator commands handle it).
 */
export async function runClient(command: string, args: string[]): Promise<number | null> {
  try {
    switch (command) {
      case 'login':
        return await loginCommand(args);
      case 'logout':
        return await logoutCommand(args);
      case 'profile':
        return await profileCommand(args);
      case 'completion': {
        const { completionScript } = await import('./completion.js');
        const shell = args[0];
        if (shell !== 'bash' && shell !== 'zsh' && shell !== 'fish') throw usage('usage: workgraph completion bash|zsh|fish');
        write(completionScript(shell));
        return EXIT.ok;
      }
      case '__complete': {
        const { complete } = await import('./completion.js');
        write(await complete(args));
        return EXIT.ok;
      }
      case 'edit': {
        const { editCommand } = await import('./edit.js');
        return await editCommand(args);
      }
      case 'commands': {
        const { global } = parseGlobal(args);
        const manifest = await loadManifest();
        if (global.json)
          write(
            JSON.stringify(
              manifest.commands.map((c) => ({
                name: c.name,
                summary: c.summary,
                via: c.via,
                method: c.method ?? null,
                path: c.path ?? null,
                tool: c.tool ?? null,
              })),
            ) + '\n',
          );
        else {
          const { table } = await import('./render.js');
          const rows = manifest.commands.map((c) => ({
            name: c.name,
            calls: c.via === 'rest' ? `${c.method} ${c.path}` : `MCP ${c.tool}`,
            summary: c.summary,
          }));
          write(
            table(
              rows,
              ['name', 'calls', 'summary'],
              styleFor(global.color && colorWanted(true, process.stdout)),
              process.stdout.isTTY ? process.stdout.columns : undefined,
            ),
          );
        }
        return EXIT.ok;
      }
    }
    const alias = ALIASES.find((a) => a.name === command);
    const manifest = await loadManifest();
    const cmd = manifest.commands.find((c) => c.name === (alias?.target ?? command));
    if (!cmd) return null;
    const { global, rest } = parseGlobal(args);
    if (global.help) {
      write(helpOf(cmd, alias ? { name: alias.name, note: alias.note } : undefined));
      return EXIT.ok;
    }
    let input: Record<string, unknown>;
    if (alias?.files) {
      const files = rest.filter((a) => !a.startsWith('--'));
      const flags = rest.filter((a) => a.startsWith('--'));
      const docs = files.length === 0 || files.includes('-') ? [readStdin()] : [];
      for (const f of files.filter((x) => x !== '-')) {
        try {
          docs.push(readFileSync(f, 'utf8'));
        } catch (err) {
          throw usage(`cannot read ${f}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
        }
      }
      input = { ...parseInput({ ...cmd, input: { ...cmd.input, required: [] } }, flags, global.input), nodes: docs };
    } else if (alias?.positional) {
      // positional words after the path parameters fill the alias's fields
      const flags: string[] = [];
      const words: string[] = [];
      for (let i = 0; i < rest.length; i++) {
        const a = rest[i]!;
        if (a.startsWith('--')) {
          flags.push(a);
          if (!a.includes('=') && rest[i + 1] !== undefined && !rest[i + 1]!.startsWith('--') && !isBooleanFlag(cmd, a))
            flags.push(rest[++i]!);
        } else words.push(a);
      }
      const extra = words.slice(cmd.pathParams.length);
      const fieldArgs = alias.positional.flatMap((f, i) => (extra[i] !== undefined ? [`--${f}`, extra[i]!] : []));
      if (extra.length > alias.positional.length)
        throw usage(`${alias.name}: unexpected '${extra[alias.positional.length]}' (quote the text)`);
      input = parseInput(cmd, [...words.slice(0, cmd.pathParams.length), ...fieldArgs, ...flags], global.input);
    } else {
      input = parseInput(cmd, rest, global.input, alias?.preset);
    }
    return await runOperation(cmd, input, global);
  } catch (err) {
    if (err instanceof CliFailure) {
      process.stderr.write(`workgraph: ${err.message}\n`);
      return err.exitCode;
    }
    throw err;
  }
}

function isBooleanFlag(cmd: CommandSpec, flag: string): boolean {
  const field = flag.replace(/^--(no-)?/, '').replace(/-/g, '_');
  const schema = ((cmd.input.properties as Record<string, Record<string, unknown>> | undefined) ?? {})[field];
  return schema?.type === 'boolean';
}
