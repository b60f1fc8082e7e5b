// readSegment (src/storage/segmentLoad.ts) and the bytes a snapshot records as durable: a torn
// tail of the newest segment is cut only past them; damage below them, a file whose whole frames
// end below them, and damage in a compacted file are CorruptionErrors that leave the file as it
// was; with nothing recorded (a topic busy at the cut) a torn tail is cut as before.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nodeFs } from '../../src/storage/fs.js';
import { readSegment } from '../../src/storage/segmentLoad.js';
import { encodeJsonFrame } from '../../src/format/frame.js';
import { FrameType } from '../../src/format/constants.js';
import { encodeExtent } from '../../src/storage/compactFrames.js';
import { CorruptionError } from '../../src/core/corruption.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-segload-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const ID = 0x01_000001;
const frames = Array.from({ length: 5 }, (_, i) => encodeJsonFrame(FrameType.APPEND, ID, { i, pad: 'x'.repeat(30) }));
const whole = Buffer.concat(frames);
const offs = frames.map((_, i) => frames.slice(0, i).reduce((n, f) => n + f.length, 0));
let n = 0;

function segFile(bytes: Buffer): string {
  const file = path.join(dir, `seg-${n++}.log`);
  fs.writeFileSync(file, bytes);
  return file;
}

function flipped(at: number): Buffer {
  const b = Buffer.from(whole);
  b[at] = b[at]! ^ 0xff;
  return b;
}

async function refused(file: string, durable: number, offset: number, detail: RegExp): Promise<void> {
  const before = fs.readFileSync(file);
  await assert.rejects(readSegment(nodeFs, ID, { firstSeq: 1, file }, true, durable), (err: unknown) => {
    assert.ok(err instanceof CorruptionError, String(err));
    assert.equal(err.where, file);
    assert.equal(err.offset, offset);
    assert.match(err.detail, detail);
    return true;
  });
  assert.deepEqual(fs.readFileSync(file), before, 'nothing is cut');
}

test('damage below the bytes the snapshot records as durable is a CorruptionError, and nothing is cut', async () => {
  // In the last frame: no valid frame after it, which alone once read as a torn tail.
  await refused(segFile(flipped(offs[4]! + 20)), whole.length, offs[4]!, /below the \d+ bytes the snapshot records as durable/);
  await refused(segFile(flipped(offs[1]! + 20)), whole.length, offs[1]!, /below the \d+ bytes/);
  // Recorded durable up to the end of frame 3: damage in frame 2 is below it.
  await refused(segFile(flipped(offs[2]! + 20)), offs[3]!, offs[2]!, /below the \d+ bytes/);
});

test('whole frames that end below the durable bytes (a file cut short) are a CorruptionError', async () => {
  await refused(segFile(whole.subarray(0, offs[3]!)), whole.length, offs[3]!, /whole frames end below the \d+ bytes/);
  // Cut inside a frame below them: the same.
  await refused(segFile(whole.subarray(0, offs[3]! + 7)), whole.length, offs[3]!, /below the \d+ bytes/);
});

test('a torn tail past the durable bytes is cut at the last whole frame, as without a record', async () => {
  for (const durable of [offs[3]!, 0]) {
    const file = segFile(whole.subarray(0, offs[4]! + 9));
    const seg = await readSegment(nodeFs, ID, { firstSeq: 1, file }, true, durable);
    assert.equal(seg.size, offs[4]);
    assert.equal(fs.statSync(file).size, offs[4], `cut (durable ${durable})`);
    // Damage in the last frame with nothing recorded (a topic busy at the cut): a torn tail, cut.
    const file2 = segFile(flipped(offs[4]! + 20));
    const seg2 = await readSegment(nodeFs, ID, { firstSeq: 1, file: file2 }, true, durable);
    assert.equal(seg2.size, offs[4]);
  }
  // Exactly the durable bytes, whole: loaded as they are.
  const file = segFile(whole);
  assert.equal((await readSegment(nodeFs, ID, { firstSeq: 1, file }, true, whole.length)).size, whole.length);
});

test('a sealed segment and a compacted newest one never have a torn tail', async () => {
  const sealed = segFile(flipped(offs[4]! + 20));
  await assert.rejects(readSegment(nodeFs, ID, { firstSeq: 1, file: sealed }, false), /damaged frame in a sealed segment/);
  // A compacted file (an EXTENT first) is written whole and fsynced before its rename.
  const compacted = Buffer.concat([encodeExtent(ID, 0, frames[0]!.length, frames[0]!.length), frames[0]!, frames[1]!.subarray(0, 20)]);
  await refused(segFile(compacted), 0, compacted.length - 20, /compacted segment/);
});
