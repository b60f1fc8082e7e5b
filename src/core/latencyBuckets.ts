// A fixed-size latency histogram (cumulative since start), for threads without prom-client: the
// WAL thread observes into it and main reads a copy when scraped. Its size never depends on
// how often anyone scrapes (an unscraped server used to keep every fsync sample).

/** Upper bounds (µs) of spool_wal_fsync_latency_seconds (rendered in seconds); +Inf is implied. */
export const FSYNC_BUCKETS_US = [50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 102400] as const;

/** Upper bounds of spool_wal_group_frames (frames per WAL write). */
export const GROUP_FRAMES_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024] as const;

export interface BucketCounts {
  /** Per bucket (not cumulative), one more than the bounds: the last is +Inf. */
  counts: number[];
  sum: number;
  count: number;
}

export class LatencyBuckets {
  readonly data: BucketCounts;

  constructor(readonly bounds: readonly number[]) {
    this.data = { counts: new Array<number>(bounds.length + 1).fill(0), sum: 0, count: 0 };
  }

  observe(v: number): void {
    let i = 0;
    while (i < this.bounds.length && v > this.bounds[i]!) i++;
    this.data.counts[i]!++;
    this.data.sum += v;
    this.data.count++;
  }

  snapshot(): BucketCounts {
    return { counts: [...this.data.counts], sum: this.data.sum, count: this.data.count };
  }
}
