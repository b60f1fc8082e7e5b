// A prom-client metric whose buckets are kept elsewhere (a LatencyBuckets in another thread):
// on scrape it renders the last copy it was given as a Prometheus histogram. Registered with
// the registry like any prom-client metric (it implements the `get()` the registry calls).
import type client from 'prom-client';
import type { BucketCounts } from '../core/latencyBuckets.js';

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

  get(): { name: string; help: string; type: string; aggregator: string; values: { metricName: string; labels: Record<string, string | number>; value: number }[] } {
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    let acc = 0;
    this.bounds.forEach((le, i) => {
      acc += this.data.counts[i]!;
      values.push({ metricName: `${this.name}_bucket`, labels: { le }, value: acc });
    });
    values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf' }, value: this.data.count });
    values.push({ metricName: `${this.name}_sum`, labels: {}, value: this.data.sum });
    values.push({ metricName: `${this.name}_count`, labels: {}, value: this.data.count });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    /* the owning thread's counts are cumulative; nothing to reset here */
  }
}
