// SeqMap and TimeHeap, the lease table's storage, against plain models (a Map; a sorted list).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SeqMap } from '../../src/core/columns/seqMap.js';
import { TimeHeap } from '../../src/core/columns/timeHeap.js';

type MapOp = { k: 'set'; seq: number; v: number } | { k: 'delete'; seq: number } | { k: 'clear' };

// Seqs from a small window (collisions, long probe runs, deletes inside runs) and from the
// whole range below 2^53 (both halves of the hash).
const seqArb = fc.oneof(fc.integer({ min: 0, max: 200 }), fc.integer({ min: 2 ** 32 - 50, max: 2 ** 32 + 50 }), fc.maxSafeNat());
const opArb: fc.Arbitrary<MapOp> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ k: fc.constant('set' as const), seq: seqArb, v: fc.integer() }) },
  { weight: 5, arbitrary: fc.record({ k: fc.constant('delete' as const), seq: seqArb }) },
  { weight: 1, arbitrary: fc.constant({ k: 'clear' as const }) },
);

test('SeqMap: agrees with a Map under any sequence of sets, deletes and clears', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 600 }), (ops) => {
      const m = new SeqMap<number>();
      const model = new Map<number, number>();
      for (const op of ops) {
        if (op.k === 'set') {
          m.set(op.seq, op.v);
          model.set(op.seq, op.v);
        } else if (op.k === 'delete') assert.equal(m.delete(op.seq), model.delete(op.seq));
        else {
          m.clear();
          model.clear();
        }
        assert.equal(m.size, model.size);
      }
      for (const [seq, v] of model) {
        assert.equal(m.get(seq), v);
        assert.ok(m.has(seq));
      }
      assert.deepEqual(
        m.entries().sort((a, b) => a[0] - b[0]),
        [...model].sort((a, b) => a[0] - b[0]),
      );
      assert.deepEqual(
        m.keys().sort((a, b) => a - b),
        [...model.keys()].sort((a, b) => a - b),
      );
      assert.deepEqual(
        m.values().sort((a, b) => a - b),
        [...model.values()].sort((a, b) => a - b),
      );
    }),
    { numRuns: 300 },
  );
});

test('SeqMap: a queue-shaped churn (claim the next seqs, ack the oldest) keeps every entry findable', () => {
  // Each job enters once and leaves once; the table grows to the window and stops reallocating.
  const m = new SeqMap<string>();
  const window = 80;
  for (let seq = 1; seq <= 200_000; seq++) {
    m.set(seq, `L${seq}`);
    if (seq > window) assert.equal(m.delete(seq - window), true);
    if (seq % 9973 === 0) for (let s = Math.max(1, seq - window + 1); s <= seq; s++) assert.equal(m.get(s), `L${s}`);
  }
  assert.equal(m.size, window);
  assert.equal(m.get(200_000 - window), undefined);
});

test('SeqMap: grows past a burst and gives the memory back when it drains', () => {
  const m = new SeqMap<number>();
  for (let s = 0; s < 100_000; s++) m.set(s, s);
  for (let s = 0; s < 100_000; s++) assert.equal(m.get(s), s);
  for (let s = 0; s < 99_990; s++) m.delete(s);
  assert.equal(m.size, 10);
  // Internal capacity: shrunk to a small table, not left at the burst's size.
  const capacity = (m as unknown as { keyCells: Float64Array }).keyCells.length;
  assert.ok(capacity <= 256, `capacity ${capacity} after draining to 10 entries`);
  assert.deepEqual(
    m.keys().sort((a, b) => a - b),
    [99_990, 99_991, 99_992, 99_993, 99_994, 99_995, 99_996, 99_997, 99_998, 99_999],
  );
});

test('TimeHeap: pops in (at, seq) order under any interleaving of pushes and pops', () => {
  const entry = fc.tuple(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 2 ** 40 }));
  const step = fc.oneof(
    entry.map((e) => ({ push: e })),
    fc.constant({ push: null }),
  );
  fc.assert(
    fc.property(fc.array(step, { maxLength: 400 }), (steps) => {
      const h = new TimeHeap();
      const model: [number, number][] = [];
      const order = (a: [number, number], b: [number, number]) => a[0] - b[0] || a[1] - b[1];
      const popBoth = () => {
        model.sort(order);
        const want = model.shift();
        assert.equal(h.peekAt(), want?.[0]);
        if (want) assert.equal(h.peekSeq(), want[1]);
        h.pop();
      };
      for (const s of steps) {
        if (s.push) {
          h.push(s.push[0], s.push[1]);
          model.push(s.push);
        } else popBoth();
        assert.equal(h.size, model.length);
      }
      while (model.length > 0) popBoth();
      assert.equal(h.peekAt(), undefined);
      h.clear();
      assert.equal(h.size, 0);
    }),
    { numRuns: 300 },
  );
});

test('SeqMap and TimeHeap hold no table until used, and SeqMap none again after clear', () => {
  const cells = (x: object) =>
    (x as unknown as { keyCells?: Float64Array; cells?: Float64Array }).keyCells ?? (x as { cells?: Float64Array }).cells;
  const m = new SeqMap<number>();
  const h = new TimeHeap();
  assert.equal(cells(m)!.length, 0);
  assert.equal(cells(h)!.length, 0);
  assert.equal(m.get(5), undefined);
  assert.equal(m.has(5), false);
  assert.equal(m.delete(5), false);
  assert.deepEqual(m.entries(), []);
  assert.equal(h.peekAt(), undefined);
  h.pop();
  m.set(5, 1);
  h.push(10, 5);
  assert.equal(m.get(5), 1);
  assert.equal(h.peekSeq(), 5);
  m.clear();
  assert.equal(cells(m)!.length, 0);
  assert.equal(m.get(5), undefined);
  m.set(7, 2);
  assert.equal(m.get(7), 2);
});
