/**
 * The per-tenant event log behind `EventLog` (kernel/events/types.ts), on files under
 * `<tenant>/events/`: segment files of JSON lines named by the first id they hold
 * (`000000000001.jsonl`), newest last, plus a bounded in-memory ring of the most recent
 * events so `read` of recent ids and `subscribe` never touch disk.
 *
 * A segment's first line is its header `{"segment":<first id>,"covered":<commit|null>}`;
 * then one line per event, and `{"covered":"<commit>"}` markers for commits that yielded no
 * event. The newest line carrying `covered` or `commit` names the last commit the log
 * derived events from: at open the tenant appends what commits after it yielded (crash
 * recovery, kernel/events/recover.ts). All lines of one commit go out in one write, so a
 * killed process leaves a commit's events whole or absent.
 *
 * Commit-derived events are written without fsync (the commit journal is durable and
 * recovery derives them again after a power loss); `emit` (operational events, which no
 * other record holds) resolves only once its line is fdatasynced, concurrent emits sharing
 * one fdatasync. Retention drops whole segments: the oldest go once the rest still hold
 * `maxEvents`, or once their newest event is older than `maxAgeDays` (the newest segment
 * always stays). Memory holds the ring and one small record per segment, not the history.
 *
 * A closed segment (never written again) is gzipped in the background once the next one has
 * begun (`000000000001.jsonl.gz`, about a tenth of its size; the file's mtime is the time of
 * its newest event, which age retention reads without opening it): the gzipped file is made
 * durable before the plain one goes, and an open that finds both (a crash in between) keeps the
 * gzipped one. Readers of old ids decompress a closed segment once and keep it while they page.
 */
import {
  closeSync,
  existsSync,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync, gzip } from 'node:zlib';
import { writeFileDurable } from '../durable-fs.js';
import type { Clock, Logger } from '../config.js';
import { matchesFilter, type EventFilter, type EventListener, type EventLog, type NewEvent, type WorkEvent } from './types.js';

export interface EventRetention {
  /** keep at least this many of the newest events (older whole segments are dropped) */
  maxEvents: number;
  /** drop segments whose newest event is older than this many days */
  maxAgeDays: number;
}

export const DEFAULT_RETENTION: EventRetention = { maxEvents: 100_000, maxAgeDays: 30 };

export interface FileEventLogOptions {
  dir: string;
  org: string;
  fsync: boolean;
  clock: Clock;
  log: Logger;
  retention?: EventRetention;
  /** events kept in memory (default 4096) */
  ringSize?: number;
  /** cluster mode (a tenant taken over from another process): reopen the newest segment as a new file */
  freshInode?: boolean;
}

interface Segment {
  first: number;
  path: string;
  /** ISO time of its newest event ('' when it holds none) */
  lastTime: string;
}

const SEGMENT_RE = /^(\d{12})\.jsonl(\.gz)?$/;
const gzipAsync = promisify(gzip);
/** written by `workgraph restore` (scripts/import/backup.ts) into the restored tenant's events/ */
export const RESTORED_MARKER = 'restored.json';
const segmentName = (first: number) => `${String(first).padStart(12, '0')}.jsonl`;
const TAIL_BYTES = 256 * 1024;

/** A line of a segment: an event (has `id`), a header (`segment`) or a commit marker (`covered`). */
interface Line {
  id?: number;
  commit?: string;
  covered?: string | null;
  segment?: number;
  time?: string;
}

function parseLines(text: string): Line[] {
  const out: Line[] = [];
  for (const l of text.split('\n')) {
    if (!l) continue;
    try {
      out.push(JSON.parse(l) as Line);
    } catch {
      // a torn last line after a power loss: cut at open, skipped here
    }
  }
  return out;
}

const fdatasyncAsync = (fd: number) => new Promise<void>((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));

export class FileEventLog implements EventLog {
  private segments: Segment[] = [];
  private fd = -1;
  private currentCount = 0;
  private last = 0;
  private coveredCommit: string | null = null;
  private readonly ring: WorkEvent[] = [];
  private readonly listeners = new Set<EventListener>();
  private readonly retention: EventRetention;
  private readonly ringSize: number;
  private readonly segmentEvents: number;
  /** group fdatasync bookkeeping: lines written, lines known durable, the sync in flight */
  private written = 0;
  private synced = 0;
  private syncing: Promise<void> | null = null;
  private closed = false;

  private constructor(private readonly opts: FileEventLogOptions) {
    this.retention = opts.retention ?? DEFAULT_RETENTION;
    this.ringSize = opts.ringSize ?? 4096;
    // about ten segments per retained window, so dropping one frees a tenth
    this.segmentEvents = Math.max(1, Math.min(10_000, Math.floor(this.retention.maxEvents / 10)));
  }

  /**
   * Opens (or creates) the log in `opts.dir`. `head` is the graph's head now: a new log
   * starts covering it (history from before the log existed yields no events).
   */
  static open(opts: FileEventLogOptions, head: string | null): FileEventLog {
    const log = new FileEventLog(opts);
    log.load(head);
    return log;
  }

  get lastId(): number {
    return this.last;
  }

  get firstId(): number {
    return this.segments[0]?.first ?? 1;
  }

  /**
   * Set when this log was created for a tenant `workgraph restore` just rebuilt (its marker
   * file, RESTORED_MARKER): the tenant announces the restore once (`graph.restored`).
   */
  restoredFrom: { head: string; at: string } | null = null;

  /** Forgets the restore marker once the restore was announced. */
  restoreAnnounced(): void {
    this.restoredFrom = null;
    rmSync(join(this.opts.dir, RESTORED_MARKER), { force: true });
  }

  /** the last commit whose events the log holds (null: none yet) */
  get covered(): string | null {
    return this.coveredCommit;
  }

  private load(head: string | null): void {
    const { dir } = this.opts;
    mkdirSync(dir, { recursive: true });
    // first id -> file name; a gzipped segment wins over its plain copy (a crash between the two)
    const files = new Map<number, string>();
    for (const n of readdirSync(dir)) {
      const m = SEGMENT_RE.exec(n);
      if (!m) continue;
      const first = Number(m[1]);
      const other = files.get(first);
      if (other === undefined) files.set(first, n);
      else {
        const [keep, drop] = m[2] ? [n, other] : [other, n];
        rmSync(join(dir, drop), { force: true });
        files.set(first, keep);
      }
    }
    const names = [...files.keys()].sort((a, b) => a - b);
    if (names.length === 0) {
      const marker = join(dir, RESTORED_MARKER);
      if (existsSync(marker)) {
        try {
          this.restoredFrom = JSON.parse(readFileSync(marker, 'utf8')) as { head: string; at: string };
        } catch {
          this.restoredFrom = { head: head ?? '', at: '' };
        }
      }
      this.coveredCommit = head;
      this.startSegment(1);
      return;
    }
    for (const first of names) this.segments.push({ first, path: join(dir, files.get(first)!), lastTime: '' });
    for (const seg of this.segments.slice(0, -1)) seg.lastTime = this.tailTime(seg.path);
    const current = this.segments[this.segments.length - 1]!;
    if (current.path.endsWith('.gz')) {
      // a power loss took the newer segment's file (its directory entry was not durable yet):
      // what the gzipped one holds is the log's end, and a new segment goes on after it
      this.absorb(this.segmentLines(current, false) ?? [], current);
      this.startSegment(this.last + 1);
      this.prune();
      return;
    }
    // the newest segment is read whole (at most `segmentEvents` lines): its torn tail is cut,
    // and it gives the last id, the covered commit and the ring's newest events
    const buf = readFileSync(current.path);
    const end = buf.lastIndexOf(0x0a) + 1;
    const lines = parseLines(buf.toString('utf8', 0, end));
    if (this.opts.freshInode) {
      // cluster mode: the segment is copied to a new file renamed over it, so a former owner
      // that still holds the old one open appends into an unlinked inode, never into ours
      const tmp = `${current.path}.${process.pid}.tmp`;
      writeFileSync(tmp, buf.subarray(0, end));
      renameSync(tmp, current.path);
    }
    this.fd = openSync(current.path, 'a');
    if (end < buf.length && !this.opts.freshInode) ftruncateSync(this.fd, end);
    this.absorb(lines, current);
    this.prune();
    // closed segments still plain (an older version's log, or a crash before their turn)
    for (const seg of this.segments.slice(0, -1)) this.compress(seg);
  }

  /** The newest segment's lines at open: the last id, the covered commit and the ring's newest events. */
  private absorb(lines: Line[], current: Segment): void {
    this.last = current.first - 1;
    for (const line of lines) {
      if (line.covered !== undefined) this.coveredCommit = line.covered;
      if (typeof line.id === 'number') {
        this.last = line.id;
        this.currentCount++;
        this.pushRing(line as WorkEvent);
        current.lastTime = line.time ?? current.lastTime;
        if (line.commit) this.coveredCommit = line.commit;
      }
    }
  }

  /** compressions in flight (close waits for them) */
  private readonly compressing = new Set<Promise<void>>();

  /** Gzips a closed segment in the background: durable first, then it replaces the plain file. */
  private compress(seg: Segment): void {
    const plain = seg.path;
    if (!plain.endsWith('.jsonl')) return;
    const target = `${plain}.gz`;
    const job = (async () => {
      const gz = await gzipAsync(await readFile(plain));
      if (!this.segments.includes(seg)) return;
      await writeFileDurable(target, gz, { fsync: this.opts.fsync });
      // pruned while it was written: the gzipped copy goes too
      if (!this.segments.includes(seg)) return rmSync(target, { force: true });
      if (seg.lastTime) {
        const at = new Date(seg.lastTime);
        utimesSync(target, at, at);
      }
      // readers switch to the gzipped file before the plain one goes (reads are synchronous)
      seg.path = target;
      if (this.cached?.path === plain) this.cached = null;
      rmSync(plain, { force: true });
    })()
      .catch((err: unknown) => {
        // pruned meanwhile (its plain file gone): nothing to keep
        if (this.segments.includes(seg))
          this.opts.log.warn('event segment not compressed', { org: this.opts.org, path: plain, error: String(err) });
      })
      .finally(() => this.compressing.delete(job));
    this.compressing.add(job);
  }

  /** The time of the newest event in a closed segment, from its last lines (a gzipped one: its mtime). */
  private tailTime(path: string): string {
    if (path.endsWith('.gz')) return statSync(path).mtime.toISOString();
    const fd = openSync(path, 'r');
    try {
      const size = fstatSync(fd).size;
      const len = Math.min(size, TAIL_BYTES);
      const buf = Buffer.alloc(len);
      readSync(fd, buf, 0, len, size - len);
      const lines = parseLines(buf.toString('utf8'));
      for (let i = lines.length - 1; i >= 0; i--) if (lines[i]!.time) return lines[i]!.time!;
      return '';
    } finally {
      closeSync(fd);
    }
  }

  private startSegment(first: number): void {
    if (this.fd >= 0) this.retire(this.fd);
    const path = join(this.opts.dir, segmentName(first));
    this.fd = openSync(path, 'a');
    writeSync(this.fd, JSON.stringify({ segment: first, covered: this.coveredCommit }) + '\n');
    this.segments.push({ first, path, lastTime: '' });
    this.currentCount = 0;
  }

  /**
   * The ring keeps at least the newest `ringSize` events and is cut back to them once it holds a
   * quarter more (64 at least): cutting on every push once full moved the whole array each time
   * (about 11 us an event at 4,096: 114 ms of a 10,000-node seed at 170,000 nodes, against 13 ms
   * at 0-10,000 while the ring was filling).
   */
  private pushRing(event: WorkEvent): void {
    this.ring.push(event);
    if (this.ring.length > this.ringSize + Math.max(64, this.ringSize >> 2)) this.ring.splice(0, this.ring.length - this.ringSize);
  }

  /** Drops the oldest segments past the retention bounds (never the newest). */
  private prune(): void {
    const cutoff = new Date(this.opts.clock.now() - this.retention.maxAgeDays * 86_400_000).toISOString();
    while (this.segments.length > 1) {
      const oldest = this.segments[0]!;
      const next = this.segments[1]!;
      const tooMany = this.last - next.first + 1 >= this.retention.maxEvents;
      const tooOld = oldest.lastTime !== '' && oldest.lastTime < cutoff;
      if (!tooMany && !tooOld) break;
      try {
        unlinkSync(oldest.path);
      } catch (err) {
        this.opts.log.warn('event segment not removed', { org: this.opts.org, path: oldest.path, error: String(err) });
        break;
      }
      this.segments.shift();
    }
    // what was pruned is gone for readers of the ring too
    const first = this.firstId;
    let drop = 0;
    while (drop < this.ring.length && this.ring[drop]!.id < first) drop++;
    if (drop > 0) this.ring.splice(0, drop);
  }

  /**
   * The segment being left: what was written to it is made durable now (an fdatasync in flight
   * covers only the lines written before it started, and later ones go to the next segment's
   * file), and the file is closed once that fdatasync is done with it. Closing it under a sync in
   * flight failed the sync with EBADF (and a reused descriptor would have synced another file).
   */
  private retire(fd: number): void {
    if (this.opts.fsync) {
      fdatasyncSync(fd);
      this.synced = Math.max(this.synced, this.written);
    }
    const inFlight = this.syncing;
    if (!inFlight) return closeSync(fd);
    void inFlight.catch(() => undefined).then(() => closeSync(fd));
  }

  /**
   * Appends events in one write (all of a commit's, or one emitted), assigning ids, and
   * tells the listeners; `covered` records the commit they were derived from. Returns the
   * write's sequence number for `syncTo`.
   */
  private append(events: NewEvent[], covered: string | null | undefined): { written: WorkEvent[]; seq: number } {
    if (this.closed) throw new Error('event log closed');
    if (this.currentCount >= this.segmentEvents && events.length > 0) {
      this.startSegment(this.last + 1);
      this.prune();
      const closed = this.segments[this.segments.length - 2];
      if (closed) this.compress(closed);
    }
    const now = new Date(this.opts.clock.now()).toISOString();
    const written: WorkEvent[] = [];
    let text = '';
    for (const e of events) {
      const { time, ...rest } = e;
      const event: WorkEvent = { id: this.last + written.length + 1, ...rest, time: time ?? now, org: this.opts.org };
      written.push(event);
      text += JSON.stringify(event) + '\n';
    }
    if (covered !== undefined && events.length === 0) text += JSON.stringify({ covered }) + '\n';
    if (!text) return { written, seq: this.written };
    const buf = Buffer.from(text, 'utf8');
    let off = 0;
    while (off < buf.length) off += writeSync(this.fd, buf, off, buf.length - off);
    this.last += written.length;
    this.currentCount += written.length;
    if (covered !== undefined) this.coveredCommit = covered;
    const current = this.segments[this.segments.length - 1]!;
    for (const event of written) {
      this.pushRing(event);
      current.lastTime = event.time;
    }
    for (const event of written) {
      for (const listener of this.listeners) {
        try {
          listener(event);
        } catch (err) {
          this.opts.log.error('event listener threw', { org: this.opts.org, id: event.id, error: String(err) });
        }
      }
    }
    return { written, seq: ++this.written };
  }

  /** Appends the events one commit yielded (none: a marker that it was covered). Not fsynced. */
  appendCommit(commit: string, events: NewEvent[]): WorkEvent[] {
    return this.append(events, commit).written;
  }

  async emit(event: NewEvent): Promise<WorkEvent> {
    const { written, seq } = this.append([event], undefined);
    await this.syncTo(seq);
    return written[0]!;
  }

  private async syncTo(seq: number): Promise<void> {
    if (!this.opts.fsync) {
      this.synced = Math.max(this.synced, seq);
      return;
    }
    while (this.synced < seq) {
      if (!this.syncing) {
        const target = this.written;
        const fd = this.fd;
        this.syncing = fdatasyncAsync(fd).then(
          () => {
            this.synced = Math.max(this.synced, target);
            this.syncing = null;
          },
          (err: unknown) => {
            this.syncing = null;
            throw err;
          },
        );
      }
      await this.syncing;
    }
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  async read(after: number, filter?: EventFilter, limit = 100): Promise<WorkEvent[]> {
    const out: WorkEvent[] = [];
    if (limit <= 0 || after >= this.last) return out;
    const ringFirst = this.ring[0]?.id ?? this.last + 1;
    if (after + 1 < ringFirst) {
      // older than the ring: from the segments, starting at the one holding after + 1
      for (let i = this.segmentIndexOf(after + 1); i < this.segments.length && this.segments[i]!.first < ringFirst; i++) {
        const seg = this.segments[i]!;
        const lines = this.segmentLines(seg, i === this.segments.length - 1);
        if (!lines) continue; // pruned meanwhile
        for (const line of lines) {
          if (typeof line.id !== 'number' || line.id <= after) continue;
          if (line.id >= ringFirst) break;
          if (matchesFilter(line as WorkEvent, filter)) out.push(line as WorkEvent);
          if (out.length >= limit) return out;
        }
      }
      after = Math.max(after, ringFirst - 1);
    }
    // the ring is ordered by id: binary search for the first id > after
    let lo = 0;
    let hi = this.ring.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.ring[mid]!.id <= after) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.ring.length && out.length < limit; i++) {
      const event = this.ring[i]!;
      if (matchesFilter(event, filter)) out.push(event);
    }
    return out;
  }

  /** the last closed segment read (a catching-up reader asks for the same one page after page) */
  private cached: { path: string; lines: Line[] } | null = null;

  /** A segment's lines; a closed segment (never written again) is parsed once and kept until the next one is read. */
  private segmentLines(seg: Segment, current: boolean): Line[] | null {
    if (!current && this.cached?.path === seg.path) return this.cached.lines;
    let lines: Line[];
    try {
      const raw = readFileSync(seg.path);
      lines = parseLines((seg.path.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8'));
    } catch {
      return null;
    }
    if (!current) this.cached = { path: seg.path, lines };
    return lines;
  }

  /** Index of the segment whose ids include `id` (the last one starting at or before it; 0 when pruned past it). */
  private segmentIndexOf(id: number): number {
    let lo = 0;
    let hi = this.segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.segments[mid]!.first <= id) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** Makes everything written durable and closes the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.syncTo(this.written).catch(() => undefined);
    this.closed = true;
    // compressions in flight finish (a closed log's files are not touched afterwards)
    await Promise.all([...this.compressing]);
    this.listeners.clear();
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}
