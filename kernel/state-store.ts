/**
 * Operational state (leases, capability records, idempotency keys, journals): never
 * committed to the graph. The embedded store keeps each collection as one JSON file
 * under the tenant's state/ directory, written durably (temp + fsync + rename) before
 * a mutation resolves, so an acknowledged change survives a crash. The interface is
 * small on purpose so a shared store can stand behind it: cluster mode keeps the
 * collections in PostgreSQL (kernel/cluster/pg-state.ts).
 *
 * Contract of every implementation: reads are synchronous, from memory; a write changes
 * the memory at once (so a decision made synchronously against the map, such as a lease
 * acquisition, cannot race) and resolves once durable; a write that fails is undone in
 * memory (unless a later write replaced the value since).
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  promises as fsp,
  readdirSync,
  readFileSync,
  renameSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { writeFileDurable } from './durable-fs.js';

export interface Collection<T> {
  get(key: string): T | undefined;
  has(key: string): boolean;
  entries(): IterableIterator<[string, T]>;
  values(): IterableIterator<T>;
  readonly size: number;
  /** Resolves once the change is durable. */
  set(key: string, value: T): Promise<void>;
  delete(key: string): Promise<void>;
  /** Apply several changes with one durable write. */
  batch(changes: Array<{ key: string; value: T | null }>): Promise<void>;
  /**
   * The value of `key`, reading through to the shared store on a local miss (a record another
   * process wrote a moment ago); with `fresh`, reading through even when this process has it (a
   * record another process may have changed a moment ago, its notification not in yet: a step of
   * a flow whose previous step another process served). The file store has no other writer: the
   * same as `get`.
   */
  fetch(key: string, opts?: { fresh?: boolean }): Promise<T | undefined>;
  /**
   * Removes `key` and returns the value it had: of several callers (in any process sharing the
   * store) exactly one gets the value, the others undefined (single-use records: OAuth codes).
   */
  take(key: string): Promise<T | undefined>;
}

export interface CollectionOptions {
  /**
   * How the file store lays the collection out. 'file' (the default): one JSON file, rewritten
   * whole on each write, which is cheap for small collections. 'file-per-key': one file per key
   * (<name>/<sha256 of the key>.json), so a write costs the size of one record however many
   * there are: for collections that requests from anyone can grow (OAuth pending
   * authorizations). `batch` is then one durable write per key, not one for all. Stores that
   * already write one row per key (PostgreSQL) ignore it. A collection that switches to it
   * from 'file' finds its old `<name>.json` imported at open (then renamed `.imported`).
   */
  layout?: 'file' | 'file-per-key';
}

export interface StateStore {
  collection<T>(name: string, options?: CollectionOptions): Collection<T>;
  /**
   * Every collection (name -> key -> value), for a store whose data is not the files under the
   * tenant's state/ directory: the admin export writes them as state/<name>.json. Absent: the
   * files are the store.
   */
  dump?(): Promise<Record<string, Record<string, unknown>>>;
  /** Releases what the store holds open (listeners); the file store holds nothing. */
  close?(): Promise<void>;
}

/** The in-memory side every store shares: reads answer from `data`, never from the backing store. */
export abstract class MemoryCollection<T> {
  protected readonly data = new Map<string, T>();

  get size(): number {
    return this.data.size;
  }
  get(key: string): T | undefined {
    return this.data.get(key);
  }
  has(key: string): boolean {
    return this.data.has(key);
  }
  entries(): IterableIterator<[string, T]> {
    return this.data.entries();
  }
  values(): IterableIterator<T> {
    return this.data.values();
  }
}

class FileCollection<T> extends MemoryCollection<T> implements Collection<T> {
  private flushing: Promise<void> = Promise.resolve();
  private dirty = false;

  constructor(private readonly file: string) {
    super();
    try {
      const parsed = JSON.parse(readFileSync(file, 'utf8')) as Record<string, T>;
      for (const [k, v] of Object.entries(parsed)) this.data.set(k, v);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }

  async fetch(key: string): Promise<T | undefined> {
    return this.data.get(key);
  }
  async take(key: string): Promise<T | undefined> {
    const value = this.data.get(key);
    if (value === undefined) return undefined;
    this.data.delete(key); // synchronously: a second caller finds nothing
    await this.flush();
    return value;
  }
  set(key: string, value: T): Promise<void> {
    this.data.set(key, value);
    return this.flush();
  }
  delete(key: string): Promise<void> {
    if (!this.data.delete(key)) return Promise.resolve();
    return this.flush();
  }
  batch(changes: Array<{ key: string; value: T | null }>): Promise<void> {
    for (const c of changes) {
      if (c.value === null) this.data.delete(c.key);
      else this.data.set(c.key, c.value);
    }
    return this.flush();
  }

  /** Coalesces: changes made while a write is in flight go out together in the next one. */
  private flush(): Promise<void> {
    this.dirty = true;
    const next = this.flushing.then(async () => {
      if (!this.dirty) return;
      this.dirty = false;
      await writeFileDurable(this.file, JSON.stringify(Object.fromEntries(this.data)));
    });
    this.flushing = next.catch(() => undefined);
    return next;
  }
}

/**
 * One file per key: `<dir>/<sha256(key)>.json` holding `{k, v}` (the key in the name would
 * need escaping; the hash is fixed-length and safe). Writes of one key are ordered; each writes
 * the key's value in memory when it runs, so a burst of changes to a key coalesces.
 */
class KeyedFileCollection<T> extends MemoryCollection<T> implements Collection<T> {
  private readonly writing = new Map<string, Promise<void>>();

  constructor(
    private readonly dir: string,
    legacyFile?: string,
  ) {
    super();
    mkdirSync(dir, { recursive: true });
    if (legacyFile && existsSync(legacyFile)) this.importLegacy(legacyFile);
    for (const name of readdirSync(dir)) {
      // dot-prefixed names are temp files a crash left behind (durable-fs)
      if (name.startsWith('.') || !name.endsWith('.json')) continue;
      const record = JSON.parse(readFileSync(join(dir, name), 'utf8')) as { k: string; v: T };
      this.data.set(record.k, record.v);
    }
  }

  /**
   * The collection as one file (the 'file' layout), written out a file per key before the file
   * is renamed away: a crash in between leaves the file, and the next open imports it again
   * (the same values).
   */
  private importLegacy(file: string): void {
    const entries = JSON.parse(readFileSync(file, 'utf8')) as Record<string, T>;
    for (const [k, v] of Object.entries(entries)) {
      const target = this.fileOf(k);
      const temp = join(this.dir, `.import.${process.pid}.tmp.lock`);
      const fd = openSync(temp, 'w');
      try {
        writeSync(fd, JSON.stringify({ k, v }));
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(temp, target);
    }
    const dirFd = openSync(this.dir, 'r');
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
    renameSync(file, `${file}.imported`);
  }

  private fileOf(key: string): string {
    return join(this.dir, `${createHash('sha256').update(key).digest('hex')}.json`);
  }

  private write(key: string): Promise<void> {
    const previous = this.writing.get(key) ?? Promise.resolve();
    const next = previous.then(async () => {
      const value = this.data.get(key);
      if (value === undefined)
        await fsp.unlink(this.fileOf(key)).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT') throw err;
        });
      else await writeFileDurable(this.fileOf(key), JSON.stringify({ k: key, v: value }));
    });
    const settled = next.catch(() => undefined);
    this.writing.set(key, settled);
    void settled.then(() => {
      if (this.writing.get(key) === settled) this.writing.delete(key);
    });
    return next;
  }

  async fetch(key: string): Promise<T | undefined> {
    return this.data.get(key);
  }
  async take(key: string): Promise<T | undefined> {
    const value = this.data.get(key);
    if (value === undefined) return undefined;
    this.data.delete(key); // synchronously: a second caller finds nothing
    await this.write(key);
    return value;
  }
  set(key: string, value: T): Promise<void> {
    this.data.set(key, value);
    return this.write(key);
  }
  delete(key: string): Promise<void> {
    if (!this.data.delete(key)) return Promise.resolve();
    return this.write(key);
  }
  async batch(changes: Array<{ key: string; value: T | null }>): Promise<void> {
    for (const c of changes) {
      if (c.value === null) this.data.delete(c.key);
      else this.data.set(c.key, c.value);
    }
    await Promise.all([...new Set(changes.map((c) => c.key))].map((k) => this.write(k)));
  }
}

export class FileStateStore implements StateStore {
  private readonly collections = new Map<string, Collection<unknown>>();

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  collection<T>(name: string, options: CollectionOptions = {}): Collection<T> {
    let c = this.collections.get(name);
    if (!c) {
      c =
        options.layout === 'file-per-key'
          ? new KeyedFileCollection<unknown>(join(this.dir, name), join(this.dir, `${name}.json`))
          : new FileCollection<unknown>(join(this.dir, `${name}.json`));
      this.collections.set(name, c);
    }
    return c as Collection<T>;
  }
}
