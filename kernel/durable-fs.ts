/**
 * Crash-safe file writes.
 *
 * `createDurableFs()` returns an object usable as isomorphic-git's `fs` plugin (the
 * promise flavour: `{ promises: { readFile, writeFile, ... } }`). Its `writeFile` never
 * writes a file in place: it writes a temp file in the same directory, fsyncs it, renames
 * it over the target and (unless told to defer it) fsyncs the directory, so a crash
 * leaves either the old file or the whole new one, never a torn loose object or ref.
 * `mkdir` fsyncs the parent so a freshly created directory survives a crash too.
 *
 * isomorphic-git's `FileSystem.write` calls `writeFile`, and when that throws (ENOENT for
 * a missing parent directory) it mkdirs the parent and retries: opening the temp file
 * in a missing directory throws ENOENT, so that contract holds.
 *
 * Temp names are chosen so a crash that leaves one behind does not confuse git:
 * loose objects use git's own `tmp_obj_` prefix (fsck and prune know it); everything
 * else gets a dot-prefixed `.lock`-suffixed name, which git's ref iteration skips.
 *
 * The git store's own write-out (kernel/git/store.ts) uses the two helpers at the end:
 * `writeFileAtomicSync` (temp + rename with the same naming, synchronous, no fsync) and
 * `fsyncFile`.
 */
import { promises as fsp, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import type { Mode, ObjectEncodingOptions, OpenMode } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { basename, dirname, join, resolve as resolvePath } from 'node:path';
import { randomBytes } from 'node:crypto';

export interface DurableFsOptions {
  /** fsync files and directories (default true). `false` keeps temp+rename but skips every fsync. */
  fsync?: boolean;
  /**
   * For paths where this returns true, `writeFile` does NOT fsync the containing
   * directory after the rename; the caller promises to call `fsyncDir` itself (the git
   * store batches this for the object directories a commit touched).
   */
  deferDirSync?: (path: string) => boolean;
}

type WriteData = string | Uint8Array;
type WriteOptions = BufferEncoding | (ObjectEncodingOptions & { mode?: Mode; flag?: OpenMode }) | null | undefined;

export interface DurablePromisesApi {
  readFile(path: string, options?: unknown): Promise<Buffer | string>;
  writeFile(path: string, data: WriteData, options?: WriteOptions): Promise<void>;
  unlink(path: string): Promise<void>;
  readdir(path: string, options?: unknown): Promise<unknown>;
  mkdir(path: string, options?: unknown): Promise<string | undefined>;
  rmdir(path: string): Promise<void>;
  rm(path: string, options?: unknown): Promise<void>;
  stat(path: string, options?: unknown): Promise<unknown>;
  lstat(path: string, options?: unknown): Promise<unknown>;
  readlink(path: string, options?: unknown): Promise<unknown>;
  symlink(target: string, path: string, type?: unknown): Promise<void>;
  chmod(path: string, mode: Mode): Promise<void>;
}

export interface DurableFs {
  promises: DurablePromisesApi;
  readonly fsync: boolean;
}

let tmpCounter = 0;
const LOOSE_OBJECT_NAME = /^[0-9a-f]{38}$/;
const OBJECT_DIR_NAME = /^[0-9a-f]{2}$/;

/** Temp file name next to `path` (see the module comment for the naming rules). */
function tempPathFor(path: string): string {
  const dir = dirname(path);
  const base = basename(path);
  const uniq = `${process.pid}_${(tmpCounter++).toString(36)}_${randomBytes(4).toString('hex')}`;
  if (LOOSE_OBJECT_NAME.test(base) && OBJECT_DIR_NAME.test(basename(dir))) {
    return join(dir, `tmp_obj_${uniq}`);
  }
  return join(dir, `.${base}.${uniq}.tmp.lock`);
}

/** fsync a directory so renames/creates/unlinks inside it are durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await fsp.open(dir, 'r');
  try {
    await fh.sync();
  } catch (err) {
    // Some file systems refuse fsync on a directory handle; nothing more can be done there.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EINVAL' && code !== 'ENOTSUP' && code !== 'EBADF') throw err;
  } finally {
    await fh.close();
  }
}

function splitWriteOptions(options: WriteOptions): { encoding: BufferEncoding | undefined; mode: Mode | undefined } {
  if (options == null) return { encoding: undefined, mode: undefined };
  if (typeof options === 'string') return { encoding: options, mode: undefined };
  return { encoding: options.encoding ?? undefined, mode: options.mode };
}

async function writeViaTemp(path: string, data: WriteData, options: WriteOptions, doFsync: boolean, syncDir: boolean): Promise<void> {
  const { encoding, mode } = splitWriteOptions(options);
  const tmp = tempPathFor(path);
  // 'wx': the temp name is unique; ENOENT here when the directory is missing (isomorphic-git relies on it).
  const fh = await fsp.open(tmp, 'wx', mode ?? 0o666);
  try {
    try {
      if (typeof data === 'string') await fh.writeFile(data, { encoding: encoding ?? 'utf8' });
      else await fh.writeFile(data);
      if (doFsync) await fh.sync();
    } finally {
      await fh.close();
    }
    await fsp.rename(tmp, path);
  } catch (err) {
    await fsp.unlink(tmp).catch(() => undefined);
    throw err;
  }
  if (doFsync && syncDir) await fsyncDir(dirname(path));
}

/**
 * Write `data` to `path` durably: temp file in the same directory, fsync, rename, fsync
 * the directory. The parent directory must exist (ENOENT otherwise).
 */
export async function writeFileDurable(path: string, data: WriteData, opts: { fsync?: boolean; mode?: Mode } = {}): Promise<void> {
  await writeViaTemp(path, data, opts.mode === undefined ? undefined : { mode: opts.mode }, opts.fsync ?? true, true);
}

/** Create an fs plugin for isomorphic-git whose writes are atomic and (by default) durable. */
export function createDurableFs(opts: DurableFsOptions = {}): DurableFs {
  const doFsync = opts.fsync ?? true;
  const defer = opts.deferDirSync;

  const promises: DurablePromisesApi = {
    async readFile(path, options) {
      return fsp.readFile(path, options as Parameters<typeof fsp.readFile>[1]);
    },
    async writeFile(path, data, options) {
      await writeViaTemp(path, data, options, doFsync, !(defer && defer(path)));
    },
    async unlink(path) {
      await fsp.unlink(path);
      if (doFsync) await fsyncDir(dirname(path));
    },
    async readdir(path, options) {
      return fsp.readdir(path, options as Parameters<typeof fsp.readdir>[1]);
    },
    async mkdir(path, options) {
      const recursive = typeof options === 'object' && options !== null && (options as { recursive?: boolean }).recursive === true;
      const first = await fsp.mkdir(path, options as Parameters<typeof fsp.mkdir>[1]);
      if (doFsync) {
        if (!recursive) {
          await fsyncDir(dirname(path));
        } else if (typeof first === 'string') {
          // fsync the parent of every directory that was created, from the deepest up.
          const target = resolvePath(path);
          const top = resolvePath(first);
          let cur = target;
          for (;;) {
            await fsyncDir(dirname(cur));
            if (cur === top || dirname(cur) === cur) break;
            cur = dirname(cur);
          }
        }
      }
      return typeof first === 'string' ? first : undefined;
    },
    async rmdir(path) {
      await fsp.rmdir(path);
      if (doFsync) await fsyncDir(dirname(path));
    },
    async rm(path, options) {
      await fsp.rm(path, options as Parameters<typeof fsp.rm>[1]);
      if (doFsync) await fsyncDir(dirname(path)).catch(() => undefined);
    },
    async stat(path, options) {
      return fsp.stat(path, options as Parameters<typeof fsp.stat>[1]);
    },
    async lstat(path, options) {
      return fsp.lstat(path, options as Parameters<typeof fsp.lstat>[1]);
    },
    async readlink(path, options) {
      return fsp.readlink(path, options as Parameters<typeof fsp.readlink>[1]);
    },
    async symlink(target, path, type) {
      await fsp.symlink(target, path, type as Parameters<typeof fsp.symlink>[2]);
      if (doFsync) await fsyncDir(dirname(path));
    },
    async chmod(path, mode) {
      await fsp.chmod(path, mode);
    },
  };
  return { promises, fsync: doFsync };
}

let tmpSeq = 0;
/** Atomic replace without fsync: a unique temp name beside `path`, then rename. */
export function writeFileAtomicSync(path: string, data: Buffer | string): void {
  const slash = path.lastIndexOf('/');
  const dir = path.slice(0, slash);
  const uniq = `${process.pid}_${(tmpSeq++).toString(36)}`;
  // git's own temp-object name inside objects/xx/; elsewhere a dot-name ending in .lock, which git skips
  const tmp = /\/objects\/[0-9a-f]{2}$/.test(dir) ? `${dir}/tmp_obj_${uniq}` : `${dir}/.${path.slice(slash + 1)}.${uniq}.tmp.lock`;
  writeFileSync(tmp, data, { flag: 'wx' });
  try {
    renameSync(tmp, path);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // already gone
    }
    throw err;
  }
}

/** fsync one file by path; a missing file is skipped when `missingOk`. */
export async function fsyncFile(path: string, missingOk: boolean): Promise<void> {
  let fh: FileHandle;
  try {
    fh = await fsp.open(path, 'r');
  } catch (err) {
    if (missingOk && (err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
