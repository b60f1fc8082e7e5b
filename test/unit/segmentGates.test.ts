// SegmentGates (src/storage/segmentGates.ts), the store's bookkeeping between cold reads and
// compaction swaps: a swap waits for the reads in flight on its segment and reads that arrive
// meanwhile wait for the swap; a compaction sees its segment go (unlink, topic dropped); a
// relocation read back from a file never replaces a newer one; a gate is forgotten once nothing
// uses it, except while a compaction of its segment is under way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SegmentGates } from '../../src/storage/segmentGates.js';
import type { Relocation } from '../../src/storage/compactFrames.js';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const turns = async (n = 5): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

test('a swap waits for the reads in flight, and reads that arrive meanwhile wait for the swap', async () => {
  const gates = new SegmentGates();
  const log: string[] = [];
  const firstRead = deferred();
  const reading = gates.reading(7, 100, async () => {
    log.push('read 1 starts');
    await firstRead.promise;
    log.push('read 1 ends');
  });
  const swapDone = deferred();
  const swap = gates.exclusive(7, 100, async () => {
    log.push('swap starts');
    await swapDone.promise;
    log.push('swap ends');
  });
  await turns();
  const second = gates.reading(7, 100, async () => void log.push('read 2'));
  const otherSegment = gates.reading(7, 200, async () => void log.push('read of another segment'));
  await turns();
  assert.deepEqual(log, ['read 1 starts', 'read of another segment']);
  firstRead.resolve();
  await turns();
  assert.deepEqual(log, ['read 1 starts', 'read of another segment', 'read 1 ends', 'swap starts']);
  swapDone.resolve();
  await Promise.all([reading, swap, second, otherSegment]);
  assert.deepEqual(log, ['read 1 starts', 'read of another segment', 'read 1 ends', 'swap starts', 'swap ends', 'read 2']);
  assert.equal(gates.isGated(7, 100), false, 'nothing uses the gate any more');
});

test('a failed read or swap still lets the others go on', async () => {
  const gates = new SegmentGates();
  await assert.rejects(
    gates.reading(1, 1, async () => Promise.reject(new Error('EIO'))),
    /EIO/,
  );
  await assert.rejects(
    gates.exclusive(1, 1, async () => Promise.reject(new Error('EXDEV'))),
    /EXDEV/,
  );
  assert.equal(await gates.reading(1, 1, async () => 'read'), 'read');
  assert.equal(gates.isGated(1, 1), false);
});

test("a compaction's gate stays until it ends and sees its segment go", async () => {
  const gates = new SegmentGates();
  assert.equal(gates.compactionStale(3, 10), true, 'no compaction began: nothing to swap');
  gates.beginCompaction(3, 10);
  gates.beginCompaction(3, 10); // twice is once
  gates.beginCompaction(3, 20);
  assert.equal(gates.isCompacting(3, 10), true);
  assert.equal(gates.compactionStale(3, 10), false);
  assert.equal(gates.compactionHolds(3), true);
  await gates.reading(3, 10, async () => undefined);
  assert.equal(gates.isGated(3, 10), true, 'kept for the swap after the read');

  // An unlink under the compaction marks it gone (as SegmentStore.unlinkSegment does).
  await gates.exclusive(3, 10, async (g) => void (g.gone = true));
  assert.equal(gates.compactionStale(3, 10), true);
  gates.endCompaction(3, 10);
  assert.equal(gates.isGated(3, 10), false);
  assert.equal(gates.compactionHolds(3), true, 'the compaction of 20 is still under way');
  gates.endCompaction(3, 20);
  gates.endCompaction(3, 20); // ending twice changes nothing
  assert.equal(gates.compactionHolds(3), false);
});

test('dropping a topic marks its compactions gone and forgets its relocations and moved packed segment', () => {
  const gates = new SegmentGates();
  const reloc = {} as Relocation;
  gates.beginCompaction(4, 1);
  gates.beginCompaction(5, 1);
  gates.setRelocation(4, 50, reloc);
  gates.noteUnpacked(4, 1);
  gates.dropTopic(4);
  assert.equal(gates.compactionStale(4, 1), true);
  assert.equal(gates.compactionStale(5, 1), false, "another topic's compaction is untouched");
  assert.equal(gates.relocationOf(4, 50), undefined);
  assert.equal(gates.isUnpacked(4), false);
  assert.equal(gates.compactionHolds(4), false);
  gates.markGone(5, 1);
  assert.equal(gates.compactionStale(5, 1), true, 'a released packed segment is gone too');
});

test('a relocation read back from a file never replaces the one a swap set since', () => {
  const gates = new SegmentGates();
  const fromSwap = { from: 'swap' } as unknown as Relocation;
  const fromFile = { from: 'file' } as unknown as Relocation;
  gates.noteLoaded(9, 1, undefined);
  assert.equal(gates.relocationOf(9, 1), undefined);
  gates.setRelocation(9, 1, fromSwap);
  gates.noteLoaded(9, 1, fromFile);
  assert.equal(gates.relocationOf(9, 1), fromSwap);
  gates.setRelocation(9, 1, undefined); // unlinked
  assert.equal(gates.relocationOf(9, 1), undefined);
  gates.noteLoaded(9, 2, fromFile);
  assert.equal(gates.relocationOf(9, 2), fromFile);
});
