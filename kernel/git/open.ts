/**
 * Opening a git store: `openGitStore` creates the bare repository when missing, replays the
 * commit journal and hands back a `GitStoreImpl` (kernel/git/store.ts). Replay: the
 * journal's intact chain of records is written as one pack, the ref is moved forward to
 * the last record, a torn tail (never acknowledged) is dropped, temp files of an
 * interrupted write-out are removed.
 */
import type { GitStore, GitStoreOptions } from './types.js';
import { promises as fsp } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { createDurableFs, fsyncDir, fsyncFile, writeFileDurable } from '../durable-fs.js';
import { decodeJournal, JOURNAL_NAME, JournalWriter, resolveDeltas } from '../commit-journal.js';
import { writePack } from '../pack-writer.js';
import { openStores } from './cli.js';
import { EMPTY_TREE_OID, MAIN_REF, OID_RE } from './objects.js';
import { GitStoreImpl } from './store.js';

/**
 * isomorphic-git, imported when first needed: a store that exists and has its branch as a loose
 * ref (what every commit writes) opens without it, and its 0.8 MB of code (with pako) stayed
 * off every start (docs/performance.md "Eleventh session").
 */
const isoGit = async () => (await import('isomorphic-git')).default;

/** The loose `refs/heads/main`: an oid, null when absent, 'invalid' when unreadable. */
async function readLooseRef(dir: string): Promise<string | null | 'invalid'> {
  let text: string;
  try {
    text = await fsp.readFile(`${dir}/${MAIN_REF}`, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    return 'invalid';
  }
  const v = text.trim();
  return OID_RE.test(v) ? v : 'invalid';
}

/**
 * Replay the commit journal (after a crash, or a close without checkpoint), make the
 * result durable and empty the journal; returns the writer for new records.
 *
 * Every object of every intact record is checked (exists, inflates, hashes to its oid) and
 * rewritten from the journal otherwise; all of them are then fsynced with their
 * directories. The ref is moved to the last record's commit when it is absent, unreadable,
 * or at an earlier commit of the chain (or the chain's base); a ref anywhere else was moved
 * by someone else and is left alone. A torn or corrupt tail (bad length/crc) was never
 * acknowledged and is dropped.
 */
async function recoverJournal(
  dir: string,
  readRef: () => Promise<string | null>,
  readObject: (oid: string) => Promise<Buffer>,
  doSync: boolean,
): Promise<{ journal: JournalWriter; replayed: number }> {
  const path = `${dir}/${JOURNAL_NAME}`;
  let image: Buffer | null = null;
  let existed = true;
  try {
    image = await fsp.readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    existed = false;
  }
  const records = image && image.length ? decodeJournal(image).records : [];
  // keep the chained prefix (records are appended in commit order; anything else is damage)
  let n = records.length ? 1 : 0;
  while (n < records.length && records[n]!.parent === records[n - 1]!.commit) n++;
  const chain = records.slice(0, n);
  // temp files of one of our pack write-outs that a crash interrupted (git's own temp files,
  // tmp_pack_*, may belong to a repack still running and are left to git)
  try {
    for (const name of await fsp.readdir(`${dir}/objects/pack`)) {
      if (/^tmp_wg(pack|idx)_/.test(name)) await fsp.unlink(`${dir}/objects/pack/${name}`).catch(() => undefined);
    }
  } catch {
    // no pack directory yet
  }
  if (chain.length) {
    // trees journaled as deltas, rebuilt from the chain or from what the last checkpoint wrote
    await resolveDeltas(chain, readObject);
    // every object of the chain, whether or not a write-out got it to disk before the crash:
    // one durable pack (a duplicate of an object git already has is harmless)
    await writePack(
      dir,
      chain.flatMap((r) => r.objects),
      doSync,
    );

    const last = chain[chain.length - 1]!.commit;
    const loose = await readLooseRef(dir);
    const cur = loose === null ? await readRef() : loose;
    const movable = new Set<string | null>([chain[0]!.parent, ...chain.map((r) => r.commit)]);
    if (cur === 'invalid' || (cur !== last && movable.has(cur))) {
      await fsp.mkdir(`${dir}/refs/heads`, { recursive: true });
      await writeFileDurable(`${dir}/${MAIN_REF}`, `${last}\n`);
    } else if (cur === last) {
      await fsyncFile(`${dir}/${MAIN_REF}`, true);
      await fsyncDir(`${dir}/refs/heads`);
    }
  }
  // Replayed records start a fresh file (a new inode, renamed over the old one) rather than
  // being cut out of the old one: a process still holding the old file open (in cluster mode,
  // a paused former owner of the tenant) can then only write into the unlinked inode, never
  // into the records of the process that replayed it.
  if (existed && image && image.length > 0) {
    await writeFileDurable(path, '');
    image = null;
  }
  const fh = await fsp.open(path, existed ? 'r+' : 'w+');
  try {
    const journal = new JournalWriter(fh, image ? image.length : 0, doSync);
    if (journal.bytes > 0) await journal.truncate(0);
    if (!existed) await fsyncDir(dir);
    return { journal, replayed: chain.length };
  } catch (err) {
    await fh.close();
    throw err;
  }
}

/** Open (creating if missing/empty) the bare repository at `gitdir`. */
export async function openGitStore(gitdir: string, opts: GitStoreOptions = {}): Promise<GitStore> {
  const dir = resolvePath(gitdir);
  const doFsync = opts.fsync ?? true;
  // object and ref writes: temp + rename, durable through the journal + checkpoints instead
  const fs = opts.fs ?? createDurableFs({ fsync: false });

  let names: string[] = [];
  try {
    names = await fsp.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (names.length === 0) {
    await (await isoGit()).init({ fs: createDurableFs({ fsync: doFsync }), gitdir: dir, bare: true, defaultBranch: 'main' });
  } else if (!names.includes('HEAD') || !names.includes('objects')) {
    throw new Error(`${dir} exists and is not a git repository`);
  }

  const resolveHead = async (): Promise<string | null> => {
    // the loose ref, as isomorphic-git reads it first; packed-refs (after `git gc`) through it
    const loose = await readLooseRef(dir);
    if (loose !== null && loose !== 'invalid') return loose;
    try {
      return await (await isoGit()).resolveRef({ fs, gitdir: dir, ref: MAIN_REF });
    } catch (err) {
      if ((err as { code?: string }).code !== 'NotFoundError') throw err;
      return null;
    }
  };
  const readObject = async (oid: string): Promise<Buffer> =>
    Buffer.from((await (await isoGit()).readObject({ fs, gitdir: dir, oid, format: 'content' })).object as Uint8Array);
  const recovered = doFsync ? await recoverJournal(dir, resolveHead, readObject, doFsync) : null;
  const journal = recovered?.journal ?? null;
  try {
    const head = await resolveHead();
    const store = new GitStoreImpl(dir, fs, journal, opts, head, EMPTY_TREE_OID);
    store.replayedCommits = recovered?.replayed ?? 0;
    if (journal && opts.observe) journal.onSync = (s) => opts.observe!.journalSync(s);
    // cluster mode: the acknowledgements wait for the fdatasyncs in flight (kernel/cluster/head-acks.ts)
    const fence = opts.fence;
    if (journal && fence?.syncStarted) journal.onSyncStart = () => fence.syncStarted!();
    await store.init();
    openStores.set(dir, store);
    return store;
  } catch (err) {
    await journal?.close();
    throw err;
  }
}
