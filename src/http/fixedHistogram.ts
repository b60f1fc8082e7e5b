// prom-client metrics whose buckets are kept as LatencyBuckets: FixedHistogram renders the last
// copy another thread gave it, LabeledHistogram one series per label value observed on this
// thread. Registered with the registry like any prom-client metric (they implement the `get()`
// the registry calls), rendered as Prometheus histograms on scrape. Durations are observed in
// the unit the caller measures (µs on the WAL thread, ms on main) and rendered in seconds, the
// Prometheus convention: bounds and sum are divided by `unitsPerSecond` when scraped, so the
// observing path does no arithmetic.
import type client from 'prom-client';
import { LatencyBuckets, type BucketCounts } from '../core/latencyBuckets.js';

type Sample = { metricName: string; labels: Record<string, string | number>; value: number };
type MetricGet = { name: string; help: string; type: string; aggregator: string; values: Sample[] };

/**
 * Prometheus histogram samples (cumulative `_bucket`s, `_sum`, `_count`) of one series; bounds
 * and sum divided by `divisor` (1000 renders ms as seconds; 1 leaves a count as it is).
 */
function bucketValues(
  name: string,
  bounds: readonly number[],
  divisor: number,
  labels: Record<string, string>,
  data: BucketCounts,
): Sample[] {
  const values: Sample[] = [];
  let acc = 0;
  bounds.forEach((bound, i) => {
    acc += data.counts[i]!;
    values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: bound / divisor }, value: acc });
  });
  values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: data.count });
  values.push({ metricName: `${name}_sum`, labels, value: data.sum / divisor });
  values.push({ metricName: `${name}_count`, labels, value: data.count });
  return values;
}

export class FixedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private data: BucketCounts;

  /** `unitsPerSecond`: 1e6 when the owning thread observes µs, 1 for a histogram of counts. */
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    registry: client.Registry,
    private readonly unitsPerSecond = 1,
  ) {
    this.data = { counts: new Array<number>(bounds.length + 1).fill(0), sum: 0, count: 0 };
    registry.registerMetric(this as unknown as client.Metric);
  }

  /** The cumulative counts as of now (copied from the owning thread). */
  update(data: BucketCounts): void {
    if (data.counts.length === this.bounds.length + 1) this.data = data;
  }

  get(): MetricGet {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: bucketValues(this.name, this.bounds, this.unitsPerSecond, {}, this.data),
    };
  }

  reset(): void {
    /* the owning thread's counts are cumulative; nothing to reset here */
  }
}

/**
 * A histogram with one label whose series are LatencyBuckets kept by the caller (observed with
 * a Map lookup and a bucket scan, no label hashing per observation); rendered on scrape.
 */
export class LabeledHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, LatencyBuckets>();

  /** `bounds` and observations in the caller's unit; `unitsPerSecond` 1000 when that is ms. */
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly label: string,
    private readonly bounds: readonly number[],
    registry: client.Registry,
    private readonly unitsPerSecond = 1,
  ) {
    registry.registerMetric(this as unknown as client.Metric);
  }

  observe(labelValue: string, v: number): void {
    let b = this.series.get(labelValue);
    if (!b) this.series.set(labelValue, (b = new LatencyBuckets(this.bounds)));
    b.observe(v);
  }

  get(): MetricGet {
    const values: Sample[] = [];
    for (const [value, b] of this.series)
      values.push(...bucketValues(this.name, this.bounds, this.unitsPerSecond, { [this.label]: value }, b.data));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.series.clear();
  }
}
