// Recovery scan of the WAL (src/wal/scan.ts, docs/ARCHITECTURE.md "Checkpoints and recovery"): crafted WAL directories with clean
// logs, torn tails, garbage before a valid frame in the last file (quarantined, treated as torn),
// and mid-log corruption (a bad frame in a file followed by a later file with valid frames:
// refuse to start, or keep the prefix with truncateOnCorruption). Scans are idempotent.
import { after, test } from 'node:test';
import { nodeFs } from '../../src/storage/fs.js';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { scanWal, type ScanSink, type ScanResult } from '../../src/wal/scan.js';
import { CorruptionError } from '../../src/core/corruption.js';
import { FaultFs } from '../support/faultFs.js';
import { createWalFile, encodeWalHeader } from '../../src/wal/files.js';
import {
  encodeAppend,
  encodeJsonFrame,
  encodeSeqReserve,
  probeFrame,
  readAppendHead,
  type AppendRecordInput,
  type FrameView,
} from '../../src/format/frame.js';
import { FrameType, WAL_HEADER_BYTES } from '../../src/format/constants.js';
import { quarantinePendingFile, walDir, walFileName } from '../../src/format/layout.js';
import { defaultConfig } from '../../src/protocol/topicConfig.js';
import type { WalPosition } from '../../src/protocol/messages/wal.js';

// ---- fixtures ------------------------------------------------------------------------------

const dirs: string[] = [];
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-walscan-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function rec(data: string): AppendRecordInput {
  const b = Buffer.from(data, 'utf8');
  return {
    nodeLit: undefined,
    tagLit: undefined,
    metaLen: -1,
    dataLen: b.length,
    writeMeta: () => undefined,
    writeData: (dst, off) => void b.copy(dst, off),
  };
}

const TOPIC = 0x01_000001; // epoch 1, counter 1

function createFrame(id = TOPIC, name = 'orders'): Buffer {
  return encodeJsonFrame(FrameType.TOPIC_CREATE, id, { name, config: defaultConfig(), created_ms: 1767225600000 }, 1);
}

/** An APPEND frame of `n` records starting at `firstSeq`; record data is `"s<seq>"`. */
function appendFrame(firstSeq: number, n = 3, id = TOPIC): Buffer {
  const recs: AppendRecordInput[] = [];
  for (let i = 0; i < n; i++) recs.push(rec(JSON.stringify(`s${firstSeq + i}-${'x'.repeat((firstSeq * 7) % 23)}`)));
  return encodeAppend(id, firstSeq, 1767225600000 + firstSeq, undefined, recs);
}

function bootFrame(epoch: number): Buffer {
  return encodeJsonFrame(FrameType.BOOT, 0, { epoch, seed: 'abc' }, 1);
}

/** Writes WAL file `fileNo` with the header (via createWalFile) followed by `body`. */
function writeWal(dataDir: string, fileNo: number, body: Buffer[], epoch = 1): string {
  const fd = createWalFile(nodeFs, dataDir, fileNo, epoch);
  try {
    const b = Buffer.concat(body);
    if (b.length > 0) fs.writeSync(fd, b, 0, b.length, WAL_HEADER_BYTES);
  } finally {
    fs.closeSync(fd);
  }
  return walPath(dataDir, fileNo);
}

function walPath(dataDir: string, fileNo: number): string {
  return path.join(walDir(dataDir), walFileName(fileNo));
}

interface Collected {
  sink: ScanSink;
  /** Frames delivered through emit, per worker, as hex of their bytes. */
  emitted: Map<number, string[]>;
  /** Every frame passed to seen(). */
  seen: { type: number; topicId: number }[];
  progress: number[];
}

function collector(): Collected {
  const c: Collected = { emitted: new Map(), seen: [], progress: [], sink: undefined as unknown as ScanSink };
  c.sink = {
    route(_buf: Buffer, f: FrameView) {
      return f.topicId === 0 ? undefined : f.topicId % 2;
    },
    emit(worker: number, chunk: Buffer) {
      let list = c.emitted.get(worker);
      if (!list) c.emitted.set(worker, (list = []));
      let off = 0;
      while (off < chunk.length) {
        const p = probeFrame(chunk, off, chunk.length);
        assert.ok(p.ok, `emitted chunk holds a bad frame at ${off}`);
        list.push(chunk.subarray(off, off + p.frame.size).toString('hex'));
        off += p.frame.size;
      }
    },
    progress(p: number) {
      c.progress.push(p);
    },
    seen(_buf: Buffer, f: FrameView) {
      c.seen.push({ type: f.type, topicId: f.topicId });
    },
  };
  return c;
}

/**
 * The scan reads files through a window (8 MiB by default); these tests use a tiny one, so frames
 * straddle window ends, windows grow for frames larger than them, and zero tails are checked
 * window by window. `window` overrides it.
 */
async function scan(
  dataDir: string,
  opts: { from?: WalPosition; truncate?: boolean; window?: number } = {},
): Promise<{ res: ScanResult; c: Collected }> {
  const c = collector();
  const res = await scanWal(nodeFs, dataDir, opts.from, opts.truncate ?? false, c.sink, opts.window ?? 40);
  return { res, c };
}

function hexes(frames: Buffer[]): string[] {
  return frames.map((f) => f.toString('hex'));
}

function size(file: string): number {
  return fs.statSync(file).size;
}

function sum(frames: Buffer[]): number {
  return frames.reduce((a, f) => a + f.length, 0);
}

function listWal(dataDir: string): string[] {
  return fs
    .readdirSync(walDir(dataDir))
    .filter((n) => n.endsWith('.wal'))
    .sort();
}

// ---- tests ---------------------------------------------------------------------------------

/** What a scan that met no damage returns. */
function clean(lastFileNo: number, frames: number, bytes: number) {
  return { lastFileNo, frames, bytes, tornBytes: 0, quarantinedBytes: 0, droppedFileBytes: 0, framesDropped: false, damage: [] };
}

test('clean log over several files: every frame delivered in order, only the zeros after the last frame given back', async () => {
  const dir = tmp();
  const f1 = [bootFrame(1), createFrame(), appendFrame(1), appendFrame(4, 10), encodeSeqReserve(TOPIC, 1024)];
  const other = 0x01_000002;
  const f2 = [createFrame(other, 'audit'), appendFrame(14, 2), appendFrame(1, 1, other), appendFrame(16, 5)];
  const p1 = writeWal(dir, 1, f1);
  // The newest file ends in a zeroed tail (pre-zeroed space): a clean end, not a torn one.
  const p2 = writeWal(dir, 2, [...f2, Buffer.alloc(4096)]);
  const s1 = size(p1);
  const s2 = size(p2);
  const { res, c } = await scan(dir);
  assert.deepEqual(res, clean(2, f1.length + f2.length, sum(f1) + sum(f2)));
  const all = [...f1, ...f2];
  for (const w of [0, 1]) {
    const want = hexes(all.filter((f) => probeOk(f).topicId !== 0 && probeOk(f).topicId % 2 === w));
    assert.deepEqual(c.emitted.get(w) ?? [], want, `worker ${w}`);
  }
  assert.deepEqual(
    c.seen.map((s) => s.type),
    all.map((f) => probeOk(f).type),
  );
  assert.equal(size(p1), s1);
  // A run never writes into an earlier run's file: the pre-zeroed space after the log's end
  // would only hold disk space.
  assert.equal(size(p2), s2 - 4096, 'the zeroed tail of the newest file is given back');
  assert.equal(fs.existsSync(path.join(walDir(dir), 'quarantine')), false);
  assert.equal(c.progress.at(-1), 1);
  for (let i = 1; i < c.progress.length; i++) assert.ok(c.progress[i]! >= c.progress[i - 1]!, 'progress never goes down');
});

test('empty directory and header-only newest file scan clean', async () => {
  const dir = tmp();
  assert.deepEqual((await scan(dir)).res, clean(0, 0, 0));
  writeWal(dir, 1, [bootFrame(1), createFrame()]);
  writeWal(dir, 2, []); // rotated, then crashed before any frame
  const { res } = await scan(dir);
  assert.equal(res.frames, 2);
  assert.equal(res.lastFileNo, 2);
  assert.equal(res.tornBytes, 0);
  // A newest file whose header never became durable (shorter than a header) is skipped.
  fs.writeFileSync(walPath(dir, 3), encodeWalHeader(3, 1).subarray(0, 10));
  const again = await scan(dir);
  assert.equal(again.res.frames, 2);
  assert.equal(again.res.tornBytes, 0);
});

test('torn tail in the last file: frames before it delivered, file truncated at the valid end', async () => {
  const dir = tmp();
  const f1 = [bootFrame(1), createFrame(), appendFrame(1)];
  writeWal(dir, 1, f1);
  const good = [appendFrame(4, 4), appendFrame(8, 2)];
  const torn = appendFrame(10, 6);
  // Cuts strictly inside the frame's body (a cut inside the trailing zero padding leaves the
  // frame whole; frame.test.ts covers that case).
  const bodyEnd = 16 + torn.readUInt32LE(0);
  for (const cut of [1, 7, 16, 23, 24, 40, bodyEnd - 9, bodyEnd - 1]) {
    const d = tmp();
    fs.cpSync(dir, d, { recursive: true });
    const part = torn.subarray(0, cut);
    const p2 = writeWal(d, 2, [...good, part]);
    const validEnd = WAL_HEADER_BYTES + sum(good);
    const { res, c } = await scan(d);
    assert.equal(res.tornBytes, part.length, `cut ${cut}`);
    assert.equal(res.quarantinedBytes, 0);
    assert.equal(res.frames, f1.length + good.length);
    assert.equal(res.lastFileNo, 2);
    assert.equal(size(p2), validEnd, `file truncated at the valid end (cut ${cut})`);
    assert.deepEqual(c.emitted.get(TOPIC % 2), hexes([createFrame(), appendFrame(1), ...good]));
    assert.equal(fs.existsSync(path.join(walDir(d), 'quarantine')), false);
    // A torn tail drops no whole frame: recovery removes orphans as ever (no quarantine/pending).
    assert.equal(res.framesDropped, false);
    assert.equal(fs.existsSync(quarantinePendingFile(d)), false);
    // Idempotent: a second scan sees the same frames and nothing torn.
    const second = await scan(d);
    assert.deepEqual(second.res, { ...res, tornBytes: 0 });
    assert.deepEqual(second.c.emitted, c.emitted);
    assert.equal(size(p2), validEnd);
  }
});

test('a torn tail that is all non-zero garbage (no valid frame after it) is dropped without quarantine', async () => {
  const dir = tmp();
  const good = [bootFrame(1), createFrame(), appendFrame(1)];
  const garbage = Buffer.alloc(200, 0xab);
  const p = writeWal(dir, 1, [...good, garbage]);
  const { res } = await scan(dir);
  assert.equal(res.tornBytes, 200);
  assert.equal(res.quarantinedBytes, 0);
  assert.equal(size(p), WAL_HEADER_BYTES + sum(good));
});

test('garbage followed by a valid frame later in the same last file: quarantined and treated as torn', async () => {
  const dir = tmp();
  const before = [bootFrame(1), createFrame(), appendFrame(1)];
  // A torn frame (a prefix of a real frame) then valid frames written out of order by the kernel.
  const torn = appendFrame(4, 5).subarray(0, 40);
  const after = [appendFrame(9, 2), appendFrame(11, 1)];
  const p = writeWal(dir, 1, [...before, torn, Buffer.alloc(8), ...after]);
  const fileBytes = size(p);
  const validEnd = WAL_HEADER_BYTES + sum(before);
  const { res, c } = await scan(dir);
  assert.equal(res.frames, before.length, 'frames after the bad spot are not delivered');
  assert.equal(res.tornBytes, fileBytes - validEnd);
  assert.equal(res.quarantinedBytes, fileBytes - validEnd);
  assert.equal(res.damage.length, 1, 'reported as damage, not a clean end');
  assert.equal(res.damage[0]!.offset, validEnd);
  assert.deepEqual(c.emitted.get(TOPIC % 2), hexes([createFrame(), appendFrame(1)]));
  assert.equal(size(p), validEnd);
  const qdir = path.join(walDir(dir), 'quarantine');
  const q = fs.readdirSync(qdir);
  assert.deepEqual(q, [`${walFileName(1)}.${validEnd}`]);
  const saved = fs.readFileSync(path.join(qdir, q[0]!));
  assert.deepEqual(saved, Buffer.concat([torn, Buffer.alloc(8), ...after]), 'the quarantine holds exactly the dropped bytes');
  // Whole frames dropped: recovery keeps the orphans they might have created (the marker says so
  // until it has, src/supervisor/orphans.ts).
  assert.equal(res.framesDropped, true);
  assert.match(fs.readFileSync(quarantinePendingFile(dir), 'utf8'), /the whole frames after it dropped/);
  // Idempotent: nothing new is torn or quarantined on the next scan.
  const second = await scan(dir);
  assert.deepEqual(second.res, { ...res, tornBytes: 0, quarantinedBytes: 0, framesDropped: false, damage: [] });
  assert.deepEqual(fs.readdirSync(qdir), q);
  assert.equal(size(p), validEnd);
});

test('a zero gap followed by a valid frame in the last file is also quarantined, not a clean end', async () => {
  const dir = tmp();
  const before = [bootFrame(1), createFrame()];
  const p = writeWal(dir, 1, [...before, Buffer.alloc(64), appendFrame(1)]);
  const { res } = await scan(dir);
  assert.equal(res.frames, 2);
  assert.ok(res.quarantinedBytes > 0);
  assert.equal(size(p), WAL_HEADER_BYTES + sum(before));
});

test('a bad frame in a non-last file while a later file holds valid frames: CorruptionError naming file and offset', async () => {
  const dir = tmp();
  const pre = [bootFrame(1), createFrame(), appendFrame(1)];
  const bad = appendFrame(4, 3);
  bad[bad.length - 12] = bad[bad.length - 12]! ^ 0x40; // a flipped bit inside the body: CRC fails
  const tail1 = [appendFrame(7, 2)];
  const p1 = writeWal(dir, 1, [...pre, bad, ...tail1]);
  const f2 = [appendFrame(9, 3), appendFrame(12, 1)];
  const p2 = writeWal(dir, 2, f2);
  const f3 = [appendFrame(13, 1)];
  const p3 = writeWal(dir, 3, f3);
  const sizes = [size(p1), size(p2), size(p3)];
  const badOff = WAL_HEADER_BYTES + sum(pre);
  await assert.rejects(scan(dir), (err: unknown) => {
    assert.ok(err instanceof CorruptionError, `got ${String(err)}`);
    assert.ok(err.message.includes(p1), `message names the file: ${err.message}`);
    assert.ok(err.message.includes(String(badOff)), `message names the offset ${badOff}: ${err.message}`);
    assert.match(err.message, /SERVICE_RECOVERY_TRUNCATE/);
    return true;
  });
  // Refusing to start changes nothing on disk.
  assert.deepEqual([size(p1), size(p2), size(p3)], sizes);
  assert.deepEqual(listWal(dir), [walFileName(1), walFileName(2), walFileName(3)]);
  assert.equal(fs.existsSync(quarantinePendingFile(dir)), false);

  // truncateOnCorruption: keep the prefix, drop the rest of that file and every later file.
  const { res, c } = await scan(dir, { truncate: true });
  assert.equal(res.frames, pre.length);
  assert.equal(res.lastFileNo, 1);
  assert.equal(size(p1), badOff);
  assert.deepEqual(listWal(dir), [walFileName(1)]);
  // The later files are kept aside, whole, not deleted.
  assert.deepEqual(
    fs
      .readdirSync(path.join(walDir(dir), 'quarantine'))
      .filter((f) => f.endsWith('.dropped'))
      .sort(),
    [`${walFileName(2)}.dropped`, `${walFileName(3)}.dropped`],
  );
  assert.equal(res.droppedFileBytes, sizes[1]! + sizes[2]!);
  assert.equal(res.framesDropped, true);
  assert.ok(fs.existsSync(quarantinePendingFile(dir)), 'the marker is left for recovery');
  assert.deepEqual(c.emitted.get(TOPIC % 2), hexes([createFrame(), appendFrame(1)]));
  // Idempotent afterwards, also without the override.
  for (const truncate of [true, false]) {
    const again = await scan(dir, { truncate });
    assert.deepEqual(again.res, clean(1, pre.length, sum(pre)));
    assert.deepEqual(again.c.emitted, c.emitted);
  }
  // A later start that reuses a dropped file's number and drops it again keeps both copies.
  const p2again = writeWal(dir, 2, [appendFrame(20, 1)]);
  writeWal(dir, 3, [appendFrame(21, 1)]);
  const damaged = fs.readFileSync(p2again);
  damaged[0] = damaged[0]! ^ 0x40; // its header's magic
  fs.writeFileSync(p2again, damaged);
  await scan(dir, { truncate: true });
  assert.deepEqual(
    fs
      .readdirSync(path.join(walDir(dir), 'quarantine'))
      .filter((f) => f.includes('.dropped'))
      .sort(),
    [`${walFileName(2)}.dropped`, `${walFileName(2)}.dropped.2`, `${walFileName(3)}.dropped`, `${walFileName(3)}.dropped.2`],
  );
});

test('a torn tail followed only by later files that hold no frame (the pre-allocated reserve, a header-less file) is a torn tail, not corruption', async () => {
  // The WAL writer keeps the next file pre-allocated (header + zeros) while it writes the
  // current one, so a torn tail in the current file always has a "later file" after it.
  for (const later of ['reserve', 'header-only', 'header-less', 'zeroed', 'all three'] as const) {
    const dir = tmp();
    const good = [bootFrame(1), createFrame(), appendFrame(1)];
    const torn = appendFrame(4, 3).subarray(0, 30);
    const p1 = writeWal(dir, 1, [...good, torn, Buffer.alloc(512)]);
    if (later === 'reserve' || later === 'all three') writeWal(dir, 2, [Buffer.alloc(4096)]);
    if (later === 'header-only' || later === 'all three') writeWal(dir, later === 'all three' ? 3 : 2, []);
    // A creation cut short before its header (or a preparation stopped after a WAL failure).
    if (later === 'header-less' || later === 'all three') fs.writeFileSync(walPath(dir, later === 'all three' ? 4 : 2), Buffer.alloc(0));
    // A pre-allocation whose header never became durable: zeros only.
    if (later === 'zeroed') fs.writeFileSync(walPath(dir, 2), Buffer.alloc(4096));
    const { res, c } = await scan(dir);
    assert.equal(res.frames, good.length, later);
    assert.equal(res.tornBytes, torn.length + 512, later);
    assert.equal(size(p1), WAL_HEADER_BYTES + sum(good), `${later}: cut at the valid end`);
    assert.deepEqual(c.emitted.get(TOPIC % 2), hexes([createFrame(), appendFrame(1)]));
    // A header-less file at the end is removed (the next run reuses its number); a file with a
    // durable header stays, and the next run starts after it.
    const lastKept = { reserve: 2, 'header-only': 2, 'header-less': 1, zeroed: 1, 'all three': 3 }[later];
    assert.equal(res.lastFileNo, lastKept, later);
    assert.equal(listWal(dir).at(-1), walFileName(lastKept), later);
    // Files that held no frame drop nothing: orphans go as in any start, and nothing is reported
    // dropped or kept in quarantine (they are unlinked).
    assert.equal(res.framesDropped, false, later);
    assert.equal(res.droppedFileBytes, 0, later);
    assert.equal(fs.existsSync(path.join(dir, 'wal', 'quarantine')), false, later);
    assert.equal(fs.existsSync(quarantinePendingFile(dir)), false, later);
  }
});

test('a header-less empty file between files with frames is skipped (a creation cut short, then a later boot)', async () => {
  const dir = tmp();
  const f1 = [bootFrame(1), createFrame(), appendFrame(1)];
  const f3 = [bootFrame(2), appendFrame(4, 2)];
  writeWal(dir, 1, f1);
  fs.writeFileSync(walPath(dir, 2), Buffer.alloc(0));
  writeWal(dir, 3, f3);
  const { res } = await scan(dir);
  assert.deepEqual(res, clean(3, f1.length + f3.length, sum(f1) + sum(f3)));
});

test('a torn tail followed by a later file holding anything but zeros after its header is still corruption', async () => {
  const dir = tmp();
  writeWal(dir, 1, [bootFrame(1), createFrame(), appendFrame(1).subarray(0, 40)]);
  writeWal(dir, 2, [Buffer.alloc(64), Buffer.from([1]), Buffer.alloc(64)]);
  await assert.rejects(scan(dir), CorruptionError);
});

test('a damaged header in a non-last file: CorruptionError; with truncateOnCorruption the prefix is kept and later files removed', async () => {
  const dir = tmp();
  const f1 = [bootFrame(1), createFrame(), appendFrame(1)];
  writeWal(dir, 1, f1);
  const p2 = writeWal(dir, 2, [appendFrame(4, 2)]);
  writeWal(dir, 3, [appendFrame(6, 2)]);
  const b = fs.readFileSync(p2);
  b[3] = b[3]! ^ 0xff; // bad magic
  fs.writeFileSync(p2, b);
  await assert.rejects(scan(dir), (err: unknown) => err instanceof CorruptionError && err.message.includes(p2));
  assert.equal(fs.existsSync(quarantinePendingFile(dir)), false, 'a refused start leaves no marker');
  const { res } = await scan(dir, { truncate: true });
  assert.equal(res.frames, f1.length);
  assert.equal(res.framesDropped, true);
  assert.match(fs.readFileSync(quarantinePendingFile(dir), 'utf8'), /^SERVICE_RECOVERY_TRUNCATE: .*dropped with the WAL files after it/);
  // Everything from the damaged file on is dropped, so that frames written after this boot (in
  // a file numbered after lastFileNo) are not hidden behind the damaged file on the next boot.
  assert.equal(res.lastFileNo, 1, 'lastFileNo is the last kept file');
  assert.deepEqual(listWal(dir), [walFileName(1)], 'later files removed');
  assert.deepEqual(
    fs.readdirSync(path.join(walDir(dir), 'quarantine')).sort(),
    [`${walFileName(2)}.dropped`, `${walFileName(3)}.dropped`],
    'into quarantine, whole',
  );
  const again = await scan(dir);
  assert.equal(again.res.frames, f1.length);
});

test('on a disk too full for the quarantine/pending marker nothing is dropped for good', async () => {
  const full = () => {
    const ffs = new FaultFs(nodeFs);
    ffs.failWhen((c) => c.op === 'openSync' && (c.path ?? '').endsWith(`${path.sep}quarantine${path.sep}pending`), 'ENOSPC');
    return ffs;
  };
  // SERVICE_RECOVERY_TRUNCATE over a damaged header: refused, every file where it was.
  const dir = tmp();
  writeWal(dir, 1, [bootFrame(1), createFrame(), appendFrame(1)]);
  const p2 = writeWal(dir, 2, [appendFrame(4, 2)]);
  writeWal(dir, 3, [appendFrame(6, 2)]);
  const b = fs.readFileSync(p2);
  b[3] = b[3]! ^ 0xff;
  fs.writeFileSync(p2, b);
  await assert.rejects(scanWal(full(), dir, undefined, true, collector().sink, 40), (err: unknown) => {
    assert.ok(err instanceof CorruptionError, String(err));
    assert.match(err.message, /cannot drop it while the disk is full/);
    return true;
  });
  assert.deepEqual(listWal(dir), [walFileName(1), walFileName(2), walFileName(3)]);
  assert.equal(fs.existsSync(quarantinePendingFile(dir)), false);
  // Whole frames after a bad one in the last file: reported, and left in the file for the next start.
  const d = tmp();
  const before = [bootFrame(1), createFrame()];
  const p = writeWal(d, 1, [...before, Buffer.alloc(64), appendFrame(1)]);
  const bytes = size(p);
  const res = await scanWal(full(), d, undefined, false, collector().sink, 40);
  assert.equal(res.frames, before.length);
  assert.equal(res.framesDropped, true, 'this start keeps the orphans all the same');
  assert.equal(res.damage.length, 1);
  assert.equal(res.quarantinedBytes, 0);
  assert.equal(size(p), bytes, 'not cut');
});

test('scanning from a checkpoint position skips earlier files and the prefix of the cut file', async () => {
  const dir = tmp();
  const f1 = [bootFrame(1), createFrame(), appendFrame(1)];
  writeWal(dir, 1, f1);
  const head2 = [appendFrame(4, 2), appendFrame(6, 2)];
  const tail2 = [appendFrame(8, 1), encodeSeqReserve(TOPIC, 2048)];
  writeWal(dir, 2, [...head2, ...tail2]);
  const f3 = [appendFrame(9, 3)];
  writeWal(dir, 3, f3);
  const from = { fileNo: 2, offset: WAL_HEADER_BYTES + sum(head2) };
  const { res, c } = await scan(dir, { from });
  assert.equal(res.frames, tail2.length + f3.length);
  assert.equal(res.lastFileNo, 3);
  assert.deepEqual(c.emitted.get(TOPIC % 2), hexes([...tail2, ...f3]));
  // The files themselves are untouched by a scan that found nothing wrong.
  assert.deepEqual(listWal(dir), [walFileName(1), walFileName(2), walFileName(3)]);
});

test('a torn tail in the last file after earlier good files keeps all earlier files intact', async () => {
  const dir = tmp();
  const f1 = [bootFrame(1), createFrame(), appendFrame(1)];
  const p1 = writeWal(dir, 1, f1);
  const s1 = size(p1);
  const f2 = [appendFrame(4, 3)];
  const p2 = writeWal(dir, 2, [...f2, appendFrame(7, 9).subarray(0, 50)]);
  const { res } = await scan(dir);
  assert.equal(res.frames, f1.length + f2.length);
  assert.equal(res.tornBytes, 50);
  assert.equal(size(p1), s1);
  assert.equal(size(p2), WAL_HEADER_BYTES + sum(f2));
  const heads = (await scan(dir)).c.emitted
    .get(TOPIC % 2)!
    .map((h) => Buffer.from(h, 'hex'))
    .filter((b) => probeOk(b).type === FrameType.APPEND)
    .map((b) => readAppendHead(b, probeOk(b)).firstSeq);
  assert.deepEqual(heads, [1, 4]);
});

function probeOk(buf: Buffer): FrameView {
  const p = probeFrame(buf, 0, buf.length);
  if (!p.ok) assert.fail(`not a frame: ${p.reason}`);
  return p.frame;
}

test('a torn tail followed only by the pre-allocated next file (header and zeros) is a torn tail, not mid-log corruption', async () => {
  // The writer keeps the next file ready (WalWriter.prepareNext), so after a power loss the file
  // being written is usually not the last one. Found by the crash sweep (test/crash/crashSweep.test.ts):
  // recovery refused to start, asking for SERVICE_RECOVERY_TRUNCATE.
  for (const reserve of [Buffer.alloc(8192 - WAL_HEADER_BYTES), Buffer.alloc(0)]) {
    const dir = tmp();
    const f1 = [bootFrame(1), createFrame(), appendFrame(1)];
    const p1 = writeWal(dir, 1, [...f1, appendFrame(4, 5).subarray(0, 60)]);
    const p2 = writeWal(dir, 2, [reserve]);
    const { res, c } = await scan(dir);
    assert.equal(res.frames, f1.length);
    assert.equal(res.tornBytes, 60);
    assert.equal(res.lastFileNo, 2, 'the next boot writes after the reserve file');
    assert.equal(size(p1), WAL_HEADER_BYTES + sum(f1));
    assert.equal(size(p2), WAL_HEADER_BYTES, 'the reserve file stays, without its zeros');
    assert.deepEqual(c.emitted.get(TOPIC % 2), hexes([createFrame(), appendFrame(1)]));
  }
});

test('a last frame whose zero padding a crash cut off is delivered whole, padding included', async () => {
  // Found by the crash sweep (test/crash/crashSweep.test.ts) with SERVICE_WAL_PREALLOCATE=0:
  // replay wrote the short frame into its segment, and a cold read of it came up short.
  let firstSeq = 4;
  while (appendFrame(firstSeq, 2).readUInt32LE(0) % 8 === 0) firstSeq++; // a frame with padding
  const last = appendFrame(firstSeq, 2);
  const padding = last.length - 16 - last.readUInt32LE(0);
  const dir = tmp();
  const f1 = [bootFrame(1), createFrame(), appendFrame(1)];
  writeWal(dir, 1, [...f1, last.subarray(0, last.length - padding)]);
  const { res, c } = await scan(dir);
  assert.equal(res.frames, f1.length + 1);
  assert.equal(res.tornBytes, 0);
  assert.deepEqual(c.emitted.get(TOPIC % 2), hexes([createFrame(), appendFrame(1), last]));
});

// ---- pre-allocated files (SERVICE_WAL_PREALLOCATE) ------------------------------------------

/** WAL file `fileNo` as the writer pre-allocates it: header, then zeros to `bytes`. */
function writePrepared(dataDir: string, fileNo: number, bytes = 64 * 1024, header = true): string {
  const b = Buffer.alloc(bytes);
  if (header) encodeWalHeader(fileNo, 1).copy(b, 0);
  fs.writeFileSync(walPath(dataDir, fileNo), b);
  return walPath(dataDir, fileNo);
}

test('a torn tail followed by the pre-allocated next file (no frames) is a torn tail, not corruption', async () => {
  const dir = tmp();
  const good = [bootFrame(1), createFrame(), appendFrame(1)];
  const torn = appendFrame(4, 5);
  const p1 = writeWal(dir, 1, [...good, torn.subarray(0, 30)]);
  writePrepared(dir, 2);
  const { res } = await scan(dir);
  assert.equal(res.frames, good.length);
  assert.equal(res.tornBytes, 30);
  assert.equal(res.lastFileNo, 2, 'the prepared file stays: the next run starts after it');
  assert.equal(size(p1), WAL_HEADER_BYTES + sum(good));
  // The next run writes file 3; a later scan reads through the empty file 2.
  writeWal(dir, 3, [bootFrame(2), appendFrame(4, 2)]);
  const again = await scan(dir);
  assert.equal(again.res.frames, good.length + 2);
  assert.equal(again.res.tornBytes, 0);
});

test('a next file caught half pre-allocated (header not durable) is removed, before or after a torn tail', async () => {
  for (const tornTail of [false, true]) {
    const dir = tmp();
    const good = [bootFrame(1), createFrame(), appendFrame(1)];
    writeWal(dir, 1, tornTail ? [...good, appendFrame(4).subarray(0, 20)] : good);
    writePrepared(dir, 2, 8192, false); // zeros where the header should be
    const { res } = await scan(dir);
    assert.equal(res.frames, good.length);
    assert.equal(res.lastFileNo, 1, 'the half-made file is gone, so the next run reuses its number');
    assert.deepEqual(listWal(dir), [walFileName(1)]);
  }
});

test('a bad frame followed by frames in a later file is still corruption when a prepared file sits between', async () => {
  const dir = tmp();
  const p1 = writeWal(dir, 1, [bootFrame(1), createFrame(), appendFrame(1)]);
  const b = fs.readFileSync(p1);
  b[b.length - 5] = b[b.length - 5]! ^ 0xff;
  fs.writeFileSync(p1, b);
  writePrepared(dir, 2);
  writeWal(dir, 3, [bootFrame(2), appendFrame(4, 2)]);
  await assert.rejects(scan(dir), (err: unknown) => err instanceof CorruptionError);
});

test('the window size changes nothing: every frame delivered the same, from any window', async () => {
  const dir = tmp();
  const frames = [bootFrame(1), createFrame()];
  for (let i = 0; i < 200; i++) frames.push(appendFrame(1 + i * 3, 1 + (i % 7)));
  writeWal(dir, 1, frames.slice(0, 120));
  writeWal(dir, 2, [...frames.slice(120), Buffer.alloc(10_000)]);
  const base = await scan(dir, { window: 8 * 1024 * 1024 });
  assert.equal(base.res.frames, frames.length);
  for (const window of [16, 40, 333, 4096]) {
    const { res, c } = await scan(dir, { window });
    assert.deepEqual(res, base.res, `window ${window}`);
    assert.deepEqual(c.emitted, base.c.emitted, `window ${window}`);
    assert.deepEqual(c.seen, base.c.seen, `window ${window}`);
  }
});
