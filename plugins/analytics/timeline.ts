/**
 * Per-node status timelines: for every live node, the statuses it has been in with the
 * commit time it entered each one, and for every node the time each live done-making edge
 * (`resolves`, `answers`, `supersedes`) pointing at it appeared.
 *
 * Analytics needs this because completion time is the moment a node entered its final
 * terminal status, never its last-updated time (docs/spec.md Reads rule 8), and cycle time and
 * WIP age need the moment work started.
 *
 * Built once when the tenant opens: the history plugin's commit index (one streamed
 * `git log`, shared with the history reads) lists every node change with its blob; the
 * blobs that are not a node's current revision stream through one `git cat-file --batch`,
 * and only each version's status and done-making edges are kept. From then on the
 * timelines follow the graph index's commit events; reads never touch git.
 */
import { parseStoredNode, type Frontmatter } from '../../kernel/codec.js';
import type { CommitEvent, Edge, NodeRecord } from '../../kernel/graph-index.js';
import type { Tenant } from '../../kernel/tenant.js';
import { commitIndexOf, type CommitIndex } from '../history/public.js';
import { streamBlobs } from './blobs.js';
import { isActiveStatus, isDone } from '../core/public.js';
import { perTenant } from '../../kernel/per-tenant.js';
import { EventIndex } from '../../kernel/event-index.js';

export interface StatusStep {
  status: string;
  /** commit time (ms) the node entered `status` */
  at: number;
}

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
  doneEdges: string[];
}

function factsOf(frontmatter: Frontmatter): VersionFacts {
  return { status: String(frontmatter.status ?? ''), doneEdges: doneEdgeKeys(frontmatter.edges) };
}

export class Timelines extends EventIndex {
  private readonly steps = new Map<string, StatusStep[]>();
  /** target id -> `type\0from` -> when that edge appeared */
  private readonly doneEdgesIn = new Map<string, Map<string, number>>();
  /** source id -> its current done-making edges as `type\0to` */
  private readonly doneEdgesOut = new Map<string, Set<string>>();
  private readonly commits: CommitIndex;

  constructor(tenant: Tenant) {
    super(tenant, 'analytics timelines');
    // applyEvent uses only the event; load() waits for the commit index to cover HEAD and
    // reports the commits it replayed, so buffered events for those are not applied twice.
    this.commits = commitIndexOf(tenant);
    this.start();
  }

  protected reset(): void {
    this.steps.clear();
    this.doneEdgesIn.clear();
    this.doneEdgesOut.clear();
  }

  /** Replays the commit index up to now; returns the commits it covered. */
  protected async load(): Promise<Set<string>> {
    await this.commits.ready();
    // Everything up to now is in the commit index; later commits arrive as buffered events.
    const history = this.commits.commits.slice();
    const covered = new Set(history.map((c) => c.sha));
    const facts = new Map<string, VersionFacts | null>();
    const wanted: string[] = [];
    for (const commit of history) {
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
    for (const commit of history) {
      for (const change of commit.changes) {
        if (change.change === 'D' || !change.blob) {
          this.forget(change.id, commit.dateMs);
          continue;
        }
        const f = facts.get(change.blob);
        if (f) this.record(change.id, f.status, f.doneEdges, commit.dateMs);
      }
    }
    return covered;
  }

  protected applyEvent(event: CommitEvent): void {
    const at = Date.parse(event.date);
    for (const change of event.changes) {
      if (!change.after) this.forget(change.id, at);
      else this.record(change.id, change.after.status, doneEdgeKeys(change.after.edges), at);
    }
  }

  private record(id: string, status: string, doneEdges: string[], at: number): void {
    const steps = this.steps.get(id);
    if (!steps) this.steps.set(id, [{ status, at }]);
    else if (steps[steps.length - 1]!.status !== status) steps.push({ status, at });
    this.setDoneEdges(id, doneEdges, at);
  }

  /** A deleted node: its timeline ends (a node re-created under the same id starts afresh). */
  private forget(id: string, at: number): void {
    this.steps.delete(id);
    this.setDoneEdges(id, [], at);
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
    return this.steps.get(id);
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
    let steps: readonly StatusStep[] = this.steps.get(record.id) ?? [];
    // Out of step (should not happen): treat the node as having been in its status since its last update.
    if (steps.length === 0 || steps[steps.length - 1]!.status !== record.status)
      steps = [...steps, { status: record.status, at: fallbackUpdated() }];
    const terminal = (s: string) => registry.isTerminal(record.type, s);
    const last = steps[steps.length - 1]!;

    let completedAt: number | null = null;
    let closedBy: NodeTimes['closedBy'] = null;
    /** index of the first step of the trailing terminal run (steps.length when not terminal) */
    let end = steps.length;
    if (terminal(record.status)) {
      completedAt = last.at;
      closedBy = 'status';
      while (end > 0 && terminal(steps[end - 1]!.status)) end--;
    } else if (isDone(this.tenant, record)) {
      const edge = this.doneEdgeSince(record);
      completedAt = edge ? edge.at : fallbackUpdated();
      closedBy = edge ? edge.type : this.tenant.index.inboundOf(record.id, ['supersedes']).length > 0 ? 'supersedes' : 'resolves';
    }
    // The stretch that led to the completion (or the current one) starts after the last earlier terminal step.
    let begin = end;
    while (begin > 0 && !terminal(steps[begin - 1]!.status)) begin--;
    let startedAt: number | null = null;
    for (let i = begin; i < end; i++) {
      if (isActiveStatus(this.tenant, record.type, steps[i]!.status)) {
        startedAt = steps[i]!.at;
        break;
      }
    }
    let activeSince: number | null = null;
    if (completedAt === null && isActiveStatus(this.tenant, record.type, record.status)) {
      let i = steps.length - 1;
      while (i > 0 && isActiveStatus(this.tenant, record.type, steps[i - 1]!.status)) i--;
      activeSince = steps[i]!.at;
    }
    const openedAt = steps[Math.min(begin, steps.length - 1)]!.at;
    return { createdAt: steps[0]!.at, completedAt, openedAt, startedAt, activeSince, statusSince: last.at, closedBy };
  }
}

/** The tenant's timelines, started on first use (normally when the tenant opens). */
export const timelinesOf: (tenant: Tenant) => Timelines = perTenant((tenant) => new Timelines(tenant));
