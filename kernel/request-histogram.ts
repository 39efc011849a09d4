/**
 * The request duration histogram, kept outside prom-client's Histogram: a prom-client child's
 * `observe` still builds a label object, validates the labels and hashes them on every call (the
 * child only saves the caller the `labels()` lookup), which was about 2% of a node read's CPU.
 * Here a series is found once per method, route and status (kernel/http-common.ts keeps it) and
 * an observation is a bucket search and three additions.
 *
 * It is registered in the kernel's prom-client registry as a metric of its own (`registerMetric`
 * with `get` and `getForPromString`, what the registry reads from every metric), so `/metrics`
 * prints it exactly as prom-client prints a Histogram: the cumulative `_bucket` lines with `le`
 * first, then `+Inf`, `_sum` and `_count`, one group per series in the order they were first seen.
 */
import type { Registry } from 'prom-client';

type Labels = Record<string, string>;

/** One label set's counts: per bucket (not cumulative; the last one is `+Inf`), sum and count. */
export class HistogramSeries {
  readonly buckets: number[];
  sum = 0;
  count = 0;
  constructor(
    readonly labels: Labels,
    private readonly bounds: readonly number[],
  ) {
    this.buckets = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.buckets[i]!++;
    this.sum += value;
    this.count++;
  }
}

interface Sample {
  labels: Record<string, string | number>;
  sharedLabels: Labels;
  value: number;
  metricName: string;
}

export class RequestHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** The series of one label set, made on first use (every label name must be given). */
  child(labels: Labels): HistogramSeries {
    const key = this.labelNames.map((n) => labels[n] ?? '').join('\u0000');
    let s = this.series.get(key);
    if (!s) {
      const own: Labels = {};
      for (const n of this.labelNames) own[n] = labels[n] ?? '';
      this.series.set(key, (s = new HistogramSeries(own, this.bounds)));
    }
    return s;
  }

  /** What prom-client's registry prints: the series' labels shared by its lines, `le` first. */
  getForPromString(): { name: string; help: string; type: string; aggregator: string; values: Sample[] } {
    const values: Sample[] = [];
    for (const s of this.series.values()) {
      let acc = 0;
      this.bounds.forEach((bound, i) => {
        acc += s.buckets[i]!;
        values.push({ labels: { le: bound }, sharedLabels: s.labels, value: acc, metricName: `${this.name}_bucket` });
      });
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_bucket` },
        { labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** The same samples with the series' labels merged in (prom-client's JSON form). */
  get(): {
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: Array<Omit<Sample, 'sharedLabels'> & { exemplar: null | undefined }>;
  } {
    const data = this.getForPromString();
    return {
      ...data,
      // prom-client's own form: no shared labels, and an exemplar slot (null on a bucket line)
      values: data.values.map(({ labels, sharedLabels, ...rest }) => ({
        ...rest,
        labels: { ...labels, ...sharedLabels },
        exemplar: rest.metricName.endsWith('_bucket') ? null : undefined,
      })),
    };
  }

  /** Zeroes every series (they stay listed: callers keep their series, found once). */
  reset(): void {
    for (const s of this.series.values()) {
      s.buckets.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }
}
