// SortedNames (many-topics issue: topic list pages without sorting every name) against a plain
// sorted-array model: any sequence of adds, bulk adds (recovery) and deletes, then pages from any `after` with any
// `prefix`, visit exactly the model's names above `after` with that prefix, in order. Tiny leaves
// make every run split and empty leaves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SortedNames } from '../../src/core/columns/sortedNames.js';

/** Short names over a small alphabet, so prefixes and duplicates are common. */
const nameArb = fc.stringMatching(/^[abz.é-]{1,4}$/);

type Op = { t: 'add'; name: string } | { t: 'del'; name: string } | { t: 'addAll'; names: string[] };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ t: fc.constant('add' as const), name: nameArb }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('del' as const), name: nameArb }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('addAll' as const), names: fc.array(nameArb, { maxLength: 20 }) }) },
);

function page(s: SortedNames, after: string, prefix: string, limit: number): string[] {
  const out: string[] = [];
  s.forEachFrom(after, prefix, (n) => {
    out.push(n);
    return out.length < limit;
  });
  return out;
}

test('SortedNames pages exactly as a filtered sorted array would', () => {
  fc.assert(
    fc.property(
      fc.array(opArb, { maxLength: 200 }),
      fc.array(
        fc.record({
          after: fc.oneof(fc.constant(''), nameArb),
          prefix: fc.oneof(fc.constant(''), fc.stringMatching(/^[abz.é-]{1,2}$/)),
          limit: fc.integer({ min: 1, max: 30 }),
        }),
        { minLength: 1, maxLength: 8 },
      ),
      fc.integer({ min: 2, max: 6 }),
      (ops, queries, leafMax) => {
        const s = new SortedNames(leafMax);
        const model = new Set<string>();
        for (const op of ops) {
          if (op.t === 'addAll') {
            s.addAll(op.names);
            for (const n of op.names) model.add(n);
            continue;
          }
          if (op.t === 'add') assert.equal(s.add(op.name), !model.has(op.name), `add ${op.name}`);
          else assert.equal(s.delete(op.name), model.has(op.name), `delete ${op.name}`);
          if (op.t === 'add') model.add(op.name);
          else model.delete(op.name);
        }
        assert.equal(s.size, model.size);
        const sorted = [...model].sort();
        for (const q of queries) {
          const want = sorted.filter((n) => n > q.after && n.startsWith(q.prefix)).slice(0, q.limit);
          assert.deepEqual(page(s, q.after, q.prefix, q.limit), want, JSON.stringify(q));
        }
        // Paging through everything with the last name as the cursor visits every name once.
        const all: string[] = [];
        for (let after = '', p = page(s, after, '', 3); p.length > 0; after = p.at(-1)!, p = page(s, after, '', 3)) all.push(...p);
        assert.deepEqual(all, sorted);
      },
    ),
    { numRuns: 300 },
  );
});

test('an empty set visits nothing', () => {
  const s = new SortedNames();
  assert.deepEqual(page(s, '', '', 10), []);
  assert.equal(s.delete('a'), false);
});

test('names added out of order past several leaf splits come back in order', () => {
  const s = new SortedNames();
  const names = Array.from({ length: 5000 }, (_, i) => `t.${((i * 7919) % 5000).toString(36).padStart(4, '0')}`);
  for (const n of names) s.add(n);
  assert.equal(s.size, 5000);
  assert.deepEqual(page(s, '', '', 6000), [...names].sort());
  assert.deepEqual(
    page(s, 't.0010', 't.001', 100),
    [...names].sort().filter((n) => n > 't.0010' && n.startsWith('t.001')),
  );
});
