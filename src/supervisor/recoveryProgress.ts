// The recovery progress log lines (main thread): given the WAL thread's replay status, a line
// at most every `intervalMs` with the fraction, bytes, frames and topics so far, the elapsed
// time and an ETA extrapolated from the rate so far. Pure, so its arithmetic is unit-tested.

export interface ReplayStatus {
  fraction: number;
  bytes: number;
  frames: number;
  topics: number;
}

export interface ProgressLine {
  msg: string;
  fields: { progress: number; bytes: number; frames: number; topics: number; elapsed_ms: number; eta_ms: number | null };
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
  observe(r: ReplayStatus, nowMs: number): ProgressLine | undefined {
    if (nowMs - this.lastMs < this.intervalMs) return undefined;
    this.lastMs = nowMs;
    const elapsedMs = nowMs - this.startedMs;
    const etaMs = r.fraction > 0 && r.fraction < 1 ? Math.round((elapsedMs * (1 - r.fraction)) / r.fraction) : null;
    return {
      msg: `recovering: ${(r.fraction * 100).toFixed(1)} % of the WAL`,
      fields: { progress: r.fraction, bytes: r.bytes, frames: r.frames, topics: r.topics, elapsed_ms: elapsedMs, eta_ms: etaMs },
    };
  }
}
