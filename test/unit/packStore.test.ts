// PackStore (src/storage/packStore.ts) and the pack scan (src/storage/packScan.ts) on a SimDisk
// behind a FaultFs:
// - frames of many topics go to one pack, several per writev, in arrival order; each topic's
//   logical bytes read back whole from any offset; a pack seals at its size (fsynced before the
//   next is created, so a crash without a flush keeps it whole) and a new pack's name is durable
//   before a frame goes in; flush makes the current pack durable;
// - ENOSPC on a write or on creating a pack keeps the frames and retries them in order (flush
//   refuses meanwhile); a short write counts only whole frames; EIO is fatal, reported once;
// - sealTopic fsyncs the current pack and refuses while the topic's frames wait;
// - readPack cuts (and fsyncs) a torn tail of a writer's newest pack, gives a last frame its lost
//   padding back, and refuses damage in a sealed pack, or below the bytes of the newest one the
//   snapshot records as fsynced (sectionPacks: what the last flush fsynced, not writes since).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { isDiskFull } from '../../src/storage/fs.js';
import { PackStore } from '../../src/storage/packStore.js';
import { SegmentStore } from '../../src/storage/segmentStore.js';
import { packsDir } from '../../src/format/layout.js';
import { listPacks, readPack } from '../../src/storage/packScan.js';
import { CorruptionError } from '../../src/core/corruption.js';
import { forEachFrame } from '../../src/storage/segmentLoad.js';
import { encodeAppend } from '../../src/format/frame.js';
import { FaultFs } from '../support/faultFs.js';
import { SimDisk } from '../support/simDisk.js';
import { sleep } from '../support/walRig.js';

const DATA = '/srv/spool';
const TOPICS = [0x01_000001, 0x01_000002, 0x01_000003];

/** An APPEND frame of `topicId` holding one record at `seq` with `pad` bytes of data. */
function frame(topicId: number, seq: number, pad = 40): Buffer {
  const data = Buffer.from(JSON.stringify('z'.repeat(pad)));
  return encodeAppend(
    topicId,
    seq,
    1000,
    undefined,
    [
      {
        nodeLit: undefined,
        tagLit: undefined,
        metaLen: -1,
        dataLen: data.length,
        writeMeta: () => undefined,
        writeData: (dst, off) => void data.copy(dst, off),
      },
    ],
    0,
  );
}

function rig(fileBytes = 1024, writeDelayMs = 0) {
  const disk = new SimDisk({ durableMkdir: true });
  disk.fs().mkdirSync(DATA);
  disk.syncAll();
  const ffs = new FaultFs(disk.fs());
  const fatal: Error[] = [];
  let no = 1;
  const store = new PackStore(ffs, DATA, { workerIndex: 0, workers: 1, fileBytes, nextPackNo: () => no++, writeDelayMs }, (err) =>
    fatal.push(err),
  );
  const placed = new Map<number, Buffer[]>();
  const written: string[] = [];
  const seqs = new Map<number, number>();
  return {
    disk,
    ffs,
    store,
    fatal,
    written,
    append(topicId: number, pad = 40) {
      const seq = (seqs.get(topicId) ?? 0) + 1;
      seqs.set(topicId, seq);
      const list = placed.get(topicId) ?? [];
      placed.set(topicId, list);
      const f = frame(topicId, seq, pad);
      const offset = list.reduce((n, b) => n + b.length, 0);
      list.push(f);
      store.append(topicId, offset, f, () => written.push(`${topicId.toString(16)}/${seq}`));
    },
    expected: (topicId: number) => Buffer.concat(placed.get(topicId) ?? []),
    packNames: () => disk.fs().readdirSync(packsDir(DATA)).sort(),
  };
}

async function until(what: string, cond: () => boolean, timeoutMs = 2000): Promise<void> {
  const t0 = performance.now();
  while (!cond()) {
    if (performance.now() - t0 > timeoutMs) assert.fail(`timed out waiting for ${what}`);
    await sleep(2);
  }
}

/** Every frame of every pack on the (crashed) disk, per topic, in scan order. */
async function scanAll(disk: SimDisk): Promise<Map<number, Buffer>> {
  const fsx = disk.fs();
  const out = new Map<number, Buffer[]>();
  for (const p of listPacks(fsx.readdirSync(packsDir(DATA)))) {
    const buf = await readPack(fsx, DATA, p, true);
    forEachFrame(buf, (f, off) => {
      const list = out.get(f.topicId) ?? [];
      out.set(f.topicId, list);
      list.push(buf.subarray(off, off + f.size));
    });
  }
  return new Map([...out].map(([k, v]) => [k, Buffer.concat(v)]));
}

const waiting = (err: unknown) => isDiskFull(err) && /waiting for disk space/.test((err as Error).message);

describe('pack store', { concurrency: true }, () => {
  test('many topics share packs; logical ranges read back; packs seal at their size; flush makes them durable', async () => {
    const r = rig(1024);
    for (let i = 0; i < 30; i++) r.append(TOPICS[i % 3]!);
    await r.store.flush();
    assert.equal(r.written.length, 30);
    const names = r.packNames();
    assert.ok(names.length >= 3, `${names.length} packs`);
    const writevs = r.ffs.callLog().filter((c) => c.op === 'file.writev').length;
    assert.ok(writevs <= names.length + 1, `${writevs} writevs for ${names.length} packs: frames are batched`);
    for (const t of TOPICS) {
      const want = r.expected(t);
      assert.deepEqual(await r.store.read(t, 0, want.length), want);
      const one = frame(t, 1).length;
      assert.deepEqual(await r.store.read(t, one, 3 * one), want.subarray(one, 4 * one), 'a range from the middle');
    }
    assert.deepEqual(r.store.deadPacks(), []);
    await r.store.close();
    r.disk.crash('durable-only');
    const scanned = await scanAll(r.disk);
    for (const t of TOPICS) assert.deepEqual(scanned.get(t), r.expected(t), `topic ${t.toString(16)} after a crash`);
    assert.deepEqual(r.fatal, []);
  });

  test('a sealed pack is durable without a flush, and a new pack name before its first frame', async () => {
    const r = rig(1024);
    for (let i = 0; i < 12; i++) r.append(TOPICS[0]!);
    await until('written', () => r.written.length === 12);
    const names = r.packNames();
    assert.ok(names.length >= 2);
    r.disk.crash('durable-only'); // no flush, no close
    assert.deepEqual(r.disk.fs().readdirSync(packsDir(DATA)).sort(), names, 'every pack name survives');
    const sealed = names.slice(0, -1).map((n) => r.disk.fs().readFileSync(path.join(packsDir(DATA), n)).length);
    assert.ok(
      sealed.every((n) => n > 0),
      'sealed packs kept their frames',
    );
  });

  test('released topics free their packs; the pack being written is never dead', async () => {
    const r = rig(1024);
    for (let i = 0; i < 12; i++) r.append(TOPICS[0]!);
    r.append(TOPICS[1]!);
    await r.store.flush();
    r.store.release(TOPICS[0]!);
    await r.store.flush();
    const dead = r.store.deadPacks();
    assert.ok(dead.length >= 1 && dead.length === r.packNames().length - 1, `dead ${dead.join()}`);
    await r.store.forget(dead);
    assert.deepEqual(r.store.deadPacks(), []);
    await r.store.close();
  });

  test('a dead pack being written is given up once it holds RETIRE_DEAD_PACK_BYTES: reported dead, the next frame starts a new pack', async () => {
    const r = rig(1 << 20);
    r.append(TOPICS[0]!, 1000);
    await r.store.flush();
    r.store.release(TOPICS[0]!);
    await r.store.flush();
    assert.deepEqual(r.store.deadPacks(), [], 'a small dead pack being written stays (no new file per checkpoint)');
    for (let i = 0; i < 80; i++) r.append(TOPICS[1]!, 1000);
    await r.store.flush();
    r.store.release(TOPICS[1]!);
    await r.store.flush();
    const [only] = r.packNames();
    assert.deepEqual(r.store.deadPacks(), [only], 'past 64 KiB and dead: given up and reported');
    r.append(TOPICS[2]!);
    await r.store.flush();
    assert.equal(r.packNames().length, 2, 'the next frame went to a new pack');
    assert.deepEqual(await r.store.read(TOPICS[2]!, 0, r.expected(TOPICS[2]!).length), r.expected(TOPICS[2]!));
    await r.store.forget([only!]);
    assert.deepEqual(r.store.deadPacks(), []);
    await r.store.close();
    assert.deepEqual(r.fatal, []);
  });

  test('ENOSPC on a pack write or on creating a pack: frames wait in order, flush refuses, the retry writes them once', async () => {
    const r = rig(1024);
    r.ffs.failWhen((c) => c.op === 'open' && /pack-/.test(c.path ?? ''), 'ENOSPC');
    r.append(TOPICS[0]!);
    r.append(TOPICS[1]!);
    await assert.rejects(r.store.flush(), waiting);
    assert.deepEqual(r.written, []);
    r.ffs.clear();
    r.ffs.failWhen((c) => c.op === 'file.writev', 'ENOSPC');
    await sleep(600);
    await assert.rejects(r.store.flush(), waiting);
    r.append(TOPICS[0]!);
    r.ffs.clear();
    await until('the retry', () => r.written.length === 3);
    assert.deepEqual(r.written, ['1000001/1', '1000002/1', '1000001/2']);
    await r.store.flush();
    await r.store.close();
    r.disk.crash('durable-only');
    const scanned = await scanAll(r.disk);
    for (const t of TOPICS.slice(0, 2)) assert.deepEqual(scanned.get(t), r.expected(t));
    assert.deepEqual(r.fatal, []);
  });

  test('a short write counts only whole frames; the torn one is rewritten whole once there is space', async () => {
    const r = rig(1 << 20);
    r.append(TOPICS[0]!);
    await r.store.flush();
    const len = frame(TOPICS[0]!, 1).length;
    r.disk.partialWrites = true;
    r.disk.capacityBytes = r.disk.usedBytes() + len + (len >> 1);
    r.append(TOPICS[1]!);
    r.append(TOPICS[2]!);
    r.append(TOPICS[0]!);
    await assert.rejects(r.store.flush(), waiting);
    assert.deepEqual(r.written, ['1000001/1', '1000002/1']);
    r.disk.capacityBytes = undefined;
    await until('the rest', () => r.written.length === 4);
    await r.store.flush();
    await r.store.close();
    r.disk.crash('durable-only');
    const scanned = await scanAll(r.disk);
    for (const t of TOPICS) assert.deepEqual(scanned.get(t), r.expected(t));
  });

  test('EIO on a pack write: onFatal once, flush rejects with it, nothing counts as written', async () => {
    const r = rig();
    r.ffs.failWhen((c) => c.op === 'file.writev', 'EIO');
    r.append(TOPICS[0]!);
    await assert.rejects(r.store.flush(), { code: 'EIO' });
    r.append(TOPICS[1]!);
    await assert.rejects(r.store.flush(), { code: 'EIO' });
    assert.equal(r.fatal.length, 1);
    assert.deepEqual(r.written, []);
    r.store.stop();
  });

  test('sealTopic fsyncs the current pack, and refuses while the topic waits for space', async () => {
    const r = rig(1 << 20);
    r.append(TOPICS[0]!);
    await r.store.sealTopic(TOPICS[0]!);
    r.disk.crash('durable-only');
    assert.deepEqual((await scanAll(r.disk)).get(TOPICS[0]!), r.expected(TOPICS[0]!));

    const s = rig(1 << 20);
    s.ffs.failWhen((c) => c.op === 'file.writev', 'ENOSPC');
    s.append(TOPICS[0]!);
    await assert.rejects(s.store.sealTopic(TOPICS[0]!), waiting);
    await s.store.sealTopic(TOPICS[1]!); // another topic's frames do not hold it
    s.store.stop();
  });
});

describe('pack scan', () => {
  async function twoPacks(): Promise<{ disk: SimDisk; names: string[] }> {
    const r = rig(1024);
    for (let i = 0; i < 12; i++) r.append(TOPICS[i % 2]!);
    await r.store.flush();
    await r.store.close();
    return { disk: r.disk, names: r.packNames() };
  }

  test("a torn tail of a writer's newest pack is cut and the cut fsynced; a last frame missing its padding gets it back", async () => {
    const { disk, names } = await twoPacks();
    const fsx = disk.fs();
    const newest = path.join(packsDir(DATA), names.at(-1)!);
    const whole = fsx.readFileSync(newest);
    const f = fsx.openSync(newest, 'r+');
    fsx.writeSync(f, Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 9]), whole.length); // garbage after the last frame
    fsx.closeSync(f);
    const listed = listPacks(fsx.readdirSync(packsDir(DATA)));
    const buf = await readPack(fsx, DATA, listed.at(-1)!, true);
    assert.deepEqual(buf, whole);
    disk.crash('durable-only');
    assert.equal(disk.fs().readFileSync(newest).length, whole.length, 'the cut is durable');

    // The last frame without its zero padding (not covered by its CRC).
    const fsx2 = disk.fs();
    let end = 0;
    forEachFrame(whole, (fr, off) => (end = off + 24 + fr.bodyLen));
    if (end < whole.length) {
      await fsx2.truncate(newest, end);
      const again = await readPack(fsx2, DATA, listPacks(fsx2.readdirSync(packsDir(DATA))).at(-1)!, true);
      assert.deepEqual(again, whole);
      assert.equal(fsx2.readFileSync(newest).length, whole.length);
    }
  });

  test('the newest pack: damage below the bytes the snapshot records as fsynced, or whole frames ending below them, is an error and nothing is cut; a tail past them is torn', async () => {
    const { disk, names } = await twoPacks();
    const fsx = disk.fs();
    const newest = path.join(packsDir(DATA), names.at(-1)!);
    const whole = fsx.readFileSync(newest);
    const offs: number[] = [];
    forEachFrame(whole, (_f, off) => offs.push(off));
    assert.ok(offs.length >= 3);
    const listed = () => listPacks(fsx.readdirSync(packsDir(DATA))).at(-1)!;
    const refused = async (bytes: Buffer, durable: number, at: number, detail: RegExp) => {
      fsx.writeFileSync(newest, bytes);
      await assert.rejects(readPack(fsx, DATA, listed(), true, undefined, 0, durable), (err: unknown) => {
        assert.ok(err instanceof CorruptionError, String(err));
        assert.equal(err.offset, at);
        assert.match(err.detail, detail);
        return true;
      });
      assert.deepEqual(fsx.readFileSync(newest), bytes, 'nothing is cut');
    };
    const flipped = Buffer.from(whole);
    flipped[offs[1]! + 30]! ^= 0xff;
    await refused(flipped, whole.length, offs[1]!, /damaged frame \(crc\) below the \d+ bytes the snapshot records as fsynced/);
    await refused(whole.subarray(0, offs[2]!), whole.length, offs[2]!, /whole frames end below the \d+ bytes/);
    // Damage past the fsynced bytes: a torn tail, cut there.
    fsx.writeFileSync(newest, flipped);
    const buf = await readPack(fsx, DATA, listed(), true, undefined, 0, offs[1]!);
    assert.equal(buf.length, offs[1]);
    assert.equal(fsx.readFileSync(newest).length, offs[1]);
  });

  test('damage in a sealed pack is an error, never skipped; a reader that does not repair leaves the file alone', async () => {
    const { disk, names } = await twoPacks();
    const fsx = disk.fs();
    const sealed = path.join(packsDir(DATA), names[0]!);
    const bytes = fsx.readFileSync(sealed);
    const f = fsx.openSync(sealed, 'r+');
    fsx.writeSync(f, Buffer.from([0xff]), 30); // inside the first frame's body
    fsx.closeSync(f);
    const listed = listPacks(fsx.readdirSync(packsDir(DATA)));
    await assert.rejects(readPack(fsx, DATA, listed[0]!, true), CorruptionError);
    assert.equal(fsx.readFileSync(sealed).length, bytes.length);
  });
});

test("a topic's packed frames are durable before its first own segment file is written", async () => {
  const disk = new SimDisk({ durableMkdir: true });
  disk.fs().mkdirSync(DATA);
  disk.syncAll();
  const ffs = new FaultFs(disk.fs());
  let no = 1;
  const packs = new PackStore(ffs, DATA, { workerIndex: 0, workers: 1, fileBytes: 1 << 20, nextPackNo: () => no++ });
  const segments = new SegmentStore(ffs, DATA, undefined, 4, packs);
  const T = TOPICS[0]!;
  const f1 = frame(T, 1);
  const f2 = frame(T, 2);
  // The actor's placements: seq 1 packed, then the roll to an own file at seq 2. Both are queued
  // before either is written, as after one WAL ack.
  segments.append({ topicId: T, segFirstSeq: 1, offset: 0, packed: true }, f1);
  let ownWritten = false;
  segments.append({ topicId: T, segFirstSeq: 2, offset: 0 }, f2, () => (ownWritten = true));
  await until('the own segment written', () => ownWritten);
  const log = ffs.callLog();
  const ownWrite = log.findIndex((c) => c.op === 'file.writev' && /seg-0+2\.log$/.test(c.path ?? ''));
  const packSync = log.findIndex((c) => c.op === 'file.sync' && /pack-/.test(c.path ?? ''));
  assert.ok(packSync >= 0 && packSync < ownWrite, `pack fsync (#${packSync}) before the own segment's first write (#${ownWrite})`);
  disk.crash('durable-only');
  assert.deepEqual((await scanAll(disk)).get(T), f1);
});

test('sectionPacks: the pack being written, its bytes and those its last flush fsynced; a power loss keeps at least those', async () => {
  const r = rig(1 << 20);
  for (let i = 0; i < 3; i++) r.append(TOPICS[i]!);
  await r.store.flush();
  const [name, bytes, fsynced] = r.store.sectionPacks().tail!;
  assert.equal(fsynced, bytes, 'all of it, after the flush');
  // Written since the flush: counted in the tail, not in what is fsynced.
  r.append(TOPICS[0]!, 400);
  await until('the frame written', () => r.written.length === 4);
  const tail = r.store.sectionPacks().tail!;
  assert.ok(tail[0] === name && tail[1] > bytes && tail[2] === fsynced, JSON.stringify(tail));
  r.disk.crash('durable-only');
  const fsx = r.disk.fs();
  assert.equal(fsx.readFileSync(path.join(packsDir(DATA), name)).length, fsynced);
  const buf = await readPack(fsx, DATA, listPacks(fsx.readdirSync(packsDir(DATA))).at(-1)!, true, undefined, 0, fsynced);
  assert.equal(buf.length, fsynced);
});

test('flush waits only for frames queued before it: frames arriving during its fsync neither wait nor fail it', async () => {
  const r = rig(1 << 20);
  r.append(TOPICS[0]!);
  await r.store.flush();
  let arrived = 0;
  // A hook, not a fault: a frame arrives while the flush's fsync runs (a WAL ack during a checkpoint).
  r.ffs.failWhen((c) => {
    if (c.op === 'file.sync' && /pack-/.test(c.path ?? '') && arrived++ === 0) r.append(TOPICS[1]!);
    return false;
  }, 'EIO');
  r.append(TOPICS[0]!);
  await r.store.flush();
  assert.equal(arrived, 1, 'a frame arrived during the fsync');
  await until('the late frame written', () => r.written.length === 3);
  r.ffs.clear();
  await r.store.flush();
  await r.store.close();
  assert.deepEqual(r.fatal, []);
});

test('with a write delay, frames wait to share a writev; flush and sealTopic write them at once', async () => {
  const r = rig(1 << 20, 60_000);
  for (const t of TOPICS) r.append(t);
  await sleep(20);
  assert.deepEqual(r.written, [], 'nothing written before the delay');
  await r.store.sealTopic(TOPICS[0]!);
  assert.equal(r.written.length, 3, 'sealTopic wrote the waiting frames first');
  r.append(TOPICS[1]!);
  await r.store.flush();
  assert.equal(r.written.length, 4, 'flush wrote the waiting frame');
  r.disk.crash('durable-only');
  const got = await scanAll(r.disk);
  for (const t of TOPICS) assert.deepEqual(got.get(t), r.expected(t), `topic ${t.toString(16)} is durable`);
  assert.deepEqual(r.fatal, []);
});

test('damageAt names the pack file and the byte in it for a logical offset of a packed segment', async () => {
  const r = rig(1 << 20);
  const T = TOPICS[0]!;
  r.append(T);
  r.append(T);
  await r.store.flush();
  const second = frame(T, 1).length; // the second frame starts here in the topic's packed segment
  const e = r.store.damageAt(T, 'topic x', second, 'frame does not check (crc)');
  assert.ok(e instanceof CorruptionError);
  assert.match(e.where, /packs\/pack-[0-9-]+\.log$/);
  assert.equal(e.offset, second, 'the only pack holds the segment from its start');
  assert.match(e.detail, /frame does not check \(crc\) \(topic x, byte \d+ of its packed segment\)/);
  // Past what the map holds: named by the topic, as before.
  assert.equal(r.store.damageAt(T, 'topic x', 1 << 30, 'gone').where, 'topic x packed segment');
});
