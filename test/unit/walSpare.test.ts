// The WAL on a full disk keeps taking what gives space back (docs/ARCHITECTURE.md "Deleting on a
// full disk"): the real GroupCommit + WalWriter on a SimDisk (test/support/walRig.ts), with a
// spare. Checked on the acks, the published room (src/wal/walRoom.ts), the files and the WAL read
// back by scanWal:
// - the spare is made whole and durable once the WAL has its reserve; no temp file stays;
// - the run's first file on a disk with no room for it is made of the spare: BOOT first, FULL,
//   small frames acked, the room shrinks, a frame larger than it waits (room 0); once space
//   returns the reserve is made, the frame follows, the spare is made again;
// - a rotation with no reserve while FULL goes into the spare; frames past its room wait;
// - without a spare (or with one removed by hand) a small file is made in what space is left;
//   with none, the first file waits and the room is 0;
// - the room is taken, never below zero, by the workers' side.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { walDir, walFileName } from '../../src/format/layout.js';
import { encodeJsonFrame } from '../../src/format/frame.js';
import { FrameType, WAL_HEADER_BYTES } from '../../src/format/constants.js';
import { newSharedCounters, WAL_ROOM_SLOT } from '../../src/core/sharedCounters.js';
import { publishWalRoom, takeWalRoom } from '../../src/wal/walRoom.js';
import { BOOT, DATA, sleep, walFrame, WalRig } from '../support/walRig.js';

const FILE_BYTES = 16 * 1024;
const SPARE_BYTES = 4096;
const BOOT_BYTES = encodeJsonFrame(FrameType.BOOT, 0, { epoch: 1, seed: 'rig' }).length;
const walPath = (n: number) => path.join(walDir(DATA), walFileName(n));
const sparePath = path.join(walDir(DATA), 'spare');
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

async function withRig(opts: Partial<ConstructorParameters<typeof WalRig>[0]>, body: (rig: WalRig) => Promise<void>): Promise<void> {
  const rig = new WalRig({ fileBytes: FILE_BYTES, spareBytes: SPARE_BYTES, ...opts });
  try {
    await body(rig);
  } finally {
    rig.close();
  }
}

function room(rig: WalRig): number {
  return Atomics.load(rig.counters, WAL_ROOM_SLOT);
}

/** Puts a whole spare on the disk, durably, as an earlier run left it. */
function placeSpare(rig: WalRig): void {
  const fsx = rig.disk.fs();
  fsx.mkdirSync(walDir(DATA));
  fsx.writeFileSync(sparePath, Buffer.alloc(SPARE_BYTES));
  rig.disk.syncAll();
}

/** How many frames (ids from `first`, one per submission) fit in a file of `bytes` already holding `used`. */
function framesThatFit(used: number, bytes: number, first: number): number {
  let n = 0;
  for (let off = used; off + walFrame(first + n).length <= bytes; off += walFrame(first + n).length) n++;
  return n;
}

/** One frame per submission, ids `from..to-1`; returns the last seq. */
function submitEach(rig: WalRig, from: number, to: number): number {
  let seq = 0;
  for (let i = from; i < to; i++) seq = rig.submit(0, [i]);
  return seq;
}

describe('the WAL on a full disk', { concurrency: true }, () => {
  test('the spare is made whole and durable once the WAL has its reserve', async () => {
    await withRig({}, async (rig) => {
      rig.start();
      await rig.until('the spare', () => rig.disk.peek(sparePath)?.length === SPARE_BYTES && rig.writer.reserveReady);
      assert.ok(
        rig.disk.peek(sparePath)!.every((b) => b === 0),
        'zeros',
      );
      assert.equal(rig.disk.peek(path.join(walDir(DATA), 'spare.tmp')), undefined, 'no temp file');
      // With its reserve the WAL has the rest of its file and the whole next one.
      await rig.until('room published', () => room(rig) > 0);
      assert.equal(room(rig), FILE_BYTES - WAL_HEADER_BYTES - BOOT_BYTES + FILE_BYTES - WAL_HEADER_BYTES);
      rig.disk.crash('durable-only');
      assert.equal(rig.disk.peek(sparePath)?.length, SPARE_BYTES, 'durable');
    });
  });

  test("the run's first file on a full disk is made of the spare: BOOT first, small frames acked, a larger one waits", async () => {
    await withRig({}, async (rig) => {
      placeSpare(rig);
      rig.disk.capacityBytes = rig.disk.usedBytes() + 1000; // no room for a file, not even a small one
      rig.start();
      assert.equal(rig.state, 'disk_full');
      assert.match(rig.logs.join('\n'), /cannot create WAL file 1: .*\n.*WAL file 1 is a small one \(4 KiB, made of the spare\)/);
      assert.equal(rig.disk.peek(sparePath), undefined, 'the spare became the file');
      assert.equal(rig.disk.peek(walPath(1))!.length, SPARE_BYTES);
      assert.equal(room(rig), SPARE_BYTES - WAL_HEADER_BYTES - BOOT_BYTES);

      const seq = submitEach(rig, 0, 3);
      await rig.until('small frames durable', () => rig.durable() === seq);
      const three = [0, 1, 2].reduce((n, i) => n + walFrame(i).length, 0);
      await rig.until('room shrinks', () => room(rig) === SPARE_BYTES - WAL_HEADER_BYTES - BOOT_BYTES - three);
      // Larger than the room: it waits, unacknowledged, and nothing more is offered.
      const big = rig.submit(0, [99], true, 2 * SPARE_BYTES);
      await rig.until('room 0 while it waits', () => room(rig) === 0);
      await sleep(20);
      assert.equal(rig.written(), seq, rig.diag());
      assert.equal(rig.state, 'disk_full');

      rig.disk.capacityBytes = undefined;
      await rig.until('the waiting frame durable', () => rig.durable() === big, 1500);
      await rig.until('OK and the spare again', () => rig.state === 'ok' && rig.disk.peek(sparePath)?.length === SPARE_BYTES, 1500);
      assert.deepEqual(await rig.scan('durable-only'), [BOOT, 0, 1, 2, 99]);
    });
  });

  test('a rotation with no reserve while FULL goes into the spare; frames past its room wait', async () => {
    await withRig({}, async (rig) => {
      rig.start();
      await rig.until('spare and reserve', () => rig.disk.peek(sparePath)?.length === SPARE_BYTES && rig.writer.reserveReady);
      rig.disk.capacityBytes = rig.disk.usedBytes(); // file 1, its reserve (file 2), the spare: nothing more
      const inFile1 = framesThatFit(WAL_HEADER_BYTES + BOOT_BYTES, FILE_BYTES, 0);
      const inFile2 = framesThatFit(WAL_HEADER_BYTES, FILE_BYTES, inFile1);
      const fit = inFile1 + inFile2 + framesThatFit(WAL_HEADER_BYTES, SPARE_BYTES, inFile1 + inFile2);
      const last = submitEach(rig, 0, fit + 3);
      await rig.until('the frames that fit durable', () => rig.durable() === fit, 2000);
      await sleep(20);
      assert.equal(rig.written(), fit, rig.diag());
      assert.equal(rig.state, 'disk_full');
      assert.match(rig.logs.join('\n'), /WAL file 3 is a small one \(4 KiB, made of the spare\)/);
      assert.equal(rig.disk.peek(walPath(3))!.length, SPARE_BYTES);
      assert.equal(room(rig), 0, 'frames wait: no room offered');

      rig.disk.capacityBytes = undefined;
      await rig.until('the rest durable', () => rig.durable() === last, 1500);
      await rig.until('OK', () => rig.state === 'ok');
      assert.deepEqual(await rig.scan('durable-only'), [BOOT, ...range(0, fit + 3)]);
    });
  });

  test('without a spare a small file is made in what space is left (a spare removed by hand too); with no space the first file waits, room 0', async () => {
    await withRig({}, async (rig) => {
      rig.disk.capacityBytes = SPARE_BYTES + 500;
      rig.start();
      assert.equal(rig.state, 'disk_full');
      assert.match(rig.logs.join('\n'), /WAL file 1 is a small one \(4 KiB\);/);
      assert.equal(rig.disk.peek(walPath(1))!.length, SPARE_BYTES);
      const seq = submitEach(rig, 0, 2);
      await rig.until('durable', () => rig.durable() === seq);
      assert.deepEqual(await rig.scan('durable-only'), [BOOT, 0, 1]);
    });
    await withRig({}, async (rig) => {
      // A spare the writer saw, removed by hand before it is needed: a small file is made instead.
      placeSpare(rig);
      assert.equal(rig.writer.spare.available, true);
      rig.disk.fs().unlinkSync(sparePath);
      rig.disk.capacityBytes = SPARE_BYTES + 500;
      rig.start();
      assert.equal(rig.state, 'disk_full', rig.diag());
      assert.match(rig.logs.join('\n'), /WAL file 1 is a small one \(4 KiB\);/);
    });
    await withRig({}, async (rig) => {
      rig.disk.capacityBytes = 1000;
      rig.start();
      assert.equal(rig.state, 'disk_full');
      assert.equal(rig.writer.isOpen, false);
      assert.equal(room(rig), 0);
      rig.disk.capacityBytes = undefined;
      await rig.until('OK', () => rig.state === 'ok', 1500);
      await rig.until('room', () => room(rig) > SPARE_BYTES);
      assert.equal(rig.disk.peek(walPath(1))!.length, FILE_BYTES, 'a whole file once there is room');
    });
  });
});

test('the room is taken by the workers, never below zero, and published within an Int32', () => {
  const counters = newSharedCounters();
  publishWalRoom(counters, 1000);
  assert.equal(takeWalRoom(counters, 600), true);
  assert.equal(takeWalRoom(counters, 600), false, 'not enough left: nothing taken');
  assert.equal(Atomics.load(counters, WAL_ROOM_SLOT), 400);
  assert.equal(takeWalRoom(counters, 400), true);
  assert.equal(Atomics.load(counters, WAL_ROOM_SLOT), 0);
  publishWalRoom(counters, -5);
  assert.equal(Atomics.load(counters, WAL_ROOM_SLOT), 0);
  publishWalRoom(counters, 2 ** 40);
  assert.equal(Atomics.load(counters, WAL_ROOM_SLOT), 0x7fff_ffff);
});
