/**
 * Per-node status timelines: for every live node, the statuses it has been in with the
 * commit time it entered each one, and for every node the time each live done-making edge
 * (`resolves`, `answers`, `supersedes`) pointing at it appeared.
 *
 * Analytics needs this because completion time is the moment a node entered its final
 * terminal status, never its last-updated time (docs/spec.md Reads rule 8), and cycle time and
 * WIP age need the moment work started.
 *
 * Memory does not grow with history: a node keeps only the steps `timesOf` can still read
 * (timeline-steps.ts `compactSteps`: at most seven once it has more than COMPACT_ABOVE). Which
 * steps those are depends on which statuses are terminal or active for the node's type, so
 * the compaction holds only under the status rules and the type it was made with: when the
 * schema changes those rules, or a node's type changes under its compacted steps (only a
 * hand-made commit can do that), the next read replays the history (`ready()`).
 *
 * Built when the tenant opens: from the snapshot written at the last close (or every so
 * many commits; timeline-snapshot.ts), then the commits after it from the history plugin's
 * on-disk commit index, read in batches, with the blobs of their node versions streamed
 * through `git cat-file --batch` (only each version's status, type and done-making edges are
 * kept). Without a usable snapshot the whole history is replayed that way, once. From then
 * on the timelines follow the graph index's commit events; reads never touch git.
 */
import { join } from 'node:path';
import { parseStoredNode, type Frontmatter } from '../../kernel/codec.js';
import { intern, type CommitEvent, type Edge, type NodeRecord } from '../../kernel/graph-index.js';
import type { Registry } from '../../kernel/registry.js';
import type { Tenant } from '../../kernel/tenant.js';
import { commitIndexOf, type CommitIndex, type CommitRecord } from '../history/public.js';
import { streamBlobs } from './blobs.js';
import { isActiveStatus, isDone } from '../core/public.js';
import { perTenant } from '../../kernel/per-tenant.js';
import { EventIndex } from '../../kernel/event-index.js';
import { compactSteps, stepTimes, type StatusStep } from './timeline-steps.js';
import { readTimelineSnapshot, statusRules, writeTimelineSnapshot, type NodeTimeline } from './timeline-snapshot.js';

export type { StatusStep } from './timeline-steps.js';

/** a node's steps are compacted once it has more than this many */
const COMPACT_ABOVE = 16;
/** commits replayed per batch at open (one `git cat-file` for the batch's historic blobs) */
const REPLAY_BATCH = 5_000;
/** a snapshot at least every this many commits (or the node count, if larger) */
const SNAPSHOT_EVERY = 10_000;

/** Times derived for one node; all in ms, null when they do not apply. */
export interface NodeTimes {
  createdAt: number;
  /** the time the node entered its final terminal status (or, if only an edge makes it done, the edge's time) */
  completedAt: number | null;
  /** start of the stretch of non-terminal statuses that ended in the completion (or of the current stretch): a reopen starts a new one */
  openedAt: number;
  /** the first entry into an active status in that stretch */
  startedAt: number | null;
  /** start of the current run of active statuses (WIP age) */
  activeSince: number | null;
  /** when the node entered its current status */
  statusSince: number;
  /** how the completion came about: `status` (terminal status) or the done-making edge type */
  closedBy: 'status' | 'resolves' | 'answers' | 'supersedes' | null;
}

const DONE_EDGE_TYPES = new Set(['resolves', 'answers', 'supersedes']);
const SEP = '\u0000';

function doneEdgeKeys(edges: readonly Edge[] | unknown): string[] {
  if (!Array.isArray(edges)) return [];
  const keys: string[] = [];
  for (const e of edges as Edge[]) {
    if (e && typeof e === 'object' && typeof e.type === 'string' && typeof e.to === 'string' && DONE_EDGE_TYPES.has(e.type))
      keys.push(`${e.type}${SEP}${e.to}`);
  }
  return keys;
}

interface VersionFacts {
  status: string;
  type: string;
  doneEdges: string[];
}

function factsOf(frontmatter: Frontmatter): VersionFacts {
  return { status: String(frontmatter.status ?? ''), type: String(frontmatter.type ?? ''), doneEdges: doneEdgeKeys(frontmatter.edges) };
}

export class Timelines extends EventIndex {
  private readonly nodes = new Map<string, NodeTimeline>();
  /** target id -> `type\0from` -> when that edge appeared */
  private readonly doneEdgesIn = new Map<string, Map<string, number>>();
  /** source id -> its current done-making edges as `type\0to` */
  private readonly doneEdgesOut = new Map<string, Set<string>>();
  private readonly commits: CommitIndex;
  private readonly snapshotPath: string;
  /** the status rules (timeline-snapshot.ts `statusRules`) the steps were compacted under, and the registry they came from */
  private rules = '';
  private rulesFrom: Registry | null = null;
  /** a node's type changed under its compacted steps: the next ready() replays the whole history */
  private stale = false;
  private ignoreSnapshot = false;
  /** the last commit applied (null before the first build) */
  private covered: string | null = null;
  private loading = false;
  private closed = false;
  private saving = false;
  private sinceSnapshot = 0;

  constructor(tenant: Tenant) {
    super(tenant, 'analytics timelines');
    // applyEvent uses only the event; load() replays the commit index up to the head as of the
    // subscription, and every later commit arrives as an event.
    this.commits = commitIndexOf(tenant);
    this.snapshotPath = join(tenant.dir, 'analytics', 'timelines.v8');
    tenant.onClose(() => this.close());
    this.start();
  }

  protected reset(): void {
    this.nodes.clear();
    this.doneEdgesIn.clear();
    this.doneEdgesOut.clear();
    this.covered = null;
  }

  /**
   * Resolves once the timelines cover HEAD under the current status rules: when the schema
   * changed which statuses are terminal or active (or a node's type changed under its
   * compacted steps), the history is replayed first.
   */
  async ready(): Promise<void> {
    for (;;) {
      await super.ready();
      if (this.loading) continue; // a rebuild started meanwhile: wait for it
      if (!this.stale && !this.rulesChanged()) return;
      this.tenant.log.info('analytics timelines: status rules or a node type changed; replaying the history', { org: this.tenant.org });
      this.stale = false;
      this.ignoreSnapshot = true;
      this.rebuild();
    }
  }

  private rulesChanged(): boolean {
    const { registry } = this.tenant;
    if (registry === this.rulesFrom) return false;
    if (statusRules(registry) !== this.rules) return true;
    this.rulesFrom = registry;
    return false;
  }

  protected async load(): Promise<void> {
    const tip = this.tenant.index.head;
    this.loading = true;
    let replayed: number;
    try {
      replayed = await this.replayTo(tip);
    } finally {
      this.loading = false;
    }
    // a long replay is not repeated at the next open (the state is the tip's: buffered events come after)
    if (replayed >= 1000) this.saveSoon();
  }

  /** Rebuilds up to `tip` from the snapshot and the commit index; returns how many commits it replayed. */
  private async replayTo(tip: string | null): Promise<number> {
    this.rulesFrom = this.tenant.registry;
    this.rules = statusRules(this.tenant.registry);
    const ignoreSnapshot = this.ignoreSnapshot;
    this.ignoreSnapshot = false;
    await this.commits.ready();
    if (tip === null || this.closed) return 0;
    const last = this.commits.seqOf(tip);
    if (last < 0) throw new Error(`the commit index does not hold the head ${tip}`);
    let from = 0;
    const snapshot = ignoreSnapshot ? null : await readTimelineSnapshot(this.snapshotPath, this.rules);
    if (snapshot) {
      const seq = this.commits.seqOf(snapshot.covered);
      if (seq >= 0 && seq <= last) {
        // steps copied to arrays of their exact length with interned statuses (the deserializer
        // made each one-step array with room for 17, and a string per status and node)
        // and keyed by the graph index's own id strings, not a copy per node read back from the file
        const canon = (id: string) => this.tenant.index.ownId(id);
        for (const [id, timeline] of snapshot.nodes)
          this.nodes.set(canon(id), {
            steps: timeline.steps.map((s) => ({ status: intern(s.status), at: s.at })),
            compactedAs: timeline.compactedAs,
          });
        for (const [id, inbound] of snapshot.doneEdgesIn) this.doneEdgesIn.set(canon(id), inbound);
        for (const [id, outbound] of snapshot.doneEdgesOut) this.doneEdgesOut.set(canon(id), outbound);
        from = seq + 1;
      }
    }
    if (!(await this.replay(from, last))) return 0;
    this.covered = tip;
    return last - from + 1;
  }

  /** Applies commits `from`..`to` of the commit index, a batch at a time; false when the tenant closed meanwhile. */
  private async replay(from: number, to: number): Promise<boolean> {
    const resets = this.commits.resetCount;
    for (let lo = from; lo <= to; lo += REPLAY_BATCH) {
      if (this.closed) return false;
      const batch: CommitRecord[] = [];
      this.commits.scan(lo, Math.min(to, lo + REPLAY_BATCH - 1), (c) => {
        batch.push(c);
      });
      const facts = new Map<string, VersionFacts | null>();
      const wanted: string[] = [];
      for (const commit of batch) {
        for (const change of commit.changes) {
          if (!change.blob || facts.has(change.blob)) continue;
          const live = this.tenant.index.get(change.id);
          if (live && live.revision === change.blob) facts.set(change.blob, factsOf(live.frontmatter));
          else {
            facts.set(change.blob, null);
            wanted.push(change.blob);
          }
        }
      }
      await streamBlobs(this.tenant.store.gitdir, wanted, (oid, text) => {
        try {
          facts.set(oid, factsOf(parseStoredNode(text).frontmatter));
        } catch {
          // a hand-committed file that does not parse: that version tells us nothing
        }
      });
      if (this.closed) return false;
      if (this.commits.resetCount !== resets) throw new Error('the commit index was rebuilt during the timeline replay');
      for (const commit of batch) {
        for (const change of commit.changes) {
          if (change.change === 'D' || !change.blob) {
            this.forget(change.id, commit.dateMs);
            continue;
          }
          const f = facts.get(change.blob);
          if (!f) continue;
          // compacted under the type reads will use: the live node's (a node deleted later is forgotten anyway)
          const live = this.tenant.index.get(change.id);
          this.record(change.id, f.status, live?.type ?? f.type, live !== undefined, f.doneEdges, commit.dateMs);
        }
      }
    }
    return true;
  }

  protected applyEvent(event: CommitEvent): void {
    const at = Date.parse(event.date);
    for (const change of event.changes) {
      if (!change.after) this.forget(change.id, at);
      else this.record(change.id, change.after.status, change.after.type, true, doneEdgeKeys(change.after.edges), at);
    }
    this.covered = event.commit;
    if (++this.sinceSnapshot >= Math.max(SNAPSHOT_EVERY, this.nodes.size)) this.saveSoon();
  }

  private record(id: string, status: string, type: string, live: boolean, doneEdges: string[], at: number): void {
    const timeline = this.nodes.get(id);
    if (!timeline) this.nodes.set(id, { steps: [{ status: intern(status), at }], compactedAs: null });
    else {
      if (live && timeline.compactedAs !== null && timeline.compactedAs !== type) this.stale = true;
      const steps = timeline.steps;
      if (steps[steps.length - 1]!.status !== status) {
        // a new array of the exact length: a push onto a one-step array reserved room for 17
        timeline.steps = [...steps, { status: intern(status), at }];
        if (timeline.steps.length > COMPACT_ABOVE) this.compact(timeline, type);
      }
    }
    this.setDoneEdges(id, doneEdges, at);
  }

  private compact(timeline: NodeTimeline, type: string): void {
    const { registry } = this.tenant;
    const kept = compactSteps(
      timeline.steps,
      (s) => registry.isTerminal(type, s),
      (s) => isActiveStatus(this.tenant, type, s),
    );
    if (kept === timeline.steps) return;
    timeline.steps = kept;
    timeline.compactedAs = type;
  }

  /** A deleted node: its timeline ends (a node re-created under the same id starts afresh). */
  private forget(id: string, at: number): void {
    this.nodes.delete(id);
    this.setDoneEdges(id, [], at);
  }

  private saveSoon(): void {
    this.sinceSnapshot = 0;
    this.save().catch((err: unknown) =>
      this.tenant.log.warn('analytics timelines snapshot failed', { org: this.tenant.org, error: String(err) }),
    );
  }

  /** Writes the snapshot, when what memory holds is whole and compacted under the current rules. */
  private async save(): Promise<void> {
    if (this.saving || this.loading || this.covered === null || this.stale || this.rulesChanged()) return;
    this.saving = true;
    try {
      await writeTimelineSnapshot(this.snapshotPath, {
        rules: this.rules,
        covered: this.covered,
        nodes: this.nodes,
        doneEdgesIn: this.doneEdgesIn,
        doneEdgesOut: this.doneEdgesOut,
      });
    } finally {
      this.saving = false;
    }
  }

  /** Tenant close: stops a replay in progress, else writes the snapshot. */
  async close(): Promise<void> {
    if (this.closed) return;
    super.close();
    // a replay in progress stops at its next batch and leaves no snapshot (save() skips while loading)
    this.closed = true;
    await this.save().catch((err: unknown) =>
      this.tenant.log.warn('analytics timelines snapshot failed', { org: this.tenant.org, error: String(err) }),
    );
  }

  private setDoneEdges(from: string, keys: string[], at: number): void {
    const before = this.doneEdgesOut.get(from);
    const after = new Set(keys);
    if (!before && after.size === 0) return;
    for (const key of after) {
      if (before?.has(key)) continue;
      const [type, to] = key.split(SEP) as [string, string];
      let inbound = this.doneEdgesIn.get(to);
      if (!inbound) this.doneEdgesIn.set(to, (inbound = new Map()));
      inbound.set(`${type}${SEP}${from}`, at);
    }
    for (const key of before ?? []) {
      if (after.has(key)) continue;
      const [type, to] = key.split(SEP) as [string, string];
      const inbound = this.doneEdgesIn.get(to);
      inbound?.delete(`${type}${SEP}${from}`);
      if (inbound && inbound.size === 0) this.doneEdgesIn.delete(to);
    }
    if (after.size === 0) this.doneEdgesOut.delete(from);
    else this.doneEdgesOut.set(from, after);
  }

  stepsOf(id: string): readonly StatusStep[] | undefined {
    return this.nodes.get(id)?.steps;
  }

  /** The earliest live edge that makes `record` done (the same edges `isDone` honours). */
  private doneEdgeSince(record: NodeRecord): { at: number; type: 'resolves' | 'answers' | 'supersedes' } | null {
    const inbound = this.doneEdgesIn.get(record.id);
    if (!inbound) return null;
    const { index, registry } = this.tenant;
    let best: { at: number; type: 'resolves' | 'answers' | 'supersedes' } | null = null;
    for (const [key, at] of inbound) {
      const [type, from] = key.split(SEP) as ['resolves' | 'answers' | 'supersedes', string];
      const source = index.get(from);
      if (!source) continue;
      if (type !== 'supersedes' && registry.nodeTypes.get(source.type)?.non_resolving) continue;
      if (!best || at < best.at || (at === best.at && type < best.type)) best = { at, type };
    }
    return best;
  }

  /** Creation, completion, start and WIP times of a live node. */
  timesOf(record: NodeRecord): NodeTimes {
    const { registry } = this.tenant;
    // parsed only when needed (Date.parse twice per node was a third of analytics at 100k nodes)
    const fallbackUpdated = (): number =>
      Date.parse(String(record.frontmatter.updated ?? '')) || Date.parse(String(record.frontmatter.created ?? '')) || 0;
    let steps: readonly StatusStep[] = this.nodes.get(record.id)?.steps ?? [];
    // Out of step (should not happen): treat the node as having been in its status since its last update.
    if (steps.length === 0 || steps[steps.length - 1]!.status !== record.status)
      steps = [...steps, { status: record.status, at: fallbackUpdated() }];
    const terminal = (s: string) => registry.isTerminal(record.type, s);
    const active = (s: string) => isActiveStatus(this.tenant, record.type, s);

    let completedAt: number | null = null;
    let closedBy: NodeTimes['closedBy'] = null;
    if (terminal(record.status)) closedBy = 'status';
    else if (isDone(this.tenant, record)) {
      const edge = this.doneEdgeSince(record);
      completedAt = edge ? edge.at : fallbackUpdated();
      closedBy = edge ? edge.type : this.tenant.index.inboundOf(record.id, ['supersedes']).length > 0 ? 'supersedes' : 'resolves';
    }
    const t = stepTimes(steps, terminal, active, completedAt !== null);
    // a literal, not `{ ...t, ... }`: spreading objects whose fields are timestamps or null gave
    // nearly every result a hidden class of its own (about 450 bytes a node at 20,000 nodes)
    return {
      createdAt: t.createdAt,
      completedAt: t.completedAt ?? completedAt,
      openedAt: t.openedAt,
      startedAt: t.startedAt,
      activeSince: t.activeSince,
      statusSince: t.statusSince,
      closedBy,
    };
  }
}

/** The tenant's timelines, started on first use (normally when the tenant opens). */
export const timelinesOf: (tenant: Tenant) => Timelines = perTenant((tenant) => new Timelines(tenant));
