// Where a topic's frames go (src/actors/topic/appendOp.ts placeInSegment, docs/ARCHITECTURE.md
// "Pack files"): the packed first segment rolls to an own file once a frame would pass
// SERVICE_PACK_BYTES, or past PACK_FRAMES_FROM_BYTES once it holds PACK_FRAMES_MAX frames (small
// frames roll at 64 KiB as before, batches stay packed up to SERVICE_PACK_BYTES); a recovery or a wake that feeds the
// packed frames back (loadPackedFrame) counts them, so placement goes on where it left off; and
// a topic sleeps only while its packed segment is at most SLEEP_PACKED_BYTES_MAX.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PACK_FRAMES_FROM_BYTES, PACK_FRAMES_MAX, placeInSegment, type SegmentLimits } from '../../src/actors/topic/appendOp.js';
import { defaultConfig } from '../../src/actors/topic/config.js';
import { dormantOf, SLEEP_PACKED_BYTES_MAX } from '../../src/actors/topic/dormant.js';
import { TopicInstance } from '../../src/actors/topic/instance.js';
import { loadPackedFrame } from '../../src/actors/topic/replay.js';
import { encodeAppend, type AppendRecordInput } from '../../src/wal/frame.js';

const TWO_32 = 0x1_0000_0000;
const LIMITS: SegmentLimits = { segmentBytes: 64 << 20, packBytes: 1 << 20, packFramesMax: PACK_FRAMES_MAX, packFramesFromBytes: PACK_FRAMES_FROM_BYTES };

function record(data: string): AppendRecordInput {
  const bytes = Buffer.from(data, 'utf8');
  return { nodeLit: undefined, tagLit: undefined, metaLen: -1, dataLen: bytes.length, writeMeta: () => undefined, writeData: (dst, off) => void bytes.copy(dst, off) };
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

test('a topic sleeps only while its packed segment is at most SLEEP_PACKED_BYTES_MAX', () => {
  const inst = instance();
  place(inst, 2, SLEEP_PACKED_BYTES_MAX / 2, 1);
  assert.notEqual(dormantOf(inst, inst.segment.size, 0), 'no');
  place(inst, 1, 8, 3);
  assert.equal(inst.segment.ordinal, 0);
  assert.equal(dormantOf(inst, inst.segment.size, 0), 'no');
});
