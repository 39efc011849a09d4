/**
 * Export time and peak memory, and the proof that the export streams: the server's memory
 * during an export must not grow with the number of nodes.
 *
 * For each size (default 2,500, 5,000, 10,000 and 20,000 nodes; the shared lib.ts fixtures,
 * ~600-byte nodes) a server with the export plugin runs as its own process (`export.ts --serve`,
 * started with --expose-gc; SIGUSR2 makes it collect garbage). Before each download the
 * server collects garbage and its resident set (VmRSS from /proc) is sampled for a baseline;
 * during the download VmRSS is sampled every 5 ms. Reported per size and mode:
 *   - plain tarball, gzip=1, history=1 (git bundle; git's own memory is not the server's);
 *   - stalled clients: one stops reading after the first chunk, one after 90% of the
 *     archive, each for 2 s, and half-way through the stall the server collects garbage and
 *     reports its live memory (heap + external). Without backpressure the server would encode
 *     the rest of the archive into memory during the stall; a leak per entry would show at 90%.
 * "peak RSS" is the highest VmRSS during the download minus the baseline just before it; it
 * includes garbage V8 has not collected yet (its old-space limit grows with the heap, i.e.
 * with the index of a bigger tenant), so the streaming verdict rests on the live memory.
 *
 * Env: BENCH_EXPORT_SIZES (comma-separated node counts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../../kernel/config.js';
import { startServer } from '../../kernel/server.js';
import { corePlugin } from '../../plugins/core/index.js';
import { exportPlugin } from '../../plugins/export/index.js';
import {
  benchConfig,
  copyFixture,
  fixture,
  fmtMs,
  machineNote,
  NODE_ARGS,
  nowMs,
  recordResult,
  ROOT,
  runIfMain,
  stopChild,
  type Fixture,
} from './lib.js';

const SIZES = (process.env.BENCH_EXPORT_SIZES ?? '2500,5000,10000,20000').split(',').map(Number);
const STALL_MS = 2000;
const MB = 1024 * 1024;

/** `export.ts --serve <dataDir>`: a server with the export plugin, prints `listening on URL`. */
async function serve(dataDir: string): Promise<void> {
  const server = await startServer({
    config: benchConfig(dataDir, { fsync: false }),
    plugins: [corePlugin, exportPlugin],
    log: createLogger(undefined, true),
  });
  const gc = (globalThis as { gc?: () => void }).gc;
  // SIGUSR2: collect garbage, then report what is still held (live memory, not garbage).
  // The highest heap + external memory seen since the last report, garbage included.
  let peakHeap = 0;
  setInterval(() => {
    const m = process.memoryUsage();
    peakHeap = Math.max(peakHeap, m.heapUsed + m.external);
  }, 5).unref();
  process.on('SIGUSR2', () => {
    const peak = peakHeap;
    gc?.();
    gc?.();
    const m = process.memoryUsage();
    peakHeap = m.heapUsed + m.external;
    process.stdout.write(
      `MEM ${JSON.stringify({ rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers, peakHeap: peak })}\n`,
    );
  });
  gc?.();
  process.stdout.write(`listening on ${server.url}\n`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

interface LiveMemory {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  /** highest heapUsed + external since the previous report, before collecting */
  peakHeap: number;
}

interface ServerProc {
  url: string;
  child: ChildProcess;
  /** garbage-collects in the server and returns its live memory */
  live(): Promise<LiveMemory>;
}

function startChild(dataDir: string): Promise<ServerProc> {
  const child = spawn(process.execPath, [...NODE_ARGS, '--expose-gc', fileURLToPath(import.meta.url), '--serve', dataDir], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const waiting: Array<(m: LiveMemory) => void> = [];
  return new Promise((resolve, reject) => {
    let out = '';
    let listening = false;
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      let nl: number;
      while ((nl = out.indexOf('\n')) >= 0) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        const m = /listening on (\S+)/.exec(line);
        if (m && !listening) {
          listening = true;
          resolve({
            url: m[1]!,
            child,
            live: () =>
              new Promise<LiveMemory>((res) => {
                waiting.push(res);
                process.kill(child.pid!, 'SIGUSR2');
              }),
          });
        } else if (line.startsWith('MEM ')) waiting.shift()?.(JSON.parse(line.slice(4)) as LiveMemory);
      }
    });
    child.on('exit', (code) => {
      if (!listening) reject(new Error(`export server exited (${code}) before listening`));
    });
  });
}

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

function enablePlugins(f: Fixture, names: string[]): void {
  const file = join(f.dataDir, 'tenants', f.org, 'tenant.json');
  const config = JSON.parse(readFileSync(file, 'utf8')) as { plugins: string[] };
  config.plugins = [...new Set([...config.plugins, ...names])];
  writeFileSync(file, JSON.stringify(config, null, 2) + '\n');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Run {
  ms: number;
  bytes: number;
  baselineMb: number;
  /** highest VmRSS during the download minus VmRSS before it */
  peakDeltaMb: number;
  /** highest heapUsed + external during the download (garbage included) minus the live memory before */
  heapPeakDeltaMb: number;
  nodeCount: number;
  /** stalled runs: live memory (after a GC) in the middle of the stall, minus the live memory before */
  liveDeltaMb?: number;
}

const liveBytes = (m: LiveMemory) => m.heapUsed + m.external;

/**
 * One download. With `stallAtByte`, the client stops reading once it has that many bytes,
 * waits STALL_MS (asking the server for its live memory half-way), then reads the rest.
 */
async function measure(server: ServerProc, token: string, query: string, stallAtByte: number | null = null): Promise<Run> {
  const pid = server.child.pid!;
  const before = await server.live();
  await sleep(200);
  let baseline = 0;
  for (let i = 0; i < 20; i++) {
    baseline = Math.max(baseline, rssOf(pid));
    await sleep(10);
  }
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 5);
  const t0 = nowMs();
  let bytes = 0;
  try {
    const res = await fetch(`${server.url}/v1/export${query}`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`export${query}: ${res.status} ${await res.text()}`);
    const reader = res.body!.getReader();
    let stalled = false;
    let liveDeltaMb: number | undefined;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.length;
      if (stallAtByte !== null && !stalled && bytes >= stallAtByte) {
        stalled = true;
        await sleep(STALL_MS / 2);
        liveDeltaMb = (liveBytes(await server.live()) - liveBytes(before)) / MB;
        await sleep(STALL_MS / 2);
      }
    }
    const ms = nowMs() - t0 - (stalled ? STALL_MS : 0);
    clearInterval(sampler);
    const after = await server.live();
    const run: Run = {
      ms,
      bytes,
      baselineMb: baseline / MB,
      peakDeltaMb: (peak - baseline) / MB,
      heapPeakDeltaMb: (after.peakHeap - liveBytes(before)) / MB,
      nodeCount: Number(res.headers.get('x-svc-node-count') ?? 0),
    };
    if (liveDeltaMb !== undefined) run.liveDeltaMb = liveDeltaMb;
    return run;
  } finally {
    clearInterval(sampler);
  }
}

async function main(): Promise<void> {
  console.log(machineNote());
  const rows: Array<{ nodes: number; plain: Run; gzip: Run; bundle: Run; stalled: Run; late: Run }> = [];
  for (const n of SIZES) {
    const f = copyFixture(await fixture(n), `export-${n}`);
    enablePlugins(f, ['export']);
    const server = await startChild(f.dataDir);
    const { child } = server;
    try {
      await measure(server, f.token, ''); // warm-up
      const plain = await measure(server, f.token, '');
      const gzip = await measure(server, f.token, '?gzip=1');
      const bundle = await measure(server, f.token, '?history=1');
      const stalled = await measure(server, f.token, '', 1);
      const late = await measure(server, f.token, '', Math.floor(plain.bytes * 0.9));
      rows.push({ nodes: n, plain, gzip, bundle, stalled, late });
      const line = (name: string, r: Run) =>
        `  ${String(n).padStart(6)} nodes  ${name.padEnd(12)} ${(r.bytes / MB).toFixed(1).padStart(6)} MB in ${fmtMs(r.ms).padStart(8)}  ` +
        `server RSS ${r.baselineMb.toFixed(0)} MB, peak RSS +${r.peakDeltaMb.toFixed(1)} MB` +
        // a stalled run's mid-stall report resets the heap peak, so it is shown for plain runs only
        (r.liveDeltaMb !== undefined
          ? `, live while stalled +${r.liveDeltaMb.toFixed(2)} MB`
          : `, peak heap+external +${r.heapPeakDeltaMb.toFixed(1)} MB (garbage included)`);
      console.log(line('tar', plain));
      console.log(line('tar.gz', gzip));
      console.log(line('bundle', bundle));
      console.log(line('stall@start', stalled));
      console.log(line('stall@90%', late));
      if (plain.nodeCount !== n + 2) throw new Error(`x-svc-node-count ${plain.nodeCount}, expected ${n + 2}`);
    } finally {
      await stopChild(child);
      rmSync(dirname(f.dataDir), { recursive: true, force: true });
    }
  }
  const at10k = rows.find((r) => r.nodes === 10_000) ?? rows[rows.length - 1]!;
  const peaks = rows.map((r) => Math.max(r.plain.peakDeltaMb, r.gzip.peakDeltaMb, r.stalled.peakDeltaMb));
  const held = rows.map((r) => Math.max(r.stalled.liveDeltaMb!, r.late.liveDeltaMb!));
  const sizes = rows.map((r) => r.plain.bytes / MB);
  // Streaming: what the server holds while a client stalls is a small constant, not a share of the archive.
  const flat = Math.max(...held) < 2 && Math.max(...held) < 0.1 * Math.max(...sizes);
  console.log(
    `export: ${at10k.nodes} nodes: tar ${(at10k.plain.bytes / MB).toFixed(1)} MB in ${fmtMs(at10k.plain.ms)} (peak RSS +${at10k.plain.peakDeltaMb.toFixed(1)} MB), ` +
      `gzip in ${fmtMs(at10k.gzip.ms)}, bundle in ${fmtMs(at10k.bundle.ms)}; for ${rows.map((r) => r.nodes).join(' / ')} nodes ` +
      `(archive ${sizes.map((x) => x.toFixed(1)).join(' / ')} MB) the live memory held by a stalled export is ${held.map((d) => d.toFixed(2)).join(' / ')} MB ` +
      `and the RSS peak ${peaks.map((d) => d.toFixed(1)).join(' / ')} MB (mostly collectable garbage): ${flat ? 'does not grow with node count (streaming)' : 'GROWS with node count'}`,
  );
  recordResult('export', { rows, stall_ms: STALL_MS, flat, live_held_mb: held, rss_peak_mb: peaks });
}

if (process.argv[2] === '--serve') {
  const dir = process.argv[3];
  if (!dir || !existsSync(join(dir, 'tenants'))) throw new Error('usage: export.ts --serve <dataDir>');
  void serve(dir);
} else {
  runIfMain(import.meta.url, main);
}
