// Recovery of a TopicActor from replayed WAL frames and snapshot parts (DESIGN 2.5, 3.6).
// Replay is idempotent: appends at or below the index's last seq are skipped, reservations take
// a maximum, config frames apply in order, frames of unknown or deleted instances are ignored.
import { decodeJsonBody, FrameView, readAppendHead, readU64 } from '../../wal/frame.js';
import { FrameType } from '../../wal/format.js';
import { indexFrame, placeInSegment } from './appendOp.js';
import type { TopicConfig } from './config.js';
import { TopicInstance } from './instance.js';
import type { TopicActor } from './topicActor.js';

export interface ReplayStats {
  appends: number;
  skipped: number;
}

/** Applies one frame (already CRC-checked) to the actor that owns its topic. */
export function replayFrame(actor: TopicActor, buf: Buffer, f: FrameView, segmentBytes: number, stats: ReplayStats): void {
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
    case FrameType.SEQ_RESERVE: {
      if (cur?.id !== f.topicId) return;
      const ceiling = readU64(buf, f.bodyOff);
      cur.reservedDurable = Math.max(cur.reservedDurable, ceiling);
      return;
    }
    case FrameType.APPEND: {
      if (cur?.id !== f.topicId) return;
      const head = readAppendHead(buf, f);
      if (head.firstSeq <= cur.index.last) {
        stats.skipped++;
        return;
      }
      if (head.firstSeq > cur.index.last + 1) cur.index.pad(cur.index.last + 1, head.firstSeq - 1);
      const frame = Buffer.from(buf.subarray(f.bodyOff - 24, f.bodyOff - 24 + f.size));
      const loc = placeInSegment(cur, head.firstSeq, frame.length, segmentBytes);
      indexFrame(cur, frame, loc, true);
      stats.appends++;
      return;
    }
    default:
      return;
  }
}

/**
 * After the last frame: seqs up to the durable reservation are never reused, so the head moves
 * to max(last replayed seq, reserved) and the seqs in between become padded (silent, uncounted).
 */
export function finishInstanceRecovery(inst: TopicInstance): void {
  const last = inst.index.last;
  let count = 0;
  let bytes = 0;
  for (let s = 1; s <= last; s++) {
    if (inst.index.state(s) === 1) {
      count++;
      bytes += inst.index.bytes(s);
    }
  }
  const head = Math.max(last, inst.reservedDurable);
  if (head > last) inst.index.pad(last + 1, head);
  inst.assigned = head;
  inst.head = head;
  inst.durableHead = head;
  inst.reservedSubmitted = inst.reservedDurable;
  inst.count = count;
  inst.bytes = bytes;
  if (last > 0) inst.lastWriteTsMs = null;
}
