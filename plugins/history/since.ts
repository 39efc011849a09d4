/**
 * The change feed's `since`: a 7-40 hex graph commit, an ISO date or timestamp, or a
 * relative phrase ("yesterday", "3 days ago") read by chrono-node against the injected
 * clock. Anything else is 422.
 */
import { errors } from '../../kernel/errors.js';
import type { CommitIndex } from './commit-index.js';

export type Since = { kind: 'commit'; sha: string; seq: number } | { kind: 'date'; ms: number; iso: string };

const HEX = /^[0-9a-fA-F]{7,40}$/;
const ISO = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

function invalid(message: string, value: string): never {
  throw errors.validation(message, [{ field: 'since', message, value: value.slice(0, 200) }]);
}

export async function parseSince(raw: string | undefined, commits: CommitIndex, nowMs: number): Promise<Since | null> {
  if (raw === undefined || raw.trim() === '') return null;
  const value = raw.trim();
  if (value.length > 200) invalid('since is too long', value);
  if (HEX.test(value)) {
    // A hex string is always read as a commit: a digits-only date like 20240101 is not guessed at.
    const hits = commits.resolve(value.toLowerCase());
    if (hits.length === 0) invalid(`since '${value}' does not name a commit of the graph history`, value);
    if (hits.length > 1) invalid(`since '${value}' is ambiguous (${hits.length} commits); give more hex digits`, value);
    return { kind: 'commit', sha: hits[0]!.sha, seq: hits[0]!.seq };
  }
  let ms: number;
  if (ISO.test(value)) {
    ms = Date.parse(value.replace(' ', 'T'));
  } else {
    // chrono-node (0.15 MB) is imported on the first relative phrase, not at every start
    const chrono = await import('chrono-node');
    const parsed = chrono.parseDate(value, new Date(nowMs));
    ms = parsed ? parsed.getTime() : Number.NaN;
  }
  if (!Number.isFinite(ms)) invalid(`since '${value}' is neither a commit sha, a date nor a relative phrase like "3 days ago"`, value);
  return { kind: 'date', ms, iso: new Date(ms).toISOString() };
}
