// What the segment store knows fsynced of a topic's newest own segment file (SegmentStore.durableOwn,
// the size a checkpoint records as `own`, docs/FORMAT.md "Snapshots"), on a simulated disk that
// forgets every byte never fsynced: it never exceeds what a power loss keeps, so recovery, which
// refuses damage below it (readSegment), never refuses a clean torn tail; it names the bytes
// flushAll fsynced, not writes in flight; a roll-over keeps the sealed file recorded until the new
// one holds fsynced bytes; a file recovery loaded gets its bytes past the recorded size fsynced
// by the next flushAll, and then recorded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { SegmentStore } from '../../src/storage/segmentStore.js';
import { metaDir, segmentFileName, topicDir, topicsDir } from '../../src/format/layout.js';
import { readSegment } from '../../src/storage/segmentLoad.js';
import { encodeJsonFrame } from '../../src/format/frame.js';
import { FrameType } from '../../src/format/constants.js';
import { SimDisk } from '../support/simDisk.js';
import { CrashWorld, replyBody, sweepSettings, SWEEP_DATA_DIR } from '../support/crashWorld.js';
import { decodeSnapshot } from '../../src/storage/snapshot.js';
import type { SectionPart } from '../../src/storage/snapshotSectionFormat.js';
import type { TopicRequest } from '../../src/protocol/messages/rpc.js';

const DATA = '/srv/spool';
const [A, B] = [0x01_000001, 0x01_000002];
const segPath = (topicId: number, first: number) => path.join(topicDir(DATA, topicId), segmentFileName(first));
const frame = (topicId: number, i: number) => encodeJsonFrame(FrameType.APPEND, topicId, { i, pad: 'z'.repeat(40 + i) });

function rig() {
  const disk = new SimDisk({ durableMkdir: true });
  disk.fs().mkdirSync(topicsDir(DATA));
  disk.syncAll();
  const store = new SegmentStore(disk.fs(), DATA);
  const ends = new Map<string, number>();
  /** Appends frame `i` at the end of segment `seg` of the topic; resolves once it is written. */
  const append = (topicId: number, seg: number, i: number): Promise<number> => {
    const key = `${topicId}/${seg}`;
    const f = frame(topicId, i);
    const offset = ends.get(key) ?? 0;
    ends.set(key, offset + f.length);
    return new Promise((resolve) => store.append({ topicId, segFirstSeq: seg, offset }, f, () => resolve(offset + f.length)));
  };
  return { disk, store, append, ends };
}

test('durableOwn is what flushAll fsynced, not writes since; a power loss keeps at least that, whole', async () => {
  const { disk, store, append } = rig();
  assert.equal(store.durableOwn(A), undefined, 'no file');
  await append(A, 1, 1);
  assert.deepEqual(store.durableOwn(A), [1, 0], 'written, nothing fsynced yet');
  await append(A, 1, 2);
  const flushed = await append(A, 1, 3);
  await store.flushAll();
  assert.deepEqual(store.durableOwn(A), [1, flushed]);
  const later = await append(A, 1, 4); // in the page cache only
  assert.deepEqual(store.durableOwn(A), [1, flushed], 'a write after the flush is not counted');
  assert.equal(disk.fs().statSync(segPath(A, 1)).size, later);

  disk.crash('durable-only');
  const fsx = disk.fs();
  assert.equal(fsx.statSync(segPath(A, 1)).size, flushed, 'the power loss took the unsynced frame');
  // Recovery with the recorded size: whole, loaded, nothing refused.
  const seg = await readSegment(fsx, A, { firstSeq: 1, file: segPath(A, 1) }, true, flushed);
  assert.equal(seg.size, flushed);
});

test('a roll-over: the sealed file stays recorded, whole, until the new file holds fsynced bytes', async () => {
  const { store, append } = rig();
  await append(A, 1, 1);
  await store.flushAll();
  const sealedEnd = await append(A, 1, 2); // not flushed: the roll's seal fsyncs it
  await append(A, 3, 3);
  assert.deepEqual(store.durableOwn(A), [1, sealedEnd], 'the sealed file, all of it');
  const end = await append(A, 3, 4);
  await store.flushAll();
  assert.deepEqual(store.durableOwn(A), [3, end]);
  await store.close();
});

test('a file recovery loaded: bytes past the recorded size are fsynced by the next flushAll, then recorded; a sleep forgets it', async () => {
  const { disk, store, append, ends } = rig();
  const fsx = disk.fs();
  fsx.mkdirSync(topicDir(DATA, A));
  const three = Buffer.concat([1, 2, 3].map((i) => frame(A, i)));
  const five = Buffer.concat([1, 2, 3, 4, 5].map((i) => frame(A, i)));
  fsx.writeFileSync(segPath(A, 1), three);
  disk.syncAll();
  fsx.writeFileSync(segPath(A, 1), five); // a dead process's page cache
  store.noteLoaded(A, 1, five.length, three.length);
  assert.deepEqual(store.durableOwn(A), [1, three.length], 'what the snapshot recorded');
  await store.flushAll();
  assert.deepEqual(store.durableOwn(A), [1, five.length], 'fsynced by the flush');

  // Loaded at the size the snapshot recorded: nothing to fsync, recorded as it is.
  fsx.mkdirSync(topicDir(DATA, B));
  fsx.writeFileSync(segPath(B, 1), three);
  disk.syncAll();
  store.noteLoaded(B, 1, three.length, three.length);
  assert.deepEqual(store.durableOwn(B), [1, three.length]);
  // The next write goes after it; what is recorded grows at the next flush.
  ends.set(`${B}/1`, three.length);
  const end = await append(B, 1, 4);
  assert.deepEqual(store.durableOwn(B), [1, three.length]);
  await store.flushAll();
  assert.deepEqual(store.durableOwn(B), [1, end]);

  disk.crash('durable-only');
  assert.equal(disk.fs().statSync(segPath(A, 1)).size, five.length, 'the loaded bytes past the record were made durable');
  assert.equal(disk.fs().statSync(segPath(B, 1)).size, end);
});

test('a sleep forgets a loaded file (its row keeps the size); an unlink forgets the file it names', async () => {
  const { disk, store, append } = rig();
  const fsx = disk.fs();
  fsx.mkdirSync(topicDir(DATA, B));
  fsx.writeFileSync(segPath(B, 1), frame(B, 1));
  disk.syncAll();
  store.noteLoaded(B, 1, frame(B, 1).length, frame(B, 1).length);
  store.release(B);
  assert.equal(store.durableOwn(B), undefined);

  await append(A, 1, 1);
  await store.flushAll();
  await append(A, 5, 2); // a roll: the sealed file recorded
  assert.equal(store.durableOwn(A)?.[0], 1);
  await store.unlinkSegment(A, 1);
  assert.deepEqual(store.durableOwn(A), [5, 0], 'the new file, nothing of it fsynced yet');
  await store.close();
});

// ---- through the whole server in this process (test/support/crashWorld.ts) ----------------------

const settings = sweepSettings({ workers: 1, packBytes: 0, segmentBytes: 1 << 20, walFileBytes: 8192 });

function appendReq(n: number): TopicRequest {
  const recs = Array.from({ length: 5 }, (_, i) => `{"data":{"n":${n},"i":${i},"pad":"${'p'.repeat(120)}"}}`).join(',');
  const body = new TextEncoder().encode(`{"records":[${recs}],"create":true,"config":{"durability":"disk"}}`);
  return { op: 'append', topic: 't', body, returnSeqs: true, headerIdemKey: undefined };
}

/** The newest snapshot's part of topic t. */
function newestPart(disk: SimDisk): SectionPart | undefined {
  const fsx = disk.fs();
  const dir = metaDir(SWEEP_DATA_DIR);
  const newest = fsx
    .readdirSync(dir)
    .filter((n) => n.endsWith('.snap'))
    .sort()
    .at(-1)!;
  return decodeSnapshot(fsx.readFileSync(path.join(dir, newest)))?.topics.find((p) => p.name === 't') as SectionPart | undefined;
}

/** The only segment file of the only topic. */
function segmentFile(disk: SimDisk): string {
  const fsx = disk.fs();
  const [dir] = fsx.readdirSync(topicsDir(SWEEP_DATA_DIR));
  const d = path.join(topicsDir(SWEEP_DATA_DIR), dir!);
  const [file, ...more] = fsx.readdirSync(d);
  assert.equal(more.length, 0);
  return path.join(d, file!);
}

test('a busy topic through checkpoints: its fsynced bytes are recorded, a power loss still recovers, damage below them refuses', async () => {
  const disk = new SimDisk({ seed: 'busy-own' });
  let world = new CrashWorld(disk, settings);
  await world.boot();
  for (let n = 0; n < 60; n++) {
    replyBody(await world.request(appendReq(n)));
    if (n % 10 === 9) await world.checkpoint();
  }
  // Appends in flight while a checkpoint cuts: the topic is busy (disk-class frames unsynced too).
  const inFlight = [60, 61, 62].map((n) => world.request(appendReq(n)));
  await world.checkpoint();
  for (const r of await Promise.all(inFlight)) replyBody(r);
  const part = newestPart(disk);
  assert.ok(part?.own && part.wm === undefined, `busy, with its file's fsynced bytes: ${JSON.stringify(part)}`);
  const [, recorded] = part.own;
  const file = segmentFile(disk);
  assert.ok(recorded > 0 && recorded <= disk.fs().statSync(file).size);
  for (let n = 63; n < 66; n++) replyBody(await world.request(appendReq(n)));

  // A power loss: the disk keeps only what was fsynced, at least the recorded bytes. It recovers.
  world.halt();
  disk.crash('durable-only');
  assert.ok(disk.fs().statSync(file).size >= recorded);
  world = new CrashWorld(disk, settings);
  await world.boot();
  for (let n = 66; n < 70; n++) replyBody(await world.request(appendReq(n)));
  await world.checkpoint();
  await world.checkpoint(); // the WAL before the first of these is gone

  // A byte flipped below the bytes the newest snapshot records: recovery refuses, cutting nothing.
  const own = newestPart(disk)!.own!;
  world.halt();
  disk.crash('process');
  const fsx = disk.fs();
  const buf = fsx.readFileSync(file);
  buf[Math.floor(own[1] / 2)]! ^= 0xff;
  fsx.writeFileSync(file, buf);
  disk.syncAll();
  world = new CrashWorld(disk, settings);
  await assert.rejects(world.boot(), (err: Error) => {
    assert.equal(err.name, 'CorruptionError', String(err));
    assert.match(err.message, new RegExp(`seg-\\d+\\.log at offset \\d+: damaged frame below the ${own[1]} bytes`));
    return true;
  });
  world.halt();
  assert.deepEqual(disk.fs().readFileSync(file), buf, 'nothing cut');
});
