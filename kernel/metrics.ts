/**
 * Prometheus metrics (prom-client). One registry per kernel (tests run several servers in one
 * process), served as text at `GET /metrics` when enabled (see docs/operator.md). The kernel
 * observes requests, writes, the commit journal, checkpoints and the sandbox; plugins add
 * gauges through `gauge()` (for example the leases plugin's live leases), so no plugin imports
 * prom-client itself.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { HookCall, HookOutcome, Sandbox } from '../sandbox/types.js';
import { RequestHistogram } from './request-histogram.js';

/** What the git store reports about its durable path (seconds). */
export interface StoreObserver {
  journalSync(seconds: number): void;
  checkpoint(seconds: number): void;
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class KernelMetrics {
  readonly registry = new Registry();
  readonly httpDuration: RequestHistogram;
  readonly writeQueueDepth: Gauge<'tenant'>;
  readonly commitDuration: Histogram<'tenant'>;
  readonly journalSync: Histogram<'tenant'>;
  readonly checkpointDuration: Histogram<'tenant'>;
  readonly sandboxCalls: Counter<'outcome'>;
  readonly authFailures: Counter;
  private readonly depth = new Map<string, number>();

  constructor(openTenants: () => number) {
    collectDefaultMetrics({ register: this.registry, prefix: 'workgraph_' });
    const registers = [this.registry];
    this.httpDuration = new RequestHistogram(
      'workgraph_http_request_duration_seconds',
      'HTTP request duration by route pattern (never the raw path), method and status',
      ['method', 'route', 'status'],
      LATENCY_BUCKETS,
      this.registry,
    );
    this.writeQueueDepth = new Gauge({
      name: 'workgraph_write_queue_depth',
      help: 'writes queued or running in the tenant write queue',
      labelNames: ['tenant'],
      registers,
    });
    this.commitDuration = new Histogram({
      name: 'workgraph_commit_duration_seconds',
      help: 'time from a write entering the tenant queue to its durable acknowledgement',
      labelNames: ['tenant'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.journalSync = new Histogram({
      name: 'workgraph_journal_fsync_duration_seconds',
      help: 'commit journal fdatasync, one per group of commits written while the previous one ran (the acknowledgement point)',
      labelNames: ['tenant'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.checkpointDuration = new Histogram({
      name: 'workgraph_checkpoint_duration_seconds',
      help: 'checkpoint: acknowledged commits written out as one pack, the ref moved, the journal emptied',
      labelNames: ['tenant'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.sandboxCalls = new Counter({
      name: 'workgraph_sandbox_calls_total',
      help: 'schema hook calls in the sandbox by outcome: allowed, denied, or the failure kind (timeout, memory, threw, compile, crashed, malformed)',
      labelNames: ['outcome'],
      registers,
    });
    this.authFailures = new Counter({
      name: 'workgraph_auth_failures_total',
      help: 'requests refused 401 (missing, malformed, unknown, expired or revoked credentials)',
      registers,
    });
    new Gauge({
      name: 'workgraph_tenants_open',
      help: 'tenants this process serves',
      registers,
      collect() {
        this.set(openTenants());
      },
    });
  }

  /** A gauge whose value is read at scrape time, one sample per label set `read` returns. */
  gauge(name: string, help: string, labelNames: string[], read: () => Array<{ labels: Record<string, string>; value: number }>): void {
    new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const s of read()) this.set(s.labels, s.value);
      },
    });
  }

  /** Wraps one write through the tenant queue: depth while it waits and runs, latency to its ack. */
  async trackWrite<T>(tenant: string, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    this.depth.set(tenant, (this.depth.get(tenant) ?? 0) + 1);
    this.writeQueueDepth.set({ tenant }, this.depth.get(tenant)!);
    try {
      return await run();
    } finally {
      const left = (this.depth.get(tenant) ?? 1) - 1;
      this.depth.set(tenant, left);
      this.writeQueueDepth.set({ tenant }, left);
      this.commitDuration.observe({ tenant }, (performance.now() - started) / 1000);
    }
  }

  storeObserver(tenant: string): StoreObserver {
    return {
      journalSync: (s) => this.journalSync.observe({ tenant }, s),
      checkpoint: (s) => this.checkpointDuration.observe({ tenant }, s),
    };
  }

  /** The same sandbox, with every call's outcome counted (a hook answering allow/ok false is a denial). */
  observeSandbox(sandbox: Sandbox): Sandbox {
    const count = (outcome: HookOutcome) => {
      if (!outcome.ok) return this.sandboxCalls.inc({ outcome: outcome.kind });
      const v = outcome.value as { allow?: unknown; ok?: unknown } | null;
      const denied = v !== null && typeof v === 'object' && (v.allow === false || v.ok === false);
      this.sandboxCalls.inc({ outcome: denied ? 'denied' : 'allowed' });
    };
    return {
      run: async (call: HookCall) => {
        const outcome = await sandbox.run(call);
        count(outcome);
        return outcome;
      },
      stats: () => sandbox.stats(),
      ready: () => sandbox.ready(),
      close: () => sandbox.close(),
    };
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
