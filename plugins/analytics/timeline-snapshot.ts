/**
 * The timelines' snapshot (`<tenant>/analytics/timelines.v8`): what memory holds, as of one
 * commit, so a restart replays only the commits after it instead of the whole history. It is
 * a start-up cache, derived and recoverable: written temp + rename (kernel/durable-fs.ts), and
 * ignored when it is unreadable, of another format, or compacted under other status rules.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { writeFileDurable } from '../../kernel/durable-fs.js';
import type { Registry } from '../../kernel/registry.js';
import type { StatusStep } from './timeline-steps.js';

/** Bump when the snapshot's shape or the compaction rule (timeline-steps.ts) changes. */
const FORMAT = 1;

export interface NodeTimeline {
  steps: StatusStep[];
  /** the node type its steps were compacted under; null while nothing was dropped */
  compactedAs: string | null;
}

export interface TimelineState {
  /** statusRules() of the registry the steps were compacted under */
  rules: string;
  /** the last commit the state includes */
  covered: string;
  nodes: Map<string, NodeTimeline>;
  doneEdgesIn: Map<string, Map<string, number>>;
  doneEdgesOut: Map<string, Set<string>>;
}

/**
 * What decides which steps a compaction keeps: per node type its terminal statuses and its
 * in-progress status (the other active statuses are fixed in code, plugins/core/phase.ts, and
 * covered by FORMAT).
 */
export function statusRules(registry: Registry): string {
  return [...registry.nodeTypes.values()]
    .map((t) => `${t.type}\u0000${[...t.terminal].sort().join('\u0001')}\u0000${t.in_progress_status ?? ''}`)
    .sort()
    .join('\n');
}

export async function writeTimelineSnapshot(path: string, state: TimelineState): Promise<void> {
  // serialized synchronously: the state as of this tick, whatever commits come during the write
  const bytes = serialize({ format: FORMAT, ...state });
  await mkdir(dirname(path), { recursive: true });
  await writeFileDurable(path, bytes);
}

/** The snapshot at `path` when it is usable under `rules`; null otherwise. */
export async function readTimelineSnapshot(path: string, rules: string): Promise<TimelineState | null> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch {
    return null;
  }
  try {
    const state = deserialize(bytes) as Partial<TimelineState> & { format?: number };
    if (state.format !== FORMAT || state.rules !== rules || typeof state.covered !== 'string') return null;
    if (!(state.nodes instanceof Map) || !(state.doneEdgesIn instanceof Map) || !(state.doneEdgesOut instanceof Map)) return null;
    return state as TimelineState;
  } catch {
    return null;
  }
}
