// Storage faults of the WAL thread (issue "Faults are a path, not a crash"; docs/ARCHITECTURE.md
// "Storage faults"): the real GroupCommit + WalWriter on a SimDisk behind a FaultFs, workers
// played by MessageChannel ports (test/support/walRig.ts). Checked on the exact WalOut stream,
// the shared storage state slot, the Fs call log and the WAL read back by scanWal:
// - ENOSPC preparing the reserve (the next file) or creating the first file is FULL: accepted
//   writes still land in the current file and are acked durable, the reserve is retried every
//   500 ms, and the state is OK again once space returns (the first file opening with BOOT first);
// - a rotation that finds no reserve on a full disk waits in FULL (frames that fit are kept);
// - a backlog queued behind a rotation fills the next file and rotates again; only one
//   submission larger than a file runs past a file's pre-allocated end;
// - with pre-allocation frame writes cannot meet ENOSPC (except an oversized batch); without
//   it, or on a short write, ENOSPC mid-frame is FULL: the write is undone (the file cut back,
//   what landed zeroed), nothing of it is acked, and it is written whole once space returns;
// - EIO on a write or an fdatasync is FAILED: 'failed' is the last message on every port, no
//   ack for bytes written after the last good sync, no write or sync afterwards, later
//   submissions and checkpoint marks are refused, and nothing throws;
// - a sweep fails each call of a whole run in turn (EIO) and checks the invariants every time:
//   'failed' last, acks monotone, nothing written after the failure, and after a durable-only
//   or random crash the log holds a prefix of each worker's frames covering every durable ack.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { walDir, walFileName } from '../../src/format/layout.js';
import { encodeJsonFrame } from '../../src/format/frame.js';
import { FrameType, WAL_HEADER_BYTES } from '../../src/format/constants.js';
import { BOOT, DATA, sleep, walFrame, WalRig } from '../support/walRig.js';
import type { WalPosition } from '../../src/protocol/messages/wal.js';

const FILE_BYTES = 4096;
const BOOT_BYTES = encodeJsonFrame(FrameType.BOOT, 0, { epoch: 1, seed: 'rig' }).length;
const walPath = (n: number) => path.join(walDir(DATA), walFileName(n));
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

/** How many frames (ids from `first`, one per submission) fit in a file already holding `used` bytes. */
function framesThatFit(used: number, first = 0): number {
  let n = 0;
  for (let off = used; off + walFrame(first + n).length <= FILE_BYTES; off += walFrame(first + n).length) n++;
  return n;
}

/** Counted calls of `op` on WAL file `n`. */
function callsOn(rig: WalRig, op: string, n: number): number {
  return rig.ffs.callLog().filter((r) => r.op === op && r.path === walPath(n)).length;
}

async function withRig(opts: ConstructorParameters<typeof WalRig>[0], body: (rig: WalRig) => Promise<void>): Promise<void> {
  const rig = new WalRig(opts);
  try {
    await body(rig);
  } finally {
    rig.close();
  }
}

// ---- disk full: FULL, never FAILED -----------------------------------------------------------

// Most wait for the 500 ms reserve retry at least once: they run side by side.
describe('disk full', { concurrency: true }, () => {
  test('ENOSPC preparing the reserve: FULL; accepted writes still land in the current file, acked durable; OK once space returns', async () => {
    // Room for the first file and a little more: the zero fill of file 2 runs out of space.
    await withRig({ fileBytes: FILE_BYTES, capacityBytes: FILE_BYTES + 1000 }, async (rig) => {
      rig.start();
      await rig.until('FULL', () => rig.state === 'disk_full');
      assert.match(rig.logs.join('\n'), /disk full: cannot pre-allocate WAL file 2/);
      assert.equal(rig.disk.peek(walPath(2)), undefined, 'the half-made reserve is removed');

      rig.submit(0, [0, 1]);
      rig.submit(0, [2], false);
      rig.submit(0, [3, 4]);
      await rig.until('submissions durable', () => rig.durable() === 3);
      assert.ok(rig.acks().every((a) => a.durableThrough <= a.writtenThrough));
      assert.deepEqual(rig.acks().at(-1), { t: 'ack', writtenThrough: 3, durableThrough: 3 });
      assert.ok(!rig.received[0]!.some((m) => m.t === 'failed'), rig.diag());
      assert.equal(rig.state, 'disk_full', 'still full: writes into the current file do not clear it');

      // The reserve is tried again every 500 ms while the disk is full.
      await rig.until('a retry of the reserve', () => callsOn(rig, 'open', 2) >= 2, 1500);
      assert.equal(rig.state, 'disk_full');

      rig.disk.capacityBytes = undefined;
      const ms = await rig.until('OK again', () => rig.state === 'ok', 1500);
      assert.ok(ms < 1100, `back within one retry (${ms} ms)`);
      assert.match(rig.logs.at(-1)!, /space is back/);
      assert.equal(rig.disk.peek(walPath(2))?.length, FILE_BYTES, 'the reserve is a whole pre-allocated file');
      assert.deepEqual(await rig.scan('durable-only'), [BOOT, 0, 1, 2, 3, 4], 'every durably acked frame survives a crash');
    });
  });

  test('ENOSPC creating the reserve file itself (open) is FULL too, not FAILED', async () => {
    await withRig({ fileBytes: FILE_BYTES }, async (rig) => {
      rig.ffs.failWhen((c) => c.op === 'open' && c.path === walPath(2), 'ENOSPC');
      rig.start();
      await rig.until('FULL', () => rig.state !== 'ok');
      assert.equal(rig.state, 'disk_full', rig.diag());
      rig.submit(0, [0]);
      await rig.until('durable', () => rig.durable() === 1);
      rig.ffs.clear();
      await rig.until('OK again', () => rig.state === 'ok', 1500);
      assert.deepEqual(await rig.scan('durable-only'), [BOOT, 0]);
    });
  });

  test('ENOSPC creating the first file: nothing acked, FULL; the file opens once space returns, BOOT first', async () => {
    await withRig({ fileBytes: FILE_BYTES, capacityBytes: 0 }, async (rig) => {
      rig.start();
      assert.equal(rig.state, 'disk_full', 'FULL at once: start does not throw');
      assert.match(rig.logs.join('\n'), /cannot create WAL file 1/);
      rig.submit(0, [0]);
      rig.submit(0, [1, 2]);
      await rig.until('a retry of the first file', () => callsOn(rig, 'openSync', 1) >= 2, 1500);
      assert.deepEqual(rig.received[0], [], 'nothing acked, nothing failed');
      assert.equal(rig.disk.peek(walPath(1)), undefined, 'the half-made file is removed');
      assert.equal(rig.state, 'disk_full');

      // Room for exactly one file: it opens and takes the writes, but without a reserve it stays FULL.
      rig.disk.capacityBytes = FILE_BYTES;
      await rig.until('durable', () => rig.durable() === 2, 1500);
      assert.ok(rig.acks().every((a) => a.writtenThrough <= 2));
      assert.equal(rig.state, 'disk_full');
      assert.deepEqual(await rig.scan('durable-only'), [BOOT, 0, 1, 2], 'BOOT is the first frame, then the waiting submissions in order');
    });
    // The same, then space for the reserve too: OK.
    await withRig({ fileBytes: FILE_BYTES, capacityBytes: 0 }, async (rig) => {
      rig.start();
      rig.submit(0, [0]);
      await rig.until('FULL', () => rig.state === 'disk_full');
      rig.disk.capacityBytes = undefined;
      await rig.until('OK', () => rig.state === 'ok' && rig.durable() === 1, 1500);
      assert.deepEqual(await rig.scan('durable-only'), [BOOT, 0]);
    });
  });

  test('a checkpoint mark while the first file cannot be made sits at its start; one behind a waiting submission waits for it', async () => {
    await withRig({ fileBytes: FILE_BYTES, capacityBytes: 0, ports: 2 }, async (rig) => {
      rig.start(3);
      assert.equal(rig.state, 'disk_full');
      // Recovery's checkpoint on a disk too full for the run's first file: nothing of the run is
      // written, so the cut is that file's start and the checkpoint can complete.
      const first = rig.gc.waitMark(1);
      rig.mark(0, 1);
      rig.mark(1, 1);
      assert.deepEqual(await first, { fileNo: 3, offset: WAL_HEADER_BYTES });
      // A mark after a submission that waits for the file waits with it.
      rig.submit(0, [0]);
      rig.mark(0, 2);
      rig.mark(1, 2);
      let second: WalPosition | undefined;
      void rig.gc.waitMark(2).then((p) => (second = p));
      await sleep(50);
      assert.equal(second, undefined, 'not before the frame ahead of it is written');
      rig.disk.capacityBytes = undefined;
      await rig.until('the mark after the frame', () => second !== undefined, 1500);
      assert.equal(second!.fileNo, 3);
      assert.ok(second!.offset > WAL_HEADER_BYTES, `after BOOT and the frame: ${JSON.stringify(second)}`);
    });
  });

  test('a rotation that finds no reserve on a full disk waits in FULL: frames that fit are acked, the rest follow once space returns', async () => {
    await withRig({ fileBytes: FILE_BYTES, capacityBytes: FILE_BYTES + 500 }, async (rig) => {
      rig.start();
      await rig.until('FULL', () => rig.state === 'disk_full');
      const fit = framesThatFit(WAL_HEADER_BYTES + BOOT_BYTES);
      const n = fit + 3;
      for (let i = 0; i < n; i++) rig.submit(0, [i]);
      await rig.until('the frames that fit are durable', () => rig.durable() === fit);
      await rig.until('a retry of the reserve', () => callsOn(rig, 'open', 2) >= 2, 1500);
      assert.equal(rig.written(), fit, 'nothing past the full file is acked');
      assert.equal(rig.state, 'disk_full', rig.diag());
      assert.ok(!rig.received[0]!.some((m) => m.t === 'failed'), rig.diag());

      rig.disk.capacityBytes = undefined;
      await rig.until('the rest written after the rotation', () => rig.durable() === n, 1500);
      await rig.until('OK', () => rig.state === 'ok');
      assert.ok(!rig.received[0]!.some((m) => m.t === 'failed'));
      assert.deepEqual(await rig.scan('durable-only'), [BOOT, ...range(0, n)]);
    });
  });

  /** Fills file 1 while the reserve preparation is held (at its mkdir), so the next frames wait for it. */
  async function rotationWaitingForPreparation(rig: WalRig): Promise<{ fit: number; n: number }> {
    rig.start();
    await rig.until('preparation held', () => rig.heldCalls === 1);
    const fit = framesThatFit(WAL_HEADER_BYTES + BOOT_BYTES);
    const n = fit + 2;
    for (let i = 0; i < n; i++) rig.submit(0, [i]);
    await rig.until('the frames that fit are durable', () => rig.durable() === fit);
    await sleep(10);
    assert.equal(rig.written(), fit, 'the rest waits for the file being prepared');
    return { fit, n };
  }

  test('a rotation waiting for a preparation that meets ENOSPC: FULL, the waiting frames follow once space returns', async () => {
    await withRig({ fileBytes: FILE_BYTES, hold: ['mkdir'] }, async (rig) => {
      const { fit, n } = await rotationWaitingForPreparation(rig);
      rig.ffs.failWhen((c) => c.op === 'file.writev' && c.path === walPath(2), 'ENOSPC');
      rig.release(true);
      await rig.until('FULL', () => rig.state !== 'ok');
      assert.equal(rig.state, 'disk_full', rig.diag());
      await sleep(20);
      assert.equal(rig.written(), fit);
      rig.ffs.clear();
      await rig.until('the rest written after the rotation', () => rig.durable() === n, 1500);
      assert.equal(rig.state, 'ok');
      assert.ok(!rig.received[0]!.some((m) => m.t === 'failed'));
      assert.deepEqual(await rig.scan('durable-only'), [BOOT, ...range(0, n)]);
    });
  });

  test('a rotation waiting for a preparation that meets EIO: FAILED, no unhandled rejection, nothing more written', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown) => unhandled.push(err);
    process.on('unhandledRejection', onUnhandled);
    try {
      await withRig({ fileBytes: FILE_BYTES, hold: ['mkdir'] }, async (rig) => {
        const { fit } = await rotationWaitingForPreparation(rig);
        const before = rig.received[0]!.length;
        rig.ffs.failWhen((c) => c.op === 'file.writev' && c.path === walPath(2), 'EIO');
        rig.release(true);
        await rig.until('failed', () => rig.state === 'failed');
        await sleep(20);
        assert.deepEqual(rig.received[0]!.slice(before), [{ t: 'failed', message: `EIO: i/o error, writev '${walPath(2)}'` }]);
        assert.equal(rig.written(), fit);
        const eio = rig.ffs.callLog().find((r) => r.error === 'EIO')!;
        // The half-made file is removed as part of the failing preparation; nothing after that.
        assert.deepEqual(
          rig.writesAfter(eio.call).map((r) => `${r.op} ${r.path}`),
          [`rm ${walPath(2)}`],
        );
        await rig.gc.drain();
      });
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    assert.deepEqual(unhandled, []);
  });
});

test('with pre-allocation a full disk never fails a frame write: the file is filled to its end', async () => {
  // Exactly two files of space: the current one and the reserve; not one byte more.
  await withRig({ fileBytes: FILE_BYTES, capacityBytes: 2 * FILE_BYTES }, async (rig) => {
    rig.start();
    await rig.until('reserve ready', () => rig.writer.reserveReady);
    assert.equal(rig.disk.usedBytes(), 2 * FILE_BYTES);
    const fit = framesThatFit(WAL_HEADER_BYTES + BOOT_BYTES);
    for (let i = 0; i < fit; i++) rig.submit(0, [i]);
    await rig.until('durable', () => rig.durable() === fit);
    assert.equal(rig.state, 'ok');
    assert.deepEqual(
      rig.ffs.callLog().filter((r) => r.error),
      [],
      'no call failed',
    );
    assert.deepEqual(await rig.scan('durable-only'), [BOOT, ...range(0, fit)]);
  });
});

test('a backlog behind a rotation fills the next file and rotates again: no file runs past its pre-allocated end', async () => {
  await withRig({ fileBytes: FILE_BYTES }, async (rig) => {
    rig.start();
    await rig.until('reserve ready', () => rig.writer.reserveReady);
    // One turn's worth of submissions, three files of them: queued together behind file 1.
    const n = 3 * framesThatFit(WAL_HEADER_BYTES);
    for (let i = 0; i < n; i++) rig.submit(0, [i]);
    await rig.until('all durable', () => rig.durable() === n, 2000);
    for (let f = 1; rig.disk.peek(walPath(f)); f++) assert.equal(rig.disk.peek(walPath(f))!.length, FILE_BYTES, `file ${f}`);
    assert.deepEqual(await rig.scan('durable-only'), [BOOT, ...range(0, n)]);
  });
});

// ---- ENOSPC mid-frame: FULL, the write undone, no ack until it is written whole ------------

test('without pre-allocation, ENOSPC mid-frame (a partial write) is FULL: undone, never acked torn, written whole once space returns', async () => {
  const frame = walFrame(0).length;
  // Two headers (file 1 and its header-only "reserve"), BOOT, three frames and half of a fourth.
  await withRig(
    { fileBytes: FILE_BYTES, preallocate: false, partialWrites: true, capacityBytes: 2 * WAL_HEADER_BYTES + BOOT_BYTES + 3.5 * frame },
    async (rig) => {
      rig.start();
      await rig.until('reserve ready', () => rig.writer.reserveReady);
      for (let i = 0; i < 3; i++) {
        const seq = rig.submit(0, [i]);
        await rig.until(`frame ${i} durable`, () => rig.durable() === seq);
      }
      rig.submit(0, [3]);
      await rig.until('FULL', () => rig.state !== 'ok');
      assert.equal(rig.state, 'disk_full', rig.diag());
      const torn = rig.ffs.callLog().find((r) => r.error === 'ENOSPC');
      // The writev took the part that fit (a short count, as on Linux); finishing the frame met ENOSPC.
      assert.equal(torn?.op, 'writeSync', rig.diag());
      assert.match(rig.logs.join('\n'), /cannot write \d+ bytes of frames to WAL file 1: ENOSPC part-way, undone/);
      assert.ok(!rig.received[0]!.some((m) => m.t === 'failed'), 'not FAILED');
      assert.ok(
        rig.acks().every((a) => a.writtenThrough < 4),
        'no ack for the torn frame',
      );
      assert.equal(
        rig.disk.peek(walPath(1))!.length,
        WAL_HEADER_BYTES + BOOT_BYTES + 3 * frame,
        'the file is cut back to the last whole frame',
      );
      // A crash now: recovery reads the acked frames and nothing of the torn one.
      assert.deepEqual(await rig.scan(), [BOOT, 0, 1, 2]);

      // Space returns: the same submission is written whole, at the same offset, and acked.
      rig.disk.capacityBytes = undefined;
      await rig.until('the waiting frame durable', () => rig.durable() === 4, 1500);
      await rig.until('OK again', () => rig.state === 'ok', 1500);
      assert.deepEqual(await rig.scan('durable-only'), [BOOT, 0, 1, 2, 3]);
    },
  );
});

test('a short write whose completion meets ENOSPC is FULL: the half frame is zeroed, then written whole', async () => {
  await withRig({ fileBytes: FILE_BYTES }, async (rig) => {
    rig.start();
    rig.submit(0, [0]);
    await rig.until('durable', () => rig.durable() === 1);
    const before = rig.received[0]!.length;
    const end = WAL_HEADER_BYTES + BOOT_BYTES + walFrame(0).length;
    rig.shortWritev = true; // the next writev writes half, as Linux does when space runs out
    let failures = 0;
    rig.ffs.failWhen((c) => c.op === 'writeSync' && failures++ === 0, 'ENOSPC');
    rig.submit(0, [1]);
    await rig.until('FULL', () => rig.state !== 'ok');
    assert.equal(rig.state, 'disk_full', rig.diag());
    assert.deepEqual(rig.received[0]!.slice(before), [], 'no ack, no failure');
    const file = rig.disk.peek(walPath(1))!;
    assert.ok(
      file.subarray(end).every((b) => b === 0),
      'the half frame is zeroed: the file ends as before the write',
    );
    assert.deepEqual(await rig.scan(), [BOOT, 0]);
    rig.ffs.clear();
    await rig.until('written whole and durable', () => rig.durable() === 2, 1500);
    await rig.until('OK again', () => rig.state === 'ok', 1500);
    assert.deepEqual(await rig.scan('durable-only'), [BOOT, 0, 1]);
  });
});

test('with pre-allocation only an oversized batch can meet ENOSPC mid-frame: FULL, undone, no ack; written once space returns', async () => {
  await withRig({ fileBytes: FILE_BYTES, capacityBytes: 2 * FILE_BYTES + 200 }, async (rig) => {
    rig.start();
    await rig.until('reserve ready', () => rig.writer.reserveReady);
    rig.submit(0, [0]);
    await rig.until('durable', () => rig.durable() === 1);
    const before = rig.received[0]!.length;
    // Bigger than a whole file: it rotates into the (empty) reserve and runs past its end.
    rig.submit(0, range(1, 25));
    await rig.until('FULL', () => rig.state !== 'ok');
    assert.equal(rig.state, 'disk_full', rig.diag());
    const enospc = rig.ffs.callLog().find((r) => r.error === 'ENOSPC')!;
    assert.deepEqual([enospc.op, enospc.path], ['writevSync', walPath(2)], rig.diag());
    assert.ok(
      rig.received[0]!.slice(before).every((m) => m.t === 'ack' && m.writtenThrough < 2),
      'no ack for the oversized batch, no failure',
    );
    const file2 = rig.disk.peek(walPath(2))!;
    assert.equal(file2.length, FILE_BYTES, 'the space past the pre-allocated end is given back');
    assert.ok(
      file2.subarray(WAL_HEADER_BYTES).every((b) => b === 0),
      'what landed of it is zeroed',
    );
    // A later submission waits behind it, in order.
    rig.submit(0, [25]);
    await sleep(50);
    assert.ok(
      rig.acks().every((a) => a.writtenThrough < 2),
      rig.diag(),
    );
    rig.disk.capacityBytes = undefined;
    await rig.until('both durable', () => rig.durable() === 3, 1500);
    await rig.until('OK again', () => rig.state === 'ok', 1500);
    assert.deepEqual(await rig.scan('durable-only'), [BOOT, 0, ...range(1, 26)]);
  });
});

// ---- EIO: FAILED -----------------------------------------------------------------------------

test('EIO on fdatasync: FAILED; the written-not-durable submission is failed, never acked durable; nothing is written afterwards', async () => {
  await withRig({ fileBytes: FILE_BYTES, ports: 2 }, async (rig) => {
    rig.start();
    await rig.until('reserve ready', () => rig.writer.reserveReady);
    rig.submit(0, [0]);
    rig.submit(1, [100]);
    await rig.until('durable', () => rig.durable(0) === 1 && rig.durable(1) === 1);
    const before = rig.received.map((r) => r.length);
    rig.ffs.failWhen((c) => c.op === 'fdatasync', 'EIO');
    rig.submit(0, [1]);
    await rig.until('failed', () => rig.state === 'failed');
    await sleep(30); // let anything that would still come arrive
    const message = `EIO: i/o error, fdatasync '${walPath(1)}'`;
    assert.deepEqual(rig.received[0]!.slice(before[0]), [
      { t: 'ack', writtenThrough: 2, durableThrough: 1 },
      { t: 'failed', message },
    ]);
    assert.deepEqual(rig.received[1]!.slice(before[1]), [{ t: 'failed', message }], 'every port is told');
    assert.match(rig.logs.at(-1)!, /WAL EIO in file 1: .*writes are refused until a restart/);
    const eio = rig.ffs.callLog().find((r) => r.error === 'EIO')!;
    // Later submissions are refused: no message, no write, no sync.
    rig.submit(0, [2]);
    rig.submit(1, [101]);
    await sleep(30);
    assert.equal(rig.received[0]!.length, before[0]! + 2);
    assert.equal(rig.received[1]!.length, before[1]! + 1);
    assert.deepEqual(rig.writesAfter(eio.call), [], rig.diag());
    assert.equal(rig.state, 'failed');
    await rig.gc.drain(); // shutdown after a failure neither throws nor syncs
    assert.deepEqual(rig.writesAfter(eio.call), []);
    assert.deepEqual(await rig.scan('durable-only'), [BOOT, 0, 100]);
  });
});

test('an urgent sync runs on the WAL thread while syncs are short; EIO there: FAILED, the submission never acked durable', async () => {
  await withRig({ fileBytes: FILE_BYTES, inlineSyncBelowUs: 60_000_000 }, async (rig) => {
    rig.start();
    await rig.until('reserve ready', () => rig.writer.reserveReady);
    rig.submit(0, [0]);
    await rig.until('durable', () => rig.durable(0) === 1);
    // The BOOT frame's sync measured the disk; this one ran inline, no async fdatasync after it.
    const ops = rig.ffs.callLog().map((r) => r.op);
    assert.ok(ops.lastIndexOf('fdatasyncSync') > ops.lastIndexOf('fdatasync'), ops.join(' '));
    const before = rig.received[0]!.length;
    rig.ffs.failWhen((c) => c.op === 'fdatasyncSync', 'EIO');
    rig.submit(0, [1]);
    await rig.until('failed', () => rig.state === 'failed');
    await sleep(30);
    const got = rig.received[0]!.slice(before);
    assert.deepEqual(got[0], { t: 'ack', writtenThrough: 2, durableThrough: 1 }, 'written, never durable');
    assert.equal(got[1]?.t, 'failed');
    assert.equal(got.length, 2);
    const eio = rig.ffs.callLog().find((r) => r.error === 'EIO')!;
    rig.submit(0, [2]);
    await sleep(30);
    assert.deepEqual(rig.writesAfter(eio.call), [], rig.diag());
    assert.deepEqual(await rig.scan('durable-only'), [BOOT, 0]);
  });
});

test('after a slow sync the next urgent one goes to the libuv pool; after a short one it runs inline again', async () => {
  // Syncs under 10 ms run inline here; the BOOT frame's sync is held for 50 ms, so it counts as slow.
  await withRig({ fileBytes: FILE_BYTES, inlineSyncBelowUs: 10_000, hold: ['fdatasync'] }, async (rig) => {
    const syncOps = () =>
      rig.ffs
        .callLog()
        .filter((r) => r.op === 'fdatasync' || r.op === 'fdatasyncSync')
        .map((r) => r.op);
    rig.start();
    await rig.until('the BOOT sync started', () => rig.heldCalls === 1);
    await sleep(50);
    rig.release(true); // later pool syncs complete at once (SimDisk: well under 10 ms)
    await rig.until('reserve ready', () => rig.writer.reserveReady);
    const afterBoot = syncOps().length;
    rig.submit(0, [0]);
    await rig.until('durable', () => rig.durable(0) === 1);
    assert.deepEqual(syncOps().slice(afterBoot), ['fdatasync'], 'the last sync was slow: on the pool');
    rig.submit(0, [1]);
    await rig.until('durable', () => rig.durable(0) === 2);
    assert.deepEqual(syncOps().slice(afterBoot), ['fdatasync', 'fdatasyncSync'], 'the last sync was short: inline');
    assert.deepEqual(await rig.scan('durable-only'), [BOOT, 0, 1]);
  });
});

test('EIO on the first fdatasync (BOOT), while the reserve is being prepared: FAILED, and the preparation stops writing', async () => {
  await withRig({ fileBytes: FILE_BYTES }, async (rig) => {
    rig.ffs.failWhen((c) => c.op === 'fdatasync', 'EIO');
    rig.start();
    rig.submit(0, [0]);
    await rig.until('failed', () => rig.state === 'failed');
    await sleep(30);
    assert.deepEqual(rig.received[0], [{ t: 'failed', message: `EIO: i/o error, fdatasync '${walPath(1)}'` }]);
    // The preparation had begun (its mkdir of the existing wal/ was issued before the sync's
    // failure was known) and stops at its next step: file 2 is never even created.
    assert.deepEqual(rig.writesAfter(rig.failedAtCall!), [], rig.diag());
    assert.deepEqual(
      rig.ffs.callLog().filter((r) => r.path === walPath(2)),
      [],
      rig.diag(),
    );
    await sleep(20);
    assert.deepEqual(rig.writesAfter(rig.failedAtCall!), []);
  });
});

test('EIO on a write while an fdatasync is in flight: no ack at all after "failed", not even for the sync that then succeeds', async () => {
  await withRig({ fileBytes: FILE_BYTES, hold: ['fdatasync'], syncIntervalMs: 10_000 }, async (rig) => {
    rig.start();
    await rig.until('BOOT sync held', () => rig.heldCalls === 1);
    rig.release();
    await rig.until('reserve ready', () => rig.writer.reserveReady);
    rig.submit(0, [0]);
    await rig.until('written, its sync held', () => rig.written() === 1 && rig.heldCalls === 1);
    rig.ffs.failWhen((c) => c.op === 'writevSync', 'EIO');
    rig.submit(0, [1]);
    await rig.until('failed', () => rig.state === 'failed');
    rig.release(true); // the earlier sync succeeds now
    await sleep(30);
    assert.deepEqual(rig.received[0], [
      { t: 'ack', writtenThrough: 1, durableThrough: 0 },
      { t: 'failed', message: `EIO: i/o error, writev '${walPath(1)}'` },
    ]);
  });
});

test('EIO on a write: FAILED; no ack for it, and the pending timed sync never runs', async () => {
  await withRig({ fileBytes: FILE_BYTES, syncIntervalMs: 100 }, async (rig) => {
    rig.start();
    await rig.until('reserve ready', () => rig.writer.reserveReady);
    rig.submit(0, [0], false); // not durable: synced by the interval timer
    await rig.until('written', () => rig.written() === 1);
    rig.ffs.failWhen((c) => c.op === 'writevSync', 'EIO');
    rig.submit(0, [1], false);
    await rig.until('failed', () => rig.state === 'failed');
    const eio = rig.ffs.callLog().find((r) => r.error === 'EIO')!;
    await sleep(150); // past the sync interval
    assert.deepEqual(rig.received[0], [
      { t: 'ack', writtenThrough: 1, durableThrough: 0 },
      { t: 'failed', message: `EIO: i/o error, writev '${walPath(1)}'` },
    ]);
    assert.deepEqual(rig.writesAfter(eio.call), [], `no write or sync after the EIO\n${rig.diag()}`);
    rig.submit(0, [2]);
    await sleep(20);
    assert.equal(rig.received[0]!.length, 2, 'later submissions are refused');
    assert.deepEqual(await rig.scan('durable-only'), [BOOT], 'nothing was acked durable, nothing is');
  });
});

test('EIO syncing the old file at a rotation: FAILED, no ack for the batch that waited for the new file', async () => {
  await withRig({ fileBytes: FILE_BYTES }, async (rig) => {
    rig.start();
    await rig.until('reserve ready', () => rig.writer.reserveReady);
    const fit = framesThatFit(WAL_HEADER_BYTES + BOOT_BYTES);
    for (let i = 0; i < fit; i++) rig.submit(0, [i]);
    await rig.until('file 1 full and durable', () => rig.durable() === fit);
    rig.ffs.failWhen((c) => c.op === 'fdatasyncSync', 'EIO');
    rig.submit(0, [fit]);
    await rig.until('failed', () => rig.state === 'failed');
    assert.equal(rig.written(), fit);
    assert.deepEqual(rig.received[0]!.at(-1), { t: 'failed', message: `EIO: i/o error, fdatasync '${walPath(1)}'` });
    const eio = rig.ffs.callLog().find((r) => r.error === 'EIO')!;
    assert.deepEqual(rig.writesAfter(eio.call), []);
    assert.equal(rig.writer.fileNo, 1, 'never moved to file 2');
  });
});

test('a checkpoint mark waiting when the WAL fails is rejected, and so is a later one (no hang)', async () => {
  await withRig({ fileBytes: FILE_BYTES, ports: 2 }, async (rig) => {
    rig.start();
    await rig.until('reserve ready', () => rig.writer.reserveReady);
    rig.mark(0, 1);
    const waiting = rig.waitMark(1).then(
      () => 'resolved',
      (e: Error) => e.message,
    );
    rig.ffs.failWhen((c) => c.op === 'writevSync', 'EIO');
    rig.submit(1, [0]);
    await rig.until('failed', () => rig.state === 'failed');
    const timeout = sleep(500).then(() => 'hung');
    assert.match(String(await Promise.race([waiting, timeout])), /^the WAL failed: EIO/);
    assert.match(
      String(
        await Promise.race([
          rig.waitMark(2).then(
            () => 'resolved',
            (e: Error) => e.message,
          ),
          timeout,
        ]),
      ),
      /^the WAL failed: EIO/,
    );
  });
});

// ---- a sweep: EIO at every call of a run --------------------------------------------------------

/** Two workers submit rounds of frames (some durable, some not) until done or failed. */
async function workload(rig: WalRig, rounds: number): Promise<void> {
  let id = 0;
  for (let r = 0; r < rounds && rig.state !== 'failed'; r++) {
    const seqs = [0, 1].map((p) =>
      rig.submit(
        p,
        Array.from({ length: 1 + ((r + p) % 3) }, () => id++ + p * 1000),
        r % 4 !== 3,
      ),
    );
    await rig.until(
      `round ${r}`,
      () => rig.state === 'failed' || [0, 1].every((p) => rig.written(p) === seqs[p] && (r % 4 === 3 || rig.durable(p) === seqs[p])),
    );
  }
  // Quiescent: everything durable (the non-durable tail by the interval timer), or failed and
  // every port told; then a moment for anything that would (wrongly) still come.
  const told = (p: number) => rig.received[p]!.some((m) => m.t === 'failed');
  await rig.until('quiescent', () =>
    rig.state === 'failed' ? [0, 1].every(told) : [0, 1].every((p) => rig.durable(p) === rig.submitted[p]!.length),
  );
  await sleep(5);
}

test('EIO at any single call of a run (file creation, reserve, writes, syncs, rotations): every invariant holds', async () => {
  const dry = new WalRig({ fileBytes: FILE_BYTES, ports: 2 });
  dry.start();
  await workload(dry, 16);
  dry.close();
  const total = dry.ffs.calls;
  assert.ok(dry.writer.fileNo >= 3, 'the run rotates a few times');
  let failedRuns = 0;
  for (let n = 1; n <= total; n++) {
    await withRig({ fileBytes: FILE_BYTES, ports: 2 }, async (rig) => {
      rig.ffs.failAt(n, 'EIO');
      rig.start();
      await workload(rig, 16);
      const what = `EIO at call ${n} of ${total}\n${rig.diag()}`;
      const failed = rig.state === 'failed';
      if (failed) failedRuns++;
      for (const p of [0, 1]) {
        const msgs = rig.received[p]!;
        const fi = msgs.findIndex((m) => m.t === 'failed');
        assert.equal(fi >= 0, failed, `port ${p}: 'failed' iff FAILED; ${what}`);
        if (fi >= 0) assert.equal(fi, msgs.length - 1, `port ${p}: 'failed' is the last message; ${what}`);
        let [w, d] = [0, 0];
        for (const a of rig.acks(p)) {
          assert.ok(
            a.writtenThrough >= w && a.durableThrough >= d && a.durableThrough <= a.writtenThrough,
            `port ${p}: acks monotone; ${what}`,
          );
          [w, d] = [a.writtenThrough, a.durableThrough];
        }
      }
      if (failed) assert.deepEqual(rig.writesAfter(rig.failedAtCall!), [], `nothing written after the failure; ${what}`);
      const acked = [0, 1].map((p) => rig.framesThrough(rig.durable(p), p));
      const submitted = [0, 1].map((p) => rig.framesThrough(rig.submitted[p]!.length, p));
      for (const mode of ['durable-only', 'random'] as const) {
        const got = await rig.scan(mode);
        for (const p of [0, 1]) {
          const mine = got.filter((i) => i !== BOOT && Math.floor(i / 1000) === p);
          assert.deepEqual(mine, submitted[p]!.slice(0, mine.length), `port ${p}: the log holds a prefix of its frames (${mode}); ${what}`);
          assert.ok(
            mine.length >= acked[p]!.length,
            `port ${p}: every frame acked durable survives (${mode}): ${mine.length} < ${acked[p]!.length}; ${what}`,
          );
        }
      }
    });
  }
  assert.ok(failedRuns > total / 2, `most injected faults fail the WAL (${failedRuns} of ${total})`);
});
