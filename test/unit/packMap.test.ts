// PackMap (src/storage/packMap.ts): runs merge when frames land back to back, logical ranges map
// to the right physical pieces across runs and packs, live bytes per pack follow adds and
// releases, and packsToUnlink needs the writer's word for a pack of the current worker count and
// every worker's for one written under another count. Also the pack file names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { PackMap, packsToUnlink } from '../../src/storage/packMap.js';
import { packFileName, parsePackFileName } from '../../src/format/layout.js';
import { listPacks } from '../../src/storage/packScan.js';

const T = 0x01_000001;
const U = 0x01_000002;

test('pack file names round-trip and order by number; the newest of each writer is marked', () => {
  const name = packFileName({ no: 42, writer: 1, workers: 3 });
  assert.equal(name, 'pack-00000000000000000042-1-3.log');
  assert.deepEqual(parsePackFileName(name), { no: 42, writer: 1, workers: 3 });
  assert.equal(parsePackFileName('pack-00000000000000000042-3-3.log'), undefined, 'writer below workers');
  assert.equal(parsePackFileName('pack-42-0-1.log'), undefined);
  const listed = listPacks([
    packFileName({ no: 9, writer: 0, workers: 2 }),
    packFileName({ no: 2, writer: 0, workers: 1 }),
    packFileName({ no: 5, writer: 1, workers: 2 }),
    'junk',
  ]);
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
  assert.deepEqual(
    packsToUnlink(
      [
        [own0, old],
        [own0, own1],
      ],
      2,
    ),
    [own0, own1].sort(),
  );
  assert.deepEqual(packsToUnlink([[old], [old]], 2), [old]);
  assert.deepEqual(packsToUnlink([[], [own0]], 2), []);
});

/** The map as it was before single-run topics moved to a typed pool: one flat array per topic. */
class ModelMap {
  readonly topics = new Map<number, number[]>();
  readonly live = new Map<number, number>();
  add(t: number, idx: number, off: number, len: number): void {
    let r = this.topics.get(t);
    if (!r) this.topics.set(t, (r = [0]));
    const n = r.length;
    if (n > 1 && r[n - 3] === idx && r[n - 2]! + r[n - 1]! === off) r[n - 1]! += len;
    else r.push(idx, off, len);
    r[0]! += len;
    this.live.set(idx, (this.live.get(idx) ?? 0) + len);
  }
  release(t: number): number {
    const r = this.topics.get(t);
    if (!r) return 0;
    this.topics.delete(t);
    for (let i = 1; i < r.length; i += 3) this.live.set(r[i]!, this.live.get(r[i]!)! - r[i + 2]!);
    return r[0]!;
  }
}

/**
 * Topic ids the property draws from: small ones, both sides of an IdIndex page boundary (4096),
 * ids of later epochs (× 2^24), past 2^32 and up to 2^53 - 1 (the slots are paged by id).
 */
const IDS = [0, 1, 2, 4095, 4096, 8191, 0x01_000001, 0x01_000002, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 4097, Number.MAX_SAFE_INTEGER];

test('PackMap keeps what one flat array per topic kept: sizes, runs, pieces and live bytes, through adds and releases', () => {
  const topicArb = fc.oneof(fc.integer({ min: 1, max: 6 }), fc.constantFrom(...IDS));
  const opArb = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        t: fc.constant('add' as const),
        topic: topicArb,
        pack: fc.integer({ min: 0, max: 2 }),
        len: fc.integer({ min: 1, max: 50 }),
        gap: fc.integer({ min: 0, max: 3 }),
      }),
    },
    // Releases often enough that a topic comes back after one (its slot, row and page reused).
    { weight: 2, arbitrary: fc.record({ t: fc.constant('release' as const), topic: topicArb }) },
  );
  fc.assert(
    fc.property(
      fc.array(opArb, { maxLength: 120 }),
      fc.integer({ min: 0, max: 400 }),
      fc.integer({ min: 1, max: 100 }),
      (ops, from, want) => {
        const map = new PackMap();
        const model = new ModelMap();
        const idx = [0, 1, 2].map((no) => map.register({ no: no + 1, writer: 0, workers: 1 }).idx);
        const tails = [0, 0, 0];
        for (const op of ops) {
          if (op.t === 'add') {
            tails[op.pack]! += op.gap; // another topic's frame in between, sometimes
            map.add(op.topic, idx[op.pack]!, tails[op.pack]!, op.len);
            model.add(op.topic, idx[op.pack]!, tails[op.pack]!, op.len);
            tails[op.pack]! += op.len;
          } else assert.equal(map.release(op.topic), model.release(op.topic));
        }
        assert.equal(map.topicCount, model.topics.size);
        for (const t of [3, 4, 5, 6, ...IDS]) {
          const r = model.topics.get(t);
          assert.equal(map.has(t), r !== undefined);
          assert.equal(map.size(t), r?.[0] ?? 0);
          const out: number[] = [];
          const n = map.runsInto(t, out);
          assert.deepEqual(
            out.slice(0, n),
            (r ?? [0]).slice(1).map((v, i) => (i % 3 === 0 ? v + 1 : v)), // pack numbers are idx + 1 here
          );
          if (r && r[0]! > 0) {
            const off = from % r[0]!;
            const len = Math.min(want, r[0]! - off);
            // The pieces walk the runs in logical order: [off, off + len) over run after run.
            const expected: { idx: number; offset: number; len: number }[] = [];
            for (let i = 1, at = 0, o = off, l = len; i < r.length && l > 0; i += 3) {
              if (o < at + r[i + 2]!) {
                const take = Math.min(r[i + 2]! - (o - at), l);
                expected.push({ idx: r[i]!, offset: r[i + 1]! + (o - at), len: take });
                o += take;
                l -= take;
              }
              at += r[i + 2]!;
            }
            assert.deepEqual(map.pieces(t, off, len), expected);
          }
        }
        for (const i of idx) assert.equal(map.pack(i).live, model.live.get(i) ?? 0);
      },
    ),
    { numRuns: 300 },
  );
});
