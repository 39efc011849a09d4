/**
 * GET /v1/export: the tenant's graph taken away as plain files or plain git.
 *
 *  - default: a ustar tarball of `nodes/` written from the in-memory index, one entry at a
 *    time, each waiting for the consumer to drain before the next is encoded, so memory
 *    stays flat however many nodes there are (the archive is never built in memory);
 *  - `gzip=1`: the same stream through node:zlib;
 *  - `history=1`: `git bundle create - --all` of the bare repository, streamed;
 *  - `auth=1` (admin only): the tarball also carries the tenant's `auth/` credential files
 *    (token hashes, signing keys; never plaintext tokens).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, pipeline, type Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import type { Header as TarHeader, Pack } from 'tar-stream';
import { errors } from '../../kernel/errors.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import { RawResponse, type OpContext } from '../../kernel/plugin.js';
import type { Tenant } from '../../kernel/tenant.js';
import type { Static } from '../../kernel/operation.js';
import type { ExportGraphInput } from './api.js';

/** The fixed wire names (docs/spec.md Versioning: clients read them as written). */
export const HEADER = {
  head: 'x-svc-head',
  nodeCount: 'x-svc-node-count',
  skipped: 'x-svc-skipped',
  authFiles: 'x-svc-auth-files',
} as const;

/** Entries handed to tar-stream ahead of the consumer (each is one node file, ~1-9 KB). */
const ENTRY_WINDOW = 32;

const NODE_PATH = /^nodes\/[a-z0-9][a-z0-9-]*\/[0-9a-f]{2}\/([a-z0-9][a-z0-9-]*)\.md$/;

export async function exportGraph(ctx: OpContext, input: Static<typeof ExportGraphInput>): Promise<RawResponse> {
  const gzip = input.gzip === true;
  const history = input.history === true;
  const auth = input.auth === true;
  // credential files leave only with an admin's own credential: an agent token acts for its owner but is not them
  if (auth && (!ctx.actor.isAdmin || ctx.actor.agent))
    throw errors.forbidden(
      'auth=1 exports credential files and needs an admin (stewards edge to proj-root) using a person credential, not an agent token',
    );
  if (history && (gzip || auth)) {
    throw errors.validation('history=1 streams a git bundle of the graph; gzip and auth apply to the tarball only', [
      { field: gzip ? 'gzip' : 'auth', message: 'not combinable with history=1' },
    ]);
  }
  if (!ctx.tenant.head) throw errors.conflict('the graph has no commits yet');
  if (history) return bundleExport(ctx);
  // the tar writer is imported with the first export, not at every start (docs/performance.md)
  const { pack } = (await import('tar-stream')).default;
  return tarExport(ctx, pack, gzip, auth, auth ? await storedAuthFiles(ctx.tenant) : {});
}

// ---------------------------------------------------------------- tarball

interface AuthFile {
  name: string;
  content: Buffer;
}

/** Regular files of the tenant's auth/ directory (temp files of in-flight atomic writes left out). */
function readAuthFiles(dir: string): AuthFile[] {
  let names: string[];
  try {
    names = readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isFile() && !d.name.startsWith('.') && !d.name.endsWith('.tmp'))
      .map((d) => d.name)
      .sort();
  } catch {
    return [];
  }
  const files: AuthFile[] = [];
  for (const name of names) {
    try {
      // Credential files are small (a token store is a few hundred bytes per token).
      files.push({ name, content: readFileSync(join(dir, name)) });
    } catch {
      // replaced or removed between listing and reading: not part of this export
    }
  }
  return files;
}

function mtimeOf(record: NodeRecord, fallback: Date): Date {
  const updated = record.frontmatter.updated ?? record.frontmatter.created;
  const ms = typeof updated === 'string' ? Date.parse(updated) : Number.NaN;
  return Number.isFinite(ms) ? new Date(ms) : fallback;
}

function ignore(): void {}

function addEntry(pack: Pack, header: Partial<TarHeader> & { name: string }, content: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    // The callback fires once the entry has been taken by the consumer (tar-stream holds
    // the write until its reader drains), which is the backpressure of the whole export.
    const sink = pack.entry({ ...header, size: content.length }, content, (err) => (err ? reject(err) : resolve()));
    // a destroyed pack destroys the open entry, which emits the error the callback already got
    sink.on('error', ignore);
  });
}

/**
 * The operational stores' files when they are not files (cluster mode keeps tokens and state
 * in PostgreSQL): written in the file stores' formats, so a restore is the same either way.
 */
async function storedAuthFiles(tenant: Tenant): Promise<{ tokens?: AuthFile; state?: AuthFile[] }> {
  const tokens = tenant.tokens.exportFile?.();
  const dump = await tenant.state.dump?.();
  return {
    ...(tokens ? { tokens: { name: 'tokens.json', content: tokens } } : {}),
    ...(dump
      ? {
          state: Object.keys(dump)
            .sort()
            .map((name) => ({ name: `${name}.json`, content: Buffer.from(JSON.stringify(dump[name])) })),
        }
      : {}),
  };
}

function tarExport(
  ctx: OpContext,
  newPack: () => Pack,
  gzip: boolean,
  withAuth: boolean,
  stored: { tokens?: AuthFile; state?: AuthFile[] },
): RawResponse {
  const { tenant } = ctx;
  // Taken in one synchronous step, so the list matches this head exactly. It holds
  // references to the index's immutable records, not copies of their content.
  const head = tenant.head!;
  const records: NodeRecord[] = [];
  let skipped = 0;
  for (const record of tenant.index.nodes.values()) {
    // Only well-formed node paths are archived: nothing can land outside nodes/ on extract.
    const m = NODE_PATH.exec(record.path);
    if (m && m[1] === record.id) records.push(record);
    else skipped++;
  }
  records.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  let authFiles = withAuth ? readAuthFiles(join(tenant.dir, 'auth')) : [];
  if (stored.tokens)
    authFiles = [...authFiles.filter((f) => f.name !== 'tokens.json'), stored.tokens].sort((a, b) => (a.name < b.name ? -1 : 1));
  // auth=1 is the admin's whole-tenant copy: beside the credential files, the operational state
  // (leases, capabilities, journals; not the index snapshot, a start-up cache) as auth/state/*
  // and tenant.json (plugins, limits) as auth/tenant.json, so a restore serves the same tokens
  // and leases (`workgraph backup`). They count in x-svc-auth-files; nodes stay the only
  // entries outside auth/.
  if (withAuth) {
    const stateFiles = stored.state ?? readAuthFiles(join(tenant.dir, 'state')).filter((f) => !f.name.startsWith('index-snapshot'));
    for (const f of stateFiles) authFiles.push({ name: `state/${f.name}`, content: f.content });
    for (const f of readAuthFiles(tenant.dir)) if (f.name === 'tenant.json') authFiles.push(f);
  }
  const now = new Date(ctx.services.clock.now());

  const pack = newPack();
  const out = gzip ? createGzip() : new PassThrough();
  // Errors (a client that went away) arrive through the pipeline callback and the entry
  // callbacks; these listeners keep a late duplicate emission from becoming uncaught.
  pack.on('error', ignore);
  pipeline(pack, out, (err) => {
    if (err && err.message !== 'Premature close') tenant.log.warn('export stream ended early', { org: tenant.org, error: String(err) });
  });
  void (async () => {
    // At most ENTRY_WINDOW entries are handed to tar-stream ahead of the consumer: enough to
    // keep the pipe full, few enough that memory does not depend on the number of nodes.
    const inflight = new Set<Promise<void>>();
    let failure: Error | null = null;
    const add = async (header: Partial<TarHeader> & { name: string }, content: Buffer): Promise<void> => {
      const p: Promise<void> = addEntry(pack, header, content).catch((err: Error) => {
        failure ??= err;
      });
      inflight.add(p);
      void p.then(() => inflight.delete(p));
      if (inflight.size >= ENTRY_WINDOW) await Promise.race(inflight);
      if (failure) throw failure;
    };
    try {
      for (const record of records) {
        if (pack.destroyed) return;
        await add({ name: record.path, mode: 0o644, mtime: mtimeOf(record, now), type: 'file' }, Buffer.from(record.markdown, 'utf8'));
      }
      for (const file of authFiles) {
        if (pack.destroyed) return;
        await add({ name: `auth/${file.name}`, mode: 0o600, mtime: now, type: 'file' }, file.content);
      }

      await Promise.all(inflight);
      if (failure) throw failure;
      if (!pack.destroyed) pack.finalize();
    } catch (err) {
      if (!pack.destroyed) pack.destroy(err as Error);
    }
  })();

  const short = head.slice(0, 12);
  const headers: Record<string, string> = {
    'content-type': gzip ? 'application/gzip' : 'application/x-tar',
    'content-disposition': `attachment; filename="${tenant.org}-graph-${short}.tar${gzip ? '.gz' : ''}"`,
    'cache-control': 'no-store',
    [HEADER.head]: head,
    [HEADER.nodeCount]: String(records.length),
  };
  if (skipped > 0) headers[HEADER.skipped] = String(skipped);
  if (withAuth) headers[HEADER.authFiles] = String(authFiles.length);
  return new RawResponse(200, headers, out);
}

// ---------------------------------------------------------------- git bundle

const BUNDLE_HEADER_MAX = 1024 * 1024;

/**
 * Streams `git bundle create - --all`. The response waits for the bundle's own header (its
 * ref list, written before the pack) so `x-svc-head` is exactly the commit the bundle
 * carries, even when a write lands while the export starts.
 */
async function bundleExport(ctx: OpContext): Promise<RawResponse> {
  const { tenant } = ctx;
  await tenant.store.settled(); // every acknowledged commit's objects and ref are on disk for git
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  env.GIT_CONFIG_NOSYSTEM = '1';
  env.LC_ALL = 'C';
  const child = spawn('git', ['--git-dir', tenant.store.gitdir, 'bundle', 'create', '--quiet', '-', '--all'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: Buffer[] = [];
  let stderrBytes = 0;
  child.stderr.on('data', (c: Buffer) => {
    if (stderrBytes < 64 * 1024) stderr.push(c);
    stderrBytes += c.length;
  });
  const stdout = child.stdout as Readable;

  return new Promise<RawResponse>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const fail = (message: string) => {
      if (settled) return;
      settled = true;
      child.kill();
      tenant.log.error('history export failed', { org: tenant.org, error: message });
      reject(errors.internal());
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      const buf = Buffer.concat(chunks, size);
      const end = buf.indexOf('\n\n');
      if (end < 0) {
        if (size > BUNDLE_HEADER_MAX) fail('bundle header too large');
        return;
      }
      const refs = new Map<string, string>();
      for (const line of buf.toString('utf8', 0, end).split('\n')) {
        const m = /^([0-9a-f]{40}) (\S+)$/.exec(line);
        if (m) refs.set(m[2]!, m[1]!);
      }
      const head = refs.get('refs/heads/main') ?? refs.get('HEAD');
      if (!head) return fail('bundle names no main branch');
      settled = true;
      stdout.pause();
      stdout.removeListener('data', onData);
      const out = new PassThrough();
      out.write(buf);
      // The response ends only once git has exited cleanly, so a failure late in the pack
      // shows as a broken transfer rather than a complete-looking truncated bundle.
      stdout.pipe(out, { end: false });
      child.on('close', (code) => {
        if (code === 0) out.end();
        else out.destroy(new Error(`git bundle failed (${code}): ${Buffer.concat(stderr).toString('utf8').trim()}`));
      });
      // The client went away: stop git.
      out.on('close', () => {
        if (child.exitCode === null && child.signalCode === null) child.kill();
      });
      resolve(
        new RawResponse(
          200,
          {
            'content-type': 'application/x-git-bundle',
            'content-disposition': `attachment; filename="${tenant.org}-graph-${head.slice(0, 12)}.bundle"`,
            'cache-control': 'no-store',
            [HEADER.head]: head,
          },
          out,
        ),
      );
    };
    stdout.on('data', onData);
    child.on('error', (err) => fail(String(err)));
    child.on('close', (code) => {
      if (!settled) fail(`git bundle exited (${code}) before its header: ${Buffer.concat(stderr).toString('utf8').trim()}`);
    });
  });
}
