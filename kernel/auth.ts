/**
 * Tokens: `svc_pat_<30 base62><6 base62 crc32>` personal/standing tokens and
 * `svc_ast_...` per-session agent tokens. Only SHA-256 hashes are stored (auth/tokens.json);
 * lookups compare hashes in constant time. The file is shared with the operator CLI,
 * so every mutation re-reads it under a lock, and a running server notices the CLI's
 * changes by the file's identity (inode, mtime, size: each write renames a new file in). `TokenStore` is the interface; cluster mode keeps tokens in PostgreSQL
 * (kernel/cluster/pg-tokens.ts).
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmdirSync,
  statSync,
  writeSync,
  mkdirSync as mkdirLock,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { crc32 } from 'node:zlib';

/**
 * `oauth-grant`: one client's authorization, derived from a PAT (never presented);
 * `oauth-access`: a `svc_oat_` access token of a grant; `oauth-refresh`: a refresh token of a
 * grant (rotated on use; never a bearer credential); `connector-jwt`: the in-memory record of a
 * verified connector JWT (never stored).
 */
export type TokenKind = 'pat' | 'agent-standing' | 'agent-session' | 'oauth-grant' | 'oauth-access' | 'oauth-refresh' | 'connector-jwt';

export interface TokenRecord {
  hash: string;
  kind: TokenKind;
  person: string;
  agent: string | null;
  session: string | null;
  label: string | null;
  audience: string | null;
  created: string;
  expires: string | null;
  revoked_at: string | null;
  last_used: string | null;
  minted_by: string | null;
  /** hash of the token this one was derived from (OAuth grants); revoking the parent cascades */
  parent: string | null;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const TOKEN_SHAPE = /^svc_(pat|ast|oat)_([0-9A-Za-z]{30})([0-9A-Za-z]{6})$/;

function base62(bytes: Buffer, length: number): string {
  let out = '';
  for (const b of bytes) {
    if (b >= 248) continue; // reject to keep the distribution uniform
    out += BASE62[b % 62];
    if (out.length === length) return out;
  }
  return out + base62(randomBytes(length), length - out.length);
}

function checksum(body: string): string {
  let n = crc32(body) >>> 0;
  let out = '';
  for (let i = 0; i < 6; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export function generateToken(kind: 'pat' | 'ast' | 'oat' | 'ort' = 'pat'): string {
  const body = base62(randomBytes(40), 30);
  return `svc_${kind}_${body}${checksum(body)}`;
}

/** Shape and checksum check of the tokens this project mints, so garbage is refused without a lookup. */
export function isWellFormedToken(token: string): boolean {
  const m = TOKEN_SHAPE.exec(token);
  return m !== null && checksum(m[2]!) === m[3];
}

/**
 * The documented form `svc_pat_<opaque>` (docs/design.md §2): what an operator may bring from a
 * secret manager as SVC_BOOTSTRAP_TOKEN (for example 32 random hex characters). At least
 * 16 characters of `[A-Za-z0-9_-]`, at most 256, so a guessable or oversized value is refused.
 */
const OPAQUE_SHAPE = /^svc_(pat|ast|oat)_[A-Za-z0-9_-]{16,256}$/;
export function isOpaqueToken(token: string): boolean {
  return OPAQUE_SHAPE.test(token);
}

// crypto.hash: the one-shot form, about half the CPU of a Hash object for a token-sized input
// (a token is hashed on every request)
export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}

/** SHA-256 of a token as bytes and hex. */
export function hashTokenBytes(token: string): { digest: Buffer; hash: string } {
  const digest = hash('sha256', token, 'buffer');
  return { digest, hash: digest.toString('hex') };
}

export function hashPrefix(hash: string): string {
  return hash.slice(0, 12);
}

function writeDurableSync(file: string, data: string): void {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  const dfd = openSync(dirname(file), 'r');
  try {
    fsyncSync(dfd);
  } finally {
    closeSync(dfd);
  }
}

function withLock<T>(dir: string, fn: () => T): T {
  const lock = join(dir, '.lock');
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      mkdirLock(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // A lock older than 10 s belongs to a process that died holding it.
      try {
        if (Date.now() - statSync(lock).mtimeMs > 10_000) rmdirSync(lock);
      } catch {
        /* raced with its owner */
      }
      if (Date.now() > deadline) throw new Error(`auth store lock busy: ${lock}`, { cause: err });
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
  try {
    return fn();
  } finally {
    rmdirSync(lock);
  }
}

/**
 * The token records of one tenant. Reads are synchronous (memory); `mutate` is a
 * read-modify-write of the whole set that resolves once the change is durable. Two
 * implementations: `FileTokenStore` (auth/tokens.json, below) and the PostgreSQL one of
 * cluster mode (kernel/cluster/pg-tokens.ts).
 */
export interface TokenStore {
  /** the tenant's auth/ directory (also holds file keys such as the lens ticket secret) */
  readonly dir: string;
  /** bumped whenever the set of records may have changed (reload or mutation) */
  readonly version: number;
  /** Takes in changes another process made (cheap and synchronous); true if the records changed. */
  reload(): boolean;
  all(): TokenRecord[];
  hashes(): string[];
  /** Constant-time comparison of the stored hash against the presented one (`digest`: its bytes, when the caller has them). */
  find(hash: string, digest?: Buffer): TokenRecord | undefined;
  /**
   * Read-modify-write: `fn` gets the current records (freshly read, with the pending
   * `last_used` times applied) and changes them in place; resolves with its result once the
   * change is durable. Rejects (nothing changed) if `fn` throws or the write fails.
   */
  mutate<T>(fn: (records: Map<string, TokenRecord>) => T): Promise<T>;
  /** last_used is advisory: kept in memory and written with the next mutation or flush. */
  touch(hash: string, nowMs: number): void;
  flush(): Promise<void>;
  /**
   * Re-reads the records now, for a caller that can wait for a change another process made a
   * moment ago (PostgreSQL: before its notification arrived). Absent: `reload()` is exact.
   */
  refresh?(): Promise<void>;
  /**
   * auth/tokens.json as the file store would hold it, for a store that does not keep that file
   * (the admin export writes it). Absent: the file is the store.
   */
  exportFile?(): Buffer;
  /** Releases what the store holds open (listeners); the file store holds nothing. */
  close?(): Promise<void>;
}

/** The tokens.json image of a set of records (the file store's format). */
export function tokensFileImage(records: Iterable<TokenRecord>): string {
  return JSON.stringify([...records], null, 1);
}

/** Constant-time comparison of a record's hash with a presented hash (shared by the implementations). */
export function sameHash(record: TokenRecord, cache: WeakMap<TokenRecord, Buffer>, hash: string, digest?: Buffer): boolean {
  let a = cache.get(record);
  if (!a) {
    a = Buffer.from(record.hash, 'hex');
    cache.set(record, a);
  }
  const b = digest ?? Buffer.from(hash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The in-memory side both token stores share: lookups, the constant-time compare, last_used. */
export abstract class MemoryTokenRecords {
  protected records = new Map<string, TokenRecord>();
  /** last_used values not yet written (they go out with the next mutation or flush) */
  protected pendingLastUsed = new Map<string, string>();
  /** the stored hash of each record as bytes, for the constant-time compare */
  private hashBytes = new WeakMap<TokenRecord, Buffer>();
  /** when each token's last_used was last moved (ms): it is kept to the second */
  private touchedAt = new Map<string, number>();
  /** bumped whenever the set of records may have changed (reload or mutation) */
  version = 0;

  all(): TokenRecord[] {
    return [...this.records.values()];
  }

  hashes(): string[] {
    return [...this.records.keys()];
  }

  /** Constant-time comparison of the stored hash against the presented one (`digest`: its bytes, when the caller has them). */
  find(hash: string, digest?: Buffer): TokenRecord | undefined {
    const record = this.records.get(hash);
    if (!record) return undefined;
    return sameHash(record, this.hashBytes, hash, digest) ? record : undefined;
  }

  /** last_used is advisory: kept in memory, to the second, and written with the next mutation or flush. */
  touch(hash: string, nowMs: number): void {
    const last = this.touchedAt.get(hash);
    if (last !== undefined && nowMs - last < 1000 && nowMs >= last) return;
    this.touchedAt.set(hash, nowMs);
    const at = new Date(nowMs).toISOString();
    const r = this.records.get(hash);
    if (r) r.last_used = at;
    this.pendingLastUsed.set(hash, at);
  }
}

export class FileTokenStore extends MemoryTokenRecords implements TokenStore {
  /** inode:mtime:size of the file last read ('' before the first read, 'none' when absent) */
  private stamp = '';
  private readonly file: string;

  constructor(readonly dir: string) {
    super();
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.file = join(dir, 'tokens.json');
    this.reload();
  }

  /** Re-read the file if another process changed it. Cheap: one stat. */
  reload(): boolean {
    let stamp: string;
    try {
      // the inode too: file mtimes are coarse (a few ms), two writes within one tick keep it
      const st = statSync(this.file);
      stamp = `${st.ino}:${st.mtimeMs}:${st.size}`;
    } catch {
      stamp = 'none';
    }
    if (stamp === this.stamp) return false;
    this.stamp = stamp;
    this.version++;
    this.records = new Map();
    if (stamp === 'none') return true;
    const list = JSON.parse(readFileSync(this.file, 'utf8')) as TokenRecord[];
    for (const r of list) this.records.set(r.hash, r);
    return true;
  }

  /** Read-modify-write under the cross-process lock (done synchronously; the promise is already settled). */
  async mutate<T>(fn: (records: Map<string, TokenRecord>) => T): Promise<T> {
    return this.mutateSync(fn);
  }

  private mutateSync<T>(fn: (records: Map<string, TokenRecord>) => T): T {
    return withLock(this.dir, () => {
      this.stamp = '';
      this.reload();
      this.applyLastUsed();
      let result: T;
      try {
        result = fn(this.records);
        writeDurableSync(this.file, tokensFileImage(this.records.values()));
      } catch (err) {
        // `fn` may have changed records in place before it threw: back to what the file holds
        this.stamp = '';
        this.reload();
        this.applyLastUsed();
        throw err;
      }
      this.pendingLastUsed.clear();
      const st = statSync(this.file);
      this.stamp = `${st.ino}:${st.mtimeMs}:${st.size}`;
      this.version++;
      return result;
    });
  }

  private applyLastUsed(): void {
    for (const [hash, at] of this.pendingLastUsed) {
      const r = this.records.get(hash);
      if (r) r.last_used = at;
    }
  }

  async flush(): Promise<void> {
    if (this.pendingLastUsed.size > 0) this.mutateSync(() => undefined);
  }
}

export function newTokenRecord(
  token: string,
  fields: Partial<TokenRecord> & Pick<TokenRecord, 'kind' | 'person' | 'created'>,
): TokenRecord {
  return {
    hash: hashToken(token),
    agent: null,
    session: null,
    label: null,
    audience: null,
    expires: null,
    revoked_at: null,
    last_used: null,
    minted_by: null,
    parent: null,
    ...fields,
  };
}

/** A record's `expires` parsed, with the string it was parsed from (a record can be changed in place). */
const expiresMs = new WeakMap<TokenRecord, { text: string; ms: number }>();

export function isLive(record: TokenRecord, nowMs: number): boolean {
  if (record.revoked_at) return false;
  if (!record.expires) return true;
  let parsed = expiresMs.get(record);
  if (parsed?.text !== record.expires) expiresMs.set(record, (parsed = { text: record.expires, ms: Date.parse(record.expires) }));
  // an expiry that cannot be read (NaN) fails closed: the server writes ISO-8601, so only a
  // store changed by other hands holds one, and a token must not outlive its expiry by it
  return parsed.ms > nowMs;
}
