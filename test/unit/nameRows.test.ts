// NameRows (src/core/columns/nameRows.ts): names by row and rows by name in an open-addressing table.
// Checked against a Map through adds, removes (backward shift) and re-adds, with names made to
// collide (a tiny table, many names in one probe run), growth by rehash and by reserve.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { NameRows, nameHash } from '../../src/core/columns/nameRows.js';

test('rows by name and names by row; a name or row held twice is an assertion', () => {
  const n = new NameRows();
  n.add(0, 'a');
  n.add(2, 'b'); // rows need not be dense
  assert.equal(n.rowOf('a'), 0);
  assert.equal(n.rowOf('b'), 2);
  assert.equal(n.rowOf('c'), -1);
  assert.equal(n.nameOf(1), undefined);
  assert.equal(n.size, 2);
  assert.throws(() => n.add(1, 'a'), /already has row 0/);
  assert.throws(() => n.add(2, 'c'), /already holds b/);
  assert.throws(() => n.remove(1), /has no name/);
  n.remove(0);
  assert.equal(n.rowOf('a'), -1);
  n.add(0, 'a2');
  assert.equal(n.rowOf('a2'), 0);
  assert.equal(n.rowOf('ü-ñame'), -1);
  n.add(5, 'ü-ñame');
  assert.equal(n.rowOf('ü-ñame'), 5, 'any UTF-16 name');
  assert.equal(n.rowsEnd, 6);
});

test('equal strings hash alike however they were made', () => {
  const a = 'topic-' + String(42);
  const b = Buffer.from('topic-42', 'latin1').toString('latin1');
  assert.equal(nameHash(a), nameHash(b));
});

test('a hundred thousand names: grown by rehash, or reserved at once', () => {
  for (const reserve of [false, true]) {
    const n = new NameRows();
    const N = 100_000;
    if (reserve) n.reserve(N);
    for (let i = 0; i < N; i++) n.add(i, `mt.${i}`);
    for (let i = 0; i < N; i += 7) n.remove(i);
    for (let i = 0; i < N; i++) assert.equal(n.rowOf(`mt.${i}`), i % 7 === 0 ? -1 : i);
    assert.equal(n.size, N - Math.ceil(N / 7));
  }
});

test('NameRows agrees with a Map through any sequence of adds and removes', () => {
  // Few distinct names, so a name comes back after its remove; rows are reused as a table does.
  const nameArb = fc.oneof(fc.constantFrom('a', 'b', 'c', 'mt.0', 'mt.1', 'ü', ''), fc.string({ maxLength: 3 }));
  const opArb = fc.oneof(
    { weight: 3, arbitrary: fc.record({ t: fc.constant('add' as const), name: nameArb }) },
    { weight: 2, arbitrary: fc.record({ t: fc.constant('remove' as const), name: nameArb }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('reserve' as const), more: fc.integer({ min: 0, max: 40 }) }) },
  );
  fc.assert(
    // A table of 2 to 16 slots at first: long probe runs, removes that shift them, rehashes.
    fc.property(fc.array(opArb, { maxLength: 300 }), fc.constantFrom(2, 4, 16), (ops, firstSlots) => {
      const n = new NameRows(firstSlots);
      const model = new Map<string, number>();
      const free: number[] = [];
      let rows = 0;
      for (const op of ops) {
        if (op.t === 'add') {
          if (model.has(op.name)) continue;
          const row = free.pop() ?? rows++;
          n.add(row, op.name);
          model.set(op.name, row);
        } else if (op.t === 'remove') {
          const row = model.get(op.name);
          assert.equal(n.rowOf(op.name), row ?? -1);
          if (row === undefined) continue;
          n.remove(row);
          model.delete(op.name);
          free.push(row);
        } else n.reserve(op.more);
        assert.equal(n.size, model.size);
      }
      for (const [name, row] of model) {
        assert.equal(n.rowOf(name), row);
        assert.equal(n.nameOf(row), name);
      }
      for (const row of free) assert.equal(n.nameOf(row), undefined);
    }),
    { numRuns: 300 },
  );
});
