/**
 * The capture plugin's operational state (never committed to the graph):
 *
 * - the capture journal: one entry per capture attempt and per distill report, kept in
 *   monthly state collections `capture-journal-YYYY-MM` (UTC month of `at`, keyed by entry
 *   id) so one busy month never makes every later append rewrite the whole history. The
 *   analytics plugin reads it through `readCaptureJournal` for GET /v1/metrics/capture;
 *   the shape is documented in this plugin's README.
 * - idempotency records: collection `capture-idempotency`, keyed by the caller's person and
 *   a hash of the key, holding the original answer for 24 hours.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Tenant } from '../../kernel/tenant.js';

export type JournalKind = 'capture' | 'distill_report';
export type JournalStatus = 'created' | 'pending' | 'unavailable' | 'reported';

/** One journal entry. Text is never journaled: only counts, ids and provenance. */
export interface CaptureJournalEntry {
  /** `cj-<epoch ms, base36, 9 chars>-<random hex>`: sorts by time */
  id: string;
  kind: JournalKind;
  /** ISO instant from the injected clock */
  at: string;
  /** the person the write is attributed to (the owner for agent tokens) */
  author: string;
  agent: string | null;
  session: string | null;
  /** the adapter: `rest` or `mcp` */
  via: string;
  /** the client's `source` (e.g. `distill` for backstop captures), else null */
  source: string | null;
  /** `created` / `pending` / `unavailable` for captures, `reported` for distill reports */
  status: JournalStatus;
  /** node ids the capture committed (drafts, or the one `capture-` node); [] otherwise */
  ids: string[];
  project: string | null;
  /** captures: created node counts by type */
  types?: Record<string, number>;
  /** captures: `builtin` or `external` */
  ingester?: 'builtin' | 'external';
  /** captures: ingester calls made (2 when the drafts were bounced once) */
  attempts?: number;
  /** captures: why the text was preserved as pending, or why ingestion failed */
  reason?: string | null;
  /** captures: the requester node of `context.blocks`, and its `needed_by` date */
  blocks?: string | null;
  needed_by?: string | null;
  /** distill reports: the reported counts */
  facts?: number;
  captured?: number;
  spooled?: number;
  rejected?: number;
}

const JOURNAL_PREFIX = 'capture-journal-';

function monthOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

export function journalCollection(tenant: Tenant, month: string) {
  return tenant.state.collection<CaptureJournalEntry>(`${JOURNAL_PREFIX}${month}`);
}

export function newJournalId(nowMs: number): string {
  return `cj-${nowMs.toString(36).padStart(9, '0')}-${randomBytes(4).toString('hex')}`;
}

/** Appends one entry; resolves once it is durable. */
export async function appendJournal(tenant: Tenant, entry: CaptureJournalEntry): Promise<void> {
  await journalCollection(tenant, monthOf(Date.parse(entry.at))).set(entry.id, entry);
}

/**
 * Journal entries with `sinceMs <= at <= untilMs`, oldest first. Reads only the monthly
 * collections the window touches (from the tenant's creation month when `sinceMs` is absent).
 */
export function readCaptureJournal(tenant: Tenant, window: { sinceMs?: number | null; untilMs: number }): CaptureJournalEntry[] {
  const created = Date.parse(tenant.config.created);
  const from = window.sinceMs ?? (Number.isFinite(created) ? created : window.untilMs);
  const out: CaptureJournalEntry[] = [];
  const cursor = new Date(Date.UTC(new Date(from).getUTCFullYear(), new Date(from).getUTCMonth(), 1));
  const last = monthOf(window.untilMs);
  for (let guard = 0; guard < 1200; guard++) {
    const month = monthOf(cursor.getTime());
    for (const entry of journalCollection(tenant, month).values()) {
      const at = Date.parse(entry.at);
      if (at >= from && at <= window.untilMs) out.push(entry);
    }
    if (month >= last) break;
    cursor.setUTCMonth(cursor.getUTCMonth() + 1);
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

// ---------------------------------------------------------------- idempotency

/** How long a key returns its original answer. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

interface IdempotencyRecord {
  at: number;
  person: string;
  result: unknown;
}

function idempotencyCollection(tenant: Tenant) {
  return tenant.state.collection<IdempotencyRecord>('capture-idempotency');
}

/** Keys are per person: two people never see each other's answers through a shared key. */
export function idempotencySlot(person: string, key: string): string {
  return `${person}:${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
}

export function recalled(tenant: Tenant, slot: string, nowMs: number): unknown | undefined {
  const record = idempotencyCollection(tenant).get(slot);
  if (!record || nowMs - record.at >= IDEMPOTENCY_TTL_MS) return undefined;
  return record.result;
}

/** Stores an answer and drops expired ones in the same durable write. */
export async function remember(tenant: Tenant, slot: string, person: string, result: unknown, nowMs: number): Promise<void> {
  const collection = idempotencyCollection(tenant);
  const changes: Array<{ key: string; value: IdempotencyRecord | null }> = [];
  for (const [key, record] of collection.entries()) if (nowMs - record.at >= IDEMPOTENCY_TTL_MS) changes.push({ key, value: null });
  changes.push({ key: slot, value: { at: nowMs, person, result } });
  await collection.batch(changes);
}
