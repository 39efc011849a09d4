/**
 * GET /v1/queue (docs/spec.md "GET /v1/queue", rules 1-6) and its tool twins `show_queue` (same
 * JSON) and `render_queue` (the same queue as markdown). The ranking policy is documented
 * in docs/queue.md and echoed as `policy`.
 *
 * Per request, without a project or assignee filter, the page and the counts come from the
 * ranked index kept per commit (rank.ts, pass.ts `indexedPass`): work proportional to the
 * page, the index's chunks and the exceptions (dormant, muted, leased), not to the candidate
 * set C. With a pool (project/assignee, narrowed through the index's by-project and
 * inbound-edge maps) it is one pass over the pool plus O(C log k) for the page. Signals that
 * do not depend on the clock come from the book's cache. Nothing here walks all nodes of the
 * graph.
 */
import { errors } from '../../kernel/errors.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import { RawResponse, type OpContext } from '../../kernel/plugin.js';
import { queryList } from '../../kernel/validate.js';
import { leasesOf, type StoredLease } from '../leases/public.js';
import type { Static } from '../../kernel/operation.js';
import { bookOf, READINESS_CODES, SUGGEST_CODES, type QueueBook, type StaticSignals, type Suggest } from './book.js';
import { mutedIds } from './mutes.js';
import { policyOf, type QueuePolicy } from './policy.js';
import { ageOf, DAY_MS, heatOf, rankingPass, round2, stalenessOf } from './pass.js';
import { renderQueueMarkdown } from './render.js';
import type { QueueEnvelope, QueueFilters, QueueItem, SectionEntry, ShowQueueInput } from './schemas.js';
import { isDone, resolveScope, type ProjectScope } from '../core/public.js';

const READINESS_FILTERS = ['agent', 'human', 'untriaged'] as const;
type ReadinessFilter = (typeof READINESS_FILTERS)[number];
const SECTION_CAP = 50;

/**
 * The filters as the schema (schemas.ts) admits them: slugs checked; lists as a comma-separated
 * string or a list; `limit`/`offset` an integer or its digits (the forms the tools always took).
 */
export type QueueInput = Static<typeof QueueFilters>;
type QueueItem = Static<typeof QueueItem>;
type SectionEntry = Static<typeof SectionEntry>;
/** The envelope as built: the policy is always there until show_queue leaves it out. */
type QueueEnvelope = Static<typeof QueueEnvelope> & { policy: QueuePolicy };

interface QueueQuery {
  project: string | null;
  assignee: string | null;
  types: string[];
  excludeTypes: string[];
  readiness: ReadinessFilter[];
  limit: number;
  offset: number;
}

// ---------------------------------------------------------------- input

/** A comma-separated string or a list of them, flattened. */
function list(value: string | string[] | undefined): string[] {
  return queryList(value);
}

/** An integer (or its digits), clamped: docs/spec.md rule 1 clamps, never rejects. */
function clamped(value: number | string | undefined, def: number, min: number, max: number): number {
  if (value === undefined) return def;
  return Math.min(max, Math.max(min, Number(value)));
}

function parseQuery(ctx: OpContext, input: QueueInput): QueueQuery {
  const project = input.project;
  const assignee = input.assignee;
  const types = list(input.type);
  const excludeTypes = list(input.exclude_type);
  const unknownTypes = [...types, ...excludeTypes].filter((t) => !ctx.tenant.registry.nodeTypes.has(t));
  if (unknownTypes.length > 0) {
    throw errors.validation(`unknown node type(s): ${[...new Set(unknownTypes)].join(', ')}`, [
      { field: 'type', message: 'not a type in the registry (GET /v1/schema)', values: [...new Set(unknownTypes)] },
    ]);
  }
  // Checked here, not by the schema: the string and the list form must answer the same 422.
  const readiness = list(input.readiness);
  const badReadiness = readiness.filter((r) => !(READINESS_FILTERS as readonly string[]).includes(r));
  if (badReadiness.length > 0) {
    throw errors.validation(`unknown readiness filter value(s): ${badReadiness.join(', ')}`, [
      { field: 'readiness', message: 'unknown value', values: badReadiness, allowed: [...READINESS_FILTERS] },
    ]);
  }
  return {
    project: project || null,
    assignee: assignee || null,
    types,
    excludeTypes,
    readiness: readiness as ReadinessFilter[],
    limit: clamped(input.limit, 20, 1, 100),
    offset: clamped(input.offset, 0, 0, Number.MAX_SAFE_INTEGER),
  };
}

// ---------------------------------------------------------------- classification

function strings(value: unknown): string[] {
  if (typeof value === 'string') return value ? [value] : [];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string' && v !== '') : [];
}

function daysAgo(nowMs: number, ms: number): string {
  if (!ms) return 'at an unknown time';
  const d = Math.floor((nowMs - ms) / DAY_MS);
  return d <= 0 ? 'today' : d === 1 ? '1 day ago' : `${d} days ago`;
}

function idList(ids: string[], total: number): string {
  const shown = ids.join(', ');
  return total > ids.length ? `${shown}, +${total - ids.length} more` : shown;
}

/** approve > blocked > close > triage > do (docs/queue.md); only `close` needs the clock. */
function suggestFor(policy: QueuePolicy, s: StaticSignals, nowMs: number): Suggest {
  return s.closable && nowMs - s.updatedMs >= policy.close_after_days * DAY_MS ? 'close' : s.suggestBase;
}

function whyFor(
  s: StaticSignals,
  suggest: Suggest,
  heat: number,
  lease: StoredLease | undefined,
  me: string | null,
  nowMs: number,
): string {
  const record = s.record;
  const priority = typeof record.frontmatter.priority === 'string' ? record.frontmatter.priority : null;
  const unblocks =
    s.unblocksCount > 0
      ? `unblocks ${s.unblocksCount} open item${s.unblocksCount === 1 ? '' : 's'} (${idList(s.unblocks, s.unblocksCount)})`
      : '';
  let line: string;
  switch (suggest) {
    case 'approve': {
      if (s.approvalWhy) {
        line = s.approvalWhy;
        break;
      }
      const author = typeof record.frontmatter.author === 'string' ? record.frontmatter.author : 'someone';
      line = `Proposed by ${author} ${daysAgo(nowMs, s.createdMs)}; approve or reject it (not its author)`;
      break;
    }
    case 'blocked':
      line =
        s.blockers.length > 0
          ? `Waiting on ${idList(s.blockers.slice(0, 3), s.blockers.length)}; push that first or drop the dependency`
          : 'Marked blocked with no open blocker recorded; add a blocks edge naming it or move this on';
      break;
    case 'close':
      line = `Untouched since ${daysAgo(nowMs, s.updatedMs)} and nothing waits on it; close it or set a priority`;
      break;
    case 'triage':
      line = `No priority yet${unblocks ? `, ${unblocks}` : ''}; set p1-p3 or mark it agent-ready`;
      break;
    default:
      line =
        [priority ?? 'agent-ready', unblocks, heat >= 0.5 ? 'active this week' : ''].filter(Boolean).join(', ') + '; claim it and start';
  }
  if (!lease) return line;
  const until = new Date(lease.expires_ms).toISOString();
  if (lease.by === me)
    return lease.state === 'reserved' ? `Reserved by you until ${until}. ${line}` : `You hold it until ${until}. ${line}`;
  return `Claimed by ${lease.by} until ${until}. ${line}`;
}

// ---------------------------------------------------------------- sections

function sectionEntry(record: NodeRecord): SectionEntry {
  const fm = record.frontmatter;
  return {
    id: record.id,
    type: record.type,
    title: record.title,
    status: record.status,
    project: record.project,
    author: typeof fm.author === 'string' ? fm.author : null,
    created: typeof fm.created === 'string' ? fm.created : null,
    routed_to: strings(fm.routed_to),
  };
}

function byAge(a: SectionEntry, b: SectionEntry): number {
  const ca = a.created ?? '';
  const cb = b.created ?? '';
  if (ca !== cb) return ca < cb ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function mentions(record: NodeRecord, person: string): boolean {
  return strings(record.frontmatter.mentions).includes(person) || record.edges.some((e) => e.type === 'mentions' && e.to === person);
}

/** People carrying a node: its `assigned` targets and its stewards. */
function carriersOf(ctx: OpContext, id: string): string[] {
  const record = ctx.tenant.index.get(id);
  const assigned = record ? record.edges.filter((e) => e.type === 'assigned').map((e) => e.to) : [];
  const stewards = ctx.tenant.index.inboundOf(id, ['stewards']).map((e) => e.from);
  return [...assigned, ...stewards];
}

interface Sections {
  questions: SectionEntry[];
  asked: SectionEntry[];
  findings: SectionEntry[];
  pending: SectionEntry[];
  reviews: SectionEntry[];
  totals: Record<string, number>;
}

function sectionsFor(
  ctx: OpContext,
  book: QueueBook,
  me: string | null,
  scope: ProjectScope | null,
  policy: QueuePolicy,
  nowMs: number,
): Sections {
  const empty: Sections = {
    questions: [],
    asked: [],
    findings: [],
    pending: [],
    reviews: [],
    totals: { questions: 0, asked: 0, findings: 0, pending: 0, reviews: 0 },
  };
  if (!me) return empty;
  const { index } = ctx.tenant;
  const inScope = (r: NodeRecord) => !scope || (r.project !== null && scope.values.has(r.project));
  const collect = (ids: Iterable<string>, keep: (r: NodeRecord) => boolean) => {
    const out: SectionEntry[] = [];
    for (const id of ids) {
      const r = index.get(id);
      if (r && inScope(r) && keep(r)) out.push(sectionEntry(r));
    }
    return out.sort(byAge);
  };
  const routedOrUnrouted = (r: NodeRecord) => {
    const routed = strings(r.frontmatter.routed_to);
    return routed.length === 0 || routed.includes(me) || mentions(r, me);
  };
  const questions = collect(book.openQuestions, routedOrUnrouted);
  const pending = collect(book.pendingCaptures, routedOrUnrouted);
  const findings = collect(book.openFindings, (r) => {
    if (strings(r.frontmatter.routed_to).length > 0 || mentions(r, me)) return routedOrUnrouted(r);
    const carriers = r.edges.filter((e) => e.type === 'concerns').flatMap((e) => carriersOf(ctx, e.to));
    return carriers.length === 0 || carriers.includes(me);
  });
  const recent = nowMs - policy.heat_window_days * DAY_MS;
  const asked = collect(book.questionsByAsker.get(me) ?? [], (r) => {
    if (book.openQuestions.has(r.id)) return true;
    const updated = Date.parse(String(r.frontmatter.updated ?? ''));
    return Number.isFinite(updated) && updated >= recent;
  }).map((entry) => {
    const answers = index
      .inboundOf(entry.id, ['answers'])
      .map((e) => e.from)
      .filter((id) => index.has(id))
      .sort();
    return answers.length > 0 ? { ...entry, answered_by: answers } : entry;
  });
  const reviewIds = new Set(index.inboundOf(me, ['review-requested']).map((e) => e.from));
  const reviews = collect(reviewIds, (r) => !isDone(ctx.tenant, r));
  const totals = {
    questions: questions.length,
    asked: asked.length,
    findings: findings.length,
    pending: pending.length,
    reviews: reviews.length,
  };
  return {
    questions: questions.slice(0, SECTION_CAP),
    asked: asked.slice(0, SECTION_CAP),
    findings: findings.slice(0, SECTION_CAP),
    pending: pending.slice(0, SECTION_CAP),
    reviews: reviews.slice(0, SECTION_CAP),
    totals,
  };
}

// ---------------------------------------------------------------- the queue

function sortedCounts(map: Map<string, number>): Record<string, number> {
  return Object.fromEntries([...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The pool before scoring: candidates narrowed by project scope and assignee through index maps (null: all candidates). */
function poolOf(ctx: OpContext, book: QueueBook, scope: ProjectScope | null, carried: Set<string> | null): Set<string> | null {
  const { index } = ctx.tenant;
  let pool: Set<string> | null = null;
  if (scope) {
    pool = new Set();
    for (const value of scope.values) for (const id of index.idsInProject(value)) if (book.isCandidate(id)) pool.add(id);
  }
  if (carried) {
    const narrowed = new Set<string>();
    for (const id of carried) if (book.isCandidate(id) && (!pool || pool.has(id))) narrowed.add(id);
    pool = narrowed;
  }
  return pool;
}

function carriedBy(ctx: OpContext, person: string): Set<string> {
  const { index } = ctx.tenant;
  const ids = new Set(index.inboundOf(person, ['assigned']).map((e) => e.from));
  for (const e of index.get(person)?.edges ?? []) if (e.type === 'stewards') ids.add(e.to);
  return ids;
}

/**
 * `show_queue`: the ranked queue. The ~500-byte ranking policy is the same on every call: REST
 * keeps it unless include_policy=false, the tool sends it when asked.
 */
export async function showQueue(ctx: OpContext, input: Static<typeof ShowQueueInput>): Promise<Static<typeof QueueEnvelope>> {
  const { include_policy, ...filters } = input;
  const envelope = queueOf(ctx, filters);
  if (include_policy ?? ctx.via === 'rest') return envelope;
  const { policy: _policy, ...lean } = envelope;
  return lean;
}

/** The queue envelope for these filters (policy included). */
function queueOf(ctx: OpContext, input: QueueInput): QueueEnvelope {
  const query = parseQuery(ctx, input);
  const { tenant } = ctx;
  const book = bookOf(tenant);
  const policy = policyOf(tenant.registry);
  const nowMs = ctx.services.clock.now();
  const me = ctx.actor.bound ? ctx.actor.personId : null;
  const scope = query.project ? resolveScope(tenant, query.project) : null;
  let carried: Set<string> | null = null;
  if (query.assignee) {
    const person = query.assignee === 'me' ? me : query.assignee;
    carried = person ? carriedBy(ctx, person) : new Set();
  }
  const leases = leasesOf(tenant);
  const muted = mutedIds(tenant, me, nowMs);
  const typeSet = query.types.length > 0 ? new Set(query.types) : null;
  const excluded = new Set(query.excludeTypes);
  const readinessSet = query.readiness.length > 0 ? new Set(query.readiness) : null;

  // Live leases by slot, from one pass over the lease table (O(leases)).
  const leaseBySlot = new Map<number, StoredLease>();
  for (const lease of leases.records.values()) {
    const slot = lease.expires_ms > nowMs ? book.slotFor(lease.node_id) : undefined;
    if (slot !== undefined) leaseBySlot.set(slot, lease);
  }
  const typeVerdicts: number[] = [];
  const typeAllowed = (key: number): boolean => {
    let verdict = typeVerdicts[key];
    if (verdict === undefined) {
      const name = book.keyNames[key]!;
      verdict = typeVerdicts[key] = excluded.has(name) || (typeSet !== null && !typeSet.has(name)) ? 0 : 1;
    }
    return verdict === 1;
  };
  let readinessMask = 0;
  READINESS_CODES.forEach((code, i) => {
    if (!readinessSet || readinessSet.has(code)) readinessMask |= 1 << i;
  });
  // This function never awaits, so no commit can move a slot while the pass runs.
  const pass = rankingPass({
    book,
    policy,
    nowMs,
    me,
    pool: poolOf(ctx, book, scope, carried),
    leaseBySlot,
    muted,
    typeAllowed,
    readinessMask,
    offset: query.offset,
    limit: query.limit,
  });
  const total = pass.total;
  const countsByType = new Map<string, number>();
  const countsByProject = new Map<string, number>();
  pass.typeCounts.forEach((n, key) => n > 0 && countsByType.set(book.keyNames[key]!, n));
  pass.projectCounts.forEach((n, key) => n > 0 && countsByProject.set(book.keyNames[key]!, n));
  const countsBySuggest = Object.fromEntries(SUGGEST_CODES.map((name, i) => [name, pass.suggestCounts[i]!])) as Record<Suggest, number>;
  const countsByReadiness = Object.fromEntries(READINESS_CODES.map((name, i) => [name, pass.readinessCounts[i]!])) as Record<
    ReadinessFilter,
    number
  >;

  const items: QueueItem[] = pass.page.map(({ slot, score }) => {
    const s = book.slotStatics[slot]!;
    const record = s.record;
    const lease = leases.live(record.id, nowMs);
    const t = {
      heat: heatOf(s.touchedMs, nowMs, policy.heat_window_days),
      staleness: stalenessOf(s.updatedMs, nowMs, policy.staleness_days),
      age: ageOf(s.createdMs, nowMs, policy.age_cap_days),
    };
    const suggest = suggestFor(policy, s, nowMs);
    const item: QueueItem = {
      id: record.id,
      title: record.title,
      type: record.type,
      status: record.status,
      project: record.project,
      priority: s.priority,
      score,
      signals: { blocking: round2(s.blocking), heat: round2(t.heat), staleness: round2(t.staleness), age: round2(t.age) },
      suggest,
      why: whyFor(s, suggest, t.heat, lease, me, nowMs),
    };
    if (s.readiness.value) {
      item.readiness = s.readiness.value;
      item.readiness_reasons = s.readiness.reasons;
    }
    if (lease) {
      item.lease = {
        by: lease.by,
        agent: lease.agent,
        session: lease.session,
        state: lease.state,
        expires_at: new Date(lease.expires_ms).toISOString(),
      };
    }
    return item;
  });
  const end = query.offset + items.length;
  const truncated = end < total;
  const sections = sectionsFor(ctx, book, me, scope, policy, nowMs);
  return {
    items,
    count: items.length,
    offset: query.offset,
    returned_count: items.length,
    total_count: total,
    truncated,
    next_offset: truncated ? end : null,
    counts_by_type: sortedCounts(countsByType),
    counts_by_project: sortedCounts(countsByProject),
    counts_by_suggest: countsBySuggest,
    counts_by_readiness: countsByReadiness,
    muted: pass.muted,
    dormant: pass.dormant,
    reserved: pass.reserved,
    questions: sections.questions,
    asked: sections.asked,
    findings: sections.findings,
    pending: sections.pending,
    reviews: sections.reviews,
    section_totals: sections.totals,
    filters: {
      project: query.project,
      ...(scope ? { project_scope: { repos: scope.repos, groupings: scope.groupings } } : {}),
      assignee: query.assignee === 'me' ? me : query.assignee,
      type: query.types,
      exclude_type: query.excludeTypes,
      readiness: query.readiness,
      limit: query.limit,
    },
    policy,
    generated_at: new Date(nowMs).toISOString(),
  };
}

/** `render_queue`: the same queue, as markdown a person can read. */
export async function renderQueue(ctx: OpContext, input: QueueInput): Promise<RawResponse> {
  const envelope = queueOf(ctx, input);
  return new RawResponse(200, { 'content-type': 'text/markdown; charset=utf-8' }, renderQueueMarkdown(ctx.tenant.org, envelope));
}
