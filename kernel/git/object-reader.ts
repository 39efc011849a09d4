/**
 * `ObjectReader`: single packed objects read through one long-lived `git cat-file --batch`
 * child per store (kernel/git/reads.ts `readObject`). isomorphic-git would load a whole pack
 * and its index into this process the first time any object in it is read, and keep it for
 * the life of the store: memory growing with history. git instead mmaps the packs (page
 * cache, not our heap) and binary-searches their indexes.
 *
 * One child answers requests in order: "<oid>\n" in, "<oid> <type> <size>\n<body>\n" or
 * "<oid> missing\n" out. It starts at the first read, stops after `idleMs` without reads, at
 * `recycle()` (a repack deleted packs it may still hold open: their disk space is freed only
 * once it exits) and at `close()`. A child that dies fails the reads in flight (they never
 * hang) and the next read starts a new one.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { gitEnv } from './cli.js';

export interface RawObject {
  type: string;
  body: Buffer;
}

interface Pending {
  oid: string;
  resolve(o: RawObject | null): void;
  reject(e: Error): void;
}

/** One `git cat-file --batch` process and the requests it has not answered yet. */
class BatchChild {
  readonly proc: ChildProcessWithoutNullStreams;
  readonly pending: Pending[] = [];
  readonly exited: Promise<void>;
  dead = false;
  private chunks: Buffer[] = [];
  private avail = 0;
  /** bytes of the current record (body + LF); -1 while its header is unread */
  private need = -1;
  private type = '';
  private readonly errOut: Buffer[] = [];

  constructor(
    gitdir: string,
    private readonly onIdle: (c: BatchChild) => void,
  ) {
    this.proc = spawn('git', ['--git-dir', gitdir, 'cat-file', '--batch'], {
      env: gitEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.proc.on('close', () => resolve()));
    this.proc.stdout.on('data', (c: Buffer) => this.onData(c));
    this.proc.stderr.on('data', (c: Buffer) => {
      // a few lines at most from a sick git; bounded so a chatty one cannot grow memory
      if (this.errOut.length < 16) this.errOut.push(c);
    });
    this.proc.stdin.on('error', (e) => this.die(e));
    this.proc.on('error', (e) => this.die(e));
    this.proc.on('close', (code, signal) => {
      const why = Buffer.concat(this.errOut).toString('utf8').trim();
      this.die(new Error(`git cat-file --batch exited (${signal ?? code})${why ? `: ${why}` : ''}`));
    });
    this.setRef(false);
  }

  read(oid: string): Promise<RawObject | null> {
    return new Promise((resolve, reject) => {
      if (this.dead) return reject(new Error('git cat-file --batch is not running'));
      this.pending.push({ oid, resolve, reject });
      // keep the event loop alive only while an answer is owed
      if (this.pending.length === 1) this.setRef(true);
      this.proc.stdin.write(`${oid}\n`);
    });
  }

  /** Ask git to exit once it has answered what it was sent (EOF on stdin). */
  end(): void {
    if (!this.proc.stdin.writableEnded) this.proc.stdin.end();
  }

  kill(): void {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
  }

  private setRef(on: boolean): void {
    const handles = [this.proc, this.proc.stdin, this.proc.stdout, this.proc.stderr] as unknown as Array<{
      ref?(): void;
      unref?(): void;
    }>;
    for (const h of handles) (on ? h.ref : h.unref)?.call(h);
  }

  private die(err: Error): void {
    if (this.dead) return;
    this.dead = true;
    this.setRef(false);
    for (const p of this.pending.splice(0)) p.reject(err);
    this.chunks = [];
    this.avail = 0;
    this.kill();
  }

  private onData(c: Buffer): void {
    if (this.dead) return;
    this.chunks.push(c);
    this.avail += c.length;
    // re-scan only when the pending record can be complete (no O(n^2) on a large object)
    if (this.need < 0 || this.avail >= this.need) this.pump();
  }

  private pump(): void {
    let buf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.avail);
    let pos = 0;
    for (;;) {
      if (this.need < 0) {
        const nl = buf.indexOf(10, pos);
        if (nl < 0) break;
        const header = buf.toString('latin1', pos, nl).split(' ');
        pos = nl + 1;
        const head = this.pending[0];
        if (!head || header[0] !== head.oid) {
          return this.die(new Error(`git cat-file: unexpected header "${header.join(' ')}"`));
        }
        if (header.length === 2 && header[1] === 'missing') {
          this.settle()?.resolve(null);
          continue;
        }
        if (header.length !== 3 || !/^\d+$/.test(header[2]!)) {
          return this.die(new Error(`git cat-file: unexpected header "${header.join(' ')}"`));
        }
        this.type = header[1]!;
        this.need = Number(header[2]) + 1;
      }
      if (buf.length - pos < this.need) break;
      // a copy: the body must not pin the (possibly much larger) chunk it arrived in
      const body = Buffer.from(buf.subarray(pos, pos + this.need - 1));
      pos += this.need;
      this.need = -1;
      this.settle()?.resolve({ type: this.type, body });
    }
    buf = buf.subarray(pos);
    this.chunks = buf.length ? [buf] : [];
    this.avail = buf.length;
  }

  /** The answered request, off the queue; the idle hook runs when nothing more is owed. */
  private settle(): Pending | undefined {
    const p = this.pending.shift();
    if (this.pending.length === 0) {
      this.setRef(false);
      this.onIdle(this);
    }
    return p;
  }
}

export class ObjectReader {
  private child: BatchChild | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  private closed = false;
  /** children asked to exit that may still be answering; close() waits for them */
  private readonly retiring = new Set<BatchChild>();

  constructor(
    readonly gitdir: string,
    private readonly idleMs = 30_000,
  ) {}

  /** pid of the running child, if any (tests) */
  get pid(): number | undefined {
    return this.child && !this.child.dead ? this.child.proc.pid : undefined;
  }

  /**
   * A packed object. A missing one fails with isomorphic-git's NotFoundError, as readObject
   * always has; it is first retried once on a fresh child, in case git's view of the packs
   * is stale (git re-scans objects/pack on a miss itself; the retry costs one spawn, only on
   * a miss).
   */
  async read(oid: string): Promise<RawObject> {
    let o = await this.current().read(oid);
    if (!o) {
      this.recycle();
      o = await this.current().read(oid);
    }
    // isomorphic-git's own error, as its readObject throws (imported on a miss only: kernel/git/open.ts)
    if (!o) throw new (await import('isomorphic-git')).default.Errors.NotFoundError(oid);
    return o;
  }

  /** Retire the child (after a repack deleted packs): it exits once it has answered. */
  recycle(): void {
    const c = this.child;
    this.child = null;
    this.clearIdle();
    if (c) this.retire(c);
  }

  /**
   * Stop the child; reads still owed are answered first (git is killed if it has not exited
   * within 5 s: they fail). Reads after close start a child that exits as soon as it is idle.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.recycle();
    await Promise.all(
      [...this.retiring].map(async (c) => {
        // not unref'd: the child's own handles are (an idle reader must not keep a process
        // alive), so without a live timer a close awaited at the end of a process (a CLI
        // command, a kernel closed after its listener) ended it here, skipping what follows
        const t = setTimeout(() => c.kill(), 5_000);
        await c.exited;
        clearTimeout(t);
      }),
    );
  }

  private current(): BatchChild {
    this.clearIdle();
    if (this.child?.dead) this.child = null;
    this.child ??= new BatchChild(this.gitdir, (c) => this.onIdle(c));
    return this.child;
  }

  private retire(c: BatchChild): void {
    this.retiring.add(c);
    void c.exited.then(() => this.retiring.delete(c));
    c.end();
  }

  private onIdle(c: BatchChild): void {
    if (c !== this.child) return;
    this.clearIdle();
    // a read after close still works (a late history lookup), but leaves no git behind
    if (this.closed) return this.recycle();
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.child === c && c.pending.length === 0) this.recycle();
    }, this.idleMs);
    this.idleTimer.unref();
  }

  private clearIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }
}
