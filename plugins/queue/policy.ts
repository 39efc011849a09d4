/**
 * The ranking policy (docs/queue.md): the registry's `queue_policy` (seed pack, GET /v1/schema)
 * merged over the defaults below, so a pack may tune any weight and the queue still knows
 * every knob it uses. The merged object is echoed as `policy` in the queue envelope.
 */
import type { Registry } from '../../kernel/registry.js';

// type aliases, not interfaces: the policy is answered as a JSON object (`Record<string, unknown>`)
export type PriorityWeights = {
  p1: number;
  p2: number;
  p3: number;
  none: number;
};

export type QueuePolicy = {
  version: number;
  weights: { priority: PriorityWeights; blocking: number; heat: number; staleness: number; age: number };
  heat_window_days: number;
  staleness_days: number;
  age_cap_days: number;
  /** untouched this long, blocking nothing and without priority: suggest `close` */
  close_after_days: number;
  /** edge types whose targets wait on the source; each counts with its registry weight */
  blocking_edges: string[];
  blocking_depth: number;
  blocking_max_nodes: number;
  /** subtracted from the score of an item someone else holds a live lease on */
  leased_penalty: number;
  doc: string;
};

export const DEFAULT_POLICY: QueuePolicy = {
  version: 1,
  weights: { priority: { p1: 30, p2: 15, p3: 5, none: 8 }, blocking: 6, heat: 4, staleness: 3, age: 2 },
  heat_window_days: 7,
  staleness_days: 14,
  age_cap_days: 60,
  close_after_days: 28,
  blocking_edges: ['blocks', 'part-of'],
  blocking_depth: 4,
  blocking_max_nodes: 200,
  leased_penalty: 30,
  doc: 'docs/queue.md',
};

const num = (v: unknown, d: number) => (typeof v === 'number' && Number.isFinite(v) ? v : d);

const cache = new WeakMap<Registry, QueuePolicy>();

export function policyOf(registry: Registry): QueuePolicy {
  let policy = cache.get(registry);
  if (policy) return policy;
  const raw = (registry.pack.queue_policy ?? {}) as Record<string, unknown>;
  const w = (raw.weights ?? {}) as Record<string, unknown>;
  const p = (w.priority ?? {}) as Record<string, unknown>;
  const d = DEFAULT_POLICY;
  const edges = Array.isArray(raw.blocking_edges) ? raw.blocking_edges.filter((e): e is string => typeof e === 'string') : d.blocking_edges;
  policy = {
    version: num(raw.version, d.version),
    weights: {
      priority: {
        p1: num(p.p1, d.weights.priority.p1),
        p2: num(p.p2, d.weights.priority.p2),
        p3: num(p.p3, d.weights.priority.p3),
        none: num(p.none, d.weights.priority.none),
      },
      blocking: num(w.blocking, d.weights.blocking),
      heat: num(w.heat, d.weights.heat),
      staleness: num(w.staleness, d.weights.staleness),
      age: num(w.age, d.weights.age),
    },
    heat_window_days: num(raw.heat_window_days, d.heat_window_days),
    staleness_days: num(raw.staleness_days, d.staleness_days),
    age_cap_days: num(raw.age_cap_days, d.age_cap_days),
    close_after_days: num(raw.close_after_days, d.close_after_days),
    blocking_edges: edges,
    blocking_depth: Math.max(1, Math.floor(num(raw.blocking_depth, d.blocking_depth))),
    blocking_max_nodes: Math.max(1, Math.floor(num(raw.blocking_max_nodes, d.blocking_max_nodes))),
    leased_penalty: num(raw.leased_penalty, d.leased_penalty),
    doc: d.doc,
  };
  cache.set(registry, policy);
  return policy;
}
