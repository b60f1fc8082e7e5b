// The read pipeline (docs/ARCHITECTURE.md "Reads") shared by diff (and later watch and claim): from an exclusive
// cursor, judge gaps, then scan forward skipping dead and node-filtered slots, stopping at the
// limit, the byte budget or the head. Pure; runs inside one actor step.
import type { TopicInstance } from './instance.js';
import { SlotState, type SlotRead } from './seqIndex.js';
import { RenderItem } from './render.js';

export interface ReadParams {
  fromSeq: number;
  limit: number;
  maxBytes: number;
  /** Node ids to omit (already mapped through the instance's intern table), or null. */
  skipNodeIds: Set<number> | null;
  /** Last seq the read may reach (default: the head); strong watch reads stop at the durable head. */
  untilSeq?: number;
}

export interface Tombstone {
  gap_from: number;
  gap_to: number;
  reason: string;
  missed_estimate: number;
  earliest_seq: number;
  head_seq: number;
}

export interface ReadResult {
  items: RenderItem[];
  /** Seqs whose text is not in memory (cold): the caller fetches them and reads again. */
  cold: number[];
  nextFromSeq: number;
  scanned: number;
  tombstone: Tombstone | null;
  /** The cursor the scan started from: `fromSeq`, or `gap_to` after a tombstone. */
  scanFrom: number;
}

/** The scan's view of the slot in hand (one per thread: a read never spans two steps). */
const slot: SlotRead = { state: 0, bytes: 0, tsMs: 0, nodeId: 0, textBuf: undefined, textOff: 0 };

export function readFrom(inst: TopicInstance, p: ReadParams): ReadResult {
  const head = inst.head;
  const earliest = inst.earliest();
  let cursor = p.fromSeq;
  let tombstone: Tombstone | null = null;
  if (cursor > head) {
    // The cursor comes from an earlier instance of this topic (docs/API.md "Diff").
    const gapTo = earliest - 1;
    tombstone = {
      gap_from: 1,
      gap_to: gapTo,
      reason: 'recreated',
      missed_estimate: Math.max(0, gapTo),
      earliest_seq: earliest,
      head_seq: head,
    };
    cursor = earliest - 1;
  } else if (cursor + 1 < inst.evictFloor) {
    // Involuntary loss crossed the cursor: one tombstone for the whole gap, then resume.
    const gapFrom = cursor + 1;
    const gapTo = earliest - 1;
    const lost = inst.ledger.describe(gapFrom, inst.evictFloor - 1);
    // A router dest's trim markers between the floor and the first live record are in the gap too.
    const trimmed = inst.provenance?.lostIn(inst.evictFloor, gapTo) ?? 0;
    tombstone = {
      gap_from: gapFrom,
      gap_to: gapTo,
      reason: trimmed > 0 ? 'mixed' : lost.reason,
      missed_estimate: lost.count + trimmed,
      earliest_seq: earliest,
      head_seq: head,
    };
    cursor = gapTo;
  } else if (cursor + 1 < earliest) {
    // Purely deleted or padded gap: move past it silently, up to its first trim marker if any.
    cursor = (inst.provenance?.firstMarkerIn(cursor + 1, earliest - 1) ?? earliest) - 1;
  }
  let scanFrom = tombstone ? cursor : p.fromSeq;
  // Trim markers of a router dest (docs/API.md "Routers" `source_trim`): a tombstone, never a record.
  const markers = inst.provenance !== undefined && inst.provenance.markerCount > 0 ? inst.provenance : undefined;
  const until = Math.min(head, p.untilSeq ?? head);
  const items: RenderItem[] = [];
  const cold: number[] = [];
  let bytes = 0;
  let scanned = 0;
  let seq = cursor + 1;
  for (; seq <= until; seq++) {
    if (items.length + cold.length >= p.limit) break;
    scanned++;
    if (inst.index.readSlot(seq, slot) !== SlotState.LIVE) {
      const missed = markers?.lostAt(seq);
      if (missed === undefined) continue;
      // One tombstone per read: a marker after records (or after another gap) waits for the next.
      if (tombstone || items.length + cold.length > 0) break;
      tombstone = { gap_from: seq, gap_to: seq, reason: 'source_trim', missed_estimate: missed, earliest_seq: earliest, head_seq: head };
      scanFrom = seq;
      // Below the first live record all else is deleted: on to the next marker or that record.
      if (seq + 1 < earliest) seq = markers!.firstMarkerIn(seq + 1, earliest - 1) - 1;
      continue;
    }
    if (p.skipNodeIds !== null && p.skipNodeIds.has(slot.nodeId)) continue;
    const size = slot.bytes;
    if (items.length + cold.length > 0 && bytes + size > p.maxBytes) break;
    bytes += size;
    if (slot.textBuf === undefined) cold.push(seq);
    else items.push(new RenderItem(seq, slot.tsMs, slot.textBuf, slot.textOff, size));
  }
  return { items, cold, nextFromSeq: seq - 1, scanned, tombstone, scanFrom };
}

/** The read begins with a record whose text is in memory (before its first cold one). */
export function startsWarm(r: ReadResult): boolean {
  return r.items.length > 0 && r.items[0]!.seq < r.cold[0]!;
}

/** The read cut short before its first cold record: what can be answered without the disk. */
export function warmPrefix(r: ReadResult): ReadResult {
  const firstCold = r.cold[0]!;
  let n = 0;
  while (n < r.items.length && r.items[n]!.seq < firstCold) n++;
  return { ...r, items: r.items.slice(0, n), cold: [], nextFromSeq: firstCold - 1 };
}
