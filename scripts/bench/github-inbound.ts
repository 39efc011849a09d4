/**
 * `npm run bench -- github-inbound`: how fast GitHub's webhooks move work (issue 26). The real
 * server process (`workgraph serve`, fsync on) links a repository; the bench then sends signed
 * `push` deliveries (GitHub's published example, `@octokit/webhooks-examples`, one commit whose
 * message says `Refs task-...`), each linking its commit to a different node, from a few
 * concurrent senders, as GitHub would send them. A delivery is answered 202 once it is queued
 * durably; the node changes when the tenant's inbound worker has handled it.
 *
 * Measured per delivery: from sending it to the node change being visible, i.e. the
 * `node.updated` event of that node arriving on an open GET /v1/events stream (no polling load).
 * Headline: deliveries per second from 4 concurrent senders (first send to last visible; the
 * queue builds a backlog the worker drains, so latency there is mostly waiting in line), and p99
 * of that latency for deliveries sent one at a time, each awaited (no backlog: what one push
 * meets).
 *
 * Reference, in the same run: the same change made directly through the API a member uses
 * (POST /v1/nodes/{id}/commits, link_commit, same senders, same stream), in blocks alternating
 * with the webhook blocks so both see the same machine. Ratios: webhook rate / direct rate, and
 * webhook p99 / direct p99 (what the signature check, the durable queue and the worker add).
 *
 * Env: BENCH_GH_N (changes per block, default 300), BENCH_GH_ROUNDS (default 2),
 * BENCH_GH_CLIENTS (concurrent senders, default 4); the argument `quick` for a smoke run.
 */
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sign } from '@octokit/webhooks-methods';
import { EventSource } from 'eventsource';
import { fmtMs, fmtRate, fmtRatio, machineNote, recordResult, runIfMain, scratchDir, startServerProcess } from './lib.js';

const QUICK = process.argv.includes('quick');
const N = Number(process.env.BENCH_GH_N ?? (QUICK ? 40 : 300));
const ROUNDS = Number(process.env.BENCH_GH_ROUNDS ?? (QUICK ? 1 : 2));
const CLIENTS = Number(process.env.BENCH_GH_CLIENTS ?? 4);
const PACED_N = Number(process.env.BENCH_GH_PACED_N ?? (QUICK ? 20 : 100));
const REPO = 'bench-org/bench-repo';
const SECRET = 'bench-webhook-secret';
const WEBHOOK = '/v1/integrations/github/webhook';

const require = createRequire(import.meta.url);
const examples = require('@octokit/webhooks-examples') as Array<{ name: string; examples: Array<Record<string, unknown>> }>;

/** GitHub's published push to the default branch with one commit: the template of every delivery. */
const PUSH = (() => {
  const found = examples
    .find((g) => g.name === 'push')
    ?.examples.find((e) => e.ref === 'refs/heads/master' && Array.isArray(e.commits) && e.commits.length === 1);
  if (!found) throw new Error('no published push example with one commit');
  return found;
})();

function pushPayload(node: string, sha: string): string {
  const payload = structuredClone(PUSH);
  const repository = payload.repository as Record<string, unknown>;
  repository.full_name = REPO;
  repository.name = 'bench-repo';
  const commit = { ...(payload.commits as Array<Record<string, unknown>>)[0], id: sha, message: `Speed up the cache\n\nRefs ${node}` };
  payload.commits = [commit];
  payload.head_commit = commit;
  return JSON.stringify(payload);
}

const nodeId = (i: number) => `task-gh-bench-${i}`;
const shaOf = (i: number) => (0x1000000 + i).toString(16).padStart(40, 'a');

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

interface Block {
  kind: 'webhook' | 'direct';
  /** one change at a time, each awaited before the next: the latency without a backlog */
  paced: boolean;
  rate: number;
  p50: number;
  p99: number;
  latencies: number[];
}

async function api(url: string, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as unknown) : null };
}

/** Runs `work(i)` for i in [0, n) on `clients` concurrent lanes. */
async function lanes(n: number, clients: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < n) await work(next++);
    }),
  );
}

export async function main(): Promise<void> {
  console.log(machineNote());
  const dir = scratchDir('github-inbound');
  const dataDir = join(dir, 'data');
  // no outbound call can reach a GitHub from here: the bench nodes have no paired issue anyway
  const server = await startServerProcess(dataDir, { SVC_GITHUB_API_URL: 'http://127.0.0.1:9' });
  const streams: EventSource[] = [];
  try {
    const url = server.url;
    const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    const me = await api(url, token, 'GET', '/v1/me');
    const org = (me.json as { org: string }).org;
    const total = ROUNDS * 2 * N + 2 * PACED_N;
    for (let start = 0; start < total; start += 250) {
      const nodes = [];
      for (let i = start; i < Math.min(total, start + 250); i++) nodes.push({ id: nodeId(i), summary: `Bench node ${i}` });
      const res = await api(url, token, 'POST', '/v1/nodes', { nodes });
      if (res.status !== 200) throw new Error(`creating bench nodes: ${res.status} ${JSON.stringify(res.json)}`);
    }
    const link = await api(url, token, 'POST', '/v1/integrations/github/links', {
      repo: REPO,
      token: 'github_pat_11BENCHBENCHBENCHBENCH',
      webhook_secret: SECRET,
    });
    if (link.status !== 201) throw new Error(`linking: ${link.status} ${JSON.stringify(link.json)}`);

    // node id -> when its change became visible on the stream
    const seen = new Map<string, number>();
    const es = new EventSource(`${url}/v1/events`, {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, authorization: `Bearer ${token}` } }),
    });
    streams.push(es);
    es.addEventListener('node.updated', (e) => {
      const at = performance.now();
      const nodes = (JSON.parse(e.data) as { nodes?: unknown }).nodes;
      if (Array.isArray(nodes)) for (const id of nodes) if (typeof id === 'string' && !seen.has(id)) seen.set(id, at);
    });
    await new Promise<void>((resolve, reject) => {
      es.addEventListener('open', () => resolve(), { once: true });
      es.addEventListener('error', (e) => reject(new Error(`event stream: ${e.message ?? 'error'}`)), { once: true });
    });

    const runBlock = async (kind: Block['kind'], first: number, paced = false): Promise<Block> => {
      const sent = new Map<string, number>();
      let delivery = 0;
      const n = paced ? PACED_N : N;
      const t0 = performance.now();
      await lanes(n, paced ? 1 : CLIENTS, async (k) => {
        const i = first + k;
        const id = nodeId(i);
        sent.set(id, performance.now());
        if (kind === 'webhook') {
          const body = pushPayload(id, shaOf(i));
          const res = await fetch(`${url}${WEBHOOK}?tenant=${encodeURIComponent(org)}`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'x-github-event': 'push',
              'x-github-delivery': `bench-${process.pid}-${i}-${delivery++}`,
              'x-hub-signature-256': await sign(SECRET, body),
            },
            body,
          });
          await res.text();
          if (res.status !== 202) throw new Error(`webhook answered ${res.status}`);
        } else {
          const res = await api(url, token, 'POST', `/v1/nodes/${id}/commits`, { repo: 'bench-repo', sha: shaOf(i) });
          if (res.status !== 200) throw new Error(`link_commit answered ${res.status}`);
        }
        while (paced && !seen.has(id)) await new Promise((r) => setTimeout(r, 1));
      });
      const ids = [...sent.keys()];
      const deadline = performance.now() + 120_000;
      while (ids.some((id) => !seen.has(id))) {
        if (performance.now() > deadline)
          throw new Error(`${kind}: ${ids.filter((id) => !seen.has(id)).length} changes never became visible`);
        await new Promise((r) => setTimeout(r, 10));
      }
      const latencies = ids.map((id) => seen.get(id)! - sent.get(id)!);
      const last = Math.max(...ids.map((id) => seen.get(id)!));
      return { kind, paced, rate: (n / (last - t0)) * 1000, p50: percentile(latencies, 50), p99: percentile(latencies, 99), latencies };
    };

    const blocks: Block[] = [];
    let first = 0;
    for (let r = 0; r < ROUNDS; r++) {
      // alternate which goes first, so neither always meets a warmer server
      for (const kind of r % 2 === 0 ? (['webhook', 'direct'] as const) : (['direct', 'webhook'] as const)) {
        const block = await runBlock(kind, first);
        first += N;
        blocks.push(block);
        console.log(
          `  round ${r + 1} ${kind.padEnd(7)}: ${fmtRate(block.rate)} changes/s, p50 ${fmtMs(block.p50)}, p99 ${fmtMs(block.p99)}`,
        );
      }
    }
    // then one change at a time: the latency a single push meets on a server with no backlog
    for (const kind of ['webhook', 'direct'] as const) {
      const block = await runBlock(kind, first, true);
      first += PACED_N;
      blocks.push(block);
      console.log(`  paced ${kind.padEnd(7)}: ${fmtRate(block.rate)} changes/s, p50 ${fmtMs(block.p50)}, p99 ${fmtMs(block.p99)}`);
    }
    const summary = (kind: Block['kind'], paced: boolean) => {
      const mine = blocks.filter((b) => b.kind === kind && b.paced === paced);
      const all = mine.flatMap((b) => b.latencies);
      return { rate: mine.reduce((s, b) => s + b.rate, 0) / mine.length, p50: percentile(all, 50), p99: percentile(all, 99) };
    };
    const hook = summary('webhook', false);
    const direct = summary('direct', false);
    const hookPaced = summary('webhook', true);
    const directPaced = summary('direct', true);
    console.log(
      `github-inbound: ${fmtRate(hook.rate)} deliveries/s (${CLIENTS} senders), ${fmtRatio(hook.rate / direct.rate)} of the same change through POST /v1/nodes/{id}/commits (${fmtRate(direct.rate)}/s); ` +
        `delivery to node change visible, one at a time: p99 ${fmtMs(hookPaced.p99)} (p50 ${fmtMs(hookPaced.p50)}) against ${fmtMs(directPaced.p99)} (p50 ${fmtMs(directPaced.p50)}) direct, ${fmtRatio(hookPaced.p99 / directPaced.p99)}; ` +
        `under the ${CLIENTS} senders' backlog: p99 ${fmtMs(hook.p99)} against ${fmtMs(direct.p99)} (${N} changes per block, ${ROUNDS} rounds)`,
    );
    recordResult('github-inbound', {
      n: N,
      paced_n: PACED_N,
      rounds: ROUNDS,
      clients: CLIENTS,
      webhook: hook,
      direct,
      webhook_paced: hookPaced,
      direct_paced: directPaced,
    });
  } finally {
    for (const es of streams) es.close();
    await server.stop();
  }
}

runIfMain(import.meta.url, main);
