// PendingTable (requests in flight, by id) against a Map model: any sequence of adds,
// takes of live, answered and unknown ids, and clears gives back exactly what the model holds,
// no id is ever issued twice, and the table's slots grow only with the most values held at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { PendingTable } from '../../src/core/pendingTable.js';

type Op = { t: 'add' } | { t: 'take'; pick: number } | { t: 'stale'; pick: number } | { t: 'clear' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ t: 'add' as const }) },
  { weight: 5, arbitrary: fc.record({ t: fc.constant('take' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('stale' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ t: 'clear' as const }) },
);

test('a pending table gives back what was added, once, and never issues an id twice', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 400 }), (ops) => {
      const table = new PendingTable<string>();
      const model = new Map<number, string>();
      const issued = new Set<number>();
      const gone: number[] = [];
      let n = 0;
      let most = 0;
      for (const op of ops) {
        if (op.t === 'add') {
          const v = `v${n++}`;
          const id = table.add(v);
          assert.ok(!issued.has(id), `id ${id} issued twice`);
          issued.add(id);
          model.set(id, v);
          most = Math.max(most, model.size);
        } else if (op.t === 'take' && model.size > 0) {
          const id = [...model.keys()][op.pick % model.size]!;
          assert.equal(table.take(id), model.get(id));
          model.delete(id);
          gone.push(id);
        } else if (op.t === 'stale' && gone.length > 0) {
          assert.equal(table.take(gone[op.pick % gone.length]!), undefined, 'an answered id finds nothing');
        } else if (op.t === 'clear') {
          table.clear();
          gone.push(...model.keys());
          model.clear();
        }
        assert.equal(table.size, model.size);
      }
      for (const [id, v] of model) assert.equal(table.take(id), v);
      assert.equal(table.take(12345), undefined, 'an id never issued finds nothing');
      const slots = (table as unknown as { values: unknown[] }).values.length;
      assert.ok(slots <= Math.max(most, 0), `${slots} slots for at most ${most} values at once`);
    }),
    { numRuns: 300 },
  );
});

test('a slot reused many times keeps issuing new ids, as exact integers', () => {
  const table = new PendingTable<number>();
  const seen = new Set<number>();
  for (let i = 0; i < 100_000; i++) {
    const id = table.add(i);
    assert.ok(Number.isSafeInteger(id) && !seen.has(id));
    seen.add(id);
    assert.equal(table.take(id), i);
  }
  assert.equal((table as unknown as { values: unknown[] }).values.length, 1, 'one slot, reused');
});

test('a slot whose generations reach 2^52 starts again from its first id, still an exact integer', () => {
  const table = new PendingTable<string>();
  const first = table.add('a');
  table.take(first);
  const slots = first; // the first id of slot 0 is the slot count per generation
  // Jump slot 0 to its last generation below 2^52 (2^31 reuses would take minutes).
  (table as unknown as { ids: number[] }).ids[0] = 2 ** 52 - slots;
  const wrapped = table.add('b');
  assert.equal(wrapped, first, 'past 2^52 the slot issues its first id again');
  assert.ok(Number.isSafeInteger(wrapped));
  assert.equal(table.take(wrapped), 'b');
});
