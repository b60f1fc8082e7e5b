// PackMap (src/storage/packMap.ts): runs merge when frames land back to back, logical ranges map
// to the right physical pieces across runs and packs, live bytes per pack follow adds and
// releases, and packsToUnlink needs the writer's word for a pack of the current worker count and
// every worker's for one written under another count. Also the pack file names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PackMap, packsToUnlink } from '../../src/storage/packMap.js';
import { packFileName, parsePackFileName } from '../../src/storage/layout.js';
import { listPacks } from '../../src/storage/packScan.js';

const T = 0x01_000001;
const U = 0x01_000002;

test('pack file names round-trip and order by number; the newest of each writer is marked', () => {
  const name = packFileName({ no: 42, writer: 1, workers: 3 });
  assert.equal(name, 'pack-00000000000000000042-1-3.log');
  assert.deepEqual(parsePackFileName(name), { no: 42, writer: 1, workers: 3 });
  assert.equal(parsePackFileName('pack-00000000000000000042-3-3.log'), undefined, 'writer below workers');
  assert.equal(parsePackFileName('pack-42-0-1.log'), undefined);
  const listed = listPacks([packFileName({ no: 9, writer: 0, workers: 2 }), packFileName({ no: 2, writer: 0, workers: 1 }), packFileName({ no: 5, writer: 1, workers: 2 }), 'junk']);
  assert.deepEqual(
    listed.map((p) => [p.no, p.newest]),
    [
      [2, false],
      [5, true],
      [9, true],
    ],
  );
});

test('runs merge when contiguous; pieces of a logical range span runs and packs', () => {
  const m = new PackMap();
  const a = m.register({ no: 1, writer: 0, workers: 1 }).idx;
  const b = m.register({ no: 2, writer: 0, workers: 1 }).idx;
  assert.equal(m.register({ no: 1, writer: 0, workers: 1 }).idx, a, 'registering twice is one pack');
  m.add(T, a, 0, 40);
  m.add(U, a, 40, 16);
  m.add(T, a, 56, 24);
  m.add(T, a, 80, 8); // back to back with the previous run of T: merged
  m.add(T, b, 0, 32);
  assert.equal(m.size(T), 104);
  assert.deepEqual(m.pieces(T, 0, 104), [
    { idx: a, offset: 0, len: 40 },
    { idx: a, offset: 56, len: 32 },
    { idx: b, offset: 0, len: 32 },
  ]);
  assert.deepEqual(m.pieces(T, 48, 48), [
    { idx: a, offset: 64, len: 24 },
    { idx: b, offset: 0, len: 24 },
  ]);
  assert.throws(() => m.pieces(T, 100, 8), /not in any pack/);
  assert.equal(m.pack(a).live, 88);
  assert.equal(m.pack(b).live, 32);
});

test('live bytes follow releases; dead packs exclude the one being written; forget needs a dead pack', () => {
  const m = new PackMap();
  const a = m.register({ no: 1, writer: 0, workers: 1 }).idx;
  const b = m.register({ no: 2, writer: 0, workers: 1 }).idx;
  m.add(T, a, 0, 40);
  m.add(U, a, 40, 16);
  m.add(U, b, 0, 16);
  assert.deepEqual(m.dead(b), []);
  assert.equal(m.release(T), 40);
  assert.equal(m.release(T), 0, 'a second release is nothing');
  assert.deepEqual(m.dead(b), []);
  assert.throws(() => m.forget(m.pack(a).name), /still holds live bytes/);
  m.release(U);
  assert.deepEqual(
    m.dead(b).map((p) => p.idx),
    [a],
  );
  assert.deepEqual(
    m.dead(undefined).map((p) => p.idx),
    [a, b],
  );
  m.forget(m.pack(a).name);
  assert.deepEqual(
    m.all().map((p) => p.idx),
    [b],
  );
  assert.equal(m.topicCount, 0);
});

test('packsToUnlink: the writer decides under the same worker count; under another every worker must agree', () => {
  const own0 = packFileName({ no: 1, writer: 0, workers: 2 });
  const own1 = packFileName({ no: 2, writer: 1, workers: 2 });
  const old = packFileName({ no: 3, writer: 0, workers: 1 });
  // Worker 1 reporting worker 0's pack does not count (it never scanned it); old needs both.
  assert.deepEqual(packsToUnlink([[own0, old], [own0, own1]], 2), [own0, own1].sort());
  assert.deepEqual(packsToUnlink([[old], [old]], 2), [old]);
  assert.deepEqual(packsToUnlink([[], [own0]], 2), []);
});
