// Recovery of a TopicActor (docs/ARCHITECTURE.md "Recovery order"): an instance from its snapshot part with its
// records indexed from segments, then the WAL frames after the checkpoint. Replay is
// idempotent: appends at or below the index's last seq are skipped, reservations take a
// maximum, config frames apply in order, frames of unknown or deleted instances are ignored.
import { decodeJsonBody, FrameView, readAppendHead, readU64 } from '../../format/frame.js';
import { FrameType } from '../../format/constants.js';
import { activePlacement, indexFrame, placeInSegment, type SegmentLimits } from './appendOp.js';
import type { TopicConfig } from '../../protocol/topicConfig.js';
import type { SegmentPlacement } from '../../format/layout.js';
import { TopicInstance } from './instance.js';
import { SlotState } from './seqIndex.js';
import type { LossRun } from '../../format/topicPart.js';
import { LossLedger } from './lossLedger.js';
import { applyCaps, deleteRecords, deleteSeqs, retentionFields, type MatchSpec } from './retention.js';
import { decodeLeases } from '../../format/leasesFrame.js';
import { finishQueueRecovery, loadQueuePart, queuePart, replayLeases } from '../queue/leasesLog.js';
import type { TopicActor } from './topicActor.js';
import type { DormantTopic, TopicPart } from '../../format/topicPart.js';
import type { LoadedSegment } from '../../storage/segmentLoad.js';
import { walkSegment } from '../../storage/compactFrames.js';
import { probeFrame } from '../../format/frame.js';
import assert from 'node:assert/strict';
import { appliedOf, provenanceOf, replayProgress } from '../router/applied.js';
import { replayRedriveHeader } from '../queue/redriveHeader.js';
import { CorruptionError } from '../../core/corruption.js';

const TWO_32 = 0x1_0000_0000;

export interface ReplayStats {
  appends: number;
  skipped: number;
}

/**
 * An instance from its snapshot part, before its segments are indexed; with `wake`, a sleeping
 * topic's record (dormant.ts), whose watermarks `finishInstanceRecovery` keeps instead of padding.
 */
export function loadInstance(part: TopicPart, wake?: DormantTopic): TopicInstance {
  const inst = new TopicInstance(part.id, part.name, part.config, part.created_ms);
  inst.reserve.durable = part.reserved;
  inst.evictFloor = part.evict_floor ?? 1;
  inst.ledger = LossLedger.from(part.ledger);
  inst.recovery = { deadBelow: part.dead_below ?? 0, deletedRanges: part.deleted ?? [], segmentsLoaded: 0 };
  if (wake) inst.recovery.wake = wake;
  // Deleted records below dead_below must stay dead in every later snapshot too: without this,
  // a restart after a prefix delete wrote no retention part, and the records still in the
  // active segment came back at the restart after that.
  inst.hasDeletes = inst.recovery.deletedRanges.length > 0 || inst.recovery.deadBelow > inst.evictFloor;
  if (inst.queue && part.queue) loadQueuePart(inst.queue, part.queue);
  if (part.routers_applied) appliedOf(inst).load(part.routers_applied);
  for (const [seq, lost] of part.trim_markers ?? []) provenanceOf(inst).markLost(seq, lost);
  return inst;
}

/** The retention state a snapshot keeps for an instance. */
export function retentionPart(inst: TopicInstance): Partial<TopicPart> {
  const applied = inst.applied?.part();
  const markers = inst.provenance !== undefined && inst.provenance.markerCount > 0 ? inst.provenance.markers() : undefined;
  const queue = {
    ...(inst.queue ? { queue: queuePart(inst.queue) } : {}),
    ...(applied ? { routers_applied: applied } : {}),
    ...(markers ? { trim_markers: markers } : {}),
  };
  const retention = retentionFields(inst);
  return retention ? { ...retention, ...queue } : queue;
}

/**
 * Indexes the next segment of an instance being recovered (cold: no texts). Segments come one
 * at a time, in order, so recovery holds at most one segment's bytes.
 */
export function loadSegment(inst: TopicInstance, seg: LoadedSegment): void {
  inst.recovery ??= { deadBelow: 0, deletedRanges: [], segmentsLoaded: 0 };
  const ordinal = inst.recovery.segmentsLoaded++;
  if (ordinal === 0) {
    inst.segment.firstSeqs = [];
    inst.segment.packed = false; // no packed frames came first: the first segment is a file
  } else {
    // The one before is sealed: its bytes as loaded (a compacted file's are not its size: 0).
    const prev = inst.segment.size;
    (inst.segment.sealedBytes ??= [])[ordinal - 1] = prev === TWO_32 ? 0 : prev;
  }
  // A compacted file's frames are indexed at the original bytes their EXTENT stands for, so the
  // records' locations are the ones the topic had before the compaction (and its cold reads map).
  walkSegment(seg.buf, (f, off, at) => {
    const head = readAppendHead(seg.buf, f);
    if (head.firstSeq <= inst.index.last) return;
    if (head.firstSeq > inst.index.last + 1) inst.index.pad(head.firstSeq - 1);
    indexFrame(inst, seg.buf, off, ordinal * TWO_32 + at.orig, false, at.origLen);
  });
  inst.segment.firstSeqs.push(seg.firstSeq);
  inst.segment.firstSeq = seg.firstSeq;
  // A compacted file is never written to again: when it is the newest (its topic's active
  // segment was sealed for compaction and nothing came after), the next frame starts a new one.
  inst.segment.size = seg.relocation ? TWO_32 : seg.size;
  inst.segment.frames = 0; // counted only while the segment is packed
  inst.segment.ordinal = ordinal;
}

/**
 * Indexes the next frame of an instance's packed first segment (cold), from the worker's pack
 * scan, in the order written. Packed frames come before any own segment; the scan passes each
 * seq range once (duplicates are dropped there, so the store's map and this cursor agree).
 */
export function loadPackedFrame(inst: TopicInstance, frame: Buffer, hot = false): void {
  inst.recovery ??= { deadBelow: 0, deletedRanges: [], segmentsLoaded: 0 };
  const p = probeFrame(frame, 0, frame.length, false);
  if (!p.ok) throw new CorruptionError('packed segment', `frame does not decode (${p.reason})`);
  const head = readAppendHead(frame, p.frame);
  const seg = inst.segment;
  if (inst.recovery.segmentsLoaded === 0) {
    inst.recovery.segmentsLoaded = 1;
    seg.firstSeqs = [head.firstSeq];
    seg.firstSeq = head.firstSeq;
    seg.size = 0;
    seg.frames = 0;
    seg.ordinal = 0;
    seg.packed = true;
  }
  assert.ok(seg.ordinal === 0 && seg.packed, `topic ${inst.name}: a packed frame after its own segments`);
  assert.ok(head.firstSeq > inst.index.last, `topic ${inst.name}: packed frame at seq ${head.firstSeq} is not after ${inst.index.last}`);
  if (head.firstSeq > inst.index.last + 1) inst.index.pad(head.firstSeq - 1);
  indexFrame(inst, frame, 0, seg.size, hot);
  seg.size += frame.length;
  seg.frames++;
}

/**
 * Applies one frame (already CRC-checked) to the actor that owns its topic. Returns the frame
 * and its segment placement when it is an append the segments do not hold yet.
 */
export function replayFrame(
  actor: TopicActor,
  buf: Buffer,
  f: FrameView,
  limits: SegmentLimits,
  stats: ReplayStats,
): { place: SegmentPlacement; frame: Buffer } | undefined {
  const cur = actor.current;
  switch (f.type) {
    case FrameType.TOPIC_CREATE: {
      const body = decodeJsonBody(buf, f) as { name: string; config: TopicConfig; created_ms: number };
      if (cur?.id === f.topicId) return;
      actor.current = new TopicInstance(f.topicId, body.name, body.config, body.created_ms);
      return;
    }
    case FrameType.TOPIC_CONFIG: {
      if (cur?.id !== f.topicId) return;
      cur.config = (decodeJsonBody(buf, f) as { config: TopicConfig }).config;
      return;
    }
    case FrameType.TOPIC_DELETE: {
      if (cur?.id === f.topicId) actor.current = undefined;
      return;
    }
    case FrameType.FLOORS: {
      if (cur?.id !== f.topicId) return;
      const body = decodeJsonBody(buf, f) as { evict_floor: number; ledger: LossRun[] };
      if (body.evict_floor > cur.evictFloor) {
        cur.evictFloor = body.evict_floor;
        cur.ledger = LossLedger.from(body.ledger);
      }
      return;
    }
    case FrameType.DELETE: {
      if (cur?.id !== f.topicId) return;
      const body = decodeJsonBody(buf, f) as {
        before_seq: number | null;
        match: MatchSpec | null;
        bound_seq: number;
        seqs?: number[];
        dead_lettered?: number;
      };
      if (body.seqs !== undefined) {
        // Queue acks and dead-letter moves name their seqs; the counter is absolute (idempotent).
        deleteSeqs(cur, body.seqs, true);
        if (cur.queue && body.dead_lettered !== undefined)
          cur.queue.table.deadLettered = Math.max(cur.queue.table.deadLettered, body.dead_lettered);
        return;
      }
      // Re-derives the same set from the same index state (frames replay in order).
      if (deleteRecords(cur, body.before_seq, body.match, body.bound_seq, true) > 0) cur.hasDeletes = true;
      return;
    }
    case FrameType.LEASES: {
      if (cur?.id !== f.topicId || !cur.queue) return;
      replayLeases(cur.queue.table, decodeLeases(buf, f));
      return;
    }
    case FrameType.ROUTER_PROGRESS: {
      if (cur?.id === f.topicId) replayProgress(cur, decodeJsonBody(buf, f) as { r: number; s: number; t: number });
      return;
    }
    case FrameType.SEQ_RESERVE: {
      if (cur?.id !== f.topicId) return;
      cur.reserve.durable = Math.max(cur.reserve.durable, readU64(buf, f.bodyOff));
      return;
    }
    case FrameType.APPEND: {
      if (cur?.id !== f.topicId) return;
      const head = readAppendHead(buf, f);
      // A redrive batch after the checkpoint: its originals may still wait for their delete (a
      // segment already holding the frame changes nothing about that).
      if (head.redrive && cur.queue) replayRedriveHeader(cur.queue, head.redrive);
      if (head.firstSeq <= cur.index.last) {
        stats.skipped++;
        return;
      }
      if (head.firstSeq > cur.index.last + 1) cur.index.pad(head.firstSeq - 1);
      // A copy: the texts stay over these bytes until the host's cache budget evicts them (once
      // the segment holds the frame), and the replay chunk's buffer is reused for the next chunk.
      const frame = Buffer.from(buf.subarray(f.bodyOff - 24, f.bodyOff - 24 + f.size));
      const loc = placeInSegment(cur, head.firstSeq, frame.length, limits);
      indexFrame(cur, frame, 0, loc, true);
      stats.appends++;
      if (cur.config.durability === 'ephemeral') return;
      return { place: activePlacement(cur, frame.length), frame };
    }
    default:
      return;
  }
}

/**
 * After the last frame: seqs up to the durable reservation are never reused, so the head moves
 * to max(last replayed seq, reserved) and the seqs in between become padded (silent, uncounted).
 * A waking topic (`recovery.wake`) keeps the head it went to sleep with: every seq up to it was
 * visible and durable, and its reservation ceiling stays durable above it.
 */
export function finishInstanceRecovery(inst: TopicInstance): void {
  const last = inst.index.last;
  const scratch = inst.recovery ?? { deadBelow: 0, deletedRanges: [], segmentsLoaded: 0 };
  inst.recovery = undefined;
  inst.nodesIfAny?.endRecovery();
  // Retention state from the snapshot and FLOORS frames: records below the floors are gone.
  // Only LIVE slots are visited (nextLive skips holes: a topic padded past a crash is not walked).
  const idx = inst.index;
  const eachLive = (from: number, to: number, fn: (seq: number) => void) => {
    for (let s = idx.nextLive(from, to); s <= to; s = idx.nextLive(s + 1, to)) fn(s);
  };
  eachLive(1, Math.min(scratch.deadBelow - 1, last), (s) => idx.setState(s, s < inst.evictFloor ? SlotState.EVICTED : SlotState.DELETED));
  eachLive(1, Math.min(inst.evictFloor - 1, last), (s) => idx.setState(s, SlotState.EVICTED));
  for (const [from, to] of scratch.deletedRanges) eachLive(from, Math.min(to, last), (s) => idx.setState(s, SlotState.DELETED));
  let count = 0;
  let bytes = 0;
  eachLive(1, last, (s) => {
    count++;
    bytes += idx.bytes(s);
  });
  const wake = scratch.wake;
  if (wake) {
    assert.ok(
      last <= wake.head && count === wake.count && bytes === wake.bytes,
      `topic ${inst.name} woke with ${count} records (${bytes} bytes) up to seq ${last}; it slept with ${wake.count} (${wake.bytes} bytes) up to ${wake.head}`,
    );
    inst.lastTsMs = Math.max(inst.lastTsMs, wake.last_ts_ms);
    inst.lastWriteTsMs = wake.last_write_ms;
    inst.lastReadTsMs = wake.last_read_ms;
    inst.lastConsumedMs = wake.last_consumed_ms;
  }
  const head = wake ? wake.head : Math.max(last, inst.reserve.durable);
  inst.index.pad(head);
  inst.assigned = head;
  inst.head = head;
  inst.durableHead = head;
  inst.reserve.submitted = inst.reserve.durable;
  inst.count = count;
  inst.bytes = bytes;
  // A cap may have been tightened or a batch landed after the last FLOORS frame: re-apply.
  applyCaps(inst);
  inst.provenance?.dropMarkersBelow(inst.evictFloor); // replayed frames of markers evicted past
  inst.index.dropBelow(inst.earliest());
  if (inst.queue) finishQueueRecovery(inst, inst.queue.table);
}
