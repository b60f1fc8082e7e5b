// The stage clock's collector on main (debug setting SERVICE_STAGE_CLOCK; docs/PERFORMANCE.md
// "Stage clock"): the stamps of each finished request (main's, and those its worker sent back
// with the result) become per-stage durations, kept per kind of request (route, plus a tag a
// handler may add, e.g. a long-poll diff), and summarized as p50/p99 on demand at
// GET /v0/debug/stages. Bounded: the newest SAMPLES_MAX durations per kind and stage.
import type { RequestStamps } from '../core/stageClock.js';

const SAMPLES_MAX = 100_000;

/** The stages, in request order: [name, from stamp, to stamp]. */
const STAGES: readonly [string, keyof RequestStamps, keyof RequestStamps][] = [
  ['http_in', 'recv', 'body'],
  ['to_channel', 'body', 'post'],
  ['cross_in', 'post', 'wrecv'],
  ['step', 'wrecv', 'stepped'],
  ['to_wal', 'stepped', 'walSubmit'],
  ['wal', 'walSubmit', 'walWritten'],
  ['to_reply', 'walWritten', 'replyPost'],
  ['cross_out', 'replyPost', 'mrecv'],
  ['http_out', 'mrecv', 'sent'],
  ['total', 'recv', 'sent'],
];

/** A ring of the newest durations. */
class Ring {
  private readonly xs = new Float64Array(SAMPLES_MAX);
  count = 0;
  add(x: number): void {
    this.xs[this.count++ % SAMPLES_MAX] = x;
  }
  summary(): { n: number; p50_us: number; p99_us: number; mean_us: number } {
    const n = Math.min(this.count, SAMPLES_MAX);
    const s = this.xs.slice(0, n).sort();
    let sum = 0;
    for (const x of s) sum += x;
    const q = (p: number) => Math.round(s[Math.min(n - 1, Math.floor(p * n))]! * 10) / 10;
    return { n, p50_us: q(0.5), p99_us: q(0.99), mean_us: Math.round((sum / n) * 10) / 10 };
  }
}

export class StageStats {
  private readonly kinds = new Map<string, Map<string, Ring>>();

  /** One finished request: its kind and stamps. */
  record(kind: string, t: RequestStamps): void {
    let stages = this.kinds.get(kind);
    if (!stages) this.kinds.set(kind, (stages = new Map()));
    for (const [name, from, to] of STAGES) {
      // to_reply starts at the WAL write when the request had one, else at the step.
      const a = from === 'walWritten' && t.walWritten === undefined ? t.stepped : t[from];
      const b = t[to];
      if (a === undefined || b === undefined) continue;
      let ring = stages.get(name);
      if (!ring) stages.set(name, (ring = new Ring()));
      ring.add(b - a);
    }
  }

  summary(): Record<string, Record<string, ReturnType<Ring['summary']>>> {
    const out: Record<string, Record<string, ReturnType<Ring['summary']>>> = {};
    for (const [kind, stages] of this.kinds) {
      out[kind] = {};
      for (const [name] of STAGES) {
        const r = stages.get(name);
        if (r) out[kind][name] = r.summary();
      }
    }
    return out;
  }

  reset(): void {
    this.kinds.clear();
  }
}
