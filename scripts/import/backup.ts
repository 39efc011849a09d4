/**
 * `workgraph backup <file>`: one tenant of a running server (SVC_SERVER + an admin's SVC_TOKEN)
 * into one tar file: `backup.json` (org, head, time), `graph.bundle` (the whole repository,
 * GET /v1/export?history=1) and the admin copy of GET /v1/export?auth=1 (credential files,
 * operational state such as leases, tenant.json).
 *
 * `workgraph restore <file>`: that tenant onto SVC_DATA_DIR, which must not hold it yet (an
 * empty data directory, or one with other tenants). The restored tenant serves the same head,
 * nodes, tokens and leases. A running server picks it up within a second; otherwise start one.
 */
import { RESTORED_MARKER } from '../../kernel/events/log.js';
import { execFileSync } from 'node:child_process';
import { createReadStream, createWriteStream, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import tar from 'tar-stream';
import { configFromEnv } from '../../kernel/config.js';
import { ORG_PATTERN } from '../../kernel/tenants.js';

export const BACKUP_HELP = `usage:
  workgraph backup <file.tar>    SVC_SERVER, SVC_TOKEN (an admin's): the token's tenant, whole
  workgraph restore <file.tar>   onto SVC_DATA_DIR (the tenant must not exist there yet)`;

async function fetchOk(url: string, token: string): Promise<Response> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  if (res.status !== 200) throw new Error(`${url.replace(/\?.*/, '')} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  return res;
}

async function readTar(stream: NodeJS.ReadableStream): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  const extract = tar.extract();
  extract.on('entry', (header, entry, next) => {
    const chunks: Buffer[] = [];
    entry.on('data', (c: unknown) => void chunks.push(c as Buffer));
    entry.on('end', () => {
      if (header.type === 'file') out.set(header.name, Buffer.concat(chunks));
      next();
    });
    entry.resume();
  });
  await pipeline(stream, extract);
  return out;
}

export async function backupCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { help: { type: 'boolean' } } });
  if (values.help || positionals.length !== 1) {
    process.stdout.write(BACKUP_HELP + '\n');
    if (!values.help) process.exitCode = 2;
    return;
  }
  const server = (process.env.SVC_SERVER ?? process.env.WORKGRAPH_SERVER)?.replace(/\/+$/, '');
  const token = process.env.SVC_TOKEN ?? process.env.WORKGRAPH_TOKEN;
  if (!server || !token) throw new Error('backup needs SVC_SERVER and SVC_TOKEN (an admin token)');
  const me = (await (await fetchOk(`${server}/v1/me`, token)).json()) as { org: string };
  const bundleRes = await fetchOk(`${server}/v1/export?history=1`, token);
  const head = bundleRes.headers.get('x-svc-head');
  const bundle = Buffer.from(await bundleRes.arrayBuffer());
  const authRes = await fetchOk(`${server}/v1/export?auth=1`, token);
  const copy = await readTar((await import('node:stream')).Readable.fromWeb(authRes.body as never));
  const pack = tar.pack();
  const file = positionals[0]!;
  const written = pipeline(pack, createWriteStream(file, { mode: 0o600 }));
  const meta = { format: 1, org: me.org, head, created: new Date().toISOString(), server };
  pack.entry({ name: 'backup.json', mode: 0o644 }, JSON.stringify(meta, null, 1) + '\n');
  pack.entry({ name: 'graph.bundle', mode: 0o600 }, bundle);
  let files = 0;
  for (const [name, content] of copy) {
    if (!name.startsWith('auth/')) continue; // node files are in the bundle, with their history
    pack.entry({ name, mode: 0o600 }, content);
    files++;
  }
  pack.finalize();
  await written;
  process.stdout.write(JSON.stringify({ file, org: me.org, head, bundle_bytes: bundle.length, files }) + '\n');
}

export async function restoreCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { help: { type: 'boolean' } } });
  if (values.help || positionals.length !== 1) {
    process.stdout.write(BACKUP_HELP + '\n');
    if (!values.help) process.exitCode = 2;
    return;
  }
  const config = configFromEnv();
  const entries = await readTar(createReadStream(positionals[0]!));
  const meta = JSON.parse(entries.get('backup.json')?.toString('utf8') ?? 'null') as { format: number; org: string; head: string } | null;
  if (!meta || meta.format !== 1 || !ORG_PATTERN.test(meta.org))
    throw new Error('not a workgraph backup (backup.json missing or unreadable)');
  const bundle = entries.get('graph.bundle');
  if (!bundle) throw new Error('the backup has no graph.bundle');
  const tenants = join(config.dataDir, 'tenants');
  const target = join(tenants, meta.org);
  if (existsSync(target))
    throw new Error(`tenant '${meta.org}' already exists in ${config.dataDir}; restore onto a data directory without it`);
  mkdirSync(tenants, { recursive: true });
  // built beside the tenants and renamed into place whole, so a running server never opens half of it
  const staging = join(tenants, `.staging-restore-${meta.org}-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true, mode: 0o700 });
  const scratch = mkdtempSync(join(tmpdir(), 'wg-restore-'));
  try {
    const bundleFile = join(scratch, 'graph.bundle');
    writeFileSync(bundleFile, bundle);
    const gitdir = join(staging, 'graph.git');
    execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch=main', gitdir]);
    execFileSync('git', ['--git-dir', gitdir, 'fetch', '--quiet', bundleFile, '+refs/heads/*:refs/heads/*']);
    const restoredHead = execFileSync('git', ['--git-dir', gitdir, 'rev-parse', 'refs/heads/main'], { encoding: 'utf8' }).trim();
    if (meta.head && restoredHead !== meta.head) throw new Error(`the bundle's main is ${restoredHead}, the backup says ${meta.head}`);
    let files = 0;
    for (const [name, content] of entries) {
      if (!name.startsWith('auth/')) continue;
      const rel = name.slice('auth/'.length);
      // auth/tenant.json and auth/state/* go back to their places; the rest are credential files
      const dest =
        rel === 'tenant.json' ? join(staging, 'tenant.json') : rel.startsWith('state/') ? join(staging, rel) : join(staging, 'auth', rel);
      if (!normalize(dest).startsWith(staging + '/') || rel.includes('..')) throw new Error(`unsafe path in the backup: ${name}`);
      mkdirSync(dirname(dest), { recursive: true, mode: 0o700 });
      writeFileSync(dest, content, { mode: rel === 'tenant.json' ? 0o644 : 0o600 });
      files++;
    }
    if (!existsSync(join(staging, 'tenant.json'))) throw new Error('the backup has no tenant.json');
    mkdirSync(join(staging, 'state'), { recursive: true });
    // the restored tenant's first open announces the restore once (graph.restored, docs/events.md)
    mkdirSync(join(staging, 'events'), { recursive: true, mode: 0o700 });
    writeFileSync(join(staging, 'events', RESTORED_MARKER), JSON.stringify({ head: restoredHead, at: new Date().toISOString() }) + '\n');
    renameSync(staging, target);
    process.stdout.write(JSON.stringify({ org: meta.org, head: restoredHead, files, data_dir: config.dataDir }) + '\n');
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    rmSync(staging, { recursive: true, force: true });
  }
}
