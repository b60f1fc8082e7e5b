// The loss ledger (docs/ARCHITECTURE.md "Retention"): why ranges of seqs were lost involuntarily. A short list of runs
// [from, to, reason, count], appended at the front-removal point; neighbours with the same
// reason merge, and past 64 runs the oldest merge as `mixed`. Reasons are best-effort; the
// range is what counts. Persisted in snapshots and FLOORS frames.

import type { LossReason, LossRun } from '../../format/topicPart.js';

const RUNS_MAX = 64;
/** The runs of every ledger that has none: shared and frozen (most topics never lose a record). */
const NO_RUNS: LossRun[] = Object.freeze([]) as unknown as LossRun[];

export class LossLedger {
  runs: LossRun[] = NO_RUNS;

  /** Records the involuntary loss of `seq` (runs only grow at the high end). */
  add(seq: number, reason: LossReason): void {
    if (this.runs === NO_RUNS) this.runs = [];
    const last = this.runs[this.runs.length - 1];
    if (last && last.reason === reason && seq >= last.from) {
      last.to = Math.max(last.to, seq);
      last.count++;
      return;
    }
    this.runs.push({ from: seq, to: seq, reason, count: 1 });
    if (this.runs.length > RUNS_MAX) {
      const [a, b] = this.runs.splice(0, 2) as [LossRun, LossRun];
      this.runs.unshift({ from: a.from, to: b.to, reason: a.reason === b.reason ? a.reason : 'mixed', count: a.count + b.count });
    }
  }

  /** The reason and approximate count of involuntary loss within [from, to]. */
  describe(from: number, to: number): { reason: LossReason; count: number } {
    let reason: LossReason | undefined;
    let count = 0;
    for (const r of this.runs) {
      if (r.to < from || r.from > to) continue;
      reason = reason === undefined || reason === r.reason ? r.reason : 'mixed';
      // A run partly inside the range counts in proportion (eviction is lazy; an estimate).
      const span = r.to - r.from + 1;
      const overlap = Math.min(r.to, to) - Math.max(r.from, from) + 1;
      count += span === overlap ? r.count : Math.round((r.count * overlap) / span);
    }
    return { reason: reason ?? 'cap', count };
  }

  toJSON(): LossRun[] {
    return this.runs;
  }

  static from(runs: LossRun[] | undefined): LossLedger {
    const l = new LossLedger();
    if (runs && runs.length > 0) l.runs = runs.map((r) => ({ ...r }));
    return l;
  }
}
