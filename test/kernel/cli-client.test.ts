/**
 * size: one scenario per CLI command family against one server, in the order an agent uses them.
 * The client side of the `workgraph` CLI, run for real (the `scripts/workgraph.mjs` shim, as `npx workgraph` runs it)
 * against a real server: every operation's --help against its declaration, the agent loop
 * (queue, claim, show, edit through a concurrent change, done) in text and --json, the exit
 * code of each error class, MCP-only operations, completion, and `login` through the server's
 * OAuth with the consent page driven over HTTP as a browser would.
 */
import { expect } from 'chai';
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { queryFieldsOf, isOperationDef } from '../../kernel/operation.js';
import { buildCommands } from '../../scripts/client/manifest.js';
import { allPlugins } from '../../scripts/plugins.js';
import { addPerson, md, putNodes, startTestServer, type TestServer } from '../helpers/harness.js';
import { cleanEnv, ROOT, SHIM, type CliResult } from '../helpers/processes.js';

const ENTRY = join(ROOT, 'scripts', 'workgraph.ts');
const dirs: string[] = [];
function tmp(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/** Starts the CLI the way a shell would; `stdin` is fed then closed. */
function startCli(
  args: string[],
  env: Record<string, string>,
  stdin?: string,
): { child: ChildProcess; done: Promise<CliResult & { stdoutBytes: Buffer }> } {
  const child = spawn(process.execPath, [SHIM, ...args], {
    cwd: ROOT,
    env: cleanEnv(env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => out.push(d));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin!.end(stdin ?? '');
  const done = new Promise<CliResult & { stdoutBytes: Buffer }>((resolve) =>
    child.once('close', (code) => {
      const bytes = Buffer.concat(out);
      resolve({ code, stdout: bytes.toString(), stderr, stdoutBytes: bytes });
    }),
  );
  return { child, done };
}

function cli(args: string[], env: Record<string, string>, stdin?: string) {
  return startCli(args, env, stdin).done;
}

async function inBatches<T, R>(items: T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += size) results.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return results;
}

const norm = (s: string) => s.replace(/\s+/g, ' ').trim();

after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('workgraph CLI client', function () {
  this.timeout(300_000);
  const commands = buildCommands(allPlugins);
  let t: TestServer;
  let env: Record<string, string>;

  before(async () => {
    t = await startTestServer();
    env = { SVC_SERVER: t.url, SVC_TOKEN: t.adminToken, XDG_CONFIG_HOME: tmp('wg-cli-cfg-'), NO_COLOR: '1' };
    // builds the manifest cache once, so the parallel runs below read it
    const warm = await cli(['commands', '--json'], env);
    expect(warm.code, warm.stderr).to.equal(0);
  });
  after(async () => t?.close());

  describe('commands from the declarations', () => {
    it('every route operation and every tool without a route is a command; query fields match the REST adapter', async () => {
      const listed = JSON.parse((await cli(['commands', '--json'], env)).stdout) as Array<{
        name: string;
        via: string;
        method: string | null;
        path: string | null;
        tool: string | null;
      }>;
      const names = listed.map((c) => c.name);
      for (const p of allPlugins) {
        for (const r of p.routes ?? []) {
          if (!isOperationDef(r.operation)) continue;
          expect(names, `${r.method} ${r.path}`).to.include(r.operation.name);
          const cmd = commands.find((c) => c.name === r.operation.name && c.path === r.path);
          if (cmd) expect(cmd.queryFields, cmd.name).to.deep.equal(queryFieldsOf(r.operation, r));
        }
      }
      for (const tool of ['explore_graph', 'query_graph', 'apply_lens_action'])
        expect(listed.find((c) => c.name === tool)?.via, tool).to.equal('mcp');
      expect(listed.find((c) => c.name === 'claim_node')).to.include({ via: 'rest', method: 'POST', path: '/v1/nodes/:id/claim' });
    });

    it('--help of every operation says what its declaration says: positional path params, every flag with its type/enum, required fields, description, route', async function () {
      // The walk runs the CLI's own client entry (runClient, what scripts/workgraph.ts calls for
      // a client command) in this process: a process per command was ~100 node+tsx start-ups
      // (34 s idle, minutes under load). A sample of commands (the first, the last, an MCP-only
      // one, one with path parameters) also runs as a real process and must print the same bytes.
      const { runClient } = await import('../../scripts/client/main.js');
      const inProcess = async (name: string): Promise<CliResult> => {
        const chunks: string[] = [];
        const write = process.stdout.write;
        process.stdout.write = ((chunk: string | Uint8Array) => {
          chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
          return true;
        }) as typeof process.stdout.write;
        let code: number | null;
        try {
          code = await runClient(name, ['--help']);
        } finally {
          process.stdout.write = write;
        }
        return { code, stdout: chunks.join(''), stderr: '' };
      };
      const results: Array<{ cmd: (typeof commands)[number]; res: CliResult }> = [];
      for (const cmd of commands) results.push({ cmd, res: await inProcess(cmd.name) });
      const sample = new Set([commands[0], commands[commands.length - 1], commands.find((c) => c.via === 'mcp')]);
      sample.add(commands.find((c) => c.pathParams.length > 0 && !sample.has(c)));
      expect(sample.size, 'the sample: first, last, MCP-only, with path parameters').to.equal(4);
      const real = await inBatches(
        results.filter((r) => sample.has(r.cmd)),
        4,
        async ({ cmd, res: walked }) => ({ cmd, walked, res: await cli([cmd.name, '--help'], env) }),
      );
      for (const { cmd, walked, res } of real) {
        expect(res.code, `${cmd.name}: ${res.stderr}`).to.equal(0);
        expect(res.stdout, `${cmd.name}: the real process prints what the walk saw`).to.equal(walked.stdout);
      }
      for (const { cmd, res } of results) {
        expect(res.code, `${cmd.name}: ${res.stderr}`).to.equal(0);
        const help = res.stdout;
        const text = norm(help);
        expect(help, cmd.name).to.match(
          new RegExp(`^usage: workgraph ${cmd.name}${cmd.pathParams.map((p) => ` <${p}>`).join('')} \\[options\\]`),
        );
        expect(text, cmd.name).to.include(norm(cmd.description));
        expect(help, cmd.name).to.include(cmd.via === 'rest' ? `calls: ${cmd.method} ${cmd.path}` : `calls: the MCP tool ${cmd.tool}`);
        const props = (cmd.input.properties ?? {}) as Record<string, Record<string, unknown>>;
        const required = (cmd.input.required ?? []) as string[];
        for (const [field, schema] of Object.entries(props)) {
          if (cmd.pathParams.includes(field)) {
            expect(help, `${cmd.name} <${field}>`).to.match(new RegExp(`^  <${field}>`, 'm'));
          } else {
            expect(help, `${cmd.name} --${field}`).to.match(new RegExp(`^  --${field.replace(/_/g, '-')}( |$)`, 'm'));
          }
          if (typeof schema.description === 'string') expect(text, `${cmd.name} ${field} description`).to.include(norm(schema.description));
          for (const v of (schema.enum as unknown[] | undefined) ?? [])
            expect(text, `${cmd.name} ${field} enum ${String(v)}`).to.include(String(v));
        }
        expect((help.match(/\(required\)/g) ?? []).length, `${cmd.name} required count`).to.equal(required.filter((f) => props[f]).length);
      }
    });

    it('a client command loads no kernel, plugin, sandbox or MCP module (start-up stays fast)', async () => {
      const hooks = tmp('wg-cli-hooks-');
      const log = join(hooks, 'loaded.log');
      writeFileSync(
        join(hooks, 'hooks.mjs'),
        `import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(log, result.url + '\\n');
  return result;
}
`,
      );
      writeFileSync(
        join(hooks, 'register.mjs'),
        `import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url, { data: { log: ${JSON.stringify(log)} } });\n`,
      );
      const res = await new Promise<CliResult>((resolve) => {
        const child = spawn(
          process.execPath,
          ['--no-node-snapshot', '--import', 'tsx', '--import', join(hooks, 'register.mjs'), ENTRY, 'show', 'proj-root', '--json'],
          { cwd: ROOT, env: cleanEnv(env) },
        );
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.once('close', (code) => resolve({ code, stdout, stderr }));
      });
      expect(res.code, res.stderr).to.equal(0);
      expect(JSON.parse(res.stdout).id).to.equal('proj-root');
      const loaded = readFileSync(log, 'utf8').split('\n').filter(Boolean);
      expect(
        loaded.some((u) => u.includes('/scripts/client/main.ts')),
        'the log saw the client',
      ).to.equal(true);
      const heavy = loaded.filter((u) =>
        /\/kernel\/|\/plugins\/|\/sandbox\/|isomorphic-git|isolated-vm|@modelcontextprotocol|\/koa\/|\/ajv\//.test(u),
      );
      expect(heavy).to.deep.equal([]);
    });

    it('aliases: --help names the operation; bad arguments exit 2 before any request', async () => {
      const [help, unknown, missing, badEnum, badNumber] = await Promise.all([
        cli(['done', '--help'], env),
        cli(['show_queue', '--frobnicate'], env),
        cli(['set_status', 'task-x'], env),
        cli(['show_queue', '--readiness', 'x', '--json'], env).then(() =>
          cli(['put_node', '--if-exists', 'sometimes', '--nodes', 'x'], env),
        ),
        cli(['get_node_history', 'task-x', '--limit', 'many'], env),
      ]);
      expect(help.code).to.equal(0);
      expect(help.stdout)
        .to.match(/^usage: workgraph done <id> \[options\]/)
        .and.to.include('alias of set_status');
      expect(unknown.code).to.equal(2);
      expect(unknown.stderr).to.include('unknown option --frobnicate');
      expect(missing.code).to.equal(2);
      expect(missing.stderr).to.include('missing --status');
      expect(badEnum.code).to.equal(2);
      expect(badEnum.stderr).to.include('one of: skip, error, update');
      expect(badNumber.code).to.equal(2);
      expect(badNumber.stderr).to.include('takes a number');
    });
  });

  describe('the agent loop against a real server', () => {
    let editor: string;
    let state: string;

    before(() => {
      state = tmp('wg-cli-editor-');
      // $EDITOR: a script that plays the person (and, on its first run, a colleague writing meanwhile)
      editor = join(state, 'editor.mjs');
      writeFileSync(
        editor,
        `import { readFileSync, writeFileSync, existsSync } from 'node:fs';
const file = process.argv[2];
const countFile = process.env.EDIT_STATE + '/count';
const n = existsSync(countFile) ? Number(readFileSync(countFile, 'utf8')) + 1 : 1;
writeFileSync(countFile, String(n));
const text = readFileSync(file, 'utf8');
writeFileSync(process.env.EDIT_STATE + '/seen-' + n + '.md', text);
if (n === 1) {
  // a colleague changes the node through the API while the file is open
  const base = process.env.SVC_SERVER + '/v1/nodes/' + process.env.EDIT_NODE;
  const auth = { authorization: 'Bearer ' + process.env.COLLEAGUE_TOKEN };
  const current = await (await fetch(base, { headers: auth })).json();
  const theirs = current.markdown.replace(process.env.THEIR_FROM, process.env.THEIR_TO);
  const res = await fetch(process.env.SVC_SERVER + '/v1/nodes', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ nodes: [{ node: theirs, if_exists: 'update', revision: current.revision }] }) });
  if (res.status !== 200) { console.error('colleague write failed', res.status, await res.text()); process.exit(1); }
  writeFileSync(file, text.replace(process.env.MY_FROM, process.env.MY_TO));
} else if (process.env.RESOLVE_TO !== undefined) {
  // second run: the merge with conflict markers; the person resolves it
  writeFileSync(file, text.replace(/<<<<<<< yours[\\s\\S]*?>>>>>>> server\\n/, process.env.RESOLVE_TO + '\\n'));
}
`,
      );
    });

    async function loop(id: string, json: boolean) {
      const j = json ? ['--json'] : [];
      await putNodes(t, [md({ id, summary: `Loop ${id}`, title: `Loop ${id}` }, 'First line.\n\nSecond line.\n')]);

      const queue = await cli(['queue', '--limit', '100', ...j], env);
      expect(queue.code, queue.stderr).to.equal(0);
      if (json) {
        // the queue is computed per request (generated_at): the same answer but for that stamp
        const direct = await t.api('GET', '/v1/queue?limit=100');
        const stamp = (s: string) => s.replace(/"generated_at":"[^"]*"/, '"generated_at":""');
        expect(stamp(queue.stdout)).to.equal(stamp(direct.text));
        expect(queue.stdout.endsWith('}'), 'no byte added to the answer').to.equal(true);
      } else {
        expect(queue.stdout).to.match(/^#\s+ID\s+STATUS/);
        expect(queue.stdout).to.include(id);
      }

      const claim = await cli(['claim', id, ...j], env);
      expect(claim.code, claim.stderr).to.equal(0);
      if (json) expect(JSON.parse(claim.stdout)).to.include({ ok: true, status: 'claimed' });
      else expect(claim.stdout).to.match(/^status: claimed$/m);
      const queued = await t.api('GET', '/v1/queue?limit=100');
      expect(queued.body.items.find((i: { id: string }) => i.id === id).lease.state).to.equal('live');

      const show = await cli(['show', id, ...j], env);
      expect(show.code, show.stderr).to.equal(0);
      if (json) expect(show.stdoutBytes.equals(Buffer.from((await t.api('GET', `/v1/nodes/${id}`)).text))).to.equal(true);
      else {
        expect(show.stdout).to.match(new RegExp(`^${id} revision [0-9a-f]{12}\\n---\\n`));
        expect(show.stdout).to.include('First line.');
      }

      // edit: the colleague's change (second line) lands while the file is open; both survive
      const editState = tmp('wg-cli-edit-');
      const colleague = await addPerson(t, `Colleague ${id}`);
      const edit = await cli(['edit', id, ...j], {
        ...env,
        EDITOR: `${process.execPath} ${editor}`,
        EDIT_STATE: editState,
        EDIT_NODE: id,
        COLLEAGUE_TOKEN: colleague.token,
        MY_FROM: 'First line.',
        MY_TO: 'First line, edited by me.',
        THEIR_FROM: 'Second line.',
        THEIR_TO: 'Second line, edited by a colleague.',
      });
      expect(edit.code, edit.stderr).to.equal(0);
      expect(edit.stderr).to.include('changed on the server since you opened it');
      expect(edit.stderr).to.include('+Second line, edited by a colleague.');
      expect(edit.stderr).to.include('Merged your change with theirs cleanly');
      expect(readFileSync(join(editState, 'count'), 'utf8')).to.equal('2');
      const merged = readFileSync(join(editState, 'seen-2.md'), 'utf8');
      expect(merged).to.include('First line, edited by me.').and.to.include('Second line, edited by a colleague.');
      const after = await t.api('GET', `/v1/nodes/${id}`);
      expect(after.body.body).to.include('First line, edited by me.').and.to.include('Second line, edited by a colleague.');
      if (json) expect(JSON.parse(edit.stdout).results[0]).to.include({ status: 'updated', id, revision: after.body.revision });
      else expect(edit.stdout).to.match(new RegExp(`^updated ${id} [0-9a-f]{12}`));

      const done = await cli(['done', id, ...j], env);
      expect(done.code, done.stderr).to.equal(0);
      expect((await t.api('GET', `/v1/nodes/${id}`)).body.frontmatter.status).to.equal('done');
      if (json) expect(JSON.parse(done.stdout)).to.include({ id });
    }

    it('queue, claim, show, edit through a concurrent change (merged three ways), done: text', async () =>
      loop('task-cli-loop-text', false));
    it('the same loop with --json: the answer bytes of the API', async () => loop('task-cli-loop-json', true));

    it('edit: the same line changed on both sides gives conflict markers, resolved in the editor; left unresolved nothing is saved', async () => {
      const id = 'task-cli-conflict';
      await putNodes(t, [md({ id, summary: 'Conflict' }, 'Shared line.\n')]);
      const colleague = await addPerson(t, 'Colleague conflict');
      const common = {
        ...env,
        EDITOR: `${process.execPath} ${editor}`,
        EDIT_NODE: id,
        COLLEAGUE_TOKEN: colleague.token,
        MY_FROM: 'Shared line.',
        MY_TO: 'Mine.',
        THEIR_FROM: 'Shared line.',
        THEIR_TO: 'Theirs.',
      };
      const resolved = await cli(['edit', id], { ...common, EDIT_STATE: tmp('wg-cli-c1-'), RESOLVE_TO: 'Mine and theirs.' });
      expect(resolved.code, resolved.stderr).to.equal(0);
      expect(resolved.stderr).to.include('1 conflicting part(s)');
      expect((await t.api('GET', `/v1/nodes/${id}`)).body.body)
        .to.include('Mine and theirs.')
        .and.not.include('<<<<<<<');

      const before = (await t.api('GET', `/v1/nodes/${id}`)).body.body;
      const common2 = {
        ...common,
        MY_FROM: 'Mine and theirs.',
        MY_TO: 'Mine again.',
        THEIR_FROM: 'Mine and theirs.',
        THEIR_TO: 'Theirs again.',
      };
      const unresolved = await cli(['edit', id], { ...common2, EDIT_STATE: tmp('wg-cli-c2-') });
      expect(unresolved.code).to.equal(6);
      expect(unresolved.stderr).to.match(/conflict markers remain: nothing saved; your text is in \S+\.md/);
      const kept = /your text is in (\S+\.md)/.exec(unresolved.stderr)![1]!;
      expect(readFileSync(kept, 'utf8')).to.include('Mine again.').and.include('Theirs again.');
      const now = (await t.api('GET', `/v1/nodes/${id}`)).body.body;
      expect(now).to.not.equal(before);
      expect(now).to.include('Theirs again.').and.not.include('Mine again.');
      rmSync(join(kept, '..'), { recursive: true, force: true });
    });

    it('new, ask and history through their aliases; put_node with a failed entry exits by that entry', async () => {
      const file = join(tmp('wg-cli-new-'), 'n.md');
      writeFileSync(file, md({ id: 'task-cli-new', summary: 'Made by new' }, 'Body.\n'));
      const created = await cli(['new', file], env);
      expect(created.code, created.stderr).to.equal(0);
      expect(created.stdout).to.match(/^created task-cli-new /);
      const again = await cli(['new', '--json'], env, md({ id: 'task-cli-new', summary: 'Made by new' }, 'Body.\n'));
      expect(again.code).to.equal(6);
      expect(again.stderr).to.match(/task-cli-new: conflict: .*\[HTTP 409\]/);
      expect(JSON.parse(again.stdout).failed).to.equal(1);
      const ask = await cli(['ask', 'Which release does this go in?', '--mentions', 'task-cli-new', '--json'], env);
      expect(ask.code, ask.stderr).to.equal(0);
      expect(JSON.parse(ask.stdout)).to.include({ status: 'created' });
      const history = await cli(['history', 'task-cli-new'], env);
      expect(history.code, history.stderr).to.equal(0);
      expect(history.stdout).to.include('put_node');
    });

    it('an operation with no REST route runs over MCP: the tool text with --json, readable lines without, errors by their envelope code', async () => {
      const text = await cli(['explore_graph'], env);
      expect(text.code, text.stderr).to.equal(0);
      expect(text.stdout).to.match(/^mode: programs$/m);
      const json = await cli(['explore_graph', '--json'], env);
      expect(json.code, json.stderr).to.equal(0);
      const client = await t.mcp();
      const direct = await t.tool(client, 'explore_graph', {});
      expect(json.stdout).to.equal(direct.text);
      const bad = await cli(['explore_graph', '--root-id', 'task-does-not-exist'], env);
      expect(bad.code, bad.stderr).to.equal(5);
      expect(bad.stderr).to.match(/^workgraph: not_found: /);
    });
  });

  describe('exit codes per error class, with the envelope on stderr', () => {
    it('401 -> 3, 403 -> 4, 404 -> 5, 409 -> 6, 422 -> 7, usage -> 2, --json prints the envelope bytes', async () => {
      await putNodes(t, [md({ id: 'task-cli-codes', summary: 'Codes' })]);
      const other = await addPerson(t, 'Other codes');
      const otherEnv = { ...env, SVC_TOKEN: other.token };
      expect((await cli(['claim', 'task-cli-codes'], env)).code).to.equal(0);
      const [unauth, forbidden, missing, conflict, invalid, usageErr] = await Promise.all([
        cli(['show', 'proj-root'], { ...env, SVC_TOKEN: 'svc_pat_' + 'x'.repeat(40) }),
        cli(['list_team_tokens'], otherEnv),
        cli(['show', 'task-cli-nope', '--json'], env),
        cli(['claim', 'task-cli-codes'], otherEnv),
        cli(['queue', '--readiness', 'sometimes'], env),
        cli(['show'], env),
      ]);
      const expectFail = (res: CliResult, code: number, envelope: RegExp) => {
        expect(res.code, `${res.stderr}`).to.equal(code);
        expect(res.stderr).to.match(envelope);
      };
      expectFail(unauth, 3, /^workgraph: unauthorized: missing, invalid, expired or revoked token \[HTTP 401\]/);
      expectFail(forbidden, 4, /^workgraph: forbidden: .+\[HTTP 403\]/);
      expectFail(missing, 5, /^workgraph: not_found: .+\[HTTP 404\]/);
      expect(JSON.parse(missing.stdout).error.code).to.equal('not_found');
      expectFail(conflict, 6, /^workgraph: conflict: .+\[HTTP 409\]/);
      expectFail(invalid, 7, /^workgraph: validation_failed: .+\[HTTP 422\]/);
      expectFail(usageErr, 2, /missing <id>/);
      expect(unauth.stdout + forbidden.stdout + conflict.stdout + invalid.stdout).to.equal('');
    });

    it('an unreachable server is 1; no server at all, an unknown profile and a token of another tenant than SVC_ORG are usage errors', async () => {
      const [down, none] = await Promise.all([
        cli(['queue'], { ...env, SVC_SERVER: 'http://127.0.0.1:9' }),
        cli(['queue'], { XDG_CONFIG_HOME: tmp('wg-cli-none-') }),
      ]);
      expect(down.code).to.equal(1);
      expect(down.stderr).to.include('cannot reach http://127.0.0.1:9');
      expect(none.code).to.equal(2);
      expect(none.stderr).to.include('workgraph login');
      const [orgOk, orgWrong, noProfile] = await Promise.all([
        cli(['me', '--json'], { ...env, SVC_ORG: t.org }),
        cli(['me'], { ...env, SVC_ORG: 'someone-else' }),
        cli(['me', '--profile', 'nope'], { XDG_CONFIG_HOME: tmp('wg-cli-none-') }),
      ]);
      expect(orgOk.code, orgOk.stderr).to.equal(0);
      expect(JSON.parse(orgOk.stdout).org).to.equal(t.org);
      expect(orgWrong.code).to.equal(2);
      expect(orgWrong.stderr).to.include(`the token belongs to org '${t.org}', not 'someone-else'`);
      expect(noProfile.code).to.equal(2);
      expect(noProfile.stderr).to.include("no profile 'nope'");
    });
  });

  describe('shell completion', () => {
    it('prints scripts for bash, zsh and fish that call back __complete; __complete offers commands, flags, enum values and node ids', async () => {
      const [bash, zsh, fish, cmds, flags, enums, ids] = await Promise.all([
        cli(['completion', 'bash'], env),
        cli(['completion', 'zsh'], env),
        cli(['completion', 'fish'], env),
        cli(['__complete', 'sho'], env),
        cli(['__complete', 'claim', '--'], env),
        cli(['__complete', 'queue', '--readiness', ''], env),
        cli(['__complete', 'show', 'proj-'], env),
      ]);
      for (const s of [bash, zsh, fish]) expect(s.stdout).to.include('workgraph __complete');
      expect(bash.stdout).to.include('complete -o default -F _workgraph workgraph');
      expect(zsh.stdout).to.include('compdef _workgraph workgraph');
      expect(fish.stdout).to.include('complete -c workgraph');
      expect(cmds.stdout.split('\n')).to.include.members(['show', 'show_queue']);
      expect(flags.stdout.split('\n')).to.include.members(['--session', '--nonce', '--force', '--json']);
      expect(enums.stdout.split('\n').filter(Boolean)).to.deep.equal([]); // readiness is a free list: no enum
      expect(ids.stdout.split('\n')).to.include('proj-root');
      const setStatusEnum = await cli(['__complete', 'put_node', '--if-exists', ''], env);
      expect(setStatusEnum.stdout.split('\n').filter(Boolean)).to.deep.equal(['error', 'skip', 'update']);
    });

    it('bash: the completion script, sourced, completes through the real CLI', async function () {
      const bin = tmp('wg-cli-bin-');
      const wrapper = join(bin, 'workgraph');
      writeFileSync(wrapper, `#!/bin/sh\nexec "${process.execPath}" "${SHIM}" "$@"\n`);
      chmodSync(wrapper, 0o755);
      const script = join(bin, 'wg.bash');
      writeFileSync(script, (await cli(['completion', 'bash'], env)).stdout);
      // asynchronously: the server answering the id lookup runs in this process
      const { stdout: out } = await promisify(execFile)(
        'bash',
        ['-c', `source ${script}; COMP_WORDS=(workgraph show proj-r); COMP_CWORD=2; _workgraph; printf '%s\\n' "\${COMPREPLY[@]}"`],
        { cwd: ROOT, env: cleanEnv({ ...env, PATH: `${bin}:${process.env.PATH}` }), encoding: 'utf8' },
      );
      expect(out.split('\n')).to.include('proj-root');
    });
  });

  describe('login through the OAuth flow', () => {
    /** The hidden fields of the consent page's form. */
    function formFields(html: string): Record<string, string> {
      const fields: Record<string, string> = {};
      for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[m[1]!] = m[2]!;
      return fields;
    }

    it('signs in with PKCE over a loopback redirect (consent driven as a browser would), stores the refresh token 0600, never shows a token in ps or logs, and refreshes', async () => {
      const config = tmp('wg-cli-login-');
      const loginEnv = { XDG_CONFIG_HOME: config, NO_COLOR: '1' };
      const person = await addPerson(t, 'Login person');
      const { child, done } = startCli(['login', t.url, '--no-browser', '--profile', 'work'], loginEnv);
      const psSnapshots: string[] = [];
      const snapshot = () => psSnapshots.push(execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }));
      let stderr = '';
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no sign-in URL: ${stderr}`)), 60_000);
        const check = () => {
          const m = /^\s+(http:\/\/\S+\/oauth\/authorize\?\S+)$/m.exec(stderr);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        };
        child.stderr!.on('data', check);
        check();
      });
      snapshot();
      const authorizeUrl = new URL(url);
      expect(authorizeUrl.searchParams.get('code_challenge_method')).to.equal('S256');
      expect(authorizeUrl.searchParams.get('redirect_uri')).to.match(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
      expect(url).to.not.include('svc_');

      // the browser: the sign-in page, the PAT in the form body, then Approve
      const page = await fetch(url, { redirect: 'manual' });
      expect(page.status).to.equal(200);
      const cookie = /svc_oauth_csrf=[^;]+/.exec(page.headers.get('set-cookie') ?? '')![0];
      const signin = await fetch(`${t.url}/oauth/consent`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ ...formFields(await page.text()), action: 'signin', token: person.token }),
      });
      expect(signin.status).to.equal(200);
      snapshot();
      const approve = await fetch(`${t.url}/oauth/consent`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ ...formFields(await signin.text()), action: 'approve' }),
      });
      expect(approve.status).to.equal(302);
      const back = approve.headers.get('location')!;
      expect(back).to.match(/^http:\/\/127\.0\.0\.1:\d+\/callback\?code=/);
      snapshot();
      const landing = await fetch(back);
      expect(landing.status).to.equal(200);
      expect(await landing.text()).to.include('Signed in');
      const res = await done;
      expect(res.code, stderr).to.equal(0);
      expect(res.stdout).to.include("profile 'work' is now current");

      const file = join(config, 'workgraph', 'profiles.json');
      expect(statSync(file).mode & 0o777).to.equal(0o600);
      expect(statSync(join(config, 'workgraph')).mode & 0o777).to.equal(0o700);
      const stored = JSON.parse(readFileSync(file, 'utf8'));
      expect(stored.current).to.equal('work');
      const profile = stored.profiles.work;
      expect(profile).to.include({ server: t.url, org: t.org, person: person.id });
      expect(profile.refresh_token).to.match(/^svc_ort_/);
      expect(profile.access_token).to.match(/^svc_oat_/);

      // the profile works with no SVC_* at all
      const me = await cli(['me', '--json'], loginEnv);
      expect(me.code, me.stderr).to.equal(0);
      expect(JSON.parse(me.stdout)).to.include({ person: person.id, org: t.org });

      // an expired access token is refreshed with the stored refresh token (rotated), still 0600
      stored.profiles.work.access_expires_at = 0;
      writeFileSync(file, JSON.stringify(stored));
      const refreshed = startCli(['show', 'proj-root', '--json'], loginEnv);
      const snapAfterRefresh = setInterval(snapshot, 100);
      const r2 = await refreshed.done;
      clearInterval(snapAfterRefresh);
      expect(r2.code, r2.stderr).to.equal(0);
      const after = JSON.parse(readFileSync(file, 'utf8')).profiles.work;
      expect(after.refresh_token)
        .to.match(/^svc_ort_/)
        .and.not.equal(profile.refresh_token);
      expect(after.access_expires_at).to.be.greaterThan(Date.now());

      const list = await cli(['profile', 'list'], loginEnv);
      expect(list.stdout).to.match(/\*\s+work\s+http:\/\/127\.0\.0\.1:\d+\s+/);

      // no credential on any command line or in any log line or CLI output
      const secrets = [person.token, profile.refresh_token, profile.access_token, after.refresh_token, after.access_token];
      for (const s of secrets) {
        for (const ps of psSnapshots) expect(ps.includes(s), 'a token in the process list').to.equal(false);
        expect(
          t.logs.some((l) => l.includes(s)),
          'a token in the server log',
        ).to.equal(false);
        expect(
          stderr.includes(s) || res.stdout.includes(s) || r2.stderr.includes(s) || me.stderr.includes(s),
          'a token in CLI output',
        ).to.equal(false);
      }
      expect(
        psSnapshots.some((ps) => ps.includes(`login ${t.url} --no-browser`)),
        'the snapshots saw the CLI',
      ).to.equal(true);

      // logout revokes the grant on the server
      const logout = await cli(['logout'], loginEnv);
      expect(logout.code, logout.stderr).to.equal(0);
      expect((await t.api('GET', '/v1/me', { token: after.access_token })).status).to.equal(401);
      expect(JSON.parse(readFileSync(file, 'utf8')).profiles.work).to.equal(undefined);
    });
  });
});
