/**
 * GET /v1/metrics/capture: redacted aggregates of the capture plugin's journal (docs/spec.md Reads
 * rule 9). Counts and rates only: no node ids, no text, no free-form reasons; people
 * appear as per-tenant pseudonyms `author-<hash12>` (HMAC-SHA256 of the person id under a
 * random per-tenant key kept in operational state), and closures as `{edge, latency_days}`.
 *
 * Cost: the journal months the window touches plus one index/timeline lookup per
 * captured node id.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { Tenant } from '../../kernel/tenant.js';
import { readCaptureJournal, type CaptureJournalEntry } from '../capture/public.js';
import { DAY_MS, stats } from './report.js';
import type { CaptureMetrics, ClosureEdge } from './schemas.js';
import type { Timelines } from './timeline.js';

const KEY_COLLECTION = 'analytics-pseudonym-key';

interface PseudonymKey {
  key: string;
  created: string;
}

/** The tenant's pseudonym key, made (and made durable) on first use. */
export async function pseudonymKey(tenant: Tenant, nowMs: number): Promise<string> {
  const collection = tenant.state.collection<PseudonymKey>(KEY_COLLECTION);
  const existing = collection.get('hmac');
  if (existing) return existing.key;
  const record = { key: randomBytes(32).toString('hex'), created: new Date(nowMs).toISOString() };
  await collection.set('hmac', record);
  return record.key;
}

export function pseudonym(key: string, person: string): string {
  return `author-${createHmac('sha256', Buffer.from(key, 'hex')).update(person).digest('hex').slice(0, 12)}`;
}

const rate = (part: number, whole: number) => (whole === 0 ? 0 : Math.round((part / whole) * 1000) / 1000);
const bump = (map: Record<string, number>, key: string, by = 1) => {
  map[key] = (map[key] ?? 0) + by;
};
const sorted = (map: Record<string, number>) => Object.fromEntries(Object.entries(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);

export function computeCaptureMetrics(
  tenant: Tenant,
  timelines: Timelines,
  opts: { since: string; sinceMs: number; nowMs: number; key: string; captureEnabled: boolean },
): CaptureMetrics {
  // A tenant without the capture plugin has no capture metrics, even if an old journal remains.
  const entries: CaptureJournalEntry[] = opts.captureEnabled
    ? readCaptureJournal(tenant, { sinceMs: opts.sinceMs, untilMs: opts.nowMs })
    : [];
  const captures = { total: 0, created: 0, pending: 0, unavailable: 0, nodes_created: 0, bounced: 0, with_blocks: 0 };
  const byVia: Record<string, number> = {};
  const bySource: Record<string, number> = {};
  const byIngester: Record<string, number> = {};
  const byType: Record<string, number> = {};
  let distillSourced = 0;
  let agentWritten = 0;
  const distill = { reports: 0, facts: 0, captured: 0, spooled: 0, rejected: 0 };
  const authors = new Map<string, { author: string; captures: number; created: number; pending: number; distill_reports: number }>();
  const closures: Array<{ edge: ClosureEdge; latency_days: number }> = [];
  const tracked = new Set<string>();

  for (const e of entries) {
    const author = pseudonym(opts.key, String(e.author ?? ''));
    let who = authors.get(author);
    if (!who) authors.set(author, (who = { author, captures: 0, created: 0, pending: 0, distill_reports: 0 }));
    if (e.kind === 'distill_report') {
      distill.reports++;
      distill.facts += count(e.facts);
      distill.captured += count(e.captured);
      distill.spooled += count(e.spooled);
      distill.rejected += count(e.rejected);
      who.distill_reports++;
      continue;
    }
    captures.total++;
    who.captures++;
    bump(byVia, e.via || 'unknown');
    // `source` is client-supplied free text: only the docs/spec.md one meaningful value is told apart
    bump(bySource, e.source === 'distill' ? 'distill' : e.source ? 'other' : 'direct');
    if (e.source === 'distill') distillSourced++;
    if (e.agent) agentWritten++;
    if (e.ingester) bump(byIngester, e.ingester);
    if ((e.attempts ?? 0) > 1) captures.bounced++;
    if (e.blocks) captures.with_blocks++;
    if (e.status === 'created') {
      captures.created++;
      who.created++;
      captures.nodes_created += e.ids.length;
      for (const [type, n] of Object.entries(e.types ?? {})) bump(byType, type, count(n));
    } else if (e.status === 'pending') {
      captures.pending++;
      who.pending++;
    } else if (e.status === 'unavailable') captures.unavailable++;
    if (e.status !== 'created' && e.status !== 'pending') continue;
    const capturedAt = Date.parse(e.at);
    for (const id of e.ids) {
      const record = tenant.index.get(id);
      if (!record || tracked.has(id)) continue;
      tracked.add(id);
      const t = timelines.timesOf(record);
      if (t.completedAt === null || t.closedBy === null) continue;
      closures.push({ edge: t.closedBy, latency_days: Math.round((Math.max(0, t.completedAt - capturedAt) / DAY_MS) * 100) / 100 });
    }
  }
  // sorted by edge and latency, so the order says nothing about which capture it was
  closures.sort((a, b) => (a.edge < b.edge ? -1 : a.edge > b.edge ? 1 : a.latency_days - b.latency_days));
  const byEdge: Record<string, number> = {};
  for (const c of closures) bump(byEdge, c.edge);
  const windowDays = Math.max(1, (opts.nowMs - opts.sinceMs) / DAY_MS);

  return {
    since: opts.since,
    until: new Date(opts.nowMs).toISOString(),
    capture_enabled: opts.captureEnabled,
    captures: { ...captures, by_via: sorted(byVia), by_source: sorted(bySource), by_ingester: sorted(byIngester), by_type: sorted(byType) },
    rates: {
      created_rate: rate(captures.created, captures.total),
      pending_rate: rate(captures.pending, captures.total),
      unavailable_rate: rate(captures.unavailable, captures.total),
      bounce_rate: rate(captures.bounced, captures.total),
      distill_share: rate(distillSourced, captures.total),
      agent_share: rate(agentWritten, captures.total),
      nodes_per_capture: rate(captures.nodes_created, captures.created),
      captures_per_day: rate(captures.total, windowDays),
    },
    distill: { ...distill, capture_rate: rate(distill.captured, distill.facts) },
    authors: {
      count: authors.size,
      entries: [...authors.values()].sort(
        (a, b) => b.captures - a.captures || b.distill_reports - a.distill_reports || (a.author < b.author ? -1 : 1),
      ),
    },
    closure: {
      tracked: tracked.size,
      closed: closures.length,
      rate: rate(closures.length, tracked.size),
      by_edge: sorted(byEdge),
      latency_days: stats(closures.map((c) => c.latency_days)),
      entries: closures,
    },
  };
}
