/**
 * Merging the store's packs in the background (`GitStoreImpl.maybeRepack`): one
 * `git pack-objects` over the object ids of the packs being merged (and any loose objects),
 * read from their `.idx` files, then the new pack made durable and the merged ones deleted.
 *
 * Why not `git repack --geometric=2 -d`, which picks the same packs: its
 * `pack-objects --stdin-packs` walks the history from the commits of the packs it merges,
 * and that walk (git 2.39) does not stop at the packs it leaves alone. Beside a history of
 * 1.6 million commits it took 7.4 s of CPU and 1.4 GB of memory to merge two 0.2 MB packs
 * (docs/performance.md, twelfth session), on every sixteenth checkpoint: the work grew with
 * history, and the soak's throughput fell with it. Given the ids, pack-objects looks each object up
 * (deltas whose base is merged too are reused as they are) and searches deltas for the
 * rest among objects of similar size (it has no paths): the work is that of the packs
 * merged. Until a pack is sealed (`planPackWork`) the store still runs `git repack -a -d -k`
 * when the largest pack would be merged, whose walk gives git the paths to deltify a
 * checkpoint's whole trees against the same directory's older ones: merged by ids alone, the
 * 100k-node scale bench's data directory was 8.5x the size of `git gc --aggressive`
 * (1.96-2.60x with the full repacks).
 *
 * Crash safety: pack-objects writes the new pack and index under temp names and renames
 * them into place (.idx last); they are fsynced with the directory before any merged pack
 * is deleted (`.idx` first, so git stops using a pack before its data goes), then the
 * directory again. A crash in between leaves objects in two packs, which git reads fine.
 */
import { promises as fsp } from 'node:fs';
import { spawn } from 'node:child_process';
import { fsyncDir, fsyncFile } from '../durable-fs.js';
import { gitEnv, runGitNoSettle } from './cli.js';

/** A complete pack (its `.idx` exists) that may be merged (no `.keep` beside it). */
export interface PackFile {
  /** file name without extension: `pack-<hash>` */
  name: string;
  size: number;
}

/** The repository's mergeable packs, smallest first. */
export async function listPacks(gitdir: string): Promise<PackFile[]> {
  const dir = `${gitdir}/objects/pack`;
  const names = new Set(await fsp.readdir(dir).catch(() => [] as string[]));
  const packs: PackFile[] = [];
  for (const file of names) {
    if (!file.endsWith('.pack')) continue;
    const name = file.slice(0, -'.pack'.length);
    if (!names.has(`${name}.idx`) || names.has(`${name}.keep`)) continue;
    const st = await fsp.stat(`${dir}/${file}`).catch(() => null);
    if (st) packs.push({ name, size: st.size });
  }
  return packs.sort((a, b) => a.size - b.size || (a.name < b.name ? -1 : 1));
}

/**
 * How many of the smallest packs (sizes ascending) to merge so that the merged pack and the
 * ones left form a geometric progression (each at least `factor` times the one below it),
 * as `git repack --geometric` decides; 0 when they already do.
 */
export function geometricRollCount(sizes: readonly number[], factor = 2): number {
  const n = sizes.length;
  // suffixOk[k]: sizes[k..] already form a progression
  const suffixOk = new Array<boolean>(n + 1).fill(true);
  for (let i = n - 2; i >= 0; i--) suffixOk[i] = suffixOk[i + 1]! && sizes[i + 1]! >= factor * sizes[i]!;
  if (suffixOk[0]) return 0;
  let sum = sizes[0]!;
  for (let k = 2; k < n; k++) {
    sum += sizes[k - 1]!;
    if (suffixOk[k] && sizes[k]! >= factor * sum) return k;
  }
  return n;
}

/** What the store's background maintenance does next (`planPackWork`). */
export type PackWork = { kind: 'full' } | { kind: 'merge'; packs: PackFile[] } | null;

/**
 * Packs of at least `seal` bytes are never rewritten in the background (like git's own
 * `gc.bigPackThreshold`): each rewrite of a pack costs in proportion to its size, and a full
 * repack in proportion to the whole history (its walk: 77 s of CPU and 3.4 GB at 2.2 million
 * commits, a minute and a half of lost throughput even at `nice 19`, docs/performance.md,
 * thirteenth session). So the work of one background step is bounded by `seal`, whatever
 * the history's length. While no pack is sealed: the full `git repack -a -d -k` whenever the
 * younger packs together weigh half of the largest (it deltifies with paths, which merges by
 * ids cannot), else the geometric merge of the smallest by ids. Once one is: geometric merges
 * by ids among the packs below `seal` only (the merged pack may then be sealed in turn).
 */
export function planPackWork(packs: readonly PackFile[], seal: number): PackWork {
  const open = packs.filter((p) => p.size < seal);
  if (open.length === packs.length) {
    const largest = packs.length ? packs[packs.length - 1]!.size : 0;
    const rest = packs.reduce((a, p) => a + p.size, 0) - largest;
    if (packs.length > 1 && 2 * rest >= largest) return { kind: 'full' };
  }
  const merge = open.slice(0, geometricRollCount(open.map((p) => p.size)));
  return merge.length < 2 ? null : { kind: 'merge', packs: merge };
}

/** The object ids of a pack index (version 2, or the original version 1), as binary. */
export function indexObjectIds(idx: Buffer): Buffer[] {
  const v2 = idx.length >= 8 && idx.readUInt32BE(0) === 0xff744f63;
  if (v2 && idx.readUInt32BE(4) !== 2) throw new Error(`pack index version ${idx.readUInt32BE(4)} is not supported`);
  const fanout = v2 ? 8 : 0;
  const count = idx.readUInt32BE(fanout + 255 * 4);
  const table = fanout + 256 * 4;
  const stride = v2 ? 20 : 24;
  const skip = v2 ? 0 : 4;
  if (idx.length < table + count * stride) throw new Error('pack index is truncated');
  const ids: Buffer[] = [];
  for (let i = 0; i < count; i++) ids.push(idx.subarray(table + i * stride + skip, table + i * stride + skip + 20));
  return ids;
}

/** Loose object ids (hex) in `objects/xx/`. */
async function looseObjectIds(gitdir: string): Promise<string[]> {
  const ids: string[] = [];
  for (const dir of await fsp.readdir(`${gitdir}/objects`).catch(() => [] as string[])) {
    if (!/^[0-9a-f]{2}$/.test(dir)) continue;
    for (const f of await fsp.readdir(`${gitdir}/objects/${dir}`).catch(() => [] as string[]))
      if (/^[0-9a-f]{38}$/.test(f)) ids.push(dir + f);
  }
  return ids;
}

/** Runs `git pack-objects` with object ids (one hex line each) written to its stdin; resolves with the new pack's hash. */
function packObjects(gitdir: string, lines: AsyncIterable<string>, signal?: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const args = ['pack-objects', '--local', '--quiet', '--delta-base-offset', '--non-empty', `${gitdir}/objects/pack/pack`];
    const child = spawn('git', ['--git-dir', gitdir, ...args], {
      env: gitEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(signal ? { signal } : {}),
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.stdin.on('error', () => undefined); // an early exit is reported by 'close'
    // an abort kills git: 'close' follows once it has exited, and rejects (so temp files are
    // only removed after git is gone)
    child.on('error', (e) => {
      if (e.name !== 'AbortError') reject(e);
    });
    child.on('close', (code) => {
      const hash = Buffer.concat(out).toString('utf8').trim();
      if (code === 0 && /^[0-9a-f]{40,64}$/.test(hash)) resolve(hash);
      else reject(new Error(`git pack-objects failed (${code}): ${Buffer.concat(err).toString('utf8').trim()}`));
    });
    (async () => {
      for await (const chunk of lines) {
        // git gone early (a bad object, an abort): stop feeding it; 'close' reports why
        if (child.stdin.destroyed) return;
        if (!child.stdin.write(chunk)) await new Promise((r) => (child.stdin.once('drain', r), child.stdin.once('close', r)));
      }
      child.stdin.end();
    })().catch((e: unknown) => {
      child.kill();
      reject(e as Error);
    });
  });
}

/** Object id lines of the packs, a pack's index at a time (an index of a million objects is 28 MB). */
async function* idLines(gitdir: string, packs: readonly PackFile[], loose: readonly string[]): AsyncGenerator<string> {
  for (const p of packs) {
    const ids = indexObjectIds(await fsp.readFile(`${gitdir}/objects/pack/${p.name}.idx`));
    for (let i = 0; i < ids.length; i += 65_536) {
      let chunk = '';
      for (const id of ids.slice(i, i + 65_536)) chunk += `${id.toString('hex')}\n`;
      yield chunk;
    }
  }
  if (loose.length) yield `${loose.join('\n')}\n`;
}

/**
 * Merge `packs` (and the repository's loose objects) into one new pack; the merged packs and
 * loose objects are deleted once it is in place (durably when `durable`). Packs written
 * meanwhile are not touched. Returns the new pack's name. Aborting `signal` before git is done
 * stops it and deletes nothing (its temp files are removed).
 */
export async function rollUpPacks(gitdir: string, packs: readonly PackFile[], durable: boolean, signal?: AbortSignal): Promise<string> {
  const dir = `${gitdir}/objects/pack`;
  const loose = await looseObjectIds(gitdir);
  const temps = async () => new Set((await fsp.readdir(dir).catch(() => [] as string[])).filter((f) => f.startsWith('tmp_')));
  const tempsBefore = await temps();
  let name: string;
  try {
    name = `pack-${await packObjects(gitdir, idLines(gitdir, packs, loose), signal)}`;
  } catch (err) {
    // git leaves its half-written temp pack behind; nothing else of ours writes packs here
    for (const f of await temps()) if (!tempsBefore.has(f)) await fsp.rm(`${dir}/${f}`, { force: true });
    throw err;
  }
  if (durable) {
    await fsyncFile(`${dir}/${name}.pack`, false);
    await fsyncFile(`${dir}/${name}.idx`, false);
    await fsyncDir(dir);
  }
  for (const p of packs) {
    if (p.name === name) continue; // the same objects packed the same way
    for (const ext of ['.idx', '.rev', '.bitmap', '.pack']) await fsp.rm(`${dir}/${p.name}${ext}`, { force: true });
  }
  if (durable) await fsyncDir(dir);
  if (loose.length) await runGitNoSettle(gitdir, ['prune-packed', '-q']);
  return name;
}
