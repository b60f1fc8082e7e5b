// Compaction's decisions about one topic (docs/ARCHITECTURE.md "Compaction"), pure functions of
// its TopicInstance: how many bytes of a seq range still live, whether a sealed segment is dead
// enough to rewrite, and whether the active one is worth sealing so that it can be. Read on the
// topic worker between actor steps (src/topicThread/compaction.ts), and by the queue model's simulated
// host (test/support/simHost.ts), so that both decide alike.
import type { TopicInstance } from '../actors/topic/instance.js';

/** What a live record is reckoned to take in a segment beyond its payload (its 12-byte header and a share of its frame's). */
export const RECORD_OVERHEAD_BYTES = 16;

/**
 * An active segment is sealed for compaction only once it holds at least this share of the size
 * at which it would roll anyway, so sealing at most multiplies by this the segment files a topic
 * goes through (a busy queue acked at once used to get a new file per checkpoint).
 */
export const SEAL_SHARE = 4;

/** Where a topic's segments roll on their own (the actor's SegmentLimits). */
export interface RollBytes {
  segmentBytes: number;
  /** SERVICE_PACK_BYTES (0: no packs). */
  packBytes: number;
}

/** Live bytes of seqs [from, to] of a topic, as a segment holds them (payload plus overhead). */
export function liveEstimate(inst: TopicInstance, from: number, to: number): number {
  const idx = inst.index;
  let bytes = 0;
  for (let s = idx.nextLive(from, to); s <= to; s = idx.nextLive(s + 1, to)) bytes += idx.bytes(s) + RECORD_OVERHEAD_BYTES;
  return bytes;
}

/** A segment of `size` bytes holding `live` live bytes is below the live share that triggers a rewrite. */
export function mostlyDead(live: number, size: number, livePercent: number): boolean {
  return live * 100 < livePercent * size;
}

/**
 * The active segment should be sealed (the `seal` input) so that the next round can rewrite it:
 * nothing in flight, big enough (SEAL_SHARE of where it would roll; any size without `roll`),
 * and mostly dead. A packed one too: sealed, it can move to the topic's own file and stop
 * pinning its pack.
 */
export function worthSealing(inst: TopicInstance, livePercent: number, roll: RollBytes | undefined): boolean {
  const seg = inst.segment;
  if (inst.assigned !== inst.head || seg.size === 0 || seg.firstSeq > inst.head) return false;
  const packed = seg.ordinal === 0 && seg.packed;
  if (roll && seg.size * SEAL_SHARE < (packed ? roll.packBytes : roll.segmentBytes)) return false;
  return mostlyDead(liveEstimate(inst, seg.firstSeq, inst.head), seg.size, livePercent);
}

/**
 * Sealed segments (by ordinal) that may be rewritten: not reclaimed, not wholly below the first
 * live seq (the next checkpoint unlinks those), each with its seq range [from, end).
 */
export function sealedCandidates(inst: TopicInstance): { ordinal: number; from: number; end: number }[] {
  const segs = inst.segment.firstSeqs;
  const earliest = inst.earliest();
  const out: { ordinal: number; from: number; end: number }[] = [];
  for (let k = inst.segment.reclaimed; k < segs.length - 1; k++) {
    const [from, end] = [segs[k]!, segs[k + 1]!];
    if (end > earliest) out.push({ ordinal: k, from, end });
  }
  return out;
}
