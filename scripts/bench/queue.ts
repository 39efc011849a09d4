/**
 * Benchmark of GET /v1/queue latency as the graph grows (issue 4 acceptance: under 50 ms
 * median at 10,000 nodes, growth no worse than linear).
 *
 *   node --no-node-snapshot --import tsx scripts/bench/queue.ts [--sizes 1000,10000,50000] [--runs 40]
 *   npm run bench -- queue
 *
 * For each size it starts a real server (core, leases, queue) on a fresh data directory,
 * builds a mixed work graph straight through `tenant.write` with thousands of nodes per
 * commit (tasks, issues, decisions, specs; blocks/part-of edges; priorities; repos in
 * groupings; some done, some leased), then times HTTP requests: the first (cold: fills the
 * signal cache), the steady state for several query shapes, and the first request after a
 * one-node commit (incremental bookkeeping). Prints medians and growth ratios.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { configFromEnv, createLogger } from '../../kernel/config.js';
import { startServer, type RunningServer } from '../../kernel/server.js';
import type { WriteActor } from '../../kernel/write-draft.js';
import { corePlugin } from '../../plugins/core/index.js';
import { leasesPlugin } from '../../plugins/leases/index.js';
import { bookOf } from '../../plugins/queue/book.js';
import { queuePlugin } from '../../plugins/queue/index.js';
import { invoke } from '../../kernel/operation.js';
import { showQueue } from '../../plugins/queue/api.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

const sizes = arg('sizes', '1000,10000,50000').split(',').map(Number);
const runs = Number(arg('runs', '40'));
const PER_COMMIT = 5000;

/** Deterministic pseudo-random numbers, so every run builds the same graph. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

async function timed(server: RunningServer, token: string, path: string): Promise<{ ms: number; body: Record<string, unknown> }> {
  const start = performance.now();
  const res = await fetch(server.url + path, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  const ms = performance.now() - start;
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${text.slice(0, 300)}`);
  return { ms, body: JSON.parse(text) as Record<string, unknown> };
}

async function buildGraph(server: RunningServer, org: string, admin: WriteActor, size: number): Promise<void> {
  const tenant = server.services.tenants.get(org)!;
  // Bulk seeding runs thousands of sandboxed hook calls per commit; on a loaded machine the
  // default 50 ms per call can trip. The hooks are not what this bench measures.
  tenant.config.limits.hook_timeout_ms = 2000;
  const random = rng(size);
  const groupings = Array.from({ length: 5 }, (_, i) => `proj-group-${i}`);
  const repos = Array.from({ length: 20 }, (_, i) => `repo-svc-${i}`);
  await tenant.write(admin, { op: 'bench_seed', via: 'rest' }, async (draft) => {
    for (const g of groupings)
      draft.put({
        frontmatter: { id: g, type: 'proj', status: 'active', summary: `grouping ${g}`, aliases: [g.replace('proj-', 'g')] },
        body: '',
      });
    repos.forEach((r, i) =>
      draft.put({
        frontmatter: {
          id: r,
          type: 'repo',
          status: 'active',
          summary: `repo ${r}`,
          edges: [{ type: 'member-of', to: groupings[i % groupings.length]! }],
        },
        body: '',
      }),
    );
  });
  const ids: string[] = [];
  const issues: string[] = [];
  const statuses = ['open', 'open', 'open', 'in-progress', 'blocked', 'review'];
  for (let start = 0; start < size; start += PER_COMMIT) {
    const count = Math.min(PER_COMMIT, size - start);
    await tenant.write(admin, { op: 'bench_bulk', via: 'rest' }, async (draft) => {
      for (let k = 0; k < count; k++) {
        const n = start + k;
        const roll = random();
        const type = roll < 0.6 ? 'task' : roll < 0.8 ? 'issue' : roll < 0.85 ? 'dec' : 'spec';
        const id = `${type}-bench-${n}`;
        const edges: Array<Record<string, string>> = [];
        if (ids.length > 0 && random() < 0.3) edges.push({ type: 'blocks', to: ids[Math.floor(random() * ids.length)]! });
        if (issues.length > 0 && type === 'task' && random() < 0.2)
          edges.push({ type: 'part-of', to: issues[Math.floor(random() * issues.length)]! });
        const fm: Record<string, unknown> = {
          id,
          type,
          status:
            type === 'dec'
              ? 'proposed'
              : type === 'spec'
                ? 'draft'
                : statuses[Math.floor(random() * (type === 'task' ? statuses.length : statuses.length - 1))],
          summary: `benchmark ${type} number ${n}`,
          project: repos[Math.floor(random() * repos.length)]!.replace('repo-', ''),
        };
        const p = random();
        if (p < 0.6) fm.priority = p < 0.15 ? 'p1' : p < 0.35 ? 'p2' : 'p3';
        if (edges.length > 0) fm.edges = edges;
        draft.put({ frontmatter: fm, body: `Body of ${id}.\n` });
        ids.push(id);
        if (type === 'issue') issues.push(id);
      }
    });
  }
  // about 15% of the work finishes (a status commit, like real life)
  const finished = ids.filter((id, i) => !id.startsWith('spec-') && !id.startsWith('dec-') && i % 7 === 3);
  for (let start = 0; start < finished.length; start += PER_COMMIT) {
    await tenant.write(admin, { op: 'bench_done', via: 'rest' }, async (draft) => {
      for (const id of finished.slice(start, start + PER_COMMIT)) {
        const node = draft.get(id)!;
        node.frontmatter.status = id.startsWith('task-') ? 'done' : 'resolved';
        draft.put({ frontmatter: node.frontmatter, body: node.body });
      }
    });
  }
}

interface Row {
  size: number;
  nodes: number;
  candidates: number;
  build_s: number;
  cold_ms: number;
  median_ms: number;
  p90_ms: number;
  core_median_ms: number;
  project_median_ms: number;
  assignee_median_ms: number;
  paged_median_ms: number;
  after_commit_ms: number;
}

async function benchSize(size: number): Promise<Row> {
  const dataDir = mkdtempSync(join(tmpdir(), 'wg-bench-queue-'));
  const config = { ...configFromEnv({}), host: '127.0.0.1', port: 0, dataDir, fsync: false, tenantPollMs: 60_000 };
  const server = await startServer({ config, plugins: [corePlugin, leasesPlugin, queuePlugin], log: createLogger(() => undefined, true) });
  try {
    const { org, token, person } = server.bootstrap!;
    const admin: WriteActor = { personId: person, name: 'Admin', email: 'admin@localhost', agent: null, session: null };
    const t0 = performance.now();
    await buildGraph(server, org, admin, size);
    const buildS = (performance.now() - t0) / 1000;
    const tenant = server.services.tenants.get(org)!;
    // a few leases, so the queue reads lease state too
    for (let i = 0; i < 20; i++) {
      await fetch(`${server.url}/v1/nodes/task-bench-${i * 3}/claim`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      }).then((r) => r.text());
    }
    const cold = await timed(server, token, '/v1/queue');
    // the operation alone, in process: separates the queue's own cost from HTTP and machine noise
    const { actor } = server.services.tenants.authenticate(token);
    const ctx = { tenant, actor, via: 'rest' as const, services: server.services, headers: {} };
    const core: number[] = [];
    for (let i = 0; i < runs * 3; i++) {
      const start = performance.now();
      await invoke(showQueue, ctx, {});
      core.push(performance.now() - start);
    }
    const steady: number[] = [];
    const project: number[] = [];
    const assignee: number[] = [];
    const paged: number[] = [];
    for (let i = 0; i < runs; i++) {
      steady.push((await timed(server, token, '/v1/queue')).ms);
      project.push((await timed(server, token, '/v1/queue?project=svc-3')).ms);
      assignee.push((await timed(server, token, '/v1/queue?assignee=me')).ms);
      paged.push((await timed(server, token, `/v1/queue?limit=100&offset=${(i % 5) * 100}&type=task,issue`)).ms);
    }
    // one ordinary commit, then the next request pays only for the touched cone
    await tenant.write(admin, { op: 'bench_touch', via: 'rest' }, async (draft) => {
      const node = draft.get('task-bench-1') ?? draft.get(`${[...tenant.index.idsOfType('task')][0]}`)!;
      node.frontmatter.priority = 'p1';
      draft.put({ frontmatter: node.frontmatter, body: node.body });
    });
    const afterCommit = await timed(server, token, '/v1/queue');
    return {
      size,
      nodes: tenant.index.size,
      candidates: bookOf(tenant).candidateCount,
      build_s: Math.round(buildS * 10) / 10,
      cold_ms: Math.round(cold.ms * 10) / 10,
      median_ms: Math.round(median(steady) * 10) / 10,
      p90_ms: Math.round(pct(steady, 0.9) * 10) / 10,
      core_median_ms: Math.round(median(core) * 100) / 100,
      project_median_ms: Math.round(median(project) * 10) / 10,
      assignee_median_ms: Math.round(median(assignee) * 10) / 10,
      paged_median_ms: Math.round(median(paged) * 10) / 10,
      after_commit_ms: Math.round(afterCommit.ms * 10) / 10,
    };
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const rows: Row[] = [];
for (const size of sizes) {
  process.stderr.write(`building and measuring ${size} nodes...\n`);
  rows.push(await benchSize(size));
}
console.table(rows);
console.log('\nGrowth of the GET /v1/queue median (linear growth would equal the node ratio):');
for (let i = 1; i < rows.length; i++) {
  const a = rows[i - 1]!;
  const b = rows[i]!;
  const nodeRatio = b.nodes / a.nodes;
  const timeRatio = b.median_ms / a.median_ms;
  const coreRatio = b.core_median_ms / a.core_median_ms;
  const verdict = (r: number) => (r <= nodeRatio ? 'linear or better' : 'WORSE than linear');
  console.log(
    `  ${a.size} -> ${b.size}: nodes x${nodeRatio.toFixed(1)}; HTTP median x${timeRatio.toFixed(2)} (${verdict(timeRatio)}); in-process x${coreRatio.toFixed(2)} (${verdict(coreRatio)})`,
  );
}
const at10k = rows.find((r) => r.size === 10_000);
if (at10k) console.log(`\nTarget: median under 50 ms at 10,000 nodes: ${at10k.median_ms} ms (${at10k.median_ms < 50 ? 'met' : 'NOT met'})`);
// headline for `npm run bench` (scripts/bench/run.ts collects lines starting with `queue:`)
const growth = rows
  .slice(1)
  .map((b, i) => `x${(b.median_ms / rows[i]!.median_ms).toFixed(2)} for x${(b.nodes / rows[i]!.nodes).toFixed(1)} nodes`);
console.log(
  `queue: GET /v1/queue median ${rows.map((r) => `${r.size} nodes ${r.median_ms} ms`).join(', ')}` +
    (growth.length ? `; growth ${growth.join(', ')}` : '') +
    (at10k ? `; target <50 ms at 10k ${at10k.median_ms < 50 ? 'met' : 'NOT met'}` : ''),
);
