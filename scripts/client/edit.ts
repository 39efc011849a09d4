/**
 * `workgraph edit ID`: the node's markdown in $EDITOR, written back with the revision it was
 * read at (POST /v1/nodes {node, if_exists: 'update', revision}). When someone else changed the
 * node meanwhile (409), their change is shown and the two are merged with `git merge-file`
 * (base: what you opened; yours: what you saved; theirs: the server's now), then the merge goes
 * back to the editor for review (conflict markers, if any, to resolve) and is written against
 * the new revision. Neither side is lost: on any failure your text stays in the temp file.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseGlobal } from './args.js';
import { checkOrg, CliFailure, connect, EXIT, exitForStatus, failureOf, request, usage, type Connection } from './connection.js';
import { colorWanted, styleFor } from './render.js';

const HELP = `usage: workgraph edit <id> [--profile NAME] [--json]

Opens the node's markdown in $VISUAL or $EDITOR (default vi) and saves it back with the
revision it was read at. If the node changed on the server meanwhile, the other change is
shown and merged with yours (git merge-file, three-way); the merge opens in the editor for
review; conflict markers left in the file stop the save (your text stays in the file named).
An unchanged file saves nothing; an emptied file aborts.
`;

interface NodeRead {
  markdown: string;
  revision: string;
}

async function readNode(conn: Connection, id: string): Promise<NodeRead> {
  const res = await request(conn, 'GET', `/v1/nodes/${encodeURIComponent(id)}`);
  if (res.status !== 200) throw failureOf(res.status, res.bytes);
  return JSON.parse(res.bytes.toString()) as NodeRead;
}

/**
 * Runs the editor on `file` and waits for it without blocking this process: a blocked event loop
 * never sees the server close an idle kept-alive connection (after 5 s), and the save after a
 * longer edit then went out on that dead connection (`cannot reach ...: UND_ERR_SOCKET`).
 * While the editor owns the terminal, Ctrl-C is the editor's (as git does).
 */
async function runEditor(file: string): Promise<void> {
  const editor = process.env.VISUAL || process.env.EDITOR || 'vi';
  const ignore = () => undefined;
  process.on('SIGINT', ignore);
  process.on('SIGQUIT', ignore);
  let outcome: { code: number | null; error?: Error };
  try {
    outcome = await new Promise((resolve) => {
      // through sh so EDITOR may carry its own arguments ("code -w"); the file is "$1", never spliced in
      const child = spawn('sh', ['-c', `${editor} "$1"`, 'workgraph-edit', file], { stdio: 'inherit' });
      child.once('error', (error) => resolve({ code: null, error }));
      child.once('exit', (code) => resolve({ code }));
    });
  } finally {
    process.off('SIGINT', ignore);
    process.off('SIGQUIT', ignore);
  }
  if (outcome.error || outcome.code !== 0)
    throw new CliFailure(
      EXIT.other,
      `the editor (${editor}) failed${outcome.code !== null ? ` with exit ${outcome.code}` : ''}; your text is in ${file}`,
    );
}

const MARKERS = /^(<{7}|>{7})( |$)|^={7}$/m;

export async function editCommand(args: string[]): Promise<number> {
  const { global, rest } = parseGlobal(args);
  if (global.help) {
    process.stdout.write(HELP);
    return EXIT.ok;
  }
  if (rest.length !== 1 || rest[0]!.startsWith('-')) throw usage(HELP.trimEnd());
  const id = rest[0]!;
  const conn = await connect(global.profile);
  await checkOrg(conn);
  const style = styleFor(global.color && colorWanted(true, process.stderr));
  const opened = await readNode(conn, id);
  const dir = mkdtempSync(join(tmpdir(), 'workgraph-edit-'));
  const file = join(dir, `${id}.md`);
  writeFileSync(file, opened.markdown, { mode: 0o600 });
  await runEditor(file);
  let mine = readFileSync(file, 'utf8');
  if (mine === opened.markdown) {
    rmSync(dir, { recursive: true, force: true });
    process.stderr.write(`${id}: no changes\n`);
    return EXIT.ok;
  }
  let base = opened;
  for (let round = 0; round < 10; round++) {
    if (mine.trim() === '') throw new CliFailure(EXIT.other, `${id}: the file is empty: nothing saved`);
    if (MARKERS.test(mine))
      throw new CliFailure(
        EXIT.conflict,
        `${id}: conflict markers remain: nothing saved; your text is in ${file} (run edit again and paste it in)`,
      );
    const res = await request(conn, 'POST', '/v1/nodes', { nodes: [{ node: mine, if_exists: 'update', revision: base.revision }] });
    if (res.status >= 400) throw failureOf(res.status, res.bytes);
    const answer = JSON.parse(res.bytes.toString()) as {
      results: Array<{
        status: string;
        id: string | null;
        revision?: string | null;
        http_status?: number;
        error?: { code: string; message: string };
        warnings?: string[];
      }>;
    };
    const entry = answer.results[0]!;
    if (entry.status !== 'failed') {
      rmSync(dir, { recursive: true, force: true });
      if (global.json) process.stdout.write(res.bytes);
      else {
        process.stdout.write(`${style.green(entry.status)} ${entry.id} ${style.dim(String(entry.revision ?? '').slice(0, 12))}\n`);
        for (const w of entry.warnings ?? []) process.stderr.write(style.yellow(`warning: ${w}\n`));
      }
      return EXIT.ok;
    }
    if (entry.http_status !== 409 || entry.error?.code !== 'conflict') {
      if (global.json) process.stdout.write(res.bytes);
      throw new CliFailure(
        entry.http_status ? exitForStatus(entry.http_status) : EXIT.other,
        `${entry.error?.code}: ${entry.error?.message} [HTTP ${entry.http_status}]; your text is in ${file}`,
      );
    }
    // Someone else wrote the node since it was read: show their change, merge three ways.
    const theirs = await readNode(conn, id);
    writeFileSync(join(dir, 'base.md'), base.markdown);
    writeFileSync(join(dir, 'theirs.md'), theirs.markdown);
    writeFileSync(join(dir, 'yours.md'), mine);
    process.stderr.write(
      style.yellow(
        `${id} changed on the server since you opened it (revision ${base.revision.slice(0, 12)} -> ${theirs.revision.slice(0, 12)}). Their change:\n`,
      ),
    );
    const diff = spawnSync('git', ['diff', '--no-index', '--no-color', '-U2', '--', 'base.md', 'theirs.md'], {
      cwd: dir,
      encoding: 'utf8',
    });
    process.stderr.write(
      diff.stdout
        .split('\n')
        .filter((l) => !/^(diff --git|index |--- |\+\+\+ )/.test(l))
        .join('\n'),
    );
    const merge = spawnSync(
      'git',
      ['merge-file', '-p', '-L', 'yours', '-L', 'opened', '-L', 'server', 'yours.md', 'base.md', 'theirs.md'],
      { cwd: dir, encoding: 'utf8' },
    );
    if (merge.error || merge.status === null || merge.status < 0 || merge.status > 127)
      throw new CliFailure(
        EXIT.conflict,
        `${id}: git merge-file failed (${merge.error?.message ?? merge.stderr}); your text is in ${file}`,
      );
    writeFileSync(file, merge.stdout);
    process.stderr.write(
      merge.status === 0
        ? `Merged your change with theirs cleanly; review the merge in the editor (save to write it).\n`
        : style.yellow(
            `${merge.status} conflicting part(s): resolve the <<<<<<< ======= >>>>>>> blocks in the editor (save to write it).\n`,
          ),
    );
    await runEditor(file);
    mine = readFileSync(file, 'utf8');
    base = theirs;
    if (mine === theirs.markdown) {
      rmSync(dir, { recursive: true, force: true });
      process.stderr.write(`${id}: the server's version kept; nothing to write\n`);
      return EXIT.ok;
    }
  }
  throw new CliFailure(EXIT.conflict, `${id}: the node keeps changing; your text is in ${file}`);
}
