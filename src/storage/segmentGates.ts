// SegmentGates: what a topic worker's SegmentStore knows about its topics' sealed segments
// between a cold read and a compaction (docs/ARCHITECTURE.md "Compaction"): the cold reads in
// flight on each sealed segment, the swap or unlink that waits for them, which compactions are
// under way, the relocation of every compacted segment, and which topics' packed first segment
// moved into an own file. No I/O: the store opens, renames and removes the files. Runs in a
// topic worker thread.
// Invariants: a swap or unlink (`exclusive`) runs only while no read of its segment is in
// flight, and reads that arrive meanwhile wait for it, so a read maps offsets with the
// relocation of the file it opens; a gate lives only while something uses it (readers, a swap,
// a compaction), except that a compaction's gate stays until the compaction ends, so the swap
// sees whether the segment went (`gone`) meanwhile.
import type { Relocation } from './compactFrames.js';

/** Cold reads in flight on one sealed segment, and a swap or unlink waiting for them. */
interface SegmentGate {
  readers: number;
  /** A swap or unlink in progress: reads wait for it. */
  busy: Promise<void> | undefined;
  /** Called when the last reader leaves (a swap waits for it). */
  drained: (() => void) | undefined;
  /** Unlinked, or its topic dropped: a compaction must not rename a copy over it any more. */
  gone: boolean;
  /** A compaction of it is under way (the gate stays until it swaps or gives up). */
  compacting: boolean;
}

export class SegmentGates {
  /** Compacted segments: topic id → first seq → where original offsets are in the file now. */
  private readonly relocations = new Map<number, Map<number, Relocation>>();
  /** Sealed segments with reads in flight, a swap under way or a compaction, by `topicId:firstSeq`. */
  private readonly gates = new Map<string, SegmentGate>();
  /** Topics whose packed first segment was compacted into an own file since the start: id → its first seq. */
  private readonly unpacked = new Map<number, number>();
  /** Compactions under way or waiting for their swap, per topic. */
  private readonly compactingTopics = new Map<number, number>();

  /** The relocation of a compacted segment, if the store knows it is one. */
  relocationOf(topicId: number, firstSeq: number): Relocation | undefined {
    return this.relocations.get(topicId)?.get(firstSeq);
  }

  /**
   * A compacted segment file was read (recovery, a wake): its relocation, unless a newer one is
   * known already (a swap that finished while the file was being read).
   */
  noteLoaded(topicId: number, firstSeq: number, relocation: Relocation | undefined): void {
    if (!relocation || this.relocationOf(topicId, firstSeq)) return;
    this.setRelocation(topicId, firstSeq, relocation);
  }

  /** The segment's file is now its compacted copy (`relocation`), or is gone (undefined). */
  setRelocation(topicId: number, firstSeq: number, relocation: Relocation | undefined): void {
    let m = this.relocations.get(topicId);
    if (!relocation) return void m?.delete(firstSeq);
    if (!m) this.relocations.set(topicId, (m = new Map()));
    m.set(firstSeq, relocation);
  }

  /** A compaction of the segment begins: from now on its unlink or its topic's drop is noted for the swap. */
  beginCompaction(topicId: number, firstSeq: number): void {
    const g = this.gate(topicId, firstSeq);
    if (g.compacting) return;
    g.compacting = true;
    this.compactingTopics.set(topicId, (this.compactingTopics.get(topicId) ?? 0) + 1);
  }

  /** The compaction of the segment is over (swapped or given up). */
  endCompaction(topicId: number, firstSeq: number): void {
    const g = this.gates.get(gateKey(topicId, firstSeq));
    if (!g?.compacting) return;
    g.compacting = false;
    const n = (this.compactingTopics.get(topicId) ?? 1) - 1;
    if (n > 0) this.compactingTopics.set(topicId, n);
    else this.compactingTopics.delete(topicId);
    this.gateIdle(topicId, firstSeq, g);
  }

  /** A compaction of the segment is under way or waits for its swap. */
  isCompacting(topicId: number, firstSeq: number): boolean {
    return this.gates.get(gateKey(topicId, firstSeq))?.compacting ?? false;
  }

  /**
   * A compaction of one of the topic's segments is under way or waits for its swap, or its packed
   * first segment lives in an own file since (the topic may not sleep: what a wake or a restart
   * reads of it is not what its actor's segment cursor says).
   */
  compactionHolds(topicId: number): boolean {
    return this.compactingTopics.has(topicId) || this.unpacked.has(topicId);
  }

  /** The topic's packed first segment was compacted into an own file (since the start). */
  isUnpacked(topicId: number): boolean {
    return this.unpacked.has(topicId);
  }

  /** From now on the topic's packed first segment is the own file that starts at `firstSeq`. */
  noteUnpacked(topicId: number, firstSeq: number): void {
    this.unpacked.set(topicId, firstSeq);
  }

  /** The segment was unlinked or its topic dropped since its compaction began. */
  compactionStale(topicId: number, firstSeq: number): boolean {
    return this.gates.get(gateKey(topicId, firstSeq))?.gone ?? true;
  }

  /** Reads of the segment are gated (in flight, or a swap or compaction is under way). */
  isGated(topicId: number, firstSeq: number): boolean {
    return this.gates.has(gateKey(topicId, firstSeq));
  }

  /** The packed segment went with its pack runs: a compaction into an own file must not bring it back. */
  markGone(topicId: number, firstSeq: number): void {
    const g = this.gates.get(gateKey(topicId, firstSeq));
    if (g) g.gone = true;
  }

  /** Runs `op` once no cold read of the segment is in flight; reads arriving meanwhile wait for it. */
  async exclusive<T>(topicId: number, firstSeq: number, op: (g: { gone: boolean }) => Promise<T>): Promise<T> {
    const g = this.gate(topicId, firstSeq);
    while (g.busy) await g.busy;
    let done!: () => void;
    g.busy = new Promise<void>((r) => (done = r));
    try {
      if (g.readers > 0) await new Promise<void>((r) => (g.drained = r));
      g.drained = undefined;
      return await op(g);
    } finally {
      g.busy = undefined;
      done();
      this.gateIdle(topicId, firstSeq, g);
    }
  }

  /** Runs `read` as one of the segment's readers, after any swap or unlink under way. */
  async reading<T>(topicId: number, firstSeq: number, read: () => Promise<T>): Promise<T> {
    const g = this.gate(topicId, firstSeq);
    while (g.busy) await g.busy;
    g.readers++;
    try {
      return await read();
    } finally {
      if (--g.readers === 0) g.drained?.();
      this.gateIdle(topicId, firstSeq, g);
    }
  }

  /** Forgets a deleted topic instance; a compaction of one of its segments sees it gone. */
  dropTopic(topicId: number): void {
    this.relocations.delete(topicId);
    this.unpacked.delete(topicId);
    this.compactingTopics.delete(topicId);
    const prefix = `${topicId}:`;
    for (const [key, g] of this.gates) if (key.startsWith(prefix)) g.gone = true;
  }

  private gate(topicId: number, firstSeq: number): SegmentGate {
    const key = gateKey(topicId, firstSeq);
    let g = this.gates.get(key);
    if (!g) this.gates.set(key, (g = { readers: 0, busy: undefined, drained: undefined, gone: false, compacting: false }));
    return g;
  }

  /** Forgets a gate nobody uses (one under compaction stays: the swap must see whether it went). */
  private gateIdle(topicId: number, firstSeq: number, g: SegmentGate): void {
    if (g.readers === 0 && !g.busy && !g.compacting) this.gates.delete(gateKey(topicId, firstSeq));
  }
}

/** The key of a sealed segment's gate. */
function gateKey(topicId: number, firstSeq: number): string {
  return `${topicId}:${firstSeq}`;
}
