// Provenance of forwarded records (docs/ARCHITECTURE.md "Routers": loop prevention by origin and hop count): the origin topic and hop
// count of each copy a router wrote into this topic, kept as runs of consecutive seqs (a copy
// batch is usually one run). A seq in no run was written here directly: origin is this topic,
// 0 hops. Never on the wire; rebuilt at recovery from the APPEND frames' forward headers.
// Owned by one TopicInstance; pure.
import type { OriginRun } from '../../protocol/messages/router.js';

/** Runs kept at most; the oldest go first (their records are the first to leave the topic). */
const RUNS_MAX = 65_536;

export class Provenance {
  private readonly first: number[] = [];
  private readonly last: number[] = [];
  private readonly origin: string[] = [];
  private readonly hops: number[] = [];
  /**
   * Trim markers (docs/API.md "Routers" `source_trim`), ascending by seq: the dest seq of each
   * marker and the source records lost before they were forwarded. Readers crossing a marker get
   * a tombstone; the slot itself is MARKER, not a record. Kept until retention evicts past them
   * (`dropMarkersBelow`), and in snapshots, since a marker's frame may be compacted away.
   */
  private readonly markerSeqs: number[] = [];
  private readonly markerMissed: number[] = [];

  markLost(seq: number, count: number): void {
    const i = this.lowerBound(seq);
    if (this.markerSeqs[i] === seq) return; // replayed twice (a snapshot and its frame)
    this.markerSeqs.splice(i, 0, seq);
    this.markerMissed.splice(i, 0, count);
  }

  /** The records lost behind the marker at `seq`, or undefined when `seq` is no marker. */
  lostAt(seq: number): number | undefined {
    const i = this.lowerBound(seq);
    return this.markerSeqs[i] === seq ? this.markerMissed[i] : undefined;
  }

  /** The first marker in [from, to], or to + 1 when none. */
  firstMarkerIn(from: number, to: number): number {
    const s = this.markerSeqs[this.lowerBound(from)];
    return s !== undefined && s <= to ? s : to + 1;
  }

  /** True when a trim marker lies in [from, to]. */
  hasLostIn(from: number, to: number): boolean {
    return this.firstMarkerIn(from, to) <= to;
  }

  /** The records lost behind the markers in [from, to]. */
  lostIn(from: number, to: number): number {
    let n = 0;
    for (let i = this.lowerBound(from); i < this.markerSeqs.length && this.markerSeqs[i]! <= to; i++) n += this.markerMissed[i]!;
    return n;
  }

  get markerCount(): number {
    return this.markerSeqs.length;
  }

  /** The markers as a snapshot keeps them: [seq, lost] pairs, ascending. */
  markers(): [number, number][] {
    return this.markerSeqs.map((s, i) => [s, this.markerMissed[i]!]);
  }

  /** Forgets markers below `seq` (the evict floor: a cap or TTL tombstone covers them). */
  dropMarkersBelow(seq: number): void {
    const n = this.lowerBound(seq);
    if (n === 0) return;
    this.markerSeqs.splice(0, n);
    this.markerMissed.splice(0, n);
  }

  /** Index of the first marker at or above `seq`. */
  private lowerBound(seq: number): number {
    let lo = 0;
    let hi = this.markerSeqs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.markerSeqs[mid]! < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Records the runs of a copy batch whose first record got `firstSeq`. */
  add(firstSeq: number, runs: readonly OriginRun[]): void {
    let seq = firstSeq;
    for (const [count, origin, hops] of runs) {
      if (count <= 0) continue;
      if (this.first.length > 0 && seq <= this.last[this.last.length - 1]!) return; // replayed twice
      this.first.push(seq);
      this.last.push(seq + count - 1);
      this.origin.push(origin);
      this.hops.push(hops);
      seq += count;
    }
    if (this.first.length > RUNS_MAX) this.dropFront(this.first.length - RUNS_MAX);
  }

  /** Origin and hops of `seq`, or undefined when it was written to this topic directly. */
  of(seq: number): { origin: string; hops: number } | undefined {
    let lo = 0;
    let hi = this.first.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.last[mid]! < seq) lo = mid + 1;
      else if (this.first[mid]! > seq) hi = mid - 1;
      else return { origin: this.origin[mid]!, hops: this.hops[mid]! };
    }
    return undefined;
  }

  /** Forgets runs wholly below `seq` (records gone from the topic). */
  dropBelow(seq: number): void {
    let n = 0;
    while (n < this.last.length && this.last[n]! < seq) n++;
    if (n > 0) this.dropFront(n);
  }

  get size(): number {
    return this.first.length;
  }

  private dropFront(n: number): void {
    this.first.splice(0, n);
    this.last.splice(0, n);
    this.origin.splice(0, n);
    this.hops.splice(0, n);
  }
}
