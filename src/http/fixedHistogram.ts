// prom-client metrics whose buckets are kept as LatencyBuckets: FixedHistogram renders the last
// copy another thread gave it, LabeledHistogram one series per label value observed on this
// thread. Registered with the registry like any prom-client metric (they implement the `get()`
// the registry calls), rendered as Prometheus histograms on scrape.
import type client from 'prom-client';
import { LatencyBuckets, type BucketCounts } from '../core/latencyBuckets.js';

type Sample = { metricName: string; labels: Record<string, string | number>; value: number };
type MetricGet = { name: string; help: string; type: string; aggregator: string; values: Sample[] };

/** Prometheus histogram samples (cumulative `_bucket`s, `_sum`, `_count`) of one series. */
function bucketValues(name: string, bounds: readonly number[], labels: Record<string, string>, data: BucketCounts): Sample[] {
  const values: Sample[] = [];
  let acc = 0;
  bounds.forEach((le, i) => {
    acc += data.counts[i]!;
    values.push({ metricName: `${name}_bucket`, labels: { ...labels, le }, value: acc });
  });
  values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: data.count });
  values.push({ metricName: `${name}_sum`, labels, value: data.sum });
  values.push({ metricName: `${name}_count`, labels, value: data.count });
  return values;
}

export class FixedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private data: BucketCounts;

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    registry: client.Registry,
  ) {
    this.data = { counts: new Array<number>(bounds.length + 1).fill(0), sum: 0, count: 0 };
    registry.registerMetric(this as unknown as client.Metric);
  }

  /** The cumulative counts as of now (copied from the owning thread). */
  update(data: BucketCounts): void {
    if (data.counts.length === this.bounds.length + 1) this.data = data;
  }

  get(): MetricGet {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: bucketValues(this.name, this.bounds, {}, this.data) };
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

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly label: string,
    private readonly bounds: readonly number[],
    registry: client.Registry,
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
    for (const [value, b] of this.series) values.push(...bucketValues(this.name, this.bounds, { [this.label]: value }, b.data));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.series.clear();
  }
}
