// Recovery progress (main thread): the one fraction `/v0/ready` reports, from the snapshot
// topics the workers have loaded and the WAL thread's replay status, and the log lines, at most
// every `intervalMs`, with the fraction, bytes, frames and topics so far, the elapsed time and an
// ETA extrapolated from the rate so far. Pure, so its arithmetic is unit-tested.

export interface ReplayStatus {
  fraction: number;
  bytes: number;
  frames: number;
  topics: number;
}

/** Snapshot topics whose segments the workers have indexed, of all the snapshot holds. */
export interface TopicsStatus {
  loaded: number;
  total: number;
}

/**
 * Recovery's overall fraction: loading the snapshot's topics (which dominates with many topics)
 * and replaying the WAL after its cut each count for half when the snapshot holds topics, else
 * the WAL is all of it. Callers keep the maximum so it never goes down (docs/API.md "Health, readiness, metrics").
 */
export function recoveryFraction(t: TopicsStatus, walFraction: number): number {
  if (t.total === 0) return walFraction;
  return 0.5 * Math.min(1, t.loaded / t.total) + 0.5 * walFraction;
}

export interface ProgressLine {
  msg: string;
  fields: {
    progress: number;
    bytes: number;
    frames: number;
    topics: number;
    snapshot_topics_loaded: number;
    snapshot_topics: number;
    elapsed_ms: number;
    eta_ms: number | null;
  };
}

export class RecoveryProgressLog {
  private lastMs: number;

  constructor(
    private readonly startedMs: number,
    private readonly intervalMs: number,
  ) {
    this.lastMs = startedMs;
  }

  /** A line when one is due at `nowMs`, else undefined. */
  observe(r: ReplayStatus, t: TopicsStatus, nowMs: number): ProgressLine | undefined {
    if (nowMs - this.lastMs < this.intervalMs) return undefined;
    this.lastMs = nowMs;
    const elapsedMs = nowMs - this.startedMs;
    const fraction = recoveryFraction(t, r.fraction);
    const etaMs = fraction > 0 && fraction < 1 ? Math.round((elapsedMs * (1 - fraction)) / fraction) : null;
    const topics = t.total > 0 ? `, ${t.loaded} of ${t.total} snapshot topics loaded` : '';
    return {
      msg: `recovering: ${(fraction * 100).toFixed(1)} %${topics}, ${(r.fraction * 100).toFixed(1)} % of the WAL`,
      fields: {
        progress: fraction,
        bytes: r.bytes,
        frames: r.frames,
        topics: r.topics,
        snapshot_topics_loaded: t.loaded,
        snapshot_topics: t.total,
        elapsed_ms: elapsedMs,
        eta_ms: etaMs,
      },
    };
  }
}
