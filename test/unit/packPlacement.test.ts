// Where a topic's frames go (src/actors/topic/appendOp.ts placeInSegment, docs/ARCHITECTURE.md
// "Pack files"): the packed first segment rolls to an own file once a frame would pass
// SERVICE_PACK_BYTES, or past PACK_FRAMES_FROM_BYTES once it holds PACK_FRAMES_MAX frames (small
// frames roll at 64 KiB as before, batches stay packed up to SERVICE_PACK_BYTES); a recovery or a wake that feeds the
// packed frames back (loadPackedFrame) counts them, so placement goes on where it left off; and
// a topic sleeps only while a wake would read at most SLEEP_BYTES_MAX: its packed segment and at
// most one own segment file after it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PACK_FRAMES_FROM_BYTES, PACK_FRAMES_MAX, placeInSegment, type SegmentLimits } from '../../src/actors/topic/appendOp.js';
import { defaultConfig } from '../../src/protocol/topicConfig.js';
import { dormantOf, SLEEP_BYTES_MAX, type StoredFrames } from '../../src/actors/topic/dormant.js';
import { TopicInstance } from '../../src/actors/topic/instance.js';
import { loadPackedFrame } from '../../src/actors/topic/replay.js';
import { encodeAppend, type AppendRecordInput } from '../../src/format/frame.js';

const TWO_32 = 0x1_0000_0000;
const LIMITS: SegmentLimits = {
  segmentBytes: 64 << 20,
  packBytes: 1 << 20,
  packFramesMax: PACK_FRAMES_MAX,
  packFramesFromBytes: PACK_FRAMES_FROM_BYTES,
};

function record(data: string): AppendRecordInput {
  const bytes = Buffer.from(data, 'utf8');
  return {
    nodeLit: undefined,
    tagLit: undefined,
    metaLen: -1,
    dataLen: bytes.length,
    writeMeta: () => undefined,
    writeData: (dst, off) => void bytes.copy(dst, off),
  };
}

function instance(): TopicInstance {
  return new TopicInstance(7, 't', defaultConfig(), 0);
}

/** Places `n` frames of `len` bytes for seqs from `seq`; returns each frame's segment ordinal. */
function place(inst: TopicInstance, n: number, len: number, seq: number, limits = LIMITS): number[] {
  const ordinals: number[] = [];
  for (let i = 0; i < n; i++) ordinals.push(Math.floor(placeInSegment(inst, seq + i, len, limits) / TWO_32));
  return ordinals;
}

test('small frames: the packed segment rolls where a frame would pass 64 KiB, as before the 1 MiB threshold', () => {
  const inst = instance();
  const len = 256;
  const fit = PACK_FRAMES_FROM_BYTES / len;
  const ordinals = place(inst, fit + 3, len, 1);
  assert.deepEqual(ordinals.slice(0, fit), new Array(fit).fill(0));
  assert.deepEqual(ordinals.slice(fit), [1, 1, 1]);
  assert.equal(inst.segment.firstSeq, fit + 1);
  assert.equal(inst.segment.frames, 3);
  // Own segments roll on bytes only (SERVICE_SEGMENT_BYTES), however many frames.
  assert.ok(place(inst, 4 * fit, len, fit + 4).every((o) => o === 1));
});

test('batches: packed past 64 KiB up to PACK_FRAMES_MAX frames, or to SERVICE_PACK_BYTES when they are larger', () => {
  // 4 KiB frames: 16 fill 64 KiB, the frame bound then ends the packed segment at 64 frames.
  const mid = instance();
  const ordinals = place(mid, PACK_FRAMES_MAX + 1, 4096, 1);
  assert.equal(ordinals.lastIndexOf(0), PACK_FRAMES_MAX - 1);
  assert.equal(ordinals.at(-1), 1);
  // 30 kB frames: the byte threshold comes first.
  const big = instance();
  const perPack = Math.floor((1 << 20) / 30_000);
  const bigOrdinals = place(big, perPack + 1, 30_000, 1);
  assert.equal(bigOrdinals.lastIndexOf(0), perPack - 1);
  assert.equal(bigOrdinals.at(-1), 1);
  // A trace without the frame bound (recorded before it) keeps small frames packed to the threshold.
  const old = instance();
  assert.ok(place(old, 1000, 1000, 1, { segmentBytes: 64 << 20, packBytes: 1 << 20 }).every((o) => o === 0));
});

test('frames fed back by a recovery or a wake count towards the bound', () => {
  const inst = instance();
  const fed = PACK_FRAMES_MAX - 2;
  const data = `"${'x'.repeat(2000)}"`; // ~2 KiB frames: 62 of them pass 64 KiB
  for (let i = 0; i < fed; i++) loadPackedFrame(inst, encodeAppend(inst.id, i + 1, 1000, undefined, [record(data)]));
  assert.equal(inst.segment.frames, fed);
  assert.ok(inst.segment.size > PACK_FRAMES_FROM_BYTES);
  // What the next live appends do is what they would have done without the restart.
  assert.deepEqual(place(inst, 3, 2048, fed + 1), [0, 0, 1]);
});

test('a topic sleeps only while a wake reads at most SLEEP_BYTES_MAX: its packed segment, then one own file at most', () => {
  const settled = (inst: TopicInstance): StoredFrames => ({
    packedWritten: inst.segment.packed && inst.segment.ordinal === 0 ? inst.segment.size : PACK_FRAMES_FROM_BYTES,
    ownSettled: true,
  });
  const big = instance();
  place(big, 2, SLEEP_BYTES_MAX / 2, 1);
  assert.equal(typeof dormantOf(big, settled(big), 0), 'object'); // its record
  // The next frame rolls to an own file: 1 MiB packed plus the file is more than a wake reads.
  place(big, 1, 8, 3);
  assert.equal(big.segment.ordinal, 1);
  assert.equal(dormantOf(big, { packedWritten: SLEEP_BYTES_MAX, ownSettled: true }, 0), 'no');

  // Small frames: 64 KiB packed, then one small own file.
  const limits = { ...LIMITS, segmentBytes: 4096 };
  const small = instance();
  const fit = PACK_FRAMES_FROM_BYTES / 256;
  place(small, fit + 3, 256, 1, limits);
  assert.equal(small.segment.ordinal, 1);
  const rec = dormantOf(small, settled(small), 0);
  assert.ok(typeof rec === 'object');
  assert.equal(rec.packed_bytes, PACK_FRAMES_FROM_BYTES);
  assert.deepEqual([rec.own_first_seq, rec.own_bytes], [small.segment.firstSeq, small.segment.size]);
  // Frames not written to the file yet, or an unlink pending: later.
  assert.equal(dormantOf(small, { packedWritten: PACK_FRAMES_FROM_BYTES, ownSettled: false }, 0), 'later');
  // A second own file: no, until the first is reclaimed.
  place(small, 16, 256, fit + 4, limits);
  assert.equal(small.segment.ordinal, 2);
  assert.equal(dormantOf(small, settled(small), 0), 'no');
  small.segment.reclaimed = 2; // the packed segment and the first file are gone
  const later = dormantOf(small, settled(small), 0);
  assert.ok(typeof later === 'object');
  assert.equal(later.packed_bytes, 0);
  assert.deepEqual([later.own_first_seq, later.own_bytes], [small.segment.firstSeq, small.segment.size]);
});
