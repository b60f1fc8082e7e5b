// Storage faults of the segment store (src/storage/segmentStore.ts), on a SimDisk behind a
// FaultFs. Extends test/unit/faultFs.test.ts (one topic out of space while another is written):
// - ENOSPC on a segment write, on opening a new segment or creating the topic directory keeps
//   the frames and retries them every 500 ms, in order, each written (and reported) once, and
//   `allWritten` says the topic has frames waiting until then; a
//   batch that failed part-way resumes where it stopped; flushAll rejects with an ENOSPC-coded
//   error while any frame waits, and succeeds (durably) once they are written;
// - ENOSPC on the flush's fsync rejects flushAll with that error and is retried by the next one;
// - any other error (EIO) calls onFatal exactly once, however many writes fail, and flushAll
//   rejects with it;
// - frames appended while a topic waits for space wait for the retry (no failing write each);
// - close() while frames wait for space returns and stops the retries;
// - a writev the disk fills part-way through returns a short count (as Linux does, with no
//   error): the store finishes the run, counts only frames that landed whole, and flushAll
//   refuses until the torn one is rewritten whole, so a checkpoint can never trim the WAL past
//   a frame that recovery would cut off the segment (acknowledged records lost, diskFull test).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { isDiskFull } from '../../src/storage/fs.js';
import { SegmentStore } from '../../src/storage/segmentStore.js';
import { segmentFileName, topicDir, topicsDir } from '../../src/format/layout.js';
import { forEachFrame, readSegment } from '../../src/storage/segmentLoad.js';
import { decodeJsonBody, encodeJsonFrame } from '../../src/format/frame.js';
import { FrameType } from '../../src/format/constants.js';
import { FaultFs } from '../support/faultFs.js';
import { SimDisk } from '../support/simDisk.js';
import { sleep } from '../support/walRig.js';

const DATA = '/srv/spool';
const [A, B] = [0x01_000001, 0x01_000002];
const segPath = (topicId: number, first: number) => path.join(topicDir(DATA, topicId), segmentFileName(first));

function frame(topicId: number, i: number): Buffer {
  return encodeJsonFrame(FrameType.APPEND, topicId, { i, pad: 'y'.repeat(40) });
}

/** A store on a fresh SimDisk (topics/ durable), with every onWritten and onFatal recorded. */
function rig(): {
  disk: SimDisk;
  ffs: FaultFs;
  store: SegmentStore;
  written: string[];
  fatal: Error[];
  /** Appends frame `i` of a topic at the end of its segment `seg` (placement like the actor's). */
  append: (topicId: number, seg: number, i: number) => void;
  /** The bytes the frames appended to a segment make, in order. */
  expected: (topicId: number, seg: number) => Buffer;
} {
  const disk = new SimDisk({ durableMkdir: true });
  disk.fs().mkdirSync(topicsDir(DATA));
  disk.syncAll();
  const ffs = new FaultFs(disk.fs());
  const fatal: Error[] = [];
  const store = new SegmentStore(ffs, DATA, (err) => fatal.push(err));
  const written: string[] = [];
  const placed = new Map<string, Buffer[]>();
  return {
    disk,
    ffs,
    store,
    written,
    fatal,
    append(topicId, seg, i) {
      const key = `${topicId}/${seg}`;
      const list = placed.get(key) ?? [];
      placed.set(key, list);
      const f = frame(topicId, i);
      const offset = list.reduce((n, b) => n + b.length, 0);
      list.push(f);
      store.append({ topicId, segFirstSeq: seg, offset }, f, () => written.push(`${topicId === A ? 'A' : 'B'}${i}`));
    },
    expected: (topicId, seg) => Buffer.concat(placed.get(`${topicId}/${seg}`) ?? []),
  };
}

/** Runs `body` on a fresh rig and always closes its store (a failing test must not leave retries running). */
async function withRig(body: (r: ReturnType<typeof rig>) => Promise<void>): Promise<void> {
  const r = rig();
  try {
    await body(r);
  } finally {
    // After a crash the store's views are dead (their calls never settle): it was closed before.
    if (r.disk.crashes === 0) await r.store.close();
  }
}

async function until(what: string, cond: () => boolean, timeoutMs = 2000): Promise<void> {
  const t0 = performance.now();
  while (!cond()) {
    if (performance.now() - t0 > timeoutMs) assert.fail(`timed out waiting for ${what}`);
    await sleep(2);
  }
}

const waitingForSpace = (err: unknown) => {
  assert.ok(isDiskFull(err), `a disk-full error, got ${String(err)}`);
  assert.equal((err as Error).message, 'segment writes are waiting for disk space');
  return true;
};

// Most wait for the 500 ms retry (or for its absence): they run side by side.
describe('segment store faults', { concurrency: true }, () => {
  test('ENOSPC on a segment write: the frames are kept and retried in order, each reported once; flushAll refuses until then', async () => {
    await withRig(async (r) => {
      r.ffs.failWhen((c) => c.op === 'file.writev' && c.path === segPath(A, 1), 'ENOSPC');
      r.append(A, 1, 0);
      r.append(A, 1, 1);
      r.append(B, 1, 0);
      await assert.rejects(r.store.flushAll(), waitingForSpace);
      assert.deepEqual(r.written, ['B0'], 'the other topic is written');
      r.append(A, 1, 2); // queued while A waits: goes after the waiting frames
      await sleep(20);
      await assert.rejects(r.store.flushAll(), waitingForSpace, 'still waiting');
      assert.equal(r.disk.peek(segPath(A, 1))!.length, 0, 'nothing of the failed writes landed');
      assert.deepEqual(r.fatal, [], 'disk full is not fatal');
      // A topic with frames waiting may not sleep (a wake would read its file without them).
      assert.equal(r.store.allWritten(A), false);
      assert.equal(r.store.allWritten(B), true);

      r.ffs.clear();
      await until('the retry wrote A', () => r.written.length === 4);
      assert.deepEqual(r.written, ['B0', 'A0', 'A1', 'A2']);
      assert.equal(r.store.allWritten(A), true);
      await r.store.flushAll();
      await r.store.close();
      r.disk.crash('durable-only');
      assert.deepEqual(r.disk.fs().readFileSync(segPath(A, 1)), r.expected(A, 1), 'flushAll made them durable');
      assert.deepEqual(r.disk.fs().readFileSync(segPath(B, 1)), r.expected(B, 1));
      assert.deepEqual(r.fatal, []);
    });
  });

  test('frames that arrive while a topic waits for space join the retry instead of each trying the write again', async () => {
    await withRig(async (r) => {
      let attempts = 0;
      r.ffs.failWhen((c) => c.op === 'file.writev' && c.path === segPath(A, 1) && ++attempts > 0, 'ENOSPC');
      r.append(A, 1, 0);
      await until('the first write failed', () => attempts === 1);
      // A recovery on a full disk replays frame after frame into the waiting topic.
      for (let i = 1; i <= 200; i++) r.append(A, 1, i);
      await sleep(50);
      assert.equal(attempts, 1, 'no write per frame while the retry is pending');
      r.ffs.clear();
      await until('the retry wrote all of them', () => r.written.length === 201);
      assert.deepEqual(
        r.written,
        Array.from({ length: 201 }, (_, i) => `A${i}`),
      );
      assert.deepEqual(r.fatal, []);
    });
  });

  test('flushAll answers for the frames queued before it: one that arrives meanwhile and waits for space does not fail it', async () => {
    await withRig(async (r) => {
      r.append(A, 1, 0);
      r.ffs.failWhen((c) => c.op === 'mkdir' && c.path === topicDir(DATA, B), 'ENOSPC');
      const flushing = r.store.flushAll();
      r.append(B, 1, 0); // after the call: the next checkpoint's (under steady appends some always are)
      await flushing;
      assert.deepEqual(r.written, ['A0']);
      await assert.rejects(r.store.flushAll(), waitingForSpace, 'the next flush answers for B0');
      r.ffs.clear();
      await until('the retry wrote B0', () => r.written.length === 2);
      await r.store.flushAll();
    });
  });

  test('ENOSPC part-way through a batch: what was written is not written again, the rest resumes (also across a new segment and directory)', async () => {
    await withRig(async (r) => {
      // A's first segment takes its frames; opening the second segment finds no space.
      r.ffs.failWhen((c) => c.op === 'open' && c.path === segPath(A, 10), 'ENOSPC');
      // B cannot even create its directory.
      r.ffs.failWhen((c) => c.op === 'mkdir' && c.path === topicDir(DATA, B), 'ENOSPC');
      r.append(A, 1, 0);
      r.append(A, 1, 1);
      r.append(A, 10, 2);
      r.append(A, 10, 3);
      r.append(B, 1, 0);
      await assert.rejects(r.store.flushAll(), waitingForSpace);
      assert.deepEqual(r.written, ['A0', 'A1']);
      r.ffs.clear();
      await until('the rest', () => r.written.length === 5);
      assert.deepEqual(
        r.written.filter((w) => w.startsWith('A')),
        ['A0', 'A1', 'A2', 'A3'],
        'in order within a topic, once each',
      );
      assert.deepEqual(
        r.written.filter((w) => w.startsWith('B')),
        ['B0'],
      );
      await r.store.flushAll();
      const writevs = (p: string) => r.ffs.callLog().filter((c) => c.op === 'file.writev' && c.path === p).length;
      assert.equal(writevs(segPath(A, 1)), 1, 'the first run was written once');
      assert.equal(writevs(segPath(A, 10)), 1);
      await r.store.close();
      r.disk.crash('durable-only');
      for (const [t, s] of [
        [A, 1],
        [A, 10],
        [B, 1],
      ] as const)
        assert.deepEqual(r.disk.fs().readFileSync(segPath(t, s)), r.expected(t, s), `${t}/${s}`);
      assert.deepEqual(r.fatal, []);
    });
  });

  test("ENOSPC on the flush's fsync rejects that flushAll (disk full) and the next flushAll syncs", async () => {
    await withRig(async (r) => {
      r.append(A, 1, 0);
      await until('written', () => r.written.length === 1);
      r.ffs.failWhen((c) => c.op === 'file.sync' && c.path === segPath(A, 1), 'ENOSPC');
      await assert.rejects(r.store.flushAll(), (err) => isDiskFull(err) && (err as NodeJS.ErrnoException).syscall === 'fsync');
      r.ffs.clear();
      await r.store.flushAll();
      await r.store.close();
      r.disk.crash('durable-only');
      assert.deepEqual(r.disk.fs().readFileSync(segPath(A, 1)), r.expected(A, 1));
      assert.deepEqual(r.fatal, []);
    });
  });

  test('EIO on segment writes: onFatal is called exactly once, flushAll rejects with the EIO, the frames are not reported written', async () => {
    await withRig(async (r) => {
      r.ffs.failWhen((c) => c.op === 'file.writev', 'EIO');
      r.append(A, 1, 0);
      r.append(B, 1, 0);
      await assert.rejects(r.store.flushAll(), { code: 'EIO' });
      r.append(A, 1, 1);
      r.append(B, 1, 1);
      await assert.rejects(r.store.flushAll(), { code: 'EIO' });
      assert.equal(r.fatal.length, 1, `onFatal once, got ${r.fatal.map((e) => e.message).join('; ')}`);
      assert.equal((r.fatal[0] as NodeJS.ErrnoException).code, 'EIO');
      assert.deepEqual(r.written, []);
      // No retry timer runs for a non-space error.
      const calls = r.ffs.calls;
      await sleep(600);
      assert.equal(r.ffs.calls, calls, 'nothing retried');
    });
  });

  test('a short write (the disk fills part-way through a run; Linux returns the count, no error): only whole frames count, the rest waits for space and is rewritten whole', async () => {
    await withRig(async (r) => {
      r.append(A, 1, 0);
      await until('A0 written', () => r.written.length === 1);
      const len = frame(A, 0).length;
      r.disk.partialWrites = true;
      r.disk.capacityBytes = r.disk.usedBytes() + len + (len >> 1); // A1 and half of A2 fit
      r.append(A, 1, 1);
      r.append(A, 1, 2);
      r.append(A, 1, 3); // one run: a single writev of A1..A3
      await assert.rejects(r.store.flushAll(), waitingForSpace, 'a torn frame is not in its segment');
      assert.deepEqual(r.written, ['A0', 'A1'], 'only the frames that landed whole are reported');
      assert.deepEqual(r.fatal, [], 'disk full is not fatal');
      r.disk.capacityBytes = undefined;
      await until('the retry wrote the rest', () => r.written.length === 4);
      assert.deepEqual(r.written, ['A0', 'A1', 'A2', 'A3'], 'in order, each once');
      await r.store.flushAll();
      await r.store.close();
      r.disk.crash('durable-only');
      assert.deepEqual(r.disk.fs().readFileSync(segPath(A, 1)), r.expected(A, 1), 'the torn frame was rewritten whole');
      assert.deepEqual(r.fatal, []);
    });
  });

  test('no acknowledged frame is lost to a short write: whenever flushAll (the checkpoint) succeeds, recovery after a crash reads every frame appended before it', async () => {
    // The checkpoint trims the WAL up to its cut once flushAll succeeded, so from then on the
    // segment is the only copy. Recovery (readSegment) cuts the newest segment at its first bad
    // frame, and WAL replay pads the seqs it no longer has: a torn frame the store counted as
    // written lost that record and every one after it up to the cut (2055 and 2056 in the failed
    // diskFull run).
    await withRig(async (r) => {
      const len = frame(A, 0).length;
      r.append(A, 1, 0);
      await until('A0 written', () => r.written.length === 1);
      r.disk.partialWrites = true;
      r.disk.capacityBytes = r.disk.usedBytes() + (len >> 1); // the disk fills inside A1
      r.append(A, 1, 1);
      r.append(A, 1, 2);
      const appended = [0, 1, 2];
      const firstTry = await r.store.flushAll().then(
        () => 'completed',
        (err: unknown) => (waitingForSpace(err), 'postponed'),
      );
      if (firstTry === 'postponed') {
        // The checkpoint waits (the WAL keeps the frames); space comes back and it completes.
        r.disk.capacityBytes = undefined;
        await until('written', () => r.written.length === 3);
        await r.store.flushAll();
      }
      await r.store.close();
      r.disk.crash('durable-only');
      const seg = await readSegment(r.disk.fs(), A, { firstSeq: 1, file: segPath(A, 1) }, true);
      const recovered: number[] = [];
      forEachFrame(seg.buf, (f) => recovered.push((decodeJsonBody(seg.buf, f) as { i: number }).i));
      assert.deepEqual(recovered, appended, 'recovery finds every frame the checkpoint vouched for');
    });
  });

  test('close() while frames wait for space returns and stops the retries', async () => {
    await withRig(async (r) => {
      r.ffs.failWhen((c) => c.op === 'file.writev', 'ENOSPC');
      r.append(A, 1, 0);
      await assert.rejects(r.store.flushAll(), waitingForSpace);
      await r.store.close();
      const calls = r.ffs.calls;
      r.ffs.clear();
      await sleep(600);
      assert.equal(r.ffs.calls, calls, 'no retry after close');
      assert.deepEqual(r.written, []);
    });
  });
});
