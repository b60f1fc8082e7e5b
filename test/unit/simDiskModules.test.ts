// The real storage modules on a SimDisk (test/support/simDisk.ts), proving the two agree on the
// Fs contract: WalWriter frames read back by scanWal after a crash are exactly the synced ones
// (durable-only) or a prefix covering them (random); a snapshot survives a crash right after
// writeSnapshotBytes, and a crash at ANY call of a second snapshot's write leaves the old or the
// new one, never a damaged one. The last tests cover directory entries: each
// new directory is fsynced into its parent (mkdirDurable), and a quarantine copy is durable
// before the WAL is cut.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fsyncDirSync, type Fs } from '../../src/storage/fs.js';
import { WalWriter } from '../../src/wal/walWriter.js';
import { createWalFile, listWalFiles } from '../../src/wal/files.js';
import { scanWal, type ScanResult } from '../../src/wal/scan.js';
import { decodeJsonBody, encodeJsonFrame } from '../../src/format/frame.js';
import { FrameType, WAL_HEADER_BYTES } from '../../src/format/constants.js';
import { encodeSnapshot, loadNewestSnapshot, writeSnapshotBytes, type SnapshotBody } from '../../src/storage/snapshot.js';
import { metaDir, segmentFileName, topicDir, topicsDir, walDir, walFileName } from '../../src/format/layout.js';
import { FLUSH_LANES, SegmentStore } from '../../src/storage/segmentStore.js';
import { listSegments, readSegment } from '../../src/storage/segmentLoad.js';
import { SimDisk, type CrashMode } from '../support/simDisk.js';

const DATA = '/srv/spool';

/** mkdir -p, then fsync every directory from the root down, so each new name is durable. */
function mkdirDurable(fsx: Fs, dir: string): void {
  fsx.mkdirSync(dir);
  let d = dir;
  const chain: string[] = [];
  for (; d !== '/'; d = path.posix.dirname(d)) chain.push(d);
  for (const x of ['/', ...chain.reverse()]) fsyncDirSync(fsx, x);
}

// ---- WAL ------------------------------------------------------------------------------------

function frame(i: number): Buffer {
  return encodeJsonFrame(FrameType.TOPIC_CONFIG, 0x01_000001, { i, pad: 'x'.repeat(i % 13) });
}

/** Frame numbers scanWal finds, in log order (and its result, in `last`). */
let last: ScanResult | undefined;
async function scannedFrames(fsx: Fs): Promise<number[]> {
  const got: number[] = [];
  last = await scanWal(fsx, DATA, undefined, false, {
    route: () => undefined,
    emit: () => undefined,
    progress: () => undefined,
    seen: (buf, f) => void got.push((decodeJsonBody(buf, f) as { i: number }).i),
  });
  return got;
}

/** Writes frames in batches through WalWriter, syncing some batches; returns frames written and synced. */
async function writeWal(disk: SimDisk, fsx: Fs): Promise<{ written: number; synced: number }> {
  const w = new WalWriter(fsx, DATA, { fileBytes: 1024, bootEpoch: 7, preallocate: true });
  w.open(1);
  let written = 0;
  let synced = 0;
  for (let batch = 0; batch < 40; batch++) {
    const bufs = Array.from({ length: 1 + (batch % 3) }, () => frame(written++));
    const size = bufs.reduce((n, b) => n + b.length, 0);
    if (!w.fits(size)) {
      w.rotate(); // syncs the old file first
      synced = written - bufs.length;
    }
    w.write(bufs);
    if (batch % 5 === 4) {
      w.syncNow();
      synced = written;
    } else if (batch % 7 === 6) {
      await w.syncAsync();
      synced = written;
    }
  }
  // An unsynced tail of several writes: a random crash may keep a later one and lose an earlier one.
  for (let k = 0; k < 4 && w.fits(frame(written).length); k++) w.write([frame(written++)]);
  assert.ok(w.fileNo > 2, 'the test should rotate a few times');
  assert.ok(disk.calls > 0);
  return { written, synced };
}

test('WalWriter on a SimDisk: after a durable-only crash scanWal reads back exactly the synced frames', async () => {
  const disk = new SimDisk({ seed: 'wal' });
  mkdirDurable(disk.fs(), walDir(DATA));
  const { written, synced } = await writeWal(disk, disk.fs());
  assert.ok(synced < written, 'some frames stay unsynced');
  assert.deepEqual(
    await scannedFrames(disk.fs()),
    Array.from({ length: written }, (_, i) => i),
    'before the crash',
  );
  disk.crash('durable-only');
  const after = disk.fs();
  assert.ok(listWalFiles(after, DATA).length > 2);
  assert.deepEqual(
    await scannedFrames(after),
    Array.from({ length: synced }, (_, i) => i),
  );
});

test('WalWriter on a SimDisk: after random crashes scanWal reads a prefix holding every synced frame, and a rescan agrees', async () => {
  let torn = 0;
  let quarantined = 0;
  for (let s = 0; s < 30; s++) {
    const disk = new SimDisk({ seed: `wal-random-${s}` });
    mkdirDurable(disk.fs(), walDir(DATA));
    const { written, synced } = await writeWal(disk, disk.fs());
    disk.crash('random');
    const got = await scannedFrames(disk.fs());
    if (last!.tornBytes > 0) torn++;
    if (last!.quarantinedBytes > 0) quarantined++;
    assert.deepEqual(
      got,
      Array.from({ length: got.length }, (_, i) => i),
      `seed ${s}: not a prefix`,
    );
    assert.ok(got.length >= synced && got.length <= written, `seed ${s}: ${got.length} frames, synced ${synced}, written ${written}`);
    assert.deepEqual(await scannedFrames(disk.fs()), got, `seed ${s}: the scan's repair changed the log`);
  }
  assert.ok(torn > 0 && quarantined > 0, `the seeds should reach torn tails (${torn}) and quarantines (${quarantined})`);
});

// ---- snapshots ------------------------------------------------------------------------------

function body(fileNo: number): SnapshotBody {
  return { version: 1, epoch: 1, cut: { fileNo, offset: WAL_HEADER_BYTES }, previousCut: null, topics: [] };
}

function load(fsx: Fs): { snap: SnapshotBody | undefined; warnings: string[] } {
  const warnings: string[] = [];
  return { snap: loadNewestSnapshot(fsx, DATA, (m) => warnings.push(m)), warnings };
}

test('a snapshot survives a crash right after writeSnapshotBytes', async () => {
  for (const mode of ['durable-only', 'random'] as CrashMode[]) {
    const disk = new SimDisk({ seed: `snap-${mode}` });
    mkdirDurable(disk.fs(), metaDir(DATA));
    await writeSnapshotBytes(disk.fs(), DATA, body(3).cut, encodeSnapshot(body(3)));
    disk.crash(mode);
    assert.deepEqual(load(disk.fs()), { snap: body(3), warnings: [] });
  }
});

test('a crash at any call of a snapshot write leaves the old snapshot (before the directory fsync) or the new one, never a damaged one', async () => {
  const A = body(3);
  const B = body(5);
  /** A disk holding snapshot A durably; returns the call count before B's write starts. */
  const prepared = async (seed: string): Promise<{ disk: SimDisk; base: number }> => {
    const disk = new SimDisk({ seed });
    mkdirDurable(disk.fs(), metaDir(DATA));
    await writeSnapshotBytes(disk.fs(), DATA, A.cut, encodeSnapshot(A));
    return { disk, base: disk.calls };
  };
  const dry = await prepared('dry');
  await writeSnapshotBytes(dry.disk.fs(), DATA, B.cut, encodeSnapshot(B));
  const total = dry.disk.calls - dry.base;
  const dirSync = dry.disk.callLog().find((r) => r.call > dry.base && r.op === 'file.sync' && r.path === metaDir(DATA));
  assert.ok(dirSync, `no directory fsync in:\n${dry.disk.formatCallLog()}`);
  for (let n = 1; n <= total; n++) {
    for (const [mode, seed] of [
      ['durable-only', 'd'],
      ['random', 'r1'],
      ['random', 'r2'],
      ['random', 'r3'],
    ] as [CrashMode, string][]) {
      const { disk, base } = await prepared(`${seed}-${n}`);
      disk.freezeAt(base + n);
      const writing = writeSnapshotBytes(disk.fs(), DATA, B.cut, encodeSnapshot(B));
      await Promise.race([writing, disk.frozen]);
      assert.ok(disk.isFrozen);
      disk.crash(mode);
      const want: SnapshotBody = base + n >= dirSync.call ? B : A;
      assert.deepEqual(
        load(disk.fs()),
        { snap: want, warnings: [] },
        `freeze after call ${n} of ${total} (${mode} ${seed}):\n${disk.describe()}`,
      );
    }
  }
});

// ---- new directories and copies are durable before anything relies on them -----------------

test('createWalFile in a fresh data directory makes wal/ durable', () => {
  const disk = new SimDisk();
  mkdirDurable(disk.fs(), DATA);
  createWalFile(disk.fs(), DATA, 1, 1);
  disk.crash('durable-only');
  assert.deepEqual(listWalFiles(disk.fs(), DATA), [1]);
});

test('the first snapshot of a fresh data directory survives a crash', async () => {
  const disk = new SimDisk();
  mkdirDurable(disk.fs(), DATA);
  await writeSnapshotBytes(disk.fs(), DATA, body(3).cut, encodeSnapshot(body(3)));
  disk.crash('durable-only');
  assert.deepEqual(load(disk.fs()).snap, body(3));
});

test('SegmentStore.flushAll makes a new topic directory durable', async () => {
  const disk = new SimDisk();
  mkdirDurable(disk.fs(), topicsDir(DATA));
  const store = new SegmentStore(disk.fs(), DATA);
  const f = encodeJsonFrame(FrameType.APPEND, 0x01_000001, { any: 1 });
  store.append({ topicId: 0x01_000001, segFirstSeq: 1, offset: 0 }, f);
  await store.flushAll();
  disk.crash('durable-only');
  assert.equal((await listSegments(disk.fs(), DATA, 0x01_000001)).length, 1);
});

test('a quarantined WAL tail is durable before the WAL file is truncated', async () => {
  const disk = new SimDisk();
  const fsx = disk.fs();
  mkdirDurable(fsx, walDir(DATA));
  const fd = createWalFile(fsx, DATA, 1, 1);
  const garbage = Buffer.alloc(8, 0xee);
  fsx.writeSync(fd, Buffer.concat([frame(0), garbage, frame(1)]), WAL_HEADER_BYTES);
  fsx.fsyncSync(fd);
  assert.deepEqual(await scannedFrames(fsx), [0]);
  disk.crash('durable-only');
  const after = disk.fs();
  const qdir = path.join(walDir(DATA), 'quarantine');
  assert.deepEqual(after.existsSync(qdir) ? after.readdirSync(qdir) : [], [`${walFileName(1)}.${WAL_HEADER_BYTES + frame(0).length}`]);
});

test('a newest segment whose last frame lost only its zero padding in a crash gets the padding back', async () => {
  // Found by the crash sweep (test/crash/crashSweep.test.ts): the frame passed its CRC, the index
  // counted it with its padding, and a cold read of it failed ("short segment read").
  const id = 0x01_000001;
  const frames = [
    encodeJsonFrame(FrameType.APPEND, id, { i: 0 }),
    ...['', 'x', 'xx', 'xxx'].map((pad) => encodeJsonFrame(FrameType.APPEND, id, { i: 1, pad })),
  ];
  const lastFrame = frames.slice(1).find((f) => f.readUInt32LE(0) % 8 !== 0)!; // one with padding
  const padding = lastFrame.length - 16 - lastFrame.readUInt32LE(0);
  assert.ok(padding > 0);
  const disk = new SimDisk();
  const fsx = disk.fs();
  mkdirDurable(fsx, topicsDir(DATA));
  const file = path.join(topicsDir(DATA), 'seg.log');
  fsx.writeFileSync(file, Buffer.concat([frames[0]!, lastFrame.subarray(0, lastFrame.length - padding)]));
  const seg = await readSegment(fsx, id, { firstSeq: 1, file }, true);
  const whole = frames[0]!.length + lastFrame.length;
  assert.equal(seg.size, whole);
  assert.equal(seg.buf.length, whole);
  assert.equal(fsx.statSync(file).size, whole, 'the file holds the padding again');
});

test('a sealed segment is synced and its name durable before the next segment of its topic is created', async () => {
  // Found by the crash sweep in 'random-dirs' mode (test/crash/crashSweep.test.ts): segment names
  // became durable only at the next checkpoint, so a crash could keep a topic's newer segment
  // and lose the older one; recovery, which replays only the appends after the segments' end,
  // then skipped what the WAL held for the lost one (holes, or damaged cold reads).
  const id = 0x01_000001;
  const frame = (i: number) => encodeJsonFrame(FrameType.APPEND, id, { i, pad: 'x'.repeat(40) });
  const [f1, f2, f3, f4] = [1, 2, 3, 4].map(frame) as [Buffer, Buffer, Buffer, Buffer];
  /** Writes segments 1 (two frames), 3 and 4 with no checkpoint; returns when all are written. */
  const writeSegments = async (disk: SimDisk) => {
    mkdirDurable(disk.fs(), topicDir(DATA, id));
    const store = new SegmentStore(disk.fs(), DATA);
    store.append({ topicId: id, segFirstSeq: 1, offset: 0 }, f1);
    store.append({ topicId: id, segFirstSeq: 1, offset: f1.length }, f2);
    store.append({ topicId: id, segFirstSeq: 3, offset: 0 }, f3);
    store.append({ topicId: id, segFirstSeq: 4, offset: 0 }, f4);
    assert.deepEqual(await store.readRange(id, 4, 0, f4.length), f4); // after the queued writes
  };
  const disk = new SimDisk();
  await writeSegments(disk);
  disk.crash('durable-only');
  const segs = await listSegments(disk.fs(), DATA, id);
  assert.deepEqual(
    segs.map((s) => s.firstSeq),
    [1, 3],
    'the sealed segments are named after a power loss (the active one need not be)',
  );
  assert.equal((await readSegment(disk.fs(), id, segs[0]!, false)).size, f1.length + f2.length);
  // Whatever unsynced names land, the segments that survive have no gap.
  for (let seed = 0; seed < 24; seed++) {
    const d = new SimDisk({ seed: `names-${seed}` });
    await writeSegments(d);
    d.crash('random-dirs');
    const got = (await listSegments(d.fs(), DATA, id)).map((s) => s.firstSeq);
    assert.deepEqual(got, [1, 3, 4].slice(0, got.length), `seed ${seed}: segments ${got.join(',')}`);
  }
});

test('a segment roll that meets a full disk at the directory fsync makes the sealed name durable on its retry', async () => {
  const id = 0x01_000001;
  const [f1, f3] = [1, 3].map((i) => encodeJsonFrame(FrameType.APPEND, id, { i })) as [Buffer, Buffer];
  const disk = new SimDisk();
  const dir = topicDir(DATA, id);
  mkdirDurable(disk.fs(), dir);
  const store = new SegmentStore(disk.fs(), DATA);
  store.append({ topicId: id, segFirstSeq: 1, offset: 0 }, f1);
  disk.failWhen((c) => c.op === 'file.sync' && c.path === dir, 'ENOSPC');
  store.append({ topicId: id, segFirstSeq: 3, offset: 0 }, f3);
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(disk.fs().readdirSync(dir), [segmentFileName(1)], 'the next segment waits for the sealed name');
  disk.clearFaults();
  for (let i = 0; i < 40 && disk.fs().readdirSync(dir).length < 2; i++) await new Promise((r) => setTimeout(r, 50)); // the retry, 500 ms on
  assert.deepEqual(await store.readRange(id, 3, 0, f3.length), f3);
  store.stop();
  disk.crash('durable-only');
  assert.deepEqual(
    (await listSegments(disk.fs(), DATA, id)).map((s) => s.firstSeq),
    [1],
  );
});

test('open segment files are bounded; a file closed with unsynced writes is still made durable by flushAll', async () => {
  // Many-topics issue: a topic kept its segment fd open for good, so the count of topics that
  // had written was limited by `ulimit -n` (EMFILE then failed segment writes for the worker).
  const disk = new SimDisk();
  mkdirDurable(disk.fs(), topicsDir(DATA));
  const store = new SegmentStore(disk.fs(), DATA, undefined, 2);
  const ids = [1, 2, 3, 4, 5].map((k) => 0x01_000000 + k);
  const frames = new Map<number, Buffer[]>();
  for (let round = 0; round < 3; round++) {
    for (const id of ids) {
      const f = encodeJsonFrame(FrameType.APPEND, id, { id, round });
      const fs = frames.get(id) ?? [];
      store.append({ topicId: id, segFirstSeq: 1, offset: fs.reduce((n, b) => n + b.length, 0) }, f);
      frames.set(id, [...fs, f]);
    }
  }
  for (const id of ids) {
    const want = Buffer.concat(frames.get(id)!);
    assert.deepEqual(await store.readRange(id, 1, 0, want.length), want, `topic ${id} reads back`);
  }
  assert.ok(store.openCount <= 2, `${store.openCount} files open`);
  // A roll of a topic whose fd was closed while dirty syncs the sealed file first.
  const last = ids[0]!;
  const rolled = encodeJsonFrame(FrameType.APPEND, last, { rolled: true });
  store.append({ topicId: last, segFirstSeq: 99, offset: 0 }, rolled);
  await store.flushAll();
  assert.ok(store.openCount <= 2, `${store.openCount} files open after the flush`);
  disk.crash('durable-only');
  for (const id of ids) {
    const segs = await listSegments(disk.fs(), DATA, id);
    const seg = await readSegment(disk.fs(), id, segs[0]!, segs.length === 1);
    assert.deepEqual(seg.buf, Buffer.concat(frames.get(id)!), `topic ${id} is durable`);
  }
  assert.deepEqual(
    (await listSegments(disk.fs(), DATA, last)).map((s) => s.firstSeq),
    [1, 99],
  );
});

test('flushAll reopens at most FLUSH_LANES files closed while dirty at a time', async () => {
  // Many-topics issue: a checkpoint reopened every dirty, closed segment file at once, and at
  // ~20k topics written since the last checkpoint the worker hit EMFILE (storage FAILED).
  const disk = new SimDisk();
  mkdirDurable(disk.fs(), topicsDir(DATA));
  const inner = disk.fs();
  let open = 0;
  let maxOpen = 0;
  const counting: Fs = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop !== 'open') return Reflect.get(target, prop, receiver);
      return async (...args: Parameters<Fs['open']>) => {
        const f = await target.open(...args);
        maxOpen = Math.max(maxOpen, ++open);
        const close = f.close.bind(f);
        f.close = async () => {
          open--;
          await close();
        };
        return f;
      };
    },
  });
  const store = new SegmentStore(counting, DATA, undefined, 2);
  const ids = Array.from({ length: 300 }, (_, k) => 0x01_000000 + k);
  assert.ok(FLUSH_LANES + 3 < ids.length, 'more dirty, closed files than lanes');
  for (const id of ids) store.append({ topicId: id, segFirstSeq: 1, offset: 0 }, encodeJsonFrame(FrameType.APPEND, id, { id }));
  for (const id of ids) await store.readRange(id, 1, 0, 8);
  maxOpen = open;
  await store.flushAll();
  assert.ok(maxOpen <= 2 + FLUSH_LANES + 1, `${maxOpen} files open at once during flushAll`);
  disk.crash('durable-only');
  for (const id of ids.slice(0, 5)) assert.equal((await listSegments(disk.fs(), DATA, id)).length, 1, `topic ${id} is durable`);
});

test("with a write delay, a topic's frames share one writev; flushAll, reads and unlinks do not wait for the delay", async () => {
  // Hot-paths issue: one libuv round trip per single-record append was ~10% of the worker's busy
  // time at one client. The delay is long here so that only the early writes can explain a pass.
  const disk = new SimDisk();
  mkdirDurable(disk.fs(), topicsDir(DATA));
  const inner = disk.fs();
  let writevs = 0;
  const counting: Fs = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop !== 'open') return Reflect.get(target, prop, receiver);
      return async (...args: Parameters<Fs['open']>) => {
        const f = await target.open(...args);
        const writev = f.writev.bind(f);
        f.writev = (...a: Parameters<typeof f.writev>) => {
          writevs++;
          return writev(...a);
        };
        return f;
      };
    },
  });
  const store = new SegmentStore(counting, DATA, undefined, 8, undefined, 60_000);
  const id = 0x01_000001;
  const frames = [0, 1, 2, 3].map((i) => encodeJsonFrame(FrameType.APPEND, id, { i }));
  let at = 0;
  let written = 0;
  for (const f of frames) {
    store.append({ topicId: id, segFirstSeq: 1, offset: at }, f, () => written++);
    at += f.length;
  }
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(written, 0, 'nothing is written before the delay');
  // A read that follows the writes is served after them, without waiting out the delay.
  const all = Buffer.concat(frames);
  assert.deepEqual(await store.readRange(id, 1, 0, all.length), all);
  assert.equal(writevs, 1, 'four frames, one writev');
  assert.equal(written, 4);
  // A checkpoint writes what waits for the delay, and makes it durable.
  const id2 = 0x01_000002;
  const f2 = encodeJsonFrame(FrameType.APPEND, id2, { i: 9 });
  store.append({ topicId: id2, segFirstSeq: 1, offset: 0 }, f2);
  await store.flushAll();
  // An unlink of a segment that still has delayed frames runs after their write (the write
  // must not recreate the file afterwards).
  const f3 = encodeJsonFrame(FrameType.APPEND, id2, { i: 10 });
  store.append({ topicId: id2, segFirstSeq: 7, offset: 0 }, f3);
  await store.unlinkSegment(id2, 1);
  await store.close();
  disk.crash('durable-only');
  const seg = await readSegment(disk.fs(), id, (await listSegments(disk.fs(), DATA, id))[0]!, true);
  assert.deepEqual(seg.buf, all, 'the delayed frames are durable after flushAll');
  assert.deepEqual(
    (await listSegments(disk.fs(), DATA, id2)).map((s) => s.firstSeq),
    [7],
  );
});
